"""Figure scaffolding shared by the performance and weight figures: a grid of panels with
fixed sizes and margins in inches (cheap and predictable, no layout engine) that leaves room
for the title and the legend, and the "not computed" panel."""

import functools
from dataclasses import dataclass

from matplotlib.figure import Figure

TITLE_SIZE, LEGEND_SIZE = 11, 9  # points
LINE = 1.3 / 72  # inches per point of font size: one line of text
LEGEND_HANDLE = 0.6  # inches of a legend entry besides its text (handle, padding, spacing)


@dataclass
class Frame:
    """A Figure, its GridSpec, the title wrapped to the figure's width and the number of
    legend columns that fit it."""

    fig: object
    grid: object
    title: str
    ncol: int


@functools.cache
def _renderer():
    from matplotlib.backends.backend_agg import RendererAgg

    return RendererAgg(1, 1, 72)  # 72 dpi: one pixel per point


def text_width(text, fontsize):
    """Width in inches of ``text`` as matplotlib draws it in its default font at
    ``fontsize`` points (5 % added for the hinting at other resolutions)."""
    from matplotlib.font_manager import FontProperties

    if not text:
        return 0.0
    width, _height, _descent = _renderer().get_text_width_height_descent(
        text, FontProperties(size=fontsize), ismath=False)
    return 1.05 * width / 72


def wrap(text, fontsize, width):
    """``text`` broken at spaces into lines at most ``width`` inches wide (existing line
    breaks kept; a single word wider than ``width`` stays whole)."""
    lines = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            candidate = f"{line} {word}" if line else word
            if line and text_width(candidate, fontsize) > width:
                lines.append(line)
                line = word
            else:
                line = candidate
        lines.append(line)
    return "\n".join(lines)


def legend_columns(labels, width):
    """The most legend columns whose entries fit in ``width`` inches, and the resulting
    number of rows. Matplotlib fills the columns top to bottom, the first ``n % ncol`` of
    them with one entry more."""
    entries = [text_width(label, LEGEND_SIZE) + LEGEND_HANDLE for label in labels]
    for ncol in range(len(entries), 0, -1):
        rows, longer = divmod(len(entries), ncol)
        sizes = [rows + 1] * longer + [rows] * (ncol - longer)
        starts = [sum(sizes[:c]) for c in range(ncol)]
        total = sum(max(entries[start:start + size]) for start, size in zip(starts, sizes,
                                                                              strict=True))
        if total <= width:
            return ncol, max(sizes)
    return 1, len(entries)


def panel_grid(widths, heights, title, labels, *, left=0.95, right=0.25, top=0.65,
               bottom=0.9, wgap=0.55, hgap=0.75):
    """A :class:`Frame` whose panels have the given widths and heights (inches), with the
    given margins and gaps (inches) for the panels' titles and labels; ``top`` is the margin
    below the figure's title and ``bottom`` holds one row of legend. The figure is widened
    (evenly on both sides) to fit the widest legend entry; the top margin grows with the
    lines of the ``title`` wrapped to the figure's width, the bottom margin with the rows of
    the legend of ``labels``."""
    panels_w = sum(widths) + wgap * (len(widths) - 1)
    widest = max(text_width(label, LEGEND_SIZE) for label in labels) + LEGEND_HANDLE
    extra = max(0.0, widest + 0.3 - (left + right + panels_w))
    left, right = left + extra / 2, right + extra / 2
    fig_w = left + right + panels_w
    title = wrap(title, TITLE_SIZE, fig_w - 0.3)
    ncol, rows = legend_columns(labels, fig_w - 0.3)
    top += 0.1 + (title.count("\n") + 1) * TITLE_SIZE * LINE
    bottom += (rows - 1) * LEGEND_SIZE * LINE
    fig_h = top + bottom + sum(heights) + hgap * (len(heights) - 1)
    fig = Figure(figsize=(fig_w, fig_h))
    grid = fig.add_gridspec(
        len(heights), len(widths), width_ratios=widths, height_ratios=heights,
        left=left / fig_w, right=1 - right / fig_w, bottom=bottom / fig_h, top=1 - top / fig_h,
        wspace=wgap / (sum(widths) / len(widths)), hspace=hgap / (sum(heights) / len(heights)),
    )
    return Frame(fig, grid, title, ncol)


def finish(frame, handles, labels, path, dpi=110):
    """Title on top, legend at the bottom, save as PNG."""
    fig = frame.fig
    height = fig.get_figheight()
    fig.suptitle(frame.title, fontsize=TITLE_SIZE, y=1 - 0.08 / height, va="top")
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.02 / height),
               ncol=frame.ncol, frameon=False, fontsize=LEGEND_SIZE)
    fig.savefig(path, dpi=dpi)


def row_label(fig, grid, row, text):
    """A row title in the left margin, centred on the row's panels."""
    box = grid[row, 0].get_position(fig)
    fig.text(0.12 / fig.get_figwidth(), (box.y0 + box.y1) / 2, text, rotation=90,
             ha="left", va="center", fontsize=9, multialignment="center")


def not_computed(ax, text="not computed"):
    ax.text(0.5, 0.5, text, ha="center", va="center", color="0.5", transform=ax.transAxes,
            fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_color("0.8")

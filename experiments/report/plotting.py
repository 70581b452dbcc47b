"""Figure scaffolding shared by the performance and weight figures: a grid of panels with
fixed sizes and margins in inches (cheap and predictable, no layout engine) that leaves room
for the title, the legend and a note, the "not computed" panel, tick labels thinned to fit and
text labels kept apart (docs/method/protocol.md §11). Figures are saved by :func:`save`: in
child processes while :func:`parallel_saves` is active, so that rendering the PNGs overlaps the
rest of the report; :func:`draw` builds a figure in such a child too."""

import contextlib
import functools
import itertools
import multiprocessing
import re
import sys
from dataclasses import dataclass

from matplotlib.figure import Figure

from pcskm import forking

TITLE_SIZE, LEGEND_SIZE, NOTE_SIZE = 11, 9, 8  # points
LINE = 1.3 / 72  # inches per point of font size: one line of text
LEGEND_HANDLE = 0.6  # inches of a legend entry besides its text (handle, padding, spacing)


@dataclass
class Frame:
    """A Figure, its GridSpec, the title and the note wrapped to the figure's width and the
    number of legend columns that fit it."""

    fig: object
    grid: object
    title: str
    ncol: int
    note: str = ""


@functools.cache
def _renderer():
    from matplotlib.backends.backend_agg import RendererAgg

    return RendererAgg(1, 1, 72)  # 72 dpi: one pixel per point


@functools.lru_cache(maxsize=4096)
def text_width(text, fontsize):
    """Width in inches of ``text`` as matplotlib draws it in its default font at
    ``fontsize`` points (5 % added for the hinting at other resolutions); remembered, as
    the report measures the same tick labels and legend entries in every figure."""
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
               bottom=0.9, wgap=0.55, hgap=0.75, note=""):
    """A :class:`Frame` whose panels have the given widths and heights (inches), with the
    given margins and gaps (inches) for the panels' titles and labels; ``top`` is the margin
    below the figure's title and ``bottom`` holds one row of legend. The figure is widened
    (evenly on both sides) to fit the widest legend entry; the top margin grows with the
    lines of the ``title`` wrapped to the figure's width, the bottom margin with the rows of
    the legend of ``labels`` and the lines of the ``note`` (text under the legend)."""
    panels_w = sum(widths) + wgap * (len(widths) - 1)
    widest = max(text_width(label, LEGEND_SIZE) for label in labels) + LEGEND_HANDLE
    extra = max(0.0, widest + 0.3 - (left + right + panels_w))
    left, right = left + extra / 2, right + extra / 2
    fig_w = left + right + panels_w
    title = wrap(title, TITLE_SIZE, fig_w - 0.3)
    ncol, rows = legend_columns(labels, fig_w - 0.3)
    note = wrap(note, NOTE_SIZE, fig_w - 0.3) if note else ""
    top += 0.1 + (title.count("\n") + 1) * TITLE_SIZE * LINE
    bottom += (rows - 1) * LEGEND_SIZE * LINE + _note_height(note)
    fig_h = top + bottom + sum(heights) + hgap * (len(heights) - 1)
    fig = Figure(figsize=(fig_w, fig_h))
    grid = fig.add_gridspec(
        len(heights), len(widths), width_ratios=widths, height_ratios=heights,
        left=left / fig_w, right=1 - right / fig_w, bottom=bottom / fig_h, top=1 - top / fig_h,
        wspace=wgap / (sum(widths) / len(widths)), hspace=hgap / (sum(heights) / len(heights)),
    )
    return Frame(fig, grid, title, ncol, note)


def _note_height(note):
    """Inches of the note's lines and the space above them (0 without a note)."""
    return (note.count("\n") + 1) * NOTE_SIZE * LINE + 0.05 if note else 0.0


def finish(frame, handles, labels, path, dpi=110):
    """Title on top, legend at the bottom, the note under it, save as PNG."""
    fig = frame.fig
    height = fig.get_figheight()
    fig.suptitle(frame.title, fontsize=TITLE_SIZE, y=1 - 0.08 / height, va="top")
    if frame.note:
        fig.text(0.5, 0.04 / height, frame.note, ha="center", va="bottom",
                 fontsize=NOTE_SIZE, color="0.25", multialignment="left")
    fig.legend(handles, labels, loc="lower center",
               bbox_to_anchor=(0.5, (0.02 + _note_height(frame.note)) / height),
               ncol=frame.ncol, frameon=False, fontsize=LEGEND_SIZE)
    save(fig, path, dpi)


class _Saves:
    """The PNGs being written by forked children: at most ``workers`` at a time."""

    def __init__(self, workers):
        self.workers, self.running, self.failed = workers, [], []

    def start(self, path, target, *args):
        """``target(*args)`` in a forked child, which writes ``path``; the child's error
        comes back as one line (:func:`_in_child`), not as a traceback on stderr."""
        while len(self.running) >= self.workers:
            self._wait(self.running[0])
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        child = context.Process(target=_in_child, args=(sender, target, *args), daemon=True)
        with forking.fork_safely():
            child.start()
        sender.close()
        self.running.append((child, path, receiver))

    def _wait(self, entry):
        child, path, receiver = entry
        child.join()
        self.running.remove(entry)
        if child.exitcode != 0:
            error = receiver.recv() if receiver.poll() else f"exit code {child.exitcode}"
            self.failed.append(f"{path} ({error})")
        receiver.close()

    def finish(self):
        while self.running:
            self._wait(self.running[0])
        if self.failed:
            raise FigureNotWritten(f"could not write the figure(s) {'; '.join(self.failed)}")


class FigureNotWritten(RuntimeError):
    """A figure a forked child could not write (its error in one line)."""


def _in_child(sender, target, *args):
    """In a forked child: ``target(*args)``; an error is sent to the parent as one line,
    ``"Type: message"``, and ends the child with exit code 1, with no traceback."""
    try:
        target(*args)
    except BaseException as error:  # whatever it is, the parent names it
        with contextlib.suppress(OSError):
            sender.send(f"{type(error).__name__}: {error}")
        sys.exit(1)


_saves = None  # the active _Saves of parallel_saves, else None


def _save_and_exit(fig, path, dpi):
    forking.child_signals()
    fig.savefig(path, dpi=dpi)


def _draw_and_exit(path, build):
    global _saves
    forking.child_signals()
    _saves = None  # the child saves its figure itself
    _built(path, build)


def _built(path, build):
    """``build()``, which must draw a figure (:func:`draw`)."""
    if build() is None:
        raise RuntimeError(f"{path}: the figure has nothing to draw")


def save(fig, path, dpi):
    """Save ``fig`` as the PNG ``path``: in a forked child when :func:`parallel_saves` is
    active (the child renders the figure as it is now), else at once."""
    if _saves is None:
        fig.savefig(path, dpi=dpi)
    else:
        _saves.start(path, _save_and_exit, fig, path, dpi)


def draw(path, build):
    """``build()``, which makes a figure and saves it as the PNG ``path`` (:func:`save`),
    returning it: in a forked child when :func:`parallel_saves` is active, so that the
    figure is built, not only rendered, while the report goes on; else at once. Only for a
    figure known to have something to draw: a child whose ``build`` returns None fails, as
    a figure not written."""
    if _saves is None:
        _built(path, build)
    else:
        _saves.start(path, _draw_and_exit, path, build)


@contextlib.contextmanager
def parallel_saves(workers=None):
    """Within the block, :func:`save` renders each figure in a forked child, at most
    ``workers`` at a time (default: the cores this process may use); on leaving it, waits
    for them all and raises :class:`FigureNotWritten` (a RuntimeError) naming any figure not
    written and why. Without fork
    (:func:`forking.can_fork`) or with one worker, figures are saved at once."""
    global _saves
    workers = (workers or forking.cores()) if forking.can_fork() else 1
    if workers < 2 or _saves is not None:
        yield
        return
    saves = _saves = _Saves(workers)
    try:
        yield
    except BaseException:
        _saves = None
        with contextlib.suppress(RuntimeError):  # the block's error is the one to report
            saves.finish()
        raise
    _saves = None
    saves.finish()


def score_axis(axis, low, high):
    """An F axis (``ax.xaxis`` or ``ax.yaxis``) from ``low`` to ``high``, which may reach
    past 0 or 1 so that values there are drawn inside the panel, with its ticks within
    [0, 1] (no F-score above 1 is shown)."""
    limits = axis.axes.set_xlim if axis is axis.axes.xaxis else axis.axes.set_ylim
    limits(low, high)
    ticks = axis.get_major_locator().tick_values(low, high)
    axis.set_ticks([t for t in ticks if max(low, 0.0) - 1e-9 <= t <= min(high, 1.0) + 1e-9])


def thinned_labels(positions, limits, width, fontsize, gap=0.08):
    """Tick labels for ticks at ``positions`` on an axis spanning ``limits`` (data units)
    over ``width`` inches: every k-th tick labelled (``f"{value:g}"``, the others empty),
    k the smallest step at which neighbouring labels are ``gap`` inches apart or more."""
    texts = [f"{value:g}" for value in positions]
    per_unit = width / (limits[1] - limits[0])
    widest = max(text_width(text, fontsize) for text in texts)
    spacing = min((b - a for a, b in itertools.pairwise(positions)), default=float("inf"))
    step = 1
    while step < len(texts) and step * spacing * per_unit < widest + gap:
        step += 1
    return [text if i % step == 0 else "" for i, text in enumerate(texts)]


def renderer(fig):
    """A renderer of ``fig`` for the extents of its texts, without drawing it: the panels'
    places are fixed by :func:`panel_grid` (no layout engine) and their limits set, so a
    text's extent is known before any draw."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    return fig.canvas.get_renderer()


def keep_apart(fig, labels, pad=1.0):
    """Move each of ``labels`` (annotations placed in offset points) along y, a step of its
    own height at a time, until its box (grown by ``pad`` pixels) overlaps none of the
    labels placed before it: up from a point in the lower two thirds of its panel, down from
    one higher up (so the labels stay inside the panel)."""
    if not labels:
        return
    drawn = renderer(fig)
    placed = []
    for label in labels:
        box = label.get_window_extent(drawn).padded(pad)
        axes_box = label.axes.get_window_extent(drawn)
        down = box.y0 > axes_box.y0 + 2 / 3 * axes_box.height
        if down:
            x, y = label.xyann
            label.xyann = (x, -y)
            label.set_va("top")
            box = label.get_window_extent(drawn).padded(pad)
        while any(box.overlaps(other) for other in placed):
            x, y = label.xyann
            step = box.height * 72 / fig.dpi
            label.xyann = (x, y - step if down else y + step)
            box = label.get_window_extent(drawn).padded(pad)
        placed.append(box)


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


def quality_text(quality):
    """A data set's known feature quality in words for a panel title:
    "+5 -5" -> "5 informative + 5 noise features", "+3 -2, 4 unknown" -> "3 informative + 2
    noise + 4 unknown features", "8 unknown, -10" -> "8 unknown + 10 noise features"
    (:attr:`pcskm.experiments.datasets.Dataset.feature_quality`); any other text as it is."""
    informative = re.fullmatch(r"\+(\d+) -(\d+)(?:, (\d+) unknown)?", quality)
    if informative:
        rest = f" + {informative[3]} unknown" if informative[3] else ""
        return f"{informative[1]} informative + {informative[2]} noise{rest} features"
    unknown = re.fullmatch(r"(\d+) unknown, -(\d+)", quality)
    if unknown:
        return f"{unknown[1]} unknown + {unknown[2]} noise features"
    return quality

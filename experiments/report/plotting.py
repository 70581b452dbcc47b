"""Figure scaffolding shared by the performance and weight figures: a grid of panels with
fixed sizes and margins in inches (cheap and predictable, no layout engine), and the
"not computed" panel."""

from matplotlib.figure import Figure


def panel_grid(widths, heights, *, left=0.95, right=0.25, top=0.85, bottom=0.9, wgap=0.55,
               hgap=0.75):
    """A Figure and a GridSpec whose panels have the given widths and heights (inches),
    with the given margins and gaps (inches) for titles, labels and the legend."""
    fig_w = left + right + sum(widths) + wgap * (len(widths) - 1)
    fig_h = top + bottom + sum(heights) + hgap * (len(heights) - 1)
    fig = Figure(figsize=(fig_w, fig_h))
    grid = fig.add_gridspec(
        len(heights), len(widths), width_ratios=widths, height_ratios=heights,
        left=left / fig_w, right=1 - right / fig_w, bottom=bottom / fig_h, top=1 - top / fig_h,
        wspace=wgap / (sum(widths) / len(widths)), hspace=hgap / (sum(heights) / len(heights)),
    )
    return fig, grid


def finish(fig, title, handles, labels, path, ncol, dpi=110):
    """Title on top, legend at the bottom, save as PNG."""
    height = fig.get_figheight()
    fig.suptitle(title, fontsize=11, y=1 - 0.08 / height, va="top")
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.02 / height),
               ncol=ncol, frameon=False, fontsize=9)
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

"""The selections figure (docs/guide/choosing-s.md, "In the report"): one panel per reported
data set, one row per selection of s, a dot per algorithm at its mean F over the data set's
Analysis-1 settings (:func:`comparison.dataset_values`), the focus algorithm (PCSKM in the
paper) drawn larger, so that one can read how far the choice of s moves it among the
others."""

import numpy as np

from . import plotting
from .performance import colours, marker
from .selection import ORDER

TAGS = {"paper": "paper (optimistic)", "oracle": "oracle (upper bound)"}
TITLE = ("Mean F of each data set under every selection of s (mean over its Analysis-1 "
         "settings with every algorithm complete; {focus} large)")
N_COLUMNS = 3


def label(selection):
    """The y label of a selection: its name, tagged when it reads the test labels."""
    return TAGS.get(selection, selection)


def figure(values, path, focus="PCSKM"):
    """Draw :func:`comparison.dataset_values` (a DataFrame, its data sets and algorithms in
    the order to show) with ``focus`` large, and save it to ``path``; returns the Figure, or
    None (drawing nothing) without values."""
    from matplotlib.lines import Line2D

    if values.empty:
        return None
    shown = list(values.family.unique())
    selections = [s for s in ORDER if s in set(values.selection)]
    algs = list(values.algorithm.unique())
    palette = colours(algs)
    n_cols = min(N_COLUMNS, len(shown))
    n_rows = -(-len(shown) // n_cols)
    height = 0.25 * len(selections) + 0.3
    frame = plotting.panel_grid([2.6] * n_cols, [height] * n_rows, TITLE.format(focus=focus), algs,
                                left=1.75, wgap=0.3, hgap=0.85)
    fig, grid = frame.fig, frame.grid
    y = {s: len(selections) - 1 - i for i, s in enumerate(selections)}
    for number, family in enumerate(shown):
        ax = fig.add_subplot(grid[number // n_cols, number % n_cols])
        part = values[values.family == family]
        _panel(ax, part, y, palette, focus)
        settings = sorted(set(part.n_settings))
        counted = (f"{settings[0]}" if len(settings) == 1
                   else f"{settings[0]}-{settings[-1]}")
        ax.set_title(f"{part.dataset.iloc[0]}\n({counted} settings)", fontsize=9)
        ax.set_yticks(list(y.values()))
        ax.set_yticklabels([label(s) for s in y] if number % n_cols == 0 else [],
                           fontsize=8)
        ax.set_ylim(-0.6, len(selections) - 0.4)
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(axis="x", alpha=0.3, linewidth=0.5)
        if number + n_cols >= len(shown):
            ax.set_xlabel("mean F", fontsize=8)
    handles = [Line2D([], [], color=palette[a], marker=marker(a), linestyle="none",
                      markersize=7 if a == focus else 5) for a in algs]
    plotting.finish(frame, handles, algs, path)
    return fig


def _panel(ax, part, y, palette, focus):
    """One data set: per selection row a light line over the algorithms' range and a dot
    per algorithm (``palette``: its colour, :func:`performance.colours`)."""
    for selection, row in part.groupby("selection", sort=False):
        at = y[selection]
        ax.plot([row.value.min(), row.value.max()], [at, at], color="0.85", linewidth=1,
                zorder=1)
        for algorithm, colour in palette.items():
            value = row.value[row.algorithm == algorithm]
            if value.empty:
                continue
            big = algorithm == focus
            ax.plot(value, [at], color=colour, marker=marker(algorithm),
                    markersize=7 if big else 5, linestyle="none", zorder=3 if big else 2,
                    alpha=1 if big else 0.8)
    for selection, at in y.items():
        if selection not in set(part.selection):
            ax.text(0.5, at, "no value", transform=ax.get_yaxis_transform(), ha="center",
                    va="center", fontsize=7, color="0.5")
    low, high = float(np.min(part.value)), float(np.max(part.value))
    margin = max(0.01, 0.08 * (high - low))
    plotting.score_axis(ax.xaxis, low - margin, high + margin)

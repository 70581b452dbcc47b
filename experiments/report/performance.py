"""Performance tables and the grids of the paper's Figure 1 and its appendix figures
(docs/method/protocol.md §11): mean F against the percentage of constraints, one line per
algorithm, one panel per (data set, init, kind), for the paper-style and for the honest
selection. The paper's grids keep its six data sets; the cube's other data sets get grids of
their own. A point shows its failed cells (F = NaN at the selected s): a gap in the line and
an x on the x axis when every cell failed, a half-filled marker (labelled with the failed
share from 10 %) when some did.
"""

import numpy as np
import pandas as pd
import xarray as xr

from . import failure_rules, failures, families, plotting
from .fits import quiet
from .selection import SELECTION_TITLES

PAPER_ALGORITHMS = ("LKM", "SKM", "PCKM", "MPCKM", "PCSKM")
COLOURS = {"LKM": "tab:orange", "SKM": "0.45", "PCKM": "tab:green", "MPCKM": "tab:red",
           "PCSKM": "tab:blue"}
MARKERS = {"LKM": "s", "SKM": "v", "PCKM": "^", "MPCKM": "D", "PCSKM": "o"}
# Every other algorithm of a study (a variant such as PCSKM-paper, a user's estimator): the
# next of these in the study's order of algorithms, one colour each (:func:`colours`)
OTHER_COLOURS = ("tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan", "black",
                 "gold", "navy", "lime", "teal", "magenta", "sienna", "darkkhaki",
                 "lightskyblue", "salmon")
INIT_LABELS = {"seeding": "Seeding", "dkm++": "DKM++", "robin": "ROBIN(D)",
               "maximin": "Maximin(D)"}
KIND_LABELS = {"random": "random pairs", "must-link": "must-link", "cannot-link": "cannot-link",
               "balanced": "balanced"}
# The figure's note: what the row labels' constraint kinds are (docs/method/protocol.md §5)
KIND_NOTES = {
    "random": "random pairs: constraints drawn from all pairs, must-link and cannot-link as "
              "they come",
    "must-link": "must-link, cannot-link: constraints of that type only",
    "cannot-link": "must-link, cannot-link: constraints of that type only",
    "balanced": "balanced: half must-link, half cannot-link",
}
# (file stem, title, rows of (init, kind)): docs/method/protocol.md §11
FIGURES = (
    ("figure1_performance", "Figure 1: performance",
     (("seeding", "random"), ("dkm++", "random"), ("dkm++", "must-link"),
      ("dkm++", "cannot-link"))),
    ("figureA1_performance_robin", "Appendix: performance with ROBIN(D)",
     (("robin", "random"), ("robin", "must-link"), ("robin", "cannot-link"))),
    ("figureA2_performance_maximin", "Appendix: performance with Maximin(D)",
     (("maximin", "random"), ("maximin", "must-link"), ("maximin", "cannot-link"))),
)
OTHER_STEM, OTHER_TITLE = "figureA0_performance_other", "Other settings in the cube"
PAPER_DATASETS = tuple(f.label for f in families.PAPER_SIX)
FAILED_LABEL_MIN = 0.1  # a point's failed share is written beside it from 10 %
GRIDS = ("primary", "all")  # the main selections whose grids the report draws (--grids)
PANEL_WIDTH = 2.9  # inches of a computed column's panels
TICK_SIZE = 8  # points
MARK_LABELS = {
    "hollow": "hollow marker: some expected cells missing",
    "half": f"half-filled marker: some cells failed (label: their share, from "
            f"{100 * FAILED_LABEL_MIN:.0f} %)",
    "x": "x on the x axis: every cell failed (no value: a gap in the line)",
}
MARK_STYLES = {"filled": {}, "hollow": {"markerfacecolor": "white"},
               "half": {"fillstyle": "bottom", "markerfacecoloralt": "white"}}


def columns(results, datasets=None):
    """Figure columns: the families of ``datasets`` (default: all) in the cube, in the
    reported order (:func:`families.reported`; a data set not in the spec has no column)."""
    return [label for label in results.family_members
            if datasets is None or label in datasets]


def dataset_groups(results):
    """(stem suffix, title suffix, columns) of the grids: the paper's six data sets, then the
    cube's others in figures of their own; a cube without any of the six has one group, its
    data sets, with the plain stems and titles."""
    others = tuple(label for label in columns(results) if label not in PAPER_DATASETS)
    if not any(label in PAPER_DATASETS for label in columns(results)):
        return (("", "", others),)
    return (("", "", PAPER_DATASETS), ("_extra", " (other data sets)", others))


def figure_specs(results):
    """Every performance grid of the report as (file stem, title, rows, data sets): the
    paper's figures, and a figure of the other (init, kind) settings of the cube, first with
    the paper's six data sets, then again with the cube's other data sets (if it has any)."""
    grids = list(FIGURES)
    other = other_rows(results)
    if other:
        grids.append((OTHER_STEM, OTHER_TITLE, other))
    return [(stem + stem_suffix, title + title_suffix, rows, datasets)
            for stem_suffix, title_suffix, datasets in dataset_groups(results)
            if datasets == PAPER_DATASETS or columns(results, datasets)
            for stem, title, rows in grids]


def point_marks(n_cells, n_failed, complete):
    """How each point is drawn (arrays over points), the first that applies: ``none``
    (nothing computed), ``x`` (every computed cell failed: a gap, marked on the x axis),
    ``half`` (some failed), ``hollow`` (expected cells missing) or ``filled``."""
    n_cells, n_failed = np.asarray(n_cells), np.asarray(n_failed)
    return np.select([n_cells == 0, n_failed == n_cells, n_failed > 0,
                      ~np.asarray(complete, dtype=bool)],
                     ["none", "x", "half", "hollow"], "filled")


def algorithms(results):
    """The paper's five algorithms, then any other algorithm (variant) of the cube."""
    if results.families is None:
        return list(PAPER_ALGORITHMS)
    found = [str(a) for a in results.families.algorithm.values]
    return [a for a in PAPER_ALGORITHMS if a in found] + [
        a for a in found if a not in PAPER_ALGORITHMS]


def other_rows(results):
    """(init, kind) settings computed in the cube but in none of the paper's figures."""
    if results.families is None:
        return ()
    shown = {row for _stem, _title, rows in FIGURES for row in rows}
    computed = results.families.n_cells.sum(("selection", "family", "algorithm", "percent")) > 0
    return tuple((str(i), str(k)) for i in computed.init.values for k in computed.kind.values
                 if computed.sel(init=i, kind=k) and (str(i), str(k)) not in shown)


def long_table(results):
    """Every family aggregate as rows (selection, dataset, init, kind, algorithm, percent,
    f_mean, f_std, counts, complete, the failed share of the computed cells and the point's
    mark in the figures, :func:`point_marks`); rows with nothing expected are left out."""
    if results.families is None:
        return pd.DataFrame()
    data = results.families[["f_mean", "f_std", "n_cells", "n_expected", "n_failed",
                             "n_subsets", "complete"]]
    data = data.assign(failed_fraction=failures.point_fraction(data))
    frame = data.to_dataframe().reset_index()
    frame = frame[frame.n_expected > 0].copy()
    for column in ("family", "selection", "algorithm", "init", "kind"):
        frame[column] = frame[column].astype(str)
    frame.insert(1, "dataset", frame.family.map(results.family_labels))
    frame["marker"] = point_marks(frame.n_cells, frame.n_failed, frame.complete)
    order = ["selection", "dataset", "init", "kind", "algorithm", "percent", "f_mean", "f_std",
             "n_cells", "n_expected", "n_failed", "n_subsets", "complete", "failed_fraction",
             "marker", "family"]
    return frame[order].sort_values(order[:6]).reset_index(drop=True)


def by_dataset_table(results):
    """Per cube data set (digits: per subset) and selection: Fbar per (init, kind,
    algorithm, percent) and its counts."""
    rows = []
    for name, summary in results.by_dataset.items():
        frame = summary[["f_mean", "n_cells", "n_expected", "n_failed"]].to_dataframe()
        frame = frame.reset_index()
        frame = frame[frame.n_expected > 0]
        frame.insert(0, "dataset", name)
        rows.append(frame)
    if not rows:
        return pd.DataFrame()
    table = pd.concat(rows, ignore_index=True)
    for column in ("selection", "algorithm", "init", "kind"):
        table[column] = table[column].astype(str)
    return table


def _panel_counts(results, selection, rows, datasets):
    """(columns, rows, computed cells per (column, row)) of a grid: the columns and rows
    with an expected cell."""
    counts = _counts(results.families, selection)
    expected = {(c, row): counts["n_expected"].get((c, *row), 0)
                for c in columns(results, datasets) for row in rows}
    cols = [c for c in columns(results, datasets) if any(expected[(c, row)] for row in rows)]
    rows = [row for row in rows if any(expected[(c, row)] for c in cols)]
    computed = {(c, row): counts["n_cells"].get((c, *row), 0) for c in cols for row in rows}
    return cols, rows, expected, computed


def has_values(results, selection, rows, datasets=PAPER_DATASETS):
    """Whether the grid of ``selection`` on ``rows`` and ``datasets`` has a computed panel
    (:func:`figure` draws it)."""
    return any(_panel_counts(results, selection, rows, datasets)[3].values())


def figure(results, selection, title, rows, path, *, datasets=PAPER_DATASETS, share_y=True):
    """One grid (rows: (init, kind); columns: the ``datasets`` of the cube, default the
    paper's six) for one selection, saved to ``path``; returns the Figure, or None (drawing
    nothing) when no panel is computed.

    Only the data sets and (init, kind) rows of the spec are drawn; a panel of the spec not
    computed yet says "not computed" (a column with none computed is one narrow panel). The
    F axis lies within [0, 1]; with ``share_y`` the panels of a row share it. Points are
    marked as :func:`point_marks` says; the legend names the marks that occur.
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    data = results.families
    cols, rows, expected, computed = _panel_counts(results, selection, rows, datasets)
    if not any(computed.values()):
        return None
    algs = algorithms(results)
    panels = {key: data.sel(selection=selection, family=key[0], init=key[1][0], kind=key[1][1])
              for key, count in computed.items() if count}
    found = {str(m) for p in panels.values() for m in np.ravel(point_marks(
        p.n_cells.values, p.n_failed.values, p.complete.values))}
    marks = ["hollow", *(m for m in ("half", "x") if m in found)]
    labels = [*algs, *(MARK_LABELS[m] for m in marks), "band: ±1 SD over runs"]
    palette = colours(algs)
    used = [any(computed[(c, row)] for row in rows) for c in cols]
    frame = plotting.panel_grid([PANEL_WIDTH if u else 1.0 for u in used], [2.0] * len(rows),
                                f"{title} — {SELECTION_TITLES[selection]}", labels, wgap=0.45,
                                note=figure_note(rows))
    fig, grid = frame.fig, frame.grid
    percents = [float(p) for p in data.percent.values]
    failure_labels = []
    for r, row in enumerate(rows):
        plotting.row_label(fig, grid, r, _row_label(*row) + "\nmean F-score")
    limits = {row: _f_limits([p for (c, r), p in panels.items() if r == row]) for row in rows}
    for j, column in enumerate(cols):
        label = results.family_labels.get(column, column)
        if not used[j]:
            ax = fig.add_subplot(grid[:, j])
            ax.set_title(_wrap(label), fontsize=9)
            plotting.not_computed(ax, "not\ncomputed")
            continue
        for r, row in enumerate(rows):
            ax = fig.add_subplot(grid[r, j])
            if (column, row) not in panels:
                ax.set_title(label, fontsize=9)
                plotting.not_computed(ax, "not computed" if expected[(column, row)]
                                      else "not in the spec")
                continue
            panel = panels[(column, row)]
            ax.set_title(panel_title(label, missing_algorithms(panel, algs)), fontsize=9)
            for algorithm in algs:
                failure_labels += _line(ax, panel.sel(algorithm=algorithm), algorithm,
                                        palette[algorithm])
            plotting.score_axis(ax.yaxis, *(limits[row] if share_y
                                            else _f_limits([panel])))
            _percent_axis(ax, percents, PANEL_WIDTH)
            ax.tick_params(labelsize=TICK_SIZE)
            ax.grid(alpha=0.3, linewidth=0.5)
            if r == len(rows) - 1 or (column, rows[r + 1]) not in panels:
                ax.set_xlabel("constraints (% of the pool)", fontsize=8)
    plotting.keep_apart(fig, failure_labels)
    handles = [Line2D([], [], color=palette[a], marker=marker(a), linestyle=_style(a),
                      markersize=5) for a in algs]
    handles += [Line2D([], [], color="0.3", linestyle="none",
                       **({"marker": "x"} if m == "x" else {"marker": "o", **MARK_STYLES[m]}))
                for m in marks]
    handles.append(Rectangle((0, 0), 1, 1, color="0.3", alpha=0.15))
    plotting.finish(frame, handles, labels, path)
    return fig


def _counts(data, selection):
    """The expected and computed cells (``n_expected``, ``n_cells``) of ``selection`` per
    (family, init, kind), summed over algorithms and percentages: dicts, read once per
    figure rather than once per panel."""
    totals = data[["n_expected", "n_cells"]].sel(selection=selection).sum(
        ["algorithm", "percent"])
    frame = totals.to_dataframe(dim_order=["family", "init", "kind"])[["n_expected", "n_cells"]]
    return {name: {key: int(value) for key, value in frame[name].items()}
            for name in ("n_expected", "n_cells")}


def _f_limits(panels):
    """y limits covering every drawn mean F and its ±1 SD band (drawn within [0, 1]) with a
    margin of 5 % of the range (at least 0.02) on both sides, so that a line at F = 1 or 0
    is drawn inside the panel, not on its edge."""
    edges = [(p.f_mean + sign * p.f_std.fillna(0)).where(p.n_cells > 0).values.ravel()
             for p in panels for sign in (-1, 1)]
    values = np.concatenate(edges) if edges else np.array([])
    values = np.clip(values[np.isfinite(values)], 0.0, 1.0)
    if values.size == 0:
        return 0.0, 1.0
    low, high = float(values.min()), float(values.max())
    margin = max(0.02, 0.05 * (high - low))
    return low - margin, high + margin


def _percent_axis(ax, percents, width):
    """Ticks at the study's ``percents``, labelled as many as fit the panel's ``width``
    (inches; :func:`plotting.thinned_labels`), with a margin so the first and last sit
    inside the panel."""
    low, high = min(percents), max(percents)
    pad = 0.05 * (high - low) if high > low else 0.5
    ax.set_xlim(low - pad, high + pad)
    ax.set_xticks(percents)
    ax.set_xticklabels(plotting.thinned_labels(percents, (low - pad, high + pad), width,
                                               TICK_SIZE))


def missing_algorithms(panel, algs):
    """The algorithms of ``algs`` with no cell anywhere in ``panel`` (not computed, or no
    value for this selection, e.g. no fixed-loo s): the legend names them, the panel draws
    nothing of them (a point whose every cell failed is drawn, as an x on the x axis)."""
    return [a for a in algs if not bool((panel.n_cells.sel(algorithm=a) > 0).any())]


def panel_title(label, missing):
    """A panel's title: its data set, and the algorithms it does not draw."""
    if not missing:
        return label
    return plotting.wrap(f"{label}\nno value here: {', '.join(missing)}", 9, PANEL_WIDTH)


def figure_note(rows):
    """The figure's note on its row labels: what each constraint kind of ``rows`` is."""
    notes = dict.fromkeys(KIND_NOTES[kind] for _init, kind in rows if kind in KIND_NOTES)
    return "; ".join(notes) + "." if notes else ""


def _line(ax, point, algorithm, colour_):
    """Draw one algorithm's mean F against the percentage in ``colour_`` with a band of one
    standard deviation over runs; each point marked as :func:`point_marks` says: filled,
    hollow, half-filled with its failed share written above it from ``FAILED_LABEL_MIN``, or,
    where every cell failed, no value (the line and band break) and an x on the x axis.
    Returns the failed-share labels (to be kept apart, :func:`plotting.keep_apart`)."""
    marks = point_marks(point.n_cells.values, point.n_failed.values, point.complete.values)
    shown = marks != "none"
    if not shown.any():
        return []
    marks, x = marks[shown], point.percent.values[shown]
    y, sd = point.f_mean.values[shown], point.f_std.values[shown]
    share = point.n_failed.values[shown] / point.n_cells.values[shown]
    marker_ = marker(algorithm)
    ax.plot(x, y, color=colour_, linestyle=_style(algorithm), linewidth=1.2)
    ax.fill_between(x, np.clip(y - sd, 0, 1), np.clip(y + sd, 0, 1), color=colour_, alpha=0.12,
                    linewidth=0)
    # markers at F = 1 or 0 sit on the axis edge: drawn whole (clip_on=False)
    for mark, style in MARK_STYLES.items():
        at = marks == mark
        if at.any():
            ax.plot(x[at], y[at], color=colour_, marker=marker_, markersize=4, linestyle="none",
                    clip_on=False, **style)
    gap = marks == "x"
    if gap.any():  # x in data units, y = 0 in axes units: on the x axis
        ax.plot(x[gap], np.zeros(gap.sum()), transform=ax.get_xaxis_transform(),
                color=colour_, marker="x", markersize=5, markeredgewidth=1.2, linestyle="none",
                clip_on=False)
    labelled = (marks == "half") & (share >= FAILED_LABEL_MIN)
    return [ax.annotate(f"{fraction:.0%}", (xi, yi), xytext=(0, 3), textcoords="offset points",
                        ha="center", va="bottom", fontsize=6, color=colour_)
            for xi, yi, fraction in zip(x[labelled], y[labelled], share[labelled], strict=True)]


def _base(algorithm):
    return next((a for a in PAPER_ALGORITHMS if algorithm.startswith(a + "-")), algorithm)


def colours(algorithms):
    """One colour per algorithm of a study (``algorithms``, in the study's order): the
    paper's five have theirs (:data:`COLOURS`), every other one (its variants such as
    PCSKM-paper, a user's estimators) the next of :data:`OTHER_COLOURS`, so that no two share
    a colour (up to 15 others) and each keeps its colour in every figure of the study."""
    others = [a for a in dict.fromkeys(algorithms) if a not in COLOURS]
    return {**{a: COLOURS[a] for a in algorithms if a in COLOURS},
            **{a: OTHER_COLOURS[i % len(OTHER_COLOURS)] for i, a in enumerate(others)}}


def colour(algorithm):
    """The colour of an algorithm drawn without its study (:func:`colours`)."""
    return colours([algorithm])[algorithm]


def marker(algorithm):
    """The marker of an algorithm (as :func:`colour`; "o" for any other)."""
    return MARKERS.get(_base(algorithm), "o")


def _style(algorithm):
    return "-" if algorithm in PAPER_ALGORITHMS else "--"


def _row_label(init, kind):
    return f"{INIT_LABELS.get(init, init)}, {KIND_LABELS.get(kind, kind)}"


def _wrap(label):
    return label.replace(" ", "\n", 1) if len(label) > 12 else label


def case_values(results, failures=failure_rules.AVAILABLE):
    """V = mean over the percentages of Fbar (docs/method/protocol.md §10) per (selection, family,
    algorithm, init, kind), with ``complete`` (every percentage complete); Fbar with the
    failed fits under the rule ``failures`` (:mod:`.failure_rules`)."""
    data = results.families
    f_mean = (data.f_mean if failures == failure_rules.AVAILABLE
              else data.f_rules.sel({failure_rules.DIM: failures}, drop=True))
    return (f_mean.mean("percent", skipna=False),
            data.complete.all("percent") & (data.n_expected > 0).all("percent"))


def case_table(results):
    """V per (selection, dataset, init, kind) x algorithm, as printed in report.md: '*' marks
    a value with missing cells (then the mean over the percentages that have a value);
    empty: nothing expected."""
    if results.families is None:
        return pd.DataFrame()
    values, complete = case_values(results)
    data = results.families
    with quiet():
        frame = xr.Dataset({
            "value": values, "complete": complete,
            "partial_value": data.f_mean.mean("percent"),
            "expected": data.n_expected.sum("percent"),
        }).to_dataframe().reset_index()
    frame = frame[frame.expected > 0]
    if frame.empty:
        return pd.DataFrame()
    frame["text"] = [f"{v:.4f}" if done else f"{p:.4f}*"
                     for v, p, done in zip(frame.value, frame.partial_value, frame.complete,
                                           strict=True)]
    keys = ["selection", "family", "init", "kind"]
    table = frame.pivot(index=keys, columns="algorithm", values="text").reset_index()
    for key in keys:  # the cube's order, not alphabetical
        table[key] = pd.Categorical(table[key], categories=[str(v) for v in data[key].values],
                                    ordered=True)
    table = table.sort_values(keys)
    table.insert(1, "dataset", table.family.astype(str).map(results.family_labels))
    columns = ["selection", "dataset", "init", "kind",
               *[a for a in algorithms(results) if a in table]]
    return table[columns].fillna("").astype(str).reset_index(drop=True)

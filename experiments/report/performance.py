"""Performance tables and the grids of the paper's Figure 1 and its appendix figures
(docs/method/protocol.md §11): mean F against the percentage of constraints, one line per
algorithm, one panel per (data set, init, kind), for the paper-style and for the honest
selection."""

import pandas as pd
import xarray as xr

from . import families, plotting
from .fits import quiet
from .selection import SELECTION_TITLES

PAPER_ALGORITHMS = ("LKM", "SKM", "PCKM", "MPCKM", "PCSKM")
COLOURS = {"LKM": "tab:orange", "SKM": "0.45", "PCKM": "tab:green", "MPCKM": "tab:red",
           "PCSKM": "tab:blue"}
MARKERS = {"LKM": "s", "SKM": "v", "PCKM": "^", "MPCKM": "D", "PCSKM": "o"}
INIT_LABELS = {"seeding": "Seeding", "dkm++": "DKM++", "robin": "ROBIN(D)",
               "maximin": "Maximin(D)"}
KIND_LABELS = {"random": "random (both)", "must-link": "must-link", "cannot-link": "cannot-link",
               "balanced": "balanced"}
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


def columns(results):
    """Figure columns: the paper's six data sets, then the other families in the cube."""
    present = set(results.family_members)
    return [f.label for f in families.PAPER_SIX] + [
        f.label for f in (*families.BRODINOVA, *families.CONTAMINATED) if f.label in present]


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
    f_mean, f_std, counts, complete); rows with nothing expected are left out."""
    if results.families is None:
        return pd.DataFrame()
    data = results.families[["f_mean", "f_std", "n_cells", "n_expected", "n_failed",
                             "n_subsets", "complete"]]
    frame = data.to_dataframe().reset_index()
    frame = frame[frame.n_expected > 0].copy()
    for column in ("family", "selection", "algorithm", "init", "kind"):
        frame[column] = frame[column].astype(str)
    frame.insert(1, "dataset", frame.family.map(results.family_labels))
    order = ["selection", "dataset", "init", "kind", "algorithm", "percent", "f_mean", "f_std",
             "n_cells", "n_expected", "n_failed", "n_subsets", "complete", "family"]
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


def figure(results, selection, title, rows, path):
    """One grid (rows: (init, kind); columns: data sets) for one selection, saved to
    ``path``; returns False (drawing nothing) when no panel is computed. A column with no
    computed panel is one narrow "not computed" panel."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    cols, algs, data = columns(results), algorithms(results), results.families
    computed = {(c, row): _computed(data, selection, c, row) for c in cols for row in rows}
    if not any(computed.values()):
        return False
    used = [any(computed[(c, row)] for row in rows) for c in cols]
    fig, grid = plotting.panel_grid([2.9 if u else 1.0 for u in used], [2.0] * len(rows),
                                    left=0.95, wgap=0.45)
    for r, row in enumerate(rows):
        plotting.row_label(fig, grid, r, _row_label(*row) + "\nmean F-score")
    for j, column in enumerate(cols):
        label = results.family_labels.get(column, column)
        if not used[j]:
            ax = fig.add_subplot(grid[:, j])
            ax.set_title(_wrap(label), fontsize=9)
            plotting.not_computed(ax, "not\ncomputed")
            continue
        for r, row in enumerate(rows):
            ax = fig.add_subplot(grid[r, j])
            ax.set_title(label, fontsize=9)
            if not computed[(column, row)]:
                plotting.not_computed(ax)
            else:
                panel = data.sel(selection=selection, family=column, init=row[0], kind=row[1])
                for algorithm in algs:
                    _line(ax, panel.sel(algorithm=algorithm), algorithm)
                ax.tick_params(labelsize=8)
                ax.grid(alpha=0.3, linewidth=0.5)
                if r == len(rows) - 1 or not computed[(column, rows[r + 1])]:
                    ax.set_xlabel("constraints (% of the pool)", fontsize=8)
    handles = [Line2D([], [], color=_colour(a), marker=MARKERS.get(_base(a), "o"),
                      linestyle=_style(a), markersize=5) for a in algs]
    handles += [Line2D([], [], color="0.3", marker="o", markerfacecolor="white",
                       linestyle="none"),
                Rectangle((0, 0), 1, 1, color="0.3", alpha=0.15)]
    labels = [*algs, "hollow marker: some expected cells missing", "band: ±1 SD over runs"]
    plotting.finish(fig, f"{title} — {SELECTION_TITLES[selection]}", handles, labels, path,
                    ncol=min(len(labels), 8))
    return True


def _computed(data, selection, family, row):
    if data is None or family not in data.family.values:
        return False
    init, kind = row
    try:
        cells = data.n_cells.sel(selection=selection, family=family, init=init, kind=kind)
    except KeyError:
        return False
    return bool(cells.sum() > 0)


def _line(ax, point, algorithm):
    """Draw one algorithm's mean F against the percentage (filled markers: complete; hollow:
    some expected cells missing) and a band of one standard deviation over runs."""
    shown = point.n_cells.values > 0
    if not shown.any():
        return
    x = point.percent.values[shown]
    y, sd = point.f_mean.values[shown], point.f_std.values[shown]
    complete = point.complete.values[shown].astype(bool)
    colour, marker = _colour(algorithm), MARKERS.get(_base(algorithm), "o")
    ax.plot(x, y, color=colour, linestyle=_style(algorithm), linewidth=1.2)
    ax.fill_between(x, y - sd, y + sd, color=colour, alpha=0.12, linewidth=0)
    ax.plot(x[complete], y[complete], color=colour, marker=marker, markersize=4,
            linestyle="none")
    ax.plot(x[~complete], y[~complete], color=colour, marker=marker, markersize=4,
            markerfacecolor="white", linestyle="none")


def _base(algorithm):
    return next((a for a in PAPER_ALGORITHMS if algorithm.startswith(a + "-")), algorithm)


def _colour(algorithm):
    return COLOURS.get(_base(algorithm), "tab:purple")


def _style(algorithm):
    return "-" if algorithm in PAPER_ALGORITHMS else "--"


def _row_label(init, kind):
    return f"{INIT_LABELS.get(init, init)}, {KIND_LABELS.get(kind, kind)}"


def _wrap(label):
    return label.replace(" ", "\n", 1) if len(label) > 12 else label


def case_values(results):
    """V = mean over the percentages of Fbar (docs/method/protocol.md §10) per (selection, family,
    algorithm, init, kind), with ``complete`` (every percentage complete)."""
    data = results.families
    return (data.f_mean.mean("percent", skipna=False),
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

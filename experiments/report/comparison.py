"""Analysis 1 under every selection of s (docs/method/protocol.md §10, §10.1): does the focus
algorithm (PCSKM in the paper; :mod:`.study`) beat the other algorithms whatever the selection?
The verdict of each test at both levels, the per-data-set differences, and each data set's
values (the data-set-level values of Analysis 1: the mean over its cases of V) that the
selections figure draws.

A verdict reads one test row of :func:`statistics.analyses`: "<focus> better" or "<focus>
worse" (:data:`BETTER`, :data:`WORSE` for PCSKM) when the Holm-adjusted p (over the tests of
the selection and level) is below :data:`claims.ALPHA`, on the side of the larger signed-rank
sum; "no difference" otherwise; "not computed" without a used case.
"""

import numpy as np
import pandas as pd

from . import statistics
from .claims import ALPHA
from .failure_rules import AVAILABLE
from .performance import algorithms, case_values
from .selection import ORDER

BETTER_, WORSE_ = "better", "worse"  # after the focus algorithm's name
SAME, NONE = "no difference", "not computed"
BETTER, WORSE = f"PCSKM {BETTER_}", f"PCSKM {WORSE_}"  # the paper's focus
COLUMNS = ["selection", "test", "level", "verdict", "n", "n_units", "not_computed",
           "dropped_nan", "wins", "losses", "ties", "p_value", "p_holm", "direction",
           "mean_diff", "hl_estimate", "rank_biserial"]


def verdict(row):
    """The verdict of one test row (module docstring); the focus is the row's ``x``
    (default PCSKM)."""
    if row.n == 0:
        return NONE
    if not row.p_holm < ALPHA:
        return SAME
    focus = getattr(row, "x", statistics.PAPER.focus)
    return f"{focus} {BETTER_ if row.direction == focus else WORSE_}"


def _ordered(frame):
    """Rows in the order of the selections (selection.ORDER, unknown names last)."""
    rank = {name: i for i, name in enumerate(ORDER)}
    return frame.sort_values("selection", key=lambda s: s.map(lambda n: rank.get(n, len(rank))),
                             kind="stable").reset_index(drop=True)


def analysis1_tests(tests):
    """``selections_analysis1.csv``: the tests of Analysis 1 (the focus against each other
    algorithm) under every selection, at both levels, with their verdict."""
    if tests.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = tests[tests.analysis == 1].copy()
    rows["verdict"] = [verdict(row) for row in rows.itertuples()]
    return _ordered(rows[COLUMNS])


SHORT = {SAME: "no diff.", NONE: "n/a"}


def _short(verdict):
    return SHORT.get(verdict, verdict.rsplit(" ", 1)[-1])


def cell(row):
    """One level of one test: the verdict (short), the Holm-adjusted p and the focus
    algorithm's wins/losses."""
    p = "n/a" if np.isnan(row.p_holm) else f"{row.p_holm:.2g}"
    return f"{_short(row.verdict)} (p {p}; {row.wins}/{row.losses})"


def verdict_table(table):
    """report.md's compact table of :func:`analysis1_tests`: one row per selection with the
    cases and data sets used, and per test the verdict at the cases level, then at the
    data-set level, each with its Holm-adjusted p and the focus algorithm's wins/losses."""
    if table.empty:
        return pd.DataFrame()
    focus = table.x.iloc[0] if "x" in table else statistics.PAPER.focus
    cells = table.assign(cell=[cell(row) for row in table.itertuples()])
    rows = []
    for selection, group in cells.groupby("selection", sort=False):
        by = group.set_index(["test", "level"])
        used = {level: f"{int(part.n.min())}" + (
            f"-{int(part.n.max())}" if part.n.min() != part.n.max() else "")
            + f" of {int(part.n_units.max())}"
            for level, part in group.groupby("level", sort=False)}
        rows.append({"selection": selection,
                     "used (cases; data sets)": f"{used.get('cases')}; {used.get('datasets')}",
                     **{test.removeprefix(f"{focus} "): f"{by.cell.get((test, 'cases'), 'n/a')}"
                                                       f" · sets: "
                                                       f"{by.cell.get((test, 'datasets'), 'n/a')}"
                        for test in table.test.unique() if (test, "cases") in by.index}})
    return merged_selections(pd.DataFrame(rows))


def merged_selections(frame):
    """``frame`` (one row per selection, column ``selection``) with the rows equal in every
    other column made one, named by their selections joined ("paper, honest, ..."): a
    comparison of algorithms without s reads the same under every selection."""
    if frame.empty:
        return frame
    values = [tuple(row) for row in frame.drop(columns="selection").itertuples(index=False)]
    names = {}
    for name, value in zip(frame.selection, values, strict=True):
        names.setdefault(value, []).append(name)
    first = [values.index(value) for value in names]
    out = frame.iloc[first].copy()
    out["selection"] = [", ".join(names[values[i]]) for i in first]
    return out.reset_index(drop=True)


def per_dataset_tables(breakdown):
    """Per test of Analysis 1, the per-data-set table (:func:`statistics.breakdown`) with the
    selections as rows and the data sets as columns: the mean V(focus) - V(other) over the
    data set's used cases and the focus algorithm's wins/losses/ties; '*' when some cases are
    not used."""
    if breakdown.empty:
        return {}
    tables = {}
    for test in breakdown.test[breakdown.analysis == 1].unique():
        part = breakdown[breakdown.test == test]
        if part.empty:
            continue
        cells = part.assign(cell=[
            (f"{r.mean_diff:+.3f} ({r.wins}/{r.losses}/{r.ties})" + ("*" if r.n_used < r.n_cases
                                                                    else ""))
            if r.n_used else NONE for r in part.itertuples()])
        wide = cells.pivot(index="selection", columns="dataset", values="cell")
        wide = wide.loc[part.selection.unique(), part.dataset.unique()].reset_index()
        wide.columns.name = None
        tables[test] = merged_selections(_ordered(wide))
    return tables


def dataset_values(results, plan=statistics.PAPER, failures=AVAILABLE):
    """Per reported data set, selection and algorithm of ``plan`` (the focus and the others;
    the paper's: its five): the mean over the data set's Analysis-1 settings (the paper's:
    (Seeding, random) and the deterministic inits x the three kinds) of V, on the settings
    where each of them has a complete V under that selection (``n_settings`` of
    ``plan.settings``), with the algorithm's ``rank`` (1: the best). Empty without families
    or plan. ``failures``: the rule for failed fits (:mod:`.failure_rules`)."""
    if results.families is None or plan is None:
        return pd.DataFrame()
    values, complete = case_values(results, failures)
    shown = [a for a in algorithms(results) if a in plan.algorithms]
    # one array each, (family, selection, init, kind, algorithm), read by position
    dims = ("family", "selection", "init", "kind")
    at = {dim: values[dim] for dim in dims} | {"algorithm": shown}
    value_of = values.sel(at).transpose(*dims, "algorithm").values
    done_of = complete.sel(at).transpose(*dims, "algorithm").values
    inits, kinds = ({str(label): n for n, label in enumerate(values[dim].values)}
                    for dim in ("init", "kind"))
    settings = [(inits[init], kinds[kind]) for init, kind in plan.settings
                if init in inits and kind in kinds]
    rows = []
    for f, family in enumerate(values.family.values):
        for s, selection in enumerate(values.selection.values):
            per_setting = []
            for i, k in settings:
                v, done = value_of[f, s, i, k], done_of[f, s, i, k]
                if done.all() and not np.isnan(v).any():
                    per_setting.append(v)
            if not per_setting:
                continue
            means = np.mean(per_setting, axis=0)
            for algorithm, value in zip(shown, means, strict=True):
                rows.append({"dataset": results.family_labels.get(str(family), str(family)),
                             "family": str(family), "selection": str(selection),
                             "algorithm": algorithm, "value": value,
                             "n_settings": len(per_setting),
                             "rank": int((means > value).sum()) + 1})
    return pd.DataFrame(rows, columns=["dataset", "family", "selection", "algorithm", "value",
                                       "n_settings", "rank"])


def focus_table(values, focus=statistics.PAPER.focus):
    """report.md's table of :func:`dataset_values`: one row per selection, one column per
    data set, the focus algorithm's value and its rank among the algorithms."""
    pcskm = values[values.algorithm == focus] if not values.empty else values
    if pcskm.empty:
        return pd.DataFrame()
    cells = pcskm.assign(cell=[f"{r.value:.3f} ({_ordinal(r.rank)})"
                               for r in pcskm.itertuples()])
    wide = cells.pivot(index="selection", columns="dataset", values="cell")
    wide = wide.loc[pcskm.selection.unique(), pcskm.dataset.unique()].reset_index()
    wide.columns.name = None
    return _ordered(wide).fillna(NONE)


def _ordinal(rank):
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(rank, "th")
    return f"{rank}{suffix}"

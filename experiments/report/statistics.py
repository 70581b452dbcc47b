"""The paper's two Wilcoxon signed-rank analyses (docs/method/protocol.md §10), each at two
levels (§10.1): the paper's cases and the data sets.

A case value V is the mean over the percentages of Fbar (the sparse algorithms at the
selected s), on the six real data sets. A case whose value is not computed (or has missing
cells) is left out and counted as ``not_computed``; a computed case with V = NaN (every fit of
some percentage failed) is dropped and counted as ``dropped_nan``.

* Analysis 1 (60 cases): (Seeding, random) and {DKM++, ROBIN(D), Maximin(D)} x {random,
  must-link, cannot-link}, times the six data sets; x = V(PCSKM), y = V(A) for A in LKM, SKM,
  PCKM, MPCKM.
* Analysis 2 (72 cases): {DKM++, ROBIN(D), Maximin(D)} x {PCKM, MPCKM, SKM, PCSKM} x the six
  data sets; must-link vs cannot-link, must-link vs random, cannot-link vs random.

Level ``cases`` tests the used cases as the paper did (``method="auto"``); level ``datasets``
reduces them to one value per data set, the mean over its used cases, and tests those with the
exact null distribution. Both levels carry the Hodges-Lehmann estimate and interval, the
rank-biserial correlation, the data-set-clustered bootstrap interval of the mean difference
and Holm-adjusted p-values over the family of the seven tests of one selection and level.
:func:`analyse_selection` takes the case values of any selection.

Analysis 1 is one case of a :class:`Plan`: a focus algorithm against others on (init, kind)
settings x data sets. :data:`PAPER` is the paper's (PCSKM against its four others on the 60
cases, with Analysis 2); :func:`study_plan` gives any study's (the spec's ``[report] focus``
against every other algorithm of the cube on every setting and data set of the cube, Analysis 1
alone, Holm over its tests; docs/guide/quick-study.md, "A study that is not the paper's").
"""

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats

from .._seeds import generator
from . import families, inference
from .failure_rules import AVAILABLE
from .performance import algorithms, case_values

SIX = tuple(f.label for f in families.PAPER_SIX)
DETERMINISTIC = ("dkm++", "robin", "maximin")
KINDS = ("random", "must-link", "cannot-link")
ANALYSIS1_SETTINGS = (("seeding", "random"),
                      *((init, kind) for init in DETERMINISTIC for kind in KINDS))
ANALYSIS1_OTHERS = ("LKM", "SKM", "PCKM", "MPCKM")
ANALYSIS2_ALGORITHMS = ("PCKM", "MPCKM", "SKM", "PCSKM")
ANALYSIS2_PAIRS = (("must-link", "cannot-link"), ("must-link", "random"),
                   ("cannot-link", "random"))
# level -> scipy's method: the paper's choice on the cases, the exact distribution on the
# data sets (docs/method/protocol.md §10.1)
LEVELS = {"cases": "auto", "datasets": "exact"}
# the bootstrap's generator: master seed 0, key (6, analysis, test) (docs/method/protocol.md §2)
BOOTSTRAP_SEED, BOOTSTRAP_KEY = 0, 6


@dataclass(frozen=True)
class Plan:
    """Analysis 1 of a study: ``focus`` (x) against each of ``others`` (y) on the cases
    ``settings`` ((init, kind) pairs) x ``datasets`` (family labels); ``paper``: the paper's
    plan, which adds Analysis 2 to the tests of each selection and level (and so to Holm's
    family)."""

    focus: str
    others: tuple
    settings: tuple
    datasets: tuple
    paper: bool = False

    @property
    def algorithms(self):
        return (*self.others, self.focus)

    def test_name(self, other):
        return f"{self.focus} vs {other}"


PAPER = Plan("PCSKM", ANALYSIS1_OTHERS, ANALYSIS1_SETTINGS, SIX, paper=True)


def study_plan(results, focus):
    """The Analysis-1 plan of ``results`` with ``focus`` (an algorithm of the cube): the
    paper's (:data:`PAPER`) when the focus is PCSKM and every data set of the cube is one of
    the paper's families with at least one of its six; else ``focus`` against every other
    algorithm of the cube (:func:`performance.algorithms` order) on every (init, kind) where
    the focus has expected cells, x every data set of the cube."""
    data = results.families
    labels = [str(f) for f in data.family.values]
    paper_families = {f.label for f in families.ALL}
    if (focus == PAPER.focus and set(labels) <= paper_families
            and any(label in SIX for label in labels)):
        return PAPER
    expected = data.n_expected.sel(algorithm=focus).sum(("selection", "family", "percent"))
    settings = tuple((str(i), str(k)) for i in expected.init.values
                     for k in expected.kind.values if expected.sel(init=i, kind=k) > 0)
    others = tuple(a for a in algorithms(results) if a != focus)
    return Plan(focus, others, settings, tuple(labels))


def smallest_holm_p(n, m):
    """The smallest Holm-adjusted p that an exact two-sided signed-rank test on ``n`` values
    reaches in a family of ``m`` tests: ``m`` times 2 / 2^n (every difference of one sign),
    at most 1."""
    return min(1.0, m * 2 / 2 ** n)


def values_needed(m, alpha):
    """The fewest values (data sets) with which an exact two-sided signed-rank test in a
    Holm family of ``m`` tests can reach an adjusted p below ``alpha``."""
    n = 1
    while smallest_holm_p(n, m) >= alpha:
        n += 1
    return n


def signed_rank_test(d, method="auto"):
    """(statistic, p-value) of the two-sided signed-rank test of docs/method/protocol.md §10
    on the differences d (zeros dropped, no continuity correction; ``method`` as in
    ``scipy.stats.wilcoxon``); (NaN, NaN) when every difference is zero."""
    if not np.any(d != 0):
        return np.nan, np.nan
    test = scipy.stats.wilcoxon(d, zero_method="wilcox", correction=False,
                                alternative="two-sided", method=method)
    return float(test.statistic), float(test.pvalue)


def wilcoxon(x, y, method="auto"):
    """The signed-rank test of docs/method/protocol.md §10 on paired vectors without NaN: n,
    the number of non-zero differences, scipy's statistic and p-value (``method`` as in
    ``scipy.stats.wilcoxon``), the median and mean of x - y, the wins (x > y), losses and
    ties, the positive and negative rank sums, the direction (the side with the larger rank
    sum), the rank-biserial correlation and the Hodges-Lehmann estimate with its interval and
    attained confidence over the differences the test ranks (zeros dropped, §10.1)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be paired 1-d vectors; got shapes {x.shape}, {y.shape}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("x and y must not hold NaN (drop those cases first)")
    d = x - y
    n_nonzero = int((d != 0).sum())
    r_plus, r_minus = inference.rank_sums(d)
    statistic, p_value = signed_rank_test(d, method)
    direction = "x" if r_plus > r_minus else "y" if r_minus > r_plus else "none"
    # the estimate and interval that go with the test: its differences, zeros dropped
    estimate, low, high, attained = inference.hodges_lehmann(d[d != 0])
    return {
        "n": len(d), "n_nonzero": n_nonzero, "statistic": statistic, "p_value": p_value,
        "median_diff": float(np.median(d)) if len(d) else np.nan,
        "wins": int((d > 0).sum()), "losses": int((d < 0).sum()), "ties": int((d == 0).sum()),
        "rank_sum_plus": r_plus, "rank_sum_minus": r_minus, "direction": direction,
        "method": method, "mean_diff": float(d.mean()) if len(d) else np.nan,
        "rank_biserial": inference.rank_biserial(d),
        "hl_estimate": estimate, "hl_low": low, "hl_high": high, "hl_confidence": attained,
    }


class _Cases:
    """V and whether it is complete (``values``, ``complete``: DataArrays over the same dims)
    looked up by coordinates, one dict look-up per case: the ``.sel`` of one case at a time
    was most of the statistics' time."""

    def __init__(self, values, complete):
        self.dims = values.dims
        self.values = _by_coordinates(values, self.dims)
        self.complete = _by_coordinates(complete, self.dims)

    def get(self, where):
        """(V, complete) of one case (``where``: a coordinate of every dim); (NaN, False)
        when it is not in the cube."""
        if set(where) != set(self.dims):
            raise ValueError(f"a case names the dims {sorted(where)}, the values have "
                             f"{sorted(self.dims)}")
        key = tuple(where[dim] for dim in self.dims)
        if key not in self.values or key not in self.complete:
            return np.nan, False
        return float(self.values[key]), bool(self.complete[key])


def _by_coordinates(array, dims):
    """{coordinates in the order of ``dims``: value} of every element of ``array``."""
    array = array.transpose(*dims)
    labels = [array[dim].values.tolist() for dim in dims]
    data = array.values
    return {key: data[index] for index, key in zip(np.ndindex(data.shape),
                                                    itertools.product(*labels), strict=True)}


def _pairs(found, cases, x_where, y_where):
    """Case rows with x, y (looked up in ``found``, a :class:`_Cases`) and their state: used,
    dropped_nan or not_computed."""
    rows = []
    for case in cases:
        x, x_ok = found.get({**case, **x_where})
        y, y_ok = found.get({**case, **y_where})
        state = ("not_computed" if not (x_ok and y_ok)
                 else "dropped_nan" if np.isnan(x) or np.isnan(y) else "used")
        rows.append({**case, "x": x, "y": y, "state": state})
    return pd.DataFrame(rows)


def _mean(values):
    return values.sum() / len(values) if len(values) else np.nan


def per_dataset(pairs):
    """One row per data set of a test's case rows (``_pairs``): its cases, the used ones,
    the means of x and y over them, and the mean (its data-set value, §10.1), median, wins,
    losses and ties of x - y."""
    if pairs.empty:
        return pd.DataFrame()
    family = pairs.family.to_numpy()
    used = (pairs.state == "used").to_numpy()
    x, y = pairs.x.to_numpy(dtype=np.float64), pairs.y.to_numpy(dtype=np.float64)
    rows = []
    for name in pd.unique(family):
        of = family == name
        at = of & used
        d = x[at] - y[at]
        rows.append({
            "family": name, "n_cases": int(of.sum()), "n_used": int(at.sum()),
            "mean_x": _mean(x[at]), "mean_y": _mean(y[at]),
            "mean_diff": float(d.mean()) if len(d) else np.nan,
            "median_diff": float(np.median(d)) if len(d) else np.nan,
            "wins": int((d > 0).sum()), "losses": int((d < 0).sum()),
            "ties": int((d == 0).sum()),
        })
    return pd.DataFrame(rows)


def _test_rows(analysis, number, name, x_label, y_label, pairs):
    """One test (``number`` within its ``analysis``) on a case table, at both levels: the
    used cases, and the data sets with at least one used case (their mean x and y). Both
    levels draw the same data-set resamples (key (6, analysis, number), §2)."""
    used = pairs[pairs.state == "used"]
    datasets = per_dataset(pairs)
    datasets = datasets[datasets.n_used > 0]
    units = {"cases": (used.x, used.y, used.family, len(pairs)),
             "datasets": (datasets.mean_x, datasets.mean_y, datasets.family,
                          pairs.family.nunique())}
    rows = []
    for level, method in LEVELS.items():
        x, y, clusters, n_units = units[level]
        x, y = x.to_numpy(dtype=np.float64), y.to_numpy(dtype=np.float64)
        result = wilcoxon(x, y, method=method)
        result["direction"] = {"x": x_label, "y": y_label, "none": "none"}[result["direction"]]
        rng = generator(BOOTSTRAP_SEED, (BOOTSTRAP_KEY, analysis, number))
        _mean, low, high = inference.cluster_bootstrap(x - y, clusters.to_numpy(), rng)
        rows.append({
            "level": level, "analysis": analysis, "test": name, "x": x_label, "y": y_label,
            "n_cases": len(pairs),
            "dropped_nan": int((pairs.state == "dropped_nan").sum()),
            "not_computed": int((pairs.state == "not_computed").sum()),
            **result, "n_units": n_units, "n_datasets": len(datasets),
            "boot_low": low, "boot_high": high,
        })
    return rows


COLUMNS = ["selection", "level", "analysis", "test", "x", "y", "n_cases", "dropped_nan",
           "not_computed", "n", "n_nonzero", "statistic", "p_value", "median_diff", "wins",
           "losses", "ties", "rank_sum_plus", "rank_sum_minus", "direction", "method",
           "n_units", "n_datasets", "p_holm", "holm_m", "mean_diff", "boot_low", "boot_high",
           "hl_estimate", "hl_low", "hl_high", "hl_confidence", "rank_biserial"]


def _analysis1_cases(plan):
    return [{"init": i, "kind": k, "family": f} for i, k in plan.settings
            for f in plan.datasets]


def _holm_by_level(tests):
    """``tests`` sorted by level, with Holm's adjustment over the tests of each level."""
    tests["level"] = pd.Categorical(tests.level, categories=list(LEVELS), ordered=True)
    tests = tests.sort_values("level", kind="stable").reset_index(drop=True)
    tests["level"] = tests.level.astype(str)
    for level in LEVELS:  # Holm's family: the tests of this selection and level with a p
        rows = tests.level == level
        tests.loc[rows, "p_holm"] = inference.holm(tests.loc[rows, "p_value"].to_numpy())
        tests.loc[rows, "holm_m"] = int(tests.loc[rows, "p_value"].notna().sum())
    tests["holm_m"] = tests.holm_m.astype(int)
    return tests


def selection_test(results, plan, x_selection, y_selection, failures=AVAILABLE):
    """Analysis 3, the reference arm (docs/method/selection.md §6): ``plan.focus`` under
    ``x_selection`` (x) against itself under ``y_selection`` (y) on the cases of Analysis 1,
    at both levels, with the columns of :func:`analyse_selection` (``selection`` is
    ``x_selection``; the bootstrap's key (6, 3, 1)). One test per level: Holm leaves its p
    as it is. Empty when the cube has no such selection. ``failures``: the rule for failed
    fits (:mod:`.failure_rules`)."""
    values, complete = case_values(results, failures)
    if not {x_selection, y_selection} <= set(map(str, values.selection.values)):
        return pd.DataFrame(columns=COLUMNS)
    x_label, y_label = (f"{plan.focus} ({name})" for name in (x_selection, y_selection))
    pairs = _pairs(_Cases(values, complete), _analysis1_cases(plan),
                   {"algorithm": plan.focus, "selection": x_selection},
                   {"algorithm": plan.focus, "selection": y_selection})
    rows = _test_rows(3, 1, f"{x_label} vs {y_label}", x_label, y_label, pairs)
    return _holm_by_level(pd.DataFrame(rows).assign(selection=x_selection))[COLUMNS]


def _pair_tables(values, complete, plan):
    """``(analysis, number, test, x label, y label, pairs)`` of every test of ``plan`` on
    the case values of one selection (:func:`_pairs`)."""
    found = _Cases(values, complete)
    cases1 = _analysis1_cases(plan)
    for number, other in enumerate(plan.others, 1):
        yield 1, number, plan.test_name(other), plan.focus, other, _pairs(
            found, cases1, {"algorithm": plan.focus}, {"algorithm": other})
    cases2 = [{"init": i, "algorithm": a, "family": f} for i in DETERMINISTIC
              for a in ANALYSIS2_ALGORITHMS for f in SIX]
    for number, (x_kind, y_kind) in enumerate(ANALYSIS2_PAIRS if plan.paper else (), 1):
        yield 2, number, f"{x_kind} vs {y_kind}", x_kind, y_kind, _pairs(
            found, cases2, {"kind": x_kind}, {"kind": y_kind})


def analyse_selection(selection, values, complete, plan=PAPER, tests=True):
    """The analyses of ``plan`` on the case values of one selection (``values``,
    ``complete``: V and whether it is complete, per family, algorithm, init and kind; see
    :func:`performance.case_values`): ``(tests, cases)`` DataFrames, the tests one row per
    (level, test) with Holm's adjustment over the tests of each level (the paper's plan:
    seven), the cases one row per case and test with x, y and the state of the case.
    ``tests=False``: the cases alone (the tests' frame empty)."""
    found, case_rows = [], []
    for analysis, number, name, x_label, y_label, pairs in _pair_tables(values, complete,
                                                                        plan):
        if tests:
            found += _test_rows(analysis, number, name, x_label, y_label, pairs)
        case_rows.append(pairs.assign(analysis=analysis, test=name))
    if not case_rows:
        return pd.DataFrame(columns=COLUMNS), pd.DataFrame()
    found = (_holm_by_level(pd.DataFrame(found).assign(selection=str(selection)))[COLUMNS]
             if tests else pd.DataFrame(columns=COLUMNS))
    cases = pd.concat(case_rows, ignore_index=True).assign(selection=str(selection))
    return found, cases


def analyses(results, plan=PAPER, failures=AVAILABLE, tests=True):
    """The analyses of ``plan`` (None: none), at both levels, for every selection of the
    cube, with the failed fits under the rule ``failures`` (:mod:`.failure_rules`):
    ``(tests, cases)`` (see :func:`analyse_selection`; the cases carry the data set's
    label; ``tests=False``: the cases alone)."""
    if results.families is None or plan is None or not (plan.others and plan.settings
                                                        and plan.datasets):
        return pd.DataFrame(), pd.DataFrame()
    values, complete = case_values(results, failures)
    found = [analyse_selection(str(selection), values.sel(selection=selection),
                               complete.sel(selection=selection), plan, tests)
             for selection in values.selection.values]
    tests = pd.concat([t for t, _c in found], ignore_index=True)
    cases = pd.concat([c for _t, c in found], ignore_index=True)
    cases["dataset"] = cases.family.map(lambda f: results.family_labels.get(f, f))
    return tests, cases


def breakdown(cases):
    """The per-data-set table of every test (``cases`` from :func:`analyses`): one row per
    (selection, analysis, test, data set) with the columns of :func:`per_dataset`."""
    if cases.empty:
        return pd.DataFrame()
    frames = []
    for (selection, analysis, test), group in cases.groupby(["selection", "analysis", "test"],
                                                            sort=False):
        frame = per_dataset(group)
        frame.insert(0, "dataset", frame.family.map(dict(zip(group.family, group.dataset,
                                                              strict=True))))
        frames.append(frame.assign(selection=selection, analysis=analysis, test=test))
    table = pd.concat(frames, ignore_index=True)
    first = ["selection", "analysis", "test", "dataset"]
    return table[first + [c for c in table.columns if c not in first]]

"""The paper's two Wilcoxon signed-rank analyses (docs/method/protocol.md §10).

A case value V is the mean over the percentages of Fbar (the sparse algorithms at the
selected s), on the six real data sets. A case whose value is not computed (or has missing
cells) is left out and counted as ``not_computed``; a computed case with V = NaN (every fit of
some percentage failed) is dropped and counted as ``dropped_nan``.

* Analysis 1 (60 cases): (Seeding, random) and {DKM++, ROBIN(D), Maximin(D)} x {random,
  must-link, cannot-link}, times the six data sets; x = V(PCSKM), y = V(A) for A in LKM, SKM,
  PCKM, MPCKM.
* Analysis 2 (72 cases): {DKM++, ROBIN(D), Maximin(D)} x {PCKM, MPCKM, SKM, PCSKM} x the six
  data sets; must-link vs cannot-link, must-link vs random, cannot-link vs random.
"""

import numpy as np
import pandas as pd
import scipy.stats

from . import families
from .performance import case_values

SIX = tuple(f.label for f in families.PAPER_SIX)
DETERMINISTIC = ("dkm++", "robin", "maximin")
KINDS = ("random", "must-link", "cannot-link")
ANALYSIS1_SETTINGS = (("seeding", "random"),
                      *((init, kind) for init in DETERMINISTIC for kind in KINDS))
ANALYSIS1_OTHERS = ("LKM", "SKM", "PCKM", "MPCKM")
ANALYSIS2_ALGORITHMS = ("PCKM", "MPCKM", "SKM", "PCSKM")
ANALYSIS2_PAIRS = (("must-link", "cannot-link"), ("must-link", "random"),
                   ("cannot-link", "random"))


def wilcoxon(x, y):
    """The signed-rank test of docs/method/protocol.md §10 on paired vectors without NaN: n,
    the number of non-zero differences, scipy's statistic and p-value, the median of x - y, the wins
    (x > y), losses and ties, the positive and negative rank sums, and the direction (the
    side with the larger rank sum)."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be paired 1-d vectors; got shapes {x.shape}, {y.shape}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise ValueError("x and y must not hold NaN (drop those cases first)")
    d = x - y
    nonzero = d[d != 0]
    ranks = scipy.stats.rankdata(np.abs(nonzero))
    r_plus, r_minus = float(ranks[nonzero > 0].sum()), float(ranks[nonzero < 0].sum())
    statistic = p_value = np.nan
    if len(nonzero):
        test = scipy.stats.wilcoxon(x, y, zero_method="wilcox", correction=False,
                                    alternative="two-sided", method="auto")
        statistic, p_value = float(test.statistic), float(test.pvalue)
    direction = "x" if r_plus > r_minus else "y" if r_minus > r_plus else "none"
    return {
        "n": len(d), "n_nonzero": len(nonzero), "statistic": statistic, "p_value": p_value,
        "median_diff": float(np.median(d)) if len(d) else np.nan,
        "wins": int((d > 0).sum()), "losses": int((d < 0).sum()), "ties": int((d == 0).sum()),
        "rank_sum_plus": r_plus, "rank_sum_minus": r_minus, "direction": direction,
    }


def _value(values, complete, **where):
    """(V, complete) of one case; (NaN, False) when it is not in the cube."""
    try:
        return float(values.sel(where)), bool(complete.sel(where))
    except KeyError:
        return np.nan, False


def _pairs(values, complete, cases, x_where, y_where):
    """Case rows with x, y and their state: used, dropped_nan or not_computed."""
    rows = []
    for case in cases:
        x, x_ok = _value(values, complete, **case, **x_where)
        y, y_ok = _value(values, complete, **case, **y_where)
        state = ("not_computed" if not (x_ok and y_ok)
                 else "dropped_nan" if np.isnan(x) or np.isnan(y) else "used")
        rows.append({**case, "x": x, "y": y, "state": state})
    return pd.DataFrame(rows)


def _test_row(selection, analysis, test, x_label, y_label, pairs):
    used = pairs[pairs.state == "used"]
    result = wilcoxon(used.x.to_numpy(), used.y.to_numpy())
    result["direction"] = {"x": x_label, "y": y_label, "none": "none"}[result["direction"]]
    return {
        "selection": selection, "analysis": analysis, "test": test, "x": x_label,
        "y": y_label, "n_cases": len(pairs), "dropped_nan": int((pairs.state == "dropped_nan")
                                                                .sum()),
        "not_computed": int((pairs.state == "not_computed").sum()), **result,
    }


def analyses(results):
    """Both analyses for both selections: ``(tests, cases)`` DataFrames (one row per test;
    one row per case and test with x, y and the state of the case)."""
    tests, case_rows = [], []
    if results.families is None:
        return pd.DataFrame(), pd.DataFrame()
    values, complete = case_values(results)
    for selection in values.selection.values:
        v = values.sel(selection=selection)
        c = complete.sel(selection=selection)
        cases1 = [{"init": i, "kind": k, "family": f} for i, k in ANALYSIS1_SETTINGS
                  for f in SIX]
        for other in ANALYSIS1_OTHERS:
            pairs = _pairs(v, c, cases1, {"algorithm": "PCSKM"}, {"algorithm": other})
            name = f"PCSKM vs {other}"
            tests.append(_test_row(str(selection), 1, name, "PCSKM", other, pairs))
            case_rows.append(pairs.assign(selection=str(selection), analysis=1, test=name))
        cases2 = [{"init": i, "algorithm": a, "family": f} for i in DETERMINISTIC
                  for a in ANALYSIS2_ALGORITHMS for f in SIX]
        for x_kind, y_kind in ANALYSIS2_PAIRS:
            pairs = _pairs(v, c, cases2, {"kind": x_kind}, {"kind": y_kind})
            name = f"{x_kind} vs {y_kind}"
            tests.append(_test_row(str(selection), 2, name, x_kind, y_kind, pairs))
            case_rows.append(pairs.assign(selection=str(selection), analysis=2, test=name))
    cases = pd.concat(case_rows, ignore_index=True)
    cases["dataset"] = cases.family.map(lambda f: results.family_labels.get(f, f))
    return pd.DataFrame(tests), cases

"""Tests that decide (docs/method/statistics.md): for the focus against each other algorithm
of the plan, under every selection of s and every rule for failed fits (:mod:`.failure_rules`),

* the Bayesian signed-rank test with a ROPE on the data sets' values (the values of the
  exact Wilcoxon test at the data-set level, :func:`statistics.per_dataset`), beside that
  test with Holm over the focus's tests of the selection and rule: better, worse,
  practically equivalent or undecided;
* per data set, the Bayesian correlated t-test over its runs x folds (the mean over the
  plan's settings and the percentages of F in each (run, fold)), under the primary selection;
* Friedman's test (Iman-Davenport) over all the plan's algorithms on the data sets where each
  has a value (:func:`comparison.dataset_values`), the mean ranks, and the critical-difference
  diagram of the primary selection and rule, its cliques from pairwise Wilcoxon + Holm.

The settings (ROPE, prior, threshold, primary rule for failed fits and its value) are the
store's ``[preregistration]``, else its documented defaults (:class:`Preregistration`). The
Monte Carlo draws of the signed-rank test come from the generator of key (10, test,
failures) with master seed 0 (docs/method/protocol.md §2): the same for every selection.
"""

import numpy as np
import pandas as pd
import xarray as xr

from .._seeds import generator
from ..spec import Preregistration
from . import bayesian, inference, ranking, statistics
from .comparison import dataset_values
from .failure_rules import AVAILABLE, RULES
from .fits import quiet

BAYES_SEED, BAYES_KEY = 0, 10
PRIMARY_DEFAULT = "cv"  # without a preregistration: the first of these the cube has
FALLBACK_SELECTIONS = ("cv", "paper")
COLUMNS = ["selection", "failures", "primary", "test", "x", "y", "n", "wins", "losses", "ties",
           "mean_diff", "hl_estimate", "p_value", "p_holm", "wilcoxon", "rope", "prior",
           "p_better", "p_rope", "p_worse", "decision"]
T_COLUMNS = ["selection", "failures", "primary", "test", "x", "y", "dataset", "n", "rho",
             "mean_diff", "rope", "p_better", "p_rope", "p_worse", "decision"]


def settings(prereg):
    """The pre-registered settings, else a :class:`Preregistration` of the defaults (its rule
    and focus unset)."""
    return prereg if prereg is not None else Preregistration(rule="", focus="", hypotheses="")


def primary_selection(results, prereg):
    """The pre-registered rule, else cv when the cube has it, else paper."""
    if prereg is not None:
        return prereg.rule
    return next((name for name in FALLBACK_SELECTIONS if name in results.selections),
                results.selections[0] if results.selections else "")


def _wilcoxon_verdict(row, alpha):
    if row["n"] == 0 or not row["n_nonzero"]:
        return "not computed" if row["n"] == 0 else "no difference"
    if not row["p_holm"] < alpha:
        return "no difference"
    return "better" if row["direction"] == "x" else "worse"


def signed_rank_rows(cases, plan, failures, chosen, alpha):
    """One row per (selection, test of Analysis 1) of the case rows ``cases`` (from
    :func:`statistics.analyses` under the rule ``failures``): the data sets' values, the exact
    Wilcoxon test with Holm over the focus's tests of the selection, and the Bayesian
    signed-rank test with ``chosen``'s ROPE, prior and threshold."""
    rows = []
    part = cases[cases.analysis == 1] if not cases.empty else cases
    for selection, of_selection in part.groupby("selection", sort=False):
        found = []
        for number, other in enumerate(plan.others, 1):
            pairs = of_selection[of_selection.test == plan.test_name(other)]
            datasets = statistics.per_dataset(pairs)
            datasets = datasets[datasets.n_used > 0] if not datasets.empty else datasets
            x = datasets.mean_x.to_numpy(dtype=np.float64) if len(datasets) else np.empty(0)
            y = datasets.mean_y.to_numpy(dtype=np.float64) if len(datasets) else np.empty(0)
            test = statistics.wilcoxon(x, y, method="exact")
            row = {"selection": selection, "failures": failures, "test": plan.test_name(other),
                   "x": plan.focus, "y": other, **test, "rope": chosen.rope,
                   "prior": chosen.prior, "p_better": np.nan, "p_rope": np.nan,
                   "p_worse": np.nan, "decision": "not computed"}
            if len(x):
                rng = generator(BAYES_SEED, (BAYES_KEY, number, RULES.index(failures) + 1))
                p = bayesian.signed_rank_test(x, y, chosen.rope, chosen.prior, rng=rng)
                row.update(p_better=p[0], p_rope=p[1], p_worse=p[2],
                           decision=bayesian.decision(*p, threshold=chosen.threshold))
            found.append(row)
        holm = inference.holm(np.array([r["p_value"] for r in found], dtype=np.float64))
        for row, p_holm in zip(found, holm, strict=True):
            row["p_holm"] = p_holm
            row["wilcoxon"] = _wilcoxon_verdict(row, alpha)
        rows += found
    return rows


def case_rows(results, plan, available=None):
    """The case rows of :func:`statistics.analyses` of ``plan`` under every rule for failed
    fits (rule -> DataFrame); ``available``: those of the available rule, if computed."""
    return {failures: (available if failures == AVAILABLE and available is not None
                       else statistics.analyses(results, plan, failures, tests=False)[1])
            for failures in RULES}


def signed_rank_table(results, plan, prereg, cases=None):
    """``bayesian_tests.csv``: :func:`signed_rank_rows` under every rule for failed fits
    (``cases``: :func:`case_rows`, computed if not given); ``primary`` marks the
    pre-registered selection and rule (without a preregistration, the
    :func:`primary_selection` under the default rule)."""
    if results.families is None or plan is None:
        return pd.DataFrame(columns=COLUMNS)
    chosen = settings(prereg)
    cases = case_rows(results, plan) if cases is None else cases
    rows = []
    for failures in RULES:
        rows += signed_rank_rows(cases[failures], plan, failures, chosen, chosen.alpha)
    table = pd.DataFrame(rows)
    if table.empty:
        return pd.DataFrame(columns=COLUMNS)
    table["primary"] = ((table.selection == primary_selection(results, prereg))
                        & (table.failures == chosen.failures))
    return table[COLUMNS]


def _over_settings(values, plan):
    """The mean over the plan's (init, kind) settings the cube has, per remaining dims."""
    present = [(i, k) for i, k in plan.settings
               if i in values.init.values and k in values.kind.values]
    if not present:
        return None
    at = {"init": xr.DataArray([i for i, _k in present], dims="setting"),
          "kind": xr.DataArray([k for _i, k in present], dims="setting")}
    with quiet():
        return values.sel(at).mean("setting")


def dataset_t_table(results, plan, prereg):
    """``dataset_t_tests.csv``: per data set and test of Analysis 1, under the primary
    selection and every rule for failed fits, the Bayesian correlated t-test of the focus
    against the other algorithm over the (run, fold) cells where both have a value, with
    rho = 1 / n_folds (each fold's test part of the data)."""
    selection = primary_selection(results, prereg)
    chosen = settings(prereg)
    if plan is None or not results.run_fold:
        return pd.DataFrame(columns=T_COLUMNS)
    rho = 1 / int(results.store.attrs.get("protocol", {}).get("n_folds", 10))
    rows = []
    for label, values in results.run_fold.items():
        if label not in plan.datasets or selection not in values.selection.values:
            continue
        means = _over_settings(values.sel(selection=selection), plan)
        if means is None:
            continue
        held = set(map(str, means.algorithm.values))
        for failures in RULES:
            for other in plan.others:
                if not {plan.focus, other} <= held:  # a data set without one of them
                    continue
                x = means.sel(failures=failures, algorithm=plan.focus).values.ravel()
                y = means.sel(failures=failures, algorithm=other).values.ravel()
                both = ~(np.isnan(x) | np.isnan(y))
                row = {"selection": selection, "failures": failures,
                       "primary": failures == chosen.failures, "test": plan.test_name(other),
                       "x": plan.focus, "y": other,
                       "dataset": results.family_labels.get(label, label), "n": int(both.sum()),
                       "rho": rho, "mean_diff": np.nan, "rope": chosen.rope, "p_better": np.nan,
                       "p_rope": np.nan, "p_worse": np.nan, "decision": "not computed"}
                if both.sum() >= 2:
                    p = bayesian.correlated_t_test(x[both], y[both], rho, chosen.rope)
                    row.update(mean_diff=float(np.mean(x[both] - y[both])), p_better=p[0],
                               p_rope=p[1], p_worse=p[2],
                               decision=bayesian.decision(*p, threshold=chosen.threshold))
                rows.append(row)
    return pd.DataFrame(rows, columns=T_COLUMNS)


def _wide(values, plan, selection):
    """The plan's data sets x algorithms: their values (``values``:
    :func:`comparison.dataset_values` under one rule for failed fits) under ``selection``."""
    if values.empty:
        return pd.DataFrame()
    part = values[(values.selection == selection) & values.family.isin(plan.datasets)]
    wide = part.pivot(index="dataset", columns="algorithm", values="value")
    return wide.loc[part.dataset.unique(), [a for a in plan.algorithms if a in wide.columns]]


def friedman_table(results, plan, prereg):
    """``friedman.csv``: per selection and rule for failed fits, Friedman's and Iman and
    Davenport's tests over the plan's algorithms and their mean ranks (``rank_<algorithm>``;
    1: the best)."""
    if results.families is None or plan is None:
        return pd.DataFrame()
    chosen, primary = settings(prereg), primary_selection(results, prereg)
    rows = []
    for failures in RULES:
        values = dataset_values(results, plan, failures)
        for selection in dict.fromkeys(values.selection) if not values.empty else ():
            wide = _wide(values, plan, selection)
            if wide.shape[0] < 2 or wide.shape[1] < 2:
                continue
            test = ranking.friedman(wide)
            _ranks, mean_ranks = ranking.ranks(wide)
            rows.append({"selection": selection, "failures": failures,
                         "primary": selection == primary and failures == chosen.failures,
                         "n_datasets": wide.shape[0], "k": wide.shape[1],
                         **{key: test[key] for key in ("chi2", "p_chi2", "F", "p_F")},
                         **{f"rank_{a}": float(mean_ranks[a]) for a in wide.columns}})
    return pd.DataFrame(rows)


def cd_pairs_and_figure(results, plan, prereg):
    """``(pairs, figure)`` of the primary selection and rule: :func:`ranking.pairwise` and
    :func:`ranking.cd_diagram` at the pre-registered alpha; ``(empty, None)`` without two
    data sets with a value for every algorithm."""
    chosen, selection = settings(prereg), primary_selection(results, prereg)
    if results.families is None or plan is None:
        return pd.DataFrame(), None
    wide = _wide(dataset_values(results, plan, chosen.failures), plan, selection)
    if wide.shape[0] < 2 or wide.shape[1] < 2:
        return pd.DataFrame(), None
    pairs = ranking.pairwise(wide).assign(selection=selection, failures=chosen.failures)
    figure = ranking.cd_diagram(
        wide, chosen.alpha,
        title=f"Mean ranks over {wide.shape[0]} data sets: s by {selection}, failed fits "
              f"{chosen.failures}")
    return pairs, figure

"""The rules for failed fits and the tests that decide (docs/method/statistics.md): each rule
against loops over the cells written here; the report's Bayesian signed-rank rows against
baycomp on data-set means built by hand, its exact tests against scipy with Holm written out;
Friedman against scipy; the per-data-set correlated t-test against the Student posterior
written here."""

import warnings
from types import SimpleNamespace

import baycomp
import numpy as np
import pandas as pd
import pytest
import scipy.stats
import xarray as xr
from test_preregistration import _holm

from pcskm.experiments.report import decisions, failure_rules, statistics
from pcskm.experiments.spec import Preregistration

ALGORITHMS = ["LKM", "SKM", "PCKM", "MPCKM", "PCSKM"]


# ---------------------------------------------------------------- the rules, cell by cell


def _cells(rng):
    """F per (algorithm, init, kind, percent, run, fold) with failures (NaN where computed)
    and cells not computed, and the masks."""
    coords = {"algorithm": ALGORITHMS, "init": ["dkm++"], "kind": ["random", "must-link"],
              "percent": [1.0, 10.0], "run": [0, 1, 2], "fold": [0, 1]}
    shape = tuple(len(v) for v in coords.values())
    f = rng.uniform(0.4, 0.9, size=shape)
    failed = rng.uniform(size=shape) < 0.2
    failed[0] = False  # LKM never fails here, but one cell below
    failed[0, 0, 1, 1, 2, 1] = True
    f[failed] = np.nan
    computed = np.ones(shape, dtype=bool)
    computed[:, 0, 0, 0, 0, 0] = False  # one cell not computed for anyone
    expected = np.ones(shape, dtype=bool)
    expected[3, 0, 1] = False  # MPCKM not expected with must-link (as not_applicable)
    computed &= expected
    f[~computed] = np.nan
    make = lambda a: xr.DataArray(a, coords=coords, dims=list(coords))  # noqa: E731
    return make(f), make(computed), make(expected)


def _by_loops(f, computed, expected, rule, fill):
    """Each algorithm's mean over (run, fold) per (init, kind, percent), by loops."""
    f, computed, expected = f.values, computed.values, expected.values
    out = np.full(f.shape[:4], np.nan)
    for a, i, k, p in np.ndindex(*f.shape[:4]):
        values = []
        for r, c in np.ndindex(*f.shape[4:]):
            if not computed[a, i, k, p, r, c]:
                continue
            value = f[a, i, k, p, r, c]
            if rule == "itt" and np.isnan(value):
                value = fill if not isinstance(fill, str) else f[ALGORITHMS.index(fill), i, k,
                                                                   p, r, c]
            if rule == "complete-case" and any(
                    expected[b, i, k, p, r, c] and np.isnan(f[b, i, k, p, r, c])
                    for b in range(f.shape[0])):
                continue
            if not np.isnan(value):
                values.append(value)
        if values:
            out[a, i, k, p] = np.mean(values)
    return out


@pytest.mark.parametrize("fill", ["LKM", 0.0, 0.25])
def test_each_rule_is_its_definition_cell_by_cell(fill):
    f, computed, expected = _cells(np.random.default_rng(4))
    values = failure_rules.cell_values(f, computed, expected, fill)
    means = values.mean(("run", "fold")).transpose("failures", *f.dims[:4])
    for rule in failure_rules.RULES:
        np.testing.assert_allclose(means.sel(failures=rule).values,
                                   _by_loops(f, computed, expected, rule, fill), rtol=1e-12)
    # the rules differ on these cells: a failed PCSKM cell counts under itt, not otherwise
    assert not np.allclose(means.sel(failures="itt").values,
                           means.sel(failures="available").values, equal_nan=True)


def test_rule_values_per_selection_and_the_means_over_percentages():
    rng = np.random.default_rng(5)
    f, computed, expected = _cells(rng)
    g = f + 0.01
    selected = xr.Dataset({"cv_f": f, "gap_f": g, "computed": computed,
                           "expected": expected})
    found = failure_rules.rule_values(selected, "LKM")
    assert list(found.selection.values) == ["cv", "gap"]
    for selection, values in (("cv", f), ("gap", g)):
        for rule in failure_rules.RULES:
            np.testing.assert_allclose(
                found.f_rules.sel(selection=selection, failures=rule).transpose(
                    *f.dims[:4]).values,
                _by_loops(values, computed, expected, rule, "LKM"), rtol=1e-12)
        cells = failure_rules.cell_values(values, computed, expected, "LKM")
        with warnings.catch_warnings():  # a (run, fold) whose every percentage is NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            expected_mean = np.nanmean(cells.transpose("failures", *f.dims).values, axis=4)
        np.testing.assert_allclose(
            found.f_run_fold.sel(selection=selection).transpose(
                "failures", "algorithm", "init", "kind", "run", "fold").values,
            expected_mean, rtol=1e-12)


# ---------------------------------------------------------------- the report's decisions

FAMILIES = [f"set{i}" for i in range(8)]
SETTINGS = (("dkm++", "random"), ("dkm++", "must-link"))


def _results(rng, selections=("cv", "gap")):
    """A ``results`` whose case values V per (failures, selection, family, algorithm,
    setting) are drawn at random (constant over two percentages), and per-(run, fold)
    values; every case complete."""
    coords = {"family": FAMILIES, "selection": list(selections), "algorithm": ALGORITHMS,
              "init": ["dkm++"], "kind": ["random", "must-link"], "percent": [1.0, 10.0]}
    shape = tuple(len(v) for v in coords.values())
    rules = list(failure_rules.RULES)
    v = rng.uniform(0.5, 0.9, size=(len(rules), *shape[:-1]))
    v[:, :, :, 4] += rng.uniform(-0.02, 0.1, size=v[:, :, :, 4].shape)  # PCSKM
    f_rules = xr.DataArray(np.repeat(v[..., None], 2, axis=-1),
                           coords={"failures": rules, **coords}, dims=["failures", *coords])
    f_mean = f_rules.sel(failures="available", drop=True)
    data = xr.Dataset({"f_mean": f_mean, "f_rules": f_rules, "complete": f_mean.notnull(),
                       "n_expected": xr.ones_like(f_mean, dtype=int)})
    run_fold = {}
    for family in FAMILIES:
        cells = rng.uniform(0.5, 0.9, size=(len(rules), len(selections), len(ALGORITHMS), 1,
                                            2, 5, 10))
        cells[:, :, 4] += 0.03
        run_fold[family] = xr.DataArray(
            cells, dims=["failures", "selection", "algorithm", "init", "kind", "run", "fold"],
            coords={"failures": rules, "selection": list(selections), "algorithm": ALGORITHMS,
                    "init": ["dkm++"], "kind": ["random", "must-link"]})
    results = SimpleNamespace(families=data, family_labels={f: f for f in FAMILIES},
                              run_fold=run_fold, selections=tuple(selections),
                              store=SimpleNamespace(attrs={"protocol": {"n_folds": 10}}))
    plan = statistics.Plan("PCSKM", tuple(ALGORITHMS[:4]), SETTINGS, tuple(FAMILIES))
    return results, plan, v


def test_bayesian_rows_are_baycomps_test_on_the_data_set_means():
    results, plan, v = _results(np.random.default_rng(8))
    prereg = Preregistration(rule="cv", focus="PCSKM", hypotheses="h", failures="itt",
                             rope=0.02)
    table = decisions.signed_rank_table(results, plan, prereg)
    assert len(table) == 3 * 2 * 4
    assert table.primary.sum() == 4
    assert set(table[table.primary].failures) == {"itt"}
    assert set(table[table.primary].selection) == {"cv"}
    for (rule_i, rule), (sel_i, selection) in [
            (r, s) for r in enumerate(failure_rules.RULES) for s in enumerate(("cv", "gap"))]:
        rows = table[(table.failures == rule) & (table.selection == selection)]
        x = v[rule_i, :, sel_i, 4].mean(axis=(1, 2))  # the mean over the two settings
        p_values = []
        for row in rows.itertuples():
            y = v[rule_i, :, sel_i, ALGORITHMS.index(row.y)].mean(axis=(1, 2))
            assert row.n == len(FAMILIES)
            assert row.mean_diff == pytest.approx(np.mean(x - y), rel=1e-12)
            reference = baycomp.SignedRankTest.probs(x, y, rope=0.02, prior=0.5,
                                                     nsamples=20_000, random_state=1)
            error = 5 * np.sqrt(0.25 / 20_000 + 0.25 / 50_000) + 1e-3
            assert (row.p_better, row.p_rope, row.p_worse) == pytest.approx(reference,
                                                                           abs=error)
            assert row.rope == 0.02 and row.prior == 0.5
            decided = {"better": row.p_better, "worse": row.p_worse,
                       "practically equivalent": row.p_rope}.get(row.decision)
            assert (decided >= 0.95 if decided is not None
                    else max(row.p_better, row.p_rope, row.p_worse) < 0.95)
            p_values.append(scipy.stats.wilcoxon(x, y, method="exact").pvalue)
        np.testing.assert_allclose(rows.p_holm, _holm(np.array(p_values)), rtol=1e-12)


def test_friedman_rows_are_scipys_on_the_data_set_means():
    results, plan, v = _results(np.random.default_rng(9))
    table = decisions.friedman_table(results, plan, None)
    assert len(table) == 3 * 2
    for row in table.itertuples():
        rule_i = failure_rules.RULES.index(row.failures)
        sel_i = ["cv", "gap"].index(row.selection)
        means = v[rule_i, :, sel_i].mean(axis=(2, 3))  # (family, algorithm)
        expected = scipy.stats.friedmanchisquare(*means.T)
        assert (row.n_datasets, row.k) == (len(FAMILIES), len(ALGORITHMS))
        assert row.chi2 == pytest.approx(expected.statistic, rel=1e-12)
        assert row.p_chi2 == pytest.approx(expected.pvalue, rel=1e-9)
        n, k = means.shape
        assert row.F == pytest.approx((n - 1) * row.chi2 / (n * (k - 1) - row.chi2), rel=1e-12)
        ranks = scipy.stats.rankdata(-means, axis=1).mean(axis=0)
        assert [getattr(row, f"rank_{a}") for a in ALGORITHMS] == pytest.approx(ranks)
    # without a preregistration the primary row is cv under the available rule
    assert table[table.primary][["selection", "failures"]].values.tolist() == [
        ["cv", "available"]]


def test_the_per_data_set_t_test_is_the_student_posterior_over_runs_and_folds():
    results, plan, _v = _results(np.random.default_rng(10))
    table = decisions.dataset_t_table(results, plan, None)
    assert len(table) == len(FAMILIES) * 3 * 4
    for row in table.sample(12, random_state=0).itertuples():
        cells = results.run_fold[row.dataset].sel(selection="cv", failures=row.failures)
        x = cells.sel(algorithm="PCSKM").mean("kind").values.ravel()
        y = cells.sel(algorithm=row.y).mean("kind").values.ravel()
        d = x - y
        n = len(d)
        scale = np.sqrt((1 / n + 0.1 / 0.9) * np.var(d, ddof=1))
        below = scipy.stats.t.cdf((-0.01 - d.mean()) / scale, n - 1)
        above = scipy.stats.t.sf((0.01 - d.mean()) / scale, n - 1)
        assert (row.n, row.rho) == (50, 0.1)
        assert (row.p_better, row.p_worse) == pytest.approx((above, below), rel=1e-9)
        assert row.p_rope == pytest.approx(1 - above - below, abs=1e-12)


def test_a_failed_cell_changes_the_itt_values_not_the_available_ones():
    """The pre-registered rule decides which values the primary rows use: with PCSKM's value
    on one data set lowered under itt only, the itt rows move and the others do not."""
    results, plan, v = _results(np.random.default_rng(11))
    before = decisions.signed_rank_table(results, plan, None)
    results.families["f_rules"].loc[{"failures": "itt", "family": "set0",
                                     "algorithm": "PCSKM"}] = 0.1
    after = decisions.signed_rank_table(results, plan, None)
    key = ["failures", "selection", "test"]
    merged = before.merge(after, on=key, suffixes=("_before", "_after"))
    itt = merged.failures == "itt"
    assert (merged[itt].mean_diff_after < merged[itt].mean_diff_before).all()
    assert (merged[~itt].mean_diff_after == merged[~itt].mean_diff_before).all()
    assert isinstance(before, pd.DataFrame)

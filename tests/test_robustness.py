"""The fragility table of the primary tests (experiments/report/robustness.py): its
leave-one-out and leave-two-out counts against a plain loop written here
(itertools.combinations, scipy.stats.wilcoxon, Holm step-down by hand), its sign test against
scipy.stats.binomtest with Holm by hand, and the rule that marks a verdict fragile."""

import itertools
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import xarray as xr

from pcskm.experiments.report import folder_robustness, robustness, statistics

FAMILIES = [f"set{i:02d}" for i in range(14)]
OTHERS = ("LKM", "SKM", "PCKM")
SETTINGS = (("dkm++", "random"), ("dkm++", "must-link"))
ALPHA = 0.05
CONFIRMATORY = Path(__file__).parents[1] / "docs" / "results" / "confirmatory"


def _results(rng, shift=(0.06, 0.04, 0.02), ties=False):
    """Case values V per data set, algorithm and setting (two equal percentages), PCSKM
    ahead of each other algorithm by ``shift`` on average; ``ties``: values rounded to 0.01,
    which ties some |differences|."""
    coords = {"family": FAMILIES, "selection": ["cv"], "algorithm": [*OTHERS, "PCSKM"],
              "init": ["dkm++"], "kind": ["random", "must-link"], "percent": [1.0, 10.0]}
    v = rng.uniform(0.5, 0.9, size=(len(FAMILIES), 1, 4, 1, 2))
    v[:, :, 3] = v[:, :, :3].mean(axis=2) + rng.normal(0.03, 0.05, size=v[:, :, 3].shape)
    for j, s in enumerate(shift):
        v[:, :, j] = v[:, :, 3] - s + rng.normal(0, 0.05, size=v[:, :, j].shape)
    if ties:
        v = np.round(v, 2)
    f_mean = xr.DataArray(np.repeat(v[..., None], 2, axis=-1), coords=coords,
                          dims=list(coords))
    data = xr.Dataset({"f_mean": f_mean, "complete": f_mean.notnull(),
                       "n_expected": xr.ones_like(f_mean, dtype=int)})
    return SimpleNamespace(families=data, family_labels={f: f for f in FAMILIES}), v


def _holm(p):
    """Holm step-down by hand: the i-th smallest p times (m - i), running maximum, at most
    1; NaN left out."""
    adjusted, running = np.full(len(p), np.nan), 0.0
    present = [k for k in np.argsort(p) if not np.isnan(p[k])]
    for i, k in enumerate(present):
        running = max(running, min(1.0, (len(present) - i) * p[k]))
        adjusted[k] = running
    return adjusted


def _verdicts(x, y, keep, alpha=ALPHA):
    """The family's verdicts on the data sets ``keep``, by hand: scipy's exact test per
    algorithm on the data-set means, Holm, the side of the larger rank sum."""
    p, side = [], []
    for j in range(len(OTHERS)):
        d = x[keep] - y[j][keep]
        d = d[d != 0]
        p.append(scipy.stats.wilcoxon(d, method="exact").pvalue if len(d) else np.nan)
        ranks = scipy.stats.rankdata(np.abs(d))
        side.append(np.sign(ranks[d > 0].sum() - ranks[d < 0].sum()))
    holm = _holm(np.array(p))
    return [("no difference" if not holm[j] < alpha else
             "PCSKM better" if side[j] > 0 else "PCSKM worse") for j in range(len(OTHERS))], holm


def _by_hand(v, k):
    """Per test: (largest Holm p, number of changed verdicts, number of subsets) when every
    set of k data sets is left out."""
    x = v[:, 0, 3].mean(axis=-1)
    y = [v[:, 0, j].mean(axis=-1) for j in range(len(OTHERS))]
    everything = np.arange(len(FAMILIES))
    full, _holm_p = _verdicts(x, y, everything)
    flips, largest, count = [0] * len(OTHERS), [0.0] * len(OTHERS), 0
    for out in itertools.combinations(everything, k):
        found, holm = _verdicts(x, y, np.setdiff1d(everything, out))
        count += 1
        for j in range(len(OTHERS)):
            flips[j] += found[j] != full[j]
            largest[j] = max(largest[j], holm[j])
    return largest, flips, count


def _table(results):
    plan = statistics.Plan("PCSKM", OTHERS, SETTINGS, tuple(FAMILIES))
    _tests, cases = statistics.analyses(results, plan)
    return robustness.table(robustness.units(cases, "cv", "dataset"), "cv", "dataset", ALPHA,
                            0.01)


@pytest.mark.parametrize("seed, ties", [(0, False), (5, False), (2, True)])
def test_leave_one_and_two_out_count_what_a_plain_loop_counts(seed, ties):
    results, v = _results(np.random.default_rng(seed), ties=ties)
    table = _table(results)
    assert list(table.comparison) == [f"PCSKM vs {o}" for o in OTHERS]
    changed = 0
    for k, prefix in ((1, "loo"), (2, "lto")):
        largest, flips, count = _by_hand(v, k)
        assert (table[f"{prefix}_subsets"] == count).all()
        assert list(table[f"{prefix}_flips"]) == flips
        np.testing.assert_allclose(table[f"{prefix}_max_holm_p"], largest, rtol=1e-9)
        changed += sum(flips)
    assert (table.lto_method == "exhaustive").all()
    assert changed > 0  # the data are such that some verdict changes: the count is tested


def test_the_sign_test_is_scipys_binomial_test_with_holm():
    results, v = _results(np.random.default_rng(0))
    table = _table(results)
    x = v[:, 0, 3].mean(axis=-1)
    p = []
    for j, row in enumerate(table.itertuples()):
        y = v[:, 0, j].mean(axis=-1)
        wins, losses = int((x > y).sum()), int((x < y).sum())
        assert (row.sign_wins, row.sign_losses) == (wins, losses)
        p.append(scipy.stats.binomtest(wins, wins + losses, 0.5).pvalue)
    np.testing.assert_allclose(table.sign_p, p, rtol=1e-12)
    holm = _holm(np.array(p))
    np.testing.assert_allclose(table.sign_holm_p, holm, rtol=1e-12)
    for row, h in zip(table.itertuples(), holm, strict=True):
        side = "better" if row.sign_wins > row.sign_losses else "worse"
        assert row.sign_verdict == (f"PCSKM {side}" if h < ALPHA else "no difference")


def test_sampled_subsets_beyond_the_limit_are_counted_like_a_loop_over_them(monkeypatch):
    """Beyond MAX_SUBSETS the sets left out are drawn; each draw is k distinct data sets,
    the draws are those of the generator of key (16, k), and the counts are those of a loop
    over them."""
    monkeypatch.setattr(robustness, "MAX_SUBSETS", 40)  # C(14, 2) = 91 > 40 >= 14
    results, v = _results(np.random.default_rng(0))
    table = _table(results)
    assert (table.lto_method == "sampled").all() and (table.lto_subsets == 40).all()
    assert (table.loo_subsets == 14).all()
    kept, method = robustness.subsets(len(FAMILIES), 2)
    assert method == "sampled" and kept.shape == (40, 14) and (kept.sum(axis=1) == 12).all()
    again, _ = robustness.subsets(len(FAMILIES), 2)
    assert (again == kept).all()
    x = v[:, 0, 3].mean(axis=-1)
    y = [v[:, 0, j].mean(axis=-1) for j in range(len(OTHERS))]
    full, _h = _verdicts(x, y, np.arange(14))
    flips = [0] * len(OTHERS)
    for keep in kept:
        found, _h = _verdicts(x, y, np.flatnonzero(keep))
        flips = [f + (a != b) for f, a, b in zip(flips, found, full, strict=True)]
    assert list(table.lto_flips) == flips


@pytest.mark.parametrize("centre", [-0.02, 0.02])
def test_the_vectorised_signed_rank_p_is_scipys(centre):
    rng = np.random.default_rng(7)
    d = rng.normal(centre, 0.05, size=30)
    d[3] = 0.0  # a zero difference: dropped, as the test drops it
    kept, _method = robustness.subsets(30, 2)
    p, sign = robustness.signed_rank(d, kept, "exact")
    for keep, found, s in zip(kept[::37], p[::37], sign[::37], strict=True):
        part = d[keep]
        part = part[part != 0]
        assert found == pytest.approx(scipy.stats.wilcoxon(part, method="exact").pvalue,
                                      rel=1e-9)
        ranks = scipy.stats.rankdata(np.abs(part))
        assert s == np.sign(ranks[part > 0].sum() - ranks[part < 0].sum())


@pytest.mark.parametrize("low, high, expected", [(0.0024, 0.021, True), (0.012, 0.03, False),
                                                 (-0.003, 0.008, False),
                                                 (-0.02, 0.02, True), (-0.03, -0.005, True)])
def test_an_interval_straddles_the_rope_when_a_bound_is_inside_it(low, high, expected):
    assert robustness.straddles(low, high, 0.01) is expected


@pytest.mark.parametrize("loo, lto, subsets, expected", [
    (0, 0, 861, False), (1, 40, 861, True), (0, 43, 861, False), (0, 44, 861, True),
    (0, 271, 861, True), (0, 1, 20, True), (0, 0, 0, False)])
def test_the_fragility_rule(loo, lto, subsets, expected):
    """Fragile: any leave-one-out change, or leave-two-out changes in >= 5 % of subsets
    (of 861: 43 is 4.99 %, 44 is 5.11 %; of 20, 1 is 5 % exactly)."""
    row = {"loo_flips": loo, "loo_subsets": 42, "lto_flips": lto, "lto_subsets": subsets}
    assert robustness.fragile(row) is expected


@pytest.mark.slow
def test_the_committed_standardised_table_is_written_from_the_committed_values(tmp_path):
    """robustness.csv of docs/results/confirmatory/standardised is what the entry point
    writes from the folder's baseline values (which reproduce its preregistered_tests.csv);
    a changed preregistered_tests.csv is refused, naming the column."""
    folder = CONFIRMATORY / "standardised"
    found = folder_robustness.from_folder(folder)
    committed = pd.read_csv(folder / robustness.FILE)
    pd.testing.assert_frame_equal(found.reset_index(drop=True), committed, check_dtype=False,
                                  rtol=1e-9)
    copy = tmp_path / "standardised"
    shutil.copytree(folder, copy)
    tests = pd.read_csv(copy / "preregistered_tests.csv")
    tests.loc[2, "p_value"] *= 1.01
    tests.to_csv(copy / "preregistered_tests.csv", index=False)
    with pytest.raises(ValueError, match="in column 'p_value'"):
        folder_robustness.from_folder(copy)


def test_a_report_without_preregistration_writes_the_table_of_its_primary_tests(
        smoke_report):
    """The smoke study (no [preregistration]): section 10 holds PCSKM against each other
    algorithm under the primary selection, on the values of the report's own
    wilcoxon_datasets.csv, the Holm p and the leave-one-out counted here by hand."""
    _store, report = smoke_report
    table = pd.read_csv(report.parent / robustness.FILE)
    means = pd.read_csv(report.parent / "wilcoxon_datasets.csv")
    selection = "cv" if "cv" in set(means.selection) else "paper"
    means = means[(means.selection == selection) & (means.analysis == 1) & (means.n_used > 0)]
    n = means.family.nunique()
    assert list(table.comparison) == list(means.test.unique())
    assert (table.selection == selection).all() and (table.n_datasets == n).all()
    assert (table.loo_subsets == (n if n > 1 else 0)).all()
    assert (table.lto_subsets == (n * (n - 1) // 2 if n > 2 else 0)).all()
    d = {test: (part.mean_x - part.mean_y).to_numpy() for test, part in
         means.groupby("test", sort=False)}

    def holm_p(keep):
        return _holm(np.array([scipy.stats.wilcoxon(v[keep][v[keep] != 0]).pvalue
                               if (v[keep] != 0).any() else np.nan for v in d.values()]))

    np.testing.assert_allclose(table.holm_p, holm_p(np.arange(n)), rtol=1e-12)
    if n > 1:
        left = np.array([holm_p(np.delete(np.arange(n), i)) for i in range(n)])
        np.testing.assert_allclose(table.loo_max_holm_p, np.nanmax(left, axis=0), rtol=1e-12)
    text = report.read_text()
    assert "## 10. Fragility of the primary tests" in text and "**Fragility**" in text

"""The committed re-analyses of the confirmatory study (experiments/reanalysis.py,
docs/results/confirmatory/{deviations,unseen_sets}.csv) against an independent computation
from the committed per-cell values alone: pandas means of baseline_values.csv.gz, scipy's
exact signed-rank test and a step-down Holm written here; the merging of a pair on a
hand-made Dataset; the ROPE-sensitivity rows at the pre-registered ROPE against the report's
bayesian_tests.csv; the power simulation's observed effects."""

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import xarray as xr

from pcskm.experiments import power, reanalysis

CONFIRMATORY = reanalysis.ROOT / "docs" / "results" / "confirmatory"
OTHERS = ("LKM", "SKM", "PCKM", "MPCKM")


def _holm(p):
    """Holm's adjusted p-values, step-down: the running maximum of (m - i) p_(i), capped
    at 1."""
    order = np.argsort(p)
    adjusted, running = np.empty(len(p)), 0.0
    for i, h in enumerate(order):
        running = max(running, (len(p) - i) * p[h])
        adjusted[h] = min(1.0, running)
    return adjusted


def _dataset_values(protocol):
    """data set x algorithm: the mean over the inits of the mean over the percentages of F
    under intention to treat, with s chosen by cv (the pre-registered value)."""
    cells = pd.read_csv(CONFIRMATORY / protocol / "baseline_values.csv.gz")
    cells = cells[cells.selection == "cv"]
    case = cells.groupby(["dataset", "algorithm", "init"]).f_itt.mean()
    return case.groupby(["dataset", "algorithm"]).mean().unstack("algorithm")


def _units(values, drop, average):
    kept = values.drop(index=[d for d in drop] + [d for pair in average for d in pair])
    merged = [values.loc[list(pair)].mean().rename(" + ".join(pair)) for pair in average]
    return pd.concat([kept, pd.DataFrame(merged)])


def _holm_p(values):
    p = np.array([scipy.stats.wilcoxon(values.PCSKM - values[other], method="exact").pvalue
                  for other in OTHERS])
    return _holm(p)


@pytest.mark.parametrize("protocol", list(reanalysis.PROTOCOLS))
def test_the_committed_variants_are_an_independent_computation(protocol):
    values = _dataset_values(protocol)
    deviations = pd.read_csv(CONFIRMATORY / "deviations.csv")
    unseen = pd.read_csv(CONFIRMATORY / "unseen_sets.csv")
    variants = [(v, drop, average, deviations) for v, _d, drop, average
                in reanalysis.deviation_variants(protocol)]
    variants += [(v, unseen[(unseen.protocol == protocol) & (unseen.variant == v)]
                  .left_out.iloc[0].split(), (), unseen)
                 for v in ("without the 9", "without the 10")]
    assert len(variants) == 8
    for variant, drop, average, table in variants:
        units = _units(values, drop, average)
        rows = table[(table.protocol == protocol) & (table.variant == variant)]
        assert list(rows.n) == [len(units)] * 4, variant
        np.testing.assert_allclose(rows.p_holm, _holm_p(units), rtol=1e-9, err_msg=variant)
        wins = [(units.PCSKM > units[other]).sum() for other in OTHERS]
        assert list(rows.wins) == wins, variant


def test_the_unseen_sets_leave_out_the_extended_studys_real_sets():
    unseen = pd.read_csv(CONFIRMATORY / "unseen_sets.csv")
    extended = pd.read_csv(reanalysis.ROOT / "docs" / "results" / "extended"
                           / "wilcoxon_datasets.csv")
    real = {d for d in extended.dataset.unique()
            if not d.startswith(("brodinova", "Brodinova", "TT-", "digits "))}
    # the extended study's ionosphere is the paper's file, the points of uci-ionosphere
    expected = {reanalysis.name("uci-ionosphere" if d == "ionosphere" else d, "raw")
                for d in real}
    ten = unseen[(unseen.protocol == "raw") & (unseen.variant == "without the 10")]
    assert set(ten.left_out.iloc[0].split()) == expected
    assert ten.n.max() == 42 - len(expected)


def test_a_pair_counts_once_as_the_mean_of_its_two_values():
    values = xr.Dataset(
        {"f_rules": (("family", "x"), [[1.0, 2.0], [3.0, np.nan], [5.0, 6.0]]),
         "complete": (("family", "x"), [[True, True], [True, False], [True, True]]),
         "n_expected": (("family", "x"), [[1, 1], [1, 1], [0, 1]])},
        coords={"family": ["a", "b", "c"], "x": [0, 1]})
    merged = reanalysis.subset(values, drop=["a"], average=[("b", "c")])
    assert list(merged.family.values) == ["b + c"]
    np.testing.assert_array_equal(merged.f_rules.values, [[4.0, np.nan]])
    assert merged.complete.values.tolist() == [[True, False]]
    assert merged.n_expected.values.tolist() == [[0, 1]]


def test_the_pre_registered_rope_gives_the_reports_bayesian_probabilities():
    ropes = pd.read_csv(CONFIRMATORY / "rope_sensitivity.csv")
    for protocol in reanalysis.PROTOCOLS:
        bayes = pd.read_csv(CONFIRMATORY / protocol / "bayesian_tests.csv")
        bayes = bayes[bayes.primary]
        mine = ropes[(ropes.protocol == protocol) & (ropes.rope == 0.01)]
        for column in ("p_better", "p_rope", "p_worse"):
            np.testing.assert_allclose(mine[column], bayes[column], atol=1e-12)
        assert list(mine.bayesian) == list(bayes.decision)


def test_the_pre_registered_verdict():
    row = {"wilcoxon": "no difference", "y": "MPCKM", "p_rope": 0.95}
    assert reanalysis.verdict(row, 0.95) == "practically equivalent"
    assert reanalysis.verdict({**row, "p_rope": 0.9499}, 0.95) == "undecided"
    assert reanalysis.verdict({**row, "wilcoxon": "worse"}, 0.95) == "PCSKM worse than MPCKM"


def test_observed_effects_draw_the_pilot_as_it_is():
    pilot = np.array([[0.0, 1.0], [1.0, 5.0], [2.0, 3.0], [10.0, 4.0]])
    walsh = [sorted((a + b) / 2 for i, a in enumerate(c) for b in c[i:]) for c in pilot.T]
    centres = [(w[4] + w[5]) / 2 for w in walsh]
    np.testing.assert_allclose(power.effects(pilot, power.OBSERVED), centres)
    np.testing.assert_allclose(power.shifted_pilot(pilot, power.OBSERVED), pilot)
    np.testing.assert_allclose(power.shifted_pilot(pilot, [0.0, 1.0]),
                               pilot - np.array(centres) + [0.0, 1.0])
    for bad in ("median", [0.0, 1.0, 2.0], np.nan):
        with pytest.raises(ValueError, match="effect"):
            power.effects(pilot, bad)


def test_the_bayesian_rates_of_the_hypotheses_left_out_are_nan():
    pilot = np.random.default_rng(0).normal(0.5, 1.0, size=(30, 2))
    rates = power.power(pilot, 0.5, 10, rng=np.random.default_rng(1), n_simulations=20,
                        n_posterior=100, bayesian_for=[1])
    assert np.isnan([rates.better[0], rates.equivalent[0], rates.worse[0]]).all()
    assert rates.better[1] + rates.equivalent[1] + rates.worse[1] <= 1
    assert np.isfinite(rates.holm_power).all()

"""The power simulation of experiments/power.py against independent computations: rows drawn
whole from the pilot, rejection rates against a direct simulation from the normal model with
scipy's signed-rank test and a step-down Holm, the size of the test under no effect, Bayesian
verdicts in the cases where they are known, and the sample-size rule on hand-made rates."""

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from pcskm.experiments import power
from pcskm.experiments.report import bayesian


def _normal_pilot(n_rows, n_columns, seed=0):
    """A large pilot from N(0, 1) whose columns have Hodges-Lehmann estimate about 0."""
    return np.random.default_rng(seed).normal(size=(n_rows, n_columns))


def test_simulated_rows_are_whole_pilot_rows_centred_and_shifted():
    pilot = np.array([[0.0, 1.0], [1.0, 5.0], [2.0, 3.0], [10.0, 4.0]])
    # Hodges-Lehmann estimates by hand: the medians of the 10 Walsh averages of each column
    walsh = [sorted((a + b) / 2 for i, a in enumerate(c) for b in c[i:]) for c in pilot.T]
    centres = [(w[4] + w[5]) / 2 for w in walsh]
    expected = pilot - np.array(centres) + 0.25
    rows = power.simulated_differences(pilot, 0.25, 50, rng=np.random.default_rng(3))
    assert rows.shape == (50, 2)
    for row in rows:
        assert any(np.allclose(row, candidate) for candidate in expected)
    drawn = {tuple(np.round(row, 12)) for row in rows}
    assert len(drawn) == 4  # 50 draws with replacement reach every row


def _holm_step_down(p, alpha):
    """Holm (1979) as a step-down procedure: reject the hypotheses in order of their p-values
    while the i-th smallest (from 0) is at most alpha / (m - i). (statsmodels' multipletests
    would do, but it runs gc.collect on every call: 45 s of this test's 300 simulations.)"""
    rejected = np.zeros(len(p), dtype=bool)
    for i, h in enumerate(np.argsort(p)):
        if p[h] > alpha / (len(p) - i):
            break
        rejected[h] = True
    return rejected


def test_rejection_rates_match_a_direct_simulation_of_the_normal_model():
    pilot = _normal_pilot(2000, 3)
    n_datasets, effect, n_simulations = 15, 0.6, 300
    rates = power.power(pilot, effect, n_datasets, rng=np.random.default_rng(1),
                        n_simulations=n_simulations, n_posterior=200)
    rng = np.random.default_rng(2)
    holm, unadjusted = np.zeros(3), np.zeros(3)
    for _ in range(n_simulations):
        d = rng.normal(effect, 1.0, size=(n_datasets, 3))
        p = np.array([scipy.stats.wilcoxon(d[:, h]).pvalue for h in range(3)])
        positive = np.array([np.median(d[:, h]) > 0 for h in range(3)])
        unadjusted += (p < 0.05) & positive
        holm += _holm_step_down(p, 0.05) & positive
    standard_error = np.sqrt(0.25 / n_simulations)
    tolerance = 4 * np.sqrt(2) * standard_error
    assert np.all(np.abs(rates.unadjusted_power - unadjusted / n_simulations) < tolerance)
    assert np.all(np.abs(rates.holm_power - holm / n_simulations) < tolerance)
    assert np.all(rates.holm_power <= rates.unadjusted_power)


def test_with_no_effect_the_signed_rank_test_rejects_at_about_its_level():
    pilot = _normal_pilot(2000, 1, seed=5)
    rates = power.power(pilot, 0.0, 20, rng=np.random.default_rng(4), n_simulations=1000,
                        n_posterior=200)
    # one side of a two-sided 5 % test: 2.5 %, 4 standard errors of 1000 simulations
    assert abs(rates.unadjusted_power[0] - 0.025) < 4 * np.sqrt(0.025 * 0.975 / 1000)


def test_bayesian_verdicts_where_they_are_known():
    # every difference far above the ROPE: "better" in every simulated study
    big = power.power(np.full((10, 1), 0.0) + np.arange(10)[:, None] * 1e-3, 0.2, 10,
                      rng=np.random.default_rng(6), n_simulations=20, n_posterior=500)
    assert big.better[0] == 1 and big.equivalent[0] == 0 and big.worse[0] == 0
    # every difference deep inside the ROPE (|d| <= 0.001 < 0.01): "practically equivalent"
    tiny = power.power(np.linspace(-1e-3, 1e-3, 12)[:, None], 0.0, 30,
                       rng=np.random.default_rng(7), n_simulations=20, n_posterior=500)
    assert tiny.equivalent[0] == 1 and tiny.better[0] == 0
    # far below: "worse", and the signed-rank power counts only rejections in the effect's way
    low = power.power(np.arange(10)[:, None] * 1e-3, -0.2, 10,
                      rng=np.random.default_rng(8), n_simulations=20, n_posterior=500)
    assert low.worse[0] == 1 and low.holm_power[0] == 1
    total = big.better + big.equivalent + big.worse
    assert np.all(total <= 1)


def test_the_same_seed_gives_the_same_rates():
    pilot = _normal_pilot(50, 2)
    first = power.power(pilot, 0.3, 12, rng=np.random.default_rng(9), n_simulations=30,
                        n_posterior=100)
    second = power.power(pilot, 0.3, 12, rng=np.random.default_rng(9), n_simulations=30,
                         n_posterior=100)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


def _rates(n, holm):
    zeros = np.zeros(len(holm))
    return power.Power(n, 0.02, np.asarray(holm), zeros, zeros, zeros, zeros)


def test_required_datasets_is_the_first_n_from_which_every_hypothesis_keeps_the_target():
    grid = [_rates(20, [0.5, 0.9]), _rates(40, [0.81, 0.95]), _rates(30, [0.85, 0.7]),
            _rates(50, [0.79, 0.99]), _rates(60, [0.9, 1.0]), _rates(80, [0.97, 1.0])]
    # 40 passes but 50 does not: only from 60 on does every larger n keep 0.8
    assert power.required_datasets(grid) == 60
    assert power.required_datasets(grid, target=0.5) == 20
    assert power.required_datasets(grid[:4], target=0.8) is None


def test_pilot_differences_reads_one_column_per_test_in_the_tables_order():
    table = pd.DataFrame({
        "selection": ["cv", "cv", "cv", "cv", "gap", "cv"],
        "analysis": [1, 1, 1, 1, 1, 2],
        "test": ["A vs B", "A vs C", "A vs B", "A vs C", "A vs B", "A vs B"],
        "dataset": ["wine", "wine", "iris", "iris", "wine", "wine"],
        "mean_diff": [0.1, 0.2, 0.3, 0.4, 9.0, 9.0],
    })
    np.testing.assert_array_equal(power.pilot_differences(table, "cv", ["A vs C", "A vs B"]),
                                  [[0.2, 0.1], [0.4, 0.3]])
    with pytest.raises(ValueError, match=r"no rows for \['A vs D'\]"):
        power.pilot_differences(table, "cv", ["A vs D"])
    with pytest.raises(ValueError, match="same data sets"):
        power.pilot_differences(table.iloc[1:], "cv", ["A vs B", "A vs C"])


@pytest.mark.parametrize("pilot, message", [
    (np.zeros((1, 2)), "at least 2 data sets"),
    (np.array([[0.0], [np.nan]]), "finite"),
])
def test_a_bad_pilot_is_refused(pilot, message):
    with pytest.raises(ValueError, match=message):
        power.power(pilot, 0.02, 10, rng=np.random.default_rng(0), n_simulations=1)


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match="n_datasets must be a positive integer"):
        power.simulated_differences(np.zeros((3, 1)), 0.0, 0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_simulations must be a positive integer"):
        power.power(np.zeros((3, 1)), 0.0, 5, rng=np.random.default_rng(0), n_simulations=0)


def test_the_bayesian_rates_use_the_reports_test():
    # one simulated study by hand: the same draws give the verdict of bayesian.signed_rank_test
    pilot = np.array([[0.01], [0.03], [-0.02], [0.05], [0.0], [0.02]])
    rng = np.random.default_rng(11)
    rates = power.power(pilot, 0.02, 8, rng=rng, n_simulations=1, n_posterior=300)
    replay = np.random.default_rng(11)
    d = power.simulated_differences(pilot, 0.02, 8, rng=replay)
    verdict = bayesian.decision(*bayesian.signed_rank_test(d[:, 0], np.zeros(8), n_samples=300,
                                                          rng=replay))
    observed = {"better": rates.better[0], "practically equivalent": rates.equivalent[0],
                "worse": rates.worse[0]}
    assert observed.get(verdict, 0.0) == 1.0 or (verdict == "undecided"
                                                  and sum(observed.values()) == 0)

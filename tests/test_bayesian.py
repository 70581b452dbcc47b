"""Issue 44: the Bayesian signed-rank test and correlated t-test with a ROPE
(experiments/report/bayesian.py) against baycomp, a published example, a direct loop,
closed-form probabilities of small cases and a hand computation of the t posterior."""

import itertools

import baycomp
import numpy as np
import pytest

from pcskm.experiments.report import bayesian

# baycomp's documentation example (docs/functions.rst, "Multiple data sets",
# https://github.com/janezd/baycomp): the mean accuracies (%) of naive Bayes and J48 over 54
# data sets (the means of the 100 scores per data set in docs/code/accuracies.txt), and the
# published ``two_on_multiple(nbc, j48, rope=1)`` = (0.23014, 0.00674, 0.76312) from 50 000
# draws with baycomp's prior 0.5.
NBC = [95.94595, 71.39521, 83.3377, 49.98591, 76.16673, 86.21744, 86.21744, 81.87252, 52.8114,
       75.04, 71.93504, 50.12499, 72.03123, 60.0, 83.6875, 84.36091, 98.31118, 89.40237,
       93.33322, 87.79086, 87.59993, 56.84723, 85.09998, 62.66532, 74.63639, 96.38929, 95.76072,
       90.29939, 92.16903, 93.37478, 80.41671, 87.72004, 75.26002, 68.11142, 47.19786, 91.14715,
       85.59372, 86.62217, 93.81435, 76.71185, 92.19582, 89.82622, 79.21932, 95.41686, 59.03334,
       62.06667, 46.32085, 58.78783, 79.968, 64.92861, 98.70582, 97.19638, 57.61428, 93.98181]
J48 = [98.64226, 77.2214, 77.1957, 49.49834, 83.50006, 86.28991, 86.28991, 80.21214, 64.20668,
       72.17, 72.31167, 39.66248, 71.50976, 60.0, 78.57087, 80.51726, 99.18611, 90.11586,
       93.59991, 99.43702, 85.79996, 56.84723, 76.37137, 64.09357, 97.80228, 98.91727, 100.0,
       97.18137, 78.59252, 96.60513, 73.16674, 88.61625, 74.32345, 69.77806, 41.00794, 94.14284,
       88.9546, 89.9792, 97.841, 74.67613, 92.63445, 92.85163, 81.05974, 94.16605, 63.5,
       77.66667, 46.78335, 76.53533, 74.872, 60.95248, 90.72864, 95.03683, 57.0753, 92.60908]
PUBLISHED = (0.23014, 0.00674, 0.76312)


def rng(seed=0):
    return np.random.default_rng(seed)


def monte_carlo_tolerance(p, n1, n2, k=5):
    """k standard errors of the difference of two independent Monte Carlo estimates of p from
    n1 and n2 draws (each a fraction of draws), plus two draws' worth for p near 0 or 1."""
    p = np.asarray(p)
    return k * np.sqrt(p * (1 - p) * (1 / n1 + 1 / n2)) + 2 / min(n1, n2)


def paired(seed, n, shift, spread, ties=False, zeros=0):
    """Scores x, y over n data sets with d = x - y ~ shift + spread * N(0, 1); ``ties`` rounds
    d to a grid of 0.005 (repeated values and Walsh averages on the ROPE's edge), ``zeros``
    sets that many differences to exactly 0."""
    g = rng(seed)
    y = g.uniform(0.4, 0.9, n)
    d = shift + spread * g.standard_normal(n)
    if ties:
        d = np.round(d / 0.005) * 0.005
    d[:zeros] = 0.0
    return y + d, y


# ---------------------------------------------------------------- independent computations


def loop_posterior(d, rope, prior, n_samples, seed):
    """The signed-rank posterior draws by a direct loop over the pairs (i, j) of z = (0, d),
    with the same Dirichlet weights (one block from the same seed)."""
    z = np.concatenate(([0.0], d))
    weights = rng(seed).dirichlet(np.concatenate(([prior], np.ones(len(d)))), size=n_samples)
    theta = np.zeros((n_samples, 3))
    for k, w in enumerate(weights):
        for i, j in itertools.product(range(len(z)), repeat=2):
            s = z[i] + z[j]
            for column, above in ((0, s > 2 * rope), (2, -s > 2 * rope)):
                edge = s == 2 * rope if column == 0 else -s == 2 * rope
                theta[k, column] += w[i] * w[j] * (1.0 if above else 0.5 if edge else 0.0)
    theta[:, 1] = 1 - theta[:, 0] - theta[:, 2]
    return theta


def exact_theta_mean(d, rope, prior):
    """E[theta_better], E[theta_worse] under w ~ Dir(alpha): E[w_i w_j] = alpha_i alpha_j /
    (a (a + 1)) for i != j and alpha_i (alpha_i + 1) / (a (a + 1)) for i = j, a = sum alpha."""
    z = np.concatenate(([0.0], d))
    alpha = np.concatenate(([prior], np.ones(len(d))))
    a = alpha.sum()
    moments = (np.outer(alpha, alpha) + np.diag(alpha)) / (a * (a + 1))
    sums = z[:, None] + z[None, :]
    h = lambda v: (v > 0) + 0.5 * (v == 0)  # noqa: E731
    return (moments * h(sums - 2 * rope)).sum(), (moments * h(-sums - 2 * rope)).sum()


def student_t4_cdf(t):
    """Student's t CDF with 4 degrees of freedom in closed form: with u = t / sqrt(4 + t^2),
    F(t) = 1/2 + (3/4) u (1 - u^2 / 3)."""
    u = t / np.sqrt(4 + t * t)
    return 0.5 + 0.75 * u * (1 - u * u / 3)


# ---------------------------------------------------------------- the signed-rank test

CASES = {  # their P(x better), P(rope), P(y better) are about
    "clear win": paired(1, 20, 0.02, 0.02),  # 0.995, 0.005, 0
    "clear loss": paired(2, 20, -0.02, 0.02),  # 0, 0.06, 0.94
    "equivalence": paired(3, 25, 0.0, 0.015),  # 0.01, 0.99, 0.003
    "mixed": paired(4, 20, 0.008, 0.02),  # 0.16, 0.83, 0.01
    "exact zeros": paired(5, 20, 0.03, 0.02, zeros=6),  # 0.66, 0.34, 0
    "ties": paired(6, 20, 0.008, 0.02, ties=True),  # 0.44, 0.56, 0.001
}


@pytest.mark.parametrize("case", list(CASES))
def test_signed_rank_agrees_with_baycomp(case):
    x, y = CASES[case]
    n_ours, n_theirs = 50_000, 20_000
    ours = bayesian.signed_rank_test(x, y, rope=0.01, prior=0.5, n_samples=n_ours, rng=rng(7))
    theirs = baycomp.SignedRankTest.probs(x, y, rope=0.01, prior=0.5, nsamples=n_theirs,
                                          random_state=7)
    p = (np.array(ours) + np.array(theirs)) / 2
    assert np.all(np.abs(np.subtract(ours, theirs)) <= monte_carlo_tolerance(p, n_ours, n_theirs))
    assert sum(ours) == pytest.approx(1)


@pytest.mark.parametrize("d, rope", [([0.03, 0.05, -0.01], 0.01), ([0.002], 0.01),
                                     ([0.0, 0.0], 0.0)])
def test_signed_rank_shares_are_the_mean_over_draws_of_their_largest_share(d, rope):
    """Each draw gives 1/m to each of its m largest thetas; the shares are the plain mean of
    that over the draws, bit for bit: with no ties, with two thetas equal but below the third
    (d inside the ROPE: theta_better = theta_worse = 0) and with the two largest tied in every
    draw (d = 0 and no ROPE: theta_better = theta_worse = 1/2)."""
    x = np.array(d)
    shares = bayesian.signed_rank_test(x, np.zeros_like(x), rope, n_samples=20_000, rng=rng(5))
    theta = bayesian.signed_rank_posterior(x, rope, n_samples=20_000, rng=rng(5))
    expected = np.zeros(3)
    for draw in theta:
        largest = np.flatnonzero(draw == max(draw))
        expected[largest] += 1 / len(largest)
    assert shares == tuple(expected / len(theta))


def test_signed_rank_orientation():
    """x better by a wide margin: P(x better) = 1 (the first of the triple), and swapping x
    and y mirrors the triple."""
    x, y = paired(1, 20, 0.05, 0.02)
    assert bayesian.signed_rank_test(x, y, rng=rng()) == (1.0, 0.0, 0.0)
    assert bayesian.signed_rank_test(y, x, rng=rng()) == (0.0, 0.0, 1.0)


def test_signed_rank_reproduces_the_published_example():
    ours = bayesian.signed_rank_test(NBC, J48, rope=1, prior=0.5, n_samples=50_000, rng=rng(3))
    tolerance = monte_carlo_tolerance(np.array(PUBLISHED), 50_000, 50_000)
    assert np.all(np.abs(np.subtract(ours, PUBLISHED)) <= tolerance)


@pytest.mark.parametrize("d, rope", [([0.02, -0.005, 0.011], 0.01), ([0.25, -0.25, 0.0], 0.25),
                                     ([0.3, 0.1, -0.2, 0.1], 0.1)])
def test_signed_rank_posterior_equals_a_direct_loop(d, rope, monkeypatch):
    """Also across chunks: 3 draws at a time."""
    monkeypatch.setattr(bayesian, "_CHUNK_ELEMENTS", 3 * (len(d) + 1))
    ours = bayesian.signed_rank_posterior(np.array(d), rope, 0.5, 200, rng=rng(11))
    np.testing.assert_allclose(ours, loop_posterior(np.array(d), rope, 0.5, 200, 11),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("prior", [0.5, 2.0])
def test_signed_rank_posterior_mean_is_the_exact_expectation(prior):
    d = np.array([0.03, -0.02, 0.005, 0.015, -0.004, 0.02])
    theta = bayesian.signed_rank_posterior(d, 0.01, prior, 50_000, rng=rng(5))
    exact = exact_theta_mean(d, 0.01, prior)
    for column, expected in zip((0, 2), exact, strict=True):
        standard_error = theta[:, column].std() / np.sqrt(len(theta))
        assert abs(theta[:, column].mean() - expected) <= 5 * standard_error


@pytest.mark.parametrize("d, expected_better", [
    # sums 0 (rope), 0.5, 0.5, 1: theta_better = 1 - w0^2 wins when w0 < 1/sqrt(2),
    # w0 ~ Beta(1/2, 1): P = (1/sqrt(2))^(1/2)
    (0.5, 2 ** -0.25),
    # sums 0, 0.015, 0.015 (rope), 0.03: theta_better = w1^2 wins when w1 > 1/sqrt(2),
    # w1 ~ Beta(1, 1/2): P = (1 - 1/sqrt(2))^(1/2)
    (0.015, np.sqrt(1 - 2 ** -0.5)),
])
def test_signed_rank_one_data_set_in_closed_form(d, expected_better):
    n = 50_000
    p_better, p_rope, p_worse = bayesian.signed_rank_test([d], [0.0], rope=0.01, prior=0.5,
                                                          n_samples=n, rng=rng(9))
    assert abs(p_better - expected_better) <= 5 * np.sqrt(expected_better
                                                          * (1 - expected_better) / n)
    assert p_worse == 0.0
    assert p_rope == pytest.approx(1 - p_better)


def test_signed_rank_walsh_average_on_the_rope_edge_counts_half():
    """d = r: the sum 2d = 2r counts 1/2 above, so theta_better = w1^2 / 2 < theta_rope."""
    assert bayesian.signed_rank_test([0.25], [0.0], rope=0.25, rng=rng()) == (0.0, 1.0, 0.0)


def test_signed_rank_all_zero_differences_are_equivalent():
    x = np.linspace(0.5, 0.9, 10)
    assert bayesian.signed_rank_test(x, x, rng=rng()) == (0.0, 1.0, 0.0)
    # no ROPE: every sum is 0, theta_better = theta_worse = 1/2 in every draw, a tie shared
    assert bayesian.signed_rank_test(x, x, rope=0, rng=rng()) == (0.5, 0.0, 0.5)


def test_signed_rank_is_deterministic_given_the_seed():
    x, y = CASES["mixed"]
    first = bayesian.signed_rank_test(x, y, n_samples=5_000, rng=rng(42))
    assert bayesian.signed_rank_test(x, y, n_samples=5_000, rng=rng(42)) == first
    assert bayesian.signed_rank_test(x, y, n_samples=5_000, rng=rng(43)) != first


def test_signed_rank_default_sample_size_keeps_the_standard_error_small():
    assert 0.5 / np.sqrt(bayesian.N_SAMPLES) < 0.003


# ---------------------------------------------------------------- the correlated t-test


@pytest.mark.parametrize("shift, rope", [(0.012, 0.01), (-0.02, 0.01), (0.001, 0.01),
                                         (0.004, 0.0)])
def test_correlated_t_test_agrees_with_baycomp(shift, rope):
    """25 runs x 10 folds: rho = 1/10, baycomp's 1 / (n_folds - 1) = rho / (1 - rho); its
    triple is (x better, rope, y better) like ours (it works on y - x)."""
    g = rng(21)
    y = g.uniform(0.5, 0.8, 250)
    x = y + shift + 0.03 * g.standard_normal(250)
    ours = bayesian.correlated_t_test(x, y, rho=0.1, rope=rope)
    if rope > 0:
        theirs = baycomp.CorrelatedTTest.probs(x, y, rope=rope, runs=25)
    else:
        left, right = baycomp.CorrelatedTTest.probs(x, y, runs=25)
        theirs = (left, 0.0, right)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)


def test_correlated_t_test_by_hand():
    """d = (0.02, 0, 0.01, 0.03, -0.01), rho = 0.2: mean 0.01, variance 0.001 / 4, scale^2 =
    (1/5 + 0.2/0.8) * 0.00025 = 1.125e-4, 4 degrees of freedom. The mean sits on the ROPE's
    upper edge, so P(x better) = 1/2; P(y better) = F4((-0.01 - 0.01) / scale)."""
    d = np.array([0.02, 0.0, 0.01, 0.03, -0.01])
    p_better, p_rope, p_worse = bayesian.correlated_t_test(d, np.zeros(5), rho=0.2, rope=0.01)
    worse = student_t4_cdf(-0.02 / np.sqrt(1.125e-4))
    assert p_better == pytest.approx(0.5, abs=1e-12)
    assert p_worse == pytest.approx(worse, abs=1e-12)
    assert p_rope == pytest.approx(0.5 - worse, abs=1e-12)


@pytest.mark.parametrize("value, expected", [(0.02, (1.0, 0.0, 0.0)), (0.005, (0.0, 1.0, 0.0)),
                                             (-0.03, (0.0, 0.0, 1.0)), (0.01, (0.0, 1.0, 0.0)),
                                             (-0.01, (0.0, 1.0, 0.0))])
def test_correlated_t_test_zero_variance_puts_the_mass_at_the_mean(value, expected):
    """Exactly, the ROPE closed. baycomp agrees to 1e-12 off the ROPE's edges (for 0.005 its
    variance of 20 equal values is a rounding error above 0, a Student t of scale ~1e-18); on
    an edge its rounded mean and variance give 0.987 to the side of the rounding."""
    d = np.full(20, value)
    assert bayesian.correlated_t_test(d, np.zeros(20), rho=0.1) == expected
    if abs(value) != 0.01:
        theirs = baycomp.CorrelatedTTest.probs(d, np.zeros(20), rope=0.01, runs=2)
        np.testing.assert_allclose(theirs, expected, rtol=0, atol=1e-12)


def test_correlated_t_test_tends_to_the_degenerate_posterior():
    """A vanishing spread around 0.02 > r: P(x better) -> 1."""
    d = 0.02 + 1e-9 * rng(1).standard_normal(20)
    assert bayesian.correlated_t_test(d, np.zeros(20), rho=0.1)[0] == pytest.approx(1)


# ---------------------------------------------------------------- the decision rule


@pytest.mark.parametrize("probabilities, threshold, verdict", [
    ((0.96, 0.04, 0.0), 0.95, "better"),
    ((0.95, 0.05, 0.0), 0.95, "better"),
    ((0.01, 0.02, 0.97), 0.95, "worse"),
    ((0.02, 0.98, 0.0), 0.95, "practically equivalent"),
    ((0.5, 0.45, 0.05), 0.95, "undecided"),
    ((0.94, 0.06, 0.0), 0.95, "undecided"),
    ((0.94, 0.06, 0.0), 0.9, "better"),
    ((0.999, 0.001, 0.0), 1.0, "undecided"),
    ((0.0, 1.0, 0.0), 1.0, "practically equivalent"),
])
def test_decision(probabilities, threshold, verdict):
    assert bayesian.decision(*probabilities, threshold=threshold) == verdict
    assert verdict in bayesian.VERDICTS


def test_decision_on_the_tests_outputs():
    x, y = CASES["clear win"]
    assert bayesian.decision(*bayesian.signed_rank_test(x, y, rng=rng())) == "better"
    assert bayesian.decision(*bayesian.signed_rank_test(y, x, rng=rng())) == "worse"
    x, y = CASES["equivalence"]
    assert bayesian.decision(*bayesian.signed_rank_test(x, y, rng=rng())) \
        == "practically equivalent"
    d = 0.02 + 0.01 * rng(2).standard_normal(250)
    assert bayesian.decision(*bayesian.correlated_t_test(d, np.zeros(250), rho=0.1)) == "better"
    assert bayesian.decision(*bayesian.correlated_t_test(d, np.zeros(250), rho=0.1, rope=0)) \
        == "better"
    assert bayesian.decision(*bayesian.correlated_t_test(d - 0.02, np.zeros(250), rho=0.1,
                                                         rope=0)) == "undecided"


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("x, y, message", [
    ([0.1, 0.2, 0.3], [0.1, 0.2], "same length"),
    ([[0.1, 0.2]], [[0.1, 0.2]], "1-d"),
    ([], [], "non-empty"),
    ([0.1, np.nan], [0.1, 0.2], "finite"),
    ([0.1, 0.2], [0.1, np.inf], "finite"),
])
def test_bad_vectors(x, y, message):
    with pytest.raises(ValueError, match=message):
        bayesian.signed_rank_test(x, y, rng=rng())
    with pytest.raises(ValueError, match=message):
        bayesian.correlated_t_test(x, y, rho=0.1)


@pytest.mark.parametrize("rope", [-0.01, np.nan, np.inf])
def test_bad_rope(rope):
    with pytest.raises(ValueError, match="rope"):
        bayesian.signed_rank_test([0.1, 0.2], [0.2, 0.1], rope=rope, rng=rng())
    with pytest.raises(ValueError, match="rope"):
        bayesian.correlated_t_test([0.1, 0.2], [0.2, 0.1], rho=0.1, rope=rope)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"prior": 0}, ValueError, "prior"),
    ({"prior": np.nan}, ValueError, "prior"),
    ({"n_samples": 0}, ValueError, "n_samples"),
    ({"n_samples": 10.0}, ValueError, "n_samples"),
    ({"n_samples": True}, ValueError, "n_samples"),
    ({"rng": 0}, TypeError, "Generator"),
])
def test_bad_signed_rank_arguments(kwargs, error, message):
    kwargs = {"rng": rng()} | kwargs
    with pytest.raises(error, match=message):
        bayesian.signed_rank_test([0.1, 0.2], [0.2, 0.1], **kwargs)
    with pytest.raises(error, match=message):
        bayesian.signed_rank_posterior(np.array([0.1, -0.1]), **kwargs)


@pytest.mark.parametrize("d, rope, message", [([0.1, np.nan], 0.01, "finite"),
                                              ([], 0.01, "non-empty"), ([0.1], -1, "rope")])
def test_bad_signed_rank_posterior_input(d, rope, message):
    with pytest.raises(ValueError, match=message):
        bayesian.signed_rank_posterior(d, rope, rng=rng())


def test_correlated_t_test_needs_two_differences_and_a_correlation_below_one():
    with pytest.raises(ValueError, match="at least 2"):
        bayesian.correlated_t_test([0.1], [0.2], rho=0.1)
    for rho in (-0.1, 1.0, np.nan):
        with pytest.raises(ValueError, match="rho"):
            bayesian.correlated_t_test([0.1, 0.3], [0.2, 0.2], rho=rho)


@pytest.mark.parametrize("threshold", [0.5, 0.3, 1.01, np.nan])
def test_bad_threshold(threshold):
    with pytest.raises(ValueError, match="threshold"):
        bayesian.decision(0.9, 0.1, 0.0, threshold=threshold)


@pytest.mark.parametrize("probabilities", [(0.9, 0.2, 0.0), (1.2, -0.2, 0.0),
                                           (np.nan, 0.5, 0.5)])
def test_bad_probabilities(probabilities):
    with pytest.raises(ValueError, match="probabilities"):
        bayesian.decision(*probabilities)

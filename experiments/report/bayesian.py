"""Bayesian comparisons of two algorithms with a region of practical equivalence (ROPE)
[-r, r], on plain vectors of paired scores x, y (differences d = x - y; positive d favours x).
Each test returns the probabilities (P(x better), P(rope), P(y better)), the triple that
``decision`` turns into a verdict; docs/method/statistics.md gives the equations.

* ``signed_rank_test``: the Bayesian signed-rank test over data sets (Benavoli, Corani,
  Demšar & Zaffalon 2017, JMLR 18(77)), the estimator of baycomp's ``SignedRankTest``.
* ``correlated_t_test``: the Bayesian correlated t-test on the runs x folds of one data set
  (Corani & Benavoli 2015, Machine Learning 100), in closed form.
* ``decision``: the verdict from the three probabilities and a threshold.
"""

import numbers

import numpy as np
import scipy.stats

ROPE = 0.01  # half-width, in mean pairwise F-measure (Benavoli et al. use 0.01 for accuracy)
PRIOR_STRENGTH = 0.5  # s of the Dirichlet process, its pseudo-observation at 0 (paper, baycomp)
THRESHOLD = 0.95
N_SAMPLES = 50_000  # Monte Carlo standard error <= 0.5 / sqrt(50 000) = 0.0022 per probability
_CHUNK_ELEMENTS = 2**20  # Dirichlet weights drawn at a time: 8 MB of float64
VERDICTS = ("better", "worse", "practically equivalent", "undecided")


def _vector(v, name):
    """``v`` as a finite, non-empty 1-d float64 array."""
    v = np.asarray(v, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d vector; got shape {v.shape}")
    if not np.isfinite(v).all():
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return v


def _differences(x, y):
    """d = x - y for two finite 1-d vectors of the same length."""
    if np.shape(x) != np.shape(y):
        raise ValueError(f"x and y must be 1-d vectors of the same length; got shapes "
                         f"{np.shape(x)} and {np.shape(y)}")
    return _vector(x, "x") - _vector(y, "y")


def _check_rope(rope):
    if not (np.isfinite(rope) and rope >= 0):
        raise ValueError(f"rope must be a finite half-width >= 0; got {rope!r}")


def _heaviside(a):
    """H(a) = 1 if a > 0, 1/2 if a = 0, 0 if a < 0."""
    return (a > 0) + 0.5 * (a == 0)


def signed_rank_posterior(d, rope=ROPE, prior=PRIOR_STRENGTH, n_samples=N_SAMPLES, *, rng):
    """Draws of (theta_better, theta_rope, theta_worse), an (n_samples, 3) array, from the
    posterior of the Bayesian signed-rank test (Benavoli et al. 2017).

    The differences z_1..z_n and a pseudo-observation z_0 = 0 get Dirichlet weights
    w ~ Dir(s, 1, ..., 1) (s = ``prior``); with H(a) = 1 if a > 0, 1/2 if a = 0, else 0,

        theta_better = sum_{i,j=0..n} w_i w_j H(z_i + z_j - 2r),
        theta_worse  = sum_{i,j=0..n} w_i w_j H(-z_i - z_j - 2r),
        theta_rope   = 1 - theta_better - theta_worse,

    the posterior probabilities that a Walsh average (z_i + z_j) / 2 lies above, within or
    below the ROPE. The double sums are the quadratic forms w' A w, evaluated for a chunk of
    draws at a time (memory O(n^2 + chunk x n)).
    """
    d = _vector(d, "d")
    _check_rope(rope)
    if not (np.isfinite(prior) and prior > 0):
        raise ValueError(f"prior (the Dirichlet process strength) must be > 0; got {prior!r}")
    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral) \
            or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer; got {n_samples!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator; got {type(rng).__name__}")
    z = np.concatenate(([0.0], d))
    sums = z[:, None] + z[None, :]
    above, below = _heaviside(sums - 2 * rope), _heaviside(-sums - 2 * rope)
    alpha = np.concatenate(([prior], np.ones(len(d))))
    theta = np.empty((n_samples, 3))
    chunk = max(1, _CHUNK_ELEMENTS // len(z))
    for start in range(0, n_samples, chunk):
        w = rng.dirichlet(alpha, size=min(chunk, n_samples - start))
        rows = slice(start, start + len(w))
        theta[rows, 0] = np.einsum("ki,ki->k", w @ above, w)
        theta[rows, 2] = np.einsum("ki,ki->k", w @ below, w)
    theta[:, 1] = 1 - theta[:, 0] - theta[:, 2]
    return theta


def signed_rank_test(x, y, rope=ROPE, prior=PRIOR_STRENGTH, n_samples=N_SAMPLES, *, rng):
    """(P(x better), P(rope), P(y better)) of the Bayesian signed-rank test on paired scores
    over data sets (Benavoli et al. 2017): the fractions of posterior draws of
    ``signed_rank_posterior`` in which theta_better, theta_rope or theta_worse is the largest
    (the three areas of the paper's simplex plots), as in baycomp's ``SignedRankTest.probs``.
    A draw where several are largest counts equally for each (baycomp gives it to the first).
    """
    theta = signed_rank_posterior(_differences(x, y), rope, prior, n_samples, rng=rng)
    return tuple(float(p) for p in _largest_shares(theta))


def _largest_shares(theta):
    """Per column of the (n, 3) draws ``theta``, the mean over the draws of 1/m where the
    column is one of the m largest of the draw, else 0. When every draw has one largest
    column, that is the count of the draws where it is largest over n: the same float, the
    mean of zeros and ones being their exact sum over n."""
    columns = theta.T
    top = np.maximum(np.maximum(columns[0], columns[1]), columns[2])
    at_top = [column == top for column in columns]
    if (sum(largest.view(np.int8) for largest in at_top) > 1).any():
        largest = np.stack(at_top, axis=1)
        return (largest / largest.sum(axis=1, keepdims=True)).mean(axis=0)
    return np.array([np.count_nonzero(largest) for largest in at_top]) / len(theta)


def correlated_t_test(x, y, rho, rope=ROPE):
    """(P(x better), P(rope), P(y better)) of the Bayesian correlated t-test on the paired
    scores of one data set over runs x folds (Corani & Benavoli 2015).

    With n differences d, their mean m and sample variance v, and Nadeau & Bengio's
    correlation rho = n_test / n_total (1/K for K-fold cross-validation), the posterior of
    the mean difference is Student's t with n - 1 degrees of freedom, location m and scale
    sqrt((1/n + rho / (1 - rho)) v):

        P(x better) = 1 - T(r),  P(rope) = T(r) - T(-r),  P(y better) = T(-r).

    All differences equal (v = 0): the posterior is degenerate, its mass at m, so the region
    containing m (the ROPE being closed, [-r, r]) gets probability 1.
    """
    d = _differences(x, y)
    _check_rope(rope)
    if not (np.isfinite(rho) and 0 <= rho < 1):
        raise ValueError(f"rho (n_test / n_total) must be in [0, 1); got {rho!r}")
    n = len(d)
    if n < 2:
        raise ValueError(f"the correlated t-test needs at least 2 differences; got {n}")
    if np.ptp(d) == 0:  # the mean is d[0] exactly (np.mean could round it across r)
        return float(d[0] > rope), float(abs(d[0]) <= rope), float(d[0] < -rope)
    mean = d.mean()
    scale = np.sqrt((1 / n + rho / (1 - rho)) * d.var(ddof=1))
    posterior = scipy.stats.t(df=n - 1, loc=mean, scale=scale)
    p_rope = float(posterior.cdf(rope) - posterior.cdf(-rope))
    return float(posterior.sf(rope)), p_rope, float(posterior.cdf(-rope))


def decision(p_better, p_rope, p_worse, threshold=THRESHOLD):
    """The verdict on x against y: "better" when P(x better) >= threshold, "worse" when
    P(y better) >= threshold, "practically equivalent" when P(rope) >= threshold, otherwise
    "undecided" (Benavoli et al. 2017). With threshold > 1/2 at most one region reaches it.
    """
    if not (np.isfinite(threshold) and 0.5 < threshold <= 1):
        raise ValueError(f"threshold must be in (0.5, 1]; got {threshold!r}")
    probabilities = np.array([p_better, p_rope, p_worse], dtype=np.float64)
    if not (np.isfinite(probabilities).all() and (probabilities >= 0).all()
            and abs(probabilities.sum() - 1) <= 1e-9):
        raise ValueError("p_better, p_rope and p_worse must be probabilities summing to 1; "
                         f"got {p_better!r}, {p_rope!r}, {p_worse!r}")
    if p_better >= threshold:
        return "better"
    if p_worse >= threshold:
        return "worse"
    if p_rope >= threshold:
        return "practically equivalent"
    return "undecided"

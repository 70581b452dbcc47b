"""Effect sizes, intervals and the multiplicity correction that go with the signed-rank tests
(docs/method/protocol.md §10.1), on plain vectors of paired differences d = x - y.

* ``rank_sums``: R+ and R-, the signed-rank sums of the non-zero differences (average ranks
  for ties), and ``rank_biserial`` = (R+ - R-) / (R+ + R-) (Kerby 2014, matched pairs).
* ``hodges_lehmann``: the median of the Walsh averages and its distribution-free confidence
  interval from the exact null distribution of the signed-rank statistic (Hollander, Wolfe &
  Chicken 2014, ch. 3), with the confidence level it attains.
* ``cluster_bootstrap``: the percentile interval of the mean difference when whole clusters
  (data sets) are resampled with replacement.
* ``holm``: Holm's (1979) step-down adjusted p-values.
"""

import numpy as np
import scipy.stats

CONFIDENCE = 0.95
N_RESAMPLES = 10_000


def rank_sums(d):
    """(R+, R-): the sums of the ranks of |d| (zeros dropped, average ranks for ties) over
    the positive and the negative differences."""
    d = np.asarray(d, dtype=np.float64)
    nonzero = d[d != 0]
    ranks = scipy.stats.rankdata(np.abs(nonzero))
    return float(ranks[nonzero > 0].sum()), float(ranks[nonzero < 0].sum())


def rank_biserial(d):
    """The matched-pairs rank-biserial correlation (R+ - R-) / (R+ + R-), in [-1, 1]; NaN
    when every difference is zero."""
    r_plus, r_minus = rank_sums(d)
    total = r_plus + r_minus
    return (r_plus - r_minus) / total if total else np.nan


def signed_rank_null(n):
    """P(T+ = t) for t = 0 .. n(n+1)/2 under the null hypothesis, for n untied non-zero
    differences: the coefficients of prod_{i=1..n} (1 + z^i) / 2 (each rank is positive or
    negative with probability 1/2)."""
    p = np.zeros(n * (n + 1) // 2 + 1)
    p[0] = 1.0
    for i in range(1, n + 1):
        shifted = np.zeros_like(p)
        shifted[i:] = p[:-i]
        p = (p + shifted) / 2
    return p


def walsh_averages(d):
    """(d_i + d_j) / 2 for every i <= j: n(n+1)/2 values."""
    d = np.asarray(d, dtype=np.float64)
    i, j = np.triu_indices(len(d))
    return (d[i] + d[j]) / 2


def hodges_lehmann(d, confidence=CONFIDENCE):
    """The Hodges-Lehmann estimate of the centre of d (the median of its Walsh averages) and
    its distribution-free interval ``(estimate, low, high, attained)``.

    With M = n(n+1)/2 sorted Walsh averages W(1) <= ... <= W(M), the interval is
    [W(k), W(M + 1 - k)] for the largest k >= 1 with P0(T+ <= k - 1) <= (1 - confidence) / 2;
    it covers with probability ``attained`` = 1 - 2 P0(T+ <= k - 1) >= ``confidence``. The
    null distribution is discrete: when even k = 1 (the range of d) misses the level (n <= 5
    at 95 %), the interval is that range and ``attained`` is below ``confidence``. Every
    difference given counts (the signed-rank analyses pass the non-zero ones, as their test
    ranks them); the level is exact for untied, non-zero differences.
    """
    d = np.asarray(d, dtype=np.float64)
    if d.ndim != 1 or np.isnan(d).any():
        raise ValueError("d must be a 1-d vector without NaN")
    n = len(d)
    if n == 0:
        return np.nan, np.nan, np.nan, np.nan
    walsh = np.sort(walsh_averages(d))
    below = np.cumsum(signed_rank_null(n))  # below[t] = P0(T+ <= t)
    fits = np.flatnonzero(below <= (1 - confidence) / 2 * (1 + 1e-12))
    k = int(fits[-1]) + 1 if fits.size else 1
    return (float(np.median(walsh)), float(walsh[k - 1]), float(walsh[len(walsh) - k]),
            float(1 - 2 * below[k - 1]))


def cluster_bootstrap(values, clusters, rng, n_resamples=N_RESAMPLES, confidence=CONFIDENCE):
    """``(mean, low, high)``: the mean of ``values`` and the percentile interval of the mean
    over ``n_resamples`` resamples, each drawing as many clusters as there are, with
    replacement, and keeping every value of each cluster drawn.

    The clusters are numbered in the sorted order of their labels; resample b uses the b-th
    row of ``rng.integers(0, G, size=(n_resamples, G))``. With one value per cluster this is
    the ordinary bootstrap of the mean.
    """
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0:
        return np.nan, np.nan, np.nan
    labels, index = np.unique(np.asarray(clusters), return_inverse=True)
    sums = np.bincount(index, weights=values, minlength=len(labels))
    counts = np.bincount(index, minlength=len(labels))
    draws = rng.integers(0, len(labels), size=(n_resamples, len(labels)))
    means = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(values.mean()), float(low), float(high)


def holm(p_values):
    """Holm's step-down adjusted p-values: with the m non-NaN p-values sorted,
    p(1) <= ... <= p(m), the adjusted p(i) is max over j <= i of min(1, (m - j + 1) p(j)).
    NaN (no test) stays NaN and is not counted in m."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    present = np.flatnonzero(~np.isnan(p))
    m = len(present)
    order = present[np.argsort(p[present], kind="stable")]
    out[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    return out

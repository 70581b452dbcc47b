"""The Brodinova synthetic sets (docs/method/datasets.md §4, deviation D15): the authors'
``utilities/dataSynth.m`` (a port of wrsk ``SimData``) without outliers and with MINDIST = 0,
for any number of groups G (the paper's sets have G = 3; the extended study's, §4.1, more).
"""

from typing import NamedTuple

import numpy as np

N_GROUPS = 3
N_PER_GROUP = 40
MEAN_RANGES = ((-6.0, -3.0), (3.0, 6.0))
RHO_RANGE = (0.1, 0.9)


def _rotation(p_info, rng):
    """Q_g of step 4: the Q factor of the column-pivoted QR of a full-rank uniform matrix."""
    if p_info == 1:
        return np.ones((1, 1))
    if p_info == 2:
        u = rng.uniform()
        c = np.sqrt(1.0 - u * u)
        return np.array([[c, -u], [u, c]])
    while True:
        A = rng.uniform(size=(p_info, p_info))
        if np.linalg.matrix_rank(A) == p_info:
            import scipy.linalg  # not at start-up (pcskm.runner.cli)

            return scipy.linalg.qr(A, pivoting=True)[0]


class Parameters(NamedTuple):
    mu: float  # the shared mean value, |mu| in [3, 6]
    means: np.ndarray  # M, (p_info, G): column g is group g's informative mean
    rho: np.ndarray  # (G,) correlations
    covariances: np.ndarray  # (G, p_info, p_info): Sigma_g


def parameters(p_info, rng, n_groups=N_GROUPS):
    """Steps 1-4 of docs/method/datasets.md §4: mu, M, rho and the rotated covariances Sigma_g."""
    G = n_groups
    # step 1: one |mu| ~ U(3, 6) with a random sign, shared by all groups
    r_neg = rng.uniform(*MEAN_RANGES[0], size=G)
    r_pos = rng.uniform(*MEAN_RANGES[1], size=G)
    mu = np.concatenate([r_neg, r_pos])[rng.integers(2 * G)]
    # step 2: M[j, j mod G] = mu
    means = np.zeros((p_info, G))
    means[np.arange(p_info), np.arange(p_info) % G] = mu
    # steps 3-4: equicorrelation R_g rotated by Q_g, symmetrised
    rho = rng.uniform(*RHO_RANGE, size=G)
    covariances = np.empty((G, p_info, p_info))
    for g in range(G):
        Q = _rotation(p_info, rng)
        R = (1.0 - rho[g]) * np.eye(p_info) + rho[g] * np.ones((p_info, p_info))
        sigma = Q @ R @ Q.T
        covariances[g] = (sigma + sigma.T) / 2.0
    return Parameters(float(mu), means, rho, covariances)


def simulate(p_info, p_noise, rng, n_groups=N_GROUPS):
    """``(X, y)``: ``n_groups`` groups of 40 points, ``p_info`` informative columns then
    ``p_noise`` N(0, 1) columns, every draw from ``rng`` in the order of
    docs/method/datasets.md §4."""
    if p_info < n_groups - 1:
        raise ValueError(f"p_info = {p_info} < n_groups - 1 = {n_groups - 1}: M[j, j mod G] = mu "
                         "would give two groups the same informative mean 0 "
                         "(docs/method/datasets.md §4)")
    params = parameters(p_info, rng, n_groups)
    # steps 5-6: the groups stacked in order
    blocks = []
    for g in range(n_groups):
        informative = rng.multivariate_normal(
            params.means[:, g], params.covariances[g], size=N_PER_GROUP, method="cholesky"
        )
        noise = rng.standard_normal((N_PER_GROUP, p_noise))
        blocks.append(np.hstack([informative, noise]))
    y = np.repeat(np.arange(n_groups, dtype=np.int64), N_PER_GROUP)
    return np.vstack(blocks), y

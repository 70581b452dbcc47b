"""The weak-signal sparsity family (docs/method/datasets.md §4.3): few informative features
with small mean shifts among many N(0, 1) noise features, in the spirit of the simulations of
Witten & Tibshirani (2010, JASA 105(490), §3) that motivate Sparse K-Means.

G groups of ``n_per_group`` points; feature j of a point of group g is N(m_gj, 1) with
m_gj = shift * c_g for the ``n_informative`` informative features and 0 for the others, where
the group codes c_g = g - (G - 1) / 2 are centred (three groups: -1, 0, +1, as Witten &
Tibshirani's mu (1{i in C1} - 1{i in C2})). Adjacent groups differ by ``shift`` in every
informative feature, so they lie shift * sqrt(n_informative) apart; the noise features carry
no group information.
"""

import numpy as np

N_GROUPS = 3
N_PER_GROUP = 30


def group_means(shift, n_informative, n_features, n_groups=N_GROUPS):
    """The (n_groups, n_features) matrix of the groups' means m_gj."""
    if not (np.isfinite(shift) and shift > 0):
        raise ValueError(f"shift must be a positive number; got {shift!r}")
    if not 1 <= n_informative <= n_features:
        raise ValueError("n_informative must be between 1 and n_features; got "
                         f"{n_informative} of {n_features}")
    if n_groups < 2:
        raise ValueError(f"n_groups must be at least 2; got {n_groups}")
    codes = np.arange(n_groups) - (n_groups - 1) / 2
    means = np.zeros((n_groups, n_features))
    means[:, :n_informative] = shift * codes[:, None]
    return means


def simulate(shift, n_informative, n_features, rng, n_groups=N_GROUPS,
             n_per_group=N_PER_GROUP):
    """(X, y): ``n_per_group`` points of each group, group by group, labels 0..G-1; the
    informative features are the first ``n_informative`` columns."""
    means = group_means(shift, n_informative, n_features, n_groups)
    y = np.repeat(np.arange(n_groups), n_per_group)
    X = means[y] + rng.standard_normal((len(y), n_features))
    return X, y

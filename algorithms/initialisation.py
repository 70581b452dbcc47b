"""The four initialisations of the paper (docs/method/initialisations.md): DKM++, ROBIN(D),
Maximin(D) and Seeding.

DKM++, ROBIN(D) and Maximin(D) depend only on (X, k) and return row indices; Seeding depends
on the must-link constraints and a random generator and returns centres and seed labels.

Floating-point sums run one term after the other in index order (features in column order,
points in row order), as the loops of the authors' MATLAB do (e.g. the DKM++ density loop).
The spec fixes the order only for the Seeding means; one fixed order everywhere makes every
result a plain function of the data, which the plain-loop reference in
``tests/reference/inits.py`` reproduces bit for bit, exact ties included. Distances are
therefore computed here rather than with ``scipy.spatial.distance.pdist``, whose kernel does
not promise a summation order.
"""

import math
import warnings

import numpy as np

from ._jit import kernel
from ._kernels import cluster_means
from ._validation import check_choice, check_data, check_n_clusters, check_positive_int, plain
from .constraints import Constraints

SEEDING_FILLS = ("data-points", "jittered-mean")

# ROBIN(D): LOF window (0.95, 1.05) = 1 -/+ crit with crit = 0.05
# (docs/method/initialisations.md §2.2).
_LOF_LOW, _LOF_HIGH = 1 - 0.05, 1 + 0.05


def _sequential_sum(a, axis=-1):
    """Sum along ``axis`` one element after the other, in index order."""
    return np.take(np.cumsum(a, axis=axis), -1, axis=axis)


def _distance_matrix(X):
    """Euclidean distances, sqrt of the squared coordinate differences summed in column order."""
    squared = np.zeros((X.shape[0], X.shape[0]))
    for column in X.T:
        diff = column[:, None] - column[None, :]
        squared += diff * diff
    return np.sqrt(squared)


def _distances_to(X, point):
    """Euclidean distance of every row of X to one point (same summation as above)."""
    diff = X - point
    return np.sqrt(_sequential_sum(diff * diff, axis=1))


def _first_unchosen(score, chosen):
    """First index in stable descending ``score`` order that is not ``chosen``
    (docs/method/initialisations.md §0)."""
    order = np.argsort(-score, kind="stable")
    return int(order[~chosen[order]][0])


# --------------------------------------------------------------------------------------
# DKM++ (docs/method/initialisations.md §1)


def _dkmpp_radius(mst_weights):
    """eps = min(max L, 3 IQR + q75) with type-5 percentiles of the MST edge weights L."""
    q25, q75 = np.percentile(mst_weights, [25, 75], method="hazen")
    return min(float(np.max(mst_weights)), float(3 * (q75 - q25) + q75))


@kernel
def _dkmpp_density(normalised, eps):
    """rho_i = sum over j != i with d_ij <= eps of exp(-d_ij / eps), in index order. The
    exponential is the C library's (as Python's ``math.exp``): NumPy's vectorised ``exp``
    differs from it in the last bit for some arguments on some CPUs (AVX-512), which moved the
    choice between exactly tied densities from one machine to another."""
    n = normalised.shape[0]
    density = np.zeros(n)
    for i in range(n):
        total = 0.0
        for j in range(n):
            if j != i and normalised[i, j] <= eps:
                total += math.exp(-normalised[i, j] / eps)
        density[i] = total
    return density


def _dkmpp(X, n_clusters):
    """DKM++ on validated input: ``(indices in selection order, eps)``."""
    from scipy.sparse.csgraph import minimum_spanning_tree  # about a second: not at start-up

    n = X.shape[0]
    distances = _distance_matrix(X)
    normalised = distances / distances.max()
    # SciPy drops zero entries of a dense graph: duplicates are not joined by 0-length edges.
    mst_weights = minimum_spanning_tree(normalised).data
    eps = _dkmpp_radius(mst_weights)

    density = _dkmpp_density(normalised, eps)
    low, high = density.min(), density.max()
    if low == high:
        raise ValueError(
            "DKM++ cannot choose centres: all points have the same density "
            f"(rho = {plain(low)!r} for all {n} points)"
        )
    density = (density - low) / (high - low)

    centres = [int(np.argmax(density))]
    chosen = np.zeros(n, dtype=bool)
    chosen[centres[0]] = True
    nearest = np.full(n, np.inf)
    while len(centres) < n_clusters:
        nearest = np.minimum(nearest, normalised[:, centres[-1]])
        centre = _first_unchosen(density * nearest, chosen)
        centres.append(centre)
        chosen[centre] = True
    return np.array(centres, dtype=np.int64), eps


def dkmpp_init(X, n_clusters):
    """DKM++ initial centres: k row indices of X in selection order
    (docs/method/initialisations.md §1)."""
    X = check_data(X)
    n_clusters = check_n_clusters(n_clusters, X)
    return _dkmpp(X, n_clusters)[0]


# --------------------------------------------------------------------------------------
# ROBIN(D) (docs/method/initialisations.md §2)


def _lof(distances, n_neighbors):
    """The paper-formula LOF of every point (docs/method/initialisations.md §2.1).

    Where r_i = 0, point i and its neighbours (all duplicates of i) have infinite density and
    LOF_i = inf / inf = NaN; a point with such a neighbour but r_i > 0 gets LOF_i = inf.
    """
    radius = np.partition(distances, n_neighbors, axis=1)[:, n_neighbors]
    neighbours = distances <= radius[:, None]
    np.fill_diagonal(neighbours, False)
    count = neighbours.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        density = count / _sequential_sum(np.where(neighbours, distances, 0.0), axis=1)
        mean_density = _sequential_sum(np.where(neighbours, density, 0.0), axis=1) / count
        return mean_density / density


def _robin(X, n_clusters, n_neighbors):
    """ROBIN(D) on validated input: ``(indices sorted ascending, indices in selection order)``."""
    n = X.shape[0]
    distances = _distance_matrix(X)
    lof = _lof(distances, n_neighbors)
    eligible = (_LOF_LOW < lof) & (lof < _LOF_HIGH)
    if not eligible.any():
        eligible = lof < _LOF_HIGH
        if not eligible.any():
            raise ValueError(
                f"ROBIN cannot choose centres: no point has LOF < {_LOF_HIGH} "
                f"(n_neighbors={n_neighbors})"
            )
        warnings.warn(
            f"ROBIN: no point has {_LOF_LOW} < LOF < {_LOF_HIGH}; falling back to the first "
            f"point with LOF < {_LOF_HIGH} (n_neighbors={n_neighbors})",
            RuntimeWarning,
            stacklevel=3,
        )

    # Round 1 orders by the distance to the column mean, later rounds by the distance to
    # the nearest centre; both stable descending.
    spread = _distances_to(X, _sequential_sum(X.T, axis=1) / n)
    nearest = np.full(n, np.inf)
    centres = []
    chosen = np.zeros(n, dtype=bool)
    while len(centres) < n_clusters:
        order = np.argsort(-spread, kind="stable")
        centre = int(order[eligible[order]][0])
        if chosen[centre]:
            raise ValueError(
                f"ROBIN cannot choose centre {len(centres) + 1} of {n_clusters}: the first "
                f"eligible point ({centre}) is already a centre (no progress, D14)"
            )
        centres.append(centre)
        chosen[centre] = True
        nearest = np.minimum(nearest, distances[centre])
        spread = nearest
    selection = np.array(centres, dtype=np.int64)
    return np.sort(selection), selection


def robin_init(X, n_clusters, n_neighbors=10):
    """ROBIN(D) initial centres: k row indices of X sorted ascending
    (docs/method/initialisations.md §2).

    Warns (RuntimeWarning) when no point has 0.95 < LOF < 1.05 and the fallback LOF < 1.05
    is used; raises ValueError when no point qualifies or no progress is made (D14).
    """
    X = check_data(X)
    n_clusters = check_n_clusters(n_clusters, X)
    n_neighbors = check_positive_int(n_neighbors, "n_neighbors")
    if X.shape[0] < n_neighbors + 1:
        raise ValueError(
            f"ROBIN needs at least n_neighbors + 1 = {n_neighbors + 1} points; "
            f"X has {X.shape[0]}"
        )
    return _robin(X, n_clusters, n_neighbors)[0]


# --------------------------------------------------------------------------------------
# Maximin(D) (docs/method/initialisations.md §3)


def _maximin(X, n_clusters):
    n = X.shape[0]
    centres = [int(np.argmax(np.sqrt(_sequential_sum(X * X, axis=1))))]
    chosen = np.zeros(n, dtype=bool)
    chosen[centres[0]] = True
    nearest = np.full(n, np.inf)
    while len(centres) < n_clusters:
        nearest = np.minimum(nearest, _distances_to(X, X[centres[-1]]))
        centre = _first_unchosen(nearest, chosen)
        centres.append(centre)
        chosen[centre] = True
    return np.array(centres, dtype=np.int64)


def maximin_init(X, n_clusters):
    """Maximin(D) ("greatest Euclidean") initial centres: k row indices in selection order
    (docs/method/initialisations.md §3)."""
    X = check_data(X)
    n_clusters = check_n_clusters(n_clusters, X)
    return _maximin(X, n_clusters)


# --------------------------------------------------------------------------------------
# Seeding (docs/method/initialisations.md §4)


@kernel
def _update_gaps(means, size, last, gap, unselected):
    """gap_N = min(gap_N, |c_N - c_last| sqrt(|N| |last|)) for every N, in exactly that form.

    Returns the first unselected N with the largest gap, and how many unselected N share it.
    """
    n_hoods, p = means.shape
    best, first, n_tied = -1.0, -1, 0
    for a in range(n_hoods):
        total = 0.0
        for m in range(p):
            d = means[a, m] - means[last, m]
            total += d * d
        weighted = np.sqrt(total) * np.sqrt(np.float64(size[a] * size[last]))
        if weighted < gap[a]:
            gap[a] = weighted
        if unselected[a]:
            if gap[a] > best:
                best, first, n_tied = gap[a], a, 1
            elif gap[a] == best:
                n_tied += 1
    return first, n_tied


def _farthest_first(means, size, n_clusters, rng):
    """Weighted farthest-first selection of k neighbourhoods
    (docs/method/initialisations.md §4.2a-b).

    Returns the selected numbers in selection order and whether a tie was drawn.
    """
    selected = [int(np.argmax(size))]  # the largest; ties to the lowest number
    unselected = np.ones(len(size), dtype=bool)
    unselected[selected[0]] = False
    gap = np.full(len(size), np.inf)
    drew = False
    while len(selected) < n_clusters:
        pick, n_tied = _update_gaps(means, size, selected[-1], gap, unselected)
        if n_tied > 1:  # D11: draw only among the exactly tied neighbourhoods
            tied = np.flatnonzero(unselected & (gap == gap[pick]))
            pick = tied[rng.integers(n_tied)]
            drew = True
        selected.append(int(pick))
        unselected[pick] = False
    return selected, drew


def _seeding(X, n_clusters, constraints, fill, rng):
    """Seeding on validated input (docs/method/initialisations.md §4):
    ``(centres (k, p), seed_labels (n,), info)``.

    ``constraints`` is a :class:`~pcskm.algorithms.constraints.Constraints` (cannot-links are
    ignored), ``fill`` one of ``SEEDING_FILLS``, ``rng`` a ``numpy.random.Generator``.
    ``info`` holds ``n_neighbourhoods`` (lambda), ``selected`` (the neighbourhood numbers of
    clusters 0, 1, ...) and ``random_draw`` (whether ``rng`` was used).
    """
    n = X.shape[0]
    neighbourhood, n_neighbourhoods = constraints.neighbourhood, constraints.n_neighbourhoods
    means, size = cluster_means(X, neighbourhood, n_neighbourhoods)  # rows in index order

    if n_neighbourhoods >= n_clusters:
        order, drew = _farthest_first(means, size, n_clusters, rng)
        selected = np.sort(np.array(order, dtype=np.int64))  # D10: ascending numbers
        centres = means[selected]
    else:
        selected = np.arange(n_neighbourhoods, dtype=np.int64)
        n_fill = n_clusters - n_neighbourhoods
        if fill == "data-points":
            extra = X[rng.choice(n, size=n_fill, replace=False)]
        else:
            overall = _sequential_sum(X.T, axis=1) / n
            extra = overall * (1 + 0.7 * (rng.random((n_fill, X.shape[1])) - 0.5))
        centres = np.concatenate([means, extra])
        drew = True

    cluster_of = np.full(n_neighbourhoods + 1, -1, dtype=np.int64)  # last slot: no neighbourhood
    cluster_of[selected] = np.arange(len(selected))
    seed_labels = cluster_of[neighbourhood]
    info = {"n_neighbourhoods": n_neighbourhoods, "selected": selected, "random_draw": drew}
    return centres, seed_labels, info


def seeding_init(
    X, n_clusters, must_link=None, cannot_link=None, *, fill="data-points", random_state=None
):
    """Seeding from must-link neighbourhoods (docs/method/initialisations.md §4):
    ``(centres (k, p), seed_labels (n,))``.

    ``seed_labels`` gives the cluster of each point of a selected neighbourhood and -1
    elsewhere. ``fill`` ("data-points" or "jittered-mean") supplies the centres missing when
    there are fewer neighbourhoods than clusters. ``random_state`` is anything
    ``numpy.random.default_rng`` accepts (int, SeedSequence, Generator). Without must-link
    constraints there is no neighbourhood: every centre comes from ``fill`` (``n_clusters``
    rows of X drawn without replacement, or jittered copies of the mean of X) and every seed
    label is -1.
    """
    X = check_data(X)
    n_clusters = check_n_clusters(n_clusters, X)
    fill = check_choice(fill, "fill", SEEDING_FILLS)
    constraints = Constraints.from_pairs(must_link, cannot_link, n_samples=X.shape[0])
    centres, seed_labels, _ = _seeding(
        X, n_clusters, constraints, fill, np.random.default_rng(random_state)
    )
    return centres, seed_labels

"""Sparse K-Means (SKM) and PCSKM estimators on the sparse engine (docs/method/algorithms.md §4)."""

from dataclasses import dataclass

import numpy as np

from ._base import ConstrainedClusteringBase
from ._result import STATUS_NAMES
from ._sparse import path_engine, path_options
from ._validation import check_sparsity


@dataclass(frozen=True, eq=False)
class SparsityPath:
    """Results of :meth:`PCSKMeans.fit_path` over a grid of s (leading axis: the grid).

    Row i equals what ``fit`` gives with ``sparsity=sparsity[i]``. Failed rows
    (``status`` "empty_cluster" / "degenerate_weights") have NaN weights and objective.
    ``inner_n_iter[i, r]`` is the pass count of the PCKM run of weight iteration r + 1
    (0 where there was none).
    """

    sparsity: np.ndarray  # (n_s,)
    labels: np.ndarray  # (n_s, n)
    weights: np.ndarray  # (n_s, p)
    cluster_centers: np.ndarray  # (n_s, k, p) means of the unweighted X
    weighted_centers: np.ndarray  # (n_s, k, p) last PCKM centroids in Z = X sqrt(w)
    n_iter: np.ndarray  # (n_s,) weight updates
    inner_n_iter: np.ndarray  # (n_s, max_iter)
    status: np.ndarray  # (n_s,) strings
    status_code: np.ndarray  # (n_s,) ints (pcskm.algorithms._result)
    objective: np.ndarray  # (n_s,) sum_j w_j gamma_j
    n_empty_events: np.ndarray  # (n_s,)
    initial_centers: np.ndarray  # (k, p)

    def __repr__(self):
        """One line: the s grid's size and range, the data's shape and the fits' statuses."""
        s = self.sparsity
        grid = (f"s={s[0]:g}" if len(s) == 1
                else f"{len(s)} values of s from {s.min():g} to {s.max():g}")
        counts = np.bincount(self.status_code, minlength=len(STATUS_NAMES))
        statuses = ", ".join(f"{count} {name}" for name, count in
                             zip(STATUS_NAMES, counts, strict=True) if count)
        n_clusters, n_features = self.initial_centers.shape
        return (f"SparsityPath({grid}; n_samples={self.labels.shape[1]}, n_features={n_features}, "
                f"n_clusters={n_clusters}; {statuses})")


class PCSKMeans(ConstrainedClusteringBase):
    """PCSKM: sparse K-Means whose clustering step is PCK-Means
    (:ref:`docs/method/algorithms.md §4 <algorithms-4>`).

    Alternates a PCKM clustering of Z = X * sqrt(w) with the L1/L2-constrained feature-weight
    update (exact soft threshold, :ref:`§4.5 <algorithms-4-5>`). Defaults of the authors'
    MATLAB (25 outer and 25 inner iterations, tol 1e-4, empty cluster = failure).

    Parameters
    ----------
    n_clusters : int, default=3
        Number of clusters k, at most the number of distinct rows of X.
    sparsity : float, default=1.1
        The L1 bound s of the weights, 1 < s <= sqrt(n_features) (checked at fit). The
        default is the smallest value of the paper's grid, valid for any n_features >= 2.
    init : {"dkm++", "seeding", "robin", "maximin"} or array of shape (n_clusters, n_features)
        Initial centres in X's space. "seeding"
        (:ref:`docs/method/initialisations.md §4 <initialisations-4>`): the means
        of the must-link neighbourhoods, completed by rows of X drawn with ``random_state``
        when there are fewer neighbourhoods than clusters (fill "data-points", centres
        only); without must-links every centre is such a random row.
    max_iter : int, default=25
        Maximum number of weight updates.
    inner_max_iter : int, default=25
        Maximum number of passes of each PCKM clustering.
    tol : float, default=1e-4
        Stop when sum|w_new - w| / sum|w| <= tol.
    weight_update : {"code", "paper"}, default="code"
        Feature scores: TSS - WCSS (the authors' code) or the paper's formula that also
        subtracts the per-feature cost of violated constraints
        (:ref:`§4.3 <algorithms-4-3>`, D1).
    empty_cluster : {"fail", "zero", "relocate"}, default="fail"
        What happens when a cluster loses its last point
        (:ref:`docs/method/algorithms.md §1.3 <algorithms-1-3>`): "fail" stops with status
        "empty_cluster", "zero" moves its centroid to the origin and goes on, "relocate"
        gives it the point farthest from its own centroid.
    random_state : None, int, numpy SeedSequence or Generator
        Source of the Seeding draws.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of each row of X, 0 to n_clusters - 1.
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        Means of the clusters in the unweighted X.
    weighted_centers_ : ndarray of shape (n_clusters, n_features)
        Centroids of the last PCKM run, in Z = X * sqrt(w).
    weights_ : ndarray of shape (n_features,)
        Feature weights, unit L2 norm and L1 norm at most ``sparsity``; NaN after a
        failure.
    initial_centers_ : ndarray of shape (n_clusters, n_features)
        Centres the fit started from.
    n_iter_ : int
        Number of weight updates.
    inner_n_iter_ : ndarray of int
        Passes of each PCKM run, one entry per weight update.
    status_ : str
        "converged", "max_iter", "empty_cluster" or "degenerate_weights"
        (:ref:`docs/method/algorithms.md §1.2 <algorithms-1-2>`).
    objective_ : float
        sum_j w_j gamma_j; NaN after a failure.
    n_empty_events_ : int
        Empty-cluster events under "zero" or "relocate" (0 under "fail").
    n_features_in_ : int
        Number of features seen by ``fit``.

    Examples
    --------
    Feature 0 separates the two groups, feature 1 does not: its weight is 0.

    >>> import numpy as np
    >>> from pcskm import PCSKMeans
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> model = PCSKMeans(n_clusters=2, init=X[[0, 2]]).fit(
    ...     X, must_link=[[0, 1]], cannot_link=[[1, 2]])
    >>> model.labels_
    array([0, 0, 1, 1])
    >>> model.weights_
    array([1., 0.])
    """

    def __init__(self, n_clusters=3, *, sparsity=1.1, init="dkm++", max_iter=25,
                 inner_max_iter=25, tol=1e-4, weight_update="code", empty_cluster="fail",
                 random_state=None):
        self.n_clusters = n_clusters
        self.sparsity = sparsity
        self.init = init
        self.max_iter = max_iter
        self.inner_max_iter = inner_max_iter
        self.tol = tol
        self.weight_update = weight_update
        self.empty_cluster = empty_cluster
        self.random_state = random_state

    def _engine_options(self, sparsities):
        """The engine's options for the (checked) s grid ``sparsities`` from the validated
        parameters (for :meth:`_path`)."""
        return path_options(
            sparsities, weight_update=getattr(self, "weight_update", "code"),
            max_iter=self.max_iter, inner_max_iter=self.inner_max_iter, tol=self.tol,
            empty_cluster=self.empty_cluster,
        )

    def _path(self, X, constraints, centers, options, cache=None):
        """The sparse engine on validated input and ``options`` (a ``_sparse.PathArrays``);
        ``cache``, a ``_sparse.FitCache`` of ``X`` and ``constraints``, or None."""
        return path_engine(X, centers, self._engine_constraints(constraints), options, cache)

    def _run_engine(self, X, constraints, centers, seed_labels):
        sparsities = check_sparsity(self.sparsity, X.shape[1])
        path = self._path(X, constraints, centers, self._engine_options(sparsities))
        n_runs = max(int(path.n_iter[0]), 1)
        self.weighted_centers_ = path.weighted_centers[0]
        self.inner_n_iter_ = path.inner_n_iter[0, :n_runs].copy()
        self._store(labels=path.labels[0], centers=path.centers[0], weights=path.weights[0],
                    n_iter=path.n_iter[0], status=path.status[0],
                    objective=path.objective[0], initial_centers=centers,
                    n_empty_events=path.n_empty_events[0])

    def fit_path(self, X, sparsities, *, must_link=None, cannot_link=None):
        """Fit every s in ``sparsities`` from one initialisation and one first clustering.

        Steps 1-2 of §4.2 (and the init, e.g. one Seeding draw) are shared by all s; row i of
        the result is identical to ``fit`` with ``sparsity=sparsities[i]``. The estimator's
        own ``sparsity`` is not used and its fitted attributes are not changed.
        Returns a :class:`SparsityPath`.
        """
        return self._fit_path(sparsities, *self._fit_input(X, must_link, cannot_link))

    def _fit_path(self, sparsities, X, constraints, centers, seed_labels):
        grid = check_sparsity(sparsities, X.shape[1], name="sparsities")
        path = self._path(X, constraints, centers, self._engine_options(grid))
        return SparsityPath(
            sparsity=grid, labels=path.labels, weights=path.weights,
            cluster_centers=path.centers, weighted_centers=path.weighted_centers,
            n_iter=path.n_iter, inner_n_iter=path.inner_n_iter,
            status=np.array([STATUS_NAMES[c] for c in path.status]),
            status_code=path.status, objective=path.objective,
            n_empty_events=path.n_empty_events, initial_centers=centers,
        )


class SparseKMeans(PCSKMeans):
    """Sparse K-Means (SKM, Witten & Tibshirani): PCSKM without constraints
    (:ref:`docs/method/algorithms.md §4 <algorithms-4>`).

    ``fit`` / ``fit_path`` accept ``must_link`` / ``cannot_link`` only so that
    ``init="seeding"`` can build its centres from them; the clustering ignores them. Both
    score variants coincide without constraints, so there is no ``weight_update``.
    Otherwise the same parameters and attributes as :class:`PCSKMeans`.

    Examples
    --------
    Feature 0 separates the two groups, feature 1 does not: its weight is 0.

    >>> import numpy as np
    >>> from pcskm import SparseKMeans
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> model = SparseKMeans(n_clusters=2, init=X[[0, 2]]).fit(X)
    >>> model.labels_
    array([0, 0, 1, 1])
    >>> model.weights_
    array([1., 0.])
    >>> model.cluster_centers_
    array([[ 0. ,  0.5],
           [10. ,  0.5]])
    """

    _constrained = False

    def __init__(self, n_clusters=3, *, sparsity=1.1, init="dkm++", max_iter=25,
                 inner_max_iter=25, tol=1e-4, empty_cluster="fail", random_state=None):
        self.n_clusters = n_clusters
        self.sparsity = sparsity
        self.init = init
        self.max_iter = max_iter
        self.inner_max_iter = inner_max_iter
        self.tol = tol
        self.empty_cluster = empty_cluster
        self.random_state = random_state

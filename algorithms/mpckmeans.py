"""The MPCK-Means estimator (docs/method/algorithms.md §3) on the MPCKM engine of ``_mpckm.py``."""

import numpy as np

from ._base import ConstrainedClusteringBase
from ._mpckm import mpckm_options, mpckm_run


class MPCKMeans(ConstrainedClusteringBase):
    """MPCK-Means: constrained K-Means with one learned diagonal metric
    (:ref:`docs/method/algorithms.md §3 <algorithms-3>`).

    Behaviour of the authors' WekaUT jar with deviations D6-D8. With ``init="seeding"`` the
    Seeding fill is "jittered-mean" and its seed labels are the initial labels
    (:ref:`§3.2 <algorithms-3-2>`); any other init, and Seeding without must-links (every
    centre a jittered copy of the mean of X), starts with every point unassigned.

    Parameters
    ----------
    n_clusters : int, default=3
        Number of clusters k, at most the number of distinct rows of X.
    init : {"dkm++", "seeding", "robin", "maximin"} or array of shape (n_clusters, n_features)
        Initial centres (:ref:`docs/method/initialisations.md <initialisations-0>`).
    max_iter : int, default=100
        Maximum number of passes (D6: the jar has no cap; :ref:`§3.6 <algorithms-3-6>`).
    empty_cluster : {"fail", "zero", "relocate"}, default="zero"
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
        Final centroids.
    weights_ : ndarray of shape (n_features,)
        The learned metric's diagonal a; NaN after a failure.
    initial_centers_ : ndarray of shape (n_clusters, n_features)
        Centres the fit started from.
    initial_labels_ : ndarray of shape (n_samples,)
        Seed labels the fit started from, -1 = unassigned.
    n_iter_ : int
        Number of passes.
    status_ : str
        "converged", "max_iter" or "empty_cluster"
        (:ref:`docs/method/algorithms.md §1.2 <algorithms-1-2>`).
    objective_ : float
        The final J_full; NaN after a failure.
    n_empty_events_ : int
        Empty-cluster events under "zero" or "relocate" (0 under "fail").
    n_features_in_ : int
        Number of features seen by ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from pcskm import MPCKMeans
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> model = MPCKMeans(n_clusters=2, init=X[[0, 2]]).fit(
    ...     X, must_link=[[0, 1]], cannot_link=[[1, 2]])
    >>> model.labels_
    array([0, 0, 1, 1])
    """

    _seeding_fill = "jittered-mean"

    def __init__(self, n_clusters=3, *, init="dkm++", max_iter=100, empty_cluster="zero",
                 random_state=None):
        self.n_clusters = n_clusters
        self.init = init
        self.max_iter = max_iter
        self.empty_cluster = empty_cluster
        self.random_state = random_state

    def _engine_options(self, sparsities=None):
        """The engine's options from the validated parameters (for :meth:`_engine`)."""
        return mpckm_options(self.max_iter, self.empty_cluster)

    def _engine(self, X, constraints, centers, seed_labels, options, cache=None):
        """The MPCKM engine on validated input and ``options`` (an ``EngineResult``).
        ``cache`` (the cell's ``_sparse.FitCache``, as the other estimators take it) is
        unused: no other fit of a cell computes an MPCKM clustering."""
        return mpckm_run(X, centers, seed_labels, self._engine_constraints(constraints),
                         options)

    def _run_engine(self, X, constraints, centers, seed_labels):
        result = self._engine(X, constraints, centers, seed_labels, self._engine_options())
        self.initial_labels_ = np.asarray(seed_labels, dtype=np.int64)
        self._store(labels=result.labels, centers=result.centers, weights=result.weights,
                    n_iter=result.n_iter, status=result.status, objective=result.objective,
                    initial_centers=centers, n_empty_events=result.n_empty_events)

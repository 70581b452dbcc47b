"""Lloyd K-Means (LKM) and PCK-Means (PCKM) estimators on the PCKM engine
(docs/method/algorithms.md §2)."""

from ._base import ConstrainedClusteringBase
from ._pckm import pckm_options, pckm_run


class PCKMeans(ConstrainedClusteringBase):
    """PCK-Means: K-Means with soft must-link / cannot-link penalties
    (:ref:`docs/method/algorithms.md §2 <algorithms-2>`).

    Sequential E-step with distance-based violation costs, the cannot-link scale D_max from
    the box of :ref:`§1.1 <algorithms-1-1>`; defaults of the authors' MATLAB port
    (``max_iter=25``, empty cluster = failure).

    Parameters
    ----------
    n_clusters : int, default=3
        Number of clusters k, at most the number of distinct rows of X.
    init : {"dkm++", "seeding", "robin", "maximin"} or array of shape (n_clusters, n_features)
        Initial centres. "seeding" uses the must-link neighbourhoods and ``random_state``
        (fill "data-points", centres only); without must-links every centre is a row of X
        drawn with ``random_state``
        (:ref:`docs/method/initialisations.md §4 <initialisations-4>`).
    max_iter : int, default=25
        Maximum number of E-step passes.
    empty_cluster : {"fail", "zero", "relocate"}, default="fail"
        What happens when a cluster loses its last point
        (:ref:`docs/method/algorithms.md §1.3 <algorithms-1-3>`): "fail" stops with status
        "empty_cluster", "zero" moves its centroid to the origin and goes on, "relocate"
        gives it the point farthest from its own centroid.
    random_state : None, int, numpy SeedSequence or Generator
        Source of the Seeding draws (``numpy.random.default_rng(random_state)`` per fit).

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of each row of X, 0 to n_clusters - 1.
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        Final centroids.
    weights_ : ndarray of shape (n_features,)
        Ones; NaN after a failure.
    initial_centers_ : ndarray of shape (n_clusters, n_features)
        Centres the fit started from.
    n_iter_ : int
        Number of passes.
    status_ : str
        "converged", "max_iter" or "empty_cluster"
        (:ref:`docs/method/algorithms.md §1.2 <algorithms-1-2>`).
    objective_ : float
        Sum of the winning penalties of the last pass; NaN after a failure.
    n_empty_events_ : int
        Empty-cluster events under "zero" or "relocate" (0 under "fail").
    n_features_in_ : int
        Number of features seen by ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> from pcskm import PCKMeans
    >>> X = np.array([[0.0], [1.0], [5.0], [6.0]])
    >>> model = PCKMeans(n_clusters=2, init=X[[0, 3]]).fit(
    ...     X, must_link=[[0, 1]], cannot_link=[[1, 2]])
    >>> model.labels_
    array([0, 0, 1, 1])
    >>> model.cluster_centers_
    array([[0.5],
           [5.5]])
    """

    def __init__(self, n_clusters=3, *, init="dkm++", max_iter=25, empty_cluster="fail",
                 random_state=None):
        self.n_clusters = n_clusters
        self.init = init
        self.max_iter = max_iter
        self.empty_cluster = empty_cluster
        self.random_state = random_state

    def _engine_options(self, sparsities=None):
        """The engine's options from the validated parameters (for :meth:`_engine`)."""
        return pckm_options(self.max_iter, self.empty_cluster)

    def _engine(self, X, constraints, centers, seed_labels, options, cache=None):
        """The PCKM engine on validated input and ``options`` (an ``EngineResult``);
        ``cache``, a ``_sparse.FitCache`` of ``X`` and ``constraints``, or None."""
        return pckm_run(X, centers, self._engine_constraints(constraints), options, cache)

    def _run_engine(self, X, constraints, centers, seed_labels):
        result = self._engine(X, constraints, centers, seed_labels, self._engine_options())
        self._store(labels=result.labels, centers=result.centers, weights=result.weights,
                    n_iter=result.n_iter, status=result.status, objective=result.objective,
                    initial_centers=centers, n_empty_events=result.n_empty_events)


class LloydKMeans(PCKMeans):
    """Lloyd K-Means (LKM): PCK-Means without constraints
    (:ref:`docs/method/algorithms.md §2 <algorithms-2>`, same engine).

    ``fit`` accepts ``must_link`` / ``cannot_link`` only so that ``init="seeding"`` can build
    its centres from them (the paper's LKM with Seeding); the clustering itself ignores them.
    Same parameters and attributes as :class:`PCKMeans`.

    Examples
    --------
    >>> import numpy as np
    >>> from pcskm import LloydKMeans
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    >>> model = LloydKMeans(n_clusters=2, init=X[[0, 2]]).fit(X)
    >>> model.labels_
    array([0, 0, 1, 1])
    >>> model.cluster_centers_
    array([[ 0. ,  0.5],
           [10. ,  0.5]])
    >>> model.predict([[1.0, 0.0], [9.0, 1.0]])
    array([0, 1])
    """

    _constrained = False

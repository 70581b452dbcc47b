"""Lloyd K-Means (LKM) and PCK-Means (PCKM) estimators on the PCKM engine
(docs/method/algorithms.md §2)."""

from ._base import ConstrainedClusteringBase
from ._pckm import pckm_options, pckm_run


class PCKMeans(ConstrainedClusteringBase):
    """PCK-Means: K-Means with soft must-link / cannot-link penalties
    (docs/method/algorithms.md §2).

    Sequential E-step with distance-based violation costs, the cannot-link scale D_max from
    the box of §1.1; defaults of the authors' MATLAB port (``max_iter=25``, empty cluster =
    failure).

    Parameters
    ----------
    n_clusters : int, default=3
    init : {"dkm++", "seeding", "robin", "maximin"} or array of shape (n_clusters, n_features)
        Initial centres. "seeding" uses the must-link neighbourhoods and ``random_state``
        (fill "data-points", centres only); without must-links every centre is a row of X
        drawn with ``random_state`` (docs/method/initialisations.md §4).
    max_iter : int, default=25
        Maximum number of E-step passes.
    empty_cluster : {"fail", "zero", "relocate"}, default="fail"
        Empty-cluster policy (docs/method/algorithms.md §1.3).
    random_state : None, int, numpy SeedSequence or Generator
        Source of the Seeding draws (``numpy.random.default_rng(random_state)`` per fit).

    Attributes
    ----------
    labels_, cluster_centers_, weights_ (ones; NaN after a failure), initial_centers_,
    n_iter_, status_, objective_ (sum of the winning penalties of the last pass),
    n_empty_events_, n_features_in_.
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
    (docs/method/algorithms.md §2, same engine).

    ``fit`` accepts ``must_link`` / ``cannot_link`` only so that ``init="seeding"`` can build
    its centres from them (the paper's LKM with Seeding); the clustering itself ignores them.
    Same parameters and attributes as :class:`PCKMeans`.
    """

    _constrained = False

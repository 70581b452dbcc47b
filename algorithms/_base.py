"""The base class shared by the five scikit-learn estimators.

It holds parameter validation (one table, one method), input and constraint validation, the
resolution of ``init`` into initial centres, the fitted attributes common to every
estimator, the failure warning, ``fit_predict`` and ``predict``. Subclasses only say which
engine to run (``_run_engine``) and which Seeding fill they use.

A fit is ``_checked_input`` (parameters and data), the constraints, ``_initial_state`` and
the engine. The experiment runner calls the same steps itself, validating what its fits
share (parameters, data set) once per task, and calls the same engines.
"""

import functools
import numbers
import warnings

import numpy as np
import scipy.sparse
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ._result import EMPTY_CLUSTER_POLICIES, FAILED, STATUS_NAMES
from ._validation import check_centers, check_choice, check_data, check_n_clusters, plain
from .constraints import Constraints
from .initialisation import _seeding, dkmpp_init, maximin_init, robin_init

INITS = ("dkm++", "seeding", "robin", "maximin")
_INDEX_INITS = {"dkm++": dkmpp_init, "robin": robin_init, "maximin": maximin_init}


class ClusteringFailedWarning(ConvergenceWarning):
    """A fit ended with status ``empty_cluster`` or ``degenerate_weights``
    (:ref:`docs/method/algorithms.md §1.2 <algorithms-1-2>`).

    The estimator keeps its labels and status; its weights and objective are NaN.
    """


def _check_int(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {plain(value)!r}")


def _check_init(value, name):
    if isinstance(value, str):
        check_choice(value, name, INITS)
    elif not hasattr(value, "__len__") and not hasattr(value, "__array__"):
        raise ValueError(f"{name} must be one of {list(INITS)} or a (n_clusters, n_features) "
                         f"array of centres; got {plain(value)!r}")


def _check_policy(value, name):
    check_choice(value, name, EMPTY_CLUSTER_POLICIES)


def _check_random_state(value, name):
    """None, an int >= 0, a SeedSequence, BitGenerator or Generator (for ``default_rng``).

    Checked by type: calling ``default_rng(None)`` here would draw OS entropy on every fit.
    """
    valid = value is None or isinstance(
        value, np.random.SeedSequence | np.random.Generator | np.random.BitGenerator
    ) or (isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 0)
    if not valid:
        raise ValueError(f"{name} must be None, a non-negative int, a numpy SeedSequence or "
                         f"Generator; got {plain(value)!r}")


def _check_distinct_rows(n_clusters, X):
    """n_clusters <= number of distinct rows of X, stopping as soon as enough are seen.

    Rows are compared by their bytes after adding +0.0 (which turns -0.0 into 0.0), i.e. by
    float equality as ``np.unique`` does; the full count is only needed to report an error.
    """
    seen = set()
    for row in X + 0.0:
        seen.add(row.tobytes())
        if len(seen) >= n_clusters:
            return
    check_n_clusters(n_clusters, X)  # raises, naming the number of distinct rows


def _check_sparsity_value(value, name):
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not np.isfinite(value) or value <= 1):
        raise ValueError(f"{name} must be a number > 1 (and <= sqrt(n_features)); "
                         f"got {plain(value)!r}")


def _check_tol(value, name):
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not np.isfinite(value) or value < 0):
        raise ValueError(f"{name} must be a finite number >= 0; got {plain(value)!r}")


def _check_weight_update(value, name):
    check_choice(value, name, ("code", "paper"))


# Every constructor parameter of every estimator, with its check (one place).
_PARAMETER_CHECKS = {
    "n_clusters": lambda v, name: _check_int(v, name, 2),
    "init": _check_init,
    "max_iter": lambda v, name: _check_int(v, name, 1),
    "inner_max_iter": lambda v, name: _check_int(v, name, 1),
    "empty_cluster": _check_policy,
    "random_state": _check_random_state,
    "sparsity": _check_sparsity_value,
    "tol": _check_tol,
    "weight_update": _check_weight_update,
}


# The empty list of n points, built once per n (read by the engines, never written).
_no_constraints = functools.lru_cache(maxsize=16)(Constraints.empty)


@functools.cache
def _parameter_names(cls):
    """``cls._get_param_names()`` once per class (it inspects the signature: slow per fit)."""
    return tuple(cls._get_param_names())


class ConstrainedClusteringBase(ClusterMixin, BaseEstimator):
    """Shared machinery of LloydKMeans, PCKMeans, MPCKMeans, SparseKMeans and PCSKMeans.

    Subclasses define ``__init__`` (the parameters), ``_seeding_fill`` and ``_run_engine``.
    """

    _seeding_fill = "data-points"
    _constrained = True  # False: the constraints only seed (LKM, SKM)

    def _validate_params(self):
        """Check every constructor parameter (types and ranges that need no data)."""
        for name in _parameter_names(type(self)):
            _PARAMETER_CHECKS[name](getattr(self, name), name)

    def _check_X(self, X, *, reset):
        """X as C-contiguous float64 (integer data converted before any arithmetic)."""
        if scipy.sparse.issparse(X):
            raise TypeError(f"{type(self).__name__} does not support sparse input X; "
                            "pass a dense array")
        if not hasattr(X, "dtype"):
            X = np.asarray(X)
        if X.dtype == object:  # numbers stored as objects (sklearn convention): convert
            X = np.asarray(X, dtype=np.float64)
        if np.iscomplexobj(X):
            raise ValueError("Complex data not supported: X must be real-valued")
        shape = np.shape(X)
        if len(shape) == 2 and 0 in shape:
            which = "sample" if shape[0] == 0 else "feature"
            raise ValueError(f"Found array with 0 {which}(s) (shape={shape}) while a minimum "
                             "of 1 is required.")
        X = check_data(X)
        if reset:
            self.n_features_in_ = X.shape[1]
        elif X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input")
        return X

    def _initial_state(self, X, constraints, random_state):
        """Resolve ``init`` on validated X: returns ``(centres (k, p), seed labels (n,))``.

        DKM++, ROBIN(D) and Maximin(D) give row indices; Seeding gives centres (and seed
        labels, used only by MPCKM) from the must-link neighbourhoods of ``constraints`` and
        draws from ``random_state`` (docs/method/initialisations.md §4; without must-links,
        all of them from the subclass's Seeding fill). Only Seeding reads ``constraints``
        and ``random_state``.
        """
        k = self.n_clusters
        labels = np.full(X.shape[0], -1, dtype=np.int64)
        if isinstance(self.init, str):
            if self.init == "seeding":
                centres, seed_labels, _ = _seeding(
                    X, k, constraints, self._seeding_fill, np.random.default_rng(random_state),
                )
                return np.ascontiguousarray(centres, dtype=np.float64), seed_labels
            rows = _INDEX_INITS[self.init](X, k)
            return np.ascontiguousarray(X[rows]), labels
        return check_centers(self.init, k, X.shape[1]), labels

    def _checked_input(self, X):
        """Validate the parameters and X (float64 without NaN or inf, at least n_clusters
        distinct rows); returns X as the engines take it."""
        self._validate_params()
        X = self._check_X(X, reset=True)
        _check_distinct_rows(self.n_clusters, X)
        return X

    def _fit_input(self, X, must_link, cannot_link):
        """Validate parameters, data and constraints; returns ``(X, constraints, C0, l0)``."""
        X = self._checked_input(X)
        constraints = Constraints.from_pairs(must_link, cannot_link, n_samples=X.shape[0])
        centres, seed_labels = self._initial_state(X, constraints, self.random_state)
        return X, constraints, centres, seed_labels

    def _engine_constraints(self, constraints):
        """The constraints the engine clusters with: none for the unconstrained estimators
        (LKM, SKM), which use them only for Seeding."""
        return constraints if self._constrained else _no_constraints(constraints.n_samples)

    def _store(self, *, labels, centers, weights, n_iter, status, objective, initial_centers,
               n_empty_events):
        """Set the fitted attributes common to every estimator; warn on a failed fit."""
        self.labels_ = np.asarray(labels, dtype=np.int64)
        self.cluster_centers_ = centers
        self.weights_ = weights
        self.n_iter_ = int(n_iter)
        self.status_ = STATUS_NAMES[int(status)]
        self.objective_ = float(objective)
        self.initial_centers_ = initial_centers
        self.n_empty_events_ = int(n_empty_events)
        if int(status) in FAILED:
            warnings.warn(
                f"{type(self).__name__} failed with status {self.status_!r} after "
                f"{self.n_iter_} iterations; labels_ are kept for inspection, weights_ and "
                "objective_ are NaN", ClusteringFailedWarning, stacklevel=4,
            )

    def fit(self, X, y=None, *, must_link=None, cannot_link=None):
        """Cluster X; ``must_link``/``cannot_link`` are (m, 2) arrays of 0-based row pairs.

        ``y`` is ignored. An algorithmic failure does not raise: it sets ``status_`` and
        emits a :class:`ClusteringFailedWarning`.
        """
        X, constraints, centres, seed_labels = self._fit_input(X, must_link, cannot_link)
        self._run_engine(X, constraints, centres, seed_labels)
        return self

    def fit_predict(self, X, y=None, *, must_link=None, cannot_link=None):
        """Fit and return ``labels_``."""
        return self.fit(X, must_link=must_link, cannot_link=cannot_link).labels_

    def predict(self, X):
        """Nearest fitted centre in the estimator's metric, lowest index on ties.

        The distance is ``sum_m weights_m (x_m - c_m)^2`` to the rows of ``cluster_centers_``
        (weights one for LloydKMeans/PCKMeans, the metric diagonal for MPCKMeans, the feature
        weights for the sparse estimators: the squared distance in Z = X sqrt(w) under the
        final w). Constraints play no part, so on the training data this can differ from
        ``labels_`` for the constrained estimators (and, for the sparse ones, where the last
        weight update moved w). Raises ``ValueError`` after a failed fit.
        """
        check_is_fitted(self)
        X = self._check_X(X, reset=False)
        if self.status_ in ("empty_cluster", "degenerate_weights"):
            raise ValueError(f"cannot predict: the fit failed with status {self.status_!r}")
        distances = np.zeros((X.shape[0], self.n_clusters))
        for m in range(X.shape[1]):
            diff = X[:, m, None] - self.cluster_centers_[None, :, m]
            distances += self.weights_[m] * diff * diff
        return np.argmin(distances, axis=1).astype(np.int64)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        tags.non_deterministic = False
        return tags

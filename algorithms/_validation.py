"""Input checks shared by every estimator and function of the package.

Each check raises a ``ValueError`` that names the offending argument, and returns the
input converted to the form the numeric kernels expect (C-contiguous float64 or int64).
"""

import numbers

import numpy as np


def plain(value):
    """``value`` for an error message: NumPy scalars and arrays as Python numbers and lists
    (``10.0``, not ``np.float64(10.0)``), also inside tuples and lists."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    if isinstance(value, tuple | list):
        return type(value)(plain(v) for v in value)
    return value


def check_data(X, *, name="X"):
    """Return X as a C-contiguous float64 (n, p) array; reject non-2D, empty, NaN or inf.

    Integer inputs (the paper's digits are uint8) are converted before any arithmetic.
    """
    X = np.asarray(X)
    if X.dtype == object or not (
        np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.bool_)
    ):
        raise ValueError(f"{name} must be numeric; got dtype {X.dtype}")
    if np.iscomplexobj(X):
        raise ValueError(f"{name} must be real-valued; got complex dtype {X.dtype}")
    if X.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_samples, n_features); got {X.ndim}-D "
            f"array of shape {X.shape}"
        )
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {X.shape}")
    X = np.ascontiguousarray(X, dtype=np.float64)
    if not np.isfinite(X).all():
        bad = np.argwhere(~np.isfinite(X))[0]
        raise ValueError(
            f"{name} contains NaN or infinity (first at row {bad[0]}, column {bad[1]})"
        )
    return X


def check_n_clusters(n_clusters, X):
    """Check 2 <= n_clusters <= number of distinct rows of X."""
    if isinstance(n_clusters, bool) or not isinstance(n_clusters, numbers.Integral):
        raise ValueError(f"n_clusters must be an integer; got {plain(n_clusters)!r}")
    if n_clusters < 2:
        raise ValueError(f"n_clusters must be at least 2; got {n_clusters}")
    n_distinct = np.unique(X, axis=0).shape[0]
    if n_clusters > n_distinct:
        raise ValueError(
            f"n_clusters={n_clusters} is larger than the number of distinct rows of X "
            f"({n_distinct})"
        )
    return int(n_clusters)


def check_sparsity(sparsity, n_features, *, name="sparsity"):
    """Check 1 < s <= sqrt(p) (the L1 bound of the sparse weights), for a scalar or a grid."""
    values = np.atleast_1d(np.asarray(sparsity, dtype=np.float64))
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name} must be a number or a non-empty 1-D sequence of numbers")
    upper = np.sqrt(n_features)
    bad = ~np.isfinite(values) | (values <= 1.0) | (values > upper * (1 + 1e-12))
    if bad.any():
        raise ValueError(
            f"{name} must lie in (1, sqrt(n_features)] = (1, {upper:.6g}] for "
            f"n_features={n_features}; got {plain(values[bad][0])!r}"
        )
    return values


def check_centers(centers, n_clusters, n_features, *, name="init"):
    """Check a user-given (k, p) array of initial centres."""
    centers = check_data(centers, name=name)
    if centers.shape != (n_clusters, n_features):
        raise ValueError(
            f"{name} array must have shape (n_clusters, n_features) = "
            f"({n_clusters}, {n_features}); got {centers.shape}"
        )
    return centers


def check_choice(value, name, options):
    """Check that a string parameter is one of the allowed options."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {sorted(options)}; got {plain(value)!r}")
    return value


def check_positive_int(value, name):
    if type(value) is int and value >= 1:  # the usual case, without the slower ABC check
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {plain(value)!r}")
    return int(value)

"""Reading one of the authors' ``.mat`` files (docs/method/datasets.md §2)."""

import numpy as np


def relabel(labels, *, name="labels"):
    """Labels as int64 0..L-1 by sorted unique value (MWM's 1/3/8 -> 0/1/2), and the
    original values in that order."""
    labels = np.asarray(labels)
    if labels.ndim == 2 and 1 in labels.shape:
        labels = labels.reshape(-1)
    if labels.ndim != 1:
        raise ValueError(f"{name} must be a vector; got shape {labels.shape}")
    if not (np.issubdtype(labels.dtype, np.integer) or np.issubdtype(labels.dtype, np.floating)):
        raise ValueError(f"{name} must be numeric; got dtype {labels.dtype}")
    if np.issubdtype(labels.dtype, np.floating):
        if not np.isfinite(labels).all() or (labels != np.round(labels)).any():
            raise ValueError(f"{name} must hold whole numbers")
    values, y = np.unique(labels, return_inverse=True)
    return y.astype(np.int64), values


def check_features(x, *, name="x"):
    """``x`` as float64 (converted BEFORE any arithmetic: the digits are uint8); reject a
    non-2-D, empty, non-numeric array or NaN/Inf."""
    x = np.asarray(x)
    if not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)):
        raise ValueError(f"{name} must be numeric; got dtype {x.dtype}")
    if x.ndim != 2 or 0 in x.shape:
        raise ValueError(f"{name} must be a non-empty (n, p) matrix; got shape {x.shape}")
    x = np.ascontiguousarray(x, dtype=np.float64)
    if not np.isfinite(x).all():
        row, col = np.argwhere(~np.isfinite(x))[0]
        raise ValueError(f"{name} contains NaN or Inf (row {row}, column {col}, 0-based)")
    return x


def read_labelled_mat(path):
    """``(X, y, label_values)`` from the variables ``x`` (n x p) and ``x_labs`` (n x 1).

    No scaling or centring; other variables (``constr``, ``constraints``) are ignored.
    """
    import scipy.io  # not at start-up (pcskm.runner.cli)

    contents = scipy.io.loadmat(path, variable_names=["x", "x_labs"])
    for variable in ("x", "x_labs"):
        if variable not in contents:
            raise ValueError(f"{path} has no variable '{variable}' (expected 'x' and 'x_labs')")
    X = check_features(contents["x"], name=f"{path}: x")
    y, values = relabel(contents["x_labs"], name=f"{path}: x_labs")
    if len(y) != X.shape[0]:
        raise ValueError(
            f"{path}: x has {X.shape[0]} rows but x_labs has {len(y)} labels"
        )
    return X, y, values

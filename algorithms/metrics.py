"""Scores of a clustering against true classes (spec ``protocol.md`` §8.1)."""

import numpy as np


def _as_labels(labels, name):
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got shape {labels.shape}")
    if labels.size == 0:
        raise ValueError(f"{name} is empty")
    if labels.dtype.kind == "f" and not np.isfinite(labels).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return labels


def _codes(labels):
    """Labels as codes 0..L-1 (any label values), and L."""
    if labels.dtype.kind in "iu":
        low, high = int(labels.min()), int(labels.max())
        if low >= 0 and high < 2 * labels.size:  # small non-negative integers: use them as codes
            return labels.astype(np.intp, copy=False), high + 1
    values, codes = np.unique(labels, return_inverse=True)
    return codes, len(values)


def _n_pairs(counts, total):
    """sum_i C2(counts_i) = (sum counts_i^2 - total) / 2, total = sum counts_i."""
    return (int(counts @ counts) - total) // 2


def pairwise_f_score(labels_true, labels_pred):
    """Pairwise F-score, precision and recall: ``(f, precision, recall)`` (protocol §8.1).

    A pair of points is a true positive when both labelings put it together. From the
    contingency table n_gh: TP = sum C2(n_gh), TP + FP = sum_h C2(a_h), TP + FN =
    sum_g C2(b_g). When TP = 0 all three scores are 0 (also when a denominator is 0, e.g.
    every predicted cluster a singleton), as in the authors' ``cl_FmeasureCL.m``.
    Label values are arbitrary and need not match between the two labelings.
    """
    true = _as_labels(labels_true, "labels_true")
    pred = _as_labels(labels_pred, "labels_pred")
    if true.shape != pred.shape:
        raise ValueError(
            f"labels_true and labels_pred must have the same length; got {true.size} and "
            f"{pred.size}"
        )
    g, n_true = _codes(true)
    h, n_pred = _codes(pred)
    contingency = np.bincount(g * n_pred + h, minlength=n_true * n_pred)
    n = true.size
    tp = _n_pairs(contingency, n)
    if tp == 0:
        return 0.0, 0.0, 0.0
    precision = tp / _n_pairs(np.bincount(h), n)
    recall = tp / _n_pairs(np.bincount(g), n)
    return 2 * precision * recall / (precision + recall), precision, recall

"""Scores of a clustering against true classes (docs/method/protocol.md §8.1)."""

from typing import NamedTuple

import numpy as np

from ._jit import kernel


class PairwiseFScore(NamedTuple):
    """The pairwise scores of one labeling (a tuple: ``f, precision, recall = ...`` works)."""

    f_score: float
    precision: float
    recall: float


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
    """Pairwise F-score, precision and recall (docs/method/protocol.md §8.1): a
    :class:`PairwiseFScore` ``(f_score, precision, recall)``.

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
        return PairwiseFScore(0.0, 0.0, 0.0)
    precision = tp / _n_pairs(np.bincount(h), n)
    recall = tp / _n_pairs(np.bincount(g), n)
    return PairwiseFScore(2 * precision * recall / (precision + recall), precision, recall)


@kernel
def _f_score_rows(true_codes, n_true, pred, out):
    """:func:`pairwise_f_score` of every row of ``pred`` into ``out`` (S, 3); returns False,
    writing nothing, if a label of ``pred`` is negative (they are used as codes).

    The same integer pair counts, and the same float operations on them (the counts are
    exact in float64), as the one-row function: bit-identical results.
    """
    n_rows, n = pred.shape
    for r in range(n_rows):
        for i in range(n):
            if pred[r, i] < 0:
                return False
    true_counts = np.zeros(n_true, dtype=np.int64)
    for i in range(n):
        true_counts[true_codes[i]] += 1
    true_pairs = 0
    for g in range(n_true):
        true_pairs += true_counts[g] * true_counts[g]
    true_pairs = (true_pairs - n) // 2
    for r in range(n_rows):
        n_pred = 0
        for i in range(n):
            n_pred = max(n_pred, pred[r, i] + 1)
        table = np.zeros(n_true * n_pred, dtype=np.int64)
        pred_counts = np.zeros(n_pred, dtype=np.int64)
        for i in range(n):
            table[true_codes[i] * n_pred + pred[r, i]] += 1
            pred_counts[pred[r, i]] += 1
        tp = 0
        for c in range(table.shape[0]):
            tp += table[c] * table[c]
        tp = (tp - n) // 2
        if tp == 0:
            out[r, 0] = out[r, 1] = out[r, 2] = 0.0
            continue
        pred_pairs = 0
        for h in range(n_pred):
            pred_pairs += pred_counts[h] * pred_counts[h]
        pred_pairs = (pred_pairs - n) // 2
        precision = tp / pred_pairs
        recall = tp / true_pairs
        out[r, 0] = 2 * precision * recall / (precision + recall)
        out[r, 1] = precision
        out[r, 2] = recall
    return True


def pairwise_f_scores(labels_true, labels_pred_rows):
    """:func:`pairwise_f_score` of every row of ``labels_pred_rows`` (S, n) against
    ``labels_true`` (n,): an (S, 3) array of (f, precision, recall), one compiled call."""
    true = _as_labels(labels_true, "labels_true")
    rows = np.asarray(labels_pred_rows)
    if rows.ndim != 2 or rows.shape[1] != true.size:
        raise ValueError(f"labels_pred_rows must have shape (S, {true.size}); "
                         f"got {rows.shape}")
    out = np.empty((rows.shape[0], 3))
    if rows.shape[0] == 0:
        return out
    if rows.dtype.kind in "iu":
        codes, n_true = _codes(true)
        if _f_score_rows(codes.astype(np.int64, copy=False), n_true,
                         np.ascontiguousarray(rows, dtype=np.int64), out):
            return out
    for r, row in enumerate(rows):  # arbitrary label values: one by one
        out[r] = pairwise_f_score(true, row)
    return out

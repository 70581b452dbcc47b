"""Pairwise F-score (spec protocol.md §8.1) against brute-force pair counting."""

import numpy as np
import pytest

from pcskm.algorithms.metrics import pairwise_f_score, pairwise_f_scores


def brute_force(labels_true, labels_pred):
    """Count the pairs i < j one by one; TP = 0 gives all scores 0 (spec §8.1)."""
    tp = fp = fn = 0
    n = len(labels_true)
    for i in range(n):
        for j in range(i + 1, n):
            same_true = labels_true[i] == labels_true[j]
            same_pred = labels_pred[i] == labels_pred[j]
            tp += same_true and same_pred
            fp += same_pred and not same_true
            fn += same_true and not same_pred
    if tp == 0:
        return 0.0, 0.0, 0.0
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    return 2 * precision * recall / (precision + recall), precision, recall


def test_spec_example():
    f, precision, recall = pairwise_f_score([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1])
    # TP = 4, FP = 3, FN = 2
    assert precision == 4 / 7
    assert recall == 2 / 3
    assert f == pytest.approx(16 / 26, rel=1e-15)


def test_scores_are_a_named_tuple():
    """(f_score, precision, recall) by name and by unpacking (issue 13)."""
    scores = pairwise_f_score([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1])
    assert (scores.f_score, scores.precision, scores.recall) == tuple(scores)
    f, precision, recall = scores
    assert (precision, recall) == (4 / 7, 2 / 3)
    assert scores._fields == ("f_score", "precision", "recall")
    assert pairwise_f_score([0, 1, 2], [0, 0, 0]).recall == 0.0


def test_spec_example_no_true_positive():
    assert pairwise_f_score([0, 1, 2], [0, 0, 0]) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize(
    ("labels_true", "labels_pred"),
    [
        ([0], [0]),  # no pairs at all
        ([0, 1, 2, 3], [0, 1, 2, 3]),  # TP = FP = FN = 0
        ([0, 0, 1, 1], [0, 1, 2, 3]),  # every predicted cluster a singleton: TP + FP = 0
        ([0, 1, 2, 3], [0, 0, 1, 1]),  # every class a singleton: TP + FN = 0
    ],
)
def test_zero_true_positives_give_zero(labels_true, labels_pred):
    assert pairwise_f_score(labels_true, labels_pred) == (0.0, 0.0, 0.0)


def test_perfect_agreement_under_relabelling():
    labels = np.array([0, 0, 1, 1, 1, 2])
    assert pairwise_f_score(labels, np.array([7, 7, 3, 3, 3, -2])) == (1.0, 1.0, 1.0)


def random_labels(rng, n, kind):
    n_values = int(rng.integers(1, 7))
    codes = rng.integers(0, n_values, size=n)
    if kind == "codes":
        return codes
    if kind == "sparse":  # non-negative integers far above n
        return rng.choice(1000, size=n_values, replace=False)[codes]
    if kind == "negative":
        return codes - 3
    if kind == "float":
        return codes * 0.5 + 0.25
    return np.array(["a", "b", "c", "d", "e", "f"])[codes]


@pytest.mark.parametrize("kind", ["codes", "sparse", "negative", "float", "str"])
def test_matches_brute_force(kind):
    rng = np.random.default_rng(20240 + len(kind))
    for _ in range(150):
        n = int(rng.integers(1, 40))
        labels_true = random_labels(rng, n, kind)
        labels_pred = random_labels(rng, n, "codes" if rng.random() < 0.5 else kind)
        expected = brute_force(labels_true.tolist(), labels_pred.tolist())
        assert pairwise_f_score(labels_true, labels_pred) == expected, (labels_true, labels_pred)


def test_accepts_lists_and_uint8():
    y = np.array([1, 1, 5, 5, 8], dtype=np.uint8)
    z = [2, 2, 2, 0, 0]
    assert pairwise_f_score(y, z) == brute_force(y.tolist(), z)


@pytest.mark.parametrize(
    ("labels_true", "labels_pred", "message"),
    [
        ([0, 1, 1], [0, 1], "same length"),
        ([], [], "empty"),
        ([[0, 1]], [[0, 1]], "1-D"),
        ([0, 1], [0.0, np.nan], "NaN"),
    ],
)
def test_bad_input(labels_true, labels_pred, message):
    with pytest.raises(ValueError, match=message):
        pairwise_f_score(labels_true, labels_pred)


@pytest.mark.parametrize("kind", ["codes", "sparse", "negative", "float"])
def test_rows_match_brute_force(kind):
    """``pairwise_f_scores`` (one compiled call for integer codes >= 0, else row by row),
    row by row against brute force."""
    rng = np.random.default_rng(7 + len(kind))
    for _ in range(40):
        n, n_rows = int(rng.integers(1, 30)), int(rng.integers(1, 6))
        labels_true = random_labels(rng, n, "codes")
        rows = np.array([random_labels(rng, n, kind) for _ in range(n_rows)])
        expected = [list(brute_force(labels_true.tolist(), row.tolist())) for row in rows]
        assert pairwise_f_scores(labels_true, rows).tolist() == expected
    assert pairwise_f_scores([0, 1], np.empty((0, 2), dtype=np.int64)).shape == (0, 3)
    with pytest.raises(ValueError, match=r"shape \(S, 3\)"):
        pairwise_f_scores([0, 1, 1], np.zeros((2, 4), dtype=np.int64))

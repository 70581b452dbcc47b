"""Numba kernels of the selection scores (docs/method/selection.md): the held-out F-measures
of constraint cross-validation (§2.3) and the observed objective of the gap statistic
(§3.1), one compiled call per path instead of Python per s."""

import numpy as np

from ._jit import kernel, kernel_checked_divisors
from ._sparse import scores_into


@kernel
def same_row(table, a, b):
    """Whether rows ``a`` and ``b`` of ``table`` are equal entry for entry (NaN equal to
    nothing): the s of a path whose run is a copy of another's (algorithms.md §4.2) have the
    same labels and weights, and the scores of a row are a function of the row alone."""
    for j in range(table.shape[1]):
        if table[a, j] != table[b, j]:
            return False
    return True


@kernel_checked_divisors
def mean_and_sd_columns(values):
    """``(mean, sd, count)`` over axis 0 of the non-NaN entries of ``values`` (r, n): the
    mean (0.0 / 0, NaN, without an entry), R's sd (denominator count - 1; NaN below two
    entries) and the count. The sums run down each column from row 0, a NaN entry adding
    0.0 (from 0.0 itself), as NumPy's ``np.where(~np.isnan(values), values, 0.0)
    .sum(axis=0)`` adds the rows, so the same bits."""
    n_rows, n = values.shape
    mean = np.empty(n)
    sd = np.full(n, np.nan)
    count = np.zeros(n, dtype=np.int64)
    for j in range(n):
        total = 0.0
        for i in range(n_rows):
            value = values[i, j]
            if np.isnan(value):
                value = 0.0
            else:
                count[j] += 1
            total = value if i == 0 else total + value
        mean[j] = total / count[j]  # 0.0 / 0: the machine's NaN, as NumPy's division
        if count[j] < 2:
            continue
        squares = 0.0
        for i in range(n_rows):
            value = values[i, j]
            square = 0.0 if np.isnan(value) else (value - mean[j]) * (value - mean[j])
            squares = square if i == 0 else squares + square
        sd[j] = np.sqrt(squares / count[j] * count[j] / (count[j] - 1))
    return mean, sd, count


@kernel
def fold_f_measures(labels, pairs, is_must_link, fold, n_folds):
    """(n_s, n_folds) CVCP F-measure (§2.3) of each fold's constraints under each row of
    ``labels`` (n_s, n); ``fold`` is the fold of each constraint of ``pairs``. With TP_ML the
    fold's must-links kept together, FP_ML its cannot-links put together, n_ML and n_CL its
    sizes: F_ML = 2 TP_ML / (n_ML + TP_ML + FP_ML), F_CL = 2 TP_CL / (n_CL + TP_CL + FP_CL)
    with TP_CL = n_CL - FP_ML and FP_CL = n_ML - TP_ML; the score is the mean over the
    classes present in the fold."""
    n_s = labels.shape[0]
    size = np.zeros((n_folds, 2), dtype=np.int64)
    for c in range(pairs.shape[0]):
        size[fold[c], 0 if is_must_link[c] else 1] += 1
    together = np.empty((n_folds, 2), dtype=np.int64)
    out = np.empty((n_s, n_folds))
    for s in range(n_s):
        if s > 0 and same_row(labels, s, s - 1):  # a copied run of the path: same scores
            out[s] = out[s - 1]
            continue
        together[:] = 0
        for c in range(pairs.shape[0]):
            if labels[s, pairs[c, 0]] == labels[s, pairs[c, 1]]:
                together[fold[c], 0 if is_must_link[c] else 1] += 1
        for f in range(n_folds):
            n_must, n_cannot = size[f, 0], size[f, 1]
            kept_together, put_together = together[f, 0], together[f, 1]
            kept_apart = n_cannot - put_together
            total = 0.0
            present = 0
            if n_must > 0:
                total += 2 * kept_together / (n_must + kept_together + put_together)
                present += 1
            if n_cannot > 0:
                total += 2 * kept_apart / (n_cannot + kept_apart + n_must - kept_together)
                present += 1
            out[s, f] = total / present
    return out


@kernel
def weighted_bcss(X, labels, weights, failed, k, tss):
    """O(s) = sum_j w_j BCSS_j (§3.1) of each row of ``labels`` (n_s, n) with its row of
    ``weights`` (n_s, p), BCSS_j = TSS_j - WCSS_j (algorithms.md §4.3, ``tss`` = TSS); NaN
    for a ``failed`` s. BCSS is computed once per distinct row of labels (the s of a path
    often share them); the sum over j runs in ascending order."""
    n_s, n = labels.shape
    p = X.shape[1]
    no_pairs = np.empty((0, 2), dtype=np.int64)
    no_links = np.empty(0, dtype=np.bool_)
    no_box = np.empty(0)
    bcss = np.empty((n_s, p))
    first = np.empty(n_s, dtype=np.int64)  # the distinct rows so far, by first appearance
    n_distinct = 0
    objective = np.full(n_s, np.nan)
    for s in range(n_s):
        if failed[s]:
            continue
        match = -1
        for d in range(n_distinct):
            row = first[d]
            same = True
            for i in range(n):
                if labels[row, i] != labels[s, i]:
                    same = False
                    break
            if same:
                match = row
                break
        if match < 0:
            scores_into(bcss[s], X, labels[s], k, tss, no_pairs, no_links, no_box, False)
            first[n_distinct] = s
            n_distinct += 1
            match = s
        total = 0.0
        for j in range(p):
            total += weights[s, j] * bcss[match, j]
        objective[s] = total
    return objective


@kernel
def best_index_rows(scores, usable, tie_scores, rank_rule, out):
    """Per row of ``scores`` (m, n_s), into ``out`` (m,): the position of the largest
    non-NaN score, -1 where every score is NaN (docs/method/selection.md §1). A score whose
    entry of ``usable`` (an (m, n_s) bool array, or a (0, 0) one for all) is False counts as
    NaN. The positions that tie exactly with it keep only those with the largest non-NaN
    ``tie_scores`` (an (m, n_s) array, or a (0, 0) one for none), if any has one; of those
    left, ``rank_rule`` 0 takes the first, 1 the last, 2 the lower median."""
    m, n = scores.shape
    masked = usable.shape[0] > 0
    has_tie_scores = tie_scores.shape[0] > 0
    for i in range(m):
        found = False
        top = -np.inf
        for j in range(n):
            value = scores[i, j]
            if (not masked or usable[i, j]) and not np.isnan(value) and (
                    not found or value > top):
                top, found = value, True
        if not found:
            out[i] = -1
            continue
        broken = False  # a tied position has a tie score: the largest keeps its positions
        top_tie = -np.inf
        if has_tie_scores:
            for j in range(n):
                value = tie_scores[i, j]
                tied = (not masked or usable[i, j]) and scores[i, j] == top
                if tied and not np.isnan(value) and (not broken or value > top_tie):
                    top_tie, broken = value, True
        n_tied = 0
        for j in range(n):
            if (not masked or usable[i, j]) and scores[i, j] == top and (
                    not broken or tie_scores[i, j] == top_tie):
                n_tied += 1
        rank = 0 if rank_rule == 0 else (n_tied - 1 if rank_rule == 1 else (n_tied - 1) // 2)
        for j in range(n):
            if (not masked or usable[i, j]) and scores[i, j] == top and (
                    not broken or tie_scores[i, j] == top_tie):
                if rank == 0:
                    out[i] = j
                    break
                rank -= 1


@kernel
def top_counts_rows(scores, usable, n_top, n_scored):
    """Per row of ``scores`` (m, n_s), a score counting only where ``usable`` (an (m, n_s)
    bool array) is True and it is not NaN: into ``n_top`` (m,) how many scores equal the
    largest (the s a tie rule chooses among, docs/method/selection.md §1; 0 without a score),
    into ``n_scored`` (m,) how many there are."""
    m, n = scores.shape
    for i in range(m):
        top = -np.inf
        count = 0
        tied = 0
        for j in range(n):
            value = scores[i, j]
            if not usable[i, j] or np.isnan(value):
                continue
            count += 1
            if count == 1 or value > top:
                top, tied = value, 1
            elif value == top:
                tied += 1
        n_top[i] = tied
        n_scored[i] = count


@kernel
def squared_differences(X, pairs):
    """(m, p) squared differences (x_aj - x_bj)^2 of the rows of each pair (a, b) of ``pairs``
    (m, 2) of ``X`` (n, p) (§7.1), written once into one array: NumPy's ``(X[a] - X[b]) ** 2``
    makes three temporaries of that size, whose pages the system maps afresh at each cell.
    The same IEEE subtraction and product, so the same bits."""
    m, p = pairs.shape[0], X.shape[1]
    out = np.empty((m, p))
    for c in range(m):
        a, b = pairs[c, 0], pairs[c, 1]
        for j in range(p):
            difference = X[a, j] - X[b, j]
            out[c, j] = difference * difference
    return out


@kernel
def sorted_pairs_auc(must, cannot):
    """(r,) AUC (§7.1) of each row of the must-links' and the cannot-links' weighted squared
    distances, each row sorted in ascending order (``must`` (r, n_ML), ``cannot`` (r, n_CL)):
    the Mann-Whitney count of (cannot-link, must-link) pairs of pairs whose cannot-link is
    the farther, ties counted 1/2, made by one merge of the two sorted rows, over
    n_CL n_ML. The count is exact, so the quotient is the same IEEE division whatever the
    order of the pairs. Needs both kinds of pairs."""
    n_rows, n_must = must.shape
    n_cannot = cannot.shape[1]
    auc = np.empty(n_rows)
    for row in range(n_rows):
        # 2 x (must-links below) + (must-links tied), summed over the cannot-links in
        # ascending order: the must-links below v and up to v only grow with v
        twice_count = 0
        below = up_to = 0
        for c in range(n_cannot):
            v = cannot[row, c]
            while below < n_must and must[row, below] < v:
                below += 1
            while up_to < n_must and must[row, up_to] <= v:
                up_to += 1
            twice_count += below + up_to
        auc[row] = twice_count / (2.0 * n_must * n_cannot)
    return auc

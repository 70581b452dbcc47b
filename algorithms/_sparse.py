"""The sparse engine of SKM and PCSKM (docs/method/algorithms.md §4): feature scores (§4.3),
clipping (§4.4), the exact L1 threshold Delta (§4.5), and the weight / clustering loop (§4.2)
run over a grid of sparsity values.

Steps 1-2 of §4.2 (the uniform weights and the first PCKM clustering on X) do not depend on
s, so ``sparse_path`` does them once; step 3 runs for every s inside one compiled loop
(``sparse_path_from``). A single fit is the path with one s, so a path and separate fits
give identical results.

Arithmetic follows the spec literally (Z = X * sqrt(w) and squared distances from coordinate
differences in Z, the box on Z, scores from the unweighted X), and the results are the same
bits as that literal computation. The speed comes from:

* one compiled call for the whole grid, and the s-independent pieces (TSS, the box on X, the
  first clustering and its scores) computed once per path;
* dropping the features with w_m = 0 from Z. Such a column of Z is all +-0, its centroid
  entries are +0, and every term it would add to a distance, a box diameter or a pair
  distance is exactly +0, so sums over the remaining features in ascending order are
  bit-identical to the full sums. At small s most weights are 0 (tested against the plain
  reference, which computes the full Z);
* pair distances four constraints at a time (``_kernels.pair_sq_distances_into``, same sums);
* in the PCKM runs, each point's penalties kept from pass to pass and its partners walked
  only where rounding could decide its choice (``_kernels.assign_sequential_kept``, the same
  labels; the objective of the runs of step 3a, which it does not use, is not computed);
* the runs of the large s values that never use s (every weight update in the Delta = 0
  branch of §4.5) computed once and copied (see ``sparse_path_from``);
* a run whose labels come back to those of an earlier weight iteration is periodic from
  there on, and its remaining iterations are copied, not recomputed (see ``sparse_path_from``);
* the feature scores of a labeling met again in the path (often the previous iteration's or
  the first clustering's) are copied, not recomputed (``SCORE_MEMO``);
* the paths of one cell (its inits, both score variants) and its PCKM fits share their first
  clusterings, and a path whose first clustering an earlier one reached is copied from it
  (:class:`FitCache`).
* a run of one s whose labelings violate no constraint is the same run in both score
  variants (§4.3: "paper" subtracts only the violated constraints' terms); a path of one
  variant copies such runs from the other's path of the same first clustering (the ``twin``
  of ``sparse_path_from``, through :class:`FitCache`).
"""

import functools
import math
from typing import NamedTuple

import numpy as np

from ._jit import kernel
from ._kernels import (
    box_corners,
    box_diameters,
    cluster_means,
    cluster_means_into,
    constraint_costs_into,
    pair_sq_distances_into,
)
from ._pckm import pckm_fit, pckm_loop
from ._result import (
    CONVERGED,
    DEGENERATE_WEIGHTS,
    EMPTY_CLUSTER,
    MAX_ITER,
    empty_cluster_code,
)
from ._validation import check_choice, check_data, check_positive_int, plain

WEIGHT_UPDATES = ("code", "paper")
SCORE_MEMO = 8  # labelings whose feature scores a path keeps (sparse_path_from)


@kernel
def total_sum_of_squares(X):
    """TSS_j = sum_i (x_ij - mean_i x_ij)^2 (§4.3), sums in index order."""
    n, p = X.shape
    mean = np.zeros(p)
    for i in range(n):
        for m in range(p):
            mean[m] += X[i, m]
    for m in range(p):
        mean[m] /= n
    tss = np.zeros(p)
    for i in range(n):
        for m in range(p):
            diff = X[i, m] - mean[m]
            tss[m] += diff * diff
    return tss


@kernel
def scores_into(out, X, labels, k, tss, pairs, is_must_link, box, paper):
    """Write the per-feature scores gamma (§4.3) into ``out``.

    ``"code"``: TSS_j - WCSS_j. ``"paper"`` (``paper=True``): TSS_j - WCSS_j - ML_j - CL_j,
    where ML_j and CL_j sum over the constraints violated under ``labels``, each once, and
    ``box`` holds (hi_j - lo_j)^2 on X. WCSS sums over i in index order; a one-point cluster
    adds exactly 0 (D3).
    """
    n, p = X.shape
    means, counts = cluster_means(X, labels, k)
    for m in range(p):
        out[m] = 0.0
    for i in range(n):
        h = labels[i]
        for m in range(p):
            diff = X[i, m] - means[h, m]
            out[m] += diff * diff
    if not paper:
        for m in range(p):
            out[m] = tss[m] - out[m]
        return
    ml = np.zeros(p)
    cl = np.zeros(p)
    for c in range(pairs.shape[0]):
        la = labels[pairs[c, 0]]
        lb = labels[pairs[c, 1]]
        if is_must_link[c]:
            if la != lb:
                for m in range(p):
                    diff = X[pairs[c, 0], m] - X[pairs[c, 1], m]
                    ml[m] += diff * diff
        elif la == lb:
            for m in range(p):
                diff = X[pairs[c, 0], m] - X[pairs[c, 1], m]
                cl[m] += box[m] - diff * diff
    for m in range(p):
        out[m] = tss[m] - out[m] - ml[m] - cl[m]


@kernel
def l1_l2_ratio(g):
    """``|g|_1 / |g|_2`` (sums in index order): Delta = 0 exactly when it is <= s (§4.5)."""
    l1 = 0.0
    l2 = 0.0
    for j in range(g.shape[0]):
        l1 += g[j]
        l2 += g[j] * g[j]
    return l1 / np.sqrt(l2)


@kernel
def solve_delta_sorted(g, s):
    """§4.5 on clipped scores ``g`` (>= 0, not all 0): returns ``(Delta, t_limit)``.

    ``t_limit`` is 0 normally; in the LIMIT case (s^2 <= t, t exactly tied maximal scores)
    it is t and Delta is max g (the value the bisection converges to).
    """
    if l1_l2_ratio(g) <= s:
        return 0.0, 0
    return delta_above_ratio(g, s)


@kernel
def delta_above_ratio(g, s):
    """:func:`solve_delta_sorted` when ``l1_l2_ratio(g) > s``."""
    p = g.shape[0]
    c = np.zeros(p + 1)  # the scores in descending order, then 0
    c[:p] = g
    c[:p].sort()  # in place, no copy; g holds no NaN (clipped at 0)
    for q in range(p // 2):
        c[q], c[p - 1 - q] = c[p - 1 - q], c[q]
    t = 1
    while t < p and c[t] == c[0]:
        t += 1
    s2 = s * s
    if s2 <= t:
        return c[0], t
    r = t
    while r <= p:
        if c[r - 1] != c[r]:
            sum_h = 0.0
            sum_h2 = 0.0
            for q in range(r):
                h = c[q] - c[r]
                sum_h += h
                sum_h2 += h * h
            if sum_h / np.sqrt(sum_h2) >= s:
                break
        r += 1
    mbar = 0.0
    for q in range(r):
        mbar += c[q]
    mbar /= r
    v = 0.0
    for q in range(r):
        diff = c[q] - mbar
        v += diff * diff
    v /= r
    delta = mbar - s * np.sqrt(v / (r - s2))
    return min(max(delta, c[r]), c[r - 1]), 0


@kernel
def weights_into(w, g, s):
    """w = max(g - Delta, 0) / |.|_2 (§4.2 step 3d; 1/sqrt(t) on the t maxima if LIMIT).

    Returns ``l1_l2_ratio(g)``: w depends on s only when that ratio exceeds s.
    """
    p = g.shape[0]
    ratio = l1_l2_ratio(g)
    delta, t_limit = (0.0, 0) if ratio <= s else delta_above_ratio(g, s)
    if t_limit > 0:
        top = g.max()
        value = 1.0 / np.sqrt(t_limit)
        for j in range(p):
            w[j] = value if g[j] == top else 0.0
        return ratio
    norm = 0.0
    for j in range(p):
        u = g[j] - delta
        u = u if u > 0.0 else 0.0
        w[j] = u
        norm += u * u
    norm = np.sqrt(norm)
    for j in range(p):
        w[j] /= norm
    return ratio


@kernel
def box_of_scaled(low, high, active, root_w, q):
    """D_max (§1.1) of Z = X * sqrt(w) on its q active features, from the corners of the box
    on X (:func:`box_corners`): feature j of Z spans [low_m * r_j, high_m * r_j] with
    m = active[j] and r_j = sqrt(w_m) > 0, because rounding x * r is monotone in x for
    r > 0, so the extreme entries of a Z column are the scaled extremes of the X column
    (and 0 * r = 0). The sum runs over j in ascending order, as ``box_diameters(Z).sum()``
    does, so the value is bit for bit the one computed on Z itself."""
    total = 0.0
    for j in range(q):
        m = active[j]
        span = high[m] * root_w[j] - low[m] * root_w[j]
        total += span * span
    return total


@kernel
def labels_hash(labels):
    """FNV-1a over the labels: what :func:`find_labels` compares before the labels."""
    state = np.uint64(14695981039346656037)
    for i in range(labels.shape[0]):
        state = (state ^ np.uint64(labels[i])) * np.uint64(1099511628211)
    return state


@kernel
def find_labels(table, hashes, start, stop, labels, h):
    """The first row j in [start, stop) of ``table`` equal to ``labels``, or -1; the hashes
    (``hashes[j]``, ``h``: :func:`labels_hash`) are compared first."""
    for j in range(start, stop):
        if hashes[j] == h:
            same = True
            for i in range(labels.shape[0]):
                if table[j, i] != labels[i]:
                    same = False
                    break
            if same:
                return j
    return -1


@kernel
def satisfies_all(labels, pairs, is_must_link):
    """True when ``labels`` violate no constraint: then the scores of both variants (§4.3)
    are the same bits, ``"paper"``'s ML_j and CL_j being sums of nothing (x - 0.0 is x)."""
    for c in range(pairs.shape[0]):
        if (labels[pairs[c, 0]] == labels[pairs[c, 1]]) != is_must_link[c]:
            return False
    return True


@kernel
def copy_run(out, si, source, sj):
    """Row ``si`` of every array of ``out`` := row ``sj`` of ``source`` (both the eleven
    per-s arrays of :func:`sparse_path_from`)."""
    out[0][si] = source[0][sj]
    out[1][si] = source[1][sj]
    out[2][si] = source[2][sj]
    out[3][si] = source[3][sj]
    out[4][si] = source[4][sj]
    out[5][si] = source[5][sj]
    out[6][si] = source[6][sj]
    out[7][si] = source[7][sj]
    out[8][si] = source[8][sj]
    out[9][si] = source[9][sj]
    out[10][si] = source[10][sj]


@kernel
def no_twin():
    """The ``twin`` of :func:`sparse_path_from` when there is none (no rows)."""
    return (np.empty((0, 0), dtype=np.int64), np.empty((0, 0)), np.empty((0, 0, 0)),
            np.empty((0, 0, 0)), np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64),
            np.empty(0), np.empty((0, 0), dtype=np.int64), np.empty(0, dtype=np.int64),
            np.empty(0, dtype=np.bool_), np.empty(0))


@kernel
def sparse_path(
    X, C0, pairs, is_must_link, indptr, partner, entries, sparsities, paper,
    max_iter, inner_max_iter, tol, policy,
):
    """§4.2 for every s in ``sparsities``: step 2 (the first PCKM clustering on the unweighted
    X, from ``C0``) once, then :func:`sparse_path_from`."""
    first_labels, first_centers, first_iter, first_status, _, first_empty = pckm_fit(
        X, C0, pairs, is_must_link, indptr, partner, entries, inner_max_iter, policy,
    )
    return sparse_path_from(
        X, first_labels, first_centers, first_iter, first_status, first_empty, pairs,
        is_must_link, indptr, partner, entries, sparsities, paper, max_iter, inner_max_iter, tol,
        policy, no_twin(),
    )[:9]


@kernel
def sparse_path_from(
    X, first_labels, first_centers, first_iter, first_status, first_empty, pairs,
    is_must_link, indptr, partner, entries, sparsities, paper, max_iter, inner_max_iter, tol,
    policy, twin,
):
    """§4.2 step 3 for every s in ``sparsities``, from the first clustering of step 2 (its
    labels, final centres, pass count, status and empty-cluster events, :func:`pckm_fit`).

    Returns per-s arrays ``(labels, weights, centers, weighted_centers, n_iter, status,
    objective, inner_n_iter, n_empty, clean, bound)``; ``inner_n_iter[s, r - 1]`` is the pass
    count of the PCKM run of weight iteration r (0 where no run happened). A failed s has NaN
    weights and objective; ``n_iter`` is the iteration r in which it failed (0 if the first
    clustering, which is shared by all s, failed). ``clean[s]``: every labeling whose scores
    the run of s used violates no constraint; ``bound[s]``: the s' from which that run is
    every later run (below), +inf if none.

    ``twin``: the eleven arrays of the path of the other score variant from the same first
    clustering with the same options (its ``inner_n_iter[:, 0]`` and ``n_empty`` those of
    this first clustering), or :func:`no_twin`. The two variants differ only in the scores,
    and only by the ML_j and CL_j of violated constraints (§4.3): a clean run of the twin is
    the run of this variant too (the same labels give the same scores, weights and next
    labels, iteration by iteration), and is copied.

    The first clustering enters the outputs through its labels, centres and status, except
    for ``inner_n_iter[:, 0]`` (its pass count, in every row) and ``n_empty`` (its events,
    added to every row): :class:`FitCache` relies on this.
    """
    n, p = X.shape
    k = first_centers.shape[0]
    n_s = sparsities.shape[0]
    out_labels = np.empty((n_s, n), dtype=np.int64)
    out_weights = np.empty((n_s, p))
    out_centers = np.empty((n_s, k, p))
    out_weighted = np.empty((n_s, k, p))
    out_n_iter = np.zeros(n_s, dtype=np.int64)
    out_status = np.zeros(n_s, dtype=np.int64)
    out_objective = np.full(n_s, np.nan)
    out_inner = np.zeros((n_s, max_iter), dtype=np.int64)
    out_empty = np.zeros(n_s, dtype=np.int64)
    out_clean = np.zeros(n_s, dtype=np.bool_)
    out_bound = np.full(n_s, np.inf)
    out = (out_labels, out_weights, out_centers, out_weighted, out_n_iter, out_status,
           out_objective, out_inner, out_empty, out_clean, out_bound)

    if first_status == EMPTY_CLUSTER:
        final_centers, _ = cluster_means(X, first_labels, k)
        for si in range(n_s):
            out_labels[si] = first_labels
            out_weights[si, :] = np.nan
            out_centers[si] = final_centers
            out_weighted[si] = first_centers
            out_status[si] = EMPTY_CLUSTER
            out_inner[si, 0] = first_iter
            out_empty[si] = first_empty
        return out
    costs = np.empty((2 * entries.shape[0], 2))
    XT = np.ascontiguousarray(X.T)
    tss = total_sum_of_squares(X)
    box = box_diameters(X)
    low, high = box_corners(X)
    # The scores are a function of the labels alone within a path (§4.3), and the labels of
    # a weight iteration often equal the first clustering's or those of an iteration just
    # before (of this s or the last): row 0 of the memo keeps the first clustering's
    # scores, rows 1.. those of the last SCORE_MEMO - 1 other labelings scored (a ring),
    # and a repeat is copied, bit for bit.
    memo_labels = np.empty((SCORE_MEMO, n), dtype=np.int64)
    memo_hash = np.empty(SCORE_MEMO, dtype=np.uint64)
    memo_scores = np.empty((SCORE_MEMO, p))
    memo_clean = np.empty(SCORE_MEMO, dtype=np.bool_)
    first_hash = labels_hash(first_labels)
    memo_labels[0] = first_labels
    memo_hash[0] = first_hash
    scores_into(memo_scores[0], X, first_labels, k, tss, pairs, is_must_link, box, paper)
    memo_clean[0] = satisfies_all(first_labels, pairs, is_must_link)
    n_memo = 1  # rows filled
    next_slot = 1

    labels = np.empty(n, dtype=np.int64)
    centers = np.empty((k, p))
    w = np.empty(p)
    w_new = np.empty(p)
    gamma = np.empty(p)
    g = np.empty(p)
    active = np.empty(p, dtype=np.int64)
    root_w = np.empty(p)
    # Z, its transpose and its centroids on the active features live in the first n*q, q*n
    # and k*q entries of these buffers (reshaped views, C-contiguous).
    z_buffer = np.empty(n * p)
    zt_buffer = np.empty(n * p)
    centers_buffer = np.empty(k * p)
    counts = np.empty(k, dtype=np.int64)
    pair_dist = np.empty(pairs.shape[0])
    # The state after weight iteration r, for the cycle test below (index r, 1..max_iter).
    seen_labels = np.empty((max_iter + 1, n), dtype=np.int64)
    seen_hash = np.empty(max_iter + 1, dtype=np.uint64)
    seen_weights = np.empty((max_iter + 1, p))
    seen_centers = np.empty((max_iter + 1, k, p))
    seen_objective = np.empty(max_iter + 1)
    seen_empty = np.zeros(max_iter + 1, dtype=np.int64)
    seen_labels[1] = first_labels
    seen_hash[1] = first_hash
    # A run whose every weight update had l1_l2_ratio(g) <= its s never used s: for any
    # s' >= the largest of those ratios each update takes the same Delta = 0 branch, so the
    # run for s' is the same run, bit for bit (a run that failed before any update never
    # used s either). ``free`` is the index of such a run with the smallest bound
    # ``free_bound``; its outputs are copied for every later s' >= the bound. On the paper's
    # grids this is 30-60 % of the s values (the largest ones).
    free = -1
    free_bound = np.inf
    for si in range(n_s):
        s = sparsities[si]
        if free >= 0 and free_bound <= s:
            copy_run(out, si, out, free)
            continue
        if twin[9].shape[0] == n_s and twin[9][si]:
            copy_run(out, si, twin, si)
            if out_bound[si] < free_bound:
                free = si
                free_bound = out_bound[si]
            continue
        bound = -np.inf
        shareable = True
        labels[:] = first_labels
        centers[:] = first_centers
        w[:] = 1.0 / np.sqrt(p)
        gamma[:] = memo_scores[0]
        clean = memo_clean[0]
        h = first_hash  # of the labels of iteration r
        n_empty = first_empty
        out_inner[si, 0] = first_iter
        status = MAX_ITER
        n_iter = max_iter
        objective = np.nan
        for r in range(1, max_iter + 1):
            inner_empty = 0
            if r >= 2:
                # Step 3a: recluster Z = X * sqrt(w) from the means of Z under l, on the
                # q features with w_m > 0 (the others add exact zeros, see the module doc).
                q = 0
                for m in range(p):
                    if w[m] > 0.0:
                        active[q] = m
                        root_w[q] = np.sqrt(w[m])
                        q += 1
                Z = z_buffer[:n * q].reshape((n, q))
                ZT = zt_buffer[:n * q].reshape((q, n))
                for i in range(n):  # the same products, written row by row into each
                    for j in range(q):
                        Z[i, j] = X[i, active[j]] * root_w[j]
                for j in range(q):
                    column = XT[active[j]]
                    for i in range(n):
                        ZT[j, i] = column[i] * root_w[j]
                active_centers = centers_buffer[:k * q].reshape((k, q))
                cluster_means_into(active_centers, counts, Z, labels)
                labels[:] = -1
                pair_sq_distances_into(pair_dist, Z, pairs, None)
                largest = constraint_costs_into(costs, pair_dist, is_must_link, entries,
                                                box_of_scaled(low, high, active, root_w, q))
                inner_iter, inner_status, _, inner_empty = pckm_loop(
                    Z, ZT, active_centers, labels, costs, largest, indptr, partner,
                    inner_max_iter, policy, False,
                )
                centers[:] = 0.0
                for h in range(k):
                    for j in range(q):
                        centers[h, active[j]] = active_centers[h, j]
                out_inner[si, r - 1] = inner_iter
                n_empty += inner_empty
                if inner_status == EMPTY_CLUSTER:
                    status = EMPTY_CLUSTER
                    n_iter = r
                    break
                h = labels_hash(labels)
                j = find_labels(memo_labels, memo_hash, 0, n_memo, labels, h)
                if j < 0:
                    j = next_slot
                    memo_labels[j] = labels
                    memo_hash[j] = h
                    scores_into(memo_scores[j], X, labels, k, tss, pairs, is_must_link, box,
                                paper)
                    memo_clean[j] = satisfies_all(labels, pairs, is_must_link)
                    n_memo = max(n_memo, j + 1)
                    next_slot = 1 + j % (SCORE_MEMO - 1)
                gamma[:] = memo_scores[j]
                clean = clean and memo_clean[j]
            # Steps 3b-3f.
            positive = False
            for m in range(p):
                g[m] = gamma[m] if gamma[m] > 0.0 else 0.0
                if g[m] > 0.0:
                    positive = True
            if not positive:
                status = DEGENERATE_WEIGHTS
                n_iter = r
                break
            ratio = weights_into(w_new, g, s)
            if ratio <= s:  # False for a NaN ratio (overflowing scores): never shared
                bound = max(bound, ratio)
            else:
                shareable = False
            change = 0.0
            size = 0.0
            objective = 0.0
            for m in range(p):
                change += abs(w_new[m] - w[m])
                size += abs(w[m])
                w[m] = w_new[m]
                objective += w[m] * gamma[m]
            if change / size <= tol:
                status = CONVERGED
                n_iter = r
                break
            # The weights after iteration r are a function of its labels alone (the scores
            # gamma depend on X and the labels only), and iteration r + 1 is a function of
            # those labels and weights. So if the labels of iteration r equal those of an
            # earlier iteration j, iteration r + m repeats iteration j + m for every m >= 1:
            # the run is periodic with period r - j, every remaining iteration (its
            # convergence test included, which failed throughout the period) is one already
            # computed, and the run ends at max_iter in the state of the iteration of the
            # period that max_iter falls on. The outputs are copies of that state's values.
            # (Iteration 1's labels, the first clustering's, are recorded once per path; a
            # copied iteration is always a later one.)
            if r == max_iter or r == 1:
                continue
            seen_labels[r] = labels
            seen_hash[r] = h
            seen_weights[r] = w
            seen_centers[r] = centers
            seen_objective[r] = objective
            seen_empty[r] = inner_empty
            j = find_labels(seen_labels, seen_hash, 1, r, labels, h)
            if j > 0:
                period = r - j
                for t in range(r + 1, max_iter + 1):
                    mirror = j + 1 + (t - r - 1) % period
                    out_inner[si, t - 1] = out_inner[si, mirror - 1]
                    n_empty += seen_empty[mirror]
                last = j + 1 + (max_iter - r - 1) % period
                labels[:] = seen_labels[last]
                w[:] = seen_weights[last]
                centers[:] = seen_centers[last]
                objective = seen_objective[last]
                break
        out_labels[si] = labels
        final_centers, _ = cluster_means(X, labels, k)
        out_centers[si] = final_centers
        out_weighted[si] = centers
        out_n_iter[si] = n_iter
        out_status[si] = status
        out_empty[si] = n_empty
        if status == EMPTY_CLUSTER or status == DEGENERATE_WEIGHTS:
            out_weights[si, :] = np.nan
        else:
            out_weights[si] = w
            out_objective[si] = objective
        out_clean[si] = clean
        if shareable:
            out_bound[si] = bound
        if out_bound[si] < free_bound:
            free = si
            free_bound = out_bound[si]
    return out


class PathArrays(NamedTuple):
    """Per-s outputs of :func:`sparse_engine` (leading axis: the s grid)."""

    labels: np.ndarray  # (n_s, n) int64
    weights: np.ndarray  # (n_s, p), NaN for a failed s
    centers: np.ndarray  # (n_s, k, p) means of the unweighted X per final cluster
    weighted_centers: np.ndarray  # (n_s, k, p) centroids of the last PCKM run, in Z space
    n_iter: np.ndarray  # (n_s,) weight iterations
    status: np.ndarray  # (n_s,) status codes (_result.py)
    objective: np.ndarray  # (n_s,) sum_j w_j gamma_j, NaN for a failed s
    inner_n_iter: np.ndarray  # (n_s, max_iter) PCKM passes per weight iteration, 0 = no run
    n_empty_events: np.ndarray  # (n_s,)


class FitCache:
    """The PCKM clusterings and s paths fitted on one data set with one :class:`Constraints`
    object, for the settings of one cell (its inits, PCKM and both score variants of PCSKM).

    A PCKM fit is also the first clustering of a PCSKM path from the same initial centres
    (§4.2 step 2 is §2.2 on X), with the same pass limit and empty-cluster policy: it is
    computed once. From step 2 on, a path depends on the initial centres only through the
    first clustering's labels, final centres and status, and on its pass count and
    empty-cluster events only in ``inner_n_iter[:, 0]`` and ``n_empty_events``
    (:func:`sparse_path_from`). Different initial centres often converge to the same first
    clustering; a later path then reuses step 3 of an earlier one, bit for bit, with those
    two fields made its own. A path of one score variant copies the runs of the other
    variant's path from the same first clustering that met no violated constraint. The
    cache serves only fits whose engine constraints are ``constraints`` itself (for a
    cell's fits, not the empty list of LKM and SKM) and must not outlive the data set it
    was filled on; the arrays it returns must not be written.
    ``max_entries``: the clusterings and the paths it keeps, each, the least recently used
    dropped first (None: all of them).
    """

    def __init__(self, constraints, max_entries=None):
        self.constraints = constraints
        self.max_entries = max_entries
        self._firsts = {}  # (C0, max_iter, policy) -> what pckm_fit returns
        # (first clustering, path options) -> (PathArrays, (clean, bound), its n_empty)
        self._paths = {}

    def _get(self, entries, key):
        """``entries[key]``, now the most recently used, or None."""
        value = entries.pop(key, None)
        if value is not None:
            entries[key] = value
        return value

    def _put(self, entries, key, value):
        entries[key] = value
        if self.max_entries is not None and len(entries) > self.max_entries:
            del entries[next(iter(entries))]  # the least recently used
        return value

    def serves(self, constraints):
        """True when fits with the engine constraints ``constraints`` may use the cache."""
        return constraints is self.constraints

    def clustering(self, X, C0, max_iter, policy):
        """What :func:`pckm_fit` returns from initial centres ``C0`` (§2.2), computed once."""
        key = (C0.tobytes(), max_iter, policy)
        found = self._get(self._firsts, key)
        return found if found is not None else self._put(self._firsts, key, pckm_fit(
            X, C0, *self.constraints.kernel_arrays, max_iter, policy))

    def path(self, X, C0, options):
        """:class:`PathArrays` from initial centres ``C0`` for the path ``options``
        (sparsities, paper, max_iter, inner_max_iter, tol, policy), reusing what it can: the
        path of the same first clustering, or the clean runs of the other score variant's
        (the ``twin`` of :func:`sparse_path_from`)."""
        labels, centers, n_passes, status, _, n_empty = self.clustering(
            X, C0, options[3], options[5])
        key = (labels.tobytes(), centers.tobytes(), status, options[0].tobytes(), *options[1:])
        found = self._get(self._paths, key)
        if found is None:
            twin = self._twin(key)
            computed = sparse_path_from(
                X, labels, centers, n_passes, status, n_empty,
                *self.constraints.kernel_arrays, *options,
                _no_twin() if twin is None else self._own(*twin, n_passes, n_empty),
            )
            arrays = PathArrays(*computed[:9])
            self._put(self._paths, key, (arrays, computed[9:], n_empty))
            return arrays
        return PathArrays(*self._own(*found, n_passes, n_empty)[:9])

    def _twin(self, key):
        """The cached path of the other score variant for the path ``key`` (the key with
        ``paper`` flipped), or None."""
        return self._get(self._paths, (*key[:4], not key[4], *key[5:]))

    @staticmethod
    def _own(arrays, runs, cached_empty, n_passes, n_empty):
        """A cached path's arrays and ``runs`` (clean, bound) with the pass count and
        empty-cluster events of a first clustering of ``n_passes`` and ``n_empty`` (the only
        fields in which its paths differ, :func:`sparse_path_from`): copies."""
        own = PathArrays(*(field.copy() for field in arrays))
        own.inner_n_iter[:, 0] = n_passes
        own.n_empty_events[:] += n_empty - cached_empty
        return (*own, *runs)


@functools.cache
def _no_twin():
    """:func:`no_twin`, made once (the kernel never writes it)."""
    return no_twin()


def path_options(sparsities, *, weight_update="code", max_iter=25, inner_max_iter=25,
                 tol=1e-4, empty_cluster="fail"):
    """The s-path kernels' options ``(sparsities, paper, max_iter, inner_max_iter, tol,
    policy)``, validated (the sparsities must already be checked: 1 < s <= sqrt(p)), for
    :func:`path_engine`."""
    check_choice(weight_update, "weight_update", WEIGHT_UPDATES)
    policy = empty_cluster_code(empty_cluster)
    tol = float(tol)
    if not (math.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be a finite non-negative number; got {tol!r}")
    return (
        np.ascontiguousarray(sparsities, dtype=np.float64),
        weight_update == "paper",
        check_positive_int(max_iter, "max_iter"),
        check_positive_int(inner_max_iter, "inner_max_iter"),
        tol,
        policy,
    )


def sparse_engine(
    X, centers, constraints, sparsities, *, weight_update="code", max_iter=25,
    inner_max_iter=25, tol=1e-4, empty_cluster="fail", cache=None,
):
    """SKM / PCSKM (§4.2) from initial centres ``centers`` for every s in ``sparsities``.

    ``X`` (n, p) float64, ``constraints`` a validated
    :class:`~pcskm.algorithms.constraints.Constraints` (empty for SKM); the sparsities must already
    be checked (1 < s <= sqrt(p)). ``cache``: a :class:`FitCache` of this ``X`` whose
    clusterings and paths the fits of other initial centres with the same ``constraints``
    may share. Returns :class:`PathArrays`.
    """
    options = path_options(sparsities, weight_update=weight_update, max_iter=max_iter,
                           inner_max_iter=inner_max_iter, tol=tol, empty_cluster=empty_cluster)
    return path_engine(np.ascontiguousarray(X, dtype=np.float64), centers, constraints,
                       options, cache)


def path_engine(X, centers, constraints, options, cache=None):
    """:func:`sparse_engine` with the ``options`` of :func:`path_options` and ``X``
    C-contiguous float64: what its caller checked once for many fits (the runner: once per
    task)."""
    C0 = np.array(centers, dtype=np.float64, order="C")  # writable: one compiled signature
    if cache is None or not cache.serves(constraints):
        return PathArrays(*sparse_path(X, C0, *constraints.kernel_arrays, *options))
    return cache.path(X, C0, options)


def _check_scores(scores):
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 1 or scores.size == 0 or not np.isfinite(scores).all():
        raise ValueError("scores must be a non-empty 1-D array of finite numbers")
    return np.ascontiguousarray(scores)


def _check_s(sparsity):
    s = float(sparsity)
    if not (np.isfinite(s) and s > 1.0):
        raise ValueError(f"sparsity must be a finite number > 1; got {plain(sparsity)!r}")
    return s


def solve_delta(scores, sparsity):
    """The exact L1 soft-threshold Delta of §4.5 for the scores clipped at 0 (§4.4).

    Returns Delta >= 0 such that u = max(max(scores, 0) - Delta, 0) has
    ``|u|_1 / |u|_2 = sparsity``, or 0 if the clipped scores already satisfy the L1 bound.
    In the LIMIT case (``sparsity**2 <= t`` for t exactly tied maximal scores) it returns the
    maximal score, the value a bisection converges to; :func:`sparse_weights` then gives
    1/sqrt(t) on those features. Raises ``ValueError`` if no score is positive.
    """
    g = np.maximum(_check_scores(scores), 0.0)
    if not (g > 0).any():
        raise ValueError("every score is <= 0: the weights are degenerate "
                         "(docs/method/algorithms.md §4.4)")
    return float(solve_delta_sorted(g, _check_s(sparsity))[0])


def sparse_weights(scores, sparsity):
    """Feature weights of §4.2 step 3c-3d from raw scores: clip, threshold, L2-normalise."""
    g = np.maximum(_check_scores(scores), 0.0)
    if not (g > 0).any():
        raise ValueError("every score is <= 0: the weights are degenerate "
                         "(docs/method/algorithms.md §4.4)")
    w = np.empty_like(g)
    weights_into(w, g, _check_s(sparsity))
    return w


def feature_scores(X, labels, n_clusters, constraints, *, weight_update="code"):
    """Per-feature scores gamma_j of §4.3 for labels 0..n_clusters-1 on the unweighted X."""
    X = check_data(X)
    check_choice(weight_update, "weight_update", WEIGHT_UPDATES)
    labels = np.asarray(labels, dtype=np.int64)
    if labels.shape != (X.shape[0],) or labels.min() < 0 or labels.max() >= n_clusters:
        raise ValueError(f"labels must be {X.shape[0]} integers in 0..{n_clusters - 1}")
    out = np.empty(X.shape[1])
    scores_into(
        out, X, labels, int(n_clusters), total_sum_of_squares(X), constraints.pairs,
        constraints.is_must_link, box_diameters(X), weight_update == "paper",
    )
    return out

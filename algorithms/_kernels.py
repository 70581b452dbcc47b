"""Numba kernels shared by the PCKM, MPCKM and sparse engines (docs/method/algorithms.md §1-§3).

Squared distances are always sums of squared coordinate differences (never the expanded
``|u|^2 - 2 u.v + |v|^2``), so exact ties in the data stay exact ties; argmin keeps the lowest
cluster index among equal values. ``metric`` is the diagonal metric ``a`` (ones for the PCKM
engine: multiplying by 1.0 is exact, so one kernel serves both engines).
"""

import numpy as np

from ._jit import kernel, kernel_checked_divisors


@kernel
def box_corners(Y):
    """Per-feature corners lo = min(0, min Y), hi = max(0, max Y) of the box of §1.1:
    returns ``(lo, hi)``."""
    n, p = Y.shape
    low = np.zeros(p)
    high = np.zeros(p)
    for m in range(p):
        lo = 0.0
        hi = 0.0
        for i in range(n):
            v = Y[i, m]
            if v < lo:
                lo = v
            if v > hi:
                hi = v
        low[m] = lo
        high[m] = hi
    return low, high


@kernel
def box_diameters(Y):
    """Per-feature ``(hi_m - lo_m)^2`` of the box of §1.1 (:func:`box_corners`).

    ``D_max = sum_m metric_m * box_diameters(Y)_m``.
    """
    low, high = box_corners(Y)
    return (high - low) * (high - low)


@kernel
def weighted_square(diff, metric, m):
    """``metric[m] * diff * diff``, or ``diff * diff`` for ``metric=None`` (the unit metric:
    ``(1.0 * diff) * diff`` is the same number, one multiplication fewer). Numba compiles
    the ``None`` case without the branch."""
    if metric is None:
        return diff * diff
    return metric[m] * diff * diff


@kernel
def pair_sq_distances_into(out, Y, pairs, metric):
    """``out[c] = |y_a - y_b|^2_metric`` for every constraint ``(a, b)`` (``metric=None``:
    the unit metric).

    Each sum runs over the features in ascending order; four constraints are summed side by
    side so that their independent additions overlap. Row indices are unsigned (never
    negative), so Numba skips the negative-index wraparound of every access.
    """
    n_pairs = pairs.shape[0]
    p = Y.shape[1]
    c = 0
    while c + 4 <= n_pairs:
        a0, b0 = Y[np.uint64(pairs[c, 0])], Y[np.uint64(pairs[c, 1])]
        a1, b1 = Y[np.uint64(pairs[c + 1, 0])], Y[np.uint64(pairs[c + 1, 1])]
        a2, b2 = Y[np.uint64(pairs[c + 2, 0])], Y[np.uint64(pairs[c + 2, 1])]
        a3, b3 = Y[np.uint64(pairs[c + 3, 0])], Y[np.uint64(pairs[c + 3, 1])]
        d0 = d1 = d2 = d3 = 0.0
        for m in range(p):
            d0 += weighted_square(a0[m] - b0[m], metric, m)
            d1 += weighted_square(a1[m] - b1[m], metric, m)
            d2 += weighted_square(a2[m] - b2[m], metric, m)
            d3 += weighted_square(a3[m] - b3[m], metric, m)
        out[c], out[c + 1], out[c + 2], out[c + 3] = d0, d1, d2, d3
        c += 4
    while c < n_pairs:
        a, b = np.uint64(pairs[c, 0]), np.uint64(pairs[c, 1])
        d = 0.0
        for m in range(p):
            d += weighted_square(Y[a, m] - Y[b, m], metric, m)
        out[c] = d
        c += 1


@kernel
def center_distances_into(out, YT, centers, metric):
    """``out[h, i] = |y_i - mu_h|^2_metric`` from the transposed data ``YT`` (p, n).

    Each sum runs over the features in ascending order from 0.0, adding
    ``metric_m * diff * diff`` as the E-step of §2.2b literally does; the n sums of a cluster
    are carried side by side (independent additions, vectorised), so the bits are those of
    the point-by-point loop.
    """
    p, n = YT.shape
    for h in range(centers.shape[0]):
        row = out[h]
        for i in range(n):
            row[i] = 0.0
        for m in range(p):
            centre = centers[h, m]
            weight = metric[m]
            column = YT[m]
            for i in range(n):
                diff = column[i] - centre
                row[i] += weight * diff * diff


@kernel
def constraint_costs_into(costs, pair_dist, is_must_link, entries, dmax):
    """Per entry e of the partner lists, what it adds to the penalty of a cluster h when the
    partner has label l (§2.2b): ``costs[e, 0]`` if h != l (``pair_dist[c]`` for a
    must-link c, else 0.0) and ``costs[e, 1]`` if h == l (``dmax - pair_dist[c]`` for a
    cannot-link, else 0.0), written for each constraint c in turn to its two entries
    ``entries[c]`` (:class:`~pcskm.algorithms.constraints.Constraints`): the constraints are
    read in order, not gathered through the lists.

    Stored in partner-list order, so the E-step reads them sequentially, and as a pair, so it
    picks one by index (``costs[e, h == l]``) instead of by a branch that the labels make
    unpredictable (the values are the same numbers). Returns the largest absolute value of
    a term (0.0 without constraints; NaN if a term is NaN), for
    :func:`assign_sequential_kept`."""
    largest = 0.0
    for c in range(entries.shape[0]):
        if is_must_link[c]:
            if_apart = pair_dist[c]
            if_together = 0.0
            term = if_apart
        else:
            if_apart = 0.0
            if_together = dmax - pair_dist[c]
            term = if_together
        for side in range(2):
            e = entries[c, side]
            costs[e, 0] = if_apart
            costs[e, 1] = if_together
        term = abs(term)
        if term > largest or term != term:
            largest = term
    return largest


@kernel
def point_choice(dist, offset, i, indptr, partner, costs, labels):
    """``(l_i, P(i, l_i))`` by the rule of :func:`assign_sequential`, each cluster's penalty
    summed in turn over i's partner list (lowest h on ties)."""
    best = 0
    winner = 0.0
    for h in range(dist.shape[0]):
        cost = dist[h, i] + offset
        for e in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
            lj = labels[np.uint64(partner[e])]
            if lj < 0:
                continue
            cost += costs[e, 1] if lj == h else costs[e, 0]
        if h == 0 or cost < winner:
            best = h
            winner = cost
    return best, winner


@kernel
def add_partner_terms(penalty, j, e, costs, label):
    """Add to ``penalty[j, h]``, for every column h, the term of partner-list entry ``e``
    whose other point has label ``label`` (``costs[e, 1]`` if h is it, else
    ``costs[e, 0]``)."""
    for h in range(penalty.shape[1]):
        penalty[j, h] += costs[e, 1] if h == label else costs[e, 0]


@kernel
def assign_sequential(dist, offset, indptr, partner, costs, labels):
    """One sequential E-step pass (§2.2b, §3.3 step 1); updates ``labels`` in place.

    For i = 0..n-1 in index order and every cluster h, the penalty is accumulated as

        P(i, h) = dist[h, i] + offset
                  then, for each partner j of i in list order with l_j != -1:
                  must-link:   + pair_dist  to every h != l_j
                  cannot-link: + (dmax - pair_dist)  to h == l_j

    (``dist`` from :func:`center_distances_into`, the per-entry terms from
    :func:`constraint_costs_into`) and l_i = argmin_h P(i, h) (lowest h on ties) is written
    immediately, so later points see it. Returns ``(moved, objective)``: the number of labels
    that changed (including -1 -> h) and the sum over i of the winning penalty.

    Every partner adds ``costs[e, 0]`` or ``costs[e, 1]`` to every cluster; the one that the
    rule above does not add is +0.0, and adding +0.0 changes no penalty (they are never
    -0.0), so the sums are bit for bit those of the rule. Both entries are loaded once and
    each cluster selects one (an indexed load per cluster took 1.6 times as long). Up to four
    clusters the penalties live in registers (the paper's data sets have k = 2 or 3); beyond,
    each cluster's penalty is summed in turn over the partner list (the same additions in the
    same order). Neither path allocates: a kernel that allocates keeps Numba from pruning
    the reference counts of its array arguments, two atomic operations per array per call.
    Indices into the partner lists are unsigned: they are never negative, and Numba then
    skips the negative-index wraparound of every access.
    """
    k, n = dist.shape
    moved = 0
    objective = 0.0
    if k < 2 or k > 4:
        for i in range(n):
            best, winner = point_choice(dist, offset, i, indptr, partner, costs, labels)
            if labels[i] != best:
                moved += 1
                labels[i] = best
            objective += winner
        return moved, objective
    for i in range(n):
        # clusters k..3 do not exist: their sums are computed and never compared
        c0 = dist[0, i] + offset
        c1 = dist[1, i] + offset
        c2 = dist[2, i] + offset if k > 2 else 0.0
        c3 = dist[3, i] + offset if k > 3 else 0.0
        for e in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
            lj = labels[np.uint64(partner[e])]
            if lj < 0:
                continue
            other, own = costs[e, 0], costs[e, 1]
            c0 += own if lj == 0 else other
            c1 += own if lj == 1 else other
            c2 += own if lj == 2 else other
            c3 += own if lj == 3 else other
        best = 0
        winner = c0
        if c1 < winner:
            best = 1
            winner = c1
        if k > 2 and c2 < winner:
            best = 2
            winner = c2
        if k > 3 and c3 < winner:
            best = 3
            winner = c3
        if labels[i] != best:
            moved += 1
            labels[i] = best
        objective += winner
    return moved, objective


ROUNDING = 2.0 ** -53  # the unit roundoff of float64


@kernel
def partner_penalties_into(penalty, labels, indptr, partner, costs):
    """``penalty[i, h]``: the sum of the terms that the labelled partners of i add to cluster
    h in :func:`assign_sequential` (``costs[e, 1]`` if the partner's label is h, else
    ``costs[e, 0]``), for :func:`assign_sequential_kept`."""
    penalty[:] = 0.0
    for i in range(penalty.shape[0]):
        for e in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
            lj = labels[np.uint64(partner[e])]
            if lj >= 0:
                add_partner_terms(penalty, i, e, costs, lj)


@kernel
def assign_sequential_kept(dist, indptr, partner, costs, labels, penalty, largest, n_pass):
    """The labels of :func:`assign_sequential` (offset 0), not its objective, walking the
    partner lists only where a point's choice is close; returns the number of labels that
    changed.

    ``penalty`` (n, max(k, 4); columns k.. unused) holds, for every point and cluster, the
    sum of the terms its labelled partners add (:func:`partner_penalties_into`; all 0 when
    every label is -1), kept up to date here as labels change: a point that changes from a
    to b moves each partner's term between clusters a and b (a term is exact zero or a
    cost, so each move is one rounding). ``largest`` bounds the absolute value of every
    term (:func:`constraint_costs_into` returns it).

    With R(h) = dist[h, i] + penalty[i, h], the penalty of cluster h apart from rounding,
    point i takes the cluster of the lowest R when it beats every other by more than
    ``margin``, a bound on every rounding involved: the exact rule's sums of at most d + 1
    terms (d the number of partners), the at most ``n_pass`` x d moves of the
    kept sums (a partner changes at most once per pass; ``n_pass`` is this pass's number
    since the penalties were last summed afresh), and the sums and the difference of R,
    each at most ``scale`` = max_h R(h) + d x ``largest`` in size. Then the exact rule's
    penalty of that cluster is strictly the lowest, and it chooses the same cluster.
    Otherwise (or when a value is not finite) the point is assigned by the exact rule,
    :func:`point_choice`.
    """
    k, n = dist.shape
    moved = 0
    for i in range(n):
        start, stop = np.uint64(indptr[i]), np.uint64(indptr[i + 1])
        best = 0
        low = dist[0, i] + penalty[i, 0]
        second = np.inf
        high = low
        for h in range(1, k):
            value = dist[h, i] + penalty[i, h]
            if value < low:
                best, low, second = h, value, low
            elif value < second:
                second = value
            high = max(high, value)
        degree = float(stop - start)
        scale = high + degree * largest
        margin = 8.0 * (n_pass + 1) * (degree + 2.0) * ROUNDING * scale
        if not second - low > margin:  # close, or not finite: the exact rule
            best = point_choice(dist, 0.0, i, indptr, partner, costs, labels)[0]
        old = labels[i]
        if old == best:
            continue
        moved += 1
        labels[i] = best
        if old >= 0:
            for e in range(start, stop):
                j = np.uint64(partner[e])
                penalty[j, old] += costs[e, 0] - costs[e, 1]
                penalty[j, best] += costs[e, 1] - costs[e, 0]
        elif k <= 4:  # columns k..3 exist and are never read: no branch per cluster
            for e in range(start, stop):
                j = np.uint64(partner[e])
                other, own = costs[e, 0], costs[e, 1]
                penalty[j, 0] += own if best == 0 else other
                penalty[j, 1] += own if best == 1 else other
                penalty[j, 2] += own if best == 2 else other
                penalty[j, 3] += own if best == 3 else other
        else:
            for e in range(start, stop):
                add_partner_terms(penalty, np.uint64(partner[e]), e, costs, best)
    return moved


@kernel_checked_divisors
def cluster_means_into(means, counts, Y, labels):
    """Per-cluster means into ``means`` (k, p) and sizes into ``counts`` (rows summed in index
    order); an empty cluster gets the zero vector; points labelled -1 are ignored."""
    k, p = means.shape
    for h in range(k):
        counts[h] = 0
        for m in range(p):
            means[h, m] = 0.0
    for i in range(Y.shape[0]):
        h = labels[i]
        if h < 0:
            continue
        counts[h] += 1
        for m in range(p):
            means[h, m] += Y[i, m]
    for h in range(k):
        if counts[h] > 0:
            for m in range(p):
                means[h, m] /= counts[h]


@kernel
def cluster_means(Y, labels, k):
    """:func:`cluster_means_into` in new arrays: returns ``(means, counts)``."""
    means = np.empty((k, Y.shape[1]))
    counts = np.empty(k, dtype=np.int64)
    cluster_means_into(means, counts, Y, labels)
    return means, counts


@kernel
def cluster_counts(labels, k):
    counts = np.zeros(k, dtype=np.int64)
    for i in range(labels.shape[0]):
        if labels[i] >= 0:
            counts[labels[i]] += 1
    return counts


@kernel
def relocate_empty(Y, centers, metric, labels, counts):
    """The ``"relocate"`` empty-cluster policy (§1.3); updates ``labels`` and ``counts``.

    Points are walked in stable descending order of their cost to their own centre (the
    centres of this E-step); each empty cluster, in ascending index, takes the next point
    whose cluster still has at least 2 members. Returns the number of relocated points.
    """
    n, p = Y.shape
    k = centers.shape[0]
    own_cost = np.empty(n)
    for i in range(n):
        d = 0.0
        h = labels[i]
        for m in range(p):
            diff = Y[i, m] - centers[h, m]
            d += metric[m] * diff * diff
        own_cost[i] = -d
    order = np.argsort(own_cost, kind="mergesort")  # stable: ties in ascending index
    relocated = 0
    position = 0
    for h in range(k):
        if counts[h] > 0:
            continue
        while position < n and counts[labels[order[position]]] < 2:
            position += 1
        if position == n:
            break
        i = order[position]
        position += 1
        counts[labels[i]] -= 1
        labels[i] = h
        counts[h] += 1
        relocated += 1
    return relocated

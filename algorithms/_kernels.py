"""Numba kernels shared by the PCKM, MPCKM and sparse engines (spec ``algorithms.md`` §1-§3).

Squared distances are always sums of squared coordinate differences (never the expanded
``|u|^2 - 2 u.v + |v|^2``), so exact ties in the data stay exact ties; argmin keeps the lowest
cluster index among equal values. ``metric`` is the diagonal metric ``a`` (ones for the PCKM
engine: multiplying by 1.0 is exact, so one kernel serves both engines).
"""

import numpy as np
from numba import njit


@njit(cache=True)
def box_diameters(Y):
    """Per-feature ``(hi_m - lo_m)^2`` of the box lo = min(0, min Y), hi = max(0, max Y) (§1.1).

    ``D_max = sum_m metric_m * box_diameters(Y)_m``.
    """
    n, p = Y.shape
    out = np.empty(p)
    for m in range(p):
        lo = 0.0
        hi = 0.0
        for i in range(n):
            v = Y[i, m]
            if v < lo:
                lo = v
            if v > hi:
                hi = v
        out[m] = (hi - lo) * (hi - lo)
    return out


@njit(cache=True)
def pair_sq_distances(Y, pairs, metric):
    """``|y_a - y_b|^2_metric`` for every constraint ``(a, b)``."""
    m_pairs = pairs.shape[0]
    p = Y.shape[1]
    out = np.empty(m_pairs)
    for c in range(m_pairs):
        a = pairs[c, 0]
        b = pairs[c, 1]
        d = 0.0
        for m in range(p):
            diff = Y[a, m] - Y[b, m]
            d += metric[m] * diff * diff
        out[c] = d
    return out


@njit(cache=True)
def assign_sequential(
    Y, centers, metric, offset, dmax, indptr, partner, link, is_must_link, pair_dist, labels
):
    """One sequential E-step pass (§2.2b, §3.3 step 1); updates ``labels`` in place.

    For i = 0..n-1 in index order and every cluster h, the penalty is accumulated as

        P(i, h) = |y_i - mu_h|^2_metric + offset
                  then, for each partner j of i in list order with l_j != -1:
                  must-link:   + pair_dist  to every h != l_j
                  cannot-link: + (dmax - pair_dist)  to h == l_j

    and l_i = argmin_h P(i, h) (lowest h on ties) is written immediately, so later points see
    it. Returns ``(moved, objective)``: the number of labels that changed (including
    -1 -> h) and the sum over i of the winning penalty.
    """
    n, p = Y.shape
    k = centers.shape[0]
    cost = np.empty(k)
    moved = 0
    objective = 0.0
    for i in range(n):
        for h in range(k):
            d = 0.0
            for m in range(p):
                diff = Y[i, m] - centers[h, m]
                d += metric[m] * diff * diff
            cost[h] = d + offset
        for e in range(indptr[i], indptr[i + 1]):
            lj = labels[partner[e]]
            if lj < 0:
                continue
            c = link[e]
            if is_must_link[c]:
                for h in range(k):
                    if h != lj:
                        cost[h] += pair_dist[c]
            else:
                cost[lj] += dmax - pair_dist[c]
        best = 0
        for h in range(1, k):
            if cost[h] < cost[best]:
                best = h
        if labels[i] != best:
            moved += 1
            labels[i] = best
        objective += cost[best]
    return moved, objective


@njit(cache=True)
def cluster_means(Y, labels, k):
    """Per-cluster means (rows summed in index order); an empty cluster gets the zero vector.

    Returns ``(means, counts)``; points labelled -1 are ignored.
    """
    n, p = Y.shape
    sums = np.zeros((k, p))
    counts = np.zeros(k, dtype=np.int64)
    for i in range(n):
        h = labels[i]
        if h < 0:
            continue
        counts[h] += 1
        for m in range(p):
            sums[h, m] += Y[i, m]
    for h in range(k):
        if counts[h] > 0:
            for m in range(p):
                sums[h, m] /= counts[h]
    return sums, counts


@njit(cache=True)
def cluster_counts(labels, k):
    counts = np.zeros(k, dtype=np.int64)
    for i in range(labels.shape[0]):
        if labels[i] >= 0:
            counts[labels[i]] += 1
    return counts


@njit(cache=True)
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

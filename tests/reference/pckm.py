"""Plain-loop PCKM engine written from spec ``algorithms.md`` §1-§2 (no package code).

Sums run in the order the spec states them (features ascending, points in index order,
constraints in list order), so a correct package gives the same floating-point numbers.
"""

import math

import numpy as np

from .constraints import consistent_cannot_links

STATUS = ("converged", "max_iter", "empty_cluster", "degenerate_weights")


def constraint_list(must_link, cannot_link):
    """§0: ML pairs in order, then CL pairs in order, each as (min, max, is_ml)."""
    out = []
    for pairs, is_ml in ((must_link, True), (cannot_link, False)):
        for a, b in [] if pairs is None else np.asarray(pairs).tolist():
            out.append((min(a, b), max(a, b), is_ml))
    return out


def sq_dist(u, v):
    total = 0.0
    for um, vm in zip(u, v, strict=True):
        total += (um - vm) * (um - vm)
    return total


def box_dmax(Y):
    """§1.1: sum_m (hi_m - lo_m)^2 with lo = min(0, min Y), hi = max(0, max Y)."""
    total = 0.0
    for m in range(len(Y[0])):
        lo = min(0.0, min(row[m] for row in Y))
        hi = max(0.0, max(row[m] for row in Y))
        total += (hi - lo) * (hi - lo)
    return total


def means(Y, labels, k):
    """Per-cluster means summed in index order; the zero vector for an empty cluster."""
    p = len(Y[0])
    sums = [[0.0] * p for _ in range(k)]
    counts = [0] * k
    for row, h in zip(Y, labels, strict=True):
        if h < 0:
            continue
        counts[h] += 1
        for m in range(p):
            sums[h][m] += row[m]
    return [[v / counts[h] if counts[h] else 0.0 for v in sums[h]] for h in range(k)], counts


def relocate(Y, mu, labels, counts):
    """§1.3 "relocate": returns the number of relocated points (labels/counts in place)."""
    cost = [sq_dist(Y[i], mu[labels[i]]) for i in range(len(Y))]
    order = sorted(range(len(Y)), key=lambda i: -cost[i])  # sorted() is stable
    moved = 0
    pos = 0
    for h in range(len(mu)):
        if counts[h] > 0:
            continue
        while pos < len(order) and counts[labels[order[pos]]] < 2:
            pos += 1
        if pos == len(order):
            break
        i = order[pos]
        pos += 1
        counts[labels[i]] -= 1
        labels[i] = h
        counts[h] += 1
        moved += 1
    return moved


def pckm(X, C0, must_link=None, cannot_link=None, *, max_iter=25, empty_cluster="fail"):
    """§2.2 with the policy of §1.3. Returns a dict of labels, centers, n_iter, status,
    objective (sum of winning penalties of the last pass) and n_empty (one per empty cluster
    per E-step)."""
    Y = [[float(v) for v in row] for row in np.asarray(X)]
    mu = [[float(v) for v in row] for row in np.asarray(C0)]
    n, k = len(Y), len(mu)
    cons = constraint_list(must_link, cannot_link)
    partners = [[] for _ in range(n)]
    for a, b, is_ml in cons:
        d = sq_dist(Y[a], Y[b])
        partners[a].append((b, is_ml, d))
        partners[b].append((a, is_ml, d))
    dmax = box_dmax(Y)
    labels = [-1] * n
    n_empty = 0
    status = "max_iter"
    n_iter = max_iter
    objective = 0.0
    for t in range(1, max_iter + 1):
        prev = list(labels)
        objective = 0.0
        for i in range(n):
            P = []
            for h in range(k):
                value = sq_dist(Y[i], mu[h])
                P.append(value)
            for j, is_ml, d in partners[i]:
                lj = labels[j]
                if lj == -1:
                    continue
                for h in range(k):
                    if is_ml and lj != h:
                        P[h] += d
                    elif not is_ml and lj == h:
                        P[h] += dmax - d
            best = min(range(k), key=lambda h, P=P: (P[h], h))
            labels[i] = best
            objective += P[best]
        new_mu, counts = means(Y, labels, k)
        relocated = 0
        if 0 in counts:
            if empty_cluster == "fail":
                return dict(labels=np.array(labels), centers=np.array(mu), n_iter=t,
                            status="empty_cluster", objective=math.nan, n_empty=n_empty)
            n_empty += counts.count(0)
            if empty_cluster == "relocate":
                relocated = relocate(Y, mu, labels, counts)
                new_mu, counts = means(Y, labels, k)
        mu = new_mu
        if labels == prev and relocated == 0:
            status, n_iter = "converged", t
            break
    return dict(labels=np.array(labels), centers=np.array(mu), n_iter=n_iter, status=status,
                objective=objective, n_empty=n_empty)


def class_pairs(rng, n, max_pairs, classes=None):
    """Up to ``max_pairs`` random pairs of n points as ``(must_link, cannot_link)``:
    must-links within and cannot-links across ``classes`` (random, of 3, if None), so that
    none contradicts another."""
    first, second = np.triu_indices(n, 1)
    chosen = rng.choice(len(first), size=int(rng.integers(0, min(max_pairs, len(first)))),
                        replace=False)
    truth = rng.integers(0, 3, size=n) if classes is None else classes
    pairs = np.stack([first[chosen], second[chosen]], axis=1)
    same = truth[pairs[:, 0]] == truth[pairs[:, 1]]
    return pairs[same], pairs[~same]


def random_problem(rng, *, constrained=True, min_features=1):
    """A small random PCKM problem (X, C0, must_link, cannot_link, max_iter) for tests.

    Mixes small-integer data (exact ties), blobs and wide-range data; centres from distinct
    rows, repeated rows, far-away points (empty clusters) or random points; constraints from
    random labels that ignore the data (violations), sometimes with an extra must-link chain
    i - j - m (the cannot-links it contradicts are dropped: the package refuses them); and
    sometimes a tiny max_iter.
    """
    n = int(rng.integers(6, 26))
    p = int(rng.integers(min_features, 5))
    k = int(rng.integers(2, 5))
    data_kind = rng.integers(3)
    if data_kind == 0:
        X = rng.integers(0, 4, size=(n, p)).astype(float)
    elif data_kind == 1:
        X = rng.normal(size=(n, p)) + 4.0 * rng.integers(0, k, size=(n, 1))
    else:
        X = rng.normal(size=(n, p)) * rng.uniform(0.1, 10.0) - rng.uniform(0, 5)
    centre_kind = rng.integers(4)
    if centre_kind == 0:
        C0 = X[rng.choice(n, size=k, replace=False)]
    elif centre_kind == 1:
        C0 = X[rng.choice(n, size=k, replace=True)]
    elif centre_kind == 2:
        C0 = X[rng.choice(n, size=k, replace=False)]
        C0[-1] = 100.0
    else:
        C0 = rng.normal(size=(k, p)) * X.std() + X.mean()
    must_link = cannot_link = None
    if constrained:
        truth = rng.integers(0, k, size=n)
        first, second = np.triu_indices(n, 1)
        chosen = rng.choice(len(first), size=int(rng.integers(1, min(60, len(first)))),
                            replace=False)
        a, b = first[chosen], second[chosen]
        if rng.random() < 0.3:
            i, j, m = (int(v) for v in rng.choice(n, size=3, replace=False))
            keep = ~np.isin(a * n + b, [min(i, j) * n + max(i, j), min(j, m) * n + max(j, m),
                                        min(i, m) * n + max(i, m)])
            a, b = a[keep], b[keep]
            ml_extra = np.array([[i, j], [j, m]])
        else:
            ml_extra = np.empty((0, 2), dtype=np.int64)
        same = truth[a] == truth[b]
        pairs = np.stack([a, b], axis=1)
        flip = rng.random(len(pairs)) < 0.5  # either orientation is valid input
        pairs[flip] = pairs[flip][:, ::-1]
        must_link = np.concatenate([pairs[same], ml_extra]).astype(np.int64)
        cannot_link = consistent_cannot_links(must_link, pairs[~same], n)
    max_iter = int(rng.choice([1, 2, 3, 25, 25, 25, 25]))
    return X, C0, must_link, cannot_link, max_iter

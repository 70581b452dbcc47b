"""Plain-loop SKM / PCSKM written from spec ``algorithms.md`` §4 (no package code).

Uses the plain PCKM engine of ``tests/reference/pckm.py``; sums run in the order the spec
states them, so a correct package gives the same floating-point numbers.
"""

import math

import numpy as np

from .pckm import constraint_list, means, pckm


def scores(X, labels, k, must_link, cannot_link, weight_update):
    """§4.3: TSS_j - WCSS_j ("code"), minus ML_j and CL_j of violated constraints ("paper")."""
    n, p = len(X), len(X[0])
    gamma = []
    mu, _ = means(X, labels, k)
    wcss = [0.0] * p
    for i in range(n):
        for j in range(p):
            diff = X[i][j] - mu[labels[i]][j]
            wcss[j] += diff * diff
    ml = [0.0] * p
    cl = [0.0] * p
    for a, b, is_ml in constraint_list(must_link, cannot_link):
        violated = (labels[a] != labels[b]) if is_ml else (labels[a] == labels[b])
        if not violated:
            continue
        for j in range(p):
            d = (X[a][j] - X[b][j]) * (X[a][j] - X[b][j])
            if is_ml:
                ml[j] += d
            else:
                lo = min(0.0, min(row[j] for row in X))
                hi = max(0.0, max(row[j] for row in X))
                cl[j] += (hi - lo) * (hi - lo) - d
    for j in range(p):
        total = 0.0
        for i in range(n):
            total += X[i][j]
        mean = total / n
        tss = 0.0
        for i in range(n):
            tss += (X[i][j] - mean) * (X[i][j] - mean)
        value = tss - wcss[j]
        if weight_update == "paper":
            value = value - ml[j] - cl[j]
        gamma.append(value)
    return gamma


def solve_delta(g, s):
    """§4.5 pseudo-code on g >= 0; returns (Delta, t) with t > 0 only in the LIMIT case."""
    l1 = 0.0
    l2 = 0.0
    for v in g:
        l1 += v
        l2 += v * v
    if l1 / math.sqrt(l2) <= s:
        return 0.0, 0
    c = sorted(g, reverse=True) + [0.0]
    p = len(g)
    t = sum(1 for v in c[:p] if v == c[0])
    if s * s <= t:
        return c[0], t
    r = t
    while r <= p:
        if c[r - 1] != c[r]:
            sh = 0.0
            sh2 = 0.0
            for q in range(r):
                sh += c[q] - c[r]
                sh2 += (c[q] - c[r]) * (c[q] - c[r])
            if sh / math.sqrt(sh2) >= s:
                break
        r += 1
    mbar = 0.0
    for q in range(r):
        mbar += c[q]
    mbar /= r
    v = 0.0
    for q in range(r):
        v += (c[q] - mbar) * (c[q] - mbar)
    v /= r
    delta = mbar - s * math.sqrt(v / (r - s * s))
    return min(max(delta, c[r]), c[r - 1]), 0


def new_weights(g, s):
    delta, t = solve_delta(g, s)
    if t:
        return [1.0 / math.sqrt(t) if v == max(g) else 0.0 for v in g]
    u = [max(v - delta, 0.0) for v in g]
    norm = 0.0
    for v in u:
        norm += v * v
    norm = math.sqrt(norm)
    return [v / norm for v in u]


def sparse_kmeans(X, C0, s, must_link=None, cannot_link=None, *, weight_update="code",
                  max_iter=25, inner_max_iter=25, tol=1e-4, empty_cluster="fail"):
    """§4.2 for one s. Returns a dict of labels, centers (means of X), weighted_centers,
    weights, n_iter, status, objective, inner_n_iter (list), n_empty and label_history (the
    labels after each weight iteration, as tuples)."""
    X = [[float(v) for v in row] for row in np.asarray(X)]
    n, p, k = len(X), len(X[0]), len(C0)
    w = [1.0 / math.sqrt(p)] * p
    first = pckm(X, C0, must_link, cannot_link, max_iter=inner_max_iter,
                 empty_cluster=empty_cluster)
    labels = [int(v) for v in first["labels"]]
    weighted = first["centers"]
    inner = [first["n_iter"]]
    n_empty = first["n_empty"]
    status, n_iter, objective = "max_iter", max_iter, math.nan
    history = []
    if first["status"] == "empty_cluster":
        status, n_iter = "empty_cluster", 0
    else:
        for r in range(1, max_iter + 1):
            if r >= 2:
                Z = [[X[i][m] * math.sqrt(w[m]) for m in range(p)] for i in range(n)]
                C, _ = means(Z, labels, k)
                run = pckm(Z, C, must_link, cannot_link, max_iter=inner_max_iter,
                           empty_cluster=empty_cluster)
                labels = [int(v) for v in run["labels"]]
                weighted = run["centers"]
                inner.append(run["n_iter"])
                n_empty += run["n_empty"]
                if run["status"] == "empty_cluster":
                    status, n_iter = "empty_cluster", r
                    break
            gamma = scores(X, labels, k, must_link, cannot_link, weight_update)
            g = [max(v, 0.0) for v in gamma]
            if all(v == 0.0 for v in g):
                status, n_iter = "degenerate_weights", r
                break
            w_new = new_weights(g, s)
            change = 0.0
            size = 0.0
            for a, b in zip(w_new, w, strict=True):
                change += abs(a - b)
                size += abs(b)
            w = w_new
            objective = 0.0
            for a, b in zip(w, gamma, strict=True):
                objective += a * b
            history.append(tuple(labels))
            if change / size <= tol:
                status, n_iter = "converged", r
                break
    failed = status in ("empty_cluster", "degenerate_weights")
    centers, _ = means(X, labels, k)
    return dict(
        labels=np.array(labels), centers=np.array(centers),
        weighted_centers=np.array(weighted),
        weights=np.full(p, np.nan) if failed else np.array(w), n_iter=n_iter, status=status,
        objective=math.nan if failed else objective, inner_n_iter=inner, n_empty=n_empty,
        label_history=history,
    )


__all__ = ["new_weights", "scores", "solve_delta", "sparse_kmeans"]

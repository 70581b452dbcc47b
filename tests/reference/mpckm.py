"""Plain MPCKM (spec ``algorithms.md`` §1.1, §1.3, §3), written from the equations with Python
loops and no package code; the oracle for ``algorithms._mpckm``.

Every sum runs left to right in the order the spec states it (points in index order,
features in index order, constraints in list order), so a correct engine agrees to the bit.
"""

import math

import numpy as np


def constraint_list(must_link, cannot_link):
    """The ordered list of §0: (a, b, is_ml) with a < b, must-link pairs first."""
    out = []
    for pairs, is_ml in ((must_link, True), (cannot_link, False)):
        for u, v in np.asarray(pairs, dtype=np.int64).reshape(-1, 2).tolist():
            out.append((min(u, v), max(u, v), is_ml))
    return out


def box(X):
    """Per-feature (hi_m - lo_m)^2 with lo = min(0, min x), hi = max(0, max x) (§1.1)."""
    n, p = len(X), len(X[0])
    out = []
    for m in range(p):
        lo = min(0.0, min(X[i][m] for i in range(n)))
        hi = max(0.0, max(X[i][m] for i in range(n)))
        out.append((hi - lo) ** 2)
    return out


def sq_dist(u, v, a):
    """|u - v|^2_a = sum_m a_m (u_m - v_m)^2."""
    d = 0.0
    for m in range(len(u)):
        d += a[m] * (u[m] - v[m]) * (u[m] - v[m])
    return d


def d_max(a, dmax_m):
    total = 0.0
    for m in range(len(a)):
        total += a[m] * dmax_m[m]
    return total


def log_sum(a):
    total = 0.0
    for value in a:
        if value > 0:
            total += math.log(value)
    return total


def violated(cons, labels):
    """The constraints of the list whose two ends are assigned and disagree with their type."""
    out = []
    for a, b, is_ml in cons:
        if labels[a] < 0 or labels[b] < 0:
            continue
        if (is_ml and labels[a] != labels[b]) or (not is_ml and labels[a] == labels[b]):
            out.append((a, b, is_ml))
    return out


def metric_update(X, labels, mu, cons, dmax_m, a, lam):
    """§3.5: S_m over points then violated constraints; a_m = lam n / S_m if S_m > 0."""
    n, p = len(X), len(X[0])
    new = list(a)
    bad = violated(cons, labels)
    for m in range(p):
        s = 0.0
        for i in range(n):
            s += (X[i][m] - mu[labels[i]][m]) * (X[i][m] - mu[labels[i]][m])
        for i, j, is_ml in bad:
            diff2 = (X[i][m] - X[j][m]) * (X[i][m] - X[j][m])
            s += diff2 if is_ml else dmax_m[m] - diff2
        if s > 0:
            new[m] = lam * n / s
    return new


def j_full(X, labels, mu, a, cons, dmax, lam):
    """§3.1 with the given D_max."""
    n = len(X)
    total = 0.0
    for i in range(n):
        total += sq_dist(X[i], mu[labels[i]], a)
    total -= lam * n * log_sum(a)
    for i, j, is_ml in violated(cons, labels):
        dist = sq_dist(X[i], X[j], a)
        total += dist if is_ml else dmax - dist
    return total


def mpckm(X, centers, labels, must_link, cannot_link, *, max_iter=100, empty_cluster="zero",
          regularisation=0.01):
    """Returns a dict with labels, centers, weights, n_iter, status (name), objective,
    n_empty_events (empty clusters found, summed over the checks; 0 under "fail")."""
    X = np.asarray(X, dtype=np.float64).tolist()
    mu = np.asarray(centers, dtype=np.float64).tolist()
    labels = [int(v) for v in labels]
    n, p, k = len(X), len(X[0]), len(mu)
    lam = regularisation
    cons = constraint_list(must_link, cannot_link)
    own = [[] for _ in range(n)]  # each point's constraints, in list order
    for c in cons:
        own[c[0]].append(c)
        own[c[1]].append(c)

    a = [1.0] * p
    dmax_m = box(X)
    dmax = d_max(a, dmax_m)
    events = 0
    objective = math.nan
    status = "max_iter"
    t = 0
    for t in range(1, max_iter + 1):
        # E-step (§3.3 step 1), sequential with immediate writes
        pair = {(i, j): sq_dist(X[i], X[j], a) for i, j, _ in cons}
        moved = 0
        j_e = 0.0
        for i in range(n):
            costs = []
            for h in range(k):
                cost = sq_dist(X[i], mu[h], a) + (-lam * log_sum(a))
                for u, v, is_ml in own[i]:
                    j = v if u == i else u
                    if labels[j] == -1:
                        continue
                    if is_ml and labels[j] != h:
                        cost += pair[(u, v)]
                    if not is_ml and labels[j] == h:
                        cost += dmax - pair[(u, v)]
                costs.append(cost)
            best = min(range(k), key=lambda h: (costs[h], h))
            if labels[i] != best:
                moved += 1
                labels[i] = best
            j_e += costs[best]
        # empty clusters (§1.3)
        sizes = [labels.count(h) for h in range(k)]
        empty = [h for h in range(k) if sizes[h] == 0]
        if empty and empty_cluster == "fail":
            return dict(labels=np.array(labels), centers=np.array(mu),
                        weights=np.full(p, np.nan), n_iter=t, status="empty_cluster",
                        objective=math.nan, n_empty_events=events)
        events += len(empty)
        if empty and empty_cluster == "relocate":
            own_cost = [sq_dist(X[i], mu[labels[i]], a) for i in range(n)]
            order = sorted(range(n), key=lambda i: -own_cost[i])  # stable
            pos = 0
            for h in empty:
                while pos < n and sizes[labels[order[pos]]] < 2:
                    pos += 1
                if pos == n:
                    break
                i = order[pos]
                pos += 1
                sizes[labels[i]] -= 1
                labels[i] = h
                sizes[h] += 1
                moved += 1
        # centroids; zero vector when empty
        mu = []
        for h in range(k):
            total = [0.0] * p
            count = 0
            for i in range(n):
                if labels[i] == h:
                    count += 1
                    for m in range(p):
                        total[m] += X[i][m]
            mu.append([v / count for v in total] if count else [0.0] * p)
        # metric update, then J_full with the old D_max, then the new D_max
        a = metric_update(X, labels, mu, cons, dmax_m, a, lam)
        objective = j_full(X, labels, mu, a, cons, dmax, lam)
        dmax = d_max(a, dmax_m)
        if moved == 0 or abs(j_e - objective) < 1e-5:
            status = "converged"
            break
    return dict(labels=np.array(labels), centers=np.array(mu), weights=np.array(a), n_iter=t,
                status=status, objective=objective, n_empty_events=events)

"""Plain-loop transcriptions of the initialisations (spec ``initialisations.md`` §1-§4).

Written from the spec with Python lists and loops, no package code. Sums run one term after
the other in index order (features in column order, points in row order), the order
``algorithms/initialisation.py`` fixes, so results agree bit for bit and the tie rules can be
compared exactly. (Built-in ``sum`` is avoided for floats:
from Python 3.12 it compensates rounding errors.)
"""

import math

import numpy as np


def euclidean(a, b):
    total = 0.0
    for u, v in zip(a, b, strict=True):
        total += (u - v) * (u - v)
    return math.sqrt(total)


def distance_matrix(rows):
    n = len(rows)
    dist = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            dist[i][j] = dist[j][i] = euclidean(rows[i], rows[j])
    return dist


def stable_descending(values):
    """Indices by value descending, equal values in ascending index order."""
    return sorted(range(len(values)), key=lambda i: -values[i])


def first_maximum(values):
    best = 0
    for i in range(1, len(values)):
        if values[i] > values[best]:
            best = i
    return best


def percentile_type5(values, q):
    """Hyndman-Fan type 5: the k-th smallest of m values sits at probability (k - 0.5) / m."""
    x = sorted(values)
    m = len(x)
    h = m * q / 100 + 0.5  # 1-based position
    if h <= 1:
        return x[0]
    if h >= m:
        return x[-1]
    lo = math.floor(h)
    return x[lo - 1] + (h - lo) * (x[lo] - x[lo - 1])


def percentile_type7(values, q):
    """Hyndman-Fan type 7 (R's and NumPy's default): position 1 + (m - 1) q."""
    x = sorted(values)
    h = (len(x) - 1) * q / 100  # 0-based position
    lo = math.floor(h)
    if lo + 1 >= len(x):
        return x[-1]
    return x[lo] + (h - lo) * (x[lo + 1] - x[lo])


def mst_weights(weights):
    """Prim's algorithm on a complete graph whose zero weights are missing edges."""
    n = len(weights)
    in_tree = [False] * n
    key = [math.inf] * n
    key[0] = 0.0
    edges = []
    for step in range(n):
        best = -1
        for v in range(n):
            if not in_tree[v] and key[v] < math.inf and (best < 0 or key[v] < key[best]):
                best = v
        if best < 0:
            raise ValueError("the graph without zero edges is not connected")
        in_tree[best] = True
        if step > 0:
            edges.append(key[best])
        for v in range(n):
            w = weights[best][v]
            if not in_tree[v] and w > 0 and w < key[v]:
                key[v] = w
    return edges


def dkmpp(X, k, percentile=percentile_type5):
    """DKM++ (spec §1): (centre indices in selection order, eps)."""
    rows = np.asarray(X, dtype=float).tolist()
    n = len(rows)
    dist = distance_matrix(rows)
    top = max(max(row) for row in dist)
    norm = [[d / top for d in row] for row in dist]
    edges = mst_weights(norm)
    q25, q75 = percentile(edges, 25), percentile(edges, 75)
    eps = min(max(edges), 3 * (q75 - q25) + q75)
    rho = []
    for i in range(n):
        total = 0.0
        for j in range(n):
            if j != i and norm[i][j] <= eps:
                total += math.exp(-norm[i][j] / eps)
        rho.append(total)
    low, high = min(rho), max(rho)
    if low == high:
        raise ValueError("all densities are equal")
    rho = [(r - low) / (high - low) for r in rho]
    centres = [first_maximum(rho)]
    while len(centres) < k:
        prospect = [rho[i] * min(norm[i][c] for c in centres) for i in range(n)]
        for i in stable_descending(prospect):
            if i not in centres:
                centres.append(i)
                break
    return centres, eps


def lof_paper(rows, nn):
    """Paper-formula LOF (spec §2.1): NaN where the nn-th neighbour distance is 0."""
    n = len(rows)
    dist = distance_matrix(rows)
    radius, neighbours, density = [], [], []
    for i in range(n):
        r = sorted(dist[i])[nn]
        near = [j for j in range(n) if j != i and dist[i][j] <= r]
        total = 0.0
        for j in near:
            total += dist[i][j]
        radius.append(r)
        neighbours.append(near)
        density.append(len(near) / total if total > 0 else math.inf)
    lof = []
    for i in range(n):
        if radius[i] == 0:
            lof.append(math.nan)
            continue
        total = 0.0
        for j in neighbours[i]:
            total += density[j]
        lof.append((total / len(neighbours[i])) / density[i])
    return lof


def robin(X, k, nn=10):
    """ROBIN(D) (spec §2.2): (indices sorted ascending, selection order, fell_back)."""
    rows = np.asarray(X, dtype=float).tolist()
    n, p = len(rows), len(rows[0])
    if n < nn + 1:
        raise ValueError("too few points")
    lof = lof_paper(rows, nn)
    dist = distance_matrix(rows)

    def inside(v):
        return 0.95 < v < 1.05

    fell_back = not any(inside(v) for v in lof)
    if fell_back:
        def inside(v):
            return v < 1.05

        if not any(inside(v) for v in lof):
            raise ValueError("no point has LOF < 1.05")
    mean = []
    for m in range(p):
        total = 0.0
        for i in range(n):
            total += rows[i][m]
        mean.append(total / n)
    order_by = [euclidean(row, mean) for row in rows]
    centres = []
    while len(centres) < k:
        pick = next(i for i in stable_descending(order_by) if inside(lof[i]))
        if pick in centres:
            raise ValueError("no progress")
        centres.append(pick)
        order_by = [min(dist[i][c] for c in centres) for i in range(n)]
    return sorted(centres), centres, fell_back


def maximin(X, k):
    """Maximin(D) (spec §3): centre indices in selection order."""
    rows = np.asarray(X, dtype=float).tolist()
    n = len(rows)
    centres = [first_maximum([euclidean(row, [0.0] * len(row)) for row in rows])]
    while len(centres) < k:
        d = [min(euclidean(rows[i], rows[c]) for c in centres) for i in range(n)]
        for i in stable_descending(d):
            if i not in centres:
                centres.append(i)
                break
    return centres


def seeding(X, k, must_link, fill, rng):
    """Seeding (spec §4): (centres as a list of rows, seed labels, info)."""
    rows = np.asarray(X, dtype=float).tolist()
    n, p = len(rows), len(rows[0])
    adjacent = [[] for _ in range(n)]
    for a, b in must_link:
        adjacent[a].append(b)
        adjacent[b].append(a)
    component = [-1] * n
    groups = []
    for start in range(n):  # components found in order of their smallest point
        if component[start] >= 0:
            continue
        component[start] = len(groups)
        members, stack = [start], [start]
        while stack:
            for v in adjacent[stack.pop()]:
                if component[v] < 0:
                    component[v] = component[start]
                    members.append(v)
                    stack.append(v)
        groups.append(sorted(members))
    hoods = [g for g in groups if len(g) >= 2]
    means = []
    for g in hoods:
        total = [0.0] * p
        for i in g:
            for m in range(p):
                total[m] += rows[i][m]
        means.append([t / len(g) for t in total])
    lam = len(hoods)
    drew = False
    if lam >= k:
        sizes = [len(g) for g in hoods]
        selected = [first_maximum(sizes)]
        while len(selected) < k:
            score = {}
            for a in range(lam):
                if a in selected:
                    continue
                score[a] = min(
                    euclidean(means[a], means[s]) * math.sqrt(sizes[a] * sizes[s])
                    for s in selected
                )
            top = max(score.values())
            tied = sorted(a for a in score if score[a] == top)
            if len(tied) == 1:
                selected.append(tied[0])
            else:
                selected.append(tied[rng.integers(len(tied))])
                drew = True
        clusters = sorted(selected)
        centres = [means[a] for a in clusters]
    else:
        clusters = list(range(lam))
        centres = list(means)
        if fill == "data-points":
            for i in rng.choice(n, size=k - lam, replace=False):
                centres.append(list(rows[i]))
        else:
            overall = []
            for m in range(p):
                total = 0.0
                for i in range(n):
                    total += rows[i][m]
                overall.append(total / n)
            for u in rng.random((k - lam, p)).tolist():
                centres.append([overall[m] * (1 + 0.7 * (u[m] - 0.5)) for m in range(p)])
        drew = True
    labels = [-1] * n
    for c, a in enumerate(clusters):
        for i in hoods[a]:
            labels[i] = c
    info = {"n_neighbourhoods": lam, "selected": clusters, "random_draw": drew}
    return centres, labels, info

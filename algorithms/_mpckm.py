"""The MPCKM engine: the authors' WekaUT jar behaviour (docs/method/algorithms.md §3, D6-D8).

One shared diagonal metric ``a`` is learned alongside the clustering. Each iteration is the
sequential E-step of ``_kernels.assign_sequential`` under ``a``, the empty-cluster policy
(§1.3), the centroid update, the metric update (§3.5), the full objective (§3.1) and the stop
rule (§3.6). The whole loop runs in numba; :func:`mpckm_engine` is a thin wrapper.
"""

import math
import numbers

import numpy as np

from ._jit import kernel
from ._kernels import (
    assign_sequential,
    box_diameters,
    center_distances_into,
    cluster_counts,
    cluster_means_into,
    constraint_costs_into,
    pair_sq_distances_into,
    relocate_empty,
)
from ._result import (
    CONVERGED,
    EMPTY_CLUSTER,
    EMPTY_CLUSTER_POLICIES,
    MAX_ITER,
    EngineResult,
    empty_cluster_code,
)
from ._validation import check_positive_int, plain

# Stop when |J_E - J_full| falls below this absolute tolerance (§3.6, the jar's value).
OBJECTIVE_TOL = 1e-5

_FAIL = EMPTY_CLUSTER_POLICIES["fail"]
_RELOCATE = EMPTY_CLUSTER_POLICIES["relocate"]


@kernel
def log_sum(metric):
    """``sum_m log a_m`` over the a_m > 0 (§3.4)."""
    total = 0.0
    for m in range(metric.shape[0]):
        if metric[m] > 0.0:
            total += math.log(metric[m])
    return total


@kernel
def weighted_box(metric, dmax_m):
    """``D_max(a) = sum_m a_m dmax_m`` (§1.1)."""
    total = 0.0
    for m in range(metric.shape[0]):
        total += metric[m] * dmax_m[m]
    return total


@kernel
def metric_update(X, labels, centers, pairs, is_must_link, dmax_m, metric, regularisation):
    """The metric update of §3.5; returns the new diagonal ``a`` (``metric`` is not changed).

    ``S_m`` accumulates, in float64 (D8), the within-cluster term over i in index order, then
    each violated constraint in list order (ML: ``(x_im - x_jm)^2``; CL:
    ``dmax_m - (x_im - x_jm)^2``). ``a_m = regularisation * n / S_m`` if ``S_m > 0``, else
    the previous ``a_m`` (a constant-zero feature keeps its value).
    """
    n, p = X.shape
    scatter = np.zeros(p)
    for i in range(n):
        h = labels[i]
        if h < 0:
            continue
        for m in range(p):
            diff = X[i, m] - centers[h, m]
            scatter[m] += diff * diff
    for c in range(pairs.shape[0]):
        la = labels[pairs[c, 0]]
        lb = labels[pairs[c, 1]]
        if la < 0 or lb < 0:
            continue
        if is_must_link[c]:
            if la != lb:
                for m in range(p):
                    diff = X[pairs[c, 0], m] - X[pairs[c, 1], m]
                    scatter[m] += diff * diff
        elif la == lb:
            for m in range(p):
                diff = X[pairs[c, 0], m] - X[pairs[c, 1], m]
                scatter[m] += dmax_m[m] - diff * diff
    scale = regularisation * n
    new_metric = metric.copy()
    for m in range(p):
        if scatter[m] > 0.0:
            new_metric[m] = scale / scatter[m]
    return new_metric


@kernel
def full_objective(X, labels, centers, metric, pairs, is_must_link, pair_dist, dmax,
                   regularisation):
    """``J_full`` of §3.1: within-cluster term (index order), minus the log term, plus each
    violated constraint in list order. ``pair_dist`` are the pair distances under ``metric``;
    ``dmax`` is the D_max the caller wants (the one from before the metric update, §3.3)."""
    n, p = X.shape
    total = 0.0
    for i in range(n):
        h = labels[i]
        if h < 0:
            continue
        d = 0.0
        for m in range(p):
            diff = X[i, m] - centers[h, m]
            d += metric[m] * diff * diff
        total += d
    total -= regularisation * n * log_sum(metric)
    for c in range(pairs.shape[0]):
        la = labels[pairs[c, 0]]
        lb = labels[pairs[c, 1]]
        if la < 0 or lb < 0:
            continue
        if is_must_link[c]:
            if la != lb:
                total += pair_dist[c]
        elif la == lb:
            total += dmax - pair_dist[c]
    return total


@kernel
def _mpckm_loop(X, centers, labels, pairs, is_must_link, indptr, partner, entries, max_iter,
                policy, regularisation):
    """The iteration loop of §3.3-§3.6 from the initial ``centers``; ``centers`` and
    ``labels`` are updated in place. Returns ``(centers, metric, n_iter, status, objective,
    n_empty_events)``.

    Under ``"fail"`` (not in the jar, which never fails) the result keeps the centroids of the
    failing E-step, as the PCKM engine does; its metric and objective are NaN.
    """
    k = centers.shape[0]
    p = X.shape[1]
    metric = np.ones(p)
    dmax_m = box_diameters(X)
    dmax = weighted_box(metric, dmax_m)
    pair_dist = np.empty(pairs.shape[0])
    pair_sq_distances_into(pair_dist, X, pairs, metric)
    offset = -regularisation * log_sum(metric)
    XT = np.ascontiguousarray(X.T)
    dist = np.empty((k, X.shape[0]))
    costs = np.empty((2 * entries.shape[0], 2))
    n_empty_events = 0
    status = MAX_ITER
    objective = np.nan
    n_iter = 0
    for t in range(1, max_iter + 1):
        n_iter = t
        # 1. sequential E-step under a; J_E = sum of the winning penalties
        center_distances_into(dist, XT, centers, metric)
        constraint_costs_into(costs, pair_dist, is_must_link, entries, dmax)
        moved, objective_e = assign_sequential(dist, offset, indptr, partner, costs, labels)
        # 2. empty-cluster policy (§1.3)
        counts = cluster_counts(labels, k)
        n_empty = 0
        for h in range(k):
            if counts[h] == 0:
                n_empty += 1
        if n_empty > 0:
            if policy == _FAIL:
                return centers, np.full(p, np.nan), n_iter, EMPTY_CLUSTER, np.nan, n_empty_events
            n_empty_events += n_empty
            if policy == _RELOCATE:
                moved += relocate_empty(X, centers, metric, labels, counts)
        # 3. centroids (zero vector for an empty cluster)
        cluster_means_into(centers, counts, X, labels)
        # 4. metric update; 5. J_full with the D_max from before the update
        metric = metric_update(
            X, labels, centers, pairs, is_must_link, dmax_m, metric, regularisation
        )
        pair_sq_distances_into(pair_dist, X, pairs, metric)
        objective = full_objective(
            X, labels, centers, metric, pairs, is_must_link, pair_dist, dmax, regularisation
        )
        # 6. D_max and the log offset under the new a
        dmax = weighted_box(metric, dmax_m)
        offset = -regularisation * log_sum(metric)
        # 7. stop (D6)
        if moved == 0 or abs(objective_e - objective) < OBJECTIVE_TOL:
            status = CONVERGED
            break
    return centers, metric, n_iter, status, objective, n_empty_events


def mpckm_options(max_iter=100, empty_cluster="zero", regularisation=0.01):
    """The MPCKM loop's options ``(max_iter, policy, regularisation)``, validated, for
    :func:`mpckm_run`."""
    policy = empty_cluster_code(empty_cluster)
    max_iter = check_positive_int(max_iter, "max_iter")
    if (
        isinstance(regularisation, bool)
        or not isinstance(regularisation, numbers.Real)
        or not (0.0 < regularisation < math.inf)
    ):
        raise ValueError("regularisation must be a positive finite number; got "
                         f"{plain(regularisation)!r}")
    return max_iter, policy, float(regularisation)


def mpckm_engine(X, centers, labels, constraints, *, max_iter=100, empty_cluster="zero",
                 regularisation=0.01):
    """Run MPCKM (§3) from initial ``centers`` (k, p) and initial ``labels`` (n,).

    ``X`` is validated float64 (n, p); ``labels`` holds -1 for unassigned points (all -1 for
    given centres, the seed labels for Seeding, §3.2); ``constraints`` is an
    ``algorithms.constraints.Constraints`` over the n points. ``regularisation`` is lambda,
    used in the log term and the metric update. Neither input array is modified.

    Returns an :class:`EngineResult`: ``weights`` is the metric diagonal ``a`` (NaN for a
    failed fit), ``objective`` the final ``J_full`` (NaN for a failed fit) and
    ``n_empty_events`` the number of empty clusters found, summed over the checks, under
    ``"zero"`` and ``"relocate"`` (0 under ``"fail"``, as in the PCKM engine).
    """
    options = mpckm_options(max_iter, empty_cluster, regularisation)
    X = np.ascontiguousarray(X, dtype=np.float64)
    n = X.shape[0]
    centers = np.asarray(centers, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    if centers.ndim != 2 or centers.shape[1] != X.shape[1]:
        raise ValueError(
            f"centers must have shape (n_clusters, {X.shape[1]}); got {centers.shape}"
        )
    k = centers.shape[0]
    if labels.shape != (n,):
        raise ValueError(f"labels must have shape ({n},); got {labels.shape}")
    if ((labels < -1) | (labels >= k)).any():
        raise ValueError(f"labels must lie in -1..{k - 1}")
    if constraints.n_samples != n:
        raise ValueError(
            f"constraints are over {constraints.n_samples} points but X has {n} rows"
        )
    return mpckm_run(X, centers, labels, constraints, options)


def mpckm_run(X, centers, labels, constraints, options):
    """:func:`mpckm_engine` with the ``options`` of :func:`mpckm_options` on input its caller
    checked once for many fits (the runner: once per task): ``X`` C-contiguous float64,
    ``centers`` (k, p), ``labels`` (n,) in -1..k-1 from an init and ``constraints`` over the
    n points. Neither input array is modified."""
    centers = np.array(centers, dtype=np.float64, order="C")  # a copy: the loop writes it
    labels = np.array(labels, dtype=np.int64, order="C")
    centers, metric, n_iter, status, objective, n_empty_events = _mpckm_loop(
        X, centers, labels, *constraints.kernel_arrays, *options,
    )
    return EngineResult(
        labels=labels,
        centers=centers,
        weights=metric,
        n_iter=int(n_iter),
        status=int(status),
        objective=float(objective),
        n_empty_events=int(n_empty_events),
    )

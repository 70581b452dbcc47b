"""The PCKM engine (docs/method/algorithms.md §2): PCKM, and LKM as PCKM without constraints.

The loop itself is a numba function on plain arrays (``pckm_loop``) so that the sparse
engine can call it from its own compiled loop (§4.2 step 3a); ``pckm_engine`` is the thin
Python wrapper the estimators use.
"""

import numpy as np

from ._jit import kernel
from ._kernels import (
    assign_sequential,
    assign_sequential_kept,
    box_diameters,
    center_distances_into,
    cluster_means_into,
    constraint_costs_into,
    pair_sq_distances_into,
    partner_penalties_into,
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
from ._validation import check_positive_int

POLICY_FAIL = EMPTY_CLUSTER_POLICIES["fail"]
POLICY_ZERO = EMPTY_CLUSTER_POLICIES["zero"]
POLICY_RELOCATE = EMPTY_CLUSTER_POLICIES["relocate"]


@kernel
def pckm_loop(Y, YT, centers, labels, costs, largest, indptr, partner, max_iter, policy,
              with_objective):
    """Run §2.2 step 2 on ``Y`` in place; returns ``(n_iter, status, objective, n_empty)``.

    On entry ``centers`` holds C0 and ``labels`` is all -1; on exit they hold the final
    centroids (the means of the last M-step) and labels. ``YT`` is ``Y`` transposed
    (C-contiguous, for the E-step's distances); ``costs`` holds the constraint terms of
    :func:`constraint_costs_into` for the squared constraint distances on ``Y`` and the box
    of §1.1 on ``Y``, and ``largest`` their largest absolute value (which
    :func:`constraint_costs_into` returns).

    Empty clusters are checked after every E-step (§1.3). Under ``"fail"`` the run stops
    with status ``empty_cluster`` and ``centers`` keeps the centroids of that E-step.
    ``n_empty`` counts empty-cluster events: one per empty cluster per E-step. A relocated
    point counts as a label change, so a pass with a relocation never converges.

    "l == l_prev" is tested as "no label changed in the pass": each label is written once
    per pass, so the E-step's change count is exactly the number of i with l_i != l_prev_i.

    With constraints the E-step is :func:`assign_sequential_kept`: the labels of
    :func:`assign_sequential`, without walking the partner lists of the points whose choice
    is clear, and without the objective. ``with_objective`` asks for the objective of the
    last pass, the sum of its winning penalties: the pass that reaches ``max_iter`` is then
    :func:`assign_sequential` itself, and a converged run computes its last pass again with
    it (from the same labels and distances it moves nothing; it only sums the winners).
    Without ``with_objective`` (the s-path's inner runs, which use the labels and centroids
    only), and after an empty-cluster failure, the objective is NaN.
    """
    k = centers.shape[0]
    n, p = Y.shape
    metric = np.ones(p)  # unit metric: 1.0 * diff is diff, so the sums are the plain ones
    dist = np.empty((k, n))
    means = np.empty((k, p))
    counts = np.empty(k, dtype=np.int64)
    objective = np.nan
    n_empty = 0
    # With constraints: every point's partner terms per cluster, and the pass they were last
    # summed afresh in (labels all -1: 0).
    kept = costs.shape[0] > 0
    penalty = np.zeros((n if kept else 0, max(k, 4)))
    fresh = 0
    for t in range(1, max_iter + 1):
        center_distances_into(dist, YT, centers, metric)
        exact = not kept or (with_objective and t == max_iter)
        if exact:
            moved, objective = assign_sequential(
                dist, 0.0, indptr, partner, costs, labels
            )
        else:
            moved = assign_sequential_kept(dist, indptr, partner, costs, labels, penalty,
                                           largest, t - fresh)
        if moved > 0:
            cluster_means_into(means, counts, Y, labels)
        # else the labels are those of the last M-step (pass 1 moves every label off -1), so
        # ``means`` and ``counts`` already hold their means and sizes: the final pass of a
        # converged run computes no centroids.
        empty = 0
        for h in range(k):
            if counts[h] == 0:
                empty += 1
        if empty > 0:
            if policy == POLICY_FAIL:
                return t, EMPTY_CLUSTER, np.nan, n_empty
            n_empty += empty
            if policy == POLICY_RELOCATE:
                moved += relocate_empty(Y, centers, metric, labels, counts)
                cluster_means_into(means, counts, Y, labels)
                if kept:
                    partner_penalties_into(penalty, labels, indptr, partner, costs)
                    fresh = t
        for h in range(k):
            for m in range(p):
                centers[h, m] = means[h, m]
        if moved == 0:
            if with_objective and not exact:
                objective = assign_sequential(dist, 0.0, indptr, partner, costs, labels)[1]
            return t, CONVERGED, objective, n_empty
    return max_iter, MAX_ITER, objective, n_empty


@kernel
def constraint_costs(Y, pairs, is_must_link, entries):
    """The ``costs`` of :func:`pckm_loop` on ``Y`` (§2.2b), from the squared constraint
    distances and the box of §1.1, both on ``Y``, and their largest absolute term:
    ``(costs, largest)``."""
    pair_dist = np.empty(pairs.shape[0])
    pair_sq_distances_into(pair_dist, Y, pairs, None)
    costs = np.empty((2 * entries.shape[0], 2))
    largest = constraint_costs_into(costs, pair_dist, is_must_link, entries,
                                    box_diameters(Y).sum())
    return costs, largest


@kernel
def pckm_fit(X, C0, pairs, is_must_link, indptr, partner, entries, max_iter, policy):
    """§2.2 in full on ``X``: returns ``(labels, centers, n_iter, status, objective, n_empty)``.
    """
    n = X.shape[0]
    centers = C0.copy()
    labels = np.full(n, -1, dtype=np.int64)
    costs, largest = constraint_costs(X, pairs, is_must_link, entries)
    n_iter, status, objective, n_empty = pckm_loop(
        X, np.ascontiguousarray(X.T), centers, labels, costs, largest, indptr, partner,
        max_iter, policy, True,
    )
    return labels, centers, n_iter, status, objective, n_empty


def pckm_options(max_iter=25, empty_cluster="fail"):
    """The PCKM kernels' options ``(max_iter, policy)``, validated, for :func:`pckm_run`."""
    return check_positive_int(max_iter, "max_iter"), empty_cluster_code(empty_cluster)


def pckm_engine(X, centers, constraints, *, max_iter=25, empty_cluster="fail", cache=None):
    """PCKM (LKM when ``constraints`` is empty) from initial centres (§2.2).

    ``X`` (n, p) float64 C-contiguous, ``centers`` (k, p) float64, ``constraints`` a
    validated :class:`~pcskm.algorithms.constraints.Constraints`. ``cache``: a
    ``_sparse.FitCache`` of this ``X`` that may hold this clustering (the first clustering
    of a PCSKM path from the same centres), or None. Returns an
    :class:`~pcskm.algorithms._result.EngineResult` whose ``weights`` are ones (NaN on failure) and
    whose ``objective`` is the sum of the winning penalties of the last pass (NaN on failure).
    """
    return pckm_run(np.ascontiguousarray(X, dtype=np.float64), centers, constraints,
                    pckm_options(max_iter, empty_cluster), cache)


def pckm_run(X, centers, constraints, options, cache=None):
    """:func:`pckm_engine` with the ``options`` of :func:`pckm_options` and ``X`` C-contiguous
    float64: what its caller checked once for many fits (the runner: once per task)."""
    max_iter, policy = options
    C0 = np.array(centers, dtype=np.float64, order="C")  # writable: one compiled signature
    if cache is not None and cache.serves(constraints):
        fitted = cache.clustering(X, C0, max_iter, policy)
    else:
        fitted = pckm_fit(X, C0, *constraints.kernel_arrays, max_iter, policy)
    labels, final_centers, n_iter, status, objective, n_empty = fitted
    failed = status == EMPTY_CLUSTER
    weights = np.full(X.shape[1], np.nan if failed else 1.0)
    return EngineResult(
        labels=labels,
        centers=final_centers,
        weights=weights,
        n_iter=int(n_iter),
        status=int(status),
        objective=float("nan") if failed else float(objective),
        n_empty_events=int(n_empty),
    )

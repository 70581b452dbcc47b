"""PCKM engine (spec ``algorithms.md`` §2): worked examples and the plain reference."""

from collections import Counter

import numpy as np
import pytest
from reference.pckm import class_pairs, random_problem
from reference.pckm import pckm as reference_pckm

from pcskm.algorithms._kernels import (
    assign_sequential,
    assign_sequential_kept,
    center_distances_into,
    cluster_means_into,
    constraint_costs_into,
    partner_penalties_into,
    relocate_empty,
)
from pcskm.algorithms._pckm import constraint_costs, pckm_engine, pckm_loop
from pcskm.algorithms._result import EMPTY_CLUSTER_POLICIES, STATUS_NAMES
from pcskm.algorithms.constraints import Constraints

N_PROBLEMS = 150


def run(X, C0, must_link=None, cannot_link=None, **kwargs):
    X = np.asarray(X, dtype=float)
    constraints = Constraints.from_pairs(must_link, cannot_link, n_samples=len(X))
    return pckm_engine(X, np.asarray(C0, dtype=float), constraints, **kwargs)


def test_sequential_update_and_skipped_partner():
    """§2.3 first example: x = (0, 4, 6, 10), C0 = (0, 10), ML (1, 2)."""
    result = run([[0], [4], [6], [10]], [[0], [10]], must_link=[[1, 2]])
    assert result.labels.tolist() == [0, 0, 1, 1]
    assert result.n_iter == 2
    assert STATUS_NAMES[result.status] == "converged"
    assert result.centers.ravel().tolist() == [2.0, 8.0]
    # Pass 2 winning penalties from the table: 4, 8, 8, 4 (the ML stays violated).
    assert result.objective == 4 + 8 + 8 + 4


def test_cannot_link_example():
    """§2.3 second example: CL (0, 1) with D_max = 100 sends point 1 to cluster 1."""
    result = run([[0], [1], [9], [10]], [[0], [10]], cannot_link=[[0, 1]])
    assert result.labels.tolist() == [0, 1, 1, 1]
    assert result.n_iter == 2
    np.testing.assert_allclose(result.centers.ravel(), [0.0, 20 / 3], rtol=1e-15)


def test_tie_goes_to_lowest_cluster():
    """§2.3 third example: x = 5 is equidistant from 0 and 10 and joins cluster 0."""
    result = run([[0], [5], [10]], [[0], [10]], max_iter=1)
    assert result.labels.tolist() == [0, 0, 1]


def test_failure_keeps_labels_and_nan_weights():
    """§1.2-§1.3: an empty cluster under "fail" stops the run; weights are NaN."""
    result = run([[0], [1], [2]], [[0], [100]])
    assert STATUS_NAMES[result.status] == "empty_cluster"
    assert result.labels.tolist() == [0, 0, 0]
    assert result.n_iter == 1
    assert np.isnan(result.weights).all()


def test_zero_policy_keeps_origin_centre():
    """§1.3 "zero": the empty cluster's centroid becomes the origin and may attract points."""
    result = run([[-5.0], [-4], [1], [2]], [[-4.5], [100]], empty_cluster="zero")
    # Pass 1: all points to cluster 0, cluster 1 -> origin; pass 2: 1 and 2 join the origin.
    assert result.labels.tolist() == [0, 0, 1, 1]
    assert result.n_empty_events == 1
    np.testing.assert_array_equal(result.weights, [1.0])


def test_relocate_policy_takes_farthest_point():
    """§1.3 "relocate": the empty cluster takes the point farthest from its own centroid."""
    result = run([[0.0], [1], [2], [10]], [[1.0], [100]], empty_cluster="relocate", max_iter=1)
    assert result.labels.tolist() == [0, 0, 0, 1]
    assert result.n_empty_events == 1


def test_relocated_point_counts_as_a_change():
    """§1.3: relocated points count as label changes, even when relocation restores l_prev.

    x = (10, 0, 4), ML (0, 1), C0 = (1, 11). Pass 1: labels (1, 0, 0), mu = (2, 10).
    Pass 2: point 0 pays the ML cost 100 in cluster 1 versus 64 in cluster 0 and leaves;
    cluster 1 is empty and takes back point 0 (the costliest): labels equal l_prev, but a
    point was relocated, so the run does not converge and repeats this pass to max_iter.
    """
    result = run([[10.0], [0], [4]], [[1.0], [11]], must_link=[[0, 1]],
                 empty_cluster="relocate", max_iter=6)
    assert result.labels.tolist() == [1, 0, 0]
    assert STATUS_NAMES[result.status] == "max_iter"
    assert result.n_iter == 6
    assert result.n_empty_events == 5


@pytest.mark.parametrize("empty_cluster", ["fail", "zero", "relocate"])
@pytest.mark.parametrize("constrained", [False, True], ids=["LKM", "PCKM"])
def test_matches_plain_reference(empty_cluster, constrained):
    """Identical labels, n_iter, status and empty events; centres to 1e-10 (§2.2, §1.3)."""
    rng = np.random.default_rng([11, constrained, len(empty_cluster)])
    seen = Counter()
    for trial in range(N_PROBLEMS):
        X, C0, ml, cl, max_iter = random_problem(rng, constrained=constrained)
        got = run(X, C0, ml, cl, max_iter=max_iter, empty_cluster=empty_cluster)
        want = reference_pckm(X, C0, ml, cl, max_iter=max_iter, empty_cluster=empty_cluster)
        where = f"trial {trial}"
        assert STATUS_NAMES[got.status] == want["status"], where
        assert got.n_iter == want["n_iter"], where
        np.testing.assert_array_equal(got.labels, want["labels"], err_msg=where)
        np.testing.assert_allclose(got.centers, want["centers"], rtol=0, atol=1e-10,
                                   err_msg=where)
        assert got.n_empty_events == want["n_empty"], where
        if want["status"] != "empty_cluster":
            assert got.objective == pytest.approx(want["objective"], rel=1e-12, abs=1e-10)
        seen[want["status"]] += 1
        seen["empty events"] += want["n_empty"] > 0
    # The random problems must exercise every branch of the policy under test.
    assert seen["converged"] > 0 and seen["max_iter"] > 0
    if empty_cluster == "fail":
        assert seen["empty_cluster"] > 0
    else:
        assert seen["empty events"] > 0


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 7])
def test_sequential_assignment_matches_the_rule_written_out(k):
    """One E-step pass (§2.2b) against the rule applied point by point in index order: the
    penalty of cluster h starts at dist[h, i] + offset and adds, for every constraint of i
    in list order whose other point is labelled l_j, its distance (must-link, h != l_j) or
    dmax minus it (cannot-link, h == l_j); the lowest h wins ties. Both paths of the kernel
    (k <= 4 in registers, k > 4 cluster by cluster), unassigned partners included."""
    rng = np.random.default_rng([31, k])
    for trial in range(40):
        n = int(rng.integers(3, 30))
        constraints = Constraints.from_pairs(*class_pairs(rng, n, 50), n_samples=n)
        # small integers: exact ties between clusters
        dist = rng.integers(0, 4, size=(k, n)).astype(float)
        pair_dist = rng.integers(0, 3, size=len(constraints)).astype(float)
        dmax, offset = 5.0, float(rng.choice([0.0, -0.5]))
        labels = rng.integers(-1, k, size=n)

        want = labels.copy()
        want_moved, want_objective = 0, 0.0
        for i in range(n):
            penalties = []
            for h in range(k):
                penalty = dist[h, i] + offset
                for c, (a, b) in enumerate(constraints.pairs):
                    if i not in (a, b) or want[b if a == i else a] < 0:
                        continue
                    other = want[b if a == i else a]
                    if constraints.is_must_link[c] and h != other:
                        penalty += pair_dist[c]
                    elif not constraints.is_must_link[c] and h == other:
                        penalty += dmax - pair_dist[c]
                penalties.append(penalty)
            best = int(np.argmin(penalties))
            want_moved += int(want[i] != best)
            want[i] = best
            want_objective += penalties[best]

        costs = np.empty((2 * len(constraints), 2))
        constraint_costs_into(costs, pair_dist, constraints.is_must_link, constraints.entries,
                              dmax)
        got = labels.copy()
        moved, objective = assign_sequential(dist, offset, constraints.indptr,
                                             constraints.partner, costs, got)
        where = f"trial {trial}"
        np.testing.assert_array_equal(got, want, err_msg=where)
        assert moved == want_moved, where
        assert objective == want_objective, where


def test_kept_assignment_walks_the_partners_of_a_choice_that_rounding_decides():
    """A hand-made point whose exact penalties and kept penalties order the clusters
    differently: four must-link partners in cluster 1 at distance 1e-16 each add 1e-16 to
    cluster 0, which the exact sum from dist[0] = 1.0 rounds away (each addition stays at
    1.0), so cluster 0 wins against dist[1] = 1.0 + 2^-52; the kept sum of the four terms,
    4e-16, added to 1.0 rounds to 1.0 + 2^-51, which would lose. The margin sends the point
    to the exact rule, which chooses 0, as assign_sequential does."""
    n = 5
    constraints = Constraints.from_pairs([[0, 1], [0, 2], [0, 3], [0, 4]], None, n_samples=n)
    pair_dist = np.full(len(constraints), 1e-16)
    costs = np.empty((2 * len(constraints), 2))
    largest = constraint_costs_into(costs, pair_dist, constraints.is_must_link,
                                    constraints.entries, 1.0)
    dist = np.array([[1.0, 9.0, 9.0, 9.0, 9.0], [1.0 + 2.0 ** -52, 0.0, 0.0, 0.0, 0.0]])
    assert 1.0 + 4e-16 > dist[1, 0]  # the kept sum alone would choose cluster 1
    labels = np.array([-1, 1, 1, 1, 1])
    penalty = np.empty((n, 4))
    partner_penalties_into(penalty, labels, constraints.indptr, constraints.partner, costs)
    assert penalty[0, 0] == pytest.approx(4e-16, rel=1e-15) and penalty[0, 1] == 0.0
    exact = labels.copy()
    assign_sequential(dist, 0.0, constraints.indptr, constraints.partner, costs, exact)
    kept = labels.copy()
    moved = assign_sequential_kept(dist, constraints.indptr, constraints.partner, costs, kept,
                                   penalty, largest, 1)
    assert exact[0] == 0 and kept.tolist() == exact.tolist() and moved == 1


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 7])
def test_kept_assignment_matches_the_rule_over_passes(k):
    """Passes of assign_sequential_kept with its penalties kept from pass to pass (the
    partners' labels change between them, and the distances too) give the labels and change
    counts of assign_sequential, on small integers (exact ties: the exact rule decides them)
    and on spread values; both paths of the kept update (k <= 4 and k > 4)."""
    rng = np.random.default_rng([37, k])
    for trial in range(40):
        n = int(rng.integers(3, 30))
        constraints = Constraints.from_pairs(*class_pairs(rng, n, 60), n_samples=n)
        integers = trial % 2 == 0
        pair_dist = (rng.integers(0, 3, size=len(constraints)).astype(float) if integers
                     else rng.random(len(constraints)) * 10.0 ** rng.integers(-3, 3))
        costs = np.empty((2 * len(constraints), 2))
        largest = constraint_costs_into(costs, pair_dist, constraints.is_must_link,
                                        constraints.entries, pair_dist.max(initial=0.0) + 1.0)
        assert largest == np.abs(costs).max(initial=0.0)
        exact = np.full(n, -1)
        kept = exact.copy()
        penalty = np.zeros((n, max(k, 4)))
        for n_pass in range(1, 6):
            dist = (rng.integers(0, 4, size=(k, n)).astype(float) if integers
                    else rng.random((k, n)) * 10.0)
            want = assign_sequential(dist, 0.0, constraints.indptr, constraints.partner,
                                     costs, exact)[0]
            got = assign_sequential_kept(dist, constraints.indptr, constraints.partner, costs,
                                         kept, penalty, largest, n_pass)
            where = f"trial {trial}, pass {n_pass}"
            np.testing.assert_array_equal(kept, exact, err_msg=where)
            assert got == want, where
        fresh = np.empty_like(penalty)
        partner_penalties_into(fresh, kept, constraints.indptr, constraints.partner, costs)
        np.testing.assert_allclose(penalty[:, :k], fresh[:, :k], rtol=1e-12, atol=1e-12)


def exact_pckm_loop(Y, centers, labels, costs, indptr, partner, max_iter, policy):
    """§2.2 step 2 with assign_sequential at every pass, written out from the kernels:
    ``(n_iter, status, objective, n_empty)``, the objective of the last pass."""
    k, p = centers.shape
    dist = np.empty((k, len(Y)))
    means, counts = np.empty((k, p)), np.zeros(k, dtype=np.int64)
    n_empty = 0
    for t in range(1, max_iter + 1):
        center_distances_into(dist, np.ascontiguousarray(Y.T), centers, np.ones(p))
        moved, objective = assign_sequential(dist, 0.0, indptr, partner, costs, labels)
        if moved:
            cluster_means_into(means, counts, Y, labels)
        empty = int((counts == 0).sum())
        if empty:
            if policy == EMPTY_CLUSTER_POLICIES["fail"]:
                return t, "empty_cluster", objective, n_empty
            n_empty += empty
            if policy == EMPTY_CLUSTER_POLICIES["relocate"]:
                moved += relocate_empty(Y, centers, np.ones(p), labels, counts)
                cluster_means_into(means, counts, Y, labels)
        centers[:] = means
        if moved == 0:
            return t, "converged", objective, n_empty
    return max_iter, "max_iter", objective, n_empty


@pytest.mark.parametrize("empty_cluster", ["fail", "zero", "relocate"])
def test_pckm_loop_is_the_loop_of_exact_passes(empty_cluster):
    """pckm_loop (the kept assignment, with and without the objective) ends with the labels,
    centroids (bit for bit), pass count, status and empty-cluster events of the loop of
    exact passes written out, and with ``with_objective`` the same objective bits (NaN
    after a failure), on the reference's random problems, relocations included."""
    rng = np.random.default_rng(41)
    policy = EMPTY_CLUSTER_POLICIES[empty_cluster]
    seen = Counter()
    for trial in range(N_PROBLEMS):
        X, C0, must_link, cannot_link, max_iter = random_problem(rng)
        X = np.ascontiguousarray(X, dtype=float)
        constraints = Constraints.from_pairs(must_link, cannot_link, n_samples=len(X))
        costs, largest = constraint_costs(X, *constraints.kernel_arrays[:2],
                                          constraints.entries)
        want_centers, want_labels = np.array(C0, dtype=float), np.full(len(X), -1)
        n_iter, status, objective, n_empty = exact_pckm_loop(
            X, want_centers, want_labels, costs, constraints.indptr, constraints.partner,
            max_iter, policy)
        failed = status == "empty_cluster"
        for with_objective in (True, False):
            centers, labels = np.array(C0, dtype=float), np.full(len(X), -1)
            got = pckm_loop(X, np.ascontiguousarray(X.T), centers, labels, costs, largest,
                            constraints.indptr, constraints.partner, max_iter, policy,
                            with_objective)
            where = f"trial {trial}, with_objective={with_objective}"
            np.testing.assert_array_equal(labels, want_labels, err_msg=where)
            assert centers.tobytes() == want_centers.tobytes(), where
            assert (got[0], STATUS_NAMES[got[1]], got[3]) == (n_iter, status, n_empty), where
            if with_objective and not failed:
                assert np.float64(got[2]).tobytes() == np.float64(objective).tobytes(), where
            else:
                assert np.isnan(got[2]), where
        seen[status] += 1
        seen["empty events"] += n_empty > 0
    assert seen["converged"] > 0 and seen["max_iter"] > 0
    assert seen["empty_cluster"] > 0 if empty_cluster == "fail" else seen["empty events"] > 0

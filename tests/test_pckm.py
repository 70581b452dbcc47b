"""PCKM engine (spec ``algorithms.md`` §2): worked examples and the plain reference."""

from collections import Counter

import numpy as np
import pytest
from reference.pckm import pckm as reference_pckm
from reference.pckm import random_problem

from pcskm.algorithms._kernels import assign_sequential, constraint_costs_into
from pcskm.algorithms._pckm import pckm_engine
from pcskm.algorithms._result import STATUS_NAMES
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
        first, second = np.triu_indices(n, 1)
        chosen = rng.choice(len(first), size=int(rng.integers(0, min(50, len(first)))),
                            replace=False)
        truth = rng.integers(0, 3, size=n)
        pairs = np.stack([first[chosen], second[chosen]], axis=1)
        same = truth[pairs[:, 0]] == truth[pairs[:, 1]]
        constraints = Constraints.from_pairs(pairs[same], pairs[~same], n_samples=n)
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

        costs = np.empty((len(constraints.link), 2))
        constraint_costs_into(costs, pair_dist, constraints.is_must_link, constraints.link,
                              dmax)
        got = labels.copy()
        moved, objective = assign_sequential(dist, offset, constraints.indptr,
                                             constraints.partner, costs, got)
        where = f"trial {trial}"
        np.testing.assert_array_equal(got, want, err_msg=where)
        assert moved == want_moved, where
        assert objective == want_objective, where

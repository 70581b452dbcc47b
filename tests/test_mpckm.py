"""The MPCKM engine (spec ``algorithms.md`` §3) against the plain reference, the worked example
of §3.5, the fixed-point identity of the metric update, and the log term."""

from collections import Counter

import numpy as np
import pytest
from reference.constraints import consistent_cannot_links
from reference.mpckm import mpckm as reference_mpckm
from sklearn.datasets import load_iris

from pcskm.algorithms._kernels import box_diameters
from pcskm.algorithms._mpckm import metric_update, mpckm_engine, weighted_box
from pcskm.algorithms._result import EMPTY_CLUSTER, FAILED, STATUS_NAMES
from pcskm.algorithms.constraints import Constraints

POLICIES = ("zero", "fail", "relocate")
N_PROBLEMS = 240


def random_problem(seed):
    """A small random MPCKM problem; every third one uses each empty-cluster policy."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 31))
    p = int(rng.integers(1, 6))
    k = int(rng.integers(2, min(5, n) + 1))
    if seed % 2 == 0:  # small integers: exact ties in distances
        X = rng.integers(0, 4, size=(n, p)).astype(np.float64)
    else:
        X = rng.normal(size=(n, p)) * rng.uniform(0.1, 10.0, size=p) + rng.normal(size=p)
    if p > 1 and seed % 5 == 0:
        X[:, rng.integers(p)] = 0.0  # a constant-zero feature: its a_m must stay 1
    hidden = rng.integers(k, size=n)
    all_pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)])
    m = int(rng.integers(0, min(len(all_pairs), 2 * n) + 1)) if seed % 7 else 0
    pairs = all_pairs[rng.choice(len(all_pairs), size=m, replace=False)]
    is_ml = (
        hidden[pairs[:, 0]] == hidden[pairs[:, 1]] if seed % 3 else rng.random(m) < 0.5
    )
    centers = X[rng.choice(n, size=k, replace=False)].copy()
    if seed % 4 == 1:  # a far-away centre: empty clusters
        centers[rng.integers(k)] = 50.0 + rng.normal(size=p)
    labels = np.full(n, -1, dtype=np.int64)
    if seed % 4 >= 2:  # partial seed labels
        seeded = rng.random(n) < 0.4
        labels[seeded] = rng.integers(k, size=int(seeded.sum()))
    max_iter = int(rng.integers(1, 6)) if seed % 9 == 0 else 100
    return dict(
        X=X, centers=centers, labels=labels, must_link=pairs[is_ml],
        cannot_link=consistent_cannot_links(pairs[is_ml], pairs[~is_ml], n),
        max_iter=max_iter, empty_cluster=POLICIES[seed % 3],
    )


def run_engine(problem):
    constraints = Constraints.from_pairs(
        problem["must_link"], problem["cannot_link"], n_samples=len(problem["X"])
    )
    return mpckm_engine(
        problem["X"], problem["centers"], problem["labels"], constraints,
        max_iter=problem["max_iter"], empty_cluster=problem["empty_cluster"],
    )


@pytest.mark.parametrize("seed", range(N_PROBLEMS))
def test_engine_matches_plain_reference(seed):
    problem = random_problem(seed)
    inputs = {key: np.copy(problem[key]) for key in ("X", "centers", "labels")}
    result = run_engine(problem)
    expected = reference_mpckm(
        problem["X"], problem["centers"], problem["labels"], problem["must_link"],
        problem["cannot_link"], max_iter=problem["max_iter"],
        empty_cluster=problem["empty_cluster"],
    )
    for key, value in inputs.items():
        np.testing.assert_array_equal(problem[key], value, err_msg=f"{key} was modified")
    np.testing.assert_array_equal(result.labels, expected["labels"])
    assert result.n_iter == expected["n_iter"]
    assert STATUS_NAMES[result.status] == expected["status"]
    assert result.n_empty_events == expected["n_empty_events"]
    np.testing.assert_allclose(result.centers, expected["centers"], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(result.weights, expected["weights"], rtol=1e-10, atol=1e-10)
    if result.status in FAILED:
        assert np.isnan(result.weights).all() and np.isnan(result.objective)
    else:
        assert result.objective == pytest.approx(expected["objective"], rel=1e-8, abs=1e-12)
        constant_zero = (problem["X"] == 0).all(axis=0)
        np.testing.assert_array_equal(result.weights[constant_zero], 1.0)


def test_random_problems_cover_every_path():
    """The problems above reach every status, empty clusters under every policy, constant-zero
    features, seed labels and constraints of both kinds."""
    statuses, events = Counter(), Counter()
    for seed in range(N_PROBLEMS):
        problem = random_problem(seed)
        result = run_engine(problem)
        statuses[STATUS_NAMES[result.status]] += 1
        if result.n_empty_events or result.status == EMPTY_CLUSTER:
            events[problem["empty_cluster"]] += 1
    assert set(statuses) == {"converged", "max_iter", "empty_cluster"}, statuses
    assert set(events) == set(POLICIES), events


def test_metric_update_worked_example():
    """§3.5: S = (34, 8), a = (0.04/34, 0.04/8) = (0.0011765, 0.005), D_max(a) = 0.049412."""
    X = np.array([[0, 0], [1, 2], [4, 0], [5, 2]], dtype=np.float64)
    labels = np.array([0, 0, 1, 1], dtype=np.int64)
    centers = np.array([[0.5, 1.0], [4.5, 1.0]])
    constraints = Constraints.from_pairs([[1, 2]], [[0, 1]], n_samples=4)
    dmax_m = box_diameters(X)
    np.testing.assert_array_equal(dmax_m, [25.0, 4.0])
    a = metric_update(
        X, labels, centers, constraints.pairs, constraints.is_must_link, dmax_m, np.ones(2), 0.01
    )
    np.testing.assert_allclose(a, [0.04 / 34, 0.04 / 8], rtol=1e-14)
    np.testing.assert_allclose(a, [0.0011765, 0.005], atol=5e-8)
    assert weighted_box(a, dmax_m) == pytest.approx(0.049412, abs=5e-7)


def test_metric_update_keeps_weight_of_feature_without_scatter():
    """S_m = 0 (a constant-zero feature) keeps the previous a_m."""
    X = np.array([[0.0, 1.0], [0.0, 3.0], [0.0, 10.0]])
    a = metric_update(
        X, np.array([0, 0, 1]), np.array([[0.0, 2.0], [0.0, 10.0]]), np.empty((0, 2), np.int64),
        np.empty(0, bool), box_diameters(X), np.array([0.7, 1.0]), 0.01,
    )
    np.testing.assert_allclose(a, [0.7, 0.03 / 2.0], rtol=1e-14)


def _iris():
    data = load_iris()
    return np.ascontiguousarray(data.data, dtype=np.float64), data.target


def test_iris_fixed_point_without_constraints():
    """Without constraints the returned a satisfies sum_i |x_i - mu|^2_a = lambda n p = 6.0
    (§3.5 background), the centres are the class means of the labels, and J_full matches."""
    X, target = _iris()
    n, p = X.shape
    centers = X[[np.flatnonzero(target == c)[0] for c in range(3)]]
    result = mpckm_engine(X, centers, np.full(n, -1), Constraints.empty(n))
    assert STATUS_NAMES[result.status] == "converged"
    mu = np.array([X[result.labels == h].mean(axis=0) for h in range(3)])
    np.testing.assert_allclose(result.centers, mu, rtol=1e-12)
    within = float(np.sum(result.weights * (X - mu[result.labels]) ** 2))
    assert within == pytest.approx(0.01 * n * p, rel=1e-12)
    assert within == pytest.approx(6.0, rel=1e-12)
    expected_objective = within - 0.01 * n * np.sum(np.log(result.weights))
    assert result.objective == pytest.approx(expected_objective, rel=1e-12)


def test_iris_fixed_point_with_violated_constraints():
    """With violations the same identity holds once the constraint terms of S_m are added:
    sum_m a_m S_m = lambda n p."""
    X, target = _iris()
    n, p = X.shape
    rng = np.random.default_rng(11)
    pairs = np.sort(np.array([rng.choice(n, size=2, replace=False) for _ in range(300)]), axis=1)
    pairs = np.unique(pairs, axis=0)
    noisy = np.where(rng.random(n) < 0.2, rng.integers(3, size=n), target)  # some wrong types
    same = noisy[pairs[:, 0]] == noisy[pairs[:, 1]]
    constraints = Constraints.from_pairs(pairs[same], pairs[~same], n_samples=n)
    centers = X[rng.choice(n, size=3, replace=False)]
    result = mpckm_engine(X, centers, np.full(n, -1), constraints)
    assert result.status not in FAILED
    labels, a = result.labels, result.weights
    mu = np.array([X[labels == h].mean(axis=0) for h in range(3)])
    box = (np.maximum(X.max(axis=0), 0) - np.minimum(X.min(axis=0), 0)) ** 2
    diff2 = (X[pairs[:, 0]] - X[pairs[:, 1]]) ** 2
    la, lb = labels[pairs[:, 0]], labels[pairs[:, 1]]
    bad_ml, bad_cl = same & (la != lb), ~same & (la == lb)
    assert bad_ml.any() or bad_cl.any()
    scatter = (
        ((X - mu[labels]) ** 2).sum(axis=0) + diff2[bad_ml].sum(axis=0)
        + (box - diff2[bad_cl]).sum(axis=0)
    )
    assert float(np.sum(a * scatter)) == pytest.approx(0.01 * n * p, rel=1e-12)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("scale", [0.25, 2.0, 64.0])
def test_log_term_never_changes_assignments(seed, scale):
    """Scaling lambda by a power of two scales a exactly and changes only the log term, so
    after the same number of passes the labels and centres are the same and a scales."""
    rng = np.random.default_rng(1000 + seed)
    n, p, k = 40, 4, 3
    X = rng.normal(size=(n, p)) * rng.uniform(0.5, 5.0, size=p)
    hidden = rng.integers(k, size=n)
    pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)])
    pairs = pairs[rng.choice(len(pairs), size=60, replace=False)]
    same = hidden[pairs[:, 0]] == hidden[pairs[:, 1]]
    constraints = Constraints.from_pairs(pairs[same], pairs[~same], n_samples=n)
    centers = X[rng.choice(n, size=k, replace=False)]
    labels = np.full(n, -1)

    def fit(lam, max_iter=100):
        return mpckm_engine(X, centers, labels, constraints, max_iter=max_iter,
                            regularisation=lam)

    n_passes = min(fit(0.01).n_iter, fit(0.01 * scale).n_iter)
    base, scaled = fit(0.01, n_passes), fit(0.01 * scale, n_passes)
    assert base.n_iter == scaled.n_iter == n_passes
    np.testing.assert_array_equal(base.labels, scaled.labels)
    np.testing.assert_array_equal(base.centers, scaled.centers)
    np.testing.assert_allclose(scaled.weights, scale * base.weights, rtol=1e-14)


def test_empty_cluster_fail_returns_failed_result():
    X = np.array([[0.0], [1.0], [2.0], [10.0]])
    result = mpckm_engine(
        X, np.array([[0.0], [100.0]]), np.full(4, -1), Constraints.empty(4), empty_cluster="fail"
    )
    assert result.status == EMPTY_CLUSTER and result.n_iter == 1
    assert result.n_empty_events == 0  # events are recorded under "zero" and "relocate"
    np.testing.assert_array_equal(result.labels, [0, 0, 0, 0])
    assert np.isnan(result.weights).all() and np.isnan(result.objective)


def test_relocated_points_count_as_label_changes():
    """Seed labels that the E-step keeps, with cluster 1 empty: relocation moves point 3 (the
    costliest), so pass 1 has a change and the run stops only after pass 2 (§1.3, §3.6)."""
    X = np.array([[0.0], [1.0], [2.0], [10.0]])
    centers, labels = np.array([[0.0], [100.0]]), np.zeros(4, dtype=np.int64)
    result = mpckm_engine(X, centers, labels, Constraints.empty(4), empty_cluster="relocate")
    expected = reference_mpckm(X, centers, labels, [], [], empty_cluster="relocate")
    assert result.n_iter == expected["n_iter"] == 2
    assert result.n_empty_events == expected["n_empty_events"] == 1
    np.testing.assert_array_equal(result.labels, [0, 0, 0, 1])
    np.testing.assert_array_equal(result.centers, [[1.0], [10.0]])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"empty_cluster": "drop"}, "empty_cluster"),
        ({"max_iter": 0}, "max_iter"),
        ({"regularisation": 0.0}, "regularisation"),
        ({"regularisation": np.inf}, "regularisation"),
    ],
)
def test_bad_parameters_raise(kwargs, message):
    X = np.array([[0.0], [1.0], [5.0]])
    with pytest.raises(ValueError, match=message):
        mpckm_engine(X, X[:2], np.full(3, -1), Constraints.empty(3), **kwargs)


def test_bad_labels_and_constraints_raise():
    X = np.array([[0.0], [1.0], [5.0]])
    with pytest.raises(ValueError, match="labels"):
        mpckm_engine(X, X[:2], np.array([0, 2, -1]), Constraints.empty(3))
    with pytest.raises(ValueError, match="constraints"):
        mpckm_engine(X, X[:2], np.full(3, -1), Constraints.empty(4))

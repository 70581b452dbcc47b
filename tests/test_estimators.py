"""The five scikit-learn estimators: API, wiring against the plain references, fit_path,
known answers and bad input."""

import warnings

import numpy as np
import pytest
from reference.inits import dkmpp as reference_dkmpp
from reference.inits import seeding as reference_seeding
from reference.mpckm import mpckm as reference_mpckm
from reference.pckm import pckm as reference_pckm
from reference.pckm import random_problem
from reference.sparse import sparse_kmeans as reference_sparse
from sklearn.base import clone
from sklearn.cluster import KMeans
from sklearn.utils.estimator_checks import parametrize_with_checks

from pcskm.algorithms import (
    ClusteringFailedWarning,
    LloydKMeans,
    MPCKMeans,
    PCKMeans,
    PCSKMeans,
    SparseKMeans,
)

ESTIMATORS = [LloydKMeans, PCKMeans, MPCKMeans, SparseKMeans, PCSKMeans]
SPARSE = (SparseKMeans, PCSKMeans)

# These checks set n_clusters = 1, which every estimator rejects (docs/method/algorithms.md §0:
# k >= 2); the properties they test are covered below with n_clusters = 2.
_N_CLUSTERS_ONE = ("sets n_clusters=1; docs/method/algorithms.md §0 requires n_clusters >= 2 "
                   "(covered in this file)")
EXPECTED_FAILED_CHECKS = {
    name: _N_CLUSTERS_ONE
    for name in [
        "check_dont_overwrite_parameters",
        "check_methods_subset_invariance",
        "check_fit2d_1sample",
        "check_fit2d_1feature",
        "check_fit2d_predict1d",
    ]
}


@parametrize_with_checks([cls() for cls in ESTIMATORS],
                         expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def quiet_fit(estimator, X, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusteringFailedWarning)
        return estimator.fit(X, **kwargs)


def blobs(rng, n=40, p=3, k=3):
    centres = rng.normal(scale=6.0, size=(k, p))
    truth = np.arange(n) % k
    return centres[truth] + rng.normal(size=(n, p)), truth


# ---------------------------------------------------------------- the covered sklearn checks


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_fit_sets_only_fitted_attributes(cls):
    """check_dont_overwrite_parameters with n_clusters = 2."""
    X, _ = blobs(np.random.default_rng(0), k=2)
    estimator = cls(n_clusters=2)
    before = dict(estimator.__dict__)
    estimator.fit(X)
    added = [key for key in estimator.__dict__ if key not in before]
    assert all(key.endswith("_") and not key.startswith("_") for key in added), added
    assert {key: estimator.__dict__[key] for key in before} == before


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_predict_subset_invariance_and_1d_input(cls):
    """check_methods_subset_invariance and check_fit2d_predict1d with n_clusters = 2."""
    X, _ = blobs(np.random.default_rng(1), k=2)
    estimator = cls(n_clusters=2).fit(X)
    full = estimator.predict(X)
    for batch in np.array_split(np.arange(len(X)), 4):
        np.testing.assert_array_equal(estimator.predict(X[batch]), full[batch])
    with pytest.raises(ValueError, match="2-D"):
        estimator.predict(X[0])


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_one_sample_and_one_feature(cls):
    """check_fit2d_1sample / check_fit2d_1feature with n_clusters = 2."""
    with pytest.raises(ValueError, match="distinct rows"):
        cls(n_clusters=2).fit(np.ones((1, 4)))
    X = np.random.default_rng(2).uniform(size=(10, 1))
    if cls in SPARSE:
        with pytest.raises(ValueError, match="n_features=1"):
            cls(n_clusters=2).fit(X)
    else:
        assert cls(n_clusters=2).fit(X).labels_.shape == (10,)


# ------------------------------------------------------------- wiring against the references


def problems(seed, count, min_features=1):
    """random_problem()s whose k does not exceed the number of distinct rows."""
    rng = np.random.default_rng(seed)
    found = 0
    while found < count:
        X, C0, ml, cl, max_iter = random_problem(rng, min_features=min_features)
        if len(C0) <= len(np.unique(X, axis=0)):
            found += 1
            yield rng, X, C0, ml, cl, max_iter


def assert_fitted_equal(estimator, want, where):
    assert estimator.status_ == want["status"], where
    assert estimator.n_iter_ == want["n_iter"], where
    np.testing.assert_array_equal(estimator.labels_, want["labels"], err_msg=where)
    np.testing.assert_allclose(estimator.cluster_centers_, want["centers"], rtol=0,
                               atol=1e-10, err_msg=where)


@pytest.mark.parametrize("empty_cluster", ["fail", "zero", "relocate"])
@pytest.mark.parametrize("cls", [LloydKMeans, PCKMeans])
def test_pckm_estimators_match_reference(cls, empty_cluster):
    for trial, (_, X, C0, ml, cl, max_iter) in enumerate(problems(21, 25)):
        estimator = cls(n_clusters=len(C0), init=C0, max_iter=max_iter,
                        empty_cluster=empty_cluster)
        quiet_fit(estimator, X, must_link=ml, cannot_link=cl)
        used = (ml, cl) if cls is PCKMeans else (None, None)
        want = reference_pckm(X, C0, *used, max_iter=max_iter, empty_cluster=empty_cluster)
        assert_fitted_equal(estimator, want, f"trial {trial}")
        failed = want["status"] == "empty_cluster"
        np.testing.assert_array_equal(estimator.weights_, np.full(X.shape[1],
                                      np.nan if failed else 1.0))
        np.testing.assert_array_equal(estimator.initial_centers_, C0)


@pytest.mark.parametrize("empty_cluster", ["fail", "zero", "relocate"])
@pytest.mark.parametrize("cls, weight_update", [(SparseKMeans, "code"), (PCSKMeans, "code"),
                                                 (PCSKMeans, "paper")])
def test_sparse_estimators_match_reference(cls, weight_update, empty_cluster):
    for trial, (rng, X, C0, ml, cl, inner) in enumerate(problems(22, 15, min_features=2)):
        s = 1 + (np.sqrt(X.shape[1]) - 1) * rng.uniform(0.01, 1)
        params = dict(n_clusters=len(C0), init=C0, sparsity=s, inner_max_iter=inner,
                      empty_cluster=empty_cluster)
        if cls is PCSKMeans:
            params["weight_update"] = weight_update
        estimator = quiet_fit(cls(**params), X, must_link=ml, cannot_link=cl)
        used = (ml, cl) if cls is PCSKMeans else (None, None)
        want = reference_sparse(X, C0, s, *used, weight_update=weight_update,
                                inner_max_iter=inner, empty_cluster=empty_cluster)
        where = f"trial {trial}"
        assert_fitted_equal(estimator, want, where)
        np.testing.assert_allclose(estimator.weights_, want["weights"], rtol=0, atol=1e-10)
        np.testing.assert_allclose(estimator.weighted_centers_, want["weighted_centers"],
                                   rtol=0, atol=1e-10)
        assert estimator.inner_n_iter_.tolist() == want["inner_n_iter"], where
        np.testing.assert_allclose(estimator.objective_, want["objective"], rtol=1e-12)


def test_mpckm_estimator_matches_reference():
    for trial, (_, X, C0, ml, cl, _) in enumerate(problems(23, 20)):
        estimator = quiet_fit(MPCKMeans(n_clusters=len(C0), init=C0), X, must_link=ml,
                              cannot_link=cl)
        want = reference_mpckm(X, C0, [-1] * len(X), ml, cl)
        assert_fitted_equal(estimator, want, f"trial {trial}")
        np.testing.assert_allclose(estimator.weights_, want["weights"], rtol=1e-10)
        assert estimator.n_empty_events_ == want["n_empty_events"]
        assert (estimator.initial_labels_ == -1).all()


def test_string_inits_use_the_initialisations():
    """init="dkm++" centres are X[DKM++ rows]; init="seeding" draws from random_state."""
    rng = np.random.default_rng(3)
    X, truth = blobs(rng, n=30, p=2, k=3)
    ml = np.array([[0, 3], [3, 6], [1, 4]])  # two neighbourhoods < k: one data-point fill
    cl = np.array([[0, 1]])
    estimator = PCKMeans(n_clusters=3).fit(X, must_link=ml, cannot_link=cl)
    np.testing.assert_array_equal(estimator.initial_centers_, X[reference_dkmpp(X, 3)[0]])
    seed = np.random.SeedSequence(12345, spawn_key=(3, 1))
    for cls, fill in [(LloydKMeans, "data-points"), (PCKMeans, "data-points"),
                      (SparseKMeans, "data-points"), (PCSKMeans, "data-points"),
                      (MPCKMeans, "jittered-mean")]:
        estimator = quiet_fit(cls(n_clusters=3, init="seeding", random_state=seed), X,
                              must_link=ml, cannot_link=cl)
        centres, seed_labels, _ = reference_seeding(X, 3, ml, fill, np.random.default_rng(seed))
        np.testing.assert_array_equal(estimator.initial_centers_, centres, err_msg=cls.__name__)
        if cls is MPCKMeans:
            np.testing.assert_array_equal(estimator.initial_labels_, seed_labels)
            want = reference_mpckm(X, centres, seed_labels, ml, cl)
            assert_fitted_equal(estimator, want, "MPCKMeans seeding")
    # A Generator is accepted too (and consumed, so two fits differ only through it).
    PCKMeans(n_clusters=3, init="seeding", random_state=np.random.default_rng(0)).fit(X)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_seeding_without_must_links_draws_every_centre_from_the_fill(cls):
    """No must-link (none, or cannot-links only): no neighbourhood, so every centre comes
    from the fill (docs/method/initialisations.md §4, step 3 with lambda = 0): rows of X
    drawn without replacement, or MPCKM's jittered mean, with every seed label -1; the fit is
    then the fit from those centres."""
    X, _ = blobs(np.random.default_rng(13), n=30, p=3, k=3)
    rng = np.random.default_rng(21)
    if cls is MPCKMeans:
        centres = X.mean(axis=0) * (1 + 0.7 * (rng.random((3, 3)) - 0.5))
    else:
        centres = X[rng.choice(len(X), size=3, replace=False)]
    given = quiet_fit(cls(n_clusters=3, init=centres), X)
    for cannot_link in (None, [[0, 1], [2, 5]]):
        seeded = quiet_fit(cls(n_clusters=3, init="seeding", random_state=21), X,
                           cannot_link=cannot_link)
        np.testing.assert_allclose(seeded.initial_centers_, centres, rtol=1e-15)
        if cls is MPCKMeans:
            assert (seeded.initial_labels_ == -1).all()
        if cannot_link is None:
            np.testing.assert_array_equal(seeded.labels_, given.labels_)
            np.testing.assert_array_equal(seeded.cluster_centers_, given.cluster_centers_)


def test_sparsity_path_repr_is_one_line():
    X, _ = blobs(np.random.default_rng(14), n=30, p=4, k=3)
    grid = [1.3, 1.1, 1.5, 1.9]
    for max_iter, status in [(25, "converged"), (1, "max_iter")]:
        path = PCSKMeans(n_clusters=3, max_iter=max_iter).fit_path(X, grid)
        assert (path.status == status).all()
        assert repr(path) == ("SparsityPath(4 values of s from 1.1 to 1.9; n_samples=30, "
                              f"n_features=4, n_clusters=3; 4 {status})")
    one = PCSKMeans(n_clusters=3).fit_path(X, [1.5])
    assert repr(one) == "SparsityPath(s=1.5; n_samples=30, n_features=4, n_clusters=3; 1 converged)"


def test_lloyd_matches_scikit_learn():
    """LKM = Lloyd: same labels, centres and iterations as sklearn's KMeans (tol=0)."""
    rng = np.random.default_rng(4)
    compared = 0
    for _ in range(20):
        X, _ = blobs(rng, n=int(rng.integers(20, 60)), p=int(rng.integers(2, 6)), k=3)
        C0 = X[rng.choice(len(X), 3, replace=False)]
        ours = quiet_fit(LloydKMeans(n_clusters=3, init=C0, max_iter=50), X)
        theirs = KMeans(n_clusters=3, init=C0, n_init=1, algorithm="lloyd", max_iter=50,
                        tol=0).fit(X)
        if ours.status_ != "converged":
            continue
        np.testing.assert_array_equal(ours.labels_, theirs.labels_)
        np.testing.assert_allclose(ours.cluster_centers_, theirs.cluster_centers_, atol=1e-10)
        assert ours.n_iter_ == theirs.n_iter_
        np.testing.assert_array_equal(ours.predict(X), ours.labels_)
        compared += 1
    assert compared >= 15


# ------------------------------------------------------------------- fit_path and known answers


@pytest.mark.parametrize("cls, weight_update", [(SparseKMeans, None), (PCSKMeans, "code"),
                                                 (PCSKMeans, "paper")])
def test_fit_path_equals_separate_fits(cls, weight_update):
    rng = np.random.default_rng(5)
    X, truth = blobs(rng, n=45, p=6, k=3)
    X[:, 3:] = rng.normal(size=(45, 3))  # three noise features
    pairs = rng.choice(45, size=(30, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    pairs = np.unique(np.sort(pairs, axis=1), axis=0)
    same = truth[pairs[:, 0]] == truth[pairs[:, 1]]
    ml, cl = pairs[same], pairs[~same]
    grid = np.arange(1.1, np.sqrt(6), 0.2)
    params = {} if weight_update is None else {"weight_update": weight_update}
    seed = np.random.SeedSequence(7)
    estimator = cls(n_clusters=3, init="seeding", random_state=seed, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusteringFailedWarning)
        path = estimator.fit_path(X, grid, must_link=ml, cannot_link=cl)
    assert path.labels.shape == (len(grid), 45) and path.weights.shape == (len(grid), 6)
    assert not hasattr(estimator, "labels_")
    for i, s in enumerate(grid):
        single = quiet_fit(clone(estimator).set_params(sparsity=s), X, must_link=ml,
                           cannot_link=cl)
        where = f"s={s}"
        np.testing.assert_array_equal(path.labels[i], single.labels_, err_msg=where)
        np.testing.assert_array_equal(path.weights[i], single.weights_, err_msg=where)
        np.testing.assert_array_equal(path.cluster_centers[i], single.cluster_centers_)
        np.testing.assert_array_equal(path.weighted_centers[i], single.weighted_centers_)
        assert path.n_iter[i] == single.n_iter_, where
        assert path.status[i] == single.status_, where
        assert path.sparsity[i] == s
        np.testing.assert_array_equal(path.objective[i], single.objective_)
        np.testing.assert_array_equal(path.initial_centers, single.initial_centers_)
        n_runs = len(single.inner_n_iter_)
        assert path.inner_n_iter[i, :n_runs].tolist() == single.inner_n_iter_.tolist()


@pytest.mark.parametrize("cls", SPARSE)
def test_noise_features_get_zero_weight(cls):
    """Two well separated blobs on 2 features plus 5 pure-noise features: at a small s the
    noise weights are exactly 0 and the blobs are recovered."""
    rng = np.random.default_rng(6)
    truth = np.repeat([0, 1], 30)
    X = rng.normal(size=(60, 7))
    X[:, :2] += 12.0 * truth[:, None]
    ml = np.array([[0, 1], [30, 31]])
    cl = np.array([[0, 30]])
    estimator = cls(n_clusters=2, sparsity=1.3, init=X[[0, 30]]).fit(
        X, must_link=ml, cannot_link=cl)
    assert estimator.status_ == "converged"
    assert (estimator.weights_[2:] == 0).all()
    assert (estimator.weights_[:2] > 0).all()
    np.testing.assert_array_equal(estimator.labels_, truth)
    assert np.linalg.norm(estimator.weights_) == pytest.approx(1.0)
    assert estimator.weights_.sum() == pytest.approx(1.3, abs=1e-9)


def test_failure_warns_and_sets_status():
    """§1.2: an empty cluster under "fail" sets status_ and warns; it does not raise."""
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    with pytest.warns(ClusteringFailedWarning, match="empty_cluster"):
        estimator = PCKMeans(n_clusters=2, init=[[0.0], [100.0]]).fit(X)
    assert estimator.status_ == "empty_cluster"
    assert np.isnan(estimator.weights_).all() and np.isnan(estimator.objective_)
    with pytest.raises(ValueError, match="failed"):
        estimator.predict(X)
    X = np.array([[0, 0], [1, 2], [2, 1], [8, 1], [9, 3], [10, 2]], dtype=float)
    with pytest.warns(ClusteringFailedWarning, match="degenerate_weights"):
        estimator = PCSKMeans(n_clusters=2, weight_update="paper", init=X[[0, 3]]).fit(
            X, must_link=[[0, 1], [1, 3]], cannot_link=[[3, 4]])
    assert estimator.status_ == "degenerate_weights"
    want = reference_sparse(X, X[[0, 3]], 1.1, [[0, 1], [1, 3]], [[3, 4]], weight_update="paper")
    assert want["status"] == "degenerate_weights"


# ------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_bad_input(cls):
    rng = np.random.default_rng(8)
    X, _ = blobs(rng, n=12, p=4, k=2)
    est = cls(n_clusters=2)
    for bad, message in [(np.where(np.eye(12, 4) > 0, np.nan, X), "NaN"),
                         (np.where(np.eye(12, 4) > 0, np.inf, X), "infinity"),
                         (X[:, 0], "2-D"), (X[None], "2-D")]:
        with pytest.raises(ValueError, match=message):
            est.fit(bad)
    for k, message in [(1, "n_clusters"), (0, "n_clusters"), (2.0, "n_clusters"),
                       (13, "distinct rows")]:
        with pytest.raises(ValueError, match=message):
            cls(n_clusters=k).fit(X)
    with pytest.raises(ValueError, match="distinct rows"):
        cls(n_clusters=3).fit(np.repeat(X[:2], 6, axis=0))
    for ml, cl, message in [([[0, 12]], None, "out of range"), ([[-1, 2]], None, "negative"),
                            (None, [[3, 3]], "itself"), ([[1, 2]], [[2, 1]], "both"),
                            ([[0.0, 1.0]], None, "integer"), ([[0, 1, 2]], None, "shape")]:
        with pytest.raises(ValueError, match=message):
            est.fit(X, must_link=ml, cannot_link=cl)
    for name, value in [("init", "kmeans++"), ("init", np.zeros((3, 4))),
                        ("max_iter", 0), ("empty_cluster", "drop"), ("random_state", "seed")]:
        with pytest.raises(ValueError, match=name):
            clone(est).set_params(**{name: value}).fit(X)
    if cls in SPARSE:
        for s in [1.0, 0.5, 2.01, np.nan]:  # sqrt(4) = 2
            with pytest.raises(ValueError, match="sparsity"):
                clone(est).set_params(sparsity=s).fit(X)
        clone(est).set_params(sparsity=2.0).fit(X)
        with pytest.raises(ValueError, match="sparsities"):
            est.fit_path(X, [1.5, 2.5])
        for name, value in [("inner_max_iter", 0), ("tol", -1.0)]:
            with pytest.raises(ValueError, match=name):
                clone(est).set_params(**{name: value}).fit(X)
    if cls is PCSKMeans:
        with pytest.raises(ValueError, match="weight_update"):
            clone(est).set_params(weight_update="both").fit(X)


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_error_messages_print_plain_numbers(cls):
    """NumPy scalars appear as 10.0 / 1, not np.float64(10.0) / np.int64(1) (issue 13)."""
    X, _ = blobs(np.random.default_rng(8), n=12, p=4, k=2)
    cases = [(dict(n_clusters=np.int64(1)), "got 1$"),
             (dict(n_clusters=2, max_iter=np.int64(0)), "got 0$")]
    if cls in SPARSE:
        cases += [(dict(n_clusters=2, sparsity=np.float64(10.0)), "got 10.0$"),
                  (dict(n_clusters=2, tol=np.float64(-1.0)), "got -1.0$")]
    for params, message in cases:
        with pytest.raises(ValueError, match=message) as error:
            cls(**params).fit(X)
        assert "np." not in str(error.value)
    if cls in SPARSE:
        with pytest.raises(ValueError, match="got 10.0$"):
            cls(n_clusters=2).fit_path(X, np.array([1.5, 10.0]))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_uint8_data_are_converted_before_arithmetic(cls):
    """uint8 0 - 255 would wrap to 1; the result must equal the float64 copy's."""
    rng = np.random.default_rng(9)
    X8 = np.concatenate([rng.integers(0, 20, size=(15, 3)), rng.integers(235, 256, (15, 3))])
    X8 = X8.astype(np.uint8)
    ml, cl = np.array([[0, 1], [20, 21]]), np.array([[0, 20]])
    params = dict(n_clusters=2, init=np.array([[0, 0, 0], [255, 255, 255]], dtype=np.uint8))
    a = cls(**params).fit(X8, must_link=ml, cannot_link=cl)
    b = cls(**params).fit(X8.astype(np.float64), must_link=ml, cannot_link=cl)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    assert (a.labels_ == np.repeat([0, 1], 15)).all()


def test_distinct_rows_compare_as_floats():
    """-0.0 and 0.0 are the same row (as np.unique counts them): 2 distinct rows, not 3."""
    X = np.array([[0.0, 1.0], [-0.0, 1.0], [5.0, 5.0], [5.0, 5.0]])
    with pytest.raises(ValueError, match=r"distinct rows of X \(2\)"):
        PCKMeans(n_clusters=3).fit(X)
    assert PCKMeans(n_clusters=2, init=X[[0, 2]]).fit(X).labels_.tolist() == [0, 0, 1, 1]

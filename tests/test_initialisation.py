"""DKM++, ROBIN(D), Maximin(D) and Seeding (spec initialisations.md) against the plain-loop
transcriptions in tests/reference/inits.py, hand-worked examples and the regression anchors
of §5."""

import warnings

import numpy as np
import pytest
import scipy.io
from reference import inits as ref
from reference.constraints import consistent_cannot_links
from scipy.sparse.csgraph import minimum_spanning_tree
from sklearn.datasets import load_iris

from pcskm.algorithms import initialisation as init
from pcskm.algorithms.constraints import Constraints

KINDS = ("continuous", "integer", "duplicated")


def random_data(rng, kind, n_low=5, n_high=30):
    """Small data: Gaussian, small integers (many exact distance ties), or duplicated rows."""
    n, p = int(rng.integers(n_low, n_high + 1)), int(rng.integers(1, 5))
    if kind == "integer":
        return rng.integers(0, 4, size=(n, p)).astype(np.float64)
    X = rng.normal(size=(n, p))
    if kind == "duplicated":
        X[rng.integers(0, n, size=n // 3)] = X[rng.integers(0, n, size=n // 3)]
    return X


def problems(kind, count, seed, **sizes):
    """``count`` random (X, k) with 2 <= k <= min(5, number of distinct rows)."""
    rng = np.random.default_rng([seed, KINDS.index(kind)])
    produced = 0
    while produced < count:
        X = random_data(rng, kind, **sizes)
        n_distinct = len(np.unique(X, axis=0))
        if n_distinct < 2:
            continue
        produced += 1
        yield X, int(rng.integers(2, min(5, n_distinct) + 1))


# --------------------------------------------------------------------------------------
# Package against the plain reference


@pytest.mark.parametrize("kind", KINDS)
def test_dkmpp_matches_reference(kind):
    for X, k in problems(kind, 120, seed=1):
        try:
            expected, expected_eps = ref.dkmpp(X, k)
        except ValueError:
            with pytest.raises(ValueError, match="same density"):
                init.dkmpp_init(X, k)
            continue
        indices, eps = init._dkmpp(X, k)
        assert indices.tolist() == expected, (X, k)
        assert eps == pytest.approx(expected_eps, rel=1e-14)
        result = init.dkmpp_init(X, k)
        assert result.dtype == np.int64
        assert result.tolist() == expected


@pytest.mark.parametrize("kind", KINDS)
def test_maximin_matches_reference(kind):
    for X, k in problems(kind, 120, seed=2):
        result = init.maximin_init(X, k)
        assert result.dtype == np.int64
        assert result.tolist() == ref.maximin(X, k), (X, k)


def run_robin(X, k, n_neighbors):
    """Package ROBIN: (returned, selection order, warned) or the ValueError raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            returned = init.robin_init(X, k, n_neighbors=n_neighbors)
        except ValueError as error:
            return error
        order = init._robin(X, k, n_neighbors)[1]
    warned = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert returned.dtype == np.int64
    return returned.tolist(), order.tolist(), len(warned) > 0


@pytest.mark.parametrize("kind", KINDS)
def test_robin_matches_reference(kind):
    outcomes = {"selected": 0, "fallback": 0, "error": 0}
    for X, k in problems(kind, 90, seed=3, n_low=8, n_high=40):
        for n_neighbors in (2, 3, 5):
            result = run_robin(X, k, n_neighbors)
            try:
                expected = ref.robin(X, k, n_neighbors)
            except ValueError as error:  # "no progress" (D14) or "no point has LOF < 1.05"
                assert isinstance(result, ValueError), (X, k, n_neighbors)
                reason = "no progress" if "no progress" in str(error) else "no point has LOF"
                assert reason in str(result)
                outcomes["error"] += 1
                continue
            assert result == tuple(expected), (X, k, n_neighbors)
            outcomes["fallback" if expected[2] else "selected"] += 1
    assert min(outcomes.values()) > 0, outcomes


def test_lof_matches_reference():
    for kind in KINDS:
        for X, _ in problems(kind, 30, seed=4, n_low=8, n_high=30):
            for n_neighbors in (1, 3, 7):
                expected = np.array(ref.lof_paper(X.tolist(), n_neighbors))
                lof = init._lof(init._distance_matrix(X), n_neighbors)
                np.testing.assert_array_equal(lof, expected)


def random_constraints(rng, n):
    first, second = np.triu_indices(n, k=1)
    m = int(rng.integers(0, n + 1))
    chosen = rng.choice(len(first), size=m, replace=False)
    pairs = np.stack([first[chosen], second[chosen]], axis=1)
    flip = rng.random(m) < 0.5  # either order within a pair
    pairs[flip] = pairs[flip][:, ::-1]
    must = rng.random(m) < 0.6
    return pairs[must], consistent_cannot_links(pairs[must], pairs[~must], n)


def test_seeding_matches_reference():
    rng = np.random.default_rng(5)
    branches = {"lambda >= k": 0, "lambda < k": 0, "tie drawn": 0}
    for case in range(300):
        kind = KINDS[case % 3]
        X = random_data(rng, kind, n_low=6, n_high=40)
        n_distinct = len(np.unique(X, axis=0))
        if n_distinct < 2:
            continue
        k = int(rng.integers(2, min(6, n_distinct) + 1))
        must_link, cannot_link = random_constraints(rng, len(X))
        constraints = Constraints.from_pairs(must_link, cannot_link, n_samples=len(X))
        for fill in init.SEEDING_FILLS:
            ours, theirs = np.random.default_rng(case), np.random.default_rng(case)
            centres, labels, info = init._seeding(X, k, constraints, fill, ours)
            e_centres, e_labels, e_info = ref.seeding(X, k, must_link.tolist(), fill, theirs)
            np.testing.assert_array_equal(centres, np.array(e_centres))
            assert labels.dtype == np.int64
            assert labels.tolist() == e_labels
            assert info["n_neighbourhoods"] == e_info["n_neighbourhoods"]
            assert info["selected"].tolist() == e_info["selected"]
            assert info["random_draw"] == e_info["random_draw"]
            assert ours.random() == theirs.random()  # the same draws were consumed
            public = init.seeding_init(
                X, k, must_link, cannot_link, fill=fill, random_state=case
            )
            np.testing.assert_array_equal(public[0], centres)
            np.testing.assert_array_equal(public[1], labels)
        if info["n_neighbourhoods"] >= k:
            branches["lambda >= k"] += 1
            branches["tie drawn"] += info["random_draw"]
        else:
            branches["lambda < k"] += 1
    assert min(branches.values()) > 0, branches


# --------------------------------------------------------------------------------------
# Seeding: the spec's example and constructed ties (spec §4)

SPEC_X = np.array([0, 1, 10, 11, 12, 20, 30], dtype=np.float64)[:, None]
SPEC_ML = [(0, 1), (2, 3), (3, 4), (5, 6)]


@pytest.mark.parametrize("fill", init.SEEDING_FILLS)
def test_seeding_spec_example_lambda_at_least_k(fill):
    # N0 = {0,1} (0.5), N1 = {2,3,4} (11), N2 = {5,6} (25); first pick N1 (largest);
    # D(N0) = 10.5 sqrt(6) < D(N2) = 14 sqrt(6): pick N2; clusters in ascending number.
    rng = np.random.default_rng(0)
    constraints = Constraints.from_pairs(SPEC_ML, n_samples=7)
    centres, labels, info = init._seeding(SPEC_X, 2, constraints, fill, rng)
    assert centres.tolist() == [[11.0], [25.0]]
    assert labels.tolist() == [-1, -1, 0, 0, 0, 1, 1]
    assert info["n_neighbourhoods"] == 3
    assert info["selected"].tolist() == [1, 2]
    assert info["random_draw"] is False
    assert rng.random() == np.random.default_rng(0).random()  # no draw made


def test_seeding_spec_example_lambda_below_k():
    # k = 4: centres 0.5, 11, 25 and one fill centre; neighbourhoods keep their numbers.
    centres, labels = init.seeding_init(SPEC_X, 4, SPEC_ML, random_state=7)
    drawn = np.random.default_rng(7).choice(7, size=1, replace=False)
    assert centres.tolist() == [[0.5], [11.0], [25.0], [SPEC_X[drawn[0], 0]]]
    assert labels.tolist() == [0, 0, 1, 1, 1, 2, 2]

    centres, labels = init.seeding_init(
        SPEC_X, 4, SPEC_ML, fill="jittered-mean", random_state=7
    )
    u = np.random.default_rng(7).random((1, 1))[0, 0]
    mean = 84 / 7  # (0 + 1 + 10 + 11 + 12 + 20 + 30) / 7 = 12
    assert centres.tolist() == [[0.5], [11.0], [25.0], [mean * (1 + 0.7 * (u - 0.5))]]
    assert labels.tolist() == [0, 0, 1, 1, 1, 2, 2]


def test_seeding_jittered_mean_keeps_zero_mean_feature_at_zero():
    X = np.array([[-1.0, 1.0], [1.0, 2.0], [0.0, 3.0], [2.0, 5.0], [-2.0, 4.0]])
    centres, labels = init.seeding_init(X, 3, [(0, 1)], fill="jittered-mean", random_state=1)
    assert centres[0].tolist() == [0.0, 1.5]
    assert centres[1:, 0].tolist() == [0.0, 0.0]
    assert labels.tolist() == [0, 0, -1, -1, -1]


# Three neighbourhoods on a line: N0 = {0, 1} (mean -5), N1 = {2, 3, 4} (mean 0, largest),
# N2 = {5, 6} (mean 5). D(N0) = D(N2) = 5 sqrt(6) exactly: a tie after the first pick.
TIE_X = np.array([-5.5, -4.5, -0.5, 0.0, 0.5, 4.5, 5.5])[:, None]
TIE_ML = [(0, 1), (2, 3), (3, 4), (5, 6)]


def test_seeding_tie_is_drawn_among_tied_neighbourhoods():
    constraints = Constraints.from_pairs(TIE_ML, n_samples=7)
    outcomes = set()
    for seed in range(16):
        tied = [0, 2]
        pick = tied[np.random.default_rng(seed).integers(len(tied))]
        selected = sorted([1, pick])
        expected_centres = [[{0: -5.0, 1: 0.0, 2: 5.0}[a]] for a in selected]
        for fill in init.SEEDING_FILLS:
            centres, labels, info = init._seeding(
                TIE_X, 2, constraints, fill, np.random.default_rng(seed)
            )
            assert centres.tolist() == expected_centres
            assert info["selected"].tolist() == selected
            assert info["random_draw"] is True
            hood = np.array([0, 0, 1, 1, 1, 2, 2])
            expected_labels = np.where(np.isin(hood, selected), np.searchsorted(selected, hood),
                                       -1)
            assert labels.tolist() == expected_labels.tolist()
        outcomes.add(pick)
    assert outcomes == {0, 2}


def chain(start, stop):
    return [(i, i + 1) for i in range(start, stop - 1)]


def test_seeding_exact_form_decides_mathematical_ties():
    # S = s copies of 0 (the largest), N1 = a copies of d1, N2 = b copies of -d2 with
    # a d1^2 = b d2^2: D(N1) = D(N2) mathematically. Whether they tie in floating point is
    # decided by the form sqrt(sum (c_N - c_S)^2) * sqrt(|N| |S|), as in the reference.
    draws = set()
    for a, d1, b, d2 in [(2, 3, 18, 1), (3, 3, 27, 1), (4, 3, 9, 2), (9, 4, 16, 3),
                         (4, 5, 25, 2), (2, 5, 50, 1), (5, 3, 45, 1)]:
        for s in range(max(a, b) + 1, max(a, b) + 8):
            X = np.concatenate([np.zeros(s), np.full(a, d1), np.full(b, -d2)])[:, None]
            ml = chain(0, s) + chain(s, s + a) + chain(s + a, s + a + b)
            constraints = Constraints.from_pairs(ml, n_samples=len(X))
            for seed in range(3):
                centres, labels, info = init._seeding(
                    X, 2, constraints, "data-points", np.random.default_rng(seed)
                )
                expected = ref.seeding(X, 2, ml, "data-points", np.random.default_rng(seed))
                np.testing.assert_array_equal(centres, np.array(expected[0]))
                assert labels.tolist() == expected[1]
                assert info["random_draw"] == expected[2]["random_draw"]
                draws.add(info["random_draw"])
    assert draws == {True, False}


def test_seeding_single_candidate_is_not_drawn():
    # k = 3 = lambda: after the drawn tie only one neighbourhood is left; exactly one draw.
    constraints = Constraints.from_pairs(TIE_ML, n_samples=7)
    rng = np.random.default_rng(3)
    centres, labels, info = init._seeding(TIE_X, 3, constraints, "data-points", rng)
    assert centres.tolist() == [[-5.0], [0.0], [5.0]]
    assert labels.tolist() == [0, 0, 1, 1, 1, 2, 2]
    replay = np.random.default_rng(3)
    replay.integers(2)
    assert rng.random() == replay.random()


def test_seeding_first_pick_tie_goes_to_lowest_number():
    # All neighbourhoods have 2 points: first pick N0; D(N1) = 10 * 2 < D(N2) = 20 * 2.
    X = np.array([0.0, 1.0, 10.0, 11.0, 20.0, 21.0])[:, None]
    constraints = Constraints.from_pairs([(4, 5), (2, 3), (0, 1)], n_samples=6)
    centres, labels, info = init._seeding(X, 2, constraints, "data-points",
                                          np.random.default_rng(0))
    assert centres.tolist() == [[0.5], [20.5]]
    assert labels.tolist() == [0, 0, -1, -1, 1, 1]
    assert info["random_draw"] is False


def test_seeding_ignores_cannot_links_and_numbers_by_smallest_point():
    # Must-links (5, 1) and (4, 0): N0 = {0, 4}, N1 = {1, 5}; the cannot-link is ignored.
    X = np.array([[0.0], [10.0], [50.0], [60.0], [2.0], [12.0]])
    centres, labels = init.seeding_init(X, 2, [(5, 1), (4, 0)], [(0, 1)], random_state=0)
    assert centres.tolist() == [[1.0], [11.0]]
    assert labels.tolist() == [0, 1, -1, -1, 0, 1]


@pytest.mark.parametrize("fill", init.SEEDING_FILLS)
def test_seeding_random_state_forms_agree(fill):
    X = np.random.default_rng(0).normal(size=(20, 3))
    ml = [(0, 1), (2, 3)]
    results = [
        init.seeding_init(X, 4, ml, fill=fill, random_state=state)
        for state in (11, np.random.SeedSequence(11), np.random.default_rng(11))
    ]
    for centres, labels in results[1:]:
        np.testing.assert_array_equal(centres, results[0][0])
        np.testing.assert_array_equal(labels, results[0][1])
    assert results[0][0].shape == (4, 3) and results[0][0].dtype == np.float64


# --------------------------------------------------------------------------------------
# DKM++ radius: type-5 percentiles (spec §1)


def test_type5_percentile_example():
    L = [1.0, 2.0, 3.0, 4.0]
    for percentile in (ref.percentile_type5, lambda v, q: np.percentile(v, q, method="hazen")):
        q25, q75 = percentile(L, 25), percentile(L, 75)
        assert (q25, q75, 3 * (q75 - q25) + q75) == (1.5, 3.5, 9.5)
    for percentile in (ref.percentile_type7, np.percentile):
        q25, q75 = percentile(L, 25), percentile(L, 75)
        assert (q25, q75, 3 * (q75 - q25) + q75) == (1.75, 3.25, 7.75)
    assert init._dkmpp_radius(np.array(L)) == 4.0  # min(max L, 9.5)
    # 8 values: q25 = 2.5, q75 = 6.5 (positions 1.5 and 5.5), 3 * 4 + 6.5 = 18.5 < 100.
    assert init._dkmpp_radius(np.array([1.0, 2, 3, 4, 5, 6, 7, 100])) == 18.5


def test_dkmpp_radius_matches_plain_type5():
    rng = np.random.default_rng(6)
    for _ in range(200):
        L = rng.exponential(size=int(rng.integers(1, 30)))
        q25, q75 = ref.percentile_type5(L, 25), ref.percentile_type5(L, 75)
        expected = min(max(L), 3 * (q75 - q25) + q75)
        assert init._dkmpp_radius(L) == pytest.approx(expected, rel=1e-14)


def test_scipy_minimum_spanning_tree_skips_zero_edges():
    # The spec's premise: SciPy's tree on a dense matrix matches a plain Prim tree without zero
    # edges (duplicated rows attach through positive edges; n - 1 edges).
    X = np.array([[0.0], [0.0], [1.0], [3.0], [3.0], [7.0]])
    for X_case in (X, np.vstack([X, X])):
        normalised = init._distance_matrix(X_case) / 7.0
        ours = np.sort(minimum_spanning_tree(normalised).data)
        theirs = np.sort(ref.mst_weights(normalised.tolist()))
        assert len(theirs) == len(X_case) - 1 and (theirs > 0).all()
        np.testing.assert_array_equal(ours, theirs)


# --------------------------------------------------------------------------------------
# Regression anchors (spec §5), 1-based in the spec

ANCHORS = {
    # path, DKM++, eps, ROBIN returned, ROBIN selection order, Maximin
    "fisheriris": ("datasets/real/fisheriris.mat",
                   [8, 127, 93], 0.124227, [3, 81, 144], [3, 144, 81], [118, 14, 107]),
    "TTCHST": ("datasets/MWM/TTCHST.mat",
               [299, 4, 31], 0.352218, [143, 235, 382], [235, 143, 382], [114, 106, 42]),
    "TTSCST": ("datasets/MWM/TTSCST.mat",
               [384, 15, 290], 0.385460, [193, 270, 411], [270, 193, 411], [106, 202, 417]),
    "ionosphere": ("datasets/real/ionosphere.mat",
                   [277, 325], 0.542897, [11, 166], [166, 11], [163, 18]),
    "digits048_data1": ("datasets/digits048/data1.mat",
                        [95, 15, 136], 0.378317, [16, 49, 59], [49, 16, 59], [150, 118, 56]),
}


def load_mat(data_dir, path):
    """x as float64 (before any arithmetic) and k = number of distinct labels (datasets §2)."""
    contents = scipy.io.loadmat(data_dir / path)
    labels = np.unique(contents["x_labs"].ravel(), return_inverse=True)[1]
    return contents["x"].astype(np.float64), int(labels.max()) + 1


def check_anchors(X, k, dkmpp, eps, robin_returned, robin_order, maximin):
    def zero_based(rows):
        return [r - 1 for r in rows]

    indices, our_eps = init._dkmpp(X, k)
    assert indices.tolist() == zero_based(dkmpp)
    assert init.dkmpp_init(X, k).tolist() == zero_based(dkmpp)
    assert our_eps == pytest.approx(eps, abs=5e-7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback on the paper's data
        assert init.robin_init(X, k).tolist() == zero_based(robin_returned)
        assert init._robin(X, k, 10)[1].tolist() == zero_based(robin_order)
    assert init.maximin_init(X, k).tolist() == zero_based(maximin)


@pytest.mark.parametrize("name", ANCHORS)
def test_regression_anchors(data_dir, name):
    path, *anchors = ANCHORS[name]
    X, k = load_mat(data_dir, path)
    assert k == len(anchors[0])
    check_anchors(X, k, *anchors)


def test_regression_anchors_scikit_learn_iris():
    check_anchors(load_iris().data, 3, *ANCHORS["fisheriris"][1:])


def test_fisheriris_file_is_scikit_learn_iris(data_dir):
    X, _ = load_mat(data_dir, ANCHORS["fisheriris"][0])
    np.testing.assert_array_equal(X, load_iris().data)


def test_reference_reproduces_iris_anchors_and_type7_counter_check():
    X = load_iris().data
    centres, eps = ref.dkmpp(X, 3)
    assert centres == [7, 126, 92] and eps == pytest.approx(0.124227, abs=5e-7)
    assert ref.robin(X, 3)[:2] == ([2, 80, 143], [2, 143, 80])
    assert ref.maximin(X, 3) == [117, 13, 106]
    # Type-7 percentiles (the R original's) change the second centre: 1-based [8, 148, 93].
    centres, eps = ref.dkmpp(X, 3, percentile=ref.percentile_type7)
    assert centres == [7, 147, 92] and eps == pytest.approx(0.12223, abs=5e-6)


def test_type7_counter_check_ttchst(data_dir):
    X, k = load_mat(data_dir, ANCHORS["TTCHST"][0])
    assert ref.dkmpp(X, k, percentile=ref.percentile_type7)[0] == [298, 3, 313]


# --------------------------------------------------------------------------------------
# Errors and warnings


@pytest.mark.parametrize(
    "initialise",
    [init.dkmpp_init, init.robin_init, init.maximin_init, init.seeding_init],
)
def test_more_clusters_than_distinct_rows(initialise):
    X = np.repeat(np.array([[0.0, 1.0], [2.0, 3.0], [5.0, 5.0]]), 4, axis=0)
    with pytest.raises(ValueError, match="distinct rows"):
        initialise(X, 4)


@pytest.mark.parametrize(
    "X",
    [
        np.array([[0.0], [0.0], [1.0], [1.0]]),  # each point: 1 + 2 exp(-1)
        np.eye(3),  # all distances equal: each point 2 exp(-1)
    ],
)
def test_dkmpp_all_densities_equal(X):
    with pytest.raises(ValueError, match="same density"):
        init.dkmpp_init(X, 2)


def test_robin_needs_n_neighbors_plus_one_points():
    X = np.arange(10.0)[:, None]
    with pytest.raises(ValueError, match="n_neighbors"):
        init.robin_init(X, 2)
    init.robin_init(np.arange(11.0)[:, None], 2)  # n = nn + 1 is enough
    with pytest.raises(ValueError, match="n_neighbors"):
        init.robin_init(X, 2, n_neighbors=0)


def test_robin_fallback_warns():
    # x = 0, 1, 2, 3 with nn = 2: radii 2, 1, 1, 2; densities 2/3, 1, 1, 2/3;
    # LOF = 1.5, 5/6, 5/6, 1.5: none in (0.95, 1.05), points 1 and 2 below 1.05.
    X = np.arange(4.0)[:, None]
    assert ref.lof_paper(X.tolist(), 2) == pytest.approx([1.5, 5 / 6, 5 / 6, 1.5])
    # Round 1 (mean 1.5): order 0, 3, 1, 2 -> 1; round 2 (distance to 1): 3, 0, 2, 1 -> 2.
    with pytest.warns(RuntimeWarning, match="falling back"):
        assert init.robin_init(X, 2, n_neighbors=2).tolist() == [1, 2]


def test_lof_with_duplicates():
    # Four copies of 0 and the point 10, nn = 3: the copies have r = 0 (infinite density,
    # LOF NaN); the point 10 has r = 10, four neighbours of infinite density: LOF = inf.
    X = np.array([0.0, 0.0, 0.0, 0.0, 10.0])[:, None]
    expected = [np.nan] * 4 + [np.inf]
    np.testing.assert_array_equal(init._lof(init._distance_matrix(X), 3), expected)
    np.testing.assert_array_equal(ref.lof_paper(X.tolist(), 3), expected)


def test_robin_window_is_strict(monkeypatch):
    # x = 0..5, mean 2.5: round-1 order 0, 5, 1, 4, 2, 3. LOF 1.05 (point 0) and 0.95
    # (point 5) are outside the open window, so point 1 is taken; round 2 (distance to 1):
    # order 5, 4, 3, 0, 2, 1 -> point 3 (LOF 1.04).
    lof = np.array([1.05, 1.0, 0.5, 1.04, 1.2, 0.95])
    monkeypatch.setattr(init, "_lof", lambda distances, n_neighbors: lof)
    X = np.arange(6.0)[:, None]
    assert init._robin(X, 2, 3)[1].tolist() == [1, 3]


def test_robin_fallback_is_strict_and_skips_nan(monkeypatch):
    # No LOF in (0.95, 1.05); fallback LOF < 1.05: points 2 and 3 (1.05 and NaN are not).
    # Round 1 order 0, 5, 1, 4, 2, 3 -> 2; round 2 (distance to 2): 5, 0, 4, 1, 3, 2 -> 3.
    lof = np.array([1.05, 1.2, 0.5, 0.9, np.nan, 2.0])
    monkeypatch.setattr(init, "_lof", lambda distances, n_neighbors: lof)
    with pytest.warns(RuntimeWarning, match="falling back"):
        assert init._robin(np.arange(6.0)[:, None], 2, 3)[1].tolist() == [2, 3]


def test_robin_no_point_below_threshold():
    # Every point has 3 duplicates: r_i = 0 for nn = 3, every LOF is NaN.
    X = np.repeat(np.array([[0.0], [1.0]]), 4, axis=0)
    with pytest.raises(ValueError, match="no point has LOF"):
        init.robin_init(X, 2, n_neighbors=3)


def test_robin_no_progress():
    # x = 0, 1, 3, 5 with nn = 2: densities 1/2, 2/3, 1/2, 1/3 and LOF 7/6, 3/4, 1, 7/4:
    # only point 2 is in the window, so round 2 picks it again (D14).
    X = np.array([0.0, 1.0, 3.0, 5.0])[:, None]
    assert ref.lof_paper(X.tolist(), 2) == pytest.approx([7 / 6, 3 / 4, 1.0, 7 / 4])
    with pytest.raises(ValueError, match="no progress"):
        init.robin_init(X, 2, n_neighbors=2)


def test_seeding_bad_fill():
    with pytest.raises(ValueError, match="fill"):
        init.seeding_init(SPEC_X, 2, SPEC_ML, fill="mean")


def test_dkmpp_centres_of_the_paper_do_not_depend_on_the_exponential(data_dir):
    """The density with NumPy's vectorised exp (which differs from the C library's in the
    last bit for some arguments on AVX-512 CPUs) gives the same centres on every data set of
    the paper spec (docs/method/initialisations.md §1)."""
    from pcskm.experiments.datasets import load
    from pcskm.experiments.spec import load_spec

    def numpy_density(normalised, eps):
        terms = np.where(normalised <= eps, np.exp(-normalised / eps), 0.0)
        np.fill_diagonal(terms, 0.0)
        return np.cumsum(terms, axis=1)[:, -1]

    names = load_spec("paper").datasets
    assert len(names) >= 46
    for name in names:
        data = load(name, data_dir)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(init, "_dkmpp_density", numpy_density)
            expected = init.dkmpp_init(data.X, data.n_clusters)
        np.testing.assert_array_equal(init.dkmpp_init(data.X, data.n_clusters), expected,
                                      err_msg=name)

"""The held-out pair AUC of the weighted distance and its one-standard-error choice of s
(docs/method/selection.md §7), against scikit-learn's roc_auc_score, double loops over the
pairs and fits per fold and s written here."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from pcskm.algorithms import (
    PCSKMeans,
    SparseKMeans,
    constraint_cv_scores,
    one_standard_error_index,
    pair_auc_scores,
    seeding_init,
)
from pcskm.algorithms.selection import pair_auc, squared_differences


def plain_auc(distance, is_must_link):
    """P(d_CL > d_ML) + P(d_CL = d_ML) / 2 over every (cannot-link, must-link) pair; NaN
    without both kinds."""
    if is_must_link.all() or not is_must_link.any():
        return np.nan
    wins = 0.0
    for d_cannot in distance[~is_must_link]:
        for d_must in distance[is_must_link]:
            wins += 1.0 if d_cannot > d_must else 0.5 if d_cannot == d_must else 0.0
    return wins / (is_must_link.sum() * (~is_must_link).sum())


def plain_distance(X, pairs, weights):
    """sum_j w_j (x_aj - x_bj)^2 of each pair (a, b), one pair at a time."""
    return np.array([sum(w * (X[a, j] - X[b, j]) ** 2 for j, w in enumerate(weights))
                     for a, b in pairs])


def plain_one_se(scores, errors):
    """The largest s with score >= best score - se of the best (the largest tied best s)."""
    valid = [i for i in range(len(scores)) if not np.isnan(scores[i])]
    if not valid:
        return -1
    top = max(scores[i] for i in valid)
    best = max(i for i in valid if scores[i] == top)
    error = 0.0 if np.isnan(errors[best]) else errors[best]
    return max(i for i in valid if scores[i] >= top - error)


def two_groups(seed=0, n_per=25, p=6, gap=4.0, sd=0.5):
    """Two groups ``gap`` apart in feature 0 only (within-group sd ``sd``), among p - 1
    standard normal noise features, and random constraints of both kinds from the groups."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n_per)
    X = rng.standard_normal((2 * n_per, p))
    X[:, 0] = gap * y + sd * rng.standard_normal(2 * n_per)
    pairs = rng.choice(2 * n_per, size=(60, 2))
    pairs = np.unique(np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1), axis=0)[:40]
    same = y[pairs[:, 0]] == y[pairs[:, 1]]
    return X, pairs[same], pairs[~same]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pair_auc_matches_roc_auc_score_and_a_double_loop(seed):
    """§7.1 on random pairs, with integer features so that distances tie (ties count 1/2),
    and a row of weights that puts every pair at distance 0 (AUC 1/2)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(30, 4)).astype(float)
    pairs = rng.choice(30, size=(40, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    is_must_link = rng.random(len(pairs)) < 0.4
    weights = np.vstack([rng.random((3, 4)), [0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    auc = pair_auc(squared_differences(X, pairs), is_must_link, weights)
    for row, w in enumerate(weights):
        distance = plain_distance(X, pairs, w)
        assert auc[row] == pytest.approx(plain_auc(distance, is_must_link), abs=1e-14)
        assert auc[row] == pytest.approx(roc_auc_score(~is_must_link, distance), abs=1e-14)
    assert auc[3] == 0.5
    assert len(np.unique(plain_distance(X, pairs, weights[4]))) <= 3  # ties present


def counted_auc(distance, is_must_link):
    """The count of :func:`plain_auc` as whole numbers, then one division: twice the wins,
    over 2 n_CL n_ML (the quotient pcskm stored before its AUC was compiled)."""
    must_link, cannot_link = distance[is_must_link], distance[~is_must_link]
    twice_wins = sum(2 * int((c > must_link).sum()) + int((c == must_link).sum())
                     for c in cannot_link)
    return twice_wins / (2.0 * len(must_link) * len(cannot_link))


@pytest.mark.parametrize("seed", range(6))
def test_pair_auc_is_the_exact_count_over_the_pairs_bit_for_bit(seed):
    """The same bits as the whole-number count of every (cannot-link, must-link) pair of
    pairs divided once, on many s at a time, with ties, a column that is not finite, and
    rows of weights equal to the row before (whose AUC is copied)."""
    rng = np.random.default_rng(seed)
    m, p, n_s = rng.integers(5, 400), rng.integers(1, 30), rng.integers(1, 25)
    differences = rng.integers(0, 4, size=(m, p)).astype(float) * rng.random(p)
    is_must_link = rng.random(m) < rng.uniform(0.1, 0.9)
    is_must_link[:2] = [True, False]
    weights = rng.random((n_s, p)) * (rng.random((n_s, p)) < 0.5)
    weights[rng.integers(n_s)] = np.inf if seed % 2 else np.nan
    for row in np.flatnonzero(rng.random(n_s) < 0.4)[1:]:  # a path's copied runs
        weights[row] = weights[row - 1]
    with np.errstate(invalid="ignore"):  # inf times a weight of 0
        auc = pair_auc(differences, is_must_link, weights)
        distances = (differences @ weights.T).T  # as pair_auc has them
    for row, distance in enumerate(distances):
        if np.isfinite(distance).all():
            assert auc[row] == counted_auc(distance, is_must_link)
        else:
            assert np.isnan(auc[row])


def test_pair_auc_is_nan_without_both_kinds_or_finite_weights():
    X = np.arange(12.0).reshape(6, 2)
    pairs = np.array([[0, 1], [2, 3], [4, 5]])
    weights = np.array([[1.0, 0.0], [np.nan, np.nan]])
    differences = squared_differences(X, pairs)
    assert np.isnan(pair_auc(differences, np.ones(3, bool), weights)).all()
    assert np.isnan(pair_auc(differences, np.zeros(3, bool), weights)).all()
    auc = pair_auc(differences, np.array([True, False, False]), weights)
    assert auc[0] == 0.5 and np.isnan(auc[1])  # every pair is 2 apart in feature 0


def test_auc_is_higher_at_the_s_that_keeps_the_informative_feature():
    """Only feature 0 separates the groups, among 299 noise features. Up to s = 4 the fits
    give it almost all the weight and every held-out cannot-link is farther apart than every
    held-out must-link; from s = 8 on the noise features take most of the weight and the
    AUC falls near chance. The one-standard-error rule takes the largest s that keeps it."""
    X, must_link, cannot_link = two_groups(gap=3.0, sd=0.5, p=300)
    grid = np.array([1.1, 2.0, 4.0, 8.0, 17.3])
    estimator = SparseKMeans(2, init="dkm++", random_state=0)
    path = estimator.fit_path(X, grid, must_link=must_link, cannot_link=cannot_link)
    assert (path.weights[:3, 0] > 0.95).all() and (path.weights[3:, 0] < 0.5).all()
    auc = pair_auc_scores(estimator, X, path, must_link=must_link, cannot_link=cannot_link,
                          n_folds=4, random_state=3)
    np.testing.assert_array_equal(auc.score[:3], 1.0)
    assert (auc.score[3:] < 0.6).all()
    assert auc.selected_index == 2 and auc.selected_sparsity == 4.0


@pytest.mark.parametrize(("estimator_class", "init"), [(PCSKMeans, "dkm++"),
                                                       (PCSKMeans, "seeding"),
                                                       (SparseKMeans, "dkm++"),
                                                       (SparseKMeans, "seeding")])
def test_pair_auc_scores_equal_a_fit_per_fold_and_s(estimator_class, init):
    """The folds are constraint_cv_scores's; each fold and s is refitted here with ``fit``
    on the training constraints (from the path's centres, or Seeding on the training
    constraints), its held-out AUC computed by the double loop; the score is the mean over
    folds with both kinds and the standard error np.std(ddof=1) / sqrt(their number)."""
    X, must_link, cannot_link = two_groups(seed=1, gap=3.0, sd=1.0, p=20)
    grid = np.array([1.1, 1.6, 2.2])
    estimator = estimator_class(2, init=init, random_state=0)
    path = estimator.fit_path(X, grid, must_link=must_link, cannot_link=cannot_link)
    auc = pair_auc_scores(estimator, X, path, must_link=must_link, cannot_link=cannot_link,
                          n_folds=3, random_state=7)
    cv = constraint_cv_scores(estimator, X, path, must_link=must_link,
                              cannot_link=cannot_link, n_folds=3, random_state=7)
    np.testing.assert_array_equal(auc.fold, cv.fold)

    pairs = np.concatenate([must_link, cannot_link])
    is_ml = np.arange(len(pairs)) < len(must_link)
    expected = np.empty((3, len(grid)))
    for number in range(3):
        held, train = auc.fold == number, auc.fold != number
        centres = (seeding_init(X, 2, pairs[train & is_ml], pairs[train & ~is_ml],
                                random_state=0)[0] if init == "seeding"
                   else path.initial_centers)
        for i, s in enumerate(grid):
            model = estimator_class(2, sparsity=s, init=centres).fit(
                X, must_link=pairs[train & is_ml], cannot_link=pairs[train & ~is_ml])
            expected[number, i] = plain_auc(plain_distance(X, pairs[held], model.weights_),
                                            is_ml[held])
    scored = ~np.isnan(expected).any(axis=1)
    assert scored.sum() >= 2 and len(np.unique(expected[scored])) > 2
    np.testing.assert_allclose(auc.fold_scores, expected, rtol=1e-12)
    np.testing.assert_allclose(auc.score, expected[scored].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(auc.score_se, expected[scored].std(axis=0, ddof=1)
                               / np.sqrt(scored.sum()), rtol=1e-10, atol=1e-15)
    assert auc.selected_index == plain_one_se(auc.score, auc.score_se)


def test_a_fold_of_one_kind_has_no_auc():
    """40 random constraints in 6 folds: some fold holds only one kind of constraint; its
    AUC is NaN and the mean is over the other folds."""
    X, must_link, cannot_link = two_groups(seed=2)
    grid = np.array([1.1, 2.0])
    estimator = PCSKMeans(2, init="dkm++", random_state=0)
    path = estimator.fit_path(X, grid, must_link=must_link, cannot_link=cannot_link)
    auc = pair_auc_scores(estimator, X, path, must_link=must_link, cannot_link=cannot_link,
                          n_folds=6, random_state=0)
    is_ml = np.arange(len(auc.fold)) < len(must_link)
    one_kind = [is_ml[auc.fold == f].all() or not is_ml[auc.fold == f].any() for f in range(6)]
    assert any(one_kind) and not all(one_kind)
    assert np.isnan(auc.fold_scores[one_kind]).all()
    kept = auc.fold_scores[~np.array(one_kind)]
    np.testing.assert_allclose(auc.score, kept.mean(axis=0), rtol=1e-12)


def test_one_standard_error_index_against_a_loop():
    """§7.2 on random scores with NaN and exact ties, along either axis."""
    rng = np.random.default_rng(4)
    scores = np.round(rng.random((200, 7)), 1)
    scores[rng.random(scores.shape) < 0.2] = np.nan
    scores[:3] = np.nan
    errors = rng.random((200, 7)) * 0.2
    errors[rng.random(errors.shape) < 0.2] = np.nan
    expected = [plain_one_se(s, e) for s, e in zip(scores, errors, strict=True)]
    np.testing.assert_array_equal(one_standard_error_index(scores, errors), expected)
    np.testing.assert_array_equal(one_standard_error_index(scores.T, errors.T, axis=0), expected)
    assert expected[:3] == [-1, -1, -1]
    # hand-worked: best 0.9 at position 1 with se 0.05; 0.86 at 3 is within, 0.8 at 4 is not
    assert one_standard_error_index([0.7, 0.9, 0.5, 0.86, 0.8], [0.0, 0.05, 0.0, 0.0, 0.3]) == 3


@pytest.mark.parametrize(("must_link", "cannot_link"), [([[0, 1], [2, 3]], None),
                                                        (None, [[0, 30], [2, 40]])])
def test_pair_auc_needs_both_kinds(must_link, cannot_link):
    X, _, _ = two_groups()
    estimator = PCSKMeans(2, init="dkm++", random_state=0)
    path = estimator.fit_path(X, [1.1, 2.0], must_link=must_link, cannot_link=cannot_link)
    with pytest.raises(ValueError, match="needs both"):
        pair_auc_scores(estimator, X, path, must_link=must_link, cannot_link=cannot_link,
                        n_folds=2)


def test_one_standard_error_index_refuses_mismatched_errors():
    with pytest.raises(ValueError, match="standard_errors must have the shape"):
        one_standard_error_index(np.zeros((2, 3)), np.zeros(3))


# Development sets (§7.3) -----------------------------------------------------------------

DEVELOPMENT_SPEC = """
name = "dev"
datasets = ["iris", "{name}"]
algorithms = ["LKM", "SKM", "PCKM", "PCSKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [1]
n_runs = 1
n_folds = 10
cv_folds = 3

[data.{name}]
loader = "{loader}"
"""
PREREGISTRATION = ('\n[preregistration]\nrule = "cv"\nfocus = "PCSKM"\n'
                   'hypotheses = """PCSKM wins."""\n')


def test_development_sets_are_brodinova_draws_of_their_own_keys():
    """Each is datasets.md §4's generator on its own key (11, j) of the data seed, with its
    informative columns first, the same through a spec's loader."""
    from pcskm.experiments import _brodinova
    from pcskm.experiments._seeds import DATA_SEED, generator
    from pcskm.experiments.development import (
        _SETTINGS,
        DEVELOPMENT_SETS,
        load_development,
    )
    from pcskm.experiments.sources import load_definition, parse_definition

    keys = [j for j, *_ in _SETTINGS.values()]
    assert len(set(keys)) == len(keys)
    for name, (j, p_info, p_noise, groups) in _SETTINGS.items():
        dataset = load_development(name)
        X, y = _brodinova.simulate(p_info, p_noise, generator(DATA_SEED, (11, j)), groups)
        np.testing.assert_array_equal(dataset.X, X)
        np.testing.assert_array_equal(dataset.y, y)
        assert dataset.informative.sum() == p_info and dataset.uninformative.sum() == p_noise
        via_spec = load_definition(parse_definition(name, {"loader": DEVELOPMENT_SETS[name]}))
        np.testing.assert_array_equal(via_spec.X, X)


def test_weak_development_sets_are_weak_signal_draws_of_their_own_keys():
    """Each is datasets.md §4.3's generator on its own key (15, j) of the data seed, a key
    part no registry set uses, the informative columns first, the same through a spec's
    loader; the name spells the setting."""
    from pcskm.experiments import _weak_signal
    from pcskm.experiments._seeds import DATA_SEED, generator
    from pcskm.experiments.datasets import WEAK_SIGNAL_KEY
    from pcskm.experiments.development import (
        _WEAK_SETTINGS,
        DEVELOPMENT_KEY,
        DEVELOPMENT_SETS,
        load_development,
    )
    from pcskm.experiments.sources import load_definition, parse_definition

    assert 15 not in (DEVELOPMENT_KEY, WEAK_SIGNAL_KEY, 13)  # calibration draws: key (13, j)
    keys = [j for j, *_ in _WEAK_SETTINGS.values()]
    assert len(set(keys)) == len(keys) and 4 <= len(keys) <= 6
    for name, (j, q, shift, p) in _WEAK_SETTINGS.items():
        assert name == f"dev-weak-q{q}-m{round(shift * 10):02d}-p{p}"
        dataset = load_development(name)
        X, y = _weak_signal.simulate(shift, q, p, generator(DATA_SEED, (15, j)))
        np.testing.assert_array_equal(dataset.X, X)
        np.testing.assert_array_equal(dataset.y, y)
        assert dataset.X.shape == (90, p) and dataset.n_clusters == 3
        assert dataset.informative[:q].all() and dataset.informative.sum() == q
        assert dataset.uninformative.sum() == p - q
        via_spec = load_definition(parse_definition(name, {"loader": DEVELOPMENT_SETS[name]}))
        np.testing.assert_array_equal(via_spec.X, X)
    with pytest.raises(ValueError, match="no development set 'dev-weak-q1'"):
        load_development("dev-weak-q1")


@pytest.mark.parametrize("table_name, loader_of", [
    ("dev-brodinova-3-47", "dev-brodinova-3-47"), ("my-set", "dev-brodinova-3-47"),
    ("dev-weak-q20-m08-p200", "dev-weak-q20-m08-p200"), ("my-set", "dev-weak-q10-m10-p100")])
def test_a_preregistered_spec_refuses_the_development_sets(table_name, loader_of):
    """By name or by loader, of either family; a spec without [preregistration] may use
    them."""
    from pcskm.experiments.development import DEVELOPMENT_SETS
    from pcskm.experiments.spec import parse_spec

    text = DEVELOPMENT_SPEC.format(name=table_name, loader=DEVELOPMENT_SETS[loader_of])
    assert table_name in parse_spec(text).datasets
    with pytest.raises(ValueError, match=f"{table_name} is a development set"):
        parse_spec(text + PREREGISTRATION)


@pytest.mark.parametrize("seed", range(4))
def test_the_squared_differences_are_numpys_bit_for_bit(seed):
    """The compiled squared differences equal NumPy's ``(X[a] - X[b]) ** 2`` exactly, for
    data of any scale, a column slice of a larger array and pairs of another integer type
    (the pair AUC of the study reads them: a changed bit could reorder two distances)."""
    rng = np.random.default_rng(seed)
    wide = rng.standard_normal((300, 61)) * 10.0 ** rng.uniform(-8, 8, size=61)
    X = wide[:, ::2]  # not contiguous
    pairs = rng.integers(0, len(X), size=(2000, 2)).astype(np.int32)
    expected = (X[pairs[:, 0]] - X[pairs[:, 1]]) ** 2
    found = squared_differences(X, pairs)
    assert found.shape == expected.shape and found.dtype == np.float64
    assert np.array_equal(found, expected)
    assert squared_differences(X, pairs[:0]).shape == (0, X.shape[1])

"""Choosing s without labels (docs/method/selection.md): constraint cross-validation, the gap
statistic and satisfaction with a tie rule, against plain implementations written here."""

import dataclasses

import numpy as np
import pytest
from reference.constraints import must_link_components

from pcskm.algorithms import (
    PCKMeans,
    PCSKMeans,
    SparseKMeans,
    best_sparsity_index,
    constraint_cv_scores,
    gap_statistic,
    pairwise_f_score,
    seeding_init,
    select_by_satisfaction,
)
from pcskm.algorithms._result import EMPTY_CLUSTER
from pcskm.algorithms.selection import _fold_f_measures, _mean_and_sd, constraint_folds

BARS_GRID = np.array([1.1, 1.2, 1.5])


def random_pairs(rng, labels, n_pairs):
    """``n_pairs`` distinct random pairs (a < b), split by label agreement."""
    n = len(labels)
    pairs = rng.choice(n, size=(4 * n_pairs, 2))
    pairs = np.unique(np.sort(pairs[pairs[:, 0] != pairs[:, 1]], axis=1), axis=0)
    pairs = pairs[rng.permutation(len(pairs))[:n_pairs]]
    same = labels[pairs[:, 0]] == labels[pairs[:, 1]]
    return pairs[same], pairs[~same]


def bars(seed=16, n_per=30, p=9):
    """Two parallel bars along the anti-diagonal of features 0 and 1, 2.5 apart along the
    diagonal, among p - 2 small noise features, and 30 random constraints. Each of features
    0 and 1 alone mixes the bars; both with equal weight separate them."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n_per)
    t = rng.uniform(-3.0, 3.0, 2 * n_per)
    X = 0.3 * rng.standard_normal((2 * n_per, p))
    X[:, 0] = 2.5 * y + t / np.sqrt(2) + 0.2 * rng.standard_normal(2 * n_per)
    X[:, 1] = 2.5 * y - t / np.sqrt(2) + 0.2 * rng.standard_normal(2 * n_per)
    must_link, cannot_link = random_pairs(rng, y, 30)
    return X, y, must_link, cannot_link


def blobs(seed=0, n_per=20, p=8):
    """Three clusters in features 0 and 1 among p - 2 standard normal noise features."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n_per)
    X = rng.standard_normal((3 * n_per, p))
    X[:, :2] += 3.0 * np.array([[0, 0], [1, 0], [0, 1]])[y]
    return X, y


# Plain implementations -------------------------------------------------------------------

def plain_f_measure(labels, must_link, cannot_link):
    """CVCP's F-measure, constraint by constraint: the mean over the classes present of
    2 TP / (2 TP + FP + FN), a must-link "predicted" when its points share a cluster."""
    counts = {"ml_tp": 0, "ml_fn": 0, "cl_tp": 0, "cl_fn": 0}
    for a, b in must_link:
        counts["ml_tp" if labels[a] == labels[b] else "ml_fn"] += 1
    for a, b in cannot_link:
        counts["cl_tp" if labels[a] != labels[b] else "cl_fn"] += 1
    f = []
    if len(must_link):  # FP of must-link = cannot-links put together, and vice versa
        f.append(2 * counts["ml_tp"] / (2 * counts["ml_tp"] + counts["cl_fn"] + counts["ml_fn"]))
    if len(cannot_link):
        f.append(2 * counts["cl_tp"] / (2 * counts["cl_tp"] + counts["ml_fn"] + counts["cl_fn"]))
    return sum(f) / len(f)


def plain_cv(estimator_class, X, grid, centres_of, must_link, cannot_link, fold, **params):
    """(n_folds, n_s) held-out F-measures: one ``fit`` per fold and s from the centres
    ``centres_of(training must-links, training cannot-links)``."""
    pairs = np.concatenate([must_link, cannot_link])
    is_ml = np.arange(len(pairs)) < len(must_link)
    scores = np.empty((fold.max() + 1, len(grid)))
    for number in range(fold.max() + 1):
        held, train = fold == number, fold != number
        centres = centres_of(pairs[train & is_ml], pairs[train & ~is_ml])
        for i, s in enumerate(grid):
            model = estimator_class(len(centres), sparsity=s, init=centres, **params).fit(
                X, must_link=pairs[train & is_ml], cannot_link=pairs[train & ~is_ml])
            scores[number, i] = plain_f_measure(model.labels_, pairs[held & is_ml],
                                                pairs[held & ~is_ml])
    return scores


def path_centres(path):
    """``centres_of`` for :func:`plain_cv`: every fold from the path's initial centres."""
    return lambda must_link, cannot_link: path.initial_centers


def leaked(must_link, cannot_link, fold, n):
    """Held-out constraints implied by their fold's training constraints: a must-link whose
    points the training must-links connect, or a cannot-link whose two components a training
    cannot-link already separates."""
    pairs = np.concatenate([must_link, cannot_link])
    is_ml = np.arange(len(pairs)) < len(must_link)
    found = []
    for number in np.unique(fold):
        train = fold != number
        component = must_link_components(pairs[train & is_ml], n)
        separated = {frozenset((component[c], component[d])) for c, d in pairs[train & ~is_ml]}
        for index in np.flatnonzero(fold == number):
            a, b = pairs[index]
            together = component[a] == component[b]
            if (together if is_ml[index]
                    else frozenset((component[a], component[b])) in separated):
                found.append(index)
    return found


def plain_log_objective(X, labels, weights):
    """log sum_j w_j BCSS_j, BCSS_j = sum_h n_h (mean_hj - mean_j)^2."""
    bcss = np.zeros(X.shape[1])
    for h in np.unique(labels):
        members = X[labels == h]
        bcss += len(members) * (members.mean(axis=0) - X.mean(axis=0)) ** 2
    return np.log(bcss @ weights)


def plain_gap(estimator, X, path, seed, n_permutations):
    """sparcl's KMeansSparseCluster.permute with one ``fit`` per s on permutation b, drawn as
    docs/method/selection.md §5 says: key ``(*seed.spawn_key, b)``, ``permuted(axis=0)``."""
    k = estimator.n_clusters
    observed = np.array([plain_log_objective(X, labels, w)
                         for labels, w in zip(path.labels, path.weights, strict=True)])
    null = np.empty((n_permutations, len(path.sparsity)))
    for b in range(n_permutations):
        child = np.random.SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, b))
        permuted = np.random.default_rng(child).permuted(X, axis=0)
        for i, s in enumerate(path.sparsity):
            model = SparseKMeans(k, sparsity=s, init=path.initial_centers).fit(permuted)
            null[b, i] = plain_log_objective(permuted, model.labels_, model.weights_)
    gap = observed - null.mean(axis=0)
    sd = null.std(axis=0, ddof=1)  # R's sd
    one_sd = min(i for i in range(len(gap)) if gap[i] >= gap.max() - sd[i])
    return observed, null, gap, sd, int(np.argmax(gap)), one_sd


# Constraint cross-validation (§2) --------------------------------------------------------

def test_held_out_f_measure_worked_example():
    """§2.3: 3 must-links (2 satisfied) and 5 cannot-links (4 satisfied): F_ML = 4/6,
    F_CL = 8/10, score 0.7333 (the fraction satisfied would be 0.75)."""
    pairs = np.array([[0, 1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11], [12, 13], [14, 15]])
    is_ml = np.arange(8) < 3
    labels = np.array([0, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0])
    expected = (4 / 6 + 8 / 10) / 2
    assert plain_f_measure(labels, pairs[is_ml], pairs[~is_ml]) == pytest.approx(expected)
    # as one fold, and as fold 1 of two folds whose fold 0 holds the must-links only
    score = _fold_f_measures(labels[None], pairs, is_ml, np.zeros(8, np.int64), 1)
    np.testing.assert_allclose(score, [[0.7333333333333333]], rtol=1e-15)
    two_folds = _fold_f_measures(labels[None], pairs, is_ml, np.where(is_ml, 0, 1), 2)
    np.testing.assert_allclose(two_folds, [[4 / 5, 8 / 9]], rtol=1e-15)  # no FP of the other class


@pytest.mark.parametrize("seed", range(4))
def test_fold_f_measures_are_the_plain_ones_on_every_row_repeated_or_not(seed):
    """Every fold's F-measure of every row of labels is ``plain_f_measure``'s on the fold's
    constraints, where rows equal to the row before (a path's copied runs, whose scores
    are copied) are many."""
    rng = np.random.default_rng(seed)
    n, n_folds, n_s = 30, 3, 8
    pairs = np.unique(np.sort(rng.choice(n, size=(80, 2)), axis=1), axis=0)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    is_ml = rng.random(len(pairs)) < 0.5
    fold = rng.integers(0, n_folds, len(pairs))
    fold[:n_folds] = np.arange(n_folds)
    labels = rng.integers(0, 3, size=(n_s, n))
    for row in np.flatnonzero(rng.random(n_s) < 0.5)[1:]:
        labels[row] = labels[row - 1]
    got = _fold_f_measures(labels, pairs, is_ml, fold, n_folds)
    for row in range(n_s):
        for number in range(n_folds):
            held = fold == number
            expected = plain_f_measure(labels[row], pairs[held & is_ml], pairs[held & ~is_ml])
            assert got[row, number] == pytest.approx(expected, rel=1e-14)


def test_cv_chooses_the_only_s_that_separates_the_held_out_constraints():
    """On the bars, only s = 1.5 (both features) separates the classes and every fold's
    held-out constraints; every s satisfies all the constraints it was fitted with, so the
    satisfaction rule of protocol.md §9.2 falls on the smallest s, and CVCP does not."""
    X, y, must_link, cannot_link = bars()
    estimator = PCSKMeans(2)
    path = estimator.fit_path(X, BARS_GRID, must_link=must_link, cannot_link=cannot_link)
    f_true = [pairwise_f_score(y, labels).f_score for labels in path.labels]
    assert f_true[2] == 1.0 and max(f_true[:2]) < 0.95

    cv = constraint_cv_scores(estimator, X, path, must_link=must_link,
                              cannot_link=cannot_link, n_folds=4, random_state=16)
    expected = plain_cv(PCSKMeans, X, BARS_GRID, path_centres(path), must_link,
                        cannot_link, cv.fold)
    np.testing.assert_allclose(cv.fold_scores, expected, rtol=1e-12)
    np.testing.assert_allclose(cv.score, expected.mean(axis=0), rtol=1e-12)
    assert (expected[:, 2] == 1.0).all()  # s = 1.5 separates every fold's held-out pairs
    assert (expected[:, :2] < 1.0).any(axis=0).all()  # the others miss some in some fold
    assert cv.selected_index == 2 and cv.selected_sparsity == 1.5

    satisfaction = select_by_satisfaction(path, must_link=must_link, cannot_link=cannot_link)
    assert (satisfaction.satisfied == 1.0).all() and satisfaction.selected_sparsity == 1.1


@pytest.mark.parametrize("estimator_class", [PCSKMeans, SparseKMeans])
def test_cv_seeds_every_fold_from_its_training_must_links(estimator_class):
    """§2.2: with Seeding, a fold fit starts from Seeding on the fold's training must-links
    with the estimator's random_state, not from the path's centres, which the held-out
    must-links helped build (a leak). Here a held-out must-link changes the centres, and SKM
    is refitted per fold for the same reason. Compared with Seeding and ``fit`` per fold and
    s computed here."""
    X, _, must_link, cannot_link = bars(seed=11)
    estimator = estimator_class(2, init="seeding", random_state=0)
    path = estimator.fit_path(X, BARS_GRID, must_link=must_link, cannot_link=cannot_link)
    cv = constraint_cv_scores(estimator, X, path, must_link=must_link,
                              cannot_link=cannot_link, n_folds=3, random_state=1)

    def training_seeding(train_must_link, train_cannot_link):
        return seeding_init(X, 2, train_must_link, train_cannot_link, random_state=0)[0]

    expected = plain_cv(estimator_class, X, BARS_GRID, training_seeding, must_link,
                        cannot_link, cv.fold)
    np.testing.assert_allclose(cv.fold_scores, expected, rtol=1e-12)
    leaky = plain_cv(estimator_class, X, BARS_GRID, path_centres(path), must_link,
                     cannot_link, cv.fold)
    assert not np.allclose(leaky, expected)  # the held-out must-links did reach the old fits
    is_ml = np.arange(len(cv.fold)) < len(must_link)
    changed = [not np.allclose(training_seeding(must_link[cv.fold[is_ml] != number],
                                                cannot_link), path.initial_centers)
               for number in range(3)]
    assert any(changed)


@pytest.mark.parametrize("estimator_class", [PCSKMeans, SparseKMeans])
def test_cv_fits_every_fold_from_the_path_centres_with_a_deterministic_init(estimator_class):
    """§2.2: DKM++ centres do not depend on the constraints, so every fold fit starts from
    the path's; SKM's shortcut (its path scored on every fold, nothing refitted) equals the
    explicit refit per fold and s computed here."""
    X, _, must_link, cannot_link = bars(seed=5)
    estimator = estimator_class(2, init="dkm++", random_state=0)
    path = estimator.fit_path(X, BARS_GRID, must_link=must_link, cannot_link=cannot_link)
    cv = constraint_cv_scores(estimator, X, path, must_link=must_link,
                              cannot_link=cannot_link, n_folds=3, random_state=1)
    expected = plain_cv(estimator_class, X, BARS_GRID, path_centres(path), must_link,
                        cannot_link, cv.fold)
    np.testing.assert_allclose(cv.fold_scores, expected, rtol=1e-12)


def test_cv_of_skm_fits_nothing(monkeypatch):
    """SKM ignores the constraints: every fold is scored on the path's own labels."""
    X, _, must_link, cannot_link = bars(seed=4)
    estimator = SparseKMeans(2)
    path = estimator.fit_path(X, BARS_GRID, must_link=must_link, cannot_link=cannot_link)

    def no_fit(*args, **kwargs):
        raise AssertionError("SKM's constraint cross-validation refitted")

    monkeypatch.setattr(SparseKMeans, "fit_path", no_fit)
    monkeypatch.setattr(SparseKMeans, "fit", no_fit)
    monkeypatch.setattr(SparseKMeans, "_path", no_fit)
    cv = constraint_cv_scores(estimator, X, path, must_link=must_link,
                              cannot_link=cannot_link, n_folds=5, random_state=2)
    pairs = np.concatenate([must_link, cannot_link])
    is_ml = np.arange(len(pairs)) < len(must_link)
    for number in range(5):
        held = cv.fold == number
        expected = [plain_f_measure(labels, pairs[held & is_ml], pairs[held & ~is_ml])
                    for labels in path.labels]
        np.testing.assert_allclose(cv.fold_scores[number], expected, rtol=1e-12)


def test_cv_leaves_out_failed_fold_fits(monkeypatch):
    """§2.4: an s is scored by the mean over the folds whose fit at s succeeded, as the
    protocol's nanmean (fold fits made to fail here: fold 0 at s = 1.1 and 1.2, fold 1 at
    1.1); NaN where every fold or the path itself failed."""
    X, _, must_link, cannot_link = bars()
    estimator = PCSKMeans(2)
    path = estimator.fit_path(X, BARS_GRID, must_link=must_link, cannot_link=cannot_link)
    honest = constraint_cv_scores(estimator, X, path, must_link=must_link,
                                  cannot_link=cannot_link, n_folds=3, random_state=0)
    engine = PCSKMeans._path
    failing = iter([[0, 1], [0], []])

    def failing_path(self, *args, **kwargs):
        fold_path = engine(self, *args, **kwargs)
        status = fold_path.status.copy()
        status[next(failing)] = EMPTY_CLUSTER
        return fold_path._replace(status=status)

    monkeypatch.setattr(PCSKMeans, "_path", failing_path)
    cv = constraint_cv_scores(estimator, X, path, must_link=must_link,
                              cannot_link=cannot_link, n_folds=3, random_state=0)
    np.testing.assert_array_equal(cv.n_failed_folds, [2, 1, 0])
    expected = [honest.fold_scores[2, 0], honest.fold_scores[1:, 1].mean(),
                honest.fold_scores[:, 2].mean()]
    np.testing.assert_allclose(cv.score, expected, rtol=1e-15)
    assert np.isnan(cv.fold_scores[0, :2]).all() and np.isnan(cv.fold_scores[1, 0])

    failing = iter([[0], [0], [0]])
    status = path.status_code.copy()
    status[2] = EMPTY_CLUSTER
    cv = constraint_cv_scores(estimator, X, dataclasses.replace(path, status_code=status),
                              must_link=must_link, cannot_link=cannot_link, n_folds=3,
                              random_state=0)
    assert np.isnan(cv.score[0]) and np.isnan(cv.score[2]) and cv.selected_index == 1


def test_folds_hold_out_no_constraint_the_training_constraints_imply():
    """§2.1: no held-out must-link is joined by the training must-links, no held-out
    cannot-link is implied by a training cannot-link between the same components; a naive
    split of the same list leaks (the check can fail)."""
    rng = np.random.default_rng(11)
    labels = rng.integers(0, 3, size=40)
    must_link, cannot_link = random_pairs(rng, labels, 120)
    X = rng.standard_normal((40, 4))
    estimator = PCSKMeans(3)
    path = estimator.fit_path(X, [1.5], must_link=must_link, cannot_link=cannot_link)
    cv = constraint_cv_scores(estimator, X, path, must_link=must_link,
                              cannot_link=cannot_link, n_folds=5, random_state=7)
    assert sorted(set(cv.fold.tolist())) == [0, 1, 2, 3, 4]
    assert len(cv.fold) == len(must_link) + len(cannot_link)
    assert leaked(must_link, cannot_link, cv.fold, 40) == []
    naive = np.random.default_rng(7).integers(0, 5, size=len(cv.fold))
    assert leaked(must_link, cannot_link, naive, 40)
    again = constraint_cv_scores(estimator, X, path, must_link=must_link,
                                 cannot_link=cannot_link, n_folds=5,
                                 random_state=np.random.SeedSequence(7))
    np.testing.assert_array_equal(again.fold, cv.fold)



@pytest.mark.parametrize("n_groups, n_folds", [(2, 2), (7, 3), (40, 5), (301, 10)])
def test_folds_deal_the_groups_as_section_5_draws_them(n_groups, n_folds):
    """§2.1 and §5 literally: NumPy's ``default_rng(seed).permutation`` of the groups, a
    stable sort by decreasing size, then dealt 0..K-1, K-1..0, ... one group at a time."""
    rng = np.random.default_rng(n_groups)
    group = np.concatenate([np.arange(n_groups), rng.integers(0, n_groups, size=3 * n_groups)])
    seed = np.random.SeedSequence(4, spawn_key=(8, n_groups, n_folds))
    size = np.bincount(group)
    order = np.random.default_rng(seed).permutation(n_groups).tolist()
    order.sort(key=lambda g: -size[g])  # list.sort is stable
    fold_of_group, seats = {}, list(range(n_folds)) + list(range(n_folds - 1, -1, -1))
    for position, g in enumerate(order):
        fold_of_group[g] = seats[position % (2 * n_folds)]
    expected = [fold_of_group[g] for g in group]
    np.testing.assert_array_equal(constraint_folds(group, n_folds, seed), expected)

# Gap statistic (§3) ----------------------------------------------------------------------

def test_gap_statistic_matches_plain_sparcl():
    """gaps, sdgaps and bestw of sparcl's KMeansSparseCluster.permute, with PCSKM's observed
    objective and SKM on the permuted data; and the one-standard-deviation rule (here it
    picks s = 1.1 with that s's deviation and would pick 1.4 with the largest gap's)."""
    X, y = blobs(seed=6)
    must_link, cannot_link = random_pairs(np.random.default_rng(1), y, 40)
    estimator = PCSKMeans(3)
    grid = [1.1, 1.4, 2.0, 2.8]
    path = estimator.fit_path(X, grid, must_link=must_link, cannot_link=cannot_link)
    seed = np.random.SeedSequence(2024, spawn_key=(7, 1))
    result = gap_statistic(estimator, X, path, n_permutations=4, random_state=seed)
    observed, null, gap, sd, best, one_sd = plain_gap(estimator, X, path, seed, 4)
    np.testing.assert_allclose(result.log_objective, observed, rtol=1e-12)
    np.testing.assert_allclose(result.null_log_objective, null, rtol=1e-12)
    np.testing.assert_allclose(result.gap, gap, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(result.gap_sd, sd, rtol=1e-9)
    assert (result.selected_index, result.one_sd_index) == (best, one_sd) == (2, 0)
    assert result.selected_sparsity == grid[best]
    assert result.gap[2] == result.gap[3]  # tied largest gaps: the first, as R's which.max


def test_gap_observed_objective_is_the_weighted_bcss_with_paper_scores():
    """With weight_update="paper" the path's objective includes constraint costs; O(s) is
    still sum_j w_j BCSS_j of the path's labels and weights (§3.1)."""
    X, y = blobs(seed=3)
    clique = np.flatnonzero(y == 0)[:5]  # 5 points pairwise cannot-linked: 3 clusters violate
    cannot_link = np.array([[a, b] for a in clique for b in clique if a < b])  # some of them
    estimator = PCSKMeans(3, weight_update="paper")
    path = estimator.fit_path(X, [1.2, 2.0], cannot_link=cannot_link)
    result = gap_statistic(estimator, X, path, n_permutations=1, random_state=0)
    expected = [plain_log_objective(X, labels, w)
                for labels, w in zip(path.labels, path.weights, strict=True)]
    np.testing.assert_allclose(result.log_objective, expected, rtol=1e-12)
    assert (np.abs(np.log(path.objective) - expected) > 1e-3).all()
    assert np.isnan(result.gap_sd).all()  # one permutation: no standard deviation
    assert result.one_sd_index == result.selected_index


def test_gap_failed_s_is_nan_and_never_chosen(monkeypatch):
    """A failed s of the path has NaN gap and is chosen by neither rule; a failed null fit is
    left out of that s's mean and deviation (§3.3)."""
    X, _ = blobs(seed=1)
    estimator = SparseKMeans(3)
    path = estimator.fit_path(X, [1.1, 1.4, 2.0, 2.8])
    result = gap_statistic(estimator, X, path, n_permutations=3, random_state=5)
    best = result.selected_index
    status = path.status_code.copy()
    status[best] = EMPTY_CLUSTER
    failed = dataclasses.replace(path, status_code=status)
    again = gap_statistic(estimator, X, failed, n_permutations=3, random_state=5)
    assert np.isnan(again.gap[best]) and np.isnan(again.log_objective[best])
    assert again.selected_index not in (best, -1) and again.one_sd_index != best
    np.testing.assert_array_equal(np.delete(again.gap, best), np.delete(result.gap, best))

    fit_path = SparseKMeans.fit_path
    calls = iter(range(3))

    def first_null_fails_at_first_s(self, *args, **kwargs):
        null_path = fit_path(self, *args, **kwargs)
        status = null_path.status_code.copy()
        status[0] = EMPTY_CLUSTER if next(calls) == 0 else status[0]
        return dataclasses.replace(null_path, status_code=status)

    monkeypatch.setattr(SparseKMeans, "fit_path", first_null_fails_at_first_s)
    partial = gap_statistic(estimator, X, path, n_permutations=3, random_state=5)
    others = result.null_log_objective[1:, 0]
    assert np.isnan(partial.null_log_objective[0, 0])
    assert partial.gap[0] == pytest.approx(result.log_objective[0] - others.mean(), rel=1e-12)
    assert partial.gap_sd[0] == pytest.approx(others.std(ddof=1), rel=1e-12)
    np.testing.assert_array_equal(partial.gap[1:], result.gap[1:])


def test_gap_permutations_are_order_free():
    """Permutation b is drawn from the seed's key extended by (b,): more permutations
    extend the fewer ones; an int seed is SeedSequence(int); each null data set permutes
    every column of X."""
    X, _ = blobs(seed=2)
    estimator = SparseKMeans(3)
    path = estimator.fit_path(X, [1.3, 2.2])
    four = gap_statistic(estimator, X, path, n_permutations=4, random_state=9)
    two = gap_statistic(estimator, X, path, n_permutations=2,
                        random_state=np.random.SeedSequence(9))
    np.testing.assert_array_equal(four.null_log_objective[:2], two.null_log_objective)
    child = np.random.SeedSequence(9, spawn_key=(3,))
    permuted = np.random.default_rng(child).permuted(X, axis=0)
    np.testing.assert_array_equal(np.sort(permuted, axis=0), np.sort(X, axis=0))
    model = SparseKMeans(3, sparsity=2.2, init=path.initial_centers).fit(permuted)
    assert four.null_log_objective[3, 1] == pytest.approx(
        plain_log_objective(permuted, model.labels_, model.weights_), rel=1e-12)


# Satisfaction and tie rules (§1, §4) -----------------------------------------------------

def plain_choice(scores, ties):
    """The tie rule on one row, by listing the tied positions."""
    valid = [i for i, v in enumerate(scores) if not np.isnan(v)]
    if not valid:
        return -1
    top = max(scores[i] for i in valid)
    tied = [i for i in valid if scores[i] == top]
    return {"smallest": tied[0], "largest": tied[-1], "median": tied[(len(tied) - 1) // 2]}[ties]


def test_tie_rules():
    scores = [0.5, 1.0, 1.0, np.nan, 1.0, 0.2]
    assert [best_sparsity_index(scores, ties=t) for t in ("smallest", "largest", "median")] \
        == [1, 4, 2]
    assert best_sparsity_index([0.3, 0.3, 0.3, 0.3], ties="median") == 1  # the lower median
    assert best_sparsity_index([np.nan, np.nan]) == -1
    rng = np.random.default_rng(0)
    table = rng.integers(0, 3, size=(50, 7)).astype(float)
    table[rng.random(table.shape) < 0.3] = np.nan
    for ties in ("smallest", "largest", "median"):
        expected = [plain_choice(row, ties) for row in table]
        np.testing.assert_array_equal(best_sparsity_index(table, ties=ties), expected)
        np.testing.assert_array_equal(best_sparsity_index(table.T, ties=ties, axis=0), expected)


def test_tie_scores_break_ties_before_the_tie_rule():
    """§1, §2.5 worked example: scores tie at 1, 2 and 4; tie scores 2, 3, 3 there keep 2 and
    4 (then the rule: median 2, largest 4); a larger tie score at 1 alone picks 1; tie
    scores NaN at every tied s leave all three to the rule; the tie score of an untied s
    (9 at 0) never counts."""
    scores = [0.5, 1.0, 1.0, np.nan, 1.0, 0.2]
    assert best_sparsity_index(scores, ties="median", tie_scores=[9, 2, 3, 9, 3, 9]) == 2
    assert best_sparsity_index(scores, ties="largest", tie_scores=[9, 2, 3, 9, 3, 9]) == 4
    assert best_sparsity_index(scores, ties="median", tie_scores=[9, 5, 3, 9, 3, 9]) == 1
    nan = np.nan
    assert best_sparsity_index(scores, ties="median",
                               tie_scores=[9, nan, nan, 9, nan, 9]) == 2
    assert best_sparsity_index(scores, ties="smallest",
                               tie_scores=[9, nan, 1, 9, nan, 9]) == 2
    assert best_sparsity_index([np.nan, np.nan], tie_scores=[1.0, 2.0]) == -1
    rng = np.random.default_rng(1)
    table = rng.integers(0, 3, size=(60, 7)).astype(float)
    table[rng.random(table.shape) < 0.3] = np.nan
    second = rng.integers(0, 3, size=table.shape).astype(float)
    second[rng.random(table.shape) < 0.3] = np.nan

    def plain(row, tie_row):
        valid = [i for i in range(len(row)) if not np.isnan(row[i])]
        if not valid:
            return -1
        tied = [i for i in valid if row[i] == max(row[j] for j in valid)]
        known = [i for i in tied if not np.isnan(tie_row[i])]
        if known:
            tied = [i for i in known if tie_row[i] == max(tie_row[j] for j in known)]
        return tied[(len(tied) - 1) // 2]

    expected = [plain(row, tie_row) for row, tie_row in zip(table, second, strict=True)]
    np.testing.assert_array_equal(
        best_sparsity_index(table, ties="median", tie_scores=second), expected)
    np.testing.assert_array_equal(
        best_sparsity_index(table.T, ties="median", tie_scores=second.T, axis=0), expected)


@pytest.mark.parametrize("with_tie_scores", [False, True])
def test_a_masked_score_counts_as_nan(with_tie_scores):
    """The kernel's ``usable`` mask (what the report's selections pass instead of an array
    of masked scores): its choice equals the plain rule on the scores set to NaN where the
    mask is False, tie scores included, for every tie rule."""
    from pcskm.algorithms._selection_kernels import best_index_rows

    rng = np.random.default_rng(2)
    table = rng.integers(0, 3, size=(80, 7)).astype(float)
    table[rng.random(table.shape) < 0.2] = np.nan
    usable = rng.random(table.shape) < 0.7
    second = (rng.integers(0, 3, size=table.shape).astype(float) if with_tie_scores
              else None)
    masked = np.where(usable, table, np.nan)
    for rank, ties in enumerate(("smallest", "largest", "median")):
        index = np.empty(len(table), np.int64)
        best_index_rows(table, usable, np.empty((0, 0)) if second is None else second, rank,
                        index)
        expected = best_sparsity_index(masked, ties=ties, tie_scores=second)
        np.testing.assert_array_equal(index, expected)
        assert (index != best_sparsity_index(table, ties=ties, tie_scores=second)).any()


def test_select_by_satisfaction_tie_rules_and_failed_s():
    X, _, must_link, cannot_link = bars()
    path = PCSKMeans(2).fit_path(X, BARS_GRID, must_link=must_link, cannot_link=cannot_link)
    pairs = np.concatenate([must_link, cannot_link])
    is_ml = np.arange(len(pairs)) < len(must_link)
    expected = [np.mean([(labels[a] == labels[b]) == ml
                         for (a, b), ml in zip(pairs, is_ml, strict=True)])
                for labels in path.labels]
    chosen = {ties: select_by_satisfaction(path, must_link=must_link, cannot_link=cannot_link,
                                           ties=ties) for ties in ("smallest", "largest",
                                                                   "median")}
    np.testing.assert_array_equal(chosen["smallest"].satisfied, expected)
    assert [chosen[t].selected_sparsity for t in ("smallest", "median", "largest")] \
        == [1.1, 1.2, 1.5]
    status = path.status_code.copy()
    status[0] = EMPTY_CLUSTER
    failed = select_by_satisfaction(dataclasses.replace(path, status_code=status),
                                    must_link=must_link, cannot_link=cannot_link)
    assert np.isnan(failed.satisfied[0]) and failed.n_tied == 2
    assert failed.selected_sparsity == 1.2


# Bad input -------------------------------------------------------------------------------

def _bars_fit():
    X, _, must_link, cannot_link = bars()
    estimator = PCSKMeans(2)
    path = estimator.fit_path(X, BARS_GRID, must_link=must_link, cannot_link=cannot_link)
    return estimator, X, path, must_link, cannot_link


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda e, X, p, ml, cl: constraint_cv_scores(e, X, p, must_link=ml[:2], n_folds=3),
     ValueError, r"n_folds=3 is larger than the number of constraints \(2\)"),
    (lambda e, X, p, ml, cl: constraint_cv_scores(e, X, p, must_link=[[0, 1], [1, 2], [0, 2]],
                                                  n_folds=2),
     ValueError, r"number of groups of constraints .* \(1: must-link components"),
    (lambda e, X, p, ml, cl: constraint_cv_scores(e, X, p),
     ValueError, "needs constraints; none were given"),
    (lambda e, X, p, ml, cl: constraint_cv_scores(e, X, p, must_link=ml, n_folds=1),
     ValueError, "n_folds must be an integer >= 2; got 1"),
    (lambda e, X, p, ml, cl: gap_statistic(e, X, p, n_permutations=0),
     ValueError, "n_permutations must be an integer >= 1; got 0"),
    (lambda e, X, p, ml, cl: gap_statistic(e, X, p, random_state=np.random.default_rng(0)),
     ValueError, "random_state must be None, a non-negative int or a numpy SeedSequence"),
    (lambda e, X, p, ml, cl: gap_statistic(e, X, p, ties="middle"),
     ValueError, r"ties must be one of \['largest', 'median', 'smallest'\]; got 'middle'"),
    (lambda e, X, p, ml, cl: gap_statistic(e, X[:-1], p),
     ValueError, "the path does not belong to X"),
    (lambda e, X, p, ml, cl: gap_statistic(PCKMeans(2), X, p),
     TypeError, "estimator must be a SparseKMeans or PCSKMeans"),
    (lambda e, X, p, ml, cl: gap_statistic(e, X, p.labels),
     TypeError, "path must be a SparsityPath"),
    (lambda e, X, p, ml, cl: select_by_satisfaction(
        dataclasses.replace(p, sparsity=p.sparsity[::-1]), must_link=ml),
     ValueError, "grid must be strictly increasing"),
    (lambda e, X, p, ml, cl: select_by_satisfaction(p),
     ValueError, "needs constraints; none were given"),
])
def test_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call(*_bars_fit())


@pytest.mark.parametrize("seed", range(5))
def test_mean_and_sd_over_folds_are_numpys_bit_for_bit(seed):
    """The compiled mean and sd over the folds (or permutations) are the plain NumPy sums
    over axis 0 of the non-NaN entries, bit for bit (NaN included), with NaN below one
    (mean) and two (sd) entries, and -0.0 entries."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((rng.integers(1, 12), rng.integers(1, 30))) * 10.0 ** seed
    values[rng.random(values.shape) < 0.3] = np.nan
    values[:, -1] = np.nan  # no entry: NumPy's 0.0 / 0
    values[0, 0] = -0.0
    computed = ~np.isnan(values)
    count = computed.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(computed, values, 0.0).sum(axis=0) / count
        mean_square = np.where(computed, (values - mean) ** 2, 0.0).sum(axis=0) / count
        sd = np.where(count > 1, np.sqrt(mean_square * count / (count - 1)), np.nan)
    got_mean, got_sd, got_count = _mean_and_sd(values)
    np.testing.assert_array_equal(got_count, count)
    assert got_mean.tobytes() == mean.tobytes()
    assert got_sd.tobytes() == sd.tobytes()
    scored = count > 1
    np.testing.assert_allclose(got_sd[scored], [np.std(column[~np.isnan(column)], ddof=1)
                                                 for column in values.T[scored]], rtol=1e-12)

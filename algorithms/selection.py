"""Choosing the sparsity s from the data and the constraints, never the labels
(docs/method/selection.md).

Each rule scores every s of a fitted :class:`~pcskm.algorithms.SparsityPath` and returns the
per-s scores with the chosen s:

* :func:`constraint_cv_scores`: cross-validation of the constraints (CVCP, §2);
* :func:`pair_auc_scores`: the held-out pair AUC of the weighted distance, on the same fold
  fits, with the one-standard-error choice (§7);
* :func:`gap_statistic`: Witten & Tibshirani's permutation gap statistic (§3);
* :func:`select_by_satisfaction`: the fraction of the constraints satisfied, with an explicit
  tie rule (§4; protocol.md §9.2 is its ``ties="smallest"``).

:func:`best_sparsity_index` is the choice itself (the largest score and a tie rule, §1), on
any array of per-s scores, e.g. scores stored in a results cube;
:func:`one_standard_error_index` is the pair AUC's (§7.2).

The experiment runner computes the same scores through the engines, without estimator
objects per fit, from the array-level pieces of these rules (not exported from
``pcskm.algorithms``): :func:`constraint_groups`, :func:`constraint_folds`,
:class:`FoldSplit`, :func:`fold_fitter`, :func:`cross_validate`, :func:`squared_differences`,
:func:`pair_auc`, :func:`log_weighted_bcss`, :func:`null_estimator`, :func:`null_data_sets`,
:func:`null_log_objectives` and :func:`null_summary`.
"""

import copy
import numbers
from typing import NamedTuple

import numpy as np
from sklearn.base import clone

from . import _random_kernels as draws
from ._result import FAILED, STATUS_NAMES
from ._selection_kernels import (
    best_index_rows,
    fold_f_measures,
    mean_and_sd_columns,
    sorted_pairs_auc,
    weighted_bcss,
)
from ._selection_kernels import squared_differences as squared_differences_of
from ._sparse import FitCache, total_sum_of_squares
from ._validation import check_choice, check_data, check_sparsity, plain
from .constraints import Constraints
from .sparse_kmeans import PCSKMeans, SparseKMeans, SparsityPath

TIES = ("smallest", "largest", "median")


class ConstraintCVResult(NamedTuple):
    """:func:`constraint_cv_scores`: per-s CVCP scores (§2) and the chosen s."""

    sparsity: np.ndarray  # (n_s,) the path's grid
    score: np.ndarray  # (n_s,) mean held-out F-measure over the folds whose fit succeeded
    fold_scores: np.ndarray  # (n_folds, n_s) held-out F-measure of each fold; NaN: failed fit
    n_failed_folds: np.ndarray  # (n_s,) folds whose fit failed at s
    fold: np.ndarray  # (m,) fold of each constraint: must-links as given, then cannot-links
    selected_index: int  # position of the chosen s in the grid; -1 when every s is NaN
    selected_sparsity: float  # the chosen s; NaN when every s is NaN


class PairAUCResult(NamedTuple):
    """:func:`pair_auc_scores`: per-s held-out pair AUC (§7) and the chosen s."""

    sparsity: np.ndarray  # (n_s,) the path's grid
    score: np.ndarray  # (n_s,) mean held-out pair AUC over the folds with one
    score_se: np.ndarray  # (n_s,) its standard error over those folds; NaN below two
    fold_scores: np.ndarray  # (n_folds, n_s) AUC of each fold; NaN: failed fit, one kind
    fold: np.ndarray  # (m,) fold of each constraint: must-links as given, then cannot-links
    best_index: int  # the largest score (ties: the largest s); -1 when every s is NaN
    best_sparsity: float
    selected_index: int  # the one-standard-error choice (§7.2); -1 when every s is NaN
    selected_sparsity: float


class GapStatisticResult(NamedTuple):
    """:func:`gap_statistic`: per-s gap statistic (§3) and the two choices of s."""

    sparsity: np.ndarray  # (n_s,) the path's grid
    gap: np.ndarray  # (n_s,) log O(s) - mean_b log O*_b(s); NaN: failed fit
    gap_sd: np.ndarray  # (n_s,) standard deviation of log O*_b(s) over b (sparcl's sdgaps)
    log_objective: np.ndarray  # (n_s,) log O(s) on the data
    null_log_objective: np.ndarray  # (n_permutations, n_s) log O*_b(s); NaN: failed fit
    selected_index: int  # the largest gap (sparcl's bestw); -1 when every gap is NaN
    selected_sparsity: float
    one_sd_index: int  # the smallest s whose gap is within one gap_sd of the largest gap
    one_sd_sparsity: float


class SatisfactionResult(NamedTuple):
    """:func:`select_by_satisfaction`: per-s satisfied fraction (§4) and the chosen s."""

    sparsity: np.ndarray  # (n_s,) the path's grid
    satisfied: np.ndarray  # (n_s,) fraction of the constraints satisfied; NaN: failed fit
    n_tied: int  # how many s share the largest fraction
    selected_index: int  # -1 when every s failed
    selected_sparsity: float


def _tied_at_top(scores, axis):
    """Boolean mask of the entries equal to the largest non-NaN score along ``axis``."""
    valid = ~np.isnan(scores)
    top = np.max(np.where(valid, scores, -np.inf), axis=axis, keepdims=True)
    return valid & (scores == top)


def best_sparsity_index(scores, *, ties="smallest", axis=-1, tie_scores=None):
    """Position of the largest non-NaN score along ``axis``, an axis ordered by increasing s
    (docs/method/selection.md §1).

    Scores that tie exactly with the largest go first to ``tie_scores`` (an array of the
    shape of ``scores``, or None), if given: only the tied s with the largest non-NaN tie
    score stay tied (all of them when none has one). The s still tied go to the ``ties``
    rule: ``"smallest"`` s (the rule of protocol.md §9.2), ``"largest"`` s, or ``"median"``:
    the lower median of the tied s, so that the choice is always one of them. Returns an
    integer array (an int for 1-D scores); -1 where every score is NaN.
    """
    check_choice(ties, "ties", TIES)
    values = np.asarray(scores, dtype=np.float64)
    last = np.moveaxis(values, axis, -1)  # the s axis last: one row per selection

    def as_rows(array):
        return np.ascontiguousarray(np.moveaxis(array, axis, -1)).reshape(-1, last.shape[-1])

    second = (np.empty((0, 0)) if tie_scores is None else as_rows(
        np.broadcast_to(np.asarray(tie_scores, dtype=np.float64), values.shape)))
    index = np.empty(last.shape[:-1], dtype=np.int64)
    best_index_rows(as_rows(values), np.empty((0, 0), dtype=np.bool_), second,
                    TIES.index(ties), index.reshape(-1))
    return int(index) if index.ndim == 0 else index


def _at(grid, index):
    return float(grid[index]) if index >= 0 else np.nan


_IS_FAILED = np.isin(np.arange(len(STATUS_NAMES)), list(FAILED))  # by status code


def failed_rows(status):
    """Boolean mask of the failed fits among status codes (``empty_cluster``,
    ``degenerate_weights``)."""
    return _IS_FAILED[np.asarray(status)]


def _failed(path):
    return failed_rows(path.status_code)


def _seed_sequence(random_state):
    """``random_state`` as a SeedSequence (None: fresh entropy)."""
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if random_state is None or (isinstance(random_state, numbers.Integral)
                                and not isinstance(random_state, bool) and random_state >= 0):
        return np.random.SeedSequence(random_state)
    raise ValueError("random_state must be None, a non-negative int or a numpy SeedSequence "
                     f"(a Generator cannot give order-free child seeds); got "
                     f"{plain(random_state)!r}")


def _mean_and_sd(values):
    """Mean and sample standard deviation (R's sd: denominator n - 1; NaN for n < 2) over
    axis 0 of the non-NaN entries of ``values`` (2-D), and their count n (NaN mean for
    n = 0)."""
    return mean_and_sd_columns(np.ascontiguousarray(values, dtype=np.float64))


def _check_count(value, name, minimum):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {plain(value)!r}")
    return int(value)


def _check_path(path):
    if not isinstance(path, SparsityPath):
        raise TypeError(f"path must be a SparsityPath (from fit_path); got "
                        f"{type(path).__name__}")
    if len(path.sparsity) > 1 and not (np.diff(path.sparsity) > 0).all():
        raise ValueError("the path's s grid must be strictly increasing (the tie rules "
                         f"choose by the order of s); got {path.sparsity.tolist()}")


def _checked(estimator, X, path, ties):
    """Validate what the rules that refit share; returns X as float64."""
    check_choice(ties, "ties", TIES)
    if not isinstance(estimator, PCSKMeans):
        raise TypeError("estimator must be a SparseKMeans or PCSKMeans (the one that fitted "
                        f"the path); got {type(estimator).__name__}")
    _check_path(path)
    X = check_data(X)
    if path.labels.shape[1] != X.shape[0] or path.initial_centers.shape != (
            estimator.n_clusters, X.shape[1]):
        raise ValueError(
            f"the path does not belong to X and the estimator: it has "
            f"{path.labels.shape[1]} samples and {path.initial_centers.shape[0]} centres of "
            f"{path.initial_centers.shape[1]} features; X has shape {X.shape} and "
            f"n_clusters={estimator.n_clusters}")
    return X


def constraint_groups(constraints):
    """Group number of each constraint of ``constraints`` (a :class:`Constraints`), 0 to
    G - 1: one group per must-link component, and one per pair of components joined by
    cannot-links (§2.1). Points outside any must-link are their own component."""
    n = constraints.n_samples
    component = np.where(constraints.neighbourhood >= 0, constraints.neighbourhood,
                         constraints.n_neighbourhoods + np.arange(n))
    a = component[constraints.pairs[:, 0]]
    b = component[constraints.pairs[:, 1]]
    # a must-link has a == b; a cannot-link never does (Constraints refuses it).
    key = np.minimum(a, b) * (constraints.n_neighbourhoods + n) + np.maximum(a, b)
    return np.unique(key, return_inverse=True)[1].reshape(-1)


def constraint_folds(group, n_folds, seed):
    """Fold of each constraint, from the ``group`` of each (:func:`constraint_groups`) and
    ``seed`` (a SeedSequence, §5): groups in random order, sorted by decreasing size
    (stable), dealt to the folds back and forth (0, 1, ..., K-1, K-1, ..., 0, ...) (§2.1)."""
    if n_folds > len(group):
        raise ValueError(f"n_folds={n_folds} is larger than the number of constraints "
                         f"({len(group)})")
    size = np.bincount(group)
    if n_folds > len(size):
        raise ValueError(
            f"n_folds={n_folds} is larger than the number of groups of constraints that can be "
            f"held out without leaking ({len(size)}: must-link components and the cannot-links "
            "between two components, docs/method/selection.md §2.1)")
    order = draws.permutation(draws.generator_state(seed), len(size))
    order = order[np.argsort(-size[order], kind="stable")]
    lap, seat = np.divmod(np.arange(len(size)), n_folds)
    fold_of_group = np.empty(len(size), dtype=np.int64)
    fold_of_group[order] = np.where(lap % 2 == 0, seat, n_folds - 1 - seat)
    return fold_of_group[group]


def _fold_f_measures(labels, pairs, is_must_link, fold, n_folds):
    """(n_s, n_folds) CVCP F-measure of each fold's constraints under each row of
    ``labels`` (§2.3)."""
    return fold_f_measures(np.ascontiguousarray(labels, dtype=np.int64), pairs, is_must_link,
                           fold, n_folds)


def fold_fitter(estimator, X, options, initial_centers, random_state):
    """The fold fit of CVCP (§2.2) of ``estimator`` (a validated :class:`PCSKMeans` or
    :class:`SparseKMeans`) on validated ``X`` with its engine ``options`` over the grid: a
    function ``fit_fold(train, cache=None)`` of a fold's training :class:`Constraints` (and a
    ``_sparse.FitCache`` of ``X`` and ``train``, or None) that returns the labels (n_s, n),
    weights (n_s, p) and failed rows (n_s,) of the grid fitted on them. It
    starts from ``initial_centers`` (those of the path fitted with all the constraints)
    unless the estimator's init is Seeding: then from Seeding on the training constraints,
    drawn from ``random_state`` (the path's own, copied for every fold, so that every fold
    draws the same numbers whatever the order of the folds). Returns None when the fold fits
    are the path itself: an estimator that ignores the constraints (SKM) from centres that
    do not depend on them. :func:`constraint_cv_scores`, :func:`pair_auc_scores` and the
    experiment runner all fit their folds through this function."""
    seeded = isinstance(estimator.init, str) and estimator.init == "seeding"
    if not (seeded or estimator._constrained):
        return None

    def fit_fold(train, cache=None):
        centres = (estimator._initial_state(X, train, copy.deepcopy(random_state))[0]
                   if seeded else initial_centers)
        fold_path = estimator._path(X, train, centres, options, cache)
        return fold_path.labels, fold_path.weights, failed_rows(fold_path.status)

    return fit_fold


class CrossValidation(NamedTuple):
    """:func:`cross_validate`: the held-out scores of a path's fold fits, per fold and s."""

    score: np.ndarray  # (n_s,) mean held-out F-measure over the folds whose fit succeeded
    fold_scores: np.ndarray  # (n_folds, n_s) held-out F-measure; NaN: failed fit
    n_failed_folds: np.ndarray  # (n_s,) folds whose fit failed at s
    auc: np.ndarray | None  # (n_s,) mean held-out pair AUC over the folds with one (§7.1)
    auc_se: np.ndarray | None  # (n_s,) its standard error over those folds
    fold_auc: np.ndarray | None  # (n_folds, n_s) held-out pair AUC; NaN: failed fit or no AUC


def squared_differences(X, pairs):
    """(m, p) squared differences (x_aj - x_bj)^2 of the rows of each pair (a, b) of
    ``pairs``: the weighted squared distance of a pair under weights w is their dot product
    with w (§7.1)."""
    return squared_differences_of(np.ascontiguousarray(X, dtype=np.float64),
                                  np.ascontiguousarray(pairs, dtype=np.int64))


def pair_auc(differences, is_must_link, weights):
    """(n_s,) AUC (§7.1) of the pairs whose :func:`squared_differences` are ``differences``
    (m, p) under each row of ``weights`` (n_s, p): the probability that a cannot-link pair
    has a larger weighted squared distance than a must-link pair, ties counted 1/2 (the
    Mann-Whitney statistic over n_CL n_ML). NaN where the pairs are of one kind only or a row
    of weights is not finite.

    The count needs each kind's distances in ascending order, and any order of the pairs
    gives the same count: NumPy sorts them (its vectorised sort), the rows of a copied run
    (weights equal to the row before) once."""
    must = np.asarray(is_must_link, dtype=bool)
    if must.all() or not must.any():
        return np.full(len(weights), np.nan)
    distance = (np.asarray(differences, dtype=np.float64) @ np.asarray(weights).T).T
    new_run = np.ones(len(distance), dtype=bool)
    new_run[1:] = (distance[1:] != distance[:-1]).any(axis=1)
    distinct = distance[new_run]
    finite = np.isfinite(distinct).all(axis=1)
    scored = distinct[finite]
    run_auc = np.full(len(distinct), np.nan)
    run_auc[finite] = sorted_pairs_auc(np.sort(scored[:, must], axis=1),
                                       np.sort(scored[:, ~must], axis=1))
    return run_auc[np.cumsum(new_run) - 1]


class FoldSplit:
    """A split of a cell's ``constraints`` by ``fold`` (:func:`constraint_folds`) and what
    every path scored on it shares (§2.2, §7.1): each fold's training constraints, built
    once, with a ``_sparse.FitCache`` of its fold fits on ``X`` (the paths of the cell's
    other initial centres whose fold fits reach the same first clustering copy its s path,
    bit for bit), and the held-out pairs in fold order with their squared differences on
    ``X`` for the pair AUC. Must not outlive ``X``."""

    def __init__(self, constraints, fold, X=None):
        self.constraints = constraints
        self.fold = fold
        self.n_folds = int(fold.max()) + 1
        self.X = X
        by_fold = np.argsort(fold, kind="stable")  # a fold's pairs in their order
        self._bounds = np.searchsorted(fold[by_fold], np.arange(self.n_folds + 1))
        self._pairs = constraints.pairs[by_fold]
        self._is_must_link = constraints.is_must_link[by_fold]
        self._differences = None
        self._training = {}  # fold number -> (its training Constraints, their FitCache)

    def training(self, number):
        """``(train, cache)``: the constraints outside fold ``number`` and their FitCache."""
        if number not in self._training:
            pairs, is_must_link = self.constraints.pairs, self.constraints.is_must_link
            train = self.fold != number
            constraints = Constraints.from_pairs(
                pairs[train & is_must_link], pairs[train & ~is_must_link],
                n_samples=self.constraints.n_samples)
            self._training[number] = constraints, FitCache(constraints)
        return self._training[number]

    def _rows(self, number):
        return slice(self._bounds[number], self._bounds[number + 1])

    def held_out(self, number):
        """``(pairs, is_must_link)``: the constraints of fold ``number``."""
        return self._pairs[self._rows(number)], self._is_must_link[self._rows(number)]

    def held_out_differences(self, number):
        """The :func:`squared_differences` on ``X`` of the pairs of fold ``number``."""
        if self._differences is None:
            self._differences = squared_differences(self.X, self._pairs)
        return self._differences[self._rows(number)]


def cross_validate(split, labels, failed, fit_fold=None, *, weights=None):
    """Held-out scores of a path's ``labels`` (n_s, n) and ``failed`` rows (n_s,) on the
    :class:`FoldSplit` ``split`` of its constraints: the CVCP score (§2.2-2.4) and, when the
    split has an ``X``, the pair AUC (§7.1) of the path's ``weights`` (n_s, p).

    ``fit_fold(train, cache)`` fits the grid on a fold's training constraints (a
    :class:`Constraints`, with its FitCache) and returns its labels, weights and failed rows
    (:func:`fold_fitter`); None when the fold fits are the path itself, which then scores
    every fold. Both scores of a fold come from the same fold fit. Returns a
    :class:`CrossValidation` (its AUC fields None without ``X``).
    """
    n_folds = split.n_folds
    fold_scores = np.empty((n_folds, len(failed)))
    fold_auc = np.full((n_folds, len(failed)), np.nan)
    if fit_fold is None:
        path_scores = _fold_f_measures(labels, split.constraints.pairs,
                                       split.constraints.is_must_link, split.fold, n_folds)
    for number in range(n_folds):
        held_pairs, held_must_link = split.held_out(number)
        if fit_fold is None:
            fold_weights, fold_failed, score = weights, failed, path_scores[:, number]
        else:  # the fold's own constraints only: the same counts, so the same F-measures
            fold_labels, fold_weights, fold_failed = fit_fold(*split.training(number))
            score = _fold_f_measures(fold_labels, held_pairs, held_must_link,
                                     np.zeros(len(held_pairs), dtype=np.int64), 1)[:, 0]
        fold_scores[number] = np.where(fold_failed, np.nan, score)
        if split.X is not None:
            auc = pair_auc(split.held_out_differences(number), held_must_link, fold_weights)
            fold_auc[number] = np.where(fold_failed, np.nan, auc)
    mean, _, n_scored = _mean_and_sd(fold_scores)
    score = np.where(failed, np.nan, mean)
    if split.X is None:
        return CrossValidation(score, fold_scores, n_folds - n_scored, None, None, None)
    auc, auc_sd, n_auc = _mean_and_sd(fold_auc)
    with np.errstate(divide="ignore", invalid="ignore"):
        auc_se = auc_sd / np.sqrt(n_auc)
    return CrossValidation(score, fold_scores, n_folds - n_scored, np.where(failed, np.nan, auc),
                           np.where(failed, np.nan, auc_se), fold_auc)


def _cross_validate_path(estimator, X, path, constraints, n_folds, random_state, with_auc):
    """The folds of ``constraints`` (§2.1, drawn from ``random_state``) and the
    :class:`CrossValidation` of ``path``'s fold fits (§2.2), with the pair AUC if
    ``with_auc``: what :func:`constraint_cv_scores` and :func:`pair_auc_scores` share."""
    n_folds = _check_count(n_folds, "n_folds", 2)
    seed = _seed_sequence(random_state)
    fold = constraint_folds(constraint_groups(constraints), n_folds, seed)
    fold_estimator = clone(estimator)
    X = fold_estimator._checked_input(X)
    options = fold_estimator._engine_options(
        check_sparsity(path.sparsity, X.shape[1], name="sparsities"))
    fit_fold = fold_fitter(fold_estimator, X, options, path.initial_centers,
                           fold_estimator.random_state)
    validation = cross_validate(FoldSplit(constraints, fold, X if with_auc else None),
                                path.labels, _failed(path), fit_fold, weights=path.weights)
    return fold, validation


def constraint_cv_scores(estimator, X, path, *, must_link=None, cannot_link=None, n_folds=5,
                         ties="median", tie_scores=None, random_state=None):
    """Choose s by cross-validating the constraints (CVCP; docs/method/selection.md §2).

    The constraints are split into ``n_folds`` folds by must-link component (§2.1). For each
    fold, ``estimator`` fits the whole s grid of ``path`` on the other folds' constraints and
    the fold's constraints are scored by CVCP's F-measure (§2.3). The fold fit starts from
    the path's initial centres, or, with ``init="seeding"``, from Seeding on the fold's
    training constraints with the estimator's ``random_state``, so that no held-out
    constraint reaches the fit (§2.2, :func:`fold_fitter`). SKM ignores the constraints:
    from centres that do not depend on them its fold fits are ``path`` itself, and nothing
    is refitted. ``score`` is the mean over the folds whose fit succeeded at s (§2.4); NaN if
    none did or if ``path`` failed at s. Nothing is refitted for the chosen s: it indexes
    ``path``.

    The choice is the largest score; ties go to the largest ``tie_scores`` among the tied s
    (e.g. ``gap_statistic(...).gap``; None: none), then to ``ties`` (default the lower
    median): the rule ``cv`` of §2.5.

    ``path`` must come from ``estimator.fit_path(X, ..., must_link=must_link,
    cannot_link=cannot_link)``. ``random_state`` (None, int or SeedSequence) draws the
    folds; the runner passes a SeedSequence derived from the cell's key. Returns a
    :class:`ConstraintCVResult`.
    """
    X = _checked(estimator, X, path, ties)
    constraints = Constraints.from_pairs(must_link, cannot_link, n_samples=X.shape[0])
    if len(constraints) == 0:
        raise ValueError("constraint cross-validation needs constraints; none were given")
    if tie_scores is not None and np.shape(tie_scores) != path.sparsity.shape:
        raise ValueError(f"tie_scores must hold one score per s of the path "
                         f"({len(path.sparsity)}); got shape {np.shape(tie_scores)}")
    fold, validation = _cross_validate_path(estimator, X, path, constraints, n_folds,
                                            random_state, with_auc=False)
    score, fold_scores, n_failed = validation[:3]
    index = best_sparsity_index(score, ties=ties, tie_scores=tie_scores)
    return ConstraintCVResult(path.sparsity, score, fold_scores, n_failed, fold,
                              index, _at(path.sparsity, index))


def one_standard_error_index(scores, standard_errors, *, axis=-1):
    """The one-standard-error choice toward the unthresholded end (§7.2): along ``axis``
    (ordered by increasing s), the largest s whose score is at least the largest non-NaN
    score minus the standard error of that best s (of the largest s among several tied at
    the best; a NaN standard error counts as 0). Returns an integer array (an int for 1-D
    scores); -1 where every score is NaN."""
    scores = np.moveaxis(np.asarray(scores, dtype=np.float64), axis, -1)
    errors = np.moveaxis(np.asarray(standard_errors, dtype=np.float64), axis, -1)
    if errors.shape != scores.shape:
        raise ValueError(f"standard_errors must have the shape of scores {scores.shape}; got "
                         f"{errors.shape}")
    best = np.maximum(best_sparsity_index(scores, ties="largest"), 0)[..., None]
    top = np.take_along_axis(scores, best, axis=-1)
    error = np.take_along_axis(errors, best, axis=-1)
    within = ~np.isnan(scores) & (scores >= top - np.where(np.isnan(error), 0.0, error))
    last = scores.shape[-1] - 1 - np.argmax(within[..., ::-1], axis=-1)
    index = np.where(within.any(axis=-1), last, -1)
    return int(index) if index.ndim == 0 else index


def pair_auc_scores(estimator, X, path, *, must_link=None, cannot_link=None, n_folds=5,
                    random_state=None):
    """Choose s by the held-out pair AUC of the weighted distance (docs/method/selection.md
    §7).

    The folds and fold fits are those of :func:`constraint_cv_scores` with the same
    arguments (§2.1, §2.2). For each fold and s, the held-out pairs are ranked by their
    squared distance weighted by the fold fit's feature weights w(s),
    d_w(a, b) = sum_j w_j (x_aj - x_bj)^2; the fold's score is the AUC: the probability
    that a held-out cannot-link is farther apart than a held-out must-link, ties counted
    1/2 (§7.1). A fold without both kinds, or whose fit failed at s, has none. ``score`` is
    the mean over the folds with one, ``score_se`` its standard error (the folds' sample
    sd over the square root of their number; NaN below two folds). NaN where the path
    failed at s.

    The choice is the one-standard-error rule toward the unthresholded s (§7.2,
    :func:`one_standard_error_index`): the largest s whose score is within one standard
    error of the best score. Needs both must-links and cannot-links. Returns a
    :class:`PairAUCResult`.
    """
    X = _checked(estimator, X, path, "smallest")
    constraints = Constraints.from_pairs(must_link, cannot_link, n_samples=X.shape[0])
    if constraints.is_must_link.all() or not constraints.is_must_link.any():
        raise ValueError("the pair AUC compares must-links with cannot-links and needs both; "
                         f"got {int(constraints.is_must_link.sum())} must-links and "
                         f"{int((~constraints.is_must_link).sum())} cannot-links")
    fold, validation = _cross_validate_path(estimator, X, path, constraints, n_folds,
                                            random_state, with_auc=True)
    score, score_se = validation.auc, validation.auc_se
    best = best_sparsity_index(score, ties="largest")
    index = one_standard_error_index(score, score_se)
    return PairAUCResult(path.sparsity, score, score_se, validation.fold_auc, fold, best,
                         _at(path.sparsity, best), index, _at(path.sparsity, index))


def log_weighted_bcss(X, labels, weights, failed, n_clusters):
    """log O(s), O(s) = sum_j w_j BCSS_j of each s's ``labels`` (n_s, n) and ``weights``
    (n_s, p) on X (§3.1); NaN for a ``failed`` s. BCSS_j = TSS_j - WCSS_j, the score of the
    authors' code (algorithms.md §4.3), computed once per distinct row of labels."""
    objective = weighted_bcss(X, np.ascontiguousarray(labels, dtype=np.int64),
                              np.ascontiguousarray(weights, dtype=np.float64),
                              np.ascontiguousarray(failed, dtype=np.bool_), int(n_clusters),
                              total_sum_of_squares(X))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(objective)


def null_estimator(estimator):
    """The SKM of the null data sets (§3.2): ``estimator``'s parameters without the
    constraints' (``weight_update``)."""
    params = estimator.get_params()
    return SparseKMeans(**{name: params[name] for name in SparseKMeans._get_param_names()})


def null_data_sets(X, n_permutations, seed):
    """The ``n_permutations`` null data sets of X (§3.2): data set b permutes every column of
    X independently, ``default_rng(seed').permuted(X, axis=0)`` with ``seed'`` the key of
    ``seed`` extended by ``(b,)`` (§5), the same whatever else was drawn before, unlike
    ``SeedSequence.spawn``. The draws are computed in compiled code
    (:mod:`._random_kernels`)."""
    return [draws.permuted(draws.generator_state(seed, (b,)), X) for b in range(n_permutations)]


def null_log_objectives(null_sets, n_clusters, fit_null):
    """(B, n_s) log O*_b(s) (§3.2) of the null data sets ``null_sets``
    (:func:`null_data_sets`): ``fit_null(b, permuted)`` fits SKM's grid on data set b and
    returns labels, weights and failed rows."""
    return np.array([log_weighted_bcss(permuted, *fit_null(b, permuted), n_clusters)
                     for b, permuted in enumerate(null_sets)])


def null_summary(null_log_objective):
    """``(mean, sd)`` of log O*_b(s) (B, n_s) over the permutations whose fit at s succeeded
    (§3.3): the gap is log O(s) minus the mean, ``gap_sd`` is R's sd."""
    null_mean, gap_sd, _ = _mean_and_sd(null_log_objective)
    return null_mean, gap_sd


def gap_statistic(estimator, X, path, *, n_permutations=25, ties="smallest",
                  random_state=None):
    """Choose s by the gap statistic of Witten & Tibshirani (R sparcl's
    ``KMeansSparseCluster.permute``; docs/method/selection.md §3).

    O(s) is the weighted between-cluster sum of squares of the path at s (§3.1). Each of the
    ``n_permutations`` null data sets permutes every feature of X independently; SKM (the
    estimator's parameters, no constraints: they do not survive a permutation) fits the
    grid on it from the path's initial centres, giving O*_b(s) (§3.2). Then
    ``gap = log O(s) - mean_b log O*_b(s)`` and ``gap_sd`` = the standard deviation of
    log O*_b(s), as sparcl's ``gaps`` and ``sdgaps``. The choice is the largest gap
    (sparcl's ``bestw``); ``one_sd_index`` is the smallest s whose gap is within one
    ``gap_sd`` of the largest (§3.3). A failed s has NaN gap and is never chosen.

    ``random_state`` (None, int or SeedSequence) seeds permutation b with its key extended
    by ``(b,)`` (§5); the runner's stored gap is this function's with
    ``SeedSequence(seed, spawn_key=(9, ds, sub))`` (docs/method/protocol.md §2). Returns a
    :class:`GapStatisticResult`.
    """
    X = _checked(estimator, X, path, ties)
    n_permutations = _check_count(n_permutations, "n_permutations", 1)
    seed = _seed_sequence(random_state)
    k = estimator.n_clusters
    null = null_estimator(estimator).set_params(init=path.initial_centers)

    def fit_null(_, permuted):
        null_path = null.fit_path(permuted, path.sparsity)
        return null_path.labels, null_path.weights, _failed(null_path)

    null_log_objective = null_log_objectives(null_data_sets(X, n_permutations, seed), k,
                                             fit_null)
    log_objective = log_weighted_bcss(X, path.labels, path.weights, _failed(path), k)
    null_mean, gap_sd = null_summary(null_log_objective)
    gap = log_objective - null_mean
    index = best_sparsity_index(gap, ties=ties)
    one_sd = _one_sd_index(gap, gap_sd, index)
    return GapStatisticResult(path.sparsity, gap, gap_sd, log_objective, null_log_objective,
                              index, _at(path.sparsity, index), one_sd,
                              _at(path.sparsity, one_sd))


def _one_sd_index(gap, gap_sd, best):
    """The smallest s with gap(s) >= max gap - gap_sd(s) (§3.3); ``best`` when no gap_sd is
    defined (one permutation)."""
    if best < 0:
        return -1
    within = gap >= gap[best] - gap_sd  # False for NaN
    within[best] = True
    return int(np.argmax(within))


def select_by_satisfaction(path, *, must_link=None, cannot_link=None, ties="smallest"):
    """Choose the s whose labels satisfy the largest fraction of the constraints, failed s
    excluded, exact ties broken by ``ties`` (docs/method/selection.md §4).

    ``ties="smallest"`` is the honest selection of protocol.md §9.2; ``"largest"`` and
    ``"median"`` show how much that choice owes to the tie rule. Returns a
    :class:`SatisfactionResult`.
    """
    check_choice(ties, "ties", TIES)
    _check_path(path)
    constraints = Constraints.from_pairs(must_link, cannot_link,
                                         n_samples=path.labels.shape[1])
    if len(constraints) == 0:
        raise ValueError("selection by satisfaction needs constraints; none were given")
    satisfied = np.where(_failed(path), np.nan, constraints.satisfied_fractions(path.labels))
    index = best_sparsity_index(satisfied, ties=ties)
    n_tied = int(_tied_at_top(satisfied, -1).sum())
    return SatisfactionResult(path.sparsity, satisfied, n_tied, index,
                              _at(path.sparsity, index))

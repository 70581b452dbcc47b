"""The per-s selection scores of a task's cells (docs/method/selection.md), computed through
the engine of the cell's fit, with no estimator object per fit; the runner stores them in
the cube (docs/reference/cube-schema.md) so that every selection is a reduction over s.

* Constraint cross-validation (§2), in the runs below the spec's ``cv_runs`` (every run by
  default): the cell's constraints are split into ``cv_folds`` folds by must-link
  component, drawn from the cell's key (8, ds, sub, kind, pct10, run, fold)
  (docs/method/protocol.md §2); a cell with fewer groups than that uses one fold per group
  if it has at least 2, else gets no score. Each fold fits the whole s grid again on its
  training constraints (``fold_fitter``, the estimator-level function's own): from the
  cell's initial centres, or with Seeding from Seeding on the training constraints with the
  cell's Seeding key (§2.2). SKM from a deterministic init ignores the constraints and
  scores every fold on its own path, which is its fold fit.
* Held-out pair AUC (§7), with the CV scores: each fold's held-out pairs ranked by their
  distance weighted by the fold fit's weights, from the same fold fits; NaN in a cell whose
  constraints are of one kind (kinds must-link and cannot-link).
* Gap statistic (§3): null data set b of a data set permutes its columns from key
  (9, ds, sub, b), the same for every cell; SKM with the setting's parameters fits the grid
  on it from the cell's initial centres. With a deterministic init these null fits are the
  same for every cell: computed once per process. With Seeding they depend on the cell's
  centres, and the settings of a cell with the same centres and SKM parameters share them;
  the null fits of the task's cells that reach the same first clustering share its path
  (:class:`NullDataSets`).
* The settings of a cell share its CV folds, each fold's training constraints and the
  FitCache of their fold fits, and the held-out pairs' squared differences
  (``FoldSplit``).
"""

from pcskm.algorithms._sparse import FitCache
from pcskm.algorithms.constraints import Constraints
from pcskm.algorithms.selection import (
    FoldSplit,
    constraint_folds,
    constraint_groups,
    cross_validate,
    failed_rows,
    fold_fitter,
    log_weighted_bcss,
    null_data_sets,
    null_estimator,
    null_log_objectives,
    null_summary,
)

# Mean and sd of the null log objectives of the deterministic inits, computed once per
# process (the data set, init, seed, SKM parameters, grid and permutations determine them).
_DETERMINISTIC_NULLS = {}
_MAX_DETERMINISTIC_NULLS = 256
# The paths a null data set's FitCache keeps (NullDataSets): at most a few MiB each.
MAX_NULL_PATHS = 32


def null_key(estimator):
    """What the null fits of a cell depend on besides the cell (§3.2): the Seeding fill
    (which gives its centres) and SKM's parameters. The settings of a cell with the same key
    share its Seeding null fits."""
    params = null_estimator(estimator).get_params()
    return estimator._seeding_fill, tuple(sorted(
        (name, value) for name, value in params.items()
        if name not in ("init", "random_state", "sparsity")))


class CellScores:
    """What the settings sharing one cell's draws share for their selection scores: the
    number of groups of its constraints, its CV folds per number of folds (drawn from
    ``fold_seed()``, called when first needed) as a :class:`FoldSplit` of the task's data
    (each fold's training constraints, the FitCache of their fold fits, the held-out pairs)
    and its Seeding null objectives."""

    def __init__(self, constraints, fold_seed):
        self.constraints = constraints
        self._fold_seed = fold_seed
        self._group = None  # group of each constraint
        self._splits = {}  # K -> FoldSplit into K folds
        self.nulls = {}  # (Seeding fill, SKM parameters) -> mean and sd of log O*_b(s)

    def folds(self, cv_folds, X=None):
        """``(K, split)``: a :class:`FoldSplit` of the constraints into ``cv_folds`` folds,
        or one per group when they form fewer groups but at least 2 (§2.1), on the task's
        data ``X``; ``(0, None)`` when they form fewer than 2."""
        if self._group is None:
            self._group = constraint_groups(self.constraints)
        n_folds = min(cv_folds, int(self._group.max(initial=-1)) + 1)
        if n_folds < 2:
            return 0, None
        if n_folds not in self._splits:
            self._splits[n_folds] = FoldSplit(
                self.constraints, constraint_folds(self._group, n_folds, self._fold_seed()), X)
        return n_folds, self._splits[n_folds]


class NullDataSets:
    """The null data sets of a task's data set ``X`` (§3.2), drawn from ``seed`` once per
    task when first needed, each with a FitCache of SKM's paths on it
    (``algorithms._sparse.FitCache``, the last ``MAX_NULL_PATHS`` kept). A null fit depends
    on its initial centres only through its first clustering, which the Seeding centres of
    the task's cells reach again and again: those copy the path of the first, bit for bit."""

    def __init__(self, X, seed):
        self.X = X
        self.seed = seed
        self._sets = []
        self._caches = []

    def first(self, n_permutations, constraints):
        """``(data sets, caches)``: the first ``n_permutations`` null data sets and their
        FitCaches of the fits with the engine constraints ``constraints``."""
        if len(self._sets) < n_permutations:
            self._sets = null_data_sets(self.X, n_permutations, self.seed)
            self._caches += [FitCache(constraints, MAX_NULL_PATHS)
                             for _ in range(n_permutations - len(self._caches))]
        return self._sets[:n_permutations], self._caches[:n_permutations]


class SelectionScorer:
    """The selection scores of one sparse setting's cells: ``record`` writes a cell's into
    its :class:`~pcskm.experiments.cells.BlockResult`. ``fitter`` is the setting's
    :class:`~pcskm.experiments.cells.Fitter`; ``null_sets`` the :class:`NullDataSets` of the
    task."""

    def __init__(self, setting, fitter, null_sets):
        self.setting = setting
        self.fitter = fitter
        self.null_sets = null_sets
        self.n_clusters = fitter.estimator.n_clusters
        self.null = null_estimator(fitter.estimator)
        self.null_options = self.null._engine_options(fitter.sparsities)
        self.null_key = null_key(fitter.estimator)
        self.no_constraints = Constraints.empty(fitter.X.shape[0])
        self._shared_gap = None  # (fit, gap and gap_sd) of a fit shared by the task's cells

    def record(self, result, r, run, f, fitted, centres, cell, seeding_seed=None):
        """Score the cell (position ``r`` of run ``run``, fold ``f``) of ``result`` whose fit
        is ``fitted`` (a ``_Fit`` from ``centres`` with the constraints of ``cell``, its
        :class:`CellScores`; with Seeding, ``seeding_seed`` is the cell's Seeding
        SeedSequence). The CV scores, and the pair AUC of their fold fits (NaN in a
        cell with one kind of constraint), only in the setting's ``cv_runs``."""
        failed = failed_rows(fitted.status)
        if self.setting.has_cv(run):
            n_folds, split = cell.folds(self.setting.cv_folds, self.fitter.X)
            result.cv_folds_used[r, f] = n_folds
            if n_folds:
                fit_fold = fold_fitter(self.fitter.estimator, self.fitter.X,
                                       self.fitter.options, centres, seeding_seed)
                validation = cross_validate(split, fitted.labels, failed, fit_fold,
                                            weights=fitted.weights)
                result.cv_score[r, f] = validation.score
                result.auc_score[r, f] = validation.auc
                result.auc_se[r, f] = validation.auc_se
        if self.setting.gap_permutations:
            result.gap[r, f], result.gap_sd[r, f] = self._gap(fitted, failed, centres, cell)

    def _gap(self, fitted, failed, centres, cell):
        """``(gap, gap_sd)`` of the fit (§3.3); once per task for a fit the cells share."""
        if self._shared_gap is not None and self._shared_gap[0] is fitted:
            return self._shared_gap[1]
        log_objective = log_weighted_bcss(self.fitter.X, fitted.labels, fitted.weights, failed,
                                          self.n_clusters)
        null_mean, gap_sd = self.null_summary(centres, cell)
        gap = (log_objective - null_mean, gap_sd)
        if self.setting.shares_fits:
            self._shared_gap = (fitted, gap)
        return gap

    def null_summary(self, centres, cell):
        """Mean and sd of log O*_b(s) of the null fits from ``centres`` (§3.2, §3.3): once per
        process for a deterministic init, once per cell and Seeding fill with Seeding."""
        setting = self.setting
        if self.fitter.start is not None:
            cache = _DETERMINISTIC_NULLS
            key = (setting.data_ref, setting.data_dir, setting.init, setting.seed,
                   self.null_key[1], setting.sparsities, setting.gap_permutations)
        else:
            cache, key = cell.nulls, self.null_key
        if key not in cache:
            if cache is _DETERMINISTIC_NULLS and len(cache) >= _MAX_DETERMINISTIC_NULLS:
                del cache[next(iter(cache))]  # the oldest
            null_sets, caches = self.null_sets.first(
                setting.gap_permutations, self.null._engine_constraints(self.no_constraints))
            cache[key] = null_summary(null_log_objectives(
                null_sets, self.n_clusters, self._null_fitter(centres, caches)))
        return cache[key]

    def _null_fitter(self, centres, caches):
        """A null fit: SKM's engine over the grid on null data set b from ``centres``,
        through its FitCache ``caches[b]``."""
        def fit_null(b, permuted):
            path = self.null._path(permuted, self.no_constraints, centres,
                                   self.null_options, caches[b])
            return path.labels, path.weights, failed_rows(path.status)

        return fit_null

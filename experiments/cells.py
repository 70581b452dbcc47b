"""Evaluating cells: the fits, scores and records of one task (docs/method/protocol.md §6, §8).

A *cell* is (data set, algorithm, init, kind, percentage, run, fold). Its constraint sample
belongs to (data set, kind, percentage, run, fold) and is shared by every algorithm, init and
s (D13). A *setting* is one (data set, algorithm, init); a *block* is every run of one (kind,
percentage) and all its folds; a *task* is one or more blocks of one data set evaluated for
one or more settings in one process, so that each constraint sample is drawn and built once
for all the settings. This module knows nothing of Dask or Zarr: the runner builds tasks,
ships them to workers and writes the results.

Per (run, fold) of a block: the cell's constraints come from the protocol (§5), the estimator
clusters all n points from the init (DKM++, ROBIN(D), Maximin(D): the data set's centres,
computed once per process; Seeding: drawn from the cell's Seeding key, §2), the sparse
estimators fit the data set's whole s grid from that one init (``fit_path``), and the labels
are scored on the fold's test points (§8.1). LKM and SKM with a deterministic init use nothing
random: they are fitted once per task and their fold scores reused for every kind, percentage
and run (§6); their constraint counts and satisfied fractions are still per cell.
"""

import functools
import time
import warnings
from dataclasses import dataclass

import numpy as np

from pcskm import algorithms
from pcskm.algorithms._result import FAILED, STATUS_NAMES
from pcskm.algorithms.constraints import Constraints
from pcskm.algorithms.metrics import pairwise_f_scores

from .datasets import load
from .protocol import Protocol

# Spec estimator names -> estimator classes of the ``algorithms`` package.
ESTIMATOR_CLASSES = {
    "LKM": "LloydKMeans",
    "SKM": "SparseKMeans",
    "PCKM": "PCKMeans",
    "MPCKM": "MPCKMeans",
    "PCSKM": "PCSKMeans",
}
SPARSE = frozenset({"SKM", "PCSKM"})  # fitted over the s grid with fit_path
# Estimator parameters the runner sets for every cell (make_estimator, fit), so a variant
# cannot: what sets each one instead.
RUNNER_PARAMETERS = {
    "n_clusters": "the data set's number of classes",
    "init": "the spec's inits",
    "random_state": "the cell's Seeding key, derived from the spec's seed "
                    "(docs/method/protocol.md §2)",
    "sparsity": "the s grid of the spec's sparsity_start, sparsity_step and "
                "sparsity_max_values (docs/method/protocol.md §7; sparsity_max_values = 1 "
                "fits sparsity_start only)",
}
UNCONSTRAINED = frozenset({"LKM", "SKM"})  # never see the constraints (except via Seeding)
# The spec's max_iter is the authors' MATLAB maxIter (LKM, PCKM, SKM, PCSKM:
# docs/method/protocol.md §1).
# MPCKM ran in the authors' jar with no cap; it keeps its own cap (max_iter=100, D6) unless a
# variant sets max_iter in its params.
USES_SPEC_MAX_ITER = frozenset({"LKM", "SKM", "PCKM", "PCSKM"})
DETERMINISTIC_INITS = {
    "dkm++": algorithms.dkmpp_init,
    "robin": algorithms.robin_init,
    "maximin": algorithms.maximin_init,
}
SEEDING = "seeding"


@dataclass(frozen=True)
class Setting:
    """What every fit of a task shares: the data set, the protocol and the estimator."""

    dataset: str
    data_dir: str | None
    seed: int
    n_folds: int
    algorithm: str  # the variant name (the cube's ``algorithm`` coordinate)
    estimator: str  # LKM, SKM, PCKM, MPCKM or PCSKM
    params: tuple  # sorted (name, value) pairs of constructor parameters
    init: str
    max_iter: int
    sparsities: tuple  # the data set's s grid (used by SKM and PCSKM only)

    @classmethod
    def from_spec(cls, spec, dataset, variant, init, sparsities, data_dir=None):
        """The setting of ``variant`` (an :class:`~pcskm.experiments.spec.AlgorithmVariant`) and
        ``init`` on ``dataset`` in ``spec``; ``sparsities`` is the data set's s grid."""
        return cls(
            dataset=dataset, data_dir=None if data_dir is None else str(data_dir),
            seed=spec.seed, n_folds=spec.n_folds, algorithm=variant.name,
            estimator=variant.estimator, params=tuple(sorted(variant.params.items())),
            init=init, max_iter=spec.max_iter, sparsities=tuple(sparsities),
        )

    @property
    def is_sparse(self):
        return self.estimator in SPARSE

    @property
    def shares_fits(self):
        """True when the fit uses nothing random and no constraint (§6): fit once, reuse."""
        return self.estimator in UNCONSTRAINED and self.init in DETERMINISTIC_INITS

    @property
    def n_sparsity(self):
        """Number of s entries of a fit: the grid for SKM/PCSKM, 1 (none) otherwise."""
        return len(self.sparsities) if self.is_sparse else 1


@dataclass(frozen=True)
class Block:
    """One (kind, percentage) of a task and the runs to compute (all folds)."""

    kind: str
    percent: float
    runs: tuple


@dataclass(frozen=True)
class Task:
    """Blocks of one data set for one or more settings; ``folds`` restricts the folds (None:
    all; for timing probes)."""

    settings: tuple  # of Setting, all of one data set and protocol
    blocks: tuple  # of Block
    folds: tuple | None = None

    def __post_init__(self):
        if not self.settings:
            raise ValueError("a task needs at least one setting")
        protocols = {(s.dataset, s.data_dir, s.seed, s.n_folds) for s in self.settings}
        if len(protocols) > 1:
            raise ValueError("the settings of a task must share the data set, data folder, "
                             f"seed and number of folds; got {sorted(protocols)}")

    @property
    def dataset(self):
        return self.settings[0].dataset

    @property
    def fold_list(self):
        return tuple(range(self.settings[0].n_folds)) if self.folds is None else self.folds

    @property
    def n_samples(self):
        """Constraint samples drawn: one per run and fold of every block."""
        return sum(len(block.runs) for block in self.blocks) * len(self.fold_list)

    @property
    def n_cells(self):
        """Cells filled by this task (one per setting, run and fold of every block)."""
        return self.n_samples * len(self.settings)

    @property
    def n_fits(self):
        """Fits computed (one per s for the sparse estimators); a shared fit counts once."""
        return sum((1 if s.shares_fits else self.n_samples) * s.n_sparsity
                   for s in self.settings)


@dataclass
class BlockResult:
    """The records of one block (docs/method/protocol.md §8.2). Arrays are indexed (run, fold,
    s) in the order of ``block.runs``, the task's folds and the s entries of the setting (one
    entry for the non-sparse estimators); ``weights`` has a trailing feature axis. ``status``
    holds the codes of ``pcskm.algorithms._result``; a failed fit has NaN scores, satisfied
    fraction and weights."""

    block: Block
    f_score: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    satisfied: np.ndarray
    status: np.ndarray
    n_iter: np.ndarray
    n_constraints: np.ndarray  # (run, fold)
    weights: np.ndarray


@dataclass
class TaskResult:
    """``blocks[i][j]``: the :class:`BlockResult` of setting ``task.settings[i]`` and block
    ``task.blocks[j]``."""

    task: Task
    blocks: list
    seconds: float  # compute time in the worker


@functools.lru_cache(maxsize=64)
def dataset(name, data_dir=None):
    """The data set, loaded once per process."""
    return load(name, data_dir)


@functools.lru_cache(maxsize=8)  # a protocol caches its fold pools (MBs for ionosphere)
def protocol(name, data_dir, seed, n_folds):
    """The data set's protocol (folds, pools and constraint samples), once per process."""
    return Protocol(dataset(name, data_dir), seed=seed, n_folds=n_folds)


@functools.lru_cache(maxsize=256)
def deterministic_centres(name, data_dir, init):
    """DKM++, ROBIN(D) or Maximin(D) centres of the data set (they depend on X and k only,
    docs/method/initialisations.md §0), computed once per process."""
    data = dataset(name, data_dir)
    rows = DETERMINISTIC_INITS[init](data.X, data.n_clusters)
    centres = data.X[np.asarray(rows)]
    centres.setflags(write=False)
    return centres


def estimator_class(estimator):
    """The estimator class of a spec estimator name (LKM, SKM, PCKM, MPCKM, PCSKM)."""
    return getattr(algorithms, ESTIMATOR_CLASSES[estimator])


def make_estimator(setting, init, random_state=None):
    """The estimator of ``setting`` starting from ``init`` (a centres array or "seeding")."""
    params = dict(setting.params)
    if setting.estimator in USES_SPEC_MAX_ITER:
        params.setdefault("max_iter", setting.max_iter)
    n_clusters = dataset(setting.dataset, setting.data_dir).n_clusters
    return estimator_class(setting.estimator)(n_clusters=n_clusters, init=init,
                                              random_state=random_state, **params)


_IS_FAILED = np.isin(np.arange(len(STATUS_NAMES)), list(FAILED))  # by status code


class _Fit:
    """Labels (S, n), weights (S, p), n_iter (S,) and status codes (S,) of one fit."""

    def __init__(self, labels, weights, n_iter, status):
        self.labels = np.atleast_2d(labels)
        self.weights = np.atleast_2d(np.asarray(weights, dtype=np.float64))
        self.n_iter = np.atleast_1d(np.asarray(n_iter, dtype=np.int64))
        self.status = np.atleast_1d(np.asarray(status, dtype=np.int8))
        self.failed = _IS_FAILED[self.status]


def fit(setting, must_link=None, cannot_link=None, seeding_seed=None, constraints=None):
    """One fit on all n points: the whole s grid for SKM/PCSKM, else one estimator fit.

    ``seeding_seed`` is the cell's Seeding SeedSequence (init "seeding" only). LKM and SKM
    use the constraints only through Seeding, which builds its centres from them; their
    clustering ignores them. ``constraints``, if given, is the cell's list already built as
    a :class:`Constraints` (it replaces ``must_link`` / ``cannot_link``).
    """
    data = dataset(setting.dataset, setting.data_dir)
    if setting.init == SEEDING:
        estimator = make_estimator(setting, SEEDING, random_state=seeding_seed)
    else:
        estimator = make_estimator(
            setting, deterministic_centres(setting.dataset, setting.data_dir, setting.init)
        )
    if constraints is None:
        constraints = Constraints.from_pairs(must_link, cannot_link, n_samples=data.n_samples)
    with warnings.catch_warnings():
        # a failed fit warns; here it is recorded in the status and scored NaN (§8.1)
        warnings.simplefilter("ignore", algorithms.ClusteringFailedWarning)
        if setting.is_sparse:
            path = estimator._fit_path_constraints(
                data.X, np.asarray(setting.sparsities), constraints
            )
            return _Fit(path.labels, path.weights, path.n_iter, path.status_code)
        estimator._fit_constraints(data.X, constraints)
    return _Fit(estimator.labels_, estimator.weights_, estimator.n_iter_,
                STATUS_NAMES.index(estimator.status_))


def _scores(y_test, fitted, test):
    """F, precision, recall (S, 3) of every s on the test points; NaN for a failed fit."""
    out = np.full((len(fitted.status), 3), np.nan)
    ok = ~fitted.failed
    if ok.any():
        out[ok] = pairwise_f_scores(y_test, fitted.labels[ok][:, test])
    return out


def _satisfied(constraints, fitted):
    """Fraction of the cell's constraints satisfied by the labels of every s (NaN if
    failed)."""
    out = constraints.satisfied_fractions(fitted.labels)
    out[fitted.failed] = np.nan
    return out


def _empty_block(block, setting, n_folds, n_features):
    shape = (len(block.runs), n_folds, setting.n_sparsity)
    return BlockResult(
        block=block,
        f_score=np.full(shape, np.nan), precision=np.full(shape, np.nan),
        recall=np.full(shape, np.nan), satisfied=np.full(shape, np.nan),
        status=np.zeros(shape, np.int8), n_iter=np.zeros(shape, np.int64),
        n_constraints=np.zeros(shape[:2], np.int64),
        weights=np.full((*shape, n_features), np.nan),
    )


def _record(result, r, f, fitted, scores, constraints):
    result.f_score[r, f] = scores[:, 0]
    result.precision[r, f] = scores[:, 1]
    result.recall[r, f] = scores[:, 2]
    result.satisfied[r, f] = _satisfied(constraints, fitted)
    result.status[r, f] = fitted.status
    result.n_iter[r, f] = fitted.n_iter
    result.n_constraints[r, f] = len(constraints)
    result.weights[r, f] = fitted.weights


def evaluate(task):
    """Fit and score every cell of ``task``; returns a :class:`TaskResult`. Each (run, fold)
    of a block draws its constraint sample once and every setting uses it."""
    start = time.perf_counter()
    first = task.settings[0]
    data = dataset(first.dataset, first.data_dir)
    cv = protocol(first.dataset, first.data_dir, first.seed, first.n_folds)
    folds = task.fold_list
    tests = [cv.test_index(fold) for fold in folds]
    y_tests = [data.y[test] for test in tests]
    shared = {}  # setting index -> (its one fit, its scores per fold)
    for index, setting in enumerate(task.settings):
        if setting.shares_fits:
            fitted = fit(setting)
            shared[index] = (fitted, [_scores(y, fitted, test)
                                      for y, test in zip(y_tests, tests, strict=True)])
    seeded = any(s.init == SEEDING for i, s in enumerate(task.settings) if i not in shared)
    results = [[] for _ in task.settings]
    for block in task.blocks:
        block_results = [_empty_block(block, setting, len(folds), data.n_features)
                         for setting in task.settings]
        for r, run in enumerate(block.runs):
            for f, (fold, test) in enumerate(zip(folds, tests, strict=True)):
                must_link, cannot_link = cv.constraints(block.kind, block.percent, run, fold)
                constraints = Constraints.from_pairs(
                    must_link, cannot_link, n_samples=data.n_samples
                )
                # the cell's Seeding key, the same for every algorithm (a SeedSequence is
                # only read by the generators made from it)
                seeding_seed = (cv.seeding_seed(block.kind, block.percent, run, fold)
                                if seeded else None)
                for index, setting in enumerate(task.settings):
                    if index in shared:
                        fitted, scores = shared[index][0], shared[index][1][f]
                    else:
                        fitted = fit(setting, constraints=constraints,
                                     seeding_seed=seeding_seed if setting.init == SEEDING
                                     else None)
                        scores = _scores(y_tests[f], fitted, test)
                    _record(block_results[index], r, f, fitted, scores, constraints)
        for per_setting, result in zip(results, block_results, strict=True):
            per_setting.append(result)
    return TaskResult(task=task, blocks=results, seconds=time.perf_counter() - start)

"""Evaluating cells: the fits, scores and records of one task (docs/method/protocol.md §6, §8).

A *cell* is (data set, algorithm, init, kind, percentage, run, fold). In the paired design its
constraint sample belongs to (data set, kind, percentage, run, fold) and is shared by every
algorithm, init and s (D13); in the unpaired design every (algorithm, init) draws its own
(§6). A *setting* is one (data set, algorithm, init); a *block* is every run of one (kind,
percentage) and all its folds; a *task* is one or more blocks of one data set evaluated for
one or more settings in one process, so that each constraint sample is drawn and built once
for all the settings that share it. This module knows nothing of Dask or Zarr: the runner
builds tasks, ships them to workers and writes the results.

Per (run, fold) of a block: the cell's constraints come from the protocol (§5), the estimator's
engine clusters all n points from the init (DKM++, ROBIN(D), Maximin(D): the data set's
centres, computed once per process; Seeding: drawn from the cell's Seeding key, §2), the
sparse estimators fit the data set's whole s grid from that one init (``fit_path``), and one
compiled call scores the labels on the fold's test points (§8.1) and records them. What the
fits of a setting share (parameters, data set) is validated once per task (:class:`Fitter`).
LKM and SKM with a deterministic init use nothing random: they are fitted once per task and
the fit reused for every kind, percentage and run (§6); their constraint counts and
satisfied fractions are still per cell. A sparse setting may also get the per-s selection
scores of docs/method/selection.md (:mod:`pcskm.experiments.selection_scores`). A user
estimator (an import path, docs/reference/estimator-contract.md) is fitted through its own
``fit`` (:class:`UserFitter`), from the same initial centres and constraints.
"""

import dataclasses
import functools
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pcskm import algorithms
from pcskm.algorithms._jit import kernel
from pcskm.algorithms._result import ERROR, FIT_FAILED, FIT_STATUS_NAMES
from pcskm.algorithms._sparse import FitCache
from pcskm.algorithms._validation import check_sparsity
from pcskm.algorithms.constraints import Constraints, _satisfied_rows
from pcskm.algorithms.metrics import _f_score_rows

from . import estimators
from .datasets import load

# the built-in names live in .estimators; ESTIMATOR_CLASSES and RUNNER_PARAMETERS stay
# importable from here
from .estimators import ESTIMATOR_CLASSES, RUNNER_PARAMETERS, SPARSE, estimator_class  # noqa: F401
from .faults import is_environmental
from .protocol import Protocol
from .sources import DataDefinition

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
    design: str = "paired"  # the spec's design (docs/method/protocol.md §6)
    cv_folds: int = 0  # constraint folds of the CV scores, 0: none (docs/method/selection.md)
    gap_permutations: int = 0  # null data sets of the gap statistic, 0: none
    cv_runs: int | None = None  # runs 0 to cv_runs - 1 get the CV scores; None: every run
    data: DataDefinition | None = None  # the spec's [data.NAME] table; None: a registry name
    constraints: str = "use"  # a user estimator's fit takes the constraints, or "ignore"s them

    def __post_init__(self):
        if (self.cv_folds or self.gap_permutations) and not self.is_sparse:
            raise ValueError(f"{self.algorithm} ({self.estimator}) fits no s grid: it gets no "
                             "selection scores (cv_folds and gap_permutations must be 0)")

    @classmethod
    def from_spec(cls, spec, dataset, variant, init, sparsities, data_dir=None):
        """The setting of ``variant`` (an :class:`~pcskm.experiments.spec.AlgorithmVariant`) and
        ``init`` on ``dataset`` in ``spec``; ``sparsities`` is the data set's s grid."""
        return cls(
            dataset=dataset, data_dir=None if data_dir is None else str(data_dir),
            seed=spec.seed, n_folds=spec.n_folds, algorithm=variant.name,
            estimator=variant.estimator, params=tuple(sorted(variant.params.items())),
            init=init, max_iter=spec.max_iter, sparsities=tuple(sparsities),
            design=spec.design,
            cv_folds=spec.cv_folds if variant.name in spec.cv_algorithms else 0,
            gap_permutations=spec.gap_permutations if variant.estimator in SPARSE else 0,
            cv_runs=spec.cv_runs if variant.name in spec.cv_algorithms else None,
            data=None if isinstance(spec.data_ref(dataset), str) else spec.data_ref(dataset),
            constraints=variant.constraints,
        )

    @property
    def data_ref(self):
        """What :func:`dataset` loads: the spec's definition, else the registry name."""
        return self.dataset if self.data is None else self.data

    @property
    def is_sparse(self):
        return estimators.is_sparse(self.estimator)

    @property
    def is_user(self):
        """True for a user estimator (an import path, :mod:`.estimators`)."""
        return estimators.is_import_path(self.estimator)

    @property
    def shares_fits(self):
        """True when the fit uses nothing random and no constraint (§6): fit once, reuse."""
        return self.estimator in UNCONSTRAINED and self.init in DETERMINISTIC_INITS

    @property
    def n_sparsity(self):
        """Number of s entries of a fit: the grid for SKM/PCSKM, 1 (none) otherwise."""
        return len(self.sparsities) if self.is_sparse else 1

    @property
    def uses_constraints(self):
        """True when the clustering uses the constraints (not only to seed: LKM, SKM; not
        at all: a user estimator with ``constraints = "ignore"``)."""
        return self.estimator not in UNCONSTRAINED and self.constraints == "use"

    @property
    def has_scores(self):
        """True when the cells get selection scores (docs/method/selection.md)."""
        return bool(self.cv_folds or self.gap_permutations)

    def has_cv(self, run):
        """True when the cells of ``run`` get CV scores (``cv_runs``: the first runs only)."""
        return bool(self.cv_folds) and (self.cv_runs is None or run < self.cv_runs)

    def selection_fits(self, run):
        """Paths fitted per cell of ``run`` for the selection scores: one per CV fold when
        the clustering or its init (Seeding) uses the constraints
        (docs/method/selection.md §2.2), one per null data set with Seeding (with a
        deterministic init the null fits are shared by every cell, :mod:`.selection_scores`)."""
        refits = self.uses_constraints or self.init == SEEDING
        return ((self.cv_folds if refits and self.has_cv(run) else 0)
                + (self.gap_permutations if self.init == SEEDING else 0))


@dataclass(frozen=True)
class Block:
    """One (kind, percentage) of a task and the runs to compute (all folds)."""

    kind: str
    percent: float
    runs: tuple


@dataclass(frozen=True)
class Task:
    """Blocks of one data set for one or more settings; ``folds`` restricts the folds (None:
    all; for timing probes); ``skip`` holds the (setting index, block index, run) cells the
    task leaves out: done cells of a chunk that the task computes for other settings
    (docs/reference/cube-schema.md, Chunks and size)."""

    settings: tuple  # of Setting, all of one data set and protocol
    blocks: tuple  # of Block
    folds: tuple | None = None
    skip: frozenset = frozenset()

    def __post_init__(self):
        if not self.settings:
            raise ValueError("a task needs at least one setting")
        protocols = {(s.dataset, s.data_ref, s.data_dir, s.seed, s.n_folds, s.design)
                     for s in self.settings}
        if len(protocols) > 1:
            raise ValueError("the settings of a task must share the data set, data folder, "
                             f"seed, number of folds and design; got {sorted(map(str, protocols))}")

    @property
    def dataset(self):
        return self.settings[0].dataset

    @property
    def fold_list(self):
        return tuple(range(self.settings[0].n_folds)) if self.folds is None else self.folds

    @property
    def n_samples(self):
        """Cells per setting: one per run and fold of every block (in the paired design, the
        constraint samples drawn; the unpaired design draws one per setting and cell)."""
        return sum(len(block.runs) for block in self.blocks) * len(self.fold_list)

    def runs_of(self, index, b):
        """The runs of block ``b`` that the task computes for setting ``index``."""
        return [run for run in self.blocks[b].runs if (index, b, run) not in self.skip]

    def cells_of(self, index):
        """Cells filled for setting ``index`` (one per run and fold of every block, less the
        skipped)."""
        return (sum(len(self.runs_of(index, b)) for b in range(len(self.blocks)))
                * len(self.fold_list))

    @property
    def n_cells(self):
        """Cells filled by this task (one per setting, run and fold of every block, less the
        skipped)."""
        return sum(self.cells_of(index) for index in range(len(self.settings)))

    def fits_of(self, index):
        """Fits computed for setting ``index`` (one per s for the sparse estimators), the
        selection scores' fits included; a shared fit counts once."""
        setting = self.settings[index]
        selection = sum(setting.selection_fits(run) for b in range(len(self.blocks))
                        for run in self.runs_of(index, b))
        return (((1 if setting.shares_fits else self.cells_of(index))
                 + len(self.fold_list) * selection) * setting.n_sparsity)

    @property
    def n_fits(self):
        """Fits computed by the task (:meth:`fits_of` its settings)."""
        return sum(self.fits_of(index) for index in range(len(self.settings)))


@dataclass
class BlockResult:
    """The records of one block (docs/method/protocol.md §8.2). Arrays are indexed (run, fold,
    s) in the order of ``block.runs``, the task's folds and the s entries of the setting (one
    entry for the non-sparse estimators); ``weights`` has a trailing feature axis. ``status``
    holds the codes of ``pcskm.algorithms._result``; a failed fit has NaN scores, satisfied
    fraction and weights. The selection scores (docs/method/selection.md) are NaN, and
    ``cv_folds_used`` -1, where the setting does not compute them."""

    block: Block
    f_score: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    satisfied: np.ndarray
    status: np.ndarray
    n_iter: np.ndarray
    n_constraints: np.ndarray  # (run, fold)
    weights: np.ndarray
    cv_score: np.ndarray  # mean held-out CVCP F-measure over the folds whose fit succeeded
    cv_folds_used: np.ndarray  # (run, fold) int8: the folds K used; 0: too few groups
    auc_score: np.ndarray  # mean held-out pair AUC over the CV folds with one (selection.md §7)
    auc_se: np.ndarray  # its standard error over those folds
    gap: np.ndarray
    gap_sd: np.ndarray
    fit_error: np.ndarray = None  # (run,) str: a user fit's first error in the run; "": none


@dataclass
class TaskResult:
    """``blocks[i][j]``: the :class:`BlockResult` of setting ``task.settings[i]`` and block
    ``task.blocks[j]``."""

    task: Task
    blocks: list
    seconds: float  # compute time in the worker


@functools.lru_cache(maxsize=64)
def dataset(name, data_dir=None):
    """The data set (a registry name or a spec's ``DataDefinition``), loaded once per
    process."""
    return load(name, data_dir)


@functools.lru_cache(maxsize=8)  # a protocol caches its fold pools (MBs for ionosphere)
def protocol(name, data_dir, seed, n_folds, design="paired"):
    """The data set's protocol (folds, pools and constraint samples), once per process."""
    return Protocol(dataset(name, data_dir), seed=seed, n_folds=n_folds, design=design)


@functools.lru_cache(maxsize=256)
def deterministic_centres(name, data_dir, init):
    """DKM++, ROBIN(D) or Maximin(D) centres of the data set (they depend on X and k only,
    docs/method/initialisations.md §0), computed once per process."""
    data = dataset(name, data_dir)
    rows = DETERMINISTIC_INITS[init](data.X, data.n_clusters)
    centres = data.X[np.asarray(rows)]
    centres.setflags(write=False)
    return centres


def make_estimator(setting, init, random_state=None):
    """The estimator of ``setting`` starting from ``init`` (a centres array or "seeding")."""
    params = dict(setting.params)
    if setting.estimator in USES_SPEC_MAX_ITER:
        params.setdefault("max_iter", setting.max_iter)
    n_clusters = dataset(setting.data_ref, setting.data_dir).n_clusters
    return estimator_class(setting.estimator)(n_clusters=n_clusters, init=init,
                                              random_state=random_state, **params)


_IS_FAILED = np.isin(np.arange(len(FIT_STATUS_NAMES)), list(FIT_FAILED))  # by status code


class _Fit(NamedTuple):
    """One fit, one row per s (one row for the non-sparse estimators): labels (S, n) int64,
    weights (S, p), n_iter (S,) and status codes (S,), both int64; ``error``: why a user
    estimator's fit failed (status ``error``), "" otherwise."""

    labels: np.ndarray
    weights: np.ndarray
    n_iter: np.ndarray
    status: np.ndarray
    error: str = ""


class Fitter:
    """The fits of one setting, on all n points of its data set, through the estimator's
    engine.

    What every fit of the setting shares is validated once, by the estimator's own checks
    (as its ``fit`` does): its parameters, the data set (float64 without NaN or inf, at least
    k distinct rows), the s grid, the engine's options (pass limits, policy, score variant)
    and the DKM++, ROBIN(D) or Maximin(D) centres (computed once per process). A call then
    only resolves Seeding (from the cell's constraints and Seeding key,
    docs/method/initialisations.md §4) and runs the engine: the sparse estimators over the
    whole s grid from that one init (``fit_path``), the others once.
    Seeding depends on the setting only through its fill (in the paired design the data set,
    the cell's constraints and key are the same for every setting of a cell), so the settings
    of a cell that share its draws can share each fill's centres.
    """

    shares_inits = False  # its fits depend on the init (see UserFitter)

    def __init__(self, setting):
        data = dataset(setting.data_ref, setting.data_dir)
        seeded = self.needs_seed = setting.init == SEEDING
        init = SEEDING if seeded else deterministic_centres(
            setting.data_ref, setting.data_dir, setting.init)
        self.estimator = make_estimator(setting, init)
        self.X = self.estimator._checked_input(data.X)
        self.sparsities = (check_sparsity(setting.sparsities, data.n_features,
                                          name="sparsities")
                           if setting.is_sparse else None)
        self.options = self.estimator._engine_options(self.sparsities)
        # a deterministic init reads neither the constraints nor a random state
        self.start = None if seeded else self.estimator._initial_state(self.X, None, None)

    def __call__(self, constraints, seeding_seed=None, seedings=None, cache=None):
        """Fit with the cell's :class:`Constraints` (over the data set's rows) and, for
        Seeding, the cell's Seeding SeedSequence; returns a :class:`_Fit`. A failed fit is
        recorded in its status (no warning). ``seedings``, if given, is a dict shared by the
        fits of one cell: the Seeding centres and seed labels by fill, computed at the first
        fit that needs them (the engines copy them, never write them). ``cache``, if given,
        is the cell's ``FitCache`` (:meth:`fit_from`)."""
        if constraints.n_samples != self.X.shape[0]:
            raise ValueError(f"constraints are over {constraints.n_samples} points but the "
                             f"data set has {self.X.shape[0]}")
        return self.fit_from(constraints,
                             *self.initial_state(constraints, seeding_seed, seedings),
                             cache=cache)

    def initial_state(self, constraints, seeding_seed=None, seedings=None):
        """The cell's initial centres and seed labels: the data set's for a deterministic
        init, else Seeding's from the cell's constraints and key (kept in ``seedings`` by
        fill, see :meth:`__call__`)."""
        if self.start is not None:
            return self.start
        seedings = {} if seedings is None else seedings
        fill = self.estimator._seeding_fill
        if fill not in seedings:
            seedings[fill] = self.estimator._initial_state(self.X, constraints, seeding_seed)
        return seedings[fill]

    def fit_from(self, constraints, centres, seed_labels=None, cache=None):
        """The engine from ``centres`` (seed labels: MPCKM's, from Seeding) with
        ``constraints``: the whole s grid for the sparse estimators; a :class:`_Fit`.
        ``cache``: a ``FitCache`` of ``constraints`` on this data set, which the PCKM and
        PCSKM fits of the cell share (a PCKM fit is the first clustering of the PCSKM path
        from the same centres, and an s path is a function of its first clustering, which
        different inits often reach)."""
        if self.sparsities is not None:
            path = self.estimator._path(self.X, constraints, centres, self.options, cache)
            return _Fit(path.labels, path.weights, path.n_iter, path.status)
        result = self.estimator._engine(self.X, constraints, centres, seed_labels,
                                        self.options, cache)
        return _Fit(result.labels[None], result.weights[None],
                    np.array([result.n_iter], dtype=np.int64),
                    np.array([result.status], dtype=np.int64))


class InvalidFitResult(ValueError):
    """A user estimator's fit returned labels or weights the runner cannot record."""


class UserFitter:
    """The fits of one setting of a user estimator (docs/reference/estimator-contract.md):
    per fit, ``cls(n_clusters=k, **params)`` with ``random_state`` (an int from the cell's
    Seeding key) and ``init`` (the (k, p) centres of the setting's init, computed by the
    built-in code: the data set's DKM++, ROBIN(D) or Maximin(D) centres, or Seeding's from
    the cell's constraints) when its constructor takes them, then ``fit(X, must_link=...,
    cannot_link=...)`` ((m, 2) int64 arrays), or ``fit(X)`` with ``constraints = "ignore"``.
    A class with ``sparsity`` is fitted once per s of the grid (or once through its
    ``fit_path``). A fit that raises, or returns labels that are not one integer in 0.. per
    point with exactly ``n_clusters`` distinct values, has status ``error`` and its message
    (``_Fit.error``); a fault of the machine (out of memory, a failing file system:
    :mod:`pcskm.experiments.faults`) fails the task instead. A class without ``init`` fits
    the same for every init of a cell: ``shares_inits`` tells :func:`evaluate` to fit it
    once per cell."""

    def __init__(self, setting):
        data = dataset(setting.data_ref, setting.data_dir)
        self.contract = estimators.contract(setting.estimator)
        self.params = dict(setting.params)
        self.n_clusters = data.n_clusters
        # the built-in initialisation (Seeding's data-points fill, as LKM's) gives the centres
        self.initial = Fitter(dataclasses.replace(setting, estimator="LKM", params=(),
                                                  constraints="use"))
        self.X = self.initial.X
        self.sparsities = (check_sparsity(setting.sparsities, data.n_features,
                                          name="sparsities")
                           if self.contract.sparse else None)
        self.uses_constraints = setting.constraints == "use"
        self.shares_inits = not self.contract.takes_init
        self.needs_seed = self.contract.takes_random_state or (
            self.contract.takes_init and self.initial.needs_seed)

    def __call__(self, constraints, seeding_seed=None, seedings=None, cache=None):
        """Fit with the cell's :class:`Constraints` and Seeding SeedSequence (``seedings``:
        see :meth:`Fitter.__call__`; ``cache`` is not used); returns a :class:`_Fit`."""
        keywords = {"n_clusters": self.n_clusters, **self.params}
        if self.contract.takes_random_state:
            if seeding_seed is None:
                raise ValueError("a user estimator that takes random_state needs the cell's "
                                 "Seeding key")
            keywords["random_state"] = int(seeding_seed.generate_state(1)[0])
        if self.contract.takes_init:
            centres, _ = self.initial.initial_state(constraints, seeding_seed, seedings)
            keywords["init"] = np.array(centres)  # the user's own copy
        pairs = ({"must_link": np.array(constraints.must_link, dtype=np.int64),
                  "cannot_link": np.array(constraints.cannot_link, dtype=np.int64)}
                 if self.uses_constraints else {})
        if self.sparsities is None:
            rows = [self._fit(keywords, pairs)]
        elif self.contract.fit_path:
            rows = self._fit_path(keywords, pairs)
        else:
            rows = [self._fit({**keywords, "sparsity": float(s)}, pairs)
                    for s in self.sparsities]
        labels, weights, n_iter, errors = zip(*rows, strict=True)
        status = np.array([ERROR if error else 0 for error in errors], dtype=np.int64)
        return _Fit(np.stack(labels), np.stack(weights), np.array(n_iter, dtype=np.int64),
                    status, next((error for error in errors if error), ""))

    def _fit(self, keywords, pairs):
        """One fit: ``(labels, weights, n_iter, error)``."""
        try:
            model = self.contract.cls(**keywords)
            model.fit(np.array(self.X), **pairs)
            return self._row(model.labels_, getattr(model, "weights_", None),
                             getattr(model, "n_iter_", None))
        except Exception as error:  # the user's code: a failed fit (_failed)
            return self._failed(error)

    def _fit_path(self, keywords, pairs):
        """The s grid in one call of ``fit_path``: rows of ``(labels, weights, n_iter,
        error)``."""
        try:
            path = self.contract.cls(**keywords).fit_path(np.array(self.X), self.sparsities,
                                                          **pairs)
            labels = np.asarray(path.labels)
            if labels.ndim != 2 or labels.shape[0] != len(self.sparsities):
                raise InvalidFitResult(f"fit_path returned labels of shape {labels.shape}; "
                                       f"expected ({len(self.sparsities)}, "
                                       f"{self.X.shape[0]}), one row per s")
            weights = getattr(path, "weights", None)
            n_iter = getattr(path, "n_iter", None)
        except Exception as error:  # the user's code: a failed fit (_failed)
            return [self._failed(error)] * len(self.sparsities)
        rows = []
        for i, row in enumerate(labels):
            try:
                rows.append(self._row(row, None if weights is None else weights[i],
                                      None if n_iter is None else n_iter[i]))
            except Exception as error:
                rows.append(self._failed(error))
        return rows

    def _row(self, labels, weights, n_iter):
        """Check a fit's labels (one integer >= 0 per point, ``n_clusters`` distinct values,
        numbered 0..k-1 in order here) and weights (p values, NaN if absent)."""
        n_samples, n_features = self.X.shape
        labels = np.asarray(labels)
        if labels.shape != (n_samples,):
            raise InvalidFitResult(f"labels_ has shape {labels.shape}; expected "
                                   f"({n_samples},), one label per point")
        if not np.issubdtype(labels.dtype, np.integer):
            raise InvalidFitResult(f"labels_ are {labels.dtype}, not integers")
        if labels.min() < 0:
            raise InvalidFitResult("labels_ holds negative labels: every point needs a "
                                   "cluster")
        values, numbered = np.unique(labels, return_inverse=True)
        if len(values) != self.n_clusters:
            raise InvalidFitResult(f"labels_ has {len(values)} distinct clusters; "
                                   f"n_clusters is {self.n_clusters}")
        if weights is None:
            weights = np.full(n_features, np.nan)
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != (n_features,):
            raise InvalidFitResult(f"weights_ has shape {weights.shape}; expected "
                                   f"({n_features},), one weight per feature")
        n_iter = int(n_iter) if n_iter is not None and np.ndim(n_iter) == 0 else -1
        return numbered.astype(np.int64), weights, min(n_iter, np.iinfo(np.int16).max), ""

    def _failed(self, error):
        """The row of a fit that raised ``error``; a fault of the machine
        (:func:`pcskm.experiments.faults.is_environmental`) is raised again, to fail the
        task, not stored as the method's failure."""
        if is_environmental(error):
            raise error
        n_samples, n_features = self.X.shape
        return (np.zeros(n_samples, np.int64), np.full(n_features, np.nan), -1,
                f"{type(error).__name__}: {error}")


def make_fitter(setting):
    """The :class:`Fitter` of a built-in estimator's setting, the :class:`UserFitter` of a
    user estimator's."""
    return UserFitter(setting) if setting.is_user else Fitter(setting)


def fit(setting, constraints=None, seeding_seed=None):
    """One fit of ``setting`` (see :class:`Fitter`); ``constraints`` defaults to none.

    LKM and SKM use the constraints only through Seeding, which builds its centres from
    them; their clustering ignores them.
    """
    if constraints is None:
        n_samples = dataset(setting.data_ref, setting.data_dir).n_samples
        constraints = Constraints.empty(n_samples)
    return make_fitter(setting)(constraints, seeding_seed)


def _empty_block(block, setting, n_folds, n_features):
    shape = (len(block.runs), n_folds, setting.n_sparsity)
    return BlockResult(
        block=block,
        f_score=np.full(shape, np.nan), precision=np.full(shape, np.nan),
        recall=np.full(shape, np.nan), satisfied=np.full(shape, np.nan),
        status=np.zeros(shape, np.int8), n_iter=np.zeros(shape, np.int64),
        n_constraints=np.zeros(shape[:2], np.int64),
        weights=np.full((*shape, n_features), np.nan),
        cv_score=np.full(shape, np.nan), cv_folds_used=np.full(shape[:2], -1, np.int8),
        auc_score=np.full(shape, np.nan), auc_se=np.full(shape, np.nan),
        gap=np.full(shape, np.nan), gap_sd=np.full(shape, np.nan),
        fit_error=np.full(shape[0], "", dtype=object),
    )


@kernel
def _record_fit(r, f, fit_labels, fit_weights, fit_n_iter, fit_status, is_failed, test,
                test_classes, n_classes, pairs, is_must_link, f_score, precision, recall,
                satisfied, status, n_iter, weights):
    """Write the records of one fit into a block's arrays at (run ``r``, fold ``f``)
    (docs/method/protocol.md §8): per row s, the pairwise F-score, precision and recall on
    the fold's test points ``test`` (their classes ``test_classes``, 0..n_classes-1), the
    fraction of the cell's constraints satisfied (NaN for an empty list), the status, the
    iterations and the weights. A failed row (``is_failed[status]``) gets NaN scores and
    satisfied fraction; its weights are NaN already (§8.1)."""
    n_rows = fit_labels.shape[0]
    pred = np.empty((n_rows, test.shape[0]), dtype=np.int64)
    for s in range(n_rows):
        for j in range(test.shape[0]):
            pred[s, j] = fit_labels[s, test[j]]
    scores = np.empty((n_rows, 3))
    if not _f_score_rows(test_classes, n_classes, pred, scores):
        raise ValueError("a fit gave a negative label")
    fractions = (_satisfied_rows(fit_labels, pairs, is_must_link) if pairs.shape[0] > 0
                 else np.full(n_rows, np.nan))
    for s in range(n_rows):
        failed = is_failed[fit_status[s]]
        f_score[r, f, s] = np.nan if failed else scores[s, 0]
        precision[r, f, s] = np.nan if failed else scores[s, 1]
        recall[r, f, s] = np.nan if failed else scores[s, 2]
        satisfied[r, f, s] = np.nan if failed else fractions[s]
        status[r, f, s] = fit_status[s]
        n_iter[r, f, s] = fit_n_iter[s]
        for m in range(fit_weights.shape[1]):
            weights[r, f, s, m] = fit_weights[s, m]


def _record(result, r, f, fitted, test, test_classes, n_classes, constraints):
    """Record ``fitted`` (a :class:`_Fit`) for the cell (r, f) of ``result``."""
    _record_fit(r, f, *fitted[:4], _IS_FAILED, test, test_classes, n_classes, constraints.pairs,
                constraints.is_must_link, result.f_score, result.precision, result.recall,
                result.satisfied, result.status, result.n_iter, result.weights)
    result.n_constraints[r, f] = len(constraints)
    if fitted.error and not result.fit_error[r]:
        result.fit_error[r] = fitted.error


def evaluate(task):
    """Fit and score every cell of ``task``; returns a :class:`TaskResult`. Each (run, fold)
    of a block draws its constraint sample once for the settings that share it: every
    setting in the paired design, each setting alone in the unpaired one (§6)."""
    start = time.perf_counter()
    first = task.settings[0]
    data = dataset(first.data_ref, first.data_dir)
    cv = protocol(first.data_ref, first.data_dir, first.seed, first.n_folds, first.design)
    folds = task.fold_list
    tests = [cv.test_index(fold) for fold in folds]
    test_classes = [data.y[test] for test in tests]
    n_classes = data.n_classes
    fitters = [make_fitter(setting) for setting in task.settings]
    shared = {index: fitters[index](Constraints.empty(data.n_samples))  # its one fit
              for index, setting in enumerate(task.settings) if setting.shares_fits}
    # the key parts of each setting's draws: () for every setting in the paired design
    draws = [cv.draw_key(setting.algorithm, setting.init) for setting in task.settings]
    seeded = {draws[i] for i, fitter in enumerate(fitters) if fitter.needs_seed and i not in shared}
    from .selection_scores import NullDataSets, SelectionScorer  # imports scikit-learn

    null_sets = NullDataSets(fitters[0].X, cv.permutation_seed())
    scorers = [SelectionScorer(setting, fitter, null_sets) if setting.has_scores
               else None for setting, fitter in zip(task.settings, fitters, strict=True)]
    results = [[] for _ in task.settings]
    for b, block in enumerate(task.blocks):
        block_results = [_empty_block(block, setting, len(folds), data.n_features)
                         for setting in task.settings]
        for r, run in enumerate(block.runs):
            for f, (fold, test) in enumerate(zip(folds, tests, strict=True)):
                samples = {}  # draw key -> the cell's constraints, Seeding key and Seeding
                # fills, and what its selection scores share
                reused = {}  # (algorithm, draw key) -> the cell's fit of a class without init
                for index, fitter in enumerate(fitters):
                    if (index, b, run) in task.skip:
                        continue  # a done cell, kept in the store
                    if draws[index] not in samples:
                        samples[draws[index]] = _sample(cv, data.n_samples, block, run, fold,
                                                        task.settings[index],
                                                        draws[index] in seeded)
                    constraints, seeding_seed, seedings, cache, scores = samples[draws[index]]
                    key = ((task.settings[index].algorithm, draws[index])
                           if fitter.shares_inits else None)
                    if index in shared:
                        fitted = shared[index]
                    elif key in reused:
                        fitted = reused[key]
                    else:
                        fitted = fitter(constraints, seeding_seed, seedings, cache)
                        if key is not None:
                            reused[key] = fitted
                    _record(block_results[index], r, f, fitted, test, test_classes[f],
                            n_classes, constraints)
                    if scorers[index] is not None:
                        centres, _ = fitter.initial_state(constraints, seeding_seed, seedings)
                        scorers[index].record(block_results[index], r, run, f, fitted,
                                              centres, scores, seeding_seed)
        for per_setting, result in zip(results, block_results, strict=True):
            per_setting.append(result)
    return TaskResult(task=task, blocks=results, seconds=time.perf_counter() - start)


def _sample(cv, n_samples, block, run, fold, setting, seeded):
    """The draws of cell (``block``, ``run``, ``fold``) for ``setting`` and every setting that
    shares them: its :class:`Constraints`, its Seeding SeedSequence (None unless ``seeded``;
    a SeedSequence is only read by the generators made from it), an empty dict for the
    Seeding fills computed from them (:class:`Fitter`), an empty ``FitCache`` for their
    PCKM clusterings and s paths, and the :class:`CellScores` of their selection scores
    (its CV folds drawn from the cell's key, when first needed)."""
    from .selection_scores import CellScores  # imports scikit-learn: not at start-up

    cell = (block.kind, block.percent, run, fold, setting.algorithm, setting.init)
    must_link, cannot_link = cv.constraints(*cell)
    constraints = Constraints.from_pairs(must_link, cannot_link, n_samples=n_samples)
    return (constraints, cv.seeding_seed(*cell) if seeded else None, {},
            FitCache(constraints), CellScores(constraints, lambda: cv.cv_fold_seed(*cell)))

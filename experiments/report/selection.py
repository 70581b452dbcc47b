"""Best-s selections (docs/method/protocol.md §9, docs/method/selection.md) and the aggregates
of one selection.

Every selection treats every algorithm alike on its applicable s entries: a non-sparse
algorithm has one entry (s = NaN), so its "selection" is its only fit. Each is one generic
rule, :func:`best_index`: the s with the largest score along ``sparsity``, the ties broken by
a rule of ``best_sparsity_index`` (docs/method/selection.md §1), then F at that s in every
(run, fold) cell. They differ by their score and its unit:

* ``paper`` (§9.1): per (algorithm, init, kind, percent), Fbar = nanmean of F over the
  computed (run, fold) cells; ties -> smallest s. It reads the test labels: optimistic.
* ``honest`` (§9.2) and ``satisfied-median``, ``satisfied-largest``: per (algorithm, init,
  kind, percent, run, fold), the fraction of the cell's sampled constraints its labels
  satisfy (``satisfied``; failed fits excluded), ties -> the smallest, the lower median or
  the largest tied s (selection.md §4). SKM is selected the same way although it did not use
  the constraints.
* ``cv``: per cell, the constraint cross-validation score (``cv_score``, selection.md §2);
  ties -> the largest gap among the tied s, then the lower median (selection.md §2.5, the
  default of ``constraint_cv_scores`` given the gap); the lower median alone in a cube
  without the gap. ``cv-smallest``, ``cv-median`` and ``cv-largest``: the same score with
  ties -> the smallest, the lower median or the largest tied s, to show how much cv owes to
  its tie rule.
* ``auc``: per cell, the held-out pair AUC of the weighted distance (``auc_score``, its
  standard error ``auc_se``; selection.md §7) with the one-standard-error choice toward the
  unthresholded s (§7.2). A cell without an AUC at any s (every cell of kinds must-link and
  cannot-link, whose constraints are of one kind) takes ``cv``'s choice. A sensitivity
  selection: primary only where a spec's ``[preregistration]`` rule names it.
* ``gap``: per cell, the largest gap statistic (``gap``, selection.md §3.3, sparcl's
  ``bestw``; ties -> smallest s); ``gap-1sd``: the smallest s with gap(s) >= max gap -
  gap_sd(s) (its score is 1 for those s, 0 for the others, ties -> smallest s).
* ``unthresholded``: per cell, the path's first s at which no weight is zero, else the
  largest s whose fit did not fail (selection.md §6): the sparse algorithms with sparsity
  turned off, a reference arm that tells what the constraints and weighting gain without
  thresholding. It needs the per-s weights (``n_zero_weights`` of :mod:`.fits`, from the
  cube's ``weights_per_s``); a store made before them does not have it.
* ``oracle``: per cell, the s with the best test F: an upper bound, not a selection a user
  can make.
* ``fixed-loo``: one s per algorithm for a whole data set, chosen on the other data sets
  (:mod:`.fixed_s`); it needs every data set, so :mod:`.aggregate` adds it after the others.

``cv``, ``auc``, ``gap`` and ``gap-1sd`` need the scores a spec's ``cv_folds`` /
``gap_permutations`` store (docs/reference/cube-schema.md, Selection scores): a cube without
them does not have these selections (``auc`` also needs a store made or extended since the
pair AUC exists). A sparse algorithm whose cells carry no such score (outside the spec's
``cv_algorithms``) is not computed under that selection (counted as missing, not failed).
A store whose spec limits the CV scores to its first runs (``cv_runs``) has the ``cv`` and
``auc`` selections in those runs only, for every algorithm.

Aggregates (§9): Fbar = nanmean over (run, fold) of F at the selected s; the standard
deviation is over runs of the per-run mean over folds; every aggregate carries its counts of
computed, expected and failed cells. For a family of subsets (digits), every step runs per
subset and the aggregates are then averaged over the subsets.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import xarray as xr

from pcskm.algorithms._selection_kernels import best_index_rows
from pcskm.algorithms.selection import TIES, one_standard_error_index
from pcskm.runner.store import AUC_SCORES, CV_SCORES, GAP_SCORES

from .fits import CELL_DIMS, FIT_DIMS, quiet

CELL = ("run", "fold")
SETTING_DIMS = CELL_DIMS[:-len(CELL)]  # algorithm, init, kind, percent
F_SCORE = "f_score"


@dataclass(frozen=True)
class Selection:
    """A best-s selection: its ``name`` (the CSV's ``selection`` column), ``title``, the fit
    variables it ``needs`` beyond f_score and satisfied, the score bits its algorithms must
    carry (``bit``, of ``runner.store.CV_SCORES``, ``AUC_SCORES`` and ``GAP_SCORES``; 0:
    none), ``choose(fits)``: the positions of its choice along the s grid of the sparse
    algorithms' fits (:class:`SparseFits`; None for ``fixed-loo``, chosen across data sets),
    whether it gets its own performance grids (``main``) and whether it chooses per (run,
    fold) cell (``per_cell``) or once per setting (algorithm, init, kind, percent)."""

    name: str
    title: str
    choose: Callable | None
    needs: tuple = ()
    bit: int = 0
    main: bool = False
    per_cell: bool = True

    @property
    def variable(self):
        """The prefix of its variables in the selections store (``-`` -> ``_``)."""
        return self.name.replace("-", "_")


class SparseFits:
    """The fits of the sparse algorithms of one data set as NumPy arrays (dims
    :data:`.fits.FIT_DIMS`, the s grid last), with what every rule reads: ``usable``, the
    fits a per-cell score may choose (applicable, computed, not failed), and ``f_score``, F
    of the applicable computed fits (NaN elsewhere). The rules pass over these arrays in
    compiled code (``best_index_rows``), without an array of masked scores per rule."""

    def __init__(self, fits):
        self.fits = fits
        self.sparsity = fits.sparsity.values
        fitted = fits.applies & fits.computed
        self.usable = self._full(fitted & ~fits.failed)
        self.f_score = np.where(self._full(fitted), self[F_SCORE], np.nan)

    def _full(self, mask):
        return np.ascontiguousarray(mask.transpose(*FIT_DIMS).values)

    def __getitem__(self, name):
        """Variable ``name`` of the fits (float64 or int16, dims FIT_DIMS)."""
        return np.ascontiguousarray(self.fits[name].transpose(*FIT_DIMS).values)

    def __contains__(self, name):
        return name in self.fits


def _rows(array):
    return array.reshape(-1, array.shape[-1])


def best_index(fits, score, ties="smallest", tie_scores=None, usable=True):
    """Position along the s grid (the last axis) of the largest ``score`` (NaN: no score) of
    the ``usable`` fits of ``fits`` (:class:`SparseFits`; False: every entry of ``score``),
    ties broken by the largest ``tie_scores`` (None: none), then by ``ties``
    (``best_sparsity_index``); -1 where nothing has a score."""
    index = np.empty(score.shape[:-1], np.int64)
    best_index_rows(_rows(score), _rows(fits.usable) if usable else np.empty((0, 0), bool),
                    np.empty((0, 0)) if tie_scores is None else _rows(tie_scores),
                    TIES.index(ties), index.reshape(-1))
    return index


def paper_selection(fits):
    """§9.1: the s with the largest Fbar per (algorithm, init, kind, percent), ties ->
    smallest s."""
    with quiet():
        fbar = fits.fits.f_score.where(fits.fits.applies & fits.fits.computed).mean(CELL)
    return best_index(fits, np.ascontiguousarray(fbar.transpose(*SETTING_DIMS, "sparsity")
                                                  .values), usable=False)


def satisfaction_selection(ties):
    """§9.2 (``ties="smallest"``) and its tie variants (docs/method/selection.md §4)."""
    return lambda fits: best_index(fits, fits["satisfied"], ties)


def cv_index(fits):
    """The position of ``cv``'s choice (docs/method/selection.md §2.5): the largest cv
    score, ties -> the largest gap among the tied s, then the lower median; the lower median
    alone without the gap."""
    return best_index(fits, fits["cv_score"], "median", fits["gap"] if "gap" in fits else None)


def auc_selection(fits):
    """The held-out pair AUC with the one-standard-error choice toward the unthresholded s
    (docs/method/selection.md §7.2, ``one_standard_error_index``); a cell without an AUC at
    any s (kinds must-link and cannot-link: one kind of pair) takes ``cv``'s choice
    (:func:`cv_index`)."""
    score = np.where(fits.usable, fits["auc_score"], np.nan)
    index = one_standard_error_index(score, fits["auc_se"])
    return np.where((~np.isnan(score)).any(axis=-1), index, cv_index(fits))


def cv_tie_selection(ties):
    """The cv score with ties -> ``ties`` alone: the tie-rule sensitivity of cv
    (docs/method/selection.md §2.5)."""
    return lambda fits: best_index(fits, fits["cv_score"], ties)


def gap_selection(fits):
    """The largest gap (docs/method/selection.md §3.3), ties -> smallest s."""
    return best_index(fits, fits["gap"])


def gap_one_sd_selection(fits):
    """The smallest s with gap(s) >= max gap - gap_sd(s) (docs/method/selection.md §3.3); an
    s with NaN gap_sd qualifies only with the largest gap."""
    gap = np.where(fits.usable, fits["gap"], np.nan)
    top = np.fmax.reduce(gap, axis=-1, keepdims=True)  # NaN where every gap is
    return _first((gap >= top - fits["gap_sd"]) | (gap == top))  # False where gap is NaN


def unthresholded_selection(fits):
    """The smallest s at which no weight is zero (``n_zero_weights``), else the largest s
    whose fit did not fail (docs/method/selection.md §6)."""
    usable = fits.usable
    largest = usable.shape[-1] - 1 - usable[..., ::-1].argmax(axis=-1)  # the grid ascends
    return _first((fits["n_zero_weights"] == 0) & usable,
                  np.where(usable.any(axis=-1), largest, -1))


def _first(mask, otherwise=-1):
    """Position of the first True of ``mask`` along the s grid, ``otherwise`` where none."""
    return np.where(mask.any(axis=-1), mask.argmax(axis=-1), otherwise)


def oracle_selection(fits):
    """The best test F per cell: an upper bound on any selection of s per cell."""
    return best_index(fits, fits[F_SCORE])


REGISTRY = (
    Selection("paper", "paper-style best s (largest mean test F; optimistic)",
              paper_selection, main=True, per_cell=False),
    Selection("honest", "honest best s (most training constraints satisfied, per run and "
              "fold; ties -> smallest s)", satisfaction_selection("smallest"), main=True),
    Selection("satisfied-median", "most training constraints satisfied, ties -> median tied s",
              satisfaction_selection("median")),
    Selection("satisfied-largest", "most training constraints satisfied, ties -> largest s",
              satisfaction_selection("largest")),
    Selection("cv", "constraint cross-validation (largest held-out CVCP F per run and fold; "
              "ties -> largest gap, then median tied s)", cv_index, needs=("cv_score",),
              bit=CV_SCORES, main=True),
    Selection("cv-smallest", "constraint cross-validation, ties -> smallest s",
              cv_tie_selection("smallest"), needs=("cv_score",), bit=CV_SCORES),
    Selection("cv-median", "constraint cross-validation, ties -> median tied s",
              cv_tie_selection("median"), needs=("cv_score",), bit=CV_SCORES),
    Selection("cv-largest", "constraint cross-validation, ties -> largest s",
              cv_tie_selection("largest"), needs=("cv_score",), bit=CV_SCORES),
    Selection("auc", "held-out pair AUC (largest s within one standard error of the best "
              "mean AUC per run and fold; cells without an AUC, kinds must-link and "
              "cannot-link: cv's choice)", auc_selection,
              needs=("cv_score", "auc_score", "auc_se"), bit=CV_SCORES | AUC_SCORES),
    Selection("gap", "gap statistic (largest gap per run and fold; ties -> smallest s)",
              gap_selection, needs=("gap",), bit=GAP_SCORES, main=True),
    Selection("gap-1sd", "gap statistic, one-SD rule (smallest s within one SD of the "
              "largest gap)", gap_one_sd_selection, needs=("gap", "gap_sd"), bit=GAP_SCORES),
    Selection("fixed-loo", "fixed s per algorithm, chosen leave-one-data-set-out (mean F of "
              "the other data sets at the same s / sqrt(p))", None, main=True),
    Selection("unthresholded", "unthresholded reference (the path's first s with no zero "
              "weight per run and fold, else the largest s; sparsity off)",
              unthresholded_selection, needs=("n_zero_weights",), main=True),
    Selection("oracle", "best test F per run and fold (oracle: an upper bound, not a "
              "selection)", oracle_selection, main=True),
)
BY_NAME = {s.name: s for s in REGISTRY}
ORDER = tuple(BY_NAME)
# the selections every cube has (they need only f_score and satisfied)
SELECTIONS = tuple(s.name for s in REGISTRY if not s.needs)
SELECTION_TITLES = {s.name: s.title for s in REGISTRY}
FIXED = "fixed-loo"


def covers(fits, bit):
    """Per algorithm and run: its cells carry the score kinds ``bit`` (every algorithm for 0;
    a non-sparse algorithm always: its only fit needs no score). CV scores (and the AUC)
    only in the store's ``cv_runs`` (``cv_run``), and there for every algorithm: a selection
    is compared on the same cells for all."""
    carried = ~fits.sparse | ((fits.score_bits & bit) == bit)
    return carried & fits.cv_run if bit & CV_SCORES else carried


def available(variables):
    """The names of the selections whose variables are all in ``variables`` (a cube group's
    or every group's), in :data:`ORDER`."""
    return tuple(s.name for s in REGISTRY if set(s.needs) <= set(variables))


def select(fits, names=None):
    """The per-data-set selections ``names`` (default: every one the fits have, but
    ``fixed-loo``) of one data set: a Dataset with ``<variable>_s`` and ``<variable>_f`` per
    selection, ``<variable>_covered`` (algorithm: whose cells carry its score) for those
    that need scores, ``computed`` and ``expected`` (what the selections store holds).

    The rules run on the sparse algorithms only (:class:`SparseFits`): every rule chooses the
    only fit (at s = NaN) of the others (:func:`_only_fits`)."""
    names = available(fits.data_vars) if names is None else names
    out = {"computed": fits.computed, "expected": fits.expected}
    sparse = fits.sparse.values
    scored = SparseFits(fits.isel(algorithm=sparse)) if sparse.any() else None
    only = _only_fits(fits)
    for name in names:
        rule = BY_NAME[name]
        if rule.choose is None:
            continue
        index = rule.choose(scored) if scored is not None else None
        dims = CELL_DIMS if rule.per_cell else SETTING_DIMS
        out[f"{rule.variable}_s"], out[f"{rule.variable}_f"] = _chosen(
            fits, scored, index, only, dims)
        if rule.bit:
            out[f"{rule.variable}_covered"] = covers(fits, rule.bit)
    return xr.Dataset(out)


def _only_fits(fits):
    """F of the only fit (at s = NaN) of each algorithm of ``fits`` that is not sparse, per
    cell (dims CELL_DIMS): what every rule chooses for it."""
    one = fits[["f_score", "applies", "computed"]].isel(
        algorithm=~fits.sparse.values,
        sparsity=int(np.flatnonzero(np.isnan(fits.sparsity.values))[0]), drop=True)
    return one.f_score.where(one.applies & one.computed).transpose(*CELL_DIMS).values


def _chosen(fits, scored, index, only, dims):
    """``s`` (dims ``dims``, those of ``index``) and ``f_score`` (dims CELL_DIMS) at the
    positions ``index`` along the s grid of the sparse algorithms' fits ``scored``
    (:class:`SparseFits`; -1: none, NaN), and the others' only fits ``only``."""
    shape = fits.computed.transpose(*CELL_DIMS).shape
    sparse = fits.sparse.values
    s = np.full(shape[:len(dims)], np.nan)
    f = np.empty(shape)
    f[~sparse] = only
    if scored is not None:
        s[sparse] = np.where(index >= 0, scored.sparsity[index.clip(min=0)], np.nan)
        per_cell = np.broadcast_to(index.reshape(index.shape + (1,) * (len(shape) - len(dims))),
                                   scored.f_score.shape[:-1])
        chosen = np.take_along_axis(scored.f_score, per_cell.clip(min=0)[..., None], axis=-1)
        f[sparse] = np.where(per_cell >= 0, chosen[..., 0], np.nan)
    coords = {dim: fits[dim] for dim in CELL_DIMS}
    return (xr.DataArray(s, coords={d: coords[d] for d in dims}, dims=dims),
            xr.DataArray(f, coords=coords, dims=CELL_DIMS, attrs=fits.f_score.attrs))


def chosen_entries(s, sparsity, sparse):
    """Positions along ``sparsity`` of the chosen ``s`` (any dims with ``algorithm``): the
    matching grid entry for a sparse algorithm (-1: none chosen), the no-s entry 0 for the
    others."""
    grid = sparsity.values
    positions = np.flatnonzero(~np.isnan(grid))  # the s of the grid, ascending (fit_table)
    entries = np.full(s.shape, -1, np.int64)
    if positions.size:
        nearest = np.searchsorted(grid[positions], s.values).clip(max=positions.size - 1)
        entries = np.where(grid[positions][nearest] == s.values, positions[nearest], entries)
    return xr.DataArray(entries, coords=s.coords, dims=s.dims).where(sparse, 0)


def selected_names(selected):
    """The selections in a :func:`select` Dataset, in :data:`ORDER`."""
    return tuple(s.name for s in REGISTRY if f"{s.variable}_f" in selected)


def summarise(f_score, computed, expected):
    """Aggregates over (run, fold) of F at the selected s: ``f_mean`` (nanmean, §9),
    ``run_mean`` (mean over folds per run), ``n_cells`` (computed), ``n_expected`` and
    ``n_failed`` (computed but F = NaN)."""
    f = f_score.where(computed)
    with quiet():
        return xr.Dataset({
            "f_mean": f.mean(CELL),
            "run_mean": f.mean("fold"),
            "n_cells": computed.sum(CELL),
            "n_expected": expected.sum(CELL),
            "n_failed": (computed & f.isnull()).sum(CELL),
        })


def by_selection(selected, value="f"):
    """``(values, computed, expected)``: the ``<selection>_<value>`` variables of every
    selection of ``selected`` (:func:`select`; ``value``: ``f``, F at the selected s, or ``s``)
    stacked along a first dim ``selection``, the cell dims after it, and the masks of the
    cells computed and expected under each; a cell not covered by a selection's score (by the
    store's design: an algorithm without the score, a run after ``cv_runs``) is neither
    computed nor expected under it."""
    names = selected_names(selected)
    dim = xr.DataArray(list(names), dims="selection", name="selection")
    variables = [BY_NAME[name].variable for name in names]
    every = xr.ones_like(selected.algorithm, dtype=bool)
    covered = xr.concat([selected.get(f"{variable}_covered", every) for variable in variables],
                        dim=dim)
    values = xr.concat([selected[f"{variable}_{value}"] for variable in variables], dim=dim)
    return (values.transpose("selection", *selected.computed.dims),
            (selected.computed & covered).transpose("selection", ...),
            (selected.expected & covered).transpose("selection", ...))


def summaries(selected):
    """``summarise`` for every selection of ``selected`` (:func:`select`), along a
    ``selection`` dim (:func:`by_selection`)."""
    return summarise(*by_selection(selected))


def per_s_summary(fits):
    """:func:`summarise` of F at every s (dim ``sparsity`` kept) with the masks ``sparse``
    and ``applies``: what ``fixed-loo`` picks from once its s is known (:mod:`.fixed_s`)."""
    out = summarise(fits.f_score.where(fits.applies), fits.computed, fits.expected)
    return out.assign(sparse=fits.sparse, applies=fits.applies)


COUNTS = ("n_cells", "n_expected", "n_failed")


def combine(per_member):
    """Aggregates of a family from its members' ``summaries`` (a list): means over the
    subsets (docs/method/protocol.md §9, digits), counts summed, ``f_std`` over runs of the
    subset-averaged run means, ``n_subsets`` with a value, and ``complete`` (every expected
    cell of every member computed). The members are the family's groups in the cube, which
    holds every data set of its spec: a spec that names some of a family's subsets (the
    extended spec's one digits subset) expects those, and its family is complete when they
    are computed (docs/method/protocol.md §9, digits)."""
    stacked = xr.concat(per_member, dim="subset", join="outer",
                        fill_value={**{name: 0 for name in COUNTS},
                                    "f_mean": np.nan, "run_mean": np.nan})
    with quiet():
        run_mean = stacked.run_mean.mean("subset")
        out = xr.Dataset({
            "f_mean": stacked.f_mean.mean("subset"),
            "f_std": run_mean.std("run", ddof=1),
            "n_subsets": stacked.f_mean.notnull().sum("subset"),
            **{name: stacked[name].sum("subset") for name in COUNTS},
        })
    out["complete"] = (out.n_cells == out.n_expected) & (out.n_expected > 0)
    return out

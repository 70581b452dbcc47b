"""Where a cell is written (docs/guide/hpc.md, How the workers write): the worker that
computed a task writes the task's chunks whole (:func:`write_task`), then returns a
:class:`TaskReceipt`; the client marks done the blocks of the receipts it has received
(:class:`DoneMarks`), every ``flush_seconds`` and when the run ends. The worker writes into
what :meth:`.backends.folder.Folder.for_workers` gives, under the run's token (:mod:`.fencing`):
the run's staging folder beside a folder store, or on object storage a fork of the run's
Icechunk session, handed back in the receipt; the client moves the staged files into the
folder (merges the forks) before it marks their blocks done (and commits both at once).

The cube's per-cell variables are cut into one chunk per (kind, percent) (schema version 2,
:data:`pcskm.runner.store.schema.CHUNKED_BY`), holding every algorithm, init, run, fold and
s, and the planner gives each chunk a run computes to one task (:mod:`pcskm.runner.tasks`):
no two tasks of a run write one chunk, so a worker writes its chunks without reading or
locking anything but the chunk itself. Stores of schema version 1 (one chunk per
(algorithm, init, kind), shared between tasks) are not written: ``pcskm run`` refuses them
before computing anything.

A receipt reaches the client only after its worker has written every chunk of the task,
and the client writes the ``done`` markers of a block only after it has the receipt; Zarr
replaces each chunk file atomically, and a repository's commit holds the merged chunks and
their markers together. So a kill of the client, of a worker or of the
scheduler at any moment leaves a readable store whose every cell marked done is intact: a
worker killed while writing leaves staged files (or a fork) that no receipt names, never
published; a client killed outright loses at most the last ``flush_seconds`` of markers; a
task of a killed client that ends after the next run has taken the store publishes nothing
(:mod:`.fencing`).
"""

import time
from dataclasses import dataclass

import numpy as np

from pcskm.algorithms._result import FIT_FAILED

from .places import by_place, recording
from .schema import (
    AUC_SCORES,
    CHUNKED_BY,
    CV_SCORES,
    FIT_DIMS,
    FIT_STATUS_CODES,
    GAP_SCORES,
    NOT_APPLICABLE,
    SCORE_VARIABLES,
    WEIGHTS_PER_S,
    block_chunk,
    chunk_region,
    in_chunk,
    writable_arrays,
    write_regions,
)

FLUSH_SECONDS = 60.0
_FILLS = {"f_score": np.nan, "precision": np.nan, "recall": np.nan, "satisfied": np.nan,
          "status": NOT_APPLICABLE, "n_iter": -1}


def mean_weights(weights, failed):
    """Mean over the s axis (-2) of the weights of the fits that did not fail (NaN if all
    failed); ``weights`` (..., S, p), ``failed`` (..., S)."""
    ok = ~failed
    count = ok.sum(axis=-1)[..., None]
    total = np.where(ok[..., None], weights, 0.0).sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _spread(values, sparse, n_sparsity, fill, axis=-1):
    """Values with S entries along ``axis`` -> the cube's sparsity entries there (the NaN
    entry, then the grid); the entries a fit does not have get ``fill`` (not_applicable for
    the status)."""
    shape = list(values.shape)
    shape[axis] = n_sparsity
    out = np.full(shape, fill, dtype=values.dtype)
    entries = [slice(None)] * values.ndim
    entries[axis] = slice(1, None) if sparse else slice(0, 1)
    out[tuple(entries)] = values
    return out


def block_records(result, setting, n_sparsity, scores=(), weights_per_s=False):
    """The cube's records of one :class:`pcskm.experiments.cells.BlockResult`: ``{variable:
    (run, fold, sparsity) array}`` (the status as the cube's code, ``FIT_STATUS_CODES``), the
    (run, fold, feature) weights: the fit's, or for the sparse estimators their mean over
    the s values whose fit did not fail, with ``weights_per_s`` the (run, fold, sparsity,
    feature) weights of every fit, and the selection-score variables ``scores`` (the
    store's): per s, or (run, fold) for cv_folds_used."""
    sparse = setting.is_sparse
    records = {name: _spread(FIT_STATUS_CODES[result.status] if name == "status"
                             else getattr(result, name), sparse, n_sparsity, fill)
               for name, fill in _FILLS.items()}
    records["weights"] = (mean_weights(result.weights, np.isin(result.status, list(FIT_FAILED)))
                          if sparse else result.weights[..., 0, :])
    if weights_per_s:
        records[WEIGHTS_PER_S] = _spread(result.weights, sparse, n_sparsity, np.nan, axis=-2)
    for name in scores:
        _, dims, _, fill, _ = SCORE_VARIABLES[name]
        values = getattr(result, name)
        records[name] = _spread(values, sparse, n_sparsity, fill) if dims == FIT_DIMS else values
    return records


def carried_scores(setting, scores):
    """The selection scores (``scored`` bits) that the cells of ``setting`` carry in a group
    whose score variables are ``scores`` (:func:`score_names`): the pair AUC with the CV
    scores where the group has its variables."""
    auc = AUC_SCORES if "auc_score" in scores else 0
    return ((CV_SCORES | auc if setting.cv_folds else 0)
            | (GAP_SCORES if setting.gap_permutations else 0))


def score_names(group):
    """The selection-score variables of a group of the store (its arrays)."""
    return tuple(name for name in SCORE_VARIABLES if name in group)


def block_names(group):
    """The group's per-block variables a task fills besides the fit records: the user
    estimators' ``fit_error``, where the store has it."""
    return ("fit_error",) if "fit_error" in group else ()


def optional_names(group):
    """The group's fit variables that a store made before them lacks: ``weights_per_s``."""
    return (WEIGHTS_PER_S,) if WEIGHTS_PER_S in group else ()


def chunks_of(task, cube):
    """The chunks ``task`` writes to: (data set, place of the chunk along the block dims,
    :func:`pcskm.runner.store.schema.block_chunk`)."""
    version = cube.layout.schema_version
    return {(task.dataset, *block_chunk(version, cube.block_index(
        task.dataset, s.algorithm, s.init, block.kind, block.percent)))
        for s in task.settings for block in task.blocks}


def chunk_variables(group):
    """Every per-cell variable of a group that a task writes, chunk by chunk (the constraint
    counts aside)."""
    return (*_FILLS, "weights", *optional_names(group), *score_names(group),
            *block_names(group))


@dataclass(frozen=True)
class TaskTarget:
    """Where a task's results go in its data set's group, from the client's open store (the
    worker reads nothing else): ``places[index][b]``, the positions (algorithm, init, kind,
    percent) of block ``b`` of setting ``index``; ``keep[b]``, whether the chunk of block
    ``b`` holds done cells, whose stored values the task keeps (it reads the chunk before
    writing it); ``version``, the store's schema version."""

    places: tuple
    keep: tuple
    version: int


def task_target(cube, task):
    """The :class:`TaskTarget` of ``task`` in ``cube`` (an open
    :class:`pcskm.runner.store.views.Cube`, whose done markers say which chunks hold done
    cells). A task writes whole chunks only where each chunk holds one (kind, percent):
    schema version 2 and later."""
    version, name = cube.layout.schema_version, task.dataset
    if CHUNKED_BY[version] != ("kind", "percent"):
        raise ValueError(f"a store of schema version {version} is not written by tasks")
    places = tuple(tuple(cube.block_index(name, s.algorithm, s.init, block.kind, block.percent)
                         for block in task.blocks) for s in task.settings)
    keep = tuple(bool(cube.done[name][chunk_region(version, block_chunk(version, place))].any())
                 for place in places[0])
    return TaskTarget(places=places, keep=keep, version=version)


@dataclass(frozen=True)
class TaskReceipt:
    """What a worker returns once it has written a task's chunks: the ``regions`` of the
    blocks it completed, as :meth:`pcskm.runner.store.views.Cube.mark_done` takes them, the
    task's cells, its compute seconds and the seconds its writing took; ``digests``, the
    digests of the chunks it wrote, ``{(kind, percent): {array name: digest}}``
    (:mod:`.places`), which the client records before marking the blocks done; ``written``,
    what the client merges before marking them done (a repository's fork; None for a
    folder); ``n_failed_fits``, the fits it wrote with a failed status."""

    dataset: str
    regions: tuple
    n_cells: int
    seconds: float
    write_seconds: float
    digests: dict = None
    written: object = None
    n_failed_fits: int = 0


def _chunk(array, region, stored):
    """The chunk of ``array`` at ``region``: as stored, or (``stored`` False) its fill
    values."""
    if stored:
        return array[region]
    shape = tuple(len(range(*r.indices(n))) for r, n in
                  zip(region, array.shape, strict=False)) + array.shape[len(region):]
    return np.full(shape, array.fill_value, array.dtype)


def write_task(group, result, target):
    """Write every chunk of ``result`` (a :class:`pcskm.experiments.cells.TaskResult`) whole
    into ``group``, its data set's Zarr group, opened to write, at ``target`` (a
    :class:`TaskTarget`), then the chunks of its constraint counts; returns the
    :class:`TaskReceipt`. A chunk starts from the stored values where it holds done cells
    (``target.keep``) and from the fill values otherwise, but for the status, read as
    stored (the ``not_applicable`` entries of the (init, kind) pairs the spec does not run);
    the cells in ``task.skip`` keep their stored values. The digest of every chunk written is
    taken from the bytes handed to the store (:func:`.places.recording`)."""
    start = time.perf_counter()
    task, version = result.task, target.version
    if len(task.fold_list) != group["fold"].shape[0]:
        raise ValueError(f"a task writes every fold; this one has folds {task.fold_list}")
    group, recorder = recording(group)
    arrays = writable_arrays(group)  # every array's metadata in one pass
    recorder.watch(arrays)
    names = chunk_variables(arrays)
    n_sparsity = arrays["sparsity"].shape[0]
    scores, per_s = score_names(arrays), WEIGHTS_PER_S in arrays
    regions, n_failed = [], 0
    for b, block in enumerate(task.blocks):
        chunk = block_chunk(version, target.places[0][b])
        region, keep = chunk_region(version, chunk), target.keep[b]
        values = {name: _chunk(arrays[name], region, keep or name == "status")
                  for name in names}
        counts_region = region[2:4]  # n_constraints: (kind, percent, run, fold)
        counts = _chunk(arrays["n_constraints"], counts_region, keep)
        for index, setting in enumerate(task.settings):
            rows = [r for r, run in enumerate(block.runs) if (index, b, run) not in task.skip]
            if not rows:
                continue
            place = target.places[index][b]
            runs = [block.runs[r] for r in rows]  # the skipped runs keep their values
            where = (*in_chunk(version, place), runs)
            block_result = result.blocks[index][b]
            for name, records in block_records(block_result, setting, n_sparsity, scores,
                                               per_s).items():
                values[name][where] = records[rows]
            if "fit_error" in values:
                values["fit_error"][where] = block_result.fit_error[rows]
            counts[0, 0, runs] = block_result.n_constraints[rows]
            n_failed += int(np.isin(block_result.status[rows], list(FIT_FAILED)).sum())
            a, i, k, p = place
            regions.append((a, i, [k], [p], runs, carried_scores(setting, scores)))
        write_regions([*((arrays[name], region, chunk_values)
                        for name, chunk_values in values.items()),
                      (arrays["n_constraints"], counts_region, counts)])
    return TaskReceipt(dataset=task.dataset, regions=tuple(regions), n_cells=task.n_cells,
                       seconds=result.seconds, write_seconds=time.perf_counter() - start,
                       digests=by_place(arrays, recorder.digests), n_failed_fits=n_failed)


class DoneMarks:
    """The client's side: the regions of the receipts it has received, marked done in
    ``cube`` (:meth:`pcskm.runner.store.views.Cube.mark_done`) by :meth:`write`, every
    ``flush_seconds`` (:meth:`take` says when) and by the runner however the run ends."""

    def __init__(self, cube, *, flush_seconds=FLUSH_SECONDS):
        self.cube, self.flush_seconds = cube, flush_seconds
        self.pending = {}  # data set -> regions received since the last write
        self.digests = {}  # data set -> {(kind, percent): {array: digest}} since then
        self.written = []  # the receipts' forks (a repository), merged at the next write
        self.last_write = time.monotonic()

    def take(self, receipt):
        """Hold the regions of ``receipt``; write every region held when ``flush_seconds``
        have passed since the last write."""
        self.pending.setdefault(receipt.dataset, []).extend(receipt.regions)
        for place, entry in (receipt.digests or {}).items():
            self.digests.setdefault(receipt.dataset, {}).setdefault(place, {}).update(entry)
        if receipt.written is not None:
            self.written.append(receipt.written)
        if time.monotonic() - self.last_write >= self.flush_seconds:
            self.write()

    def write(self):
        """Publish the writes held into the store (:meth:`.backends.folder.Folder.absorb`:
        the staged files moved in; :meth:`.backends.icechunk.Repository.absorb`: the forks
        merged), record the digests of their chunks and mark done every region held (the
        chunks they vouch for are written: each came with its receipt), and commit all at once
        (:meth:`pcskm.runner.store.views.Cube.commit`; nothing to do in a folder)."""
        self.cube.path.absorb(self.written)
        self.cube.record_digests(self.digests)
        self.cube.mark_done(self.pending)
        self.cube.commit()
        self.pending, self.digests, self.written = {}, {}, []
        self.last_write = time.monotonic()

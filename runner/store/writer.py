"""Where a cell is written: task results into the cube's chunks, then the ``done`` markers of
the blocks they complete (:meth:`CubeWriter.write`; the client is the only writer).

The cube's per-cell variables are cut into chunks along the block dims that its schema
version says (:data:`pcskm.runner.store.schema.CHUNKED_BY`): in version 2 one chunk per
(kind, percent), holding every algorithm, init, run, fold and s, and a task of the planner
holds whole chunks (:mod:`pcskm.runner.tasks`); in version 1 one chunk per (algorithm, init,
kind), of which a task fills a rectangle of kinds x percents. Writing each task through Zarr
would read, change and rewrite every chunk it touches, once per task. Instead the writer
keeps the chunks a run is filling in memory and writes each one whole:

* as soon as the last task of the plan that touches it has arrived (its normal end; in
  version 2, when its one task has);
* every ``flush_seconds`` (default one minute), every chunk changed since the last write;
* when the chunks held exceed ``max_bytes``, after which they are released (and read again
  if touched again);
* on :meth:`CubeWriter.close`, which the runner calls however the run ends (finished,
  interrupted, scheduler lost).

A chunk's data are written before the ``done`` markers of the blocks it received, and Zarr
replaces files atomically; so a client killed at any moment (even by SIGKILL) leaves a
readable store in which every cell marked done is intact. What it loses is at most the last
``flush_seconds`` of results, recomputed with the same values by the next run.
"""

import time
from collections import Counter

import numpy as np

from pcskm.algorithms._result import FIT_FAILED

from .schema import (
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
)

FLUSH_SECONDS = 60.0
MAX_BYTES = 512 * 2**20
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
    values = np.moveaxis(values, axis, -1)
    out = np.full((*values.shape[:-1], n_sparsity), fill, dtype=values.dtype)
    if sparse:
        out[..., 1:] = values
    else:
        out[..., :1] = values
    return np.moveaxis(out, -1, axis)


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


def carried_scores(setting):
    """The selection scores (``scored`` bits) that the cells of ``setting`` carry."""
    return ((CV_SCORES if setting.cv_folds else 0)
            | (GAP_SCORES if setting.gap_permutations else 0))


def score_names(group):
    """The selection-score variables of a group of the store (its arrays)."""
    return tuple(name for name in SCORE_VARIABLES if name in group)


def block_names(group):
    """The group's per-block variables the writer fills besides the fit records: the user
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


class _Chunk:
    """One chunk of every per-cell variable (``region``: its slices along the block dims),
    held in memory; ``done`` lists the (algorithm, init, kind, percent, runs, score bits)
    blocks received since it was last written. A chunk with no block marked done holds
    nothing to keep (at most cells to recompute): it starts from the fill values, and the
    status as stored (the ``not_applicable`` entries of the (init, kind) pairs the spec does
    not run)."""

    def __init__(self, group, region, has_done):
        self.values = {}
        for name in (*_FILLS, "weights", *optional_names(group), *score_names(group),
                     *block_names(group)):
            array = group[name]
            if has_done or name == "status":
                self.values[name] = array[region]
            else:
                shape = tuple(len(range(*r.indices(n))) for r, n in
                              zip(region, array.shape, strict=False)) + array.shape[4:]
                self.values[name] = np.full(shape, array.fill_value, array.dtype)
        self.done = []
        self.dirty = False

    @property
    def nbytes(self):
        return sum(v.nbytes for v in self.values.values())


class CubeWriter:
    """Writes :class:`pcskm.experiments.cells.TaskResult` objects into an open :class:`Cube`;
    ``tasks`` is the run's plan, which tells when a chunk has received all its results. Use
    as a context manager (or call :meth:`close`) so that every result reaches the disk."""

    def __init__(self, cube, tasks=(), *, flush_seconds=FLUSH_SECONDS, max_bytes=MAX_BYTES):
        self.cube = cube
        self.version = cube.layout.schema_version
        self.flush_seconds, self.max_bytes = flush_seconds, max_bytes
        self.expected = Counter(chunk for task in tasks for chunk in chunks_of(task, cube))
        self.chunks = {}  # (data set, place along the block dims) -> _Chunk
        self.n_constraints = {}  # data set -> its (kind, percent, run, fold) array
        self.last_flush = time.monotonic()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def write(self, task_result):
        """Take every block of ``task_result`` (written now or later, see the module
        docstring); returns the cells taken."""
        task, cube = task_result.task, self.cube
        name = task.dataset
        if len(task.fold_list) != cube.layout.groups[name].n_folds:
            raise ValueError("the writer takes tasks of every fold; this one has folds "
                             f"{task.fold_list}")
        group = cube.arrays[name]
        n_sparsity = 1 + len(cube.layout.groups[name].sparsity)
        scores = score_names(group)
        per_s = WEIGHTS_PER_S in group
        if name not in self.n_constraints:
            self.n_constraints[name] = group["n_constraints"][...]
        finished = set()
        for index, setting in enumerate(task.settings):
            for b, (block, result) in enumerate(zip(task.blocks, task_result.blocks[index],
                                                    strict=True)):
                rows = [r for r, run in enumerate(block.runs) if (index, b, run) not in task.skip]
                if not rows:
                    continue
                place = cube.block_index(name, setting.algorithm, setting.init, block.kind,
                                         block.percent)
                key = block_chunk(self.version, place)
                position = (name, *key)
                finished.add(position)
                chunk = self.chunks.get(position)
                if chunk is None:
                    region = chunk_region(self.version, key)
                    chunk = self.chunks[position] = _Chunk(
                        group, region, bool(cube.done[name][region].any()))
                runs = [block.runs[r] for r in rows]  # the skipped runs keep their values
                where = (*in_chunk(self.version, place), runs)
                for variable, values in block_records(result, setting, n_sparsity, scores,
                                                      per_s).items():
                    chunk.values[variable][where] = values[rows]
                if "fit_error" in chunk.values:
                    chunk.values["fit_error"][where] = result.fit_error[rows]
                chunk.done.append((*place, runs, carried_scores(setting)))
                chunk.dirty = True
                _, _, k, p = place
                self.n_constraints[name][k, p, runs] = result.n_constraints[rows]
        self.expected.subtract(finished)
        complete = [c for c in finished if self.expected[c] <= 0]
        if time.monotonic() - self.last_flush > self.flush_seconds:
            self.flush()
        elif sum(c.nbytes for c in self.chunks.values()) > self.max_bytes:
            self.flush()
            self.chunks.clear()
        else:
            self._write(complete)
        for position in complete:
            self.chunks.pop(position, None)
        return task.n_cells

    def flush(self):
        """Write every chunk changed since it was last written, and commit what was written
        since the last flush (:meth:`pcskm.runner.store.views.Cube.commit`: one commit of a
        repository; nothing to do in a folder)."""
        self._write(list(self.chunks))
        self.cube.commit()
        self.last_flush = time.monotonic()

    def close(self):
        self.flush()
        self.chunks.clear()

    def _write(self, positions):
        """Write the changed chunks of ``positions`` whole, then the chunks of the constraint
        counts they changed, then their done markers."""
        dirty = [p for p in positions if p in self.chunks and self.chunks[p].dirty]
        datasets = sorted({p[0] for p in dirty})
        for position in dirty:
            group = self.cube.arrays[position[0]]
            region = chunk_region(self.version, position[1:])
            for variable, values in self.chunks[position].values.items():
                group[variable][region] = values
        for name in datasets:
            self._write_counts(name, [self.chunks[p] for p in dirty if p[0] == name])
        for name in datasets:
            regions = []
            for position in (p for p in dirty if p[0] == name):
                chunk = self.chunks[position]
                regions.extend((a, i, [k], [p], runs, bits)
                               for a, i, k, p, runs, bits in chunk.done)
                chunk.done, chunk.dirty = [], False
            self.cube.mark_done(name, regions)

    def _write_counts(self, name, chunks):
        """Write whole the chunks of ``name``'s constraint counts that the blocks received
        by ``chunks`` changed (one chunk per (kind, percent) in schema version 2, one in
        all in version 1)."""
        array, counts = self.cube.arrays[name]["n_constraints"], self.n_constraints[name]
        size_k, size_p = array.chunks[:2]
        for ck, cp in sorted({(k // size_k, p // size_p)
                              for chunk in chunks for _, _, k, p, _, _ in chunk.done}):
            region = (slice(ck * size_k, (ck + 1) * size_k), slice(cp * size_p, (cp + 1) * size_p))
            array[region] = counts[region]

"""Writing task results into the cube (the client is the only writer).

A task's blocks form a rectangle of kinds x percentages with the same runs (the planner
makes them so); with its (algorithm, init) settings, usually every algorithm of a set of
inits, that is one region of the cube, written with one call per variable, then marked done.
Zarr replaces files atomically, so an interruption between two writes leaves every earlier
write intact and the task unmarked (recomputed, with the same values, by the next run).
"""

import numpy as np

from algorithms._result import FAILED

from .cube import NOT_APPLICABLE


def _selection(positions):
    """A slice for consecutive ascending positions, else the positions (orthogonal)."""
    positions = np.asarray(positions)
    if np.array_equal(positions, np.arange(positions[0], positions[0] + len(positions))):
        return slice(int(positions[0]), int(positions[0]) + len(positions))
    return positions


def _spread(values, sparse, n_sparsity, fill):
    """(..., S) values -> the cube's sparsity entries (the NaN entry, then the grid); the
    entries a fit does not have get ``fill`` (not_applicable for the status)."""
    out = np.full((*values.shape[:-1], n_sparsity), fill, dtype=values.dtype)
    if sparse:
        out[..., 1:] = values
    else:
        out[..., :1] = values
    return out


def mean_weights(weights, failed):
    """Mean over the s axis (-2) of the weights of the fits that did not fail (NaN if all
    failed); ``weights`` (..., S, p), ``failed`` (..., S)."""
    ok = ~failed
    count = ok.sum(axis=-1)[..., None]
    total = np.where(ok[..., None], weights, 0.0).sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def rectangles(task, cube):
    """Split a task's blocks into rectangles: ``(kind positions, percent positions, runs,
    [[block index]] indexed [kind][percent])`` with ascending positions."""
    by_runs = {}
    for index, block in enumerate(task.blocks):
        by_runs.setdefault(block.runs, []).append(index)
    out = []
    for runs, indices in by_runs.items():
        placed = {}
        for index in indices:
            block = task.blocks[index]
            _, _, k, p = cube.block_index(task.dataset, task.settings[0].algorithm,
                                          task.settings[0].init, block.kind, block.percent)
            placed[(k, p)] = index
        kinds = sorted({k for k, _ in placed})
        percents = sorted({p for _, p in placed})
        if len(placed) == len(kinds) * len(percents):
            out.append((kinds, percents, runs,
                        [[placed[(k, p)] for p in percents] for k in kinds]))
        else:  # not a rectangle: one region per block
            out.extend(([k], [p], runs, [[index]]) for (k, p), index in placed.items())
    return out


def setting_grids(task, cube):
    """The task's settings as grids ``(algorithm positions, init positions, [[setting
    index]] indexed [algorithm][init])`` with ascending positions: one grid when the settings
    are every pair of some algorithms and some inits, else one grid per setting."""
    placed = {cube.block_index(task.dataset, s.algorithm, s.init): index
              for index, s in enumerate(task.settings)}
    algorithms = sorted({a for a, _ in placed})
    inits = sorted({i for _, i in placed})
    if len(placed) == len(algorithms) * len(inits):
        return [(algorithms, inits, [[placed[(a, i)] for i in inits] for a in algorithms])]
    return [([a], [i], [[index]]) for (a, i), index in placed.items()]


class CubeWriter:
    """Writes :class:`experiments.cells.TaskResult` objects into an open :class:`Cube`."""

    def __init__(self, cube):
        self.cube = cube

    def write(self, task_result):
        """Write every block of ``task_result`` and mark it done; returns the cells
        written."""
        task = task_result.task
        rects, grids = rectangles(task, self.cube), setting_grids(task, self.cube)
        written = 0
        for kinds, percents, runs, blocks in rects:
            for algorithms, inits, settings in grids:
                self._write_region(task_result, (algorithms, inits, kinds, percents, runs),
                                   settings, blocks)
                written += (len(algorithms) * len(inits) * len(kinds) * len(percents)
                            * len(runs) * len(task.fold_list))
            first = task_result.blocks[0]  # the constraint counts are the same for all
            self.cube.arrays[task.dataset]["n_constraints"].set_orthogonal_selection(
                (_selection(kinds), _selection(percents), _selection(runs)),
                np.stack([np.stack([first[b].n_constraints for b in row]) for row in blocks])
                .astype(np.int32))
        self.cube.mark_done(task.dataset, [
            (a, i, kinds, percents, runs) for kinds, percents, runs, _ in rects
            for algorithms, inits, _ in grids for a in algorithms for i in inits])
        return written

    def _write_region(self, task_result, positions, settings, blocks):
        """Write the region ``positions`` (algorithm, init, kind, percent and run positions)
        from the results of ``settings`` [algorithm][init] and ``blocks`` [kind][percent]."""
        task, cube = task_result.task, self.cube
        name = task.dataset
        group = cube.arrays[name]
        n_sparsity = 1 + len(cube.layout.groups[name].sparsity)
        region = tuple(_selection(p) for p in positions)

        def grid(field, fill, dtype, shift=0):
            """(algorithm, init, kind, percent, run, fold, sparsity) values of ``field`` (plus
            ``shift``), ``fill`` at the s entries a fit does not have."""
            def one(index):
                values = np.stack([np.stack([getattr(task_result.blocks[index][b], field)
                                             for b in row]) for row in blocks])
                return _spread(values + shift, task.settings[index].is_sparse, n_sparsity,
                               fill)
            return np.stack([np.stack([one(index) for index in row])
                             for row in settings]).astype(dtype)

        for variable in ("f_score", "precision", "recall", "satisfied"):
            group[variable].set_orthogonal_selection(region, grid(variable, np.nan, np.float32))
        group["status"].set_orthogonal_selection(  # the fit's status code + 1 (0: missing)
            region, grid("status", NOT_APPLICABLE, np.int8, shift=1))
        group["n_iter"].set_orthogonal_selection(region, grid("n_iter", -1, np.int16))
        group["weights"].set_orthogonal_selection(
            region, np.stack([np.stack([_fit_weights(task_result, index, blocks)
                                        for index in row]) for row in settings]))


def _fit_weights(task_result, index, blocks):
    """(kind, percent, run, fold, p) weights of setting ``index``: the fit's weights, or for
    the sparse estimators their mean over the s values whose fit did not fail."""
    def stacked(field):
        return np.stack([np.stack([getattr(task_result.blocks[index][b], field) for b in row])
                         for row in blocks])

    weights = stacked("weights")  # (kind, percent, run, fold, S, p)
    if task_result.task.settings[index].is_sparse:
        weights = mean_weights(weights, np.isin(stacked("status"), list(FAILED)))
    else:
        weights = weights[..., 0, :]
    return weights.astype(np.float32)

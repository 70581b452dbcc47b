"""Writing task results into the cube (the client is the only writer).

A task's blocks form a rectangle of kinds x percentages with the same runs (the planner
makes them so), written as one region per variable, then marked done. Zarr replaces files
atomically, so an interruption between two writes leaves every earlier write intact and the
task unmarked (recomputed, with the same values, by the next run).
"""

import numpy as np

from algorithms._result import FAILED

from .cube import NOT_APPLICABLE

_FLOAT_FILL = np.float32(np.nan)


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


def rectangles(task_result, cube):
    """Split a task's block results into rectangles: ``(kind positions, percent positions,
    runs, [[BlockResult]] indexed [kind][percent])`` with ascending positions."""
    setting = task_result.task.setting
    by_runs = {}
    for result in task_result.blocks:
        by_runs.setdefault(result.block.runs, []).append(result)
    out = []
    for runs, results in by_runs.items():
        placed = {}
        for result in results:
            _, _, k, p = cube.block_index(setting.dataset, setting.algorithm, setting.init,
                                          result.block.kind, result.block.percent)
            placed[(k, p)] = result
        kinds = sorted({k for k, _ in placed})
        percents = sorted({p for _, p in placed})
        if len(placed) == len(kinds) * len(percents):
            out.append((kinds, percents, runs,
                        [[placed[(k, p)] for p in percents] for k in kinds]))
        else:  # not a rectangle: one region per block
            out.extend(([k], [p], runs, [[result]]) for (k, p), result in placed.items())
    return out


class CubeWriter:
    """Writes :class:`experiments.cells.TaskResult` objects into an open :class:`Cube`."""

    def __init__(self, cube):
        self.cube = cube

    def write(self, task_result):
        """Write every block of ``task_result`` and mark it done; returns the cells
        written."""
        written = 0
        for kinds, percents, runs, grid in rectangles(task_result, self.cube):
            self._write_rectangle(task_result.task.setting, kinds, percents, runs, grid)
            written += len(kinds) * len(percents) * len(runs) * grid[0][0].f_score.shape[1]
        return written

    def _write_rectangle(self, setting, kinds, percents, runs, grid):
        cube = self.cube
        name = setting.dataset
        group = cube.arrays[name]
        n_sparsity = 1 + len(cube.layout.groups[name].sparsity)
        a, i = cube.block_index(name, setting.algorithm, setting.init)
        cell_region = (_selection(kinds), _selection(percents), _selection(runs))
        region = (a, i, *cell_region)

        def stacked(field):
            return np.stack([np.stack([getattr(r, field) for r in row]) for row in grid])

        status = stacked("status")  # (kind, percent, run, fold, S)
        sparse = setting.is_sparse
        records = {
            "f_score": (stacked("f_score").astype(np.float32), _FLOAT_FILL),
            "precision": (stacked("precision").astype(np.float32), _FLOAT_FILL),
            "recall": (stacked("recall").astype(np.float32), _FLOAT_FILL),
            "satisfied": (stacked("satisfied").astype(np.float32), _FLOAT_FILL),
            "status": ((status + 1).astype(np.int8), np.int8(NOT_APPLICABLE)),
            "n_iter": (stacked("n_iter").astype(np.int16), np.int16(-1)),
        }
        for variable, (values, fill) in records.items():
            group[variable].set_orthogonal_selection(
                region, _spread(values, sparse, n_sparsity, fill))
        weights = stacked("weights")  # (kind, percent, run, fold, S, p)
        weights = (mean_weights(weights, np.isin(status, list(FAILED))) if sparse
                   else weights[..., 0, :])
        group["weights"].set_orthogonal_selection(region, weights.astype(np.float32))
        group["n_constraints"].set_orthogonal_selection(
            cell_region, stacked("n_constraints").astype(np.int32))
        cube.mark_done(name, (a, i), kinds, percents, runs)

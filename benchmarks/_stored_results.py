"""A task's results read back from a complete store of its spec, for the writing benchmarks:
the values the runner really wrote, so that the chunks compress (and cost) as in a real run.

:meth:`StoredResults.result` inverts :func:`pcskm.runner.store.writer.block_records`: each
record of a block is its setting's entries along ``sparsity`` (the grid for SKM and PCSKM,
the no-s entry otherwise), the status is turned back into the fit's code, and the weights of
every fit are ``weights_per_s`` (so the store must have that variable). Written again by
:func:`pcskm.runner.store.writer.write_task` into a fresh store of the same spec, they give
the stored chunks back but for ``weights``, the mean over s, which is computed from the
stored float32 weights (the run had the fits' float64 ones); :func:`differing_chunks` counts
the chunks that differ.
"""

from pathlib import Path

import numpy as np
import zarr

from pcskm.experiments.cells import BlockResult, TaskResult
from pcskm.runner.store.schema import (
    BLOCK_DIMS,
    FIT_STATUS_CODES,
    SCORE_VARIABLES,
    WEIGHTS_PER_S,
    block_chunk,
    chunk_region,
    in_chunk,
)
from pcskm.runner.store.writer import chunk_variables, chunks_of

PER_S = ("f_score", "precision", "recall", "satisfied", "status", "n_iter", "cv_score", "gap",
         "gap_sd", "auc_score", "auc_se")
# The fit's status code of each of the cube's codes (-1: a code no fit has).
FIT_STATUS_OF_CODE = np.full(max(FIT_STATUS_CODES) + 1, -1, np.int8)
FIT_STATUS_OF_CODE[FIT_STATUS_CODES] = np.arange(len(FIT_STATUS_CODES))


class StoredResults:
    """The tasks' results as the complete store at ``path`` (same spec as the plan) holds
    them."""

    def __init__(self, path):
        self.path = Path(path)
        self.root = zarr.open_group(str(self.path), mode="r")
        self.groups = {}

    def arrays(self, dataset):
        if dataset not in self.groups:
            arrays = dict(self.root[dataset].arrays())
            if WEIGHTS_PER_S not in arrays:
                raise ValueError(f"{self.path} has no {WEIGHTS_PER_S}: the weights of every "
                                 "fit cannot be read back")
            self.groups[dataset] = arrays
        return self.groups[dataset]

    def result(self, task, target):
        """The :class:`TaskResult` of ``task`` (its :class:`~pcskm.runner.store.writer.TaskTarget`
        ``target`` gives its blocks' places), one read of each chunk it writes."""
        arrays = self.arrays(task.dataset)
        blocks = [[None] * len(task.blocks) for _ in task.settings]
        for b, block in enumerate(task.blocks):
            region = chunk_region(target.version, block_chunk(target.version,
                                                              target.places[0][b]))
            chunk = {name: arrays[name][region]
                     for name in (*PER_S, WEIGHTS_PER_S, "cv_folds_used", "fit_error")
                     if name in arrays}
            counts = arrays["n_constraints"][target.places[0][b][2], target.places[0][b][3]]
            for index, setting in enumerate(task.settings):
                entries = slice(1, None) if setting.is_sparse else slice(0, 1)
                at = (*in_chunk(target.version, target.places[index][b]), list(block.runs))
                values = {}
                for name in PER_S:
                    if name in chunk:
                        values[name] = chunk[name][at][..., entries]
                    else:  # a store without the selection scores
                        values[name] = np.full(chunk["f_score"][at][..., entries].shape,
                                               SCORE_VARIABLES[name][3], np.float32)
                values["status"] = FIT_STATUS_OF_CODE[values["status"]]
                values["weights"] = chunk[WEIGHTS_PER_S][at][..., entries, :]
                values["cv_folds_used"] = (chunk["cv_folds_used"][at] if "cv_folds_used" in chunk
                                           else np.full(values["f_score"].shape[:2], -1, np.int8))
                values["n_constraints"] = counts[list(block.runs)]
                values["fit_error"] = chunk["fit_error"][at] if "fit_error" in chunk else None
                blocks[index][b] = BlockResult(block=block, **values)
        return TaskResult(task=task, blocks=blocks, seconds=0.0)


def differing_chunks(stored, cube, tasks):
    """How many of the chunk files ``tasks`` write into ``cube`` (a store in a folder: every
    variable of :func:`~pcskm.runner.store.writer.chunk_variables` and the constraint counts)
    differ from those of the store folder ``stored``, of how many, and the variables of those
    that differ. A chunk's file is named by its place along each dim: the chunk's along the
    block dims, 0 along the others (whole in one chunk)."""
    written = Path(cube.path)
    places = {}  # data set -> the places of its chunks along the block dims
    for dataset, *place in {c for task in tasks for c in chunks_of(task, cube)}:
        places.setdefault(dataset, []).append(place)
    differ, count, names = 0, 0, set()
    for dataset, chunks in sorted(places.items()):
        arrays = dict(zarr.open_group(str(written), mode="r", path=dataset).arrays())
        dims = {name: arrays[name].metadata.dimension_names
                for name in (*chunk_variables(arrays), "n_constraints")}
        for place in sorted(chunks):
            at = dict(zip(BLOCK_DIMS, place, strict=True))
            for name, along in dims.items():
                key = Path(dataset, name, "c", *(str(at.get(dim, 0)) for dim in along))
                count += 1
                if (Path(stored) / key).read_bytes() != (written / key).read_bytes():
                    differ += 1
                    names.add(name)
    return differ, count, sorted(names)

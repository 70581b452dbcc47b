"""The size of a spec's store and of what a worker holds while it writes a task, computed
from the layout before anything is created, and the refusal of what cannot fit
(docs/reference/cli.md, Size check); the writing time a dry run estimates from them.

The store: every array of every group, uncompressed, and of it the values a complete store
holds (the entries of each algorithm's s grid, or its no-s entry; the rest are fill values,
which compress to almost nothing). A worker writing a task (:mod:`.writer`): one chunk of
every variable (one (kind, percent)) and the task's results for it, as much again. The
client holds the ``done`` (and ``scored``) markers and the ``run_index`` of every group.
"""

import os
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pcskm.experiments import cells

from .backends import where
from .backends.folder import Folder
from .layout import Layout
from .schema import (
    BLOCK_DIMS,
    FIT_DIMS,
    FIT_VARIABLES,
    SCORE_VARIABLES,
    chunk_shape,
    score_variables,
    wanted_scores,
)
from .writer import chunks_of

# The workers' writing of a task (:func:`.writer.write_task`): a cost per task (opening its
# data set's arrays, reading the status of its chunks, one call into Zarr per block) and a
# cost per MiB (uncompressed) of the chunks it fills (building, compressing and writing them).
# The least-squares fit of the writing CPU of each of the 1,118 tasks of the paper plan,
# written with the results of a complete paper store (`python benchmarks/bench_writer.py
# --values STORE --designs region --only ""`: 36,236 MiB of chunks, 184.3 CPU-seconds in all;
# docs/results/paper/bench_writer_whole_plan_values.txt, docs/guide/hpc.md "How the workers
# write").
WRITE_SECONDS_PER_TASK = 0.0247
WRITE_SECONDS_PER_MIB = 0.00432


class TooLarge(ValueError):
    """The spec's store, or what a worker or the client holds while writing it, does not
    fit."""


def _itemsize(dtype):
    return np.dtype(dtype).itemsize


def binary(size):
    """``"229 MiB"``, ``"3.6 TiB"``."""
    if size < 1024:
        return f"{size:.0f} B"
    units = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    power = min(int(np.log2(size) // 10), len(units))
    return f"{size / 1024 ** power:.1f} {units[power - 1]}"


@dataclass(frozen=True)
class Sizes:
    store_bytes: int  # every array, uncompressed
    values_bytes: int  # the values of a complete store (its non-fill entries), uncompressed
    chunk_bytes: int  # the largest chunk of every variable
    worker_bytes: int  # the most a worker holds to write a task's chunk
    client_bytes: int  # the client's done markers and run indices

    def describe(self):
        return (f"store: {binary(self.values_bytes)} of values when complete "
                f"({binary(self.store_bytes)} uncompressed with its fill values); memory for "
                f"the results: up to {binary(self.worker_bytes)} in a worker (largest chunk "
                f"{binary(self.chunk_bytes)}), {binary(self.client_bytes)} of done markers in "
                "the client")


def store_sizes(layout):
    """The :class:`Sizes` of a store of ``layout`` (a
    :class:`pcskm.runner.store.layout.Layout`)."""
    fit_item = sum(_itemsize(dtype) for dtype, _, _ in FIT_VARIABLES.values())
    scores = score_variables(layout.fixed)

    def score_bytes(bits, per_s):
        """Bytes per cell (``per_s``: per cell and s) of the score variables of ``bits``."""
        return sum(_itemsize(SCORE_VARIABLES[n][2]) for n in scores
                   if SCORE_VARIABLES[n][0] & bits and (SCORE_VARIABLES[n][1] == FIT_DIMS)
                   == per_s)

    per_s, per_cell = fit_item + score_bytes(~0, True), score_bytes(~0, False)
    # done (1 byte), scored with the selection scores (1), the run that marked it (2)
    markers = 1 + bool(scores) + 2
    store = values = markers_bytes = counts = chunk = 0
    for group in layout.groups.values():
        shape = group.fit_shape()
        n_alg, n_init, n_kind, n_pct, n_run, n_fold, n_s = shape
        cell_runs = n_pct * n_run * n_fold  # one (algorithm, init, kind)
        weights = 4 * len(group.feature_names)
        per_s_weights = weights if layout.weights_per_s else 0  # weights_per_s, per s
        one = cell_runs * (n_s * (per_s + per_s_weights) + per_cell + weights)
        blocks = n_alg * n_init * n_kind
        store += blocks * one
        per_chunk = np.prod(chunk_shape(layout.schema_version, BLOCK_DIMS, shape[:4]))
        chunk = max(chunk, int(per_chunk) * one // n_pct)
        wanted = wanted_scores(layout.fixed, layout.algorithms, group.algorithms)
        for name, bits in zip(group.algorithms, wanted, strict=True):
            sparse = layout.algorithms.get(name, {}).get("estimator") in cells.SPARSE
            used = n_s - 1 if sparse else 1
            values += n_init * n_kind * cell_runs * (
                used * (fit_item + score_bytes(bits, True) + per_s_weights)
                + score_bytes(bits, False) + weights)
        markers_bytes += markers * blocks * n_pct * n_run
        counts += 4 * n_kind * cell_runs
    store += markers_bytes + counts
    values += markers_bytes + counts
    return Sizes(store_bytes=store, values_bytes=values, chunk_bytes=chunk,
                 worker_bytes=2 * chunk, client_bytes=markers_bytes)


def chunks_bytes(layout, chunks):
    """Uncompressed bytes of the ``chunks`` (:func:`pcskm.runner.store.writer.chunks_of`):
    one chunk of every variable each."""
    counts = Counter(chunk[0] for chunk in chunks)
    return sum(store_sizes(Layout(groups={name: layout.groups[name]}, fixed=layout.fixed,
                                  algorithms=layout.algorithms,
                                  weights_per_s=layout.weights_per_s,
                                  schema_version=layout.schema_version)).chunk_bytes * n
               for name, n in counts.items())


def written_bytes(view, tasks):
    """Uncompressed bytes of the chunks that ``tasks`` fill in the store of ``view`` (a
    :class:`pcskm.runner.store.views.CubeView`), each written whole once."""
    chunks = {chunk for task in tasks for chunk in chunks_of(task, view)}
    return chunks_bytes(view.layout, chunks)


def write_seconds(view, tasks):
    """The estimated time to write the chunks of ``tasks``, all workers together:
    :data:`WRITE_SECONDS_PER_TASK` per task and :data:`WRITE_SECONDS_PER_MIB` per MiB of the
    chunks they fill."""
    return (WRITE_SECONDS_PER_TASK * len(tasks)
            + WRITE_SECONDS_PER_MIB * written_bytes(view, tasks) / 2**20)


def available_memory():
    """Memory this machine can give without swapping (``MemAvailable`` of /proc/meminfo,
    else the free physical pages)."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _existing_folder(path):
    path = Path(path).resolve()
    while not path.exists():
        path = path.parent
    return path


def free_disk(path):
    """``(folder, bytes free)`` on the file system where ``path`` is (or will be) written."""
    folder = _existing_folder(path)
    return folder, shutil.disk_usage(folder).free


def disk_used(path):
    """Bytes of the files under ``path`` (0 if it does not exist)."""
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                continue
    return total


def disk_space(store):
    """``(folder, bytes free, bytes used by the store)`` of the store ``store`` (a path or
    URL, :func:`.backends.where`) in a folder; None on object storage, which has no disk to
    fill."""
    location = where(store)
    if not isinstance(location, Folder):
        return None
    return (*free_disk(location.path), disk_used(location.path))


def check_sizes(layout, path, *, copies=False):
    """Raise :class:`TooLarge`, with the numbers, if the store of ``layout`` at ``path``
    cannot fit on its disk (its values, less what the store holds now; all of them when the
    store is ``copies``: rebuilt beside the old one) or what a worker or the client holds
    cannot fit in this machine's memory; returns the :class:`Sizes`."""
    found = store_sizes(layout)
    found_space = disk_space(path)  # None: object storage, no disk to fill
    problems = []
    if found_space is not None:
        folder, free, used = found_space
        needed = found.values_bytes - (0 if copies else used)
    if found_space is not None and needed > free:
        problems.append(f"its values need {binary(needed)} on disk and {folder} has "
                        f"{binary(free)} free")
    memory = available_memory()
    if max(found.worker_bytes, found.client_bytes) > memory:
        problems.append(f"a worker would hold up to {binary(found.worker_bytes)} of results "
                        f"in memory (the largest chunk of every variable is "
                        f"{binary(found.chunk_bytes)}; the client's done markers "
                        f"{binary(found.client_bytes)}) and this machine has "
                        f"{binary(memory)} available")
    if problems:
        raise TooLarge(f"the store {path} of this spec cannot be written: "
                       + "; ".join(problems) + ". Make the spec smaller (n_runs, "
                       "percentages, kinds, data sets) or split it into several specs")
    return found

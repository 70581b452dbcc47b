"""Compiling the Numba kernels once per machine, in the client, before the workers start.

A process that calls a kernel missing from Numba's on-disk cache compiles it
(:mod:`pcskm.algorithms._jit`). On a fresh installation every worker of a local cluster used to
compile the same kernels at the same time, silently, before its first result. Instead the
client evaluates one cell of every (algorithm, init) of the plan, on the data set of the plan
with the fewest points, and says so while Numba compiles; the workers of a local cluster run on
the same machine with the same cache folder, and load the kernels from it.
"""

import logging
import time

from pcskm.algorithms._jit import cache_dir, watch_compiling
from pcskm.experiments import cells
from pcskm.experiments.cells import Block, Task

log = logging.getLogger("pcskm")


def warm_up_tasks(tasks):
    """One task of one cell (first run, first fold) per (algorithm, init) of ``tasks``, on the
    data set with the fewest points among those the plan runs it on."""
    chosen = {}  # (algorithm, init) -> (n_samples, task)
    for task in tasks:
        n_samples = cells.dataset(task.settings[0].data_ref, task.settings[0].data_dir).n_samples
        block = task.blocks[0]
        one_cell = (Block(block.kind, block.percent, block.runs[:1]),)
        for setting in task.settings:
            key = (setting.algorithm, setting.init)
            if key not in chosen or n_samples < chosen[key][0]:
                chosen[key] = (n_samples, Task((setting,), one_cell, folds=task.fold_list[:1]))
    return [task for _, task in chosen.values()]


def compile_kernels(tasks):
    """Compile (or load from the cache) every kernel the cells of ``tasks`` use, in this
    process; logs when compiling starts and how long it took. Returns the seconds spent."""
    start = time.perf_counter()

    def announce():
        log.info("compiling the Numba kernels for this machine, once (it takes a minute or "
                 "two; they are cached in %s for the workers and for later runs)",
                 cache_dir() or "Numba's cache folder")

    with watch_compiling(announce) as compiling:
        for task in warm_up_tasks(tasks):
            cells.evaluate(task)
    seconds = time.perf_counter() - start
    if compiling.n_compiled:
        log.info("kernels compiled in %.0f s", seconds)
    return seconds

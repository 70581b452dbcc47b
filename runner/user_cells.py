"""One cell of each user estimator timed before a run on batch jobs (docs/guide/hpc.md,
Wall time).

Work units (:data:`pcskm.runner.wall_time.SECONDS_PER_UNIT`, fits times points) price the
built-in estimators; they cannot price a user's, whose fit may wait 40 s where a built-in one
takes milliseconds. So where no dry run's calibration is kept, a run on jobs of a wall time
times one cell of every user variant (algorithm and init) before anything is submitted: in
the chunk where that variant has the most work, the cell of its first run and first fold, in
a forked child of this process, by the wall clock (a worker's job counts the time a fit
waits as well as the time it computes). Its seconds per unit of work price the variant's
cells in every chunk.

The child is given the shortest life of a worker times the cell's share of the variant's
work in that chunk. A cell still computing then means the chunk cannot finish in a worker's
life: the run is refused at once (:class:`~pcskm.runner.wall_time.TaskCannotFit`), without
waiting for the fit to end. Timings are kept for the life of the process, so a run that
plans twice times each cell once.
"""

import logging
import math
import time

from pcskm.experiments import cells
from pcskm.experiments.cells import Block, Task

from .tasks import work

log = logging.getLogger("pcskm")

_seconds = {}  # the timed cell's Task -> its wall seconds


def variant(setting):
    """What a timing prices: the setting's algorithm variant and init."""
    return setting.algorithm, setting.init


def _heaviest_chunks(tasks, view):
    """For each user variant of ``tasks``: ``(chunk, units)``, the one-setting task of the
    chunk (one block) in which it has the most units of work."""
    heaviest = {}
    for task in tasks:
        for index, setting in enumerate(task.settings):
            if not setting.is_user:
                continue
            for b, block in enumerate(task.blocks):
                runs = tuple(task.runs_of(index, b))
                if not runs:
                    continue
                chunk = Task((setting,), (Block(block.kind, block.percent, runs),))
                units = work(chunk, view, 0)
                if units > heaviest.get(variant(setting), (None, 0))[1]:
                    heaviest[variant(setting)] = (chunk, units)
    return heaviest


def _timed(cell):
    """The wall seconds of evaluating ``cell`` (a one-cell task)."""
    start = time.perf_counter()
    cells.evaluate(cell)
    return time.perf_counter() - start


def _cell_seconds(cell, deadline):
    """The wall seconds of ``cell``, evaluated in a forked child (in this process where it
    cannot fork); None if the child was still computing after ``deadline`` seconds, NaN if it
    ended without a value (logged)."""
    from pcskm import forking

    from .compiling import stand_in

    if cell in _seconds:
        return _seconds[cell]
    setting = cell.settings[0]
    log.info("timing one cell of %s (%s) on %s before submitting, for at most %.0f s (work "
             "units cannot price a user estimator, and no dry run kept a calibration of it)",
             *variant(setting), cell.dataset, deadline)
    # what a worker does once, before its first cell (load the data set, its folds and the
    # kernels of the init and the scores): here, by the cell's built-in stand-in, so that
    # the child inherits it and times the cell alone
    cells.evaluate(Task((stand_in(setting),), cell.blocks, folds=cell.folds))
    try:
        seconds = forking.within(lambda: _timed(cell), deadline)
    except TimeoutError:
        return None
    except forking.ChildDied as error:
        log.warning("the timed cell of %s (%s) on %s did not finish (%s): its cells are "
                    "priced by their work units", *variant(setting), cell.dataset, error)
        seconds = math.nan
    else:
        log.info("timed one cell of %s (%s) on %s: %.1f s", *variant(setting), cell.dataset,
                 seconds)
    _seconds[cell] = seconds
    return seconds


def seconds_per_unit(tasks, view, shortest_life, wall):
    """``{variant: seconds per unit of work}`` of every user variant of ``tasks``, from one
    cell each (module docstring); raises :class:`~pcskm.runner.wall_time.TaskCannotFit` for
    a variant whose cell shows that its heaviest chunk cannot finish within
    ``shortest_life`` seconds, the life of a worker in a job of ``wall`` seconds."""
    from .wall_time import TaskCannotFit, describe

    rates = {}
    for key, (chunk, units) in _heaviest_chunks(tasks, view).items():
        block = chunk.blocks[0]
        cell = Task(chunk.settings, (Block(block.kind, block.percent, block.runs[:1]),),
                    folds=(0,))
        share = work(cell, view, 0) / units
        name = f"{key[0]} ({key[1]})"
        seconds = _cell_seconds(cell, deadline=shortest_life * share)
        if seconds is None:
            raise TaskCannotFit(
                f"one cell of {name} in the chunk {describe(chunk)}, timed before "
                f"submitting, was still computing after {shortest_life * share:.0f} s: the "
                f"chunk's {chunk.n_cells} cells of {name} take more than "
                f"{shortest_life:.0f} s, longer than a worker lives in a job of "
                f"the wall time {wall:.0f} s (at least {shortest_life:.0f} s before it "
                "retires): it could never finish, and a chunk is never split. Give the jobs "
                "a longer walltime in jobqueue.yaml (docs/guide/hpc.md, Wall time); nothing "
                "was submitted")
        if not math.isnan(seconds):
            rates[key] = seconds / work(cell, view, 0)
    return rates

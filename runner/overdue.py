"""A task past the time limit is run again one setting at a time, so that one hung fit costs
only its own setting's cells.

A task holds whole chunks, each one (kind, percent) of a data set with every setting
(algorithm, init) that misses a cell in it (:mod:`.tasks`). A fit that never ends keeps the
whole task from ending, and the time limit (:mod:`.task_clock`) would end with it the cells of
every other setting of its chunks. So a task of several settings that runs past the limit is
not yet a failure: its settings run again, each a task of its own under the same limit
(:func:`one_setting_each`), in turn, for they write the same chunks and a chunk has one writer
at a time. The runner publishes what the previous part wrote and marks it done before the
next part starts (:meth:`Parts.after`), so that the next part's writer keeps those cells (it
starts a chunk from the stored values where the chunk holds done cells,
:func:`pcskm.runner.store.writer.write_task`). A part past the limit is the failure: it names
its setting. Each cell's draws come from its own seed whatever the other settings of its
task, so a part computes the values the whole task would have.
"""

from dataclasses import replace


def one_setting_each(task):
    """``task`` cut into one task per setting that has cells to compute, in the task's order:
    ``[(setting, part)]``."""
    parts = []
    for index, setting in enumerate(task.settings):
        skip = frozenset((0, b, run) for i, b, run in task.skip if i == index)
        part = replace(task, settings=(setting,), skip=skip)
        if part.n_cells:
            parts.append((setting, part))
    return parts


def part_key(key, setting):
    """The Dask key of the part of the task ``key`` that computes ``setting``."""
    return f"{key}-{setting.algorithm}-{setting.init}"


def describe(setting):
    """``"algorithm HANG, init dkm++"``: what a part computes, for its messages."""
    return f"algorithm {setting.algorithm}, init {setting.init}"


class Parts:
    """The parts still to run of the tasks split at the limit: :meth:`after` gives the part
    that follows part ``key`` (or the first part of the task ``key`` just split)."""

    def __init__(self):
        self.waiting = {}  # key of a split task or of a part running -> the parts after it

    def split(self, key, task, weight):
        """Cut the task ``key`` (of ``weight``, :func:`pcskm.runner.calibrate.task_weights`),
        ended at the limit, into its settings' parts, each weighed by its share of the cells;
        returns how many."""
        self.waiting[key] = [(part_key(key, setting), part, weight * part.n_cells / task.n_cells)
                             for setting, part in one_setting_each(task)]
        return len(self.waiting[key])

    def after(self, key):
        """``(key, part, weight)`` of the part to run once ``key`` has ended, or None."""
        rest = self.waiting.pop(key, None)
        if not rest:
            return None
        following, *rest = rest
        self.waiting[following[0]] = rest
        return following

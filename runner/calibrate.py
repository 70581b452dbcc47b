"""Run-time estimate for ``pcskm run --dry-run``: time a few real fits in this process.

Tasks are grouped by what drives their cost: the data set's shape, the estimator and its
parameters, the init (Seeding or a fixed init; LKM/SKM with a fixed init share one fit) and
the constraint kind.
One probe per group runs real cells (run 0, the middle percentage): one untimed (loading),
then three timed; a group without a probe (time budget spent) gets the mean cost per unit
of work of the probed groups.
"""

import time
from dataclasses import dataclass

from experiments import cells
from experiments.cells import Block, Task


@dataclass
class Estimate:
    core_seconds: float  # compute time of all tasks on one core
    n_probes: int
    n_groups: int
    probe_seconds: float


def _group(task, n_samples, n_features):
    s = task.setting
    return (n_samples, n_features, s.estimator, s.params, s.init == cells.SEEDING,
            s.shares_fits, len(s.sparsities) if s.is_sparse else 0, task.blocks[0].kind)


def _probe(task, percent):
    """Seconds per cell of ``task``'s setting (shared fits: per cell of a 10-fold run)."""
    kind = task.blocks[0].kind
    block = (Block(kind=kind, percent=percent, runs=(0,)),)
    if task.setting.shares_fits:
        cells.evaluate(Task(task.setting, block))
        timed = Task(task.setting, block)
    else:
        cells.evaluate(Task(task.setting, block, folds=(0,)))
        timed = Task(task.setting, block, folds=(1, 2, 3))
    start = time.perf_counter()
    cells.evaluate(timed)
    return (time.perf_counter() - start) / timed.n_cells


def estimate(tasks, view, spec, budget_seconds=60.0):
    """Estimated one-core compute time of ``tasks`` (an :class:`Estimate`)."""
    groups = {}
    for task in tasks:
        attrs = view.layout.groups[task.setting.dataset].attrs
        key = _group(task, attrs["n_samples"], attrs["n_features"])
        groups.setdefault(key, []).append(task)
    percent = sorted(spec.percentages)[len(spec.percentages) // 2]
    start = time.perf_counter()
    per_cell = {}
    for key, members in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        if time.perf_counter() - start > budget_seconds:
            break
        per_cell[key] = _probe(members[0], percent)
    probe_seconds = time.perf_counter() - start
    # unprobed groups: seconds per (cell x points x s entries) of the probed ones
    units = {key: key[0] * max(key[6], 1) for key in groups}
    rate = sum(per_cell[k] / units[k] for k in per_cell) / max(len(per_cell), 1)
    total = 0.0
    for key, members in groups.items():
        cost = per_cell.get(key, rate * units[key])
        total += cost * sum(task.n_cells for task in members)
    return Estimate(core_seconds=total, n_probes=len(per_cell), n_groups=len(groups),
                    probe_seconds=probe_seconds)

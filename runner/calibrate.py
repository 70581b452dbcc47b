"""Run-time estimate for ``pcskm run --dry-run``: time a few real cells in this process.

Tasks are grouped by what drives their cost: the data set's shape, the estimator and its
parameters, the init (Seeding or a fixed init; LKM/SKM with a fixed init share one fit) and
the constraint kind. A probe evaluates real cells of a group's first task: once untimed
(loading, Numba caches), then timed, in rounds over runs 0, 1, 2, ... (every group once per
round, largest groups first) while the budget lasts, at most ``MAX_ROUNDS``; a group costs
the mean of the middle 60 % of its rounds. Timing noise of millisecond probes on a shared
machine is large and one-sided; a plain median leaves out the runs that really take more
iterations (checked against the measured compute of a partial run of the paper spec: the
median was 15 % low, the plain mean up to 12 % high). A group without a probe gets the mean
cost per unit of work of the probed groups.

The costs grow with the constraint count, so a probe covers the lowest, middle and highest
percentage of the spec (folds 1-3 each): their mean is the mean over the percentage grid,
which is evenly spaced. LKM and SKM with a fixed init fit once per task and reuse that fit
for every cell (thousands per task), so their probe times the fit and the per-cell work
(constraint sample, satisfied fraction, scores) apart: a task costs one fit plus its cells.
Times are CPU time of this process: the estimate is the compute of an otherwise idle core.
"""

import statistics
import time
from dataclasses import dataclass

from experiments import cells
from experiments.cells import Block, Task

MAX_ROUNDS = 25  # at most one round per run of the paper spec


@dataclass
class Estimate:
    core_seconds: float  # compute time of all tasks on one core
    n_probes: int
    n_groups: int
    probe_seconds: float


@dataclass(frozen=True)
class _Cost:
    per_cell: float  # seconds per cell
    per_task: float  # seconds per task (the shared fit of LKM/SKM with a fixed init)


def _group(task, n_samples, n_features):
    s = task.setting
    return (n_samples, n_features, s.estimator, s.params, s.init == cells.SEEDING,
            s.shares_fits, len(s.sparsities) if s.is_sparse else 0, task.blocks[0].kind)


def _seconds(function, *args):
    start = time.process_time()
    function(*args)
    return time.process_time() - start


def _probe(task, percents, run, warm):
    """The :class:`_Cost` of ``task``'s setting and constraint kind, from cells of ``run``."""
    setting, kind = task.setting, task.blocks[0].kind
    if setting.shares_fits:
        block = (Block(kind=kind, percent=percents[len(percents) // 2], runs=(run,)),)
        if warm:
            cells.evaluate(Task(setting, block))
        fit = _seconds(cells.fit, setting)
        timed = Task(setting, block)
        cell = max(_seconds(cells.evaluate, timed) - fit, 0.0) / timed.n_cells
        return _Cost(per_cell=cell, per_task=fit)
    blocks = tuple(Block(kind=kind, percent=p, runs=(run,)) for p in percents)
    timed = Task(setting, blocks, folds=(1, 2, 3))
    if warm:  # also builds the folds' constraint pools, a one-off cost per process
        cells.evaluate(Task(setting, blocks[:1], folds=timed.folds))
    return _Cost(per_cell=_seconds(cells.evaluate, timed) / timed.n_cells, per_task=0.0)


def _trimmed_mean(values):
    """Mean of the middle 60 % (the mean of all of them if fewer than 5)."""
    values = sorted(values)
    cut = len(values) // 5
    return statistics.fmean(values[cut:len(values) - cut])


def estimate(tasks, view, spec, budget_seconds=60.0):
    """Estimated one-core compute time of ``tasks`` (an :class:`Estimate`)."""
    groups = {}
    for task in tasks:
        attrs = view.layout.groups[task.setting.dataset].attrs
        key = _group(task, attrs["n_samples"], attrs["n_features"])
        groups.setdefault(key, []).append(task)
    ordered = sorted(spec.percentages)
    percents = tuple(dict.fromkeys((ordered[0], ordered[len(ordered) // 2], ordered[-1])))
    order = sorted(groups, key=lambda key: -len(groups[key]))
    start = time.perf_counter()
    samples = {}
    for round_, key in ((r, key) for r in range(MAX_ROUNDS) for key in order):
        if time.perf_counter() - start > budget_seconds:
            break
        samples.setdefault(key, []).append(
            _probe(groups[key][0], percents, run=round_ % spec.n_runs, warm=round_ == 0)
        )
    probe_seconds = time.perf_counter() - start
    costs = {key: _Cost(per_cell=_trimmed_mean([c.per_cell for c in probes]),
                        per_task=_trimmed_mean([c.per_task for c in probes]))
             for key, probes in samples.items()}
    # unprobed groups: seconds per (cell x points x s entries) of the probed ones
    units = {key: key[0] * max(key[6], 1) for key in groups}
    rate = sum(costs[k].per_cell / units[k] for k in costs) / max(len(costs), 1)
    total = 0.0
    for key, members in groups.items():
        cost = costs.get(key, _Cost(per_cell=rate * units[key], per_task=0.0))
        total += cost.per_cell * sum(task.n_cells for task in members)
        total += cost.per_task * len(members)
    return Estimate(core_seconds=total, n_probes=len(costs), n_groups=len(groups),
                    probe_seconds=probe_seconds)

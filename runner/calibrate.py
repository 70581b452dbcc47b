"""Run-time estimate for ``pcskm run --dry-run``: time a few real cells in this process.

Tasks are grouped by what drives their cost: the data set's shape, the estimator and its
parameters, the init (Seeding or a fixed init; LKM/SKM with a fixed init share one fit), the
constraint kind and the selection scores. A probe evaluates real cells of a group's first
task: once untimed (loading, Numba caches), then timed, in rounds over runs 0, 1, 2, ...
(every group once per round, largest groups first) while the budget lasts, at most
``MAX_ROUNDS``; a group costs the mean of the middle 60 % of its rounds. Timing noise of
millisecond probes on a shared machine is large and one-sided; a plain median leaves out the
runs that really take more iterations (checked against the measured compute of a partial run
of the paper spec: the median was 15 % low, the plain mean up to 12 % high). A group without
a probe gets the mean cost per unit of work of the probed groups.

The costs grow with the constraint count, so a probe covers the lowest, middle and highest
percentage of the spec (folds 1-3 each): their mean is the mean over the percentage grid,
which is evenly spaced. LKM and SKM with a fixed init fit once per task and reuse that fit
for every cell (thousands per task), so their probe times the fit and the per-cell work
(constraint sample, satisfied fraction, scores) apart: a task costs one fit plus its cells.
The settings of a cell share its constraint sample and, with Seeding and the gap statistic,
its null fits (:mod:`pcskm.experiments.selection_scores`); a probe times them apart too, so
that a task counts them once per cell. Times are CPU time of this process: the estimate is
the compute of an otherwise idle core.
"""

import statistics
import time
from dataclasses import dataclass, replace

from pcskm.algorithms.constraints import Constraints
from pcskm.experiments import cells
from pcskm.experiments.cells import Block, Task
from pcskm.experiments.selection_scores import CellScores, SelectionScorer, null_key

MAX_ROUNDS = 25  # at most one round per run of the paper spec


@dataclass
class Estimate:
    core_seconds: float  # compute time of all tasks on one core
    task_seconds: list  # compute time of each task on one core, in the order of the tasks
    n_probes: int
    n_groups: int
    probe_seconds: float


@dataclass(frozen=True)
class _Cost:
    per_cell: float  # seconds per cell
    per_task: float  # seconds per task (the shared fit of LKM/SKM with a fixed init)
    sampling: float  # seconds per cell drawing and building the constraints (in per_cell)
    nulls: float = 0.0  # seconds per cell fitting the Seeding null data sets (in per_cell)


def _group(setting, kind, n_samples, n_features):
    return (n_samples, n_features, setting.estimator, setting.params,
            setting.init == cells.SEEDING, setting.shares_fits,
            len(setting.sparsities) if setting.is_sparse else 0, kind,
            setting.cv_folds, setting.gap_permutations)


def _seconds(function, *args):
    start = time.process_time()
    function(*args)
    return time.process_time() - start


def _draw_constraints(task):
    """Draw and build the constraint sample of every cell of ``task`` (as ``evaluate``)."""
    setting = task.settings[0]
    cv = cells.protocol(setting.dataset, setting.data_dir, setting.seed, setting.n_folds)
    n_samples = cells.dataset(setting.dataset, setting.data_dir).n_samples
    for block in task.blocks:
        for run in block.runs:
            for fold in task.fold_list:
                Constraints.from_pairs(
                    *cv.constraints(block.kind, block.percent, run, fold), n_samples=n_samples)


def _null_fits(task):
    """Seconds spent fitting the Seeding null data sets of every cell of ``task`` (as
    ``evaluate``; each cell's constraints and Seeding centres are drawn first, untimed)."""
    setting = task.settings[0]
    cv = cells.protocol(setting.dataset, setting.data_dir, setting.seed, setting.n_folds,
                        setting.design)
    fitter = cells.Fitter(setting)
    scorer = SelectionScorer(setting, fitter, cv.permutation_seed())
    seconds = 0.0
    for block in task.blocks:
        for run in block.runs:
            for fold in task.fold_list:
                cell = (block.kind, block.percent, run, fold, setting.algorithm, setting.init)
                constraints = Constraints.from_pairs(*cv.constraints(*cell),
                                                     n_samples=fitter.X.shape[0])
                centres, _ = fitter.initial_state(constraints, cv.seeding_seed(*cell))
                seconds += _seconds(scorer.null_summary, centres, CellScores(constraints, None))
    return seconds


def _probe(setting, kind, percents, run, warm):
    """The :class:`_Cost` of ``setting`` and constraint ``kind``, from cells of ``run``."""
    if setting.shares_fits:
        block = (Block(kind=kind, percent=percents[len(percents) // 2], runs=(run,)),)
        if warm:
            cells.evaluate(Task((setting,), block))
        fit = _seconds(cells.fit, setting)
        timed = Task((setting,), block)
        cell = max(_seconds(cells.evaluate, timed) - fit, 0.0) / timed.n_cells
        return _Cost(per_cell=cell, per_task=fit,
                     sampling=_seconds(_draw_constraints, timed) / timed.n_cells)
    blocks = tuple(Block(kind=kind, percent=p, runs=(run,)) for p in percents)
    timed = Task((setting,), blocks, folds=(1, 2, 3))
    if warm:  # also builds the folds' constraint pools, a one-off cost per process
        cells.evaluate(Task((setting,), blocks[:1], folds=timed.folds))
    nulls = (_null_fits(timed) / timed.n_cells
             if setting.gap_permutations and setting.init == cells.SEEDING else 0.0)
    return _Cost(per_cell=_seconds(cells.evaluate, timed) / timed.n_cells, per_task=0.0,
                 sampling=_seconds(_draw_constraints, timed) / timed.n_cells, nulls=nulls)


def _trimmed_mean(values):
    """Mean of the middle 60 % (the mean of all of them if fewer than 5)."""
    values = sorted(values)
    cut = len(values) // 5
    return statistics.fmean(values[cut:len(values) - cut])


def _shared_nulls(task, keys, costs):
    """Seconds per cell of the Seeding null fits that the probes of ``task``'s settings
    counted more than once: the settings of a cell with the same :func:`null_key` share
    them (paired design)."""
    shared = {}
    for setting, key in zip(task.settings, keys, strict=True):
        if key in costs and costs[key].nulls:
            estimator = cells.make_estimator(setting, cells.SEEDING)
            shared.setdefault(null_key(estimator), []).append(costs[key].nulls)
    return sum((len(nulls) - 1) * statistics.fmean(nulls) for nulls in shared.values())


def _parts(task, view):
    """What each setting of ``task`` adds to a group: ``(key, setting, n_cells, n_tasks)``
    per group (with ``cv_runs``, the cells of the later runs are those of the setting
    without CV, a group of their own), and the group key of each setting."""
    attrs = view.layout.groups[task.dataset].attrs
    kind = task.blocks[0].kind

    def key_of(setting):
        return _group(setting, kind, attrs["n_samples"], attrs["n_features"])

    parts, keys = [], []
    for setting in task.settings:
        keys.append(key_of(setting))
        with_cv = sum(setting.has_cv(run) for block in task.blocks
                      for run in block.runs) * len(task.fold_list)
        if setting.cv_folds and with_cv < task.n_samples:
            plain = replace(setting, cv_folds=0, cv_runs=None)
            parts.append((key_of(plain), plain, task.n_samples - with_cv, 0))
            parts.append((keys[-1], setting, with_cv, 1))
        else:
            parts.append((keys[-1], setting, task.n_samples, 1))
    return parts, keys


def _task_seconds(task, parts, keys, costs, rate):
    """Estimated compute of ``task`` from the groups' costs (``rate``: seconds per cell and
    unit of work, for a group without a probe)."""
    seconds = 0.0
    for key, _, n_cells, n_tasks in parts:
        cost = costs.get(key, _Cost(per_cell=rate * _units(key), per_task=0.0, sampling=0.0))
        seconds += cost.per_cell * n_cells + cost.per_task * n_tasks
    # one constraint sample per cell in the paired design; one per setting in the unpaired
    # one, as the probes time them (docs/method/protocol.md §6)
    sampling = [costs[key].sampling for key in keys if key in costs]
    if sampling and task.settings[0].design == "paired":
        seconds -= (len(keys) - 1) * statistics.fmean(sampling) * task.n_samples
        seconds -= _shared_nulls(task, keys, costs) * task.n_samples
    return seconds


def _units(key):
    """Points times s entries of a group: its work per cell, for a group without a probe."""
    return key[0] * max(key[6], 1)


def _probe_groups(tasks, parts, spec, budget_seconds):
    """Probe the task groups of ``tasks`` (``parts``: their :func:`_parts`) for
    ``budget_seconds``; returns the :class:`_Cost` of every probed group (by group key), the
    probes' wall time and the number of groups."""
    groups = {}  # group key -> [setting, kind, cells]
    for task, (task_parts, _) in zip(tasks, parts, strict=True):
        for key, setting, n_cells, _ in task_parts:
            groups.setdefault(key, [setting, task.blocks[0].kind, 0])[2] += n_cells
    ordered = sorted(spec.percentages)
    percents = tuple(dict.fromkeys((ordered[0], ordered[len(ordered) // 2], ordered[-1])))
    order = sorted((key for key in groups if groups[key][2]), key=lambda key: -groups[key][2])
    start = time.perf_counter()
    samples = {}
    for round_, key in ((r, key) for r in range(MAX_ROUNDS) for key in order):
        if time.perf_counter() - start > budget_seconds:
            break
        setting, kind = groups[key][:2]
        runs = spec.n_runs if setting.cv_runs is None else min(setting.cv_runs, spec.n_runs)
        samples.setdefault(key, []).append(
            _probe(setting, kind, percents, run=round_ % runs, warm=round_ == 0))
    costs = {key: _Cost(*(_trimmed_mean([getattr(c, field) for c in probes])
                          for field in ("per_cell", "per_task", "sampling", "nulls")))
             for key, probes in samples.items()}
    return costs, time.perf_counter() - start, len(groups)


def estimate(tasks, view, spec, budget_seconds=60.0):
    """Estimated one-core compute time of ``tasks``, in all and task by task (an
    :class:`Estimate`)."""
    parts = [_parts(task, view) for task in tasks]
    costs, probe_seconds, n_groups = _probe_groups(tasks, parts, spec, budget_seconds)
    # unprobed groups: seconds per (cell x points x s entries) of the probed ones
    rate = sum(costs[k].per_cell / _units(k) for k in costs) / max(len(costs), 1)
    seconds = [_task_seconds(task, *task_parts, costs, rate)
               for task, task_parts in zip(tasks, parts, strict=True)]
    return Estimate(core_seconds=sum(seconds), task_seconds=seconds, n_probes=len(costs),
                    n_groups=n_groups, probe_seconds=probe_seconds)

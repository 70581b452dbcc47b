"""Run-time estimate for ``pcskm run --dry-run``: time a few real cells in this process.

Tasks are grouped by what drives their cost: the data set's shape, the constraint kind, the
settings the task evaluates together (estimator, parameters, Seeding or a fixed init, the s
grid, the selection scores) and whether its runs get CV scores. A probe evaluates a group's
settings together on real cells, as a worker evaluates a task, so everything the settings of
a cell share is counted once, as in a run: the constraint sample, Seeding's centres and null
fits, the PCKM clusterings and s paths (``algorithms._sparse.FitCache``).
Timing settings one by one and taking the sharing off afterwards priced the shared work in
one mix of cells and not another (docs/guide/paper-study.md, Estimating).

A probe evaluates one run of the group at the lowest, middle and highest percentage of the spec
(folds 1-3 each; the costs grow with the constraint count and the percentage grid is evenly
spaced, so their mean is the mean over the grid): once untimed the first time (loading, Numba
caches), then timed, in rounds over the group's runs (every group once per round) while the
budget lasts, at most ``MAX_ROUNDS``; a group costs the mean of the
middle 60 % of its rounds. The groups of the most work (samples times :func:`_units`, which
counts the constraints) are timed first. Timing noise of millisecond probes on a shared machine
is large and one-sided; a plain median leaves out the runs that really take more iterations
(checked against the measured compute of a partial run of the paper spec: the median was 15 %
low, the plain mean up to 12 % high). A group without a probe gets the mean cost per unit of
work of the probed groups, and the dry run says how much of the estimate they make. LKM and SKM
with a fixed init fit once per task and reuse that fit for every cell, so a probe times that
fit apart: a task costs its fits plus its cells. Times are CPU time of this process: the
estimate is the compute of an otherwise idle core.

The rounds stop early once every group has ``MIN_ROUNDS`` probes and the standard error of
the estimate, from the spread of each group's probes, is below ``TARGET_ERROR`` of it, and
after any round once the probes have taken ``RUN_SHARE`` of the compute the estimate so far
gives the run on its workers: a dry run of a small spec costs a fraction of the run, not the
whole budget (54-66 s of probes priced a quick run of about two minutes). The
probes and the start times are kept per machine and code version (:class:`Kept`, in the user
cache folder) and reused by the next dry run: a group with ``MIN_ROUNDS`` kept probes, or
whose rounds for the same spec stopped by the two rules above (not by the time budget), is not
timed again (``pcskm run --dry-run --recalibrate`` times everything afresh).
"""

import contextlib
import hashlib
import json
import math
import os
import platform
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from pcskm.experiments import cells
from pcskm.experiments.cells import Block, Task

MAX_ROUNDS = 25  # at most one round per run of the paper spec
MIN_ROUNDS = 5  # probes of every group before the rounds may stop (a trimmed mean from 5)
TARGET_ERROR = 0.02  # the rounds stop once the estimate's standard error is this share of it
PROBE_FOLDS = (1, 2, 3)  # of the paper's 10; a spec with fewer folds times its first three
RUN_SHARE = 0.2  # the probes stop after a round once they took this share of the run's compute


def _probe_folds(n_folds):
    """The folds a probe times: :data:`PROBE_FOLDS`, or the first three of fewer folds."""
    return PROBE_FOLDS if n_folds > max(PROBE_FOLDS) else tuple(range(min(n_folds, 3)))


@dataclass
class Estimate:
    core_seconds: float  # compute time of all tasks on one core
    task_seconds: list  # compute time of each task on one core, in the order of the tasks
    n_probes: int
    n_groups: int
    probe_seconds: float
    extrapolated_seconds: float = 0.0  # of core_seconds, in groups without a probe
    n_kept: int = 0  # of n_probes, groups whose probes were kept from an earlier dry run


@dataclass(frozen=True)
class _Cost:
    per_sample: float  # seconds per constraint sample (a run and fold of a block), all settings
    per_task: float  # seconds per task: the one fit of each LKM/SKM with a fixed init


class _SettingKey(NamedTuple):
    estimator: str
    params: tuple
    seeded: bool
    shares_fits: bool
    n_sparsity: int  # s values of the grid, 0 for an algorithm without one
    cv_folds: int
    gap_permutations: int
    design: str


class _GroupKey(NamedTuple):
    n_points: int
    n_features: int
    n_clusters: int
    n_constraints: float  # per sample, the mean over the spec's percentages
    kind: str
    settings: tuple  # a _SettingKey per setting of the task
    with_cv: bool  # the samples of runs with CV scores


def _setting_key(setting):
    return _SettingKey(setting.estimator, setting.params, setting.init == cells.SEEDING,
                       setting.shares_fits,
                       len(setting.sparsities) if setting.is_sparse else 0,
                       setting.cv_folds, setting.gap_permutations, setting.design)


def _has_cv(settings, run):
    return any(setting.has_cv(run) for setting in settings)


def mean_constraints(n_points, spec):
    """The mean constraint count of a sample over the spec's percentages: P1 pct / 100 with
    P1 = t(t - 1) / 2 pairs of the t training points of a fold (docs/method/protocol.md §4),
    t about n (K - 1) / K for K folds."""
    t = n_points * (spec.n_folds - 1) / spec.n_folds
    return t * (t - 1) / 2 * float(np.mean(spec.percentages)) / 100


def _parts(task, view, spec):
    """The groups of ``task``: ``(key, n_samples)`` for its constraint samples in runs with
    CV scores and in runs without. A run of a block that some settings skip (``Task.skip``:
    the done cells of a partly done chunk) counts for the share of the settings that compute
    it, since a group's cost per sample is that of all its settings."""
    attrs = view.layout.groups[task.dataset].attrs
    settings = tuple(_setting_key(setting) for setting in task.settings)
    samples = {True: 0.0, False: 0.0}
    for b, block in enumerate(task.blocks):
        for run in block.runs:
            share = sum((index, b, run) not in task.skip for index in range(len(settings)))
            samples[_has_cv(task.settings, run)] += share / len(settings) * len(task.fold_list)
    n = attrs["n_samples"]
    return [(_GroupKey(n, attrs["n_features"], attrs["n_clusters"], mean_constraints(n, spec),
                       task.blocks[0].kind, settings, cv), count)
            for cv, count in samples.items() if count]


def _seconds(function, *args):
    start = time.process_time()
    function(*args)
    return time.process_time() - start


def _probe(settings, kind, percents, run, warm):
    """The :class:`_Cost` of ``settings`` evaluated together on cells of ``run``."""
    blocks = tuple(Block(kind=kind, percent=percent, runs=(run,)) for percent in percents)
    folds = _probe_folds(settings[0].n_folds)
    timed = Task(settings, blocks, folds=folds)
    if warm:  # also builds the folds' constraint pools, a one-off cost per process
        cells.evaluate(Task(settings, blocks[:1], folds=folds))
    fits = sum(_seconds(cells.fit, setting) for setting in settings if setting.shares_fits)
    seconds = _seconds(cells.evaluate, timed)
    return _Cost(per_sample=max(seconds - fits, 0.0) / timed.n_samples, per_task=fits)


def _trimmed_mean(values):
    """Mean of the middle 60 % (the mean of all of them if fewer than 5)."""
    values = sorted(values)
    cut = len(values) // 5
    return statistics.fmean(values[cut:len(values) - cut])


def _units(key):
    """The work of a sample of a group, to order the probes and to price a group without
    one: an iteration of a fit costs about (points + constraints) x clusters x features
    (distances of every point, penalties of every constraint, to every centre), times the s
    entries of every setting. Points times s entries alone left the constraints out, and
    priced the untimed yeast of the extended spec (1,479 points, 88,778 constraints at 10 %)
    far below its cost (docs/guide/paper-study.md, Estimating)."""
    return ((key.n_points + key.n_constraints) * key.n_clusters * key.n_features
            * sum(max(setting.n_sparsity, 1) for setting in key.settings))


def _task_seconds(parts, costs, rate):
    """Estimated compute of a task from its :func:`_parts` and the groups' costs (``rate``:
    seconds per sample and unit of work, for a group without a probe); the fits of its
    LKM/SKM with a fixed init count once."""
    seconds = 0.0
    for index, (key, n_samples) in enumerate(parts):
        cost = costs.get(key, _Cost(per_sample=rate * _units(key), per_task=0.0))
        seconds += cost.per_sample * n_samples + (cost.per_task if index == 0 else 0.0)
    return seconds


def _relative_error(samples, weights):
    """The standard error of sum(weight x mean probe cost) over the groups of ``samples``
    (group key -> its :class:`_Cost` probes; ``weights``: group key -> samples), as a share
    of that sum: each group's mean has the standard error sd / sqrt(probes)."""
    total = variance = 0.0
    for key, probes in samples.items():
        costs = [c.per_sample * weights[key] + c.per_task for c in probes]
        total += statistics.fmean(costs)
        variance += statistics.variance(costs) / len(costs) if len(costs) > 1 else math.inf
    return math.sqrt(variance) / total if total > 0 else 0.0


def _estimated(parts, samples):
    """The compute of the tasks of ``parts`` from the probes so far (``samples``: group key ->
    its probes)."""
    costs = {key: _group_cost(probes) for key, probes in samples.items() if probes}
    rate = _unprobed_rate(costs)
    return sum(_task_seconds(task_parts, costs, rate) for task_parts in parts)


def _probe_groups(tasks, parts, spec, budget_seconds, kept=None, workers=1,
                  before_probes=lambda: None):
    """Probe the task groups of ``tasks`` (``parts``: their :func:`_parts`) for
    ``budget_seconds``, rounds that stop once the estimate is precise enough or the probes
    took :data:`RUN_SHARE` of the estimated compute on ``workers`` (module docstring);
    returns the :class:`_Cost` of every probed group (by group key), the probes' wall time,
    the number of groups and the number of them taken from ``kept`` (a :class:`Kept`, whose
    probes are reused and which gets the new ones)."""
    groups = {}  # group key -> [settings, kind, runs of the group, cells]
    weights = {}  # group key -> samples in the tasks
    for task, task_parts in zip(tasks, parts, strict=True):
        for key, n_samples in task_parts:
            if key not in groups:
                runs = [run for run in range(spec.n_runs)
                        if _has_cv(task.settings, run) == key.with_cv]
                groups[key] = [task.settings, task.blocks[0].kind, runs, 0]
            groups[key][3] += n_samples * len(task.settings)
            weights[key] = weights.get(key, 0.0) + n_samples
    ordered = sorted(spec.percentages)
    percents = tuple(dict.fromkeys((ordered[0], ordered[len(ordered) // 2], ordered[-1])))
    # the groups of the most work first, so that a short budget times those that weigh most
    order = sorted(groups, key=lambda key: -groups[key][3] * _units(key))
    samples = {key: kept.reusable(key, spec) for key in order} if kept is not None else {}
    samples = {key: probes for key, probes in samples.items() if probes}
    reused = len(samples)
    timed = [key for key in order if key not in samples]
    if timed:
        before_probes()
    start = time.perf_counter()
    settled = True  # the rounds end by their rules, not by the time budget
    for round_ in range(MAX_ROUNDS):
        if (round_ >= MIN_ROUNDS and samples
                and _relative_error(samples, weights) < TARGET_ERROR):
            break
        if round_ and timed and (time.perf_counter() - start
                                 > RUN_SHARE * _estimated(parts, samples) / workers):
            break
        for key in timed:
            if time.perf_counter() - start > budget_seconds:
                settled = False
                break
            settings, kind, runs, _ = groups[key]
            samples.setdefault(key, []).append(
                _probe(settings, kind, percents, runs[round_ % len(runs)], warm=round_ == 0))
        else:
            continue
        break
    if kept is not None:
        for key in timed:
            kept.add_probes(key, samples.get(key, []), spec if settled else None)
    costs = {key: _group_cost(probes) for key, probes in samples.items()}
    return costs, time.perf_counter() - start, len(groups), reused


def _group_cost(probes):
    """A group's :class:`_Cost`: the trimmed mean of its probes, field by field."""
    return _Cost(*(_trimmed_mean([getattr(c, field) for c in probes])
                   for field in ("per_sample", "per_task")))


def _unprobed_rate(costs):
    """Seconds per sample and unit of work (:func:`_units`) of the probed groups, the
    price of a group without a probe."""
    return sum(costs[k].per_sample / _units(k) for k in costs) / max(len(costs), 1)


def estimate(tasks, view, spec, budget_seconds=60.0, kept=None, workers=1,
             before_probes=lambda: None):
    """Estimated one-core compute time of ``tasks``, in all and task by task (an
    :class:`Estimate`); ``kept``: a :class:`Kept` calibration to reuse and add to;
    ``workers``: those of the run, whose compute the probes take at most about
    :data:`RUN_SHARE` of; ``before_probes()`` is called before the first probe, outside the
    budget, and not at all when every group's probes are reused (:meth:`Kept.reusable`)."""
    parts = [_parts(task, view, spec) for task in tasks]
    costs, probe_seconds, n_groups, reused = _probe_groups(tasks, parts, spec, budget_seconds,
                                                           kept, workers, before_probes)
    rate = _unprobed_rate(costs)
    seconds = [_task_seconds(task_parts, costs, rate) for task_parts in parts]
    priced = [_task_seconds([(key, n) for key, n in task_parts if key not in costs], {}, rate)
              for task_parts in parts]
    return Estimate(core_seconds=sum(seconds), task_seconds=seconds, n_probes=len(costs),
                    n_groups=n_groups, probe_seconds=probe_seconds,
                    extrapolated_seconds=sum(priced), n_kept=reused)


def task_weights(tasks, view, spec, kept=None):
    """The cost of each task relative to the others, for the time left that a run shows
    (:class:`pcskm.runner.progress.Progress`), with no probe timed: the dry run's estimate
    from the groups of ``kept`` (a :class:`Kept` calibration of this machine and code), or,
    where no group has a kept probe, the work units of the task's samples (:func:`_units`).
    Counting cells alone took the cells of a light task for those of a heavy one."""
    return kept_estimate(tasks, view, spec, kept)[0]


def kept_estimate(tasks, view, spec, kept=None):
    """``(weights, calibrated)``: :func:`task_weights`, and whether they are seconds (some
    group of ``tasks`` has probes in ``kept``) rather than work units."""
    parts = [_parts(task, view, spec) for task in tasks]
    costs = {}
    if kept is not None:
        for task_parts in parts:
            for key, _ in task_parts:
                probes = kept.probes(key)
                if probes and key not in costs:
                    costs[key] = _group_cost(probes)
    rate = _unprobed_rate(costs) if costs else 1.0
    return [_task_seconds(task_parts, costs, rate) for task_parts in parts], bool(costs)


def _machine():
    """This machine: its name, CPU model and cores."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{platform.node()} {cpu} {os.cpu_count()} cores"


def code_digest(preload=()):
    """A digest of the code a calibration times: pcskm's Python files (the package's
    ``algorithms``, ``experiments`` and ``runner``), the ``preload`` files and the versions
    of Python, NumPy and Numba."""
    import numba

    package = Path(__file__).resolve().parents[1]
    found = hashlib.sha256(f"{platform.python_version()} {np.__version__} "
                           f"{numba.__version__}".encode())
    files = sorted(path for folder in ("algorithms", "experiments", "runner")
                   for path in (package / folder).rglob("*.py"))
    for path in [*files, *map(Path, preload)]:
        found.update(str(path.relative_to(package) if path.is_relative_to(package)
                         else path).encode())
        found.update(path.read_bytes())
    return found.hexdigest()


def kept_folder():
    """Where kept calibrations go: ``<user cache>/pcskm/calibration`` (as the Numba cache,
    :func:`pcskm.algorithms._jit.default_cache_folder`)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("pcskm")) / "calibration"


class Kept:
    """The calibration kept for this machine and code version: the probes of every group
    timed (up to ``MAX_ROUNDS`` each) and the start times, in one JSON file named by a
    digest of both (:func:`code_digest`) in :func:`kept_folder`. A file that cannot be read
    is taken as empty; :meth:`save` replaces it whole."""

    def __init__(self, preload=(), folder=None, fresh=False):
        name = hashlib.sha256(f"{_machine()} {code_digest(preload)}".encode()).hexdigest()
        self.path = Path(folder or kept_folder()) / f"{name[:32]}.json"
        self.data = {"probes": {}, "starts": {}, "settled": {}}
        if not fresh:
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                found = json.loads(self.path.read_text())
                self.data = {"probes": dict(found["probes"]), "starts": dict(found["starts"]),
                             "settled": dict(found.get("settled", {}))}

    def probes(self, key):
        """The kept probes of the group ``key``."""
        return [_Cost(*cost) for cost in self.data["probes"].get(repr(key), [])]

    def reusable(self, key, spec):
        """The kept probes of the group ``key`` that a dry run of ``spec`` takes instead of
        timing the group (else ``[]``): ``MIN_ROUNDS`` of them, or those of the rounds of a
        dry run of the same spec that stopped by the precision or the run's share (module
        docstring), not by the time budget."""
        probes = self.probes(key)
        settled = repr(key) in self.data["settled"].get(spec.hash(), ())
        return probes if len(probes) >= MIN_ROUNDS or (probes and settled) else []

    def add_probes(self, key, probes, settled_for=None):
        """Keep ``probes`` of the group ``key`` (the last ``MAX_ROUNDS``); ``settled_for``:
        the spec whose dry run's rounds ended by their rules."""
        kept = self.data["probes"].get(repr(key), [])
        both = kept + [[c.per_sample, c.per_task] for c in probes]
        self.data["probes"][repr(key)] = both[-MAX_ROUNDS:]
        if settled_for is not None:
            settled = self.data["settled"].setdefault(settled_for.hash(), [])
            settled.extend(k for k in [repr(key)] if k not in settled)

    def start(self, name):
        """The kept seconds of the start ``name`` (a worker's, the cluster's), else None."""
        return self.data["starts"].get(name)

    def add_start(self, name, seconds):
        self.data["starts"][name] = seconds

    def save(self):
        """Write the file (:func:`keep_json`)."""
        keep_json(self.path, self.data)


def keep_json(path, data):
    """Write ``data`` as JSON to ``path`` whole (a temporary file renamed over it); a folder
    that cannot be written keeps nothing."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data))
        os.replace(temporary, path)


_FRESH_WORKER = """
import pickle, sys
import distributed
import numpy as np

from pcskm.experiments import cells
from pcskm.runner.preload import import_files
preload, tasks = pickle.load(sys.stdin.buffer)
import_files(preload)
for task in pickle.loads(tasks):
    cells.evaluate(task)
"""


def worker_start_seconds(tasks, preload=()):
    """Wall time of a fresh Python process that does what a new worker does before its first
    result: import Dask's worker, pcskm's cells and the ``preload`` files (``--preload``),
    load the Numba kernels of ``tasks`` from the cache (compiled beforehand) and evaluate one
    cell of each (algorithm, init) (:func:`pcskm.runner.compiling.warm_up_tasks`). The
    workers start side by side, so a run pays it once; the probes, timed in a warm process,
    do not count it (docs/guide/paper-study.md, Estimating). Raises
    :class:`WorkerStartFailed` if that process fails."""
    import pickle
    import subprocess
    import sys

    from .compiling import warm_up_tasks

    message = pickle.dumps(([str(file) for file in preload],
                            pickle.dumps(warm_up_tasks(tasks))))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _FRESH_WORKER], input=message,
                          capture_output=True)
    if done.returncode:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise WorkerStartFailed(lines[-1] if lines else f"exit status {done.returncode}")
    return time.perf_counter() - start


class WorkerStartFailed(RuntimeError):
    """The fresh process of :func:`worker_start_seconds` failed; the message is its last
    line of error."""


def process_age_seconds():
    """Seconds since this process started: at the dry run's start, what starting Python and
    importing pcskm's command line cost, which a run pays as well. On Linux from the clock
    ticks of ``/proc/self/stat`` against the boot-time clock, to 1/100 s; psutil adds the
    boot time to them in whole seconds, which made a process up to 1 s older than it was."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    import psutil

    return max(0.0, time.time() - psutil.Process().create_time())


def cluster_start_seconds(n_workers):
    """Wall time to start and close a local Dask cluster of ``n_workers`` processes
    (:func:`pcskm.runner.clusters.dask_client`), as a run on this machine does."""
    from .clusters import dask_client

    start = time.perf_counter()
    with dask_client(workers=n_workers):
        pass
    return time.perf_counter() - start


@dataclass(frozen=True)
class RunTime:
    """The dry run's estimated run time (docs/guide/paper-study.md, Small specs): what the
    run pays once before the workers compute, then the compute and the writing, both done by
    the workers, each its tasks' (the client only marks done). Every part in seconds of wall
    time: the compute and the writing on an otherwise idle machine, the starts as timed by
    the dry run, at the load of its moment."""

    process: float  # starting Python and importing pcskm's command line
    kernels: float  # the client loading the kernels from the cache and evaluating a cell
    cluster: float  # starting (and closing) the Dask cluster; 0 when not timed
    worker: float  # a fresh worker's start before its first result (side by side: once)
    compute: float  # calibrated compute / workers / ratio
    writing: float  # the workers' writing (sizes.write_seconds) / workers

    @property
    def fixed(self):
        """What the run pays once, whatever the size of the spec."""
        return self.process + self.kernels + self.cluster + self.worker

    @property
    def seconds(self):
        return self.fixed + self.compute + self.writing

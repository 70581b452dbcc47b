"""Tasks from a spec: the chunks still to compute, grouped and batched.

A block is the runs to compute of one (data set, algorithm, init, kind, percent), all folds.
The unit the planner never splits is the cube's chunk, one (data set, kind, percent) with
every algorithm, init, run and fold (docs/reference/cube-schema.md, Chunks and size): each
chunk that a run computes is in exactly one task, so that the task can write it whole. A
chunk's blocks are those of the settings (algorithm, init) that miss any of its cells, each
with the runs that any of them misses; the task skips the done cells among them
(``Task.skip``), so a run computes exactly the missing cells, and the chunk's one writer
keeps the done cells as stored. A task holds whole chunks of one data set with the
same settings, so that in the paired design a cell's constraint sample is drawn once for
all of them (D13; in the unpaired design each (algorithm, init) draws its own,
docs/method/protocol.md §6). Chunks are merged into tasks, or a kind's row of chunks cut,
until a task holds about ``min_work`` units of work (tens of seconds of compute), so that
scheduling, transfer and the client's handling of each result stay small against the
compute.
"""

import fnmatch
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from pcskm.experiments.cells import Block, Setting, Task
from pcskm.experiments.protocol import pct10

from .store import applicable

SELECT_KEYS = ("dataset", "algorithm", "init", "kind", "percent")
# Work of a task: the fits it computes (``Task.n_fits``: one per s, a shared fit once per
# task, unlike the fits counted for users by :func:`fits`) times points clustered. A unit
# takes about 0.6 us on one core (paper spec, this machine), so 50 million units are about
# 30 s of compute: the paper spec is 1,118 tasks. Smaller runs are cut into at least
# MIN_TASKS tasks when they have as many chunks (a task holds at least one), so that two
# workers finish within a task or so of each other.
MIN_WORK = 50 * 1000 * 1000
MIN_TASKS = 64


def parse_only(text):
    """``"dataset=iris|brodinova-*,algorithm=PCSKM"`` -> ``{"dataset": ["iris",
    "brodinova-*"], "algorithm": ["PCSKM"]}`` (values are fnmatch patterns; a key may
    repeat)."""
    selection = {}
    if not text:
        return selection
    for item in text.split(","):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not value:
            raise ValueError(f"--only: expected key=value, got {item!r}")
        if key not in SELECT_KEYS:
            raise ValueError(f"--only: unknown key {key!r}; use {', '.join(SELECT_KEYS)}")
        selection.setdefault(key, []).extend(v for v in value.split("|") if v)
    return selection


def format_only(selection):
    """The ``--only`` text of a selection (the inverse of :func:`parse_only`)."""
    return ",".join(f"{key}={'|'.join(map(str, values))}" for key, values in selection.items())


def matches(selection, key, value):
    """Whether ``value`` of ``key`` (dataset, algorithm, ...) is in ``selection`` (parsed
    ``--only``; a key it does not name matches everything)."""
    patterns = selection.get(key)
    if not patterns:
        return True
    if key == "percent":
        return any(pct10(float(p)) == pct10(value) for p in patterns)
    return any(fnmatch.fnmatchcase(str(value), p) for p in patterns)


def check_selection(spec, selection):
    """Raise when a ``--only`` pattern matches nothing in the spec."""
    values = {
        "dataset": spec.datasets, "algorithm": [v.name for v in spec.algorithms],
        "init": spec.inits, "kind": tuple(dict.fromkeys((*spec.kinds, *spec.seeding_kinds))),
        "percent": spec.percentages,
    }
    for key, patterns in selection.items():
        for pattern in patterns:
            if not any(matches({key: [pattern]}, key, v) for v in values[key]):
                raise ValueError(f"--only {key}={pattern} matches nothing in spec "
                                 f"{spec.name} (it has {', '.join(map(str, values[key]))})")


def fits(task):
    """The fits of the cells ``task`` fills: one per cell and s, i.e. every s of the data set's
    grid for SKM and PCSKM and one for the others; a fit that several cells share (LKM and SKM
    with a deterministic init) counts once per cell (docs/reference/cube-schema.md, Counts)."""
    return sum(task.cells_of(index) * setting.n_sparsity
               for index, setting in enumerate(task.settings))


def spec_cells(spec):
    """The cells of the whole spec: (data set, algorithm, init, kind, percent, run, fold)
    entries it runs (Seeding only with the seeding kinds)."""
    kinds = tuple(dict.fromkeys((*spec.kinds, *spec.seeding_kinds)))
    pairs = sum(applicable(spec, init, kind) for init in spec.inits for kind in kinds)
    return (len(spec.datasets) * len(spec.algorithms) * pairs * len(spec.percentages)
            * spec.n_runs * spec.n_folds)


@dataclass(frozen=True)
class Plan:
    """The tasks of a run and what they fill (cells and fits as defined in
    docs/reference/cube-schema.md, Counts)."""

    tasks: list
    n_cells_total: int  # cells of the selection (of the whole spec without one)
    n_cells_done: int  # of them, done before the run
    n_cells_spec: int = 0  # cells of the whole spec
    selection: dict = field(default_factory=dict)  # --only, parsed
    n_cells_changed: int = 0  # done cells of other code than the current, computed again

    @property
    def n_cells(self):
        """Cells to compute."""
        return sum(task.n_cells for task in self.tasks)

    @property
    def n_fits(self):
        """Fits of the cells to compute."""
        return sum(fits(task) for task in self.tasks)

    def scope(self):
        """``"in the spec"``, or with ``--only`` ``"in the selection kind=random (of 9000 in
        the spec)"``: what ``n_cells_total`` counts."""
        if not self.selection:
            return "in the spec"
        return (f"in the selection {format_only(self.selection)} (of {self.n_cells_spec} "
                "in the spec)")


def settings(spec, cube, data_dir=None):
    """Every (data set, algorithm, init) of the spec as a :class:`Setting`."""
    for name in spec.datasets:
        sparsities = cube.layout.groups[name].sparsity
        for variant in spec.algorithms:
            for init in spec.inits:
                yield Setting.from_spec(spec, name, variant, init, sparsities, data_dir)


def work(task, cube, index=None):
    """Units of work of a task (fits computed times points clustered), for batching and
    ordering; of its setting ``index`` alone if given."""
    fits = task.n_fits if index is None else task.fits_of(index)
    return fits * cube.layout.groups[task.dataset].attrs["n_samples"]


def _split(blocks, weights, parts):
    """``blocks`` in ``parts`` consecutive, non-empty pieces of about equal total weight."""
    cumulative = np.cumsum(weights)
    targets = cumulative[-1] * np.arange(1, parts) / parts
    cuts = {int(np.argmin(np.abs(cumulative[:-1] - t))) + 1 for t in targets}
    bounds = [0, *sorted(cuts), len(blocks)]
    return [tuple(blocks[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


def _work(missing, n_samples):
    """Units of work of one chunk: the runs (all folds) each setting of ``missing`` (setting
    -> runs) computes, times its fits (those of the selection scores included, as in run 0:
    with ``cv_runs`` the later runs may have fewer) and the points clustered."""
    return sum(s.n_sparsity * (1 + s.selection_fits(0)) * len(runs) * s.n_folds
               for s, runs in missing.items()) * n_samples


def _task(group, chunks):
    """The task of the settings ``group`` for ``chunks`` (``(block, missing)``: a block of
    the runs any setting misses, and the runs each misses): the other cells are skipped."""
    skip = frozenset((index, b, run) for b, (block, missing) in enumerate(chunks)
                     for index, setting in enumerate(group) for run in block.runs
                     if run not in missing[setting])
    return Task(group, tuple(block for block, _ in chunks), skip=skip)


def _batches(group, chunks, n_samples, min_work):
    """Tasks of one group of settings, each whole chunks (``chunks``: ``(block, missing)``,
    in spec order) of about ``min_work`` or more: a kind's row of chunks of more work is cut
    into pieces of about equal work, smaller rows are merged until they reach it. A chunk is
    never split, so a chunk of more than ``min_work`` is a task of its own."""
    rows = {}  # kind -> its chunks, in spec order
    for chunk in chunks:
        rows.setdefault(chunk[0].kind, []).append(chunk)
    tasks, pending, pending_work = [], [], 0
    for row in rows.values():
        weights = [_work(missing, n_samples) for _, missing in row]
        row_work = sum(weights)
        if row_work >= min_work:
            parts = min(len(row), int(row_work // min_work))
            tasks.extend(_task(group, piece) for piece in _split(row, weights, parts))
            continue
        pending.extend(row)
        pending_work += row_work
        if pending_work >= min_work:
            tasks.append(_task(group, pending))
            pending, pending_work = [], 0
    if pending:
        tasks.append(_task(group, pending))
    return tasks


def _chunk_blocks(spec, cube, selection, force, data_dir, recompute_changed=False):
    """Per data set, the chunks to compute: ``{(kind, percent): {setting: runs}}``, the runs
    each selected setting misses (all with ``force``; with ``recompute_changed`` also those
    done by code other than the current, :meth:`~pcskm.runner.store.views.CubeView.changed`),
    and the selection's cells in all, done and done by other code."""
    needs, total, done, changed = {}, 0, 0, 0
    complete = {name: cube.complete(name) for name in spec.datasets}
    other = {name: cube.changed(name) if recompute_changed else np.zeros_like(marks)
             for name, marks in complete.items()}
    kinds = tuple(dict.fromkeys((*spec.kinds, *spec.seeding_kinds)))
    for setting in settings(spec, cube, data_dir):
        if not all(matches(selection, key, getattr(setting, key))
                   for key in ("dataset", "algorithm", "init")):
            continue
        chunks = needs.setdefault(setting.dataset, {})
        for kind in kinds:
            if not applicable(spec, setting.init, kind) or not matches(selection, "kind", kind):
                continue  # Seeding only with seeding_kinds (the others are not applicable)
            for percent in spec.percentages:
                if not matches(selection, "percent", percent):
                    continue
                position = cube.block_index(setting.dataset, setting.algorithm, setting.init,
                                            kind, percent)
                stale = other[setting.dataset][position][:spec.n_runs]
                marks = complete[setting.dataset][position][:spec.n_runs] & ~stale
                total += spec.n_runs * spec.n_folds
                done += int(marks.sum()) * spec.n_folds
                changed += int(stale.sum()) * spec.n_folds
                runs = tuple(range(spec.n_runs)) if force else tuple(
                    int(r) for r in range(spec.n_runs) if not marks[r])
                chunk = chunks.setdefault((kind, float(percent)), {})
                if runs:
                    chunk[setting] = runs
    return needs, total, done, changed


def plan(spec, cube, *, selection=None, force=False, data_dir=None, min_work=None,
         recompute_changed=False):
    """The tasks that fill the spec's missing cells (all selected cells with ``force``); a
    done cell without the selection scores its algorithm gets is missing
    (:meth:`~pcskm.runner.store.views.CubeView.complete`).

    Each chunk (data set, kind, percent) with a missing cell is in exactly one task, with
    the settings that miss any of its cells, each for every run that any of them misses, the
    done cells among them skipped (module docstring). The chunks of a data set with the
    same settings (on a fresh store: every algorithm and init of a constraint kind) are
    grouped into the same tasks. A task
    holds about ``min_work`` units of work; by default ``MIN_WORK``, or less when that would
    give fewer than ``MIN_TASKS`` tasks (small runs still spread over the workers).
    With ``recompute_changed``, a done cell whose code differs from the current one is
    missing too (``pcskm run --recompute-changed``)."""
    selection = selection or {}
    check_selection(spec, selection)
    needs, total, done, changed = _chunk_blocks(spec, cube, selection, force, data_dir,
                                                recompute_changed)
    groups = {}  # (data set, settings) -> (block, missing) per chunk, in spec order
    for name, chunks in needs.items():
        for (kind, percent), missing in chunks.items():
            if missing:
                runs = tuple(sorted(set().union(*missing.values())))
                groups.setdefault((name, tuple(missing)), []).append(
                    (Block(kind, percent, runs), missing))
    n_samples = {name: cube.layout.groups[name].attrs["n_samples"] for name in needs}
    if min_work is None:
        total_work = sum(_work(missing, n_samples[name])
                         for (name, _), chunks in groups.items() for _, missing in chunks)
        min_work = max(1, min(MIN_WORK, total_work // MIN_TASKS))
    tasks = []
    for (name, group), chunks in groups.items():
        tasks.extend(_batches(group, chunks, n_samples[name], min_work))
    tasks = in_writing_order(tasks, cube, spec.kinds)
    return Plan(tasks=tasks, n_cells_total=total, n_cells_done=0 if force else done,
                n_cells_spec=spec_cells(spec), selection=selection,
                n_cells_changed=0 if force else changed)


def in_writing_order(tasks, cube, kinds):
    """``tasks`` ordered so that the cube's chunks fill one after the other: data set by
    data set, the one with the most work first, then constraint kind by kind (a chunk holds
    one kind of one data set, :mod:`pcskm.runner.store.writer`), the largest task first within a
    kind. The last tasks are those of the data set with the least work, so the workers
    finish close together."""
    units = [work(task, cube) for task in tasks]
    dataset_work = Counter()
    for task, unit in zip(tasks, units, strict=True):
        dataset_work[task.dataset] += unit
    kind_order = {kind: i for i, kind in enumerate(kinds)}
    order = sorted(range(len(tasks)), key=lambda n: (
        -dataset_work[tasks[n].dataset], tasks[n].dataset,
        kind_order.get(tasks[n].blocks[0].kind, len(kinds)), -units[n]))
    return [tasks[n] for n in order]


def task_key(task, index, token):
    """A readable Dask key, unique within a run (``index``: the task's place in the plan;
    ``token`` distinguishes runs)."""
    first = task.blocks[0]
    return f"pcskm-{task.dataset}-{first.kind}-{first.percent:g}-{index}-{token}"

"""Tasks from a spec: the blocks still to compute, deduplicated and batched.

A block is every run still missing of one (data set, algorithm, init, kind, percent), all
folds. A task is what one worker computes in one go: a rectangle of kinds x percentages of
blocks of one (data set, algorithm, init) with the same runs, batched until it holds about
``min_work`` units of work, so that the fixed cost of a task (scheduling and transfer, a few
milliseconds; the client's writing, 30-50 ms, done while the workers compute) stays small
against its compute. LKM and SKM with DKM++, ROBIN(D) or Maximin(D) use no constraint and
nothing random (``protocol.md`` §6): all their blocks form one task, which fits once and
reuses the fold scores.
"""

import fnmatch
from dataclasses import dataclass

import numpy as np

from experiments.cells import SEEDING, Block, Setting, Task
from experiments.protocol import pct10

SELECT_KEYS = ("dataset", "algorithm", "init", "kind", "percent")
# Work of a task: fits (one per s) times points clustered; a unit takes about 2 us on one
# core (quick spec, this machine), so 500 000 units are about a second of compute.
MIN_WORK = 500 * 1000


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


def _matches(selection, key, value):
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
            if not any(_matches({key: [pattern]}, key, v) for v in values[key]):
                raise ValueError(f"--only {key}={pattern} matches nothing in spec "
                                 f"{spec.name} (it has {', '.join(map(str, values[key]))})")


@dataclass(frozen=True)
class Plan:
    """The tasks of a run and what they fill."""

    tasks: list
    n_cells_total: int  # cells of the spec (selection applied)
    n_cells_done: int

    @property
    def n_cells(self):
        return sum(task.n_cells for task in self.tasks)

    @property
    def n_fits(self):
        return sum(task.n_fits for task in self.tasks)


def settings(spec, cube, data_dir=None):
    """Every (data set, algorithm, init) of the spec as a :class:`Setting`."""
    for name in spec.datasets:
        layout = cube.layout.groups[name]
        for variant in spec.algorithms:
            for init in spec.inits:
                yield Setting(
                    dataset=name, data_dir=None if data_dir is None else str(data_dir),
                    seed=spec.seed, n_folds=spec.n_folds, algorithm=variant.name,
                    estimator=variant.estimator, params=tuple(sorted(variant.params.items())),
                    init=init, max_iter=spec.max_iter, sparsities=layout.sparsity,
                )


def work(task, cube):
    """Units of work of a task (fits times points clustered), for batching and ordering."""
    return task.n_fits * cube.layout.groups[task.setting.dataset].attrs["n_samples"]


def _split(blocks, parts):
    """``blocks`` in ``parts`` consecutive pieces of (nearly) equal length."""
    bounds = np.linspace(0, len(blocks), parts + 1).round().astype(int)
    return [blocks[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:], strict=True) if hi > lo]


def _batches(setting, blocks, n_samples, min_work):
    """Tasks of one setting: rectangles of kinds x percentages with the same runs, each of
    about ``min_work`` or more (a kind's row of percentages is split when it is larger)."""
    if setting.shares_fits:
        return [Task(setting, tuple(blocks))] if blocks else []
    per_cell = setting.n_sparsity * n_samples * setting.n_folds
    rows = {}  # (runs, kind) -> blocks, in spec order
    for block in blocks:
        rows.setdefault((block.runs, block.kind), []).append(block)
    tasks, pending, pending_work, pending_shape = [], [], 0, None
    for (runs, _), row in rows.items():
        row_work = len(runs) * per_cell * len(row)
        shape = (runs, tuple(pct10(b.percent) for b in row))
        if row_work >= min_work:
            tasks.extend(Task(setting, tuple(piece))
                         for piece in _split(row, int(row_work // min_work)))
            continue
        if pending and shape != pending_shape:  # rows merge only into rectangles
            tasks.append(Task(setting, tuple(pending)))
            pending, pending_work = [], 0
        pending.extend(row)
        pending_work += row_work
        pending_shape = shape
        if pending_work >= min_work:
            tasks.append(Task(setting, tuple(pending)))
            pending, pending_work = [], 0
    if pending:
        tasks.append(Task(setting, tuple(pending)))
    return tasks


def plan(spec, cube, *, selection=None, force=False, data_dir=None, min_work=MIN_WORK):
    """The tasks that fill the spec's missing cells (all selected cells with ``force``)."""
    selection = selection or {}
    check_selection(spec, selection)
    tasks, total, done = [], 0, 0
    for setting in settings(spec, cube, data_dir):
        if not all(_matches(selection, key, getattr(setting, attr)) for key, attr in
                   (("dataset", "dataset"), ("algorithm", "algorithm"), ("init", "init"))):
            continue
        layout = cube.layout.groups[setting.dataset]
        done_marks = cube.done[setting.dataset]
        kinds = spec.seeding_kinds if setting.init == SEEDING else spec.kinds
        blocks = []
        for kind in kinds:  # Seeding only with seeding_kinds (the others are not applicable)
            if not _matches(selection, "kind", kind):
                continue
            for percent in spec.percentages:
                if not _matches(selection, "percent", percent):
                    continue
                position = cube.block_index(setting.dataset, setting.algorithm, setting.init,
                                            kind, percent)
                marks = done_marks[position][:spec.n_runs]
                total += spec.n_runs * spec.n_folds
                done += int(marks.sum()) * spec.n_folds
                runs = tuple(range(spec.n_runs)) if force else tuple(
                    int(r) for r in range(spec.n_runs) if not marks[r])
                if runs:
                    blocks.append(Block(kind=kind, percent=float(percent), runs=runs))
        tasks.extend(_batches(setting, blocks, layout.attrs["n_samples"], min_work))
    tasks.sort(key=lambda t: -work(t, cube))  # largest first: better load balance at the end
    return Plan(tasks=tasks, n_cells_total=total, n_cells_done=0 if force else done)


def task_key(task, token):
    """A readable Dask key, unique within a run (``token`` distinguishes runs)."""
    s, first = task.setting, task.blocks[0]
    return f"pcskm-{s.dataset}-{s.algorithm}-{s.init}-{first.kind}-{first.percent:g}-{token}"

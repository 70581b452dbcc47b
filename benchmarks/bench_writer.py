"""The client's and the workers' writing over a spec's plan at 2 to 512 virtual workers: the
runner's design, in which each worker writes its tasks' chunks and the client marks done
(issue 32), on a folder and on object storage.

    python benchmarks/bench_writer.py [SPEC] [--values STORE] [--only SELECTION]
                                      [--workers 2,8,32,128,512] [--designs region,icechunk]
                                      [--flush-seconds 60] [--compute-from runs]

Replays the plan of a fresh store without computing anything: every task gets the result
that a complete store of the spec holds (``--values STORE``, the runner's own values, read
back by benchmarks/_stored_results.py, and the chunks written compared with the stored
ones), or else made-up values of the right shapes (drawn on a grid of a thousand levels:
they compress far less than real results and cost 2.4 to 3 times as much to write:
docs/guide/hpc.md, "How the workers write"). ``W`` virtual workers take the
tasks in plan order, each task taking its share of the spec's compute (the CPU seconds of
a committed run: workers x compute wall x their compute share; ``--compute-from
timed_run``, the default, docs/results/paper/timed_run.csv, an older code's idle run, which
computed half of what the current code does; ``runs``, the run of the committed store,
runs.csv) plus its worker's writing, so that results arrive at the measured per-worker rate.

* ``region``: the runner's code: the worker's side of each task is
  :func:`pcskm.runner.store.writer.write_task` into the store (run once, in this process, its
  CPU added to the task's compute); the client's side is
  :class:`pcskm.runner.store.writer.DoneMarks` taking each receipt, on the virtual clock (its
  marking every ``--flush-seconds`` happens as in a real run of that length), replayed for
  each ``W``.
* ``icechunk``: the runner's code on object storage (benchmarks/_writer_designs.py): the
  store is an Icechunk repository on a moto S3 server of this machine, each task's chunks
  written into a fork of the run's session, the client merging the forks it holds, marking
  done and committing every ``--flush-seconds`` of virtual time; the client's unpickling of
  each receipt (its fork) and pickling of the fork it sends with each task are counted.

The design it replaced, in which the client wrote every chunk, is measured in
docs/guide/hpc.md, "How the workers write" (its "client (before)" rows, from the versions of
this benchmark before the workers wrote).

The CPU time of the client's side of every result is measured (``process_time``, so the
load of the machine does not count), and the client is modelled as one queue: it takes a
result when it arrives and when it has finished the previous one. Printed per design and
``W``: the client's CPU in total and per task, the predicted wall (the last marking's end),
its ratio to the compute per worker, and the client's share of one core per 100 workers
(100 x client CPU / compute; issue 32's goal is below 5 %). What is not counted, in every
design: the client's receiving of the receipts (or forks) from Dask, scheduling, the
progress bar.

``--only`` replays the tasks of the whole plan whose data set, kinds and percents it selects
(default: the eight largest data sets of the paper spec after ionosphere, a quarter of its
compute: the table of docs/guide/hpc.md, "How the workers write"); ``--only ""`` replays all
of it. "without writing" is the wall of the same workers if nothing were written (the plan's
granularity: its largest tasks end last), over the compute per worker.
"""

import argparse
import csv
import functools
import heapq
import os
import tempfile
import time
import types
from dataclasses import fields
from pathlib import Path

import numpy as np
import zarr
from _common import REPO, machine
from _stored_results import StoredResults, differing_chunks
from _writer_designs import RepositoryDesign, _cpu

from pcskm.experiments.cells import BlockResult, TaskResult
from pcskm.experiments.spec import load_spec
from pcskm.runner.store import DoneMarks, chunks_of, prepare, task_target, write_task
from pcskm.runner.store import writer as writer_module
from pcskm.runner.store.sizes import chunks_bytes
from pcskm.runner.tasks import matches, parse_only, plan, work

ONLY = ("dataset=ionosphere|mwm-ttscst|mwm-ttchst|fisheriris|digits048-1|digits048-2|"
        "digits389-1|digits389-2")


def synthetic_result(task, n_features, rng):
    """A :class:`TaskResult` of ``task`` with made-up values of the real shapes and dtypes."""
    blocks = []
    for setting in task.settings:
        per_setting = []
        for block in task.blocks:
            shape = (len(block.runs), len(task.fold_list), setting.n_sparsity)
            values = {}
            for field in fields(BlockResult):
                if field.name == "block":
                    continue
                if field.name in ("n_constraints", "cv_folds_used"):
                    values[field.name] = np.full(shape[:2], 3, np.int64 if field.name ==
                                                 "n_constraints" else np.int8)
                elif field.name == "status":
                    values[field.name] = np.zeros(shape, np.int8)
                elif field.name == "n_iter":
                    values[field.name] = rng.integers(1, 6, shape)
                elif field.name == "weights":
                    values[field.name] = rng.integers(0, 1000, (*shape, n_features)) / 1000
                else:
                    values[field.name] = rng.integers(0, 1000, shape) / 1000
            per_setting.append(BlockResult(block=block, **values))
        blocks.append(per_setting)
    return TaskResult(task=task, blocks=blocks, seconds=0.0)


def written_mib(cube, task):
    """MiB (uncompressed) of the chunks ``task`` writes, as the dry run counts them
    (:func:`pcskm.runner.store.sizes.chunks_bytes`)."""
    return chunks_bytes(cube.layout, chunks_of(task, cube)) / 2**20


def writing_fit(per_task):
    """``(seconds per task, seconds per MiB)``: the least-squares line through the tasks'
    ``(writing CPU seconds, MiB of chunks)``, the model of the dry run's
    :func:`pcskm.runner.store.sizes.write_seconds`."""
    seconds, mib = np.array(per_task).T
    (per_task_seconds, per_mib), *_ = np.linalg.lstsq(
        np.column_stack([np.ones_like(mib), mib]), seconds, rcond=None)
    return per_task_seconds, per_mib


def finish_order(durations, workers):
    """``(finish time, plan position)`` of tasks of ``durations`` taken in plan order by
    ``workers`` workers, in order of finishing."""
    free = [0.0] * workers
    finished = []
    for position, duration in enumerate(durations):
        start = heapq.heappop(free)
        heapq.heappush(free, start + duration)
        finished.append((start + duration, position))
    return sorted(finished)


def client_queue(arrivals, costs, end_cost):
    """When one client, taking the results at ``arrivals`` (times, in order) and spending
    ``costs`` seconds on each then ``end_cost`` at the end, has finished."""
    busy_until = 0.0
    for arrival, cost in zip(arrivals, costs, strict=True):
        busy_until = max(busy_until, arrival) + cost
    return busy_until + end_cost


def compute_seconds(spec_name, record="timed_run"):
    """CPU seconds of a committed run of the spec (workers x compute wall x their compute
    share) and its client's writing seconds, from docs/results/<spec>/<record>.csv:
    ``timed_run`` (the run record of a run from an empty store on an idle machine, of an
    older code for the paper spec; else runs.csv) or ``runs`` (the run of the committed
    store, the current code's compute)."""
    folder = REPO / "docs" / "results" / spec_name
    chosen = folder / f"{record}.csv"
    with open(chosen if chosen.exists() else folder / "runs.csv", newline="") as file:
        row = next(r for r in csv.DictReader(file) if not r["selection"])
    return (int(row["max_workers"]) * float(row["compute_wall_seconds"])
            * float(row["worker_compute_share"]), float(row["write_seconds"]))


class RegionDesign:
    """The runner's design on the benchmark's store: the worker writes the task's chunks
    (:func:`write_task`), the client marks done its receipts (:class:`DoneMarks`)."""

    name = "region"

    def __init__(self, folder, cube):
        self.cube = cube
        self.client_seconds_per_task = 0.0
        self.clock = [0.0]  # the marking's clock only (asyncio and Zarr keep the real one)
        writer_module.time = types.SimpleNamespace(monotonic=lambda: self.clock[0],
                                                   perf_counter=time.perf_counter)

    def work(self, result):
        """The worker's side of one task, opening the store as a worker does: ``(worker CPU,
        its receipt)``."""
        task = result.task
        target = task_target(self.cube, task)  # the client's, when it submits the task

        def worker():
            group = zarr.open_group(str(self.cube.path), mode="r+", path=task.dataset)
            return write_task(group, result, target)

        return _cpu(worker)

    def replay(self, arrivals, flush_seconds):
        """The client's side: :class:`DoneMarks` takes each receipt at its virtual time; the
        CPU of each and of the final marking."""
        for name in self.cube.done:  # nothing marked done before the replay
            self.cube.done[name][...] = 0
            if self.cube.scored[name] is not None:
                self.cube.scored[name][...] = 0
            self.cube.write_markers(name)
        self.clock[0] = 0.0  # the run starts
        marks = DoneMarks(self.cube, flush_seconds=flush_seconds)
        self.commits = 0
        write = marks.write

        def counted():
            self.commits += 1
            write()

        marks.write = counted
        costs = []
        for now, receipt in arrivals:
            self.clock[0] = now
            costs.append(_cpu(marks.take, receipt)[0])
        end, _ = _cpu(marks.write)
        return costs, end


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default="paper")
    parser.add_argument("--values", type=Path,
                        help="a complete store of the spec whose results the tasks write")
    parser.add_argument("--only", default=ONLY)
    parser.add_argument("--workers", default="2,8,32,128,512",
                        help="virtual worker counts, comma-separated")
    parser.add_argument("--designs", default="region,icechunk")
    parser.add_argument("--compute-from", choices=("timed_run", "runs"), default="timed_run",
                        help="the committed run record whose compute the tasks share "
                             "(docs/results/<spec>/<this>.csv)")
    parser.add_argument("--flush-seconds", type=float, default=writer_module.FLUSH_SECONDS,
                        help="the client's period of marking done (or committing)")
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    designs = args.designs.split(",")
    print(machine())
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    spec = load_spec(args.spec)
    compute, written = compute_seconds(spec.name, args.compute_from)
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        folder = Path(folder)
        cube, _ = prepare(folder / "bench.zarr", spec)
        everything = plan(spec, cube).tasks
        selection = parse_only(args.only)
        tasks = [task for task in everything if all(
            matches(selection, key, getattr(block, key))
            for block in task.blocks for key in ("kind", "percent"))
            and matches(selection, "dataset", task.dataset)]
        seconds_per_unit = compute / sum(work(task, cube) for task in everything)
        compute_of = [work(task, cube) * seconds_per_unit for task in tasks]
        share = sum(compute_of)

        stored = args.values and StoredResults(args.values)

        def result(position):
            task = tasks[position]
            if stored:
                return stored.result(task, task_target(cube, task))
            return synthetic_result(task, cube.layout.groups[task.dataset].attrs["n_features"],
                                    np.random.default_rng(position))

        print(f"{spec.name}: {len(tasks)} tasks of {len(everything)}, "
              f"{len({t.dataset for t in tasks})} data sets, {share:,.0f} CPU-s of the "
              f"spec's {compute:,.0f} ({args.compute_from}.csv; its run's client wrote for "
              f"{written} s); values "
              f"{f'of {args.values}' if stored else 'made up'}")
        print("design    | workers | client CPU s | ms/task | predicted wall s | "
              "wall / (compute/W) | without writing | client % of a core per 100 workers | "
              "commits")
        for design_name in designs:
            design = {"region": RegionDesign,
                      "icechunk": functools.partial(RepositoryDesign, spec=spec)
                      }[design_name](folder, cube)
            returns, durations, per_task = [], [], []
            worker_seconds = 0.0
            for position, seconds in enumerate(compute_of):
                task_result = result(position)
                cpu, sent = design.work(task_result)
                worker_seconds += cpu
                per_task.append((cpu, written_mib(cube, tasks[position])))
                returns.append(sent)
                durations.append(seconds + cpu)
            print(f"{design_name}: workers' writing {worker_seconds:.1f} CPU-s in all "
                  f"({1000 * worker_seconds / len(tasks):.0f} ms per task, "
                  f"{100 * worker_seconds / share:.2f} % of the compute)")
            per_task_seconds, per_mib = writing_fit(per_task)
            print(f"{design_name}: least-squares fit of a task's writing: "
                  f"{per_task_seconds:.4f} s per task + {per_mib:.5f} s per MiB of its chunks "
                  f"(uncompressed; {sum(m for _, m in per_task):,.0f} MiB in all)")
            if stored and design_name == "region":
                differ, count, names = differing_chunks(args.values, cube, tasks)
                print(f"{design_name}: chunk files written that differ from the stored ones: "
                      f"{differ} of {count} {names or ''}")
            for workers in counts:
                order = finish_order(durations, workers)
                costs, end = design.replay(
                    [(t, returns[p]) for t, p in order], args.flush_seconds)
                costs = [c + design.client_seconds_per_task for c in costs]
                commits = design.commits
                client = sum(costs) + end
                wall = client_queue([t for t, _ in order], costs, end)
                alone = finish_order(compute_of, workers)[-1][0]  # the plan's own granularity
                print(f"{design_name:9} | {workers:7} | {client:12.1f} | "
                      f"{1000 * client / len(tasks):7.1f} | {wall:16.1f} | "
                      f"{wall / (share / workers):18.2f} | {alone / (share / workers):15.2f} | "
                      f"{100 * 100 * client / share:34.2f} | {commits}", flush=True)


if __name__ == "__main__":
    main()

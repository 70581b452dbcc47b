"""The client's writing over a spec's plan at 2 to 512 virtual workers: the current design
(the client writes every chunk) and two designs in which the workers write (issue 32).

    python benchmarks/bench_writer.py [SPEC] [--only SELECTION] [--workers 2,8,32,128,512]
                                      [--designs client,region,icechunk] [--flush-seconds 60]

Replays the plan of a fresh store without computing anything: every task gets a result of
the right shapes (values drawn from the task's place in the plan, on a grid of a thousand
levels, so that they compress about as much as real scores). ``W`` virtual workers take the
tasks in plan order, each task taking its share of the spec's compute (the CPU seconds of
its committed run in docs/results/paper/timed_run.csv: workers x compute wall x their compute
share), so that results arrive at the measured per-worker rate.

* ``client``: every result goes through :class:`pcskm.runner.store.writer.CubeWriter`, the real
  write path, whose clock is the virtual one (its periodic flushes happen as in a real run
  of that length).
* ``region``, ``icechunk``: the prototypes of benchmarks/_writer_designs.py; the worker's
  side of each task is run once (its CPU added to the task's compute), the client's side is
  replayed for each ``W``.

The CPU time of the client's side of every result is measured (``process_time``, so the
load of the machine does not count), and the client is modelled as one queue: it takes a
result when it arrives and when it has finished the previous one. Printed per design and
``W``: the client's CPU in total and per task, the predicted wall (the last write's end),
its ratio to the compute per worker, and the client's share of one core per 100 workers
(100 x client CPU / compute; issue 32's goal is below 5 %). What is not counted, in every
design: the client's receiving of the results from Dask (today the arrays, in the new
designs a fork or a few bytes), scheduling, the progress bar.

``--only`` replays the tasks of the whole plan whose data set, kinds and percents it selects
(default: the eight largest data sets of the paper spec after ionosphere, 271 of its 1,115
tasks and a quarter of its compute: the table of docs/guide/hpc.md, "How the client
writes"); ``--only ""`` replays all of it (the client design at 2 workers alone took 39
minutes at a load of 17 on 2 cores). "without writing" is the wall of the same workers if
nothing were written (the plan's granularity: its largest tasks end last), over the compute
per worker.
"""

import argparse
import csv
import heapq
import os
import tempfile
import time
import types
from dataclasses import fields
from pathlib import Path

import numpy as np
from _common import REPO, machine
from _writer_designs import IcechunkDesign, RegionDesign

from pcskm.experiments.cells import BlockResult, TaskResult
from pcskm.experiments.spec import load_spec
from pcskm.runner.store import CubeWriter, prepare
from pcskm.runner.store import writer as writer_module
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


def compute_seconds(spec_name):
    """CPU seconds of the spec's committed timed run (workers x compute wall x their compute
    share) and its client's writing seconds, from docs/results/<spec>/timed_run.csv (the run
    record of a run from an empty store on an idle machine) or else runs.csv."""
    folder = REPO / "docs" / "results" / spec_name
    timed = folder / "timed_run.csv"
    with open(timed if timed.exists() else folder / "runs.csv", newline="") as file:
        row = next(r for r in csv.DictReader(file) if not r["selection"])
    return (int(row["max_workers"]) * float(row["compute_wall_seconds"])
            * float(row["worker_compute_share"]), float(row["write_seconds"]))


def summary_of(result):
    """What the client needs of a result once the worker has written it: the task and the
    constraint counts of its blocks."""
    return types.SimpleNamespace(task=result.task, blocks=[
        [types.SimpleNamespace(n_constraints=block.n_constraints) for block in row]
        for row in result.blocks])


def replay_client(cube, tasks, result, order, flush_seconds):
    """The current design: the CPU seconds of :class:`CubeWriter` on each result, in the
    order of ``order``, on the virtual clock, and of its close."""
    for name in cube.done:  # a fresh store for the writer: nothing done
        cube.done[name][...] = 0
        if cube.scored[name] is not None:
            cube.scored[name][...] = 0
        cube.write_markers(name)
    clock = [0.0]  # the writer's clock only (asyncio and Zarr keep the real one)
    writer_module.time = types.SimpleNamespace(monotonic=lambda: clock[0])
    costs = []
    with CubeWriter(cube, tasks, flush_seconds=flush_seconds) as writer:
        for end, position in order:
            task_result = result(position)
            clock[0] = end
            start = time.process_time()
            writer.write(task_result)
            costs.append(time.process_time() - start)
        start = time.process_time()
    return costs, time.process_time() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default="paper")
    parser.add_argument("--only", default=ONLY)
    parser.add_argument("--workers", default="2,8,32,128,512",
                        help="virtual worker counts, comma-separated")
    parser.add_argument("--designs", default="client,region,icechunk")
    parser.add_argument("--flush-seconds", type=float, default=writer_module.FLUSH_SECONDS,
                        help="the current writer's flush period; the new designs' commit "
                             "period")
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    designs = args.designs.split(",")
    print(machine())
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    spec = load_spec(args.spec)
    compute, written = compute_seconds(spec.name)
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

        def result(position):
            task = tasks[position]
            return synthetic_result(task, cube.layout.groups[task.dataset].attrs["n_features"],
                                    np.random.default_rng(position))

        print(f"{spec.name}: {len(tasks)} tasks of {len(everything)}, "
              f"{len({t.dataset for t in tasks})} data sets, {share:,.0f} CPU-s of the "
              f"spec's {compute:,.0f} (its run's client wrote for {written} s)")
        print("design    | workers | client CPU s | ms/task | predicted wall s | "
              "wall / (compute/W) | without writing | client % of a core per 100 workers | "
              "commits")
        for design_name in designs:
            if design_name == "client":
                durations, design = compute_of, None
            else:
                design = {"region": RegionDesign,
                          "icechunk": IcechunkDesign}[design_name](folder, cube)
                returns, durations, summaries = [], [], []
                worker_seconds = 0.0
                for position, seconds in enumerate(compute_of):
                    task_result = result(position)
                    cpu, sent = design.work(task_result)
                    worker_seconds += cpu
                    returns.append(sent)
                    summaries.append(summary_of(task_result))
                    durations.append(seconds + cpu)
                print(f"{design_name}: workers' writing {worker_seconds:.1f} CPU-s in all "
                      f"({1000 * worker_seconds / len(tasks):.0f} ms per task, "
                      f"{100 * worker_seconds / share:.2f} % of the compute)")
            for workers in counts:
                order = finish_order(durations, workers)
                if design is None:
                    costs, end = replay_client(cube, tasks, result, order, args.flush_seconds)
                    commits = "-"
                else:
                    costs, end = design.replay(
                        [(t, returns[p], summaries[p]) for t, p in order], args.flush_seconds)
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

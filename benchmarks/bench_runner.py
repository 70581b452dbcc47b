"""Runner throughput: cells per second of a plain loop over a spec's tasks in one process,
against the runner (Dask LocalCluster, results written to a fresh cube) on 1 and 2 workers.

    python benchmarks/bench_runner.py [SPEC] [--workers 1 2] [--only SELECTION] [--rounds 3]

(``--only`` as for ``pcskm run``, e.g. ``paper --only "dataset=digits048-1,kind=random"``
for the cells of a paper data set; the planner cuts a small run into at least 64 tasks.)

Every process is warmed first (data sets loaded, Numba caches read) by one small cell per
(data set, estimator, init), so the figures are steady-state rates; a cold worker pays about
3 s once. The plain loop and the runner configurations alternate for ``--rounds`` rounds, and
each configuration's rate is the median of its rounds: on a shared virtual machine the same
loop varies by 10-15 % from one minute to the next. Efficiency = median runner rate /
(workers x median plain-loop rate). For the largest worker count, a bare process pool
(``multiprocessing``, one process per worker, tasks handed out one at a time, results
dropped) gives the rate this machine reaches with that many processes and no runner at all:
what is lost between the pool and the plain loop is the machine's, not the runner's.

The runner also reports the share of worker time spent in task compute (1 - scheduling,
transfer, writing and idle overhead), the client's writing time per task, and the client
process's CPU time (scheduler, client, writer) as a share of the run's wall time.
"""

import argparse
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path

from pcskm.experiments import cells
from pcskm.experiments.cells import Block, Task
from pcskm.experiments.spec import load_spec
from pcskm.runner.clusters import local_cluster
from pcskm.runner.execute import run_spec
from pcskm.runner.store import CubeView
from pcskm.runner.tasks import parse_only, plan


def spec_tasks(spec, only=None):
    """Every task of ``spec`` (``only``: a ``--only`` selection) on an empty store."""
    return plan(spec, CubeView.planned(Path("never-created.zarr"), spec),
                selection=parse_only(only)).tasks


def warm(spec_name, only=None):
    """Evaluate one cell per (data set, estimator, init) of the spec in this process."""
    seen = set()
    for task in spec_tasks(load_spec(spec_name), only):
        block = task.blocks[0]
        for s in task.settings:
            if (s.dataset, s.estimator, s.init) in seen:
                continue
            seen.add((s.dataset, s.estimator, s.init))
            cells.evaluate(Task((s,), (Block(block.kind, block.percent, (0,)),), folds=(0,)))
    return len(seen)


def _evaluated_cells(task):
    return cells.evaluate(task).task.n_cells


def plain_loop(spec, only=None):
    """``(cells, seconds, tasks)`` of evaluating every task in this process."""
    tasks = spec_tasks(spec, only)
    start = time.perf_counter()
    n_cells = sum(map(_evaluated_cells, tasks))
    return n_cells, time.perf_counter() - start, len(tasks)


def on_dask(spec, n_workers, only=None):
    """The :class:`RunSummary` of the runner on ``n_workers`` local workers, and the CPU
    seconds of this (the client's) process from the first result to the end."""
    from distributed import Client

    with local_cluster(n_workers) as cluster, Client(cluster) as client:
        client.run(warm, spec.name, only)
        first = []

        def on_result(result, summary):
            if not first:
                first.append(time.process_time())

        with tempfile.TemporaryDirectory() as folder:
            summary = run_spec(spec, Path(folder) / f"{spec.name}.zarr", client=client,
                               selection=parse_only(only), progress=False,
                               on_result=on_result)
        return summary, time.process_time() - first[0]


def process_pool(spec, n_processes, only=None):
    """``(cells, seconds)`` of a bare ``multiprocessing`` pool evaluating every task."""
    tasks = spec_tasks(spec, only)
    context = multiprocessing.get_context("spawn")
    with context.Pool(n_processes, initializer=warm, initargs=(spec.name, only)) as pool:
        pool.map(abs, range(4 * n_processes))  # returns once every process is warm
        start = time.perf_counter()
        n_cells = sum(pool.imap_unordered(_evaluated_cells, tasks, chunksize=1))
        return n_cells, time.perf_counter() - start


def _spread(values):
    return f"{min(values):.0f}-{max(values):.0f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default="quick")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--only", help="a selection, as pcskm run --only")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    spec = load_spec(args.spec)
    warm(spec.name, args.only)
    loop_rates, rates, pool_rates = [], {n: [] for n in args.workers}, []
    n_pool = max(args.workers)
    for round_ in range(args.rounds):
        n_cells, seconds, n_tasks = plain_loop(spec, args.only)
        loop_rates.append(n_cells / seconds)
        print(f"round {round_ + 1}: plain loop {seconds:.1f} s, {n_cells / seconds:.0f} "
              "cells/s", flush=True)
        for n in args.workers:
            summary, client_cpu = on_dask(spec, n, args.only)
            rates[n].append(summary.n_cells / summary.wall_seconds)
            print(f"round {round_ + 1}: runner, {n} worker(s): {summary.wall_seconds:.1f} s, "
                  f"{rates[n][-1]:.0f} cells/s; worker time in compute "
                  f"{100 * summary.efficiency:.1f} %; the workers' writing "
                  f"{1000 * summary.write_seconds / summary.n_written:.0f} ms per task, the "
                  f"client's marking {1000 * summary.mark_seconds / summary.n_written:.1f} "
                  "ms per task; "
                  f"client CPU {100 * client_cpu / summary.wall_seconds:.0f} % of a core",
                  flush=True)
        pooled, seconds = process_pool(spec, n_pool, args.only)
        pool_rates.append(pooled / seconds)
        print(f"round {round_ + 1}: process pool, {n_pool} processes: {seconds:.1f} s, "
              f"{pool_rates[-1]:.0f} cells/s", flush=True)
    loop_rate = statistics.median(loop_rates)
    print(f"\n{spec.name}{f' --only {args.only}' if args.only else ''}: {n_cells} cells in "
          f"{n_tasks} tasks, {args.rounds} rounds (median, range)")
    print(f"plain loop, one process: {loop_rate:.0f} cells/s ({_spread(loop_rates)})")
    for n in args.workers:
        rate = statistics.median(rates[n])
        print(f"runner, {n} worker(s): {rate:.0f} cells/s ({_spread(rates[n])}), efficiency "
              f"{rate / (n * loop_rate):.2f} of {n} x plain loop")
    pool_rate = statistics.median(pool_rates)
    print(f"process pool, {n_pool} processes: {pool_rate:.0f} cells/s ({_spread(pool_rates)}), "
          f"{pool_rate / (n_pool * loop_rate):.2f} of {n_pool} x plain loop; the runner on "
          f"{n_pool} workers reaches {statistics.median(rates[n_pool]) / pool_rate:.2f} of it")


if __name__ == "__main__":
    main()

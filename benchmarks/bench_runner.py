"""Runner throughput: cells per second of a plain loop over a spec's tasks in one process,
against the runner (Dask LocalCluster, results written to a fresh cube) on 1 and 2 workers.

    python benchmarks/bench_runner.py [SPEC] [--workers 1 2] [--only SELECTION]

(``--only`` as for ``pcskm run``, e.g. ``paper --only dataset=digits048-1`` for paper-sized
tasks.)

Every process is warmed first (data sets loaded, Numba caches read) by one small cell per
(data set, estimator, init), so the figures are steady-state rates; a cold worker pays about
3 s once. Efficiency = runner rate / (workers x plain-loop rate). The runner also reports the
share of worker time spent in task compute (1 - scheduling, transfer, writing and idle
overhead) and the client's writing time per task.
"""

import argparse
import tempfile
import time
from pathlib import Path

from experiments import cells
from experiments.cells import Block, Task
from experiments.spec import load_spec
from runner.clusters import local_cluster
from runner.cube import CubeView
from runner.execute import run_spec
from runner.tasks import parse_only, plan


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


def plain_loop(spec, only=None):
    tasks = spec_tasks(spec, only)
    start = time.perf_counter()
    n_cells = sum(cells.evaluate(task).task.n_cells for task in tasks)
    return n_cells, time.perf_counter() - start, len(tasks)


def on_dask(spec, n_workers, only=None):
    from distributed import Client

    with local_cluster(n_workers) as cluster, Client(cluster) as client:
        client.run(warm, spec.name, only)
        with tempfile.TemporaryDirectory() as folder:
            return run_spec(spec, Path(folder) / f"{spec.name}.zarr", client=client,
                            selection=parse_only(only), progress=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default="quick")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--only", help="a selection, as pcskm run --only")
    args = parser.parse_args()
    spec = load_spec(args.spec)
    warm(spec.name, args.only)
    n_cells, seconds, n_tasks = plain_loop(spec, args.only)
    loop_rate = n_cells / seconds
    print(f"{spec.name}: {n_cells} cells in {n_tasks} tasks")
    print(f"plain loop, one process: {seconds:.1f} s, {loop_rate:.0f} cells/s")
    for n in args.workers:
        summary = on_dask(spec, n, args.only)
        rate = summary.n_cells / summary.wall_seconds
        print(f"runner, {n} worker(s): {summary.wall_seconds:.1f} s, {rate:.0f} cells/s, "
              f"efficiency {rate / (n * loop_rate):.2f} of {n} x plain loop; worker time in "
              f"compute {100 * summary.efficiency:.1f} %; writing "
              f"{1000 * summary.write_seconds / summary.n_written:.0f} ms per task")


if __name__ == "__main__":
    main()

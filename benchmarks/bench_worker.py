"""CPU time per cell of a worker evaluating the runner's tasks of the paper spec, and the
workload to profile it on.

Run by hand from the repository root:

    python benchmarks/bench_worker.py [--repeat 3] [--datasets digits048-1 ionosphere ...]
                                      [--runs 0] [--spec paper]
    python benchmarks/bench_worker.py --sample 40 [--seed 1] [--spec paper]

    py-spy record --native -r 50 -f raw -o worker.txt -- python benchmarks/bench_worker.py
    python benchmarks/profile_summary.py worker.txt

(``--native`` lets the profile tell Numba-compiled code from Python; at 200 samples a second
it falls behind on a loaded 2-core machine, which skews the sample.) py-spy cannot name the
kernels; ``perf`` can, through ``benchmarks/perf_map.py``:

    perf record -F 499 -g -o worker.data python benchmarks/perf_map.py \\
        benchmarks/bench_worker.py --sample 40 --repeat 1 --spec paper
    perf report -i worker.data --no-children --sort symbol --stdio -g none

The workload of a data set: its tasks as the runner builds them (one per constraint kind,
every (algorithm, init) that runs the kind in the task, so that they share each cell's
constraint sample), with 1 %, 5.5 % and 10 % of the constraints, run 0 (``--runs``) and all
ten folds.
With ``--sample N``, the workload is instead N tasks drawn at random (uniformly, without
replacement) from every task the runner plans for the whole spec on an empty store, so a
profile of it shares the full run's mix of data sets, algorithms and scores in expectation.
Each data set's tasks are evaluated once untimed (data loading, the Numba caches, the
deterministic centres), then ``--repeat`` times inside :func:`measure`; the table shows the
median CPU seconds of this process (``time.process_time``, the engines being single-threaded:
other jobs on the machine inflate it less than wall time, but a loaded machine still moves it
by 10 % or so; the load average is printed) per cell.
"""

import argparse
import os
import random
import statistics
import time

from _common import machine, paper_tasks, print_table
from bench_runner import spec_tasks

from pcskm.experiments import cells
from pcskm.experiments.spec import load_spec

DATASETS = ("digits048-1", "ionosphere", "mwm-ttscst")
KINDS = ("random", "must-link", "cannot-link", "balanced")
PERCENTS = (1.0, 5.5, 10.0)
RUNS = (0,)


def measure(tasks, repeat):
    """CPU seconds of evaluating all ``tasks``, once per repeat."""
    seconds = []
    for _ in range(repeat):
        start = time.process_time()
        for task in tasks:
            cells.evaluate(task)
        seconds.append(time.process_time() - start)
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--runs", nargs="*", type=int, default=list(RUNS),
                        help="runs 0-4 carry the paper spec's CV scores, the later ones not")
    parser.add_argument("--spec", default="paper",
                        help="a spec name or TOML file with the paper spec's data sets")
    parser.add_argument("--sample", type=int,
                        help="time N tasks drawn at random from the whole spec instead")
    parser.add_argument("--seed", type=int, default=1, help="of the --sample draw")
    args = parser.parse_args()
    print(machine())
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if args.sample:
        every = spec_tasks(load_spec(args.spec))
        drawn = random.Random(args.seed).sample(every, min(args.sample, len(every)))
        workloads = [(f"{len(drawn)} of {len(every)} tasks", drawn)]
    else:
        workloads = [(name, paper_tasks(name, KINDS, PERCENTS, tuple(args.runs), args.spec))
                     for name in args.datasets]
    rows = []
    for name, tasks in workloads:
        for task in tasks:
            cells.evaluate(task)
        seconds = measure(tasks, args.repeat)
        n_cells = sum(task.n_cells for task in tasks)
        rows.append((name, n_cells, round(statistics.median(seconds), 3),
                     round(statistics.median(seconds) / n_cells * 1e3, 4),
                     " ".join(f"{s:.2f}" for s in seconds)))
    print_table(("workload", "cells", "median CPU s", "ms/cell", "CPU s of each repeat"), rows)
    print(f"load average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()

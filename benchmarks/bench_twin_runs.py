"""CPU time of the paper spec's tasks with and without the copied runs of the other score
variant (``FitCache``'s twin, docs/method/algorithms.md §4.2, "Runs that meet no violated
constraint"), alternated in one process.

Run by hand from the repository root:

    python benchmarks/bench_twin_runs.py [--datasets digits048-1 ...] [--runs 0 5 6 7 8]
                                         [--rounds 8]

The workload of a data set is bench_worker.py's: its tasks as the runner builds them, with
1 %, 5.5 % and 10 % of the constraints and the given runs (the spec's CV runs are 0-4 of 25,
so ``--runs 0 5 6 7 8`` keeps their share). The tasks are evaluated once untimed, then
``--rounds`` times each way, the two ways alternating (ABBA ...) so that the machine's drift
falls on both; every result is compared with the first round's (the copies change no bit).
The table gives the CPU seconds of this process (``time.process_time``) per round.
"""

import argparse
import statistics
import time

from _common import load, machine, paper_tasks, print_table, result_arrays
from bench_worker import KINDS, PERCENTS

from pcskm.algorithms._sparse import FitCache
from pcskm.experiments import cells

DATASETS = ("digits048-1", "digits389-contaminated-2", "ionosphere", "mwm-ttscst")


def no_twin(cache, key):
    """``FitCache._twin`` that never finds the other variant's path."""
    return None


def evaluate(tasks):
    """CPU seconds of evaluating ``tasks``, and their block results' arrays."""
    start = time.process_time()
    results = [cells.evaluate(task) for task in tasks]
    seconds = time.process_time() - start
    return seconds, [array for _, array in result_arrays(results)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--runs", nargs="*", type=int, default=[0, 5, 6, 7, 8])
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    print(machine())
    print(f"load average at start: {load()}")
    with_twin = FitCache._twin
    rows = []
    for name in args.datasets:
        tasks = paper_tasks(name, KINDS, PERCENTS, tuple(args.runs))
        _, reference = evaluate(tasks)
        seconds = {"with": [], "without": []}
        for round_ in range(args.rounds):
            order = ("without", "with") if round_ % 4 in (0, 3) else ("with", "without")
            for way in order:
                FitCache._twin = with_twin if way == "with" else no_twin
                spent, arrays = evaluate(tasks)
                FitCache._twin = with_twin
                for got, want in zip(arrays, reference, strict=True):
                    if got.tobytes() != want.tobytes():
                        raise SystemExit(f"{name}: a result changed ({way} the copies)")
                seconds[way].append(spent)
        median = {way: statistics.median(values) for way, values in seconds.items()}
        rows.append((name, sum(task.n_cells for task in tasks),
                     round(median["without"], 2), round(median["with"], 2),
                     round(median["with"] / median["without"], 3),
                     round(min(seconds["with"]) / min(seconds["without"]), 3)))
    print_table(("workload", "cells", "without s", "with s", "with / without (medians)",
                 "(fastest)"), rows)
    print(f"load average at end: {load()}")


if __name__ == "__main__":
    main()

"""CPU time of the paper spec's tasks under an earlier commit and under this checkout, timed in
turns by two warm processes (old, new, new, old, ...), and their results compared bit for
bit.

Run by hand from the repository root:

    python benchmarks/bench_paired_trees.py BEFORE [--after COMMIT] [--pairs 6]
        [--datasets digits048-1 digits389-contaminated-2] [--runs 0 5 6 7 8]

``BEFORE`` is a git commit; its tree is exported into a temporary folder and imported as
``pcskm`` from there (``--after``: the same for the new side; default this checkout). The
workload is bench_worker.py's for each data set (its tasks as the runner builds them, 1 %,
5.5 % and 10 % of the constraints, all folds) with runs 0, 5, 6, 7 and 8 by default: the
spec's CV runs are 0-4 of 25, so one run in five carries them, as in the study. Each process
evaluates the workload once untimed (data, the Numba caches, the initial centres) and writes a
digest of every array of its results; then, once both are warm, they take turns, one timing a
whole evaluation of the workload (``time.process_time``, the engines being single-threaded)
while the other waits, so that the machine's drift falls on both. The table gives each turn's
CPU seconds, and new / old per pair and of the medians.
"""

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import export, importable, machine, paper_tasks, print_table, result_arrays
from bench_worker import KINDS, PERCENTS, measure

from pcskm.experiments import cells

DATASETS = ("digits048-1", "digits389-contaminated-2")
RUNS = (0, 5, 6, 7, 8)
ORDER = (0, 1, 1, 0)  # whose turn (0: old, 1: new), repeated


def digest(results):
    """SHA-256 of every array of the block results ``results``, field by field."""
    hashed = hashlib.sha256()
    for name, array in result_arrays(results):
        hashed.update(name.encode())
        hashed.update(np.ascontiguousarray(array).tobytes())
    return hashed.hexdigest()


def wait_for(condition):
    while not condition():
        time.sleep(0.02)


def turn_number(counter):
    try:
        return int(counter.read_text())
    except (FileNotFoundError, ValueError):  # not written yet, or being replaced
        return -1


def worker(role, sync, datasets, runs, pairs):
    """One side: warm up, write the digest, then time the turns of ``role``; writes the
    seconds of each turn to ``sync/seconds<role>``."""
    tasks = [task for name in datasets for task in paper_tasks(name, KINDS, PERCENTS, runs)]
    (sync / f"digest{role}").write_text(digest([cells.evaluate(task) for task in tasks]))
    wait_for(lambda: all((sync / f"digest{side}").exists() for side in (0, 1)))
    counter = sync / "turn"
    seconds = []
    for turn, whose in enumerate((ORDER * pairs)[:2 * pairs]):
        if whose != role:
            continue
        wait_for(lambda turn=turn: turn_number(counter) == turn)
        seconds.extend(measure(tasks, 1))
        (sync / "turn.next").write_text(str(turn + 1))
        os.replace(sync / "turn.next", counter)
    (sync / f"seconds{role}").write_text(" ".join(map(repr, seconds)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", nargs="?", help="the old commit")
    parser.add_argument("--after", help="the new commit (default: this checkout)")
    parser.add_argument("--pairs", type=int, default=6, help="turns of each side")
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--runs", nargs="*", type=int, default=list(RUNS))
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--sync", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, Path(args.sync), args.datasets, tuple(args.runs), args.pairs)
        return
    if args.before is None:
        parser.error("give BEFORE, the old commit")
    print(machine())
    with tempfile.TemporaryDirectory(prefix="paired-trees-") as tmp:
        tmp = Path(tmp)
        paths = [export(args.before, tmp / "old"), importable(args.after, tmp / "new")]
        sync = tmp / "sync"
        sync.mkdir()
        (sync / "turn").write_text("0")
        command = [sys.executable, __file__, "--sync", str(sync), "--pairs", str(args.pairs),
                   "--datasets", *args.datasets, "--runs", *map(str, args.runs)]
        sides = [subprocess.Popen([*command, "--worker", str(role)],
                                  env={**os.environ, "PYTHONPATH": str(path)})
                 for role, path in enumerate(paths)]
        if any(side.wait() for side in sides):
            sys.exit("a side failed")
        old, new = ([float(s) for s in (sync / f"seconds{role}").read_text().split()]
                    for role in (0, 1))
        same = (sync / "digest0").read_text() == (sync / "digest1").read_text()
    print(f"old = {args.before}, new = {args.after or 'this checkout'}; "
          f"data sets {' '.join(args.datasets)}; runs {' '.join(map(str, args.runs))}")
    print_table(("turn pair", "old CPU s", "new CPU s", "new / old"),
                [(i + 1, round(a, 2), round(b, 2), round(b / a, 3))
                 for i, (a, b) in enumerate(zip(old, new, strict=True))])
    print(f"medians: old {statistics.median(old):.2f} s, new {statistics.median(new):.2f} s, "
          f"new / old {statistics.median(new) / statistics.median(old):.3f}")
    print("results: " + ("the same (every array of every block, bit for bit)" if same else
                         "DIFFERENT"))


if __name__ == "__main__":
    main()

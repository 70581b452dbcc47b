"""The dry run's estimate, task by task: ``pcskm run --dry-run``'s calibration, then real tasks
of the spec, drawn at random, evaluated in this process and timed against their estimate.

    python benchmarks/bench_estimate.py [SPEC] [--only SELECTION] [--tasks 16] [--seed 1]
                                        [--calibration-seconds 60]

Both sides are CPU time of this process, one task after the other, so the ratio (estimated /
measured, summed over the tasks drawn) is the probes' own error, without the workers, the
client or the machine's other load; the run time the dry run prints divides the calibrated
compute by a ratio measured on whole runs (``runner/cli.py``), which takes those in.

    python benchmarks/bench_estimate.py --whole-runs smoke quick [--workers 2] [--repeat 2]

Whole runs instead: per spec and repeat, ``pcskm run SPEC --dry-run`` then the run itself
into a new store in a temporary folder, each a command of its own, with the load average
before each; prints the table of docs/guide/paper-study.md (Small specs): the estimate, the
run's whole command (wall time, as a user waits for it) and its run record's
``wall_seconds``.
"""

import argparse
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import machine
from bench_runner import spec_tasks

from pcskm.experiments import cells
from pcskm.experiments.spec import load_spec
from pcskm.runner.calibrate import estimate
from pcskm.runner.compiling import compile_kernels
from pcskm.runner.store import CubeView


def _seconds(text):
    """Seconds of the dry run's durations: "42 s", "3.1 min", "1.2 h"."""
    number, unit = text.split()
    return float(number) * {"s": 1, "min": 60, "h": 3600}[unit]


def _load():
    return "{:.1f} / {:.1f} / {:.1f}".format(*os.getloadavg())


def whole_run(spec, workers, folder):
    """One dry run, then the run, of ``spec`` on ``workers`` local workers into a new store in
    ``folder``: a row of the table."""
    store = Path(folder) / f"{spec}-{time.time_ns()}.zarr"
    pcskm = [str(Path(sys.executable).with_name("pcskm")), "run", spec, "--store", str(store),
             "--workers", str(workers)]
    load_dry = _load()
    dry = subprocess.run([*pcskm, "--dry-run"], capture_output=True, text=True, check=True)
    total = re.search(r"estimated run time on \d+ workers: ([\d.]+ \w+):", dry.stdout)
    load_run = _load()
    start = time.perf_counter()
    subprocess.run([*pcskm, "--no-progress"], capture_output=True, text=True, check=True)
    command = time.perf_counter() - start
    import zarr

    record = zarr.open_group(str(store), mode="r").attrs["runs"][-1]
    estimate = _seconds(total.group(1))
    return {"spec": spec, "estimate": estimate, "command": command,
            "wall_seconds": record["wall_seconds"], "load_dry_run": load_dry,
            "load_run": load_run}


def whole_runs(specs, workers, repeat):
    print(machine())
    print("| spec | estimated | command's wall time | run record's wall_seconds | "
          "command / estimate | load average before the dry run; before the run "
          "(1 / 5 / 15 min) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(repeat):
            for spec in specs:
                row = whole_run(spec, workers, folder)
                print(f"| {row['spec']} | {row['estimate']:.0f} s | {row['command']:.1f} s | "
                      f"{row['wall_seconds']:.1f} s | {row['command'] / row['estimate']:.2f} | "
                      f"{row['load_dry_run']}; {row['load_run']} |", flush=True)


def main():
    if "--whole-runs" in sys.argv:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--whole-runs", nargs="+", metavar="SPEC", required=True)
        parser.add_argument("--workers", type=int, default=2)
        parser.add_argument("--repeat", type=int, default=2)
        args = parser.parse_args()
        return whole_runs(args.whole_runs, args.workers, args.repeat)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default="paper")
    parser.add_argument("--only", help="a selection, as pcskm run --only")
    parser.add_argument("--tasks", type=int, default=16, help="tasks drawn and timed")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--calibration-seconds", type=float, default=60.0)
    args = parser.parse_args()
    print(machine())
    spec = load_spec(args.spec)
    tasks = spec_tasks(spec, args.only)
    view = CubeView.planned(Path("never-created.zarr"), spec)
    compile_kernels(tasks)
    calibrated = estimate(tasks, view, spec, budget_seconds=args.calibration_seconds)
    estimates = calibrated.task_seconds
    print(f"{args.spec}: {len(tasks)} tasks, {calibrated.n_probes} of {calibrated.n_groups} "
          f"groups probed in {calibrated.probe_seconds:.1f} s; calibrated compute "
          f"{calibrated.core_seconds / 3600:.3f} core-hours")
    drawn = random.Random(args.seed).sample(range(len(tasks)), min(args.tasks, len(tasks)))
    total_estimated = total_measured = 0.0
    for index in drawn:
        task = tasks[index]
        start = time.process_time()
        cells.evaluate(task)
        measured = time.process_time() - start
        total_estimated += estimates[index]
        total_measured += measured
        print(f"task {index:5d} {task.dataset:26s} {task.blocks[0].kind:11s} "
              f"{len(task.settings):2d} settings {task.n_cells:7d} cells: estimated "
              f"{estimates[index]:6.1f} s, measured {measured:6.1f} s "
              f"({estimates[index] / measured:.2f})", flush=True)
    print(f"{len(drawn)} tasks: estimated {total_estimated:.1f} s, measured "
          f"{total_measured:.1f} s, ratio {total_estimated / total_measured:.3f}")


if __name__ == "__main__":
    main()

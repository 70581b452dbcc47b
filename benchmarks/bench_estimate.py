"""The dry run's estimate, task by task: ``pcskm run --dry-run``'s calibration, then real tasks
of the spec, drawn at random, evaluated in this process and timed against their estimate.

    python benchmarks/bench_estimate.py [SPEC] [--only SELECTION] [--tasks 16] [--seed 1]
                                        [--calibration-seconds 60]

Both sides are CPU time of this process, one task after the other, so the ratio (estimated /
measured, summed over the tasks drawn) is the probes' own error, without the workers, the
client or the machine's other load; the run time the dry run prints divides the calibrated
compute by a ratio measured on whole runs (``runner/cli.py``), which takes those in.
"""

import argparse
import random
import time
from pathlib import Path

from _common import machine
from bench_runner import spec_tasks

from pcskm.experiments import cells
from pcskm.experiments.spec import load_spec
from pcskm.runner.calibrate import estimate
from pcskm.runner.compiling import compile_kernels
from pcskm.runner.cube import CubeView


def main():
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

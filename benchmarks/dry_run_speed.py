"""``pcskm run SPEC --dry-run`` against the run it estimates: the dry run from nothing
(``--recalibrate``), the dry run that reuses the calibration kept for this machine and code
version, and the run from an empty store, in turns (dry runs, run, kept dry run, run).

    python benchmarks/dry_run_speed.py [SPEC] [--log FILE]

Each command is timed with ``/usr/bin/time -v`` (wall seconds); the dry runs' estimated run
time and the calibration line are printed beside them, and the load average before and after,
since the machine may be shared. The run is warm (a run before the timed ones compiles the
kernels and is not timed).
"""

import argparse
import re
import shutil
import tempfile
from pathlib import Path

from _common import OUT, REPO, load, print_header
from report_speed import timed


def seconds_of(estimate):
    """The seconds of an estimated run time's line (``... workers: 17 s: ...``, ``12.5 min``,
    ``3.1 h``)."""
    value, unit = re.search(r"workers: ([\d.]+) (s|min|h):", estimate).groups()
    return float(value) * {"s": 1, "min": 60, "h": 3600}[unit]


def dry_run(spec, store, pythonpath, log, *extra):
    """(wall seconds, the estimated run time's line, the calibration line) of a dry run."""
    wall, _peak, out, _cpu = timed(["run", spec, "--store", str(store), "--dry-run", *extra],
                             pythonpath, log)
    estimate = re.search(r"estimated run time on .*", out)[0]
    calibration = re.search(r"calibration: \d+ of .*", out)[0]
    return wall, estimate, calibration


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", nargs="?", default="quick")
    parser.add_argument("--log", default=str(OUT / "dry_run_speed.log"))
    args = parser.parse_args()
    print_header()
    Path(args.log).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dry-run-speed-") as tmp, \
            open(args.log, "w") as log:
        tmp = Path(tmp)
        path = tmp / "path"
        path.mkdir()
        (path / "pcskm").symlink_to(REPO)
        store = tmp / "study.zarr"
        timed(["run", args.spec, "--store", str(store), "--no-progress"], path, log)
        shutil.rmtree(store)
        dry = []
        for label, extra in (("from nothing (--recalibrate)", ("--recalibrate",)),
                             ("kept calibration", ())):
            wall, estimate, calibration = dry_run(args.spec, store, path, log, *extra)
            print(f"dry run, {label}: {wall:.1f} s wall; {calibration}; {estimate}")
            dry.append((label, wall, estimate))
        runs = []
        for turn in range(2):
            wall, _peak, _out, _cpu = timed(["run", args.spec, "--store", str(store),
                                       "--no-progress"], path, log)
            shutil.rmtree(store)
            runs.append(wall)
            print(f"run {turn + 1} (warm kernels, empty store): {wall:.1f} s wall")
            if turn == 0:
                wall, estimate, calibration = dry_run(args.spec, store, path, log)
                print(f"dry run, kept calibration: {wall:.1f} s wall; {calibration}; "
                      f"{estimate}")
                dry.append(("kept calibration, after run 1", wall, estimate))
    print(f"load average after: {load()}")
    run = sum(runs) / len(runs)
    for label, wall, estimate in dry:
        print(f"dry run, {label}: {wall:.1f} s = {wall / run:.2f} of the mean run "
              f"({run:.1f} s); its estimate {seconds_of(estimate):.0f} s = "
              f"{seconds_of(estimate) / run:.2f} of it")


if __name__ == "__main__":
    main()

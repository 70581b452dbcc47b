"""``pcskm report`` of an earlier commit and of this checkout on the same store, timed in
turns (old, new, new, old) beside a warm ``pcskm run`` of the store's spec, and the two
reports compared: every table and report.md byte for byte, every figure as pixels. A turn
``all`` is the new report with ``--grids all`` (every main selection's performance grids
drawn, as the reports before ``--grids`` drew them): it is compared with the old one, and
the new default report with it (the grids it does not draw, and report.md, differ).

    python benchmarks/report_speed.py BEFORE [--after COMMIT] [--spec quick] [--store STORE]
                                     [--order old,new,new,old[,all]] [--keep DIR]
    python benchmarks/report_speed.py --compare OLD_REPORT NEW_REPORT

``BEFORE`` is a git commit; its tree is exported into a temporary folder and imported as
``pcskm`` from there (``--after``: the same for the new report; default this checkout).
Without ``--store`` the spec is run into a temporary store (the first run compiles and is not
timed; the second, from an empty store again, is the warm run the report is compared with).
A ``--store`` is only read, but for the selections written beside it
(:func:`pcskm.experiments.report.write_report`). Each command is timed with
``/usr/bin/time -v`` (wall seconds and peak memory); the load average is printed before and
after, since the machine may be shared.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import OUT, REPO, export, importable, load, print_header


def compare(old, new):
    """Lines describing how the report folders ``old`` and ``new`` differ (none: the same):
    the same file names; every file but the PNGs byte for byte; the PNGs as pixel arrays
    (``matplotlib.image.imread``)."""
    from matplotlib.image import imread

    old, new = Path(old), Path(new)
    names = {p.name for p in old.iterdir() if p.is_file()}
    other = {p.name for p in new.iterdir() if p.is_file()}
    lines = [f"only in {old}: {n}" for n in sorted(names - other)]
    lines += [f"only in {new}: {n}" for n in sorted(other - names)]
    for name in sorted(names & other):
        a, b = old / name, new / name
        if name.endswith(".png"):
            pixels_a, pixels_b = imread(a), imread(b)
            if pixels_a.shape != pixels_b.shape:
                lines.append(f"{name}: {pixels_a.shape} pixels, now {pixels_b.shape}")
            elif not np.array_equal(pixels_a, pixels_b):
                lines.append(f"{name}: {int((pixels_a != pixels_b).any(axis=-1).sum())} "
                             "pixels differ")
        elif a.read_bytes() != b.read_bytes():
            lines.append(f"{name}: the bytes differ")
    return lines


def timed(command, pythonpath, log):
    """Run ``command`` under ``/usr/bin/time -v`` importing pcskm from ``pythonpath``;
    returns (wall seconds, peak resident MiB, its stdout, CPU seconds: user and system, its
    children's included) and appends its stdout and stderr to ``log``."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    start = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", sys.executable, "-m", "pcskm.runner.cli",
                           *command], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    log.write(f"$ {' '.join(command)}  (PYTHONPATH={pythonpath})\n{done.stdout}{done.stderr}\n")
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)[1])
    cpu = sum(float(re.search(rf"{kind} time \(seconds\): ([\d.]+)", done.stderr)[1])
              for kind in ("User", "System"))
    return wall, peak / 1024, done.stdout, cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", nargs="?", help="the git commit of the old report")
    parser.add_argument("--after", help="the git commit of the new report (default: this "
                                        "checkout as it is)")
    parser.add_argument("--spec", default="quick")
    parser.add_argument("--store", help="an existing store (only read); default: run --spec")
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"),
                        help="only compare two report folders")
    parser.add_argument("--order", default="old,new,new,old",
                        help="the reports, in turn (a large store: old,new)")
    parser.add_argument("--keep", help="a folder to copy the (first) new report to: the one "
                                       "with --grids all if the order has one")
    parser.add_argument("--log", default=str(OUT / "report_speed.log"),
                        help="where the commands' /usr/bin/time -v output goes")
    args = parser.parse_args()
    if args.compare:
        lines = compare(*args.compare)
        print("\n".join(lines) or "the same: tables byte for byte, figures pixel for pixel")
        sys.exit(1 if lines else 0)
    if args.before is None:
        parser.error("give BEFORE (a commit) or --compare OLD NEW")
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                          check=True, capture_output=True, text=True).stdout.strip()
    print_header(f"at commit {head}, ")
    Path(args.log).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="report-speed-") as tmp, \
            open(args.log, "w") as log:
        tmp = Path(tmp)
        old_path = export(args.before, tmp / "old")
        new_path, head = importable(args.after, tmp / "new"), args.after or head
        store = Path(args.store) if args.store else tmp / "study.zarr"
        if args.store is None:
            timed(["run", args.spec, "--store", str(store), "--no-progress"], new_path, log)
            shutil.rmtree(store)
            wall, peak, _out, cpu = timed(["run", args.spec, "--store", str(store),
                                           "--no-progress"], new_path, log)
            print(f"pcskm run {args.spec} (warm kernels, empty store): {wall:.1f} s wall, "
                  f"{cpu:.1f} s CPU, peak {peak:.0f} MiB (load average {load()})")
        times = {"old": [], "new": [], "all": []}
        order = args.order.split(",")
        if not {"old", "new"} <= set(order) <= set(times):
            parser.error("--order: old and new, each at least once, and all if wanted")
        for turn, which in enumerate(order):
            out = tmp / f"{which}-{turn}"
            wall, peak, _out, cpu = timed(
                ["report", str(store), "--out", str(out),
                 *(["--grids", "all"] if which == "all" else [])],
                old_path if which == "old" else new_path, log)
            times[which].append((wall, peak, out))
            print(f"report by {args.before if which == 'old' else head}"
                  f"{' --grids all' if which == 'all' else ''}: {wall:.1f} s wall, "
                  f"{cpu:.1f} s CPU, peak {peak:.0f} MiB (load average {load()})")
        for which, found in times.items():
            walls = [w for w, _p, _o in found]
            if walls:
                print(f"{which}: {min(walls):.1f}-{max(walls):.1f} s")
        old, new = times["old"][0][2], times["new"][0][2]
        if args.keep:
            shutil.copytree(times["all"][0][2] if times["all"] else new, args.keep,
                            dirs_exist_ok=True)
        same = "the same (tables and report.md byte for byte, figures pixel for pixel)"
        if times["all"]:
            every = times["all"][0][2]
            lines = compare(old, every)
            print(f"old vs new --grids all ({len(list(every.iterdir()))} files): "
                  + ("; ".join(lines) or same))
            lines = compare(every, new)
            undrawn = [line for line in lines if line.startswith(f"only in {every}: ")
                       and line.endswith(".png")]
            rest = [line for line in lines if line not in undrawn]
            print(f"new --grids all vs new ({len(list(new.iterdir()))} files): "
                  f"{len(undrawn)} grids not drawn; " + ("; ".join(rest) or "the rest the same"))
        else:
            lines = compare(old, new)
            if len(times["new"]) > 1:
                lines += compare(new, times["new"][1][2])
            print(f"old vs new report ({len(list(new.iterdir()))} files): "
                  + ("; ".join(lines) or same))
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()

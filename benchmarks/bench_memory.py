"""Peak memory of the client and of each worker during a partial paper run, and the size of the
store on disk, extrapolated to the full paper spec.

    python benchmarks/bench_memory.py [--only "dataset=ionosphere|mwm-ttscst,percent=10"]
                                      [--workers 2] [--interval 0.2] [--quick]

Runs ``pcskm run paper --only ... --store <tmp>`` as a child process and samples it and all its
descendants (the Dask worker processes) with psutil every --interval seconds. The peak of
each process is its RSS high-water mark (VmHWM in /proc/<pid>/status, read at every sample:
a peak between samples is not missed), or the largest sampled RSS where VmHWM is not
available; getrusage(RUSAGE_CHILDREN) gives the largest process of the tree as a check.
Target: under 2 GB each. Store size: apparent bytes of its files and disk usage (du, whole
file-system blocks). Apparent bytes are extrapolated to the paper spec by cell count: empty
layout + (store - empty layout) / cells computed x cells in the spec, where the empty layout is
the store ``runner.store.prepare`` creates for the spec before any cell (same groups,
coordinates and not-applicable marks). du is dominated by block rounding of the many small
chunk files, which a full run grows rather than multiplies, so it is given as a range from
the extrapolated file count (see the note printed under the table).
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from _common import DATA_DIR, machine, print_table

from pcskm.experiments import load_spec
from pcskm.runner.store import CubeView, prepare
from pcskm.runner.tasks import parse_only, plan

PAPER_ONLY = "dataset=ionosphere|mwm-ttscst,percent=10"
QUICK_ONLY = "dataset=ionosphere,percent=10,algorithm=LKM|PCKM|MPCKM"
RUN = "import sys; from runner.cli import main; sys.exit(main())"


def high_water_mark(process):
    """The process's RSS high-water mark in bytes (VmHWM), or its current RSS."""
    try:
        for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return process.memory_info().rss


def role(process, client):
    if process.pid == client.pid:
        return "client (pcskm run: scheduler, nannies, writer)"
    command = " ".join(process.cmdline())
    if "resource_tracker" in command:
        return "multiprocessing resource tracker"
    if "forkserver" in command:
        return "multiprocessing forkserver"
    return "worker"


def sample(command, interval):
    """Run ``command``; returns ({pid: (role, peak bytes)}, wall seconds, return code)."""
    peaks = {}
    start = time.perf_counter()
    client = psutil.Popen(command, stdout=subprocess.DEVNULL)
    while client.poll() is None:
        try:
            processes = [client, *client.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for process in processes:
            try:
                peak = high_water_mark(process)
                name = peaks[process.pid][0] if process.pid in peaks else role(process, client)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            peaks[process.pid] = (name, max(peak, peaks.get(process.pid, (name, 0))[1]))
        time.sleep(interval)
    return peaks, time.perf_counter() - start, client.wait()


def disk_size(path):
    """(apparent bytes, bytes on disk as du counts them, {group: number of files})."""
    sizes, used, files = 0, 0, {}
    for file in Path(path).rglob("*"):
        if file.is_file():
            stat = file.stat()
            sizes, used = sizes + stat.st_size, used + 512 * stat.st_blocks
            parts = file.relative_to(path).parts
            group = parts[0] if len(parts) > 1 else ""  # "": the root's own files
            files[group] = files.get(group, 0) + 1
    return sizes, used, files


def store_table(store, empty, n_selected, n_total, block):
    """Rows for the empty layout, the store after the run and the paper extrapolation."""
    size, used, files = disk_size(store)
    empty_size, empty_used, empty_files = disk_size(empty)
    apparent = empty_size + (size - empty_size) * n_total / n_selected
    touched = [g for g in files if g and files[g] != empty_files.get(g, 0)]
    new_files = sum(files[g] - empty_files.get(g, 0) for g in touched)
    n_groups = sum(1 for g in empty_files if g)
    n_files = sum(empty_files.values()) + new_files / max(len(touched), 1) * n_groups
    return [
        ("empty layout of the paper spec", 0, sum(empty_files.values()),
         round(empty_size / 1e6, 2), round(empty_used / 1e6, 1)),
        (f"after the run ({len(touched)} of {n_groups} groups written)", n_selected,
         sum(files.values()), round(size / 1e6, 2), round(used / 1e6, 1)),
        ("paper spec, extrapolated", n_total, round(n_files), round(apparent / 1e6, 1),
         f"{max(apparent, n_files * block) / 1e6:.0f} to {(apparent + n_files * block) / 1e6:.0f}"),
    ], (size - empty_size) / n_selected


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=PAPER_ONLY, help=f"selection (default {PAPER_ONLY})")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--interval", type=float, default=0.2, help="sampling period (s)")
    parser.add_argument("--quick", action="store_true", help=f"--only {QUICK_ONLY}")
    args = parser.parse_args()
    only = QUICK_ONLY if args.quick else args.only
    spec = load_spec("paper")
    print(f"machine: {machine()}; shared with other jobs while measured")
    with tempfile.TemporaryDirectory() as folder:
        store, empty = Path(folder) / "paper.zarr", Path(folder) / "empty.zarr"
        view = CubeView.planned(store, spec, DATA_DIR)
        n_selected = plan(spec, view, selection=parse_only(only), data_dir=DATA_DIR).n_cells
        n_total = plan(spec, view, data_dir=DATA_DIR).n_cells_total
        prepare(empty, spec, DATA_DIR)
        command = [sys.executable, "-c", RUN, "-q", "run", "paper", "--only", only,
                   "--store", str(store), "--workers", str(args.workers),
                   "--data-dir", str(DATA_DIR), "--no-progress"]
        print("command: pcskm " + " ".join(f"'{a}'" if "|" in a else a for a in command[4:]))
        peaks, seconds, code = sample(command, args.interval)
        tree_peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        block = os.statvfs(folder).f_bsize
        store_rows, per_cell = store_table(store, empty, n_selected, n_total, block)
    print(f"exit code {code}, {seconds:.0f} s wall, {n_selected} cells computed, sampled every "
          f"{args.interval} s\n")
    rows = sorted(((name, pid, round(peak / 2**20)) for pid, (name, peak) in peaks.items()),
                  key=lambda r: (not r[0].startswith("client"), r[0], r[1]))
    print_table(["process", "pid", "peak RSS MiB"], rows)
    largest = max(peak for _, peak in peaks.values())
    print(f"largest process of the tree by getrusage(RUSAGE_CHILDREN): "
          f"{tree_peak / 2**20:.0f} MiB (sampled: {largest / 2**20:.0f} MiB); target < 2048 MiB "
          f"each: {'met' if max(tree_peak, largest) < 2**31 else 'NOT met'}\n")
    print_table(["store", "cells", "files", "apparent MB", "du MB"], store_rows)
    print(f"\napparent bytes per cell written: {per_cell:.1f}. Extrapolation: apparent = empty "
          "layout + bytes per cell x cells in the spec; files = empty layout + the new chunk "
          "files per written group x groups (a finished group has every chunk file); du lies "
          f"between max(apparent, files x {block} B block) and apparent + files x block (each "
          "file rounded up to whole blocks).")
    return 0 if code == 0 else code


if __name__ == "__main__":
    sys.exit(main())

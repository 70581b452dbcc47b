"""docs/results/paper/timings.csv: the dry run, the run and the report of the committed paper
store, read from what each command printed under ``/usr/bin/time -v`` (dry_run.txt,
run_time.txt, report_time.txt: the report this folder holds, every main selection's grids
drawn; report_primary_time.txt: the default report, the primary selection's grids) and the
run record (runs.csv).

    python benchmarks/paper_timings.py [FOLDER] --load-before DRY RUN REPORT REPORT_PRIMARY

The load averages (1 min) before each step were read by the script that ran them
(``cat /proc/loadavg``); they are passed on the command line.
"""

import argparse
import csv
import re
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[1] / "docs" / "results" / "paper"
STEPS = (("dry run", "pcskm run paper --dry-run", "dry_run.txt"),
         ("run", "pcskm run paper --no-progress", "run_time.txt"),
         ("report", "pcskm report paper.zarr --grids all", "report_time.txt"),
         ("report, default grids", "pcskm report paper.zarr", "report_primary_time.txt"))


def time_v(text):
    """Wall seconds, user and system CPU seconds and the largest process's KiB of a
    ``/usr/bin/time -v`` output."""
    def field(name):
        return re.search(rf"{re.escape(name)}: (\S+)", text).group(1)

    wall = 0.0
    for part in field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":"):
        wall = 60 * wall + float(part)
    return (round(wall, 2), float(field("User time (seconds)")),
            float(field("System time (seconds)")),
            int(field("Maximum resident set size (kbytes)")))


def dry_run_estimate(text):
    """(compute core-hours, compile seconds, estimated run seconds on 2 workers) of the dry
    run's output: the run time is the start plus compute / (2 x ratio)."""
    core_hours = float(re.search(r"estimated compute: .*\(([\d.]+) core-hours\)", text).group(1))
    compiled = float(re.search(r"kernels compiled in (\d+) s", text).group(1))
    start = float(re.search(r"estimated start of the run: (\d+) s", text).group(1))
    ratio = float(re.search(r"worker time = ([\d.]+)", text).group(1))
    return core_hours, compiled, start + core_hours * 3600 / (2 * ratio)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=FOLDER)
    parser.add_argument("--load-before", nargs=len(STEPS), type=float, required=True)
    args = parser.parse_args()
    with (args.folder / "runs.csv").open() as handle:
        record = list(csv.DictReader(handle))[-1]
    dry = (args.folder / "dry_run.txt").read_text()
    core_hours, compiled, estimate = dry_run_estimate(dry)
    rows = []
    for (step, command, name), load in zip(STEPS, args.load_before, strict=True):
        wall, user, system, rss = time_v((args.folder / name).read_text())
        rows.append({"step": step, "command": command, "wall_seconds": wall,
                     "user_seconds": user, "system_seconds": system, "max_rss_kib": rss,
                     "max_rss_mib": round(rss / 1024, 1), "max_rss_gib": round(rss / 2**20, 2),
                     "load_1min_before": load})
    rows[0].update(compile_seconds=compiled, estimated_core_hours=core_hours,
                   estimated_run_seconds=round(estimate, 1),
                   estimated_run_hours=round(estimate / 3600, 2))
    rows[1].update(record_wall_seconds=float(record["wall_seconds"]),
                   run_over_estimate=round(float(record["wall_seconds"]) / estimate, 3),
                   dry_run_share_of_run=round(rows[0]["wall_seconds"] / rows[1]["wall_seconds"],
                                              4))
    run_cpu = rows[1]["user_seconds"] + rows[1]["system_seconds"]
    for row in rows[2:]:
        row.update(report_share_of_run_cpu=round(
            (row["user_seconds"] + row["system_seconds"]) / run_cpu, 4))
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with (args.folder / "timings.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()

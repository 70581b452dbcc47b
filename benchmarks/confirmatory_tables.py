"""The confirmatory study's own tables (docs/results/confirmatory/README.md), from its specs,
the real-set catalogue, the three reports' ``runs.csv`` and the dry runs' printed estimates:

* ``design.csv``: the design of the three specs, one row per quantity and spec;
* ``runs.csv``: every part of the three runs (the reports' ``runs.csv`` one after the other);
* ``budget.csv``: per spec, the dry run's estimate against the run's parts;
* ``report_times.csv``: the wall and CPU time of each spec's ``pcskm report``;
* ``dry_runs.csv``: what each dry run of ``dry_runs/`` estimated.

    python benchmarks/confirmatory_tables.py [docs/results/confirmatory]

The folder must hold ``standardised/``, ``raw/`` and ``sparsity/`` (each a report) and
``dry_runs/SPEC.txt`` (the output of ``pcskm run SPEC --dry-run``; for the primary spec, the
dry run made just before its run, ``dry_runs/confirmatory-60s.txt``).
"""

import csv
import re
import sys
from pathlib import Path

from pcskm.experiments import _weak_signal, real_sets
from pcskm.experiments.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
REPORTS = {"confirmatory": "standardised", "confirmatory-raw": "raw",
           "confirmatory-sparsity": "sparsity"}
DRY_RUNS = {"confirmatory": "confirmatory-60s.txt", "confirmatory-raw": "confirmatory-raw.txt",
            "confirmatory-sparsity": "confirmatory-sparsity.txt"}


def design_rows():
    """The design quantities of each spec, and the two families' sizes."""
    real = [row for row in csv.DictReader((ROOT / "docs/method/real_datasets.csv").open())
            if row["status"] == "IN"]
    rows = [("real_sets_in", "catalogue", len(real)),
            ("real_min_points", "catalogue", real_sets.MIN_POINTS),
            ("real_max_points", "catalogue", real_sets.MAX_POINTS),
            ("weak_groups", "generator", _weak_signal.N_GROUPS),
            ("weak_points_per_group", "generator", _weak_signal.N_PER_GROUP)]
    for name in REPORTS:
        spec = load_spec(name)
        rows += [("datasets", name, len(spec.datasets)),
                 ("algorithms", name, len(spec.algorithms)),
                 ("inits", name, len(spec.inits)),
                 ("kinds", name, len(spec.kinds)),
                 ("percentages", name, " ".join(f"{p:g}" for p in spec.percentages)),
                 ("n_runs", name, spec.n_runs),
                 ("n_folds", name, spec.n_folds),
                 ("max_iter", name, spec.max_iter),
                 ("sparsity_start", name, spec.sparsity_start),
                 ("sparsity_step", name, spec.sparsity_step),
                 ("sparsity_max_values", name, spec.sparsity_max_values),
                 ("cv_folds", name, spec.cv_folds),
                 ("gap_permutations", name, spec.gap_permutations)]
    return [{"quantity": q, "spec": s, "value": v} for q, s, v in rows]


def run_rows(folder):
    rows = []
    for sub in REPORTS.values():
        with (folder / sub / "runs.csv").open(newline="") as handle:
            rows += list(csv.DictReader(handle))
    return rows


def dry_run_estimate(path):
    """What a dry run printed: its tasks, the task groups it timed and all of them, the
    estimated core-hours and minutes on its workers."""
    text = path.read_text()
    wall = re.search(r"estimated run time on \d+ workers: ([\d.]+) (min|s|h)", text)
    timed = re.search(r"(\d+) of (\d+) task groups timed", text)
    return {"tasks": int(re.search(r"in (\d+) tasks", text).group(1)),
            "groups_timed": int(timed.group(1)), "groups": int(timed.group(2)),
            "dry_run_core_hours": float(re.search(r"\(([\d.]+) core-hours\)", text).group(1)),
            "dry_run_wall_minutes": float(wall.group(1)) * {"s": 1 / 60, "min": 1,
                                                           "h": 60}[wall.group(2)]}


def cpu_seconds(text):
    """User plus system CPU seconds of every ``/usr/bin/time -v`` block of a log."""
    return sum(float(value) for value in
               re.findall(r"(?:User|System) time \(seconds\): ([\d.]+)", text))


def report_rows(folder):
    """The wall and CPU time of each report, from the ``/usr/bin/time -v`` lines of its log
    (``run_logs/report-SPEC.txt``), beside the CPU time of every invocation of its run
    (``run_logs/SPEC.txt``; a part killed before it printed its times is not in it)."""
    rows = []
    for name in REPORTS:
        text = (folder / "run_logs" / f"report-{name}.txt").read_text()
        clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)",
                          text).group(1)
        seconds = sum(float(part) * 60 ** i for i, part in enumerate(reversed(clock.split(":"))))
        run_cpu = cpu_seconds((folder / "run_logs" / f"{name}.txt").read_text())
        rows.append({"spec": name, "report_wall_seconds": round(seconds, 1),
                     "report_cpu_seconds": round(cpu_seconds(text), 1),
                     "run_cpu_seconds": round(run_cpu, 1),
                     "report_over_run_cpu": round(cpu_seconds(text) / run_cpu, 3)})
    return rows


def budget_rows(folder, runs):
    rows = []
    for name in REPORTS:
        estimate = dry_run_estimate(folder / "dry_runs" / DRY_RUNS[name])
        minutes = estimate["dry_run_wall_minutes"]
        parts = [run for run in runs if run["spec"] == name]
        timed = [run for run in parts if run["wall_seconds"]]  # a killed part records none
        wall = sum(float(run["wall_seconds"]) for run in timed)
        rows.append({"spec": name, "parts": len(parts),
                     "parts_without_time": len(parts) - len(timed),
                     "run_wall_minutes": round(wall / 60, 1), **estimate,
                     "run_over_dry_run": round(wall / 60 / minutes, 3)})
    total = sum(row["run_wall_minutes"] for row in rows)
    estimated = sum(row["dry_run_wall_minutes"] for row in rows)
    rows.append({"spec": "all", "parts": sum(row["parts"] for row in rows),
                 "parts_without_time": sum(row["parts_without_time"] for row in rows),
                 "run_wall_minutes": round(total, 1),
                 "dry_run_wall_minutes": round(estimated, 1),
                 "dry_run_core_hours": round(sum(r["dry_run_core_hours"] for r in rows), 2),
                 "run_over_dry_run": round(total / estimated, 3)})
    return rows


def write(path, rows):
    with path.open("w", newline="") as handle:
        fields = list(dict.fromkeys(field for row in rows for field in row))  # every column
        writer = csv.DictWriter(handle, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main():
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs/results/confirmatory"
    runs = run_rows(folder)
    write(folder / "design.csv", design_rows())
    write(folder / "runs.csv", runs)
    write(folder / "budget.csv", budget_rows(folder, runs))
    write(folder / "report_times.csv", report_rows(folder))
    write(folder / "dry_runs.csv", [{"file": path.name, **dry_run_estimate(path)}
                                    for path in sorted((folder / "dry_runs").glob("*.txt"))])


if __name__ == "__main__":
    main()

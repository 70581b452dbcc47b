"""The confirmatory study's own tables (docs/results/confirmatory/README.md), from its specs,
the real-set catalogue, the three reports' ``runs.csv`` and the dry runs' printed estimates:

* ``design.csv``: the design of the three specs, one row per quantity and spec;
* ``runs.csv``: every part of the three runs (the reports' ``runs.csv`` one after the other);
* ``budget.csv``: per spec, the dry run's estimate against the run's parts.

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
    """(core-hours, minutes on its workers) printed by a dry run."""
    text = path.read_text()
    core_hours = float(re.search(r"\(([\d.]+) core-hours\)", text).group(1))
    wall = re.search(r"estimated run time on \d+ workers: ([\d.]+) (min|s|h)", text)
    return core_hours, float(wall.group(1)) * {"s": 1 / 60, "min": 1, "h": 60}[wall.group(2)]


def budget_rows(folder, runs):
    rows = []
    for name in REPORTS:
        core_hours, minutes = dry_run_estimate(folder / "dry_runs" / DRY_RUNS[name])
        parts = [run for run in runs if run["spec"] == name]
        wall = sum(float(run["wall_seconds"]) for run in parts)
        rows.append({"spec": name, "parts": len(parts),
                     "run_wall_minutes": round(wall / 60, 1),
                     "dry_run_wall_minutes": minutes, "dry_run_core_hours": core_hours,
                     "run_over_dry_run": round(wall / 60 / minutes, 3)})
    total = sum(row["run_wall_minutes"] for row in rows)
    rows.append({"spec": "all", "parts": sum(row["parts"] for row in rows),
                 "run_wall_minutes": round(total, 1),
                 "dry_run_wall_minutes": round(sum(r["dry_run_wall_minutes"] for r in rows), 1),
                 "dry_run_core_hours": round(sum(r["dry_run_core_hours"] for r in rows), 2),
                 "run_over_dry_run": round(total / sum(r["dry_run_wall_minutes"]
                                                       for r in rows), 3)})
    return rows


def write(path, rows):
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main():
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs/results/confirmatory"
    runs = run_rows(folder)
    write(folder / "design.csv", design_rows())
    write(folder / "runs.csv", runs)
    write(folder / "budget.csv", budget_rows(folder, runs))


if __name__ == "__main__":
    main()

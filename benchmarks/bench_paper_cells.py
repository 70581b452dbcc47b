"""Where the paper spec's compute goes: seconds per cell of every kind of task, and the
core-hours each kind adds up to over the whole spec.

Run by hand from the repository root:

    python benchmarks/bench_paper_cells.py [--repeat 3] [--families digits ionosphere ...]

A *task type* is (data-set family, algorithm, init). Each family is timed on one
representative data set of its shape (the 20 digits subsets on digits048-1, the 20
contaminated subsets on digits048-contaminated-1, the two Morris Water Maze sets on
mwm-ttscst, the two Brodinova sets on brodinova-5-5), and its cells are counted over every
data set of the family in ``experiments/specs/paper.toml``.

Sample of a type: ``experiments.cells.evaluate`` on real cells of the spec, run 0, every
constraint kind the init uses at 1 %, 5.5 % and 10 % (the mean cost of the percentage grid,
the costs being about linear in the constraint count), folds 0-2. LKM and SKM with a
deterministic init fit once per task and reuse the fit for every cell, so their sample is
five runs of all ten folds of the same blocks (the fit is then spread over 600 cells; in the
paper's tasks over 19 000, so their figure is a slight overestimate). Every sample is
evaluated once untimed (data loading, Numba caches), then ``--repeat`` times; the table shows
the median seconds per cell, the cells of the spec, their product in core-seconds and its
share of the total. Times are CPU time of this process (``time.process_time``; the engines
are single-threaded), so that other jobs on a shared machine do not inflate them. Each
(algorithm, init) is timed alone, so each row includes drawing the cells' constraint samples,
which the runner's tasks draw once for all the algorithms and inits of a cell: the total
overstates the spec's compute by that much (``pcskm run --dry-run`` subtracts it).
"""

import argparse
import fnmatch
import statistics
import time
from pathlib import Path

from pcskm.experiments import cells
from pcskm.experiments.cells import SEEDING, Block, Task
from pcskm.experiments.spec import load_spec
from pcskm.runner.store import CubeView
from pcskm.runner.tasks import settings

# family -> (representative data set, fnmatch patterns of its members in the spec)
FAMILIES = {
    "fisheriris": ("fisheriris", ["fisheriris"]),
    "ionosphere": ("ionosphere", ["ionosphere"]),
    "digits": ("digits048-1", ["digits048-[0-9]*", "digits389-[0-9]*"]),
    "mwm": ("mwm-ttscst", ["mwm-*"]),
    "brodinova": ("brodinova-5-5", ["brodinova-*"]),
    "contaminated": ("digits048-contaminated-1", ["digits*-contaminated-*"]),
}
PERCENTS = (1.0, 5.5, 10.0)


def sample_task(setting, spec):
    kinds = spec.seeding_kinds if setting.init == SEEDING else spec.kinds
    if setting.shares_fits:
        runs = tuple(range(min(5, spec.n_runs)))
        return Task((setting,), tuple(Block(k, p, runs) for k in kinds for p in PERCENTS))
    blocks = tuple(Block(k, p, (0,)) for k in kinds for p in PERCENTS)
    return Task((setting,), blocks, folds=(0, 1, 2))


def seconds_per_cell(task, repeat):
    cells.evaluate(task)
    times = []
    for _ in range(repeat):
        start = time.process_time()
        cells.evaluate(task)
        times.append(time.process_time() - start)
    return statistics.median(times) / task.n_cells


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--families", nargs="*", default=list(FAMILIES))
    parser.add_argument("--algorithms", nargs="*", default=None)
    args = parser.parse_args()

    spec = load_spec("paper")
    view = CubeView.planned(Path("never-created.zarr"), spec)
    by_key = {(s.dataset, s.algorithm, s.init): s for s in settings(spec, view)}
    algorithms = args.algorithms or [v.name for v in spec.algorithms]
    cells_per = {init: len(spec.seeding_kinds if init == SEEDING else spec.kinds)
                 * len(spec.percentages) * spec.n_runs * spec.n_folds for init in spec.inits}

    rows = []
    print(f"{'family':13s} {'algorithm':12s} {'init':8s} {'ms/cell':>8s} {'cells':>9s} "
          f"{'core-s':>8s}", flush=True)
    for family in args.families:
        representative, patterns = FAMILIES[family]
        members = [d for d in spec.datasets if any(fnmatch.fnmatchcase(d, p) for p in patterns)]
        for algorithm in algorithms:
            for init in spec.inits:
                setting = by_key[(representative, algorithm, init)]
                per_cell = seconds_per_cell(sample_task(setting, spec), args.repeat)
                n_cells = len(members) * cells_per[init]
                rows.append((family, algorithm, init, per_cell, n_cells))
                print(f"{family:13s} {algorithm:12s} {init:8s} {per_cell * 1e3:8.3f} "
                      f"{n_cells:9d} {per_cell * n_cells:8.0f}", flush=True)
    total = sum(r[3] * r[4] for r in rows)
    print(f"\ntotal: {sum(r[4] for r in rows)} cells, {total:.0f} core-s "
          f"({total / 3600:.2f} core-hours; {total / 3600 / 2:.2f} h on 2 ideal workers)")
    for index, name in ((1, "algorithm"), (0, "family"), (2, "init")):
        shares = {}
        for row in rows:
            shares[row[index]] = shares.get(row[index], 0.0) + row[3] * row[4]
        print(f"by {name}: " + ", ".join(
            f"{key} {value / 3600:.2f} h ({100 * value / total:.0f} %)"
            for key, value in sorted(shares.items(), key=lambda kv: -kv[1])))


if __name__ == "__main__":
    main()

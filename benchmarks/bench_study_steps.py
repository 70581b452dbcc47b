"""Where the paper spec's compute goes, by step: the fits of the cells, the fold fits of the
constraint cross-validation, its held-out scores and pair AUC, and the gap statistic's null
fits, per (data set, algorithm, init), with the core-seconds each adds up to over the spec.

Run by hand from the repository root (one family takes minutes):

    python benchmarks/bench_study_steps.py --families fisheriris ionosphere \\
        --csv docs/results/speed/study_steps.csv
    python benchmarks/bench_study_steps.py --together --families digits ionosphere mwm
    python benchmarks/bench_study_steps.py --together --engines --families digits

The samples are those of ``bench_paper_cells.py`` (``experiments.cells.evaluate`` on real
cells of ``experiments/specs/paper.toml``, run 0, 1 %, 5.5 % and 10 %, folds 0-2), timed in
CPU seconds of this process (``time.process_time``) once after an untimed evaluation, each
setting alone in its task (the fits that the settings of a cell or the cells of a task share
are counted by ``bench_shared_fits.py``). The sampled runs all get CV scores: the ms per
cell of the CV steps are those of a cell with them, and their core-seconds count the cells
of the spec's ``cv_runs`` only. The steps are told apart by timing the functions the cells
call:

* ``cv_fold_fits``: the fold fits of the cross-validation (the function returned by
  ``pcskm.algorithms.selection.fold_fitter``);
* ``cv_scores``: the rest of ``cross_validate``, the held-out F-measures and the pair AUC;
* ``gap``: the gap statistic (``SelectionScorer._gap``: its null fits and objectives);
* ``fits``: all else of the cell, chiefly the fit of the cell (every s of the path), with
  the constraint sample and the recording of its results.

With ``--engines`` (and ``--together``), the CPU seconds inside the compiled engines (the
s-path, PCKM's clustering and MPCKM's loop: ``ENGINES``) are also counted by the step that
called them. Their ratio, the fold fits' engine time over the cell fits', is the floor of the
selection scores' cost relative to the fits: what it would be if all the Python and NumPy
around the engines cost nothing and the engines computed the same numbers.

Writing the chunks and their digests is not in ``evaluate``; a run records its share
(``write_seconds`` against ``compute_seconds`` in ``runs.csv`` of a report).
"""

import argparse
import csv
import fnmatch
import time
from contextlib import contextmanager
from pathlib import Path

from bench_paper_cells import FAMILIES, PERCENTS, sample_task

from pcskm.algorithms import _mpckm, _pckm, _sparse
from pcskm.experiments import cells, selection_scores
from pcskm.experiments.cells import SEEDING, Block, Task
from pcskm.experiments.spec import load_spec
from pcskm.runner.store import CubeView
from pcskm.runner.tasks import settings

STEPS = ("fits", "cv_fold_fits", "cv_scores", "gap")
CV_STEPS = ("cv_fold_fits", "cv_scores")
# the compiled engines, by the module whose Python calls them
ENGINES = ((_sparse, "sparse_path_from"), (_sparse, "sparse_path"), (_sparse, "pckm_fit"),
           (_pckm, "pckm_fit"), (_mpckm, "_mpckm_loop"))


class Clock:
    """CPU seconds spent inside the wrapped functions, by step (a step inside another is
    taken off the outer one)."""

    def __init__(self):
        self.seconds = dict.fromkeys(STEPS[1:], 0.0)
        self.inner = 0.0  # seconds of the wrapped calls inside the call being timed
        self.step = "fits"  # the step being timed
        self.engine_seconds = dict.fromkeys(STEPS, 0.0)  # inside ENGINES, by step

    def timed(self, step, function):
        def wrapper(*args, **kwargs):
            outer, self.inner = self.inner, 0.0
            caller, self.step = self.step, step
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent = time.process_time() - start
                self.seconds[step] += spent - self.inner
                self.inner = outer + spent
                self.step = caller
        return wrapper

    def engine(self, function):
        """``function`` (a compiled engine) counting its seconds in ``engine_seconds`` of the
        step that calls it; they stay in that step's ``seconds`` too."""
        def wrapper(*args, **kwargs):
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.engine_seconds[self.step] += time.process_time() - start
        return wrapper


@contextmanager
def steps_timed(clock, engines=False):
    """Wrap the functions of the selection scores in ``clock`` for the time of the block, and
    with ``engines`` the ``ENGINES`` too."""
    fold_fitter = selection_scores.fold_fitter
    cross_validate = selection_scores.cross_validate
    gap = selection_scores.SelectionScorer._gap
    kernels = [(module, name, getattr(module, name)) for module, name in ENGINES]

    def timed_fold_fitter(*args, **kwargs):
        fit_fold = fold_fitter(*args, **kwargs)
        return None if fit_fold is None else clock.timed("cv_fold_fits", fit_fold)

    selection_scores.fold_fitter = timed_fold_fitter
    selection_scores.cross_validate = clock.timed("cv_scores", cross_validate)
    selection_scores.SelectionScorer._gap = clock.timed("gap", gap)
    for module, name, kernel in kernels if engines else ():
        setattr(module, name, clock.engine(kernel))
    try:
        yield clock
    finally:
        selection_scores.fold_fitter = fold_fitter
        selection_scores.cross_validate = cross_validate
        selection_scores.SelectionScorer._gap = gap
        for module, name, kernel in kernels:
            setattr(module, name, kernel)


def seconds_by_step(task, engines=False):
    """CPU seconds per cell of ``task`` by step, after one untimed evaluation; with
    ``engines``, also those inside the compiled engines by step (keys ``engine_<step>``)."""
    cells.evaluate(task)
    with steps_timed(Clock(), engines) as clock:
        start = time.process_time()
        cells.evaluate(task)
        total = time.process_time() - start
    by_step = {step: seconds / task.n_cells for step, seconds in clock.seconds.items()}
    by_step["fits"] = total / task.n_cells - sum(by_step.values())
    if engines:
        by_step.update({f"engine_{step}": seconds / task.n_cells
                        for step, seconds in clock.engine_seconds.items()})
    return by_step


def together(spec, view, family, engines=False):
    """CPU seconds per cell by step of the family's representative data set with all its
    settings evaluated together, as the runner's tasks group them (the deterministic inits
    in one task, Seeding in another), so that what a cell's settings and a task's cells
    share is shared: runs 0-4 (with CV scores in the paper spec), the samples' percentages
    and folds; ``engines``: see :func:`seconds_by_step`."""
    dataset = FAMILIES[family][0]
    seconds, n_cells = {}, 0
    for seeding in (False, True):
        chosen = tuple(s for s in settings(spec, view)
                       if s.dataset == dataset and (s.init == SEEDING) == seeding)
        kinds = spec.seeding_kinds if seeding else spec.kinds
        task = Task(chosen, tuple(Block(kind, percent, tuple(range(min(5, spec.n_runs))))
                                  for kind in kinds for percent in PERCENTS), folds=(0, 1, 2))
        for step, value in seconds_by_step(task, engines).items():
            seconds[step] = seconds.get(step, 0.0) + value * task.n_cells
        n_cells += task.n_cells
    return {step: value / n_cells for step, value in seconds.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="*", default=["fisheriris", "ionosphere"])
    parser.add_argument("--csv", type=Path, default=None)
    parser.add_argument("--together", action="store_true",
                        help="only the families' settings evaluated together (together())")
    parser.add_argument("--engines", action="store_true",
                        help="with --together: the seconds inside the compiled engines too")
    args = parser.parse_args()
    if args.engines and not args.together:
        parser.error("--engines needs --together")

    spec = load_spec("paper")
    view = CubeView.planned(Path("never-created.zarr"), spec)
    by_key = {(s.dataset, s.algorithm, s.init): s for s in settings(spec, view)}
    cells_per = {init: len(spec.seeding_kinds if init == SEEDING else spec.kinds)
                 * len(spec.percentages) * spec.n_runs * spec.n_folds for init in spec.inits}
    cv_share = min(spec.cv_runs or spec.n_runs, spec.n_runs) / spec.n_runs
    if args.together:
        for family in args.families:
            by_step = together(spec, view, family, args.engines)
            print(f"{family}, settings together, ms per cell of runs 0-4: "
                  + ", ".join(f"{step} {by_step[step] * 1e3:.4f}" for step in STEPS)
                  + "; selection scores (cv_fold_fits + cv_scores) / fits: "
                  f"{(by_step['cv_fold_fits'] + by_step['cv_scores']) / by_step['fits']:.2f}",
                  flush=True)
            if args.engines:
                print(f"{family}, inside the engines, ms per cell: "
                      + ", ".join(f"{step} {by_step[f'engine_{step}'] * 1e3:.4f}"
                                  for step in STEPS)
                      + "; the floor of selection / fits (engine cv_fold_fits / engine fits): "
                      f"{by_step['engine_cv_fold_fits'] / by_step['engine_fits']:.2f}",
                      flush=True)
        return
    rows = []
    for family in args.families:
        representative, patterns = FAMILIES[family]
        members = [d for d in spec.datasets if any(fnmatch.fnmatchcase(d, p) for p in patterns)]
        for variant in spec.algorithms:
            for init in spec.inits:
                by_step = seconds_by_step(sample_task(
                    by_key[(representative, variant.name, init)], spec))
                n_cells = len(members) * cells_per[init]
                row = {"family": family, "dataset": representative,
                       "algorithm": variant.name, "init": init, "cells_in_spec": n_cells,
                       **{f"{step}_ms_per_cell": round(by_step[step] * 1e3, 4)
                          for step in STEPS},
                       **{f"{step}_core_s": round(by_step[step] * n_cells
                                                  * (cv_share if step in CV_STEPS else 1), 1)
                          for step in STEPS}}
                rows.append(row)
                print(", ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    totals = {step: sum(row[f"{step}_core_s"] for row in rows) for step in STEPS}
    per_cell = {step: sum(row[f"{step}_ms_per_cell"] * row["cells_in_spec"] for row in rows)
                for step in STEPS}
    print("core-seconds by step: " + ", ".join(f"{s} {v:.0f}" for s, v in totals.items())
          + "; selection scores (cv_fold_fits + cv_scores) / fits of the same cells: "
          f"{(per_cell['cv_fold_fits'] + per_cell['cv_scores']) / per_cell['fits']:.2f}")
    if args.csv is not None:
        with args.csv.open("w", newline="") as file:
            writer = csv.DictWriter(file, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()

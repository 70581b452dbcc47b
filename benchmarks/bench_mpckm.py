"""Microseconds per MPCKM fit on the paper's data sizes, numba engine vs the plain reference.

Run by hand from the repository root:

    python benchmarks/bench_mpckm.py [--problems 5] [--repeat 20]

Per data set: ``--problems`` random problems (constraints drawn without replacement from the
label-derived pool over a random 90 % of the points, centres = k random rows, all labels -1);
the engine's time is the best of ``--repeat`` timed passes over the problems (JIT warmed
first), the reference's one pass; the ratio is measured in the same run. Data come from
the data folder of the CLI.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.io

from pcskm.experiments import resolve_data_dir

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from reference.mpckm import mpckm as reference_mpckm  # noqa: E402

from pcskm.algorithms._mpckm import mpckm_engine  # noqa: E402
from pcskm.algorithms.constraints import Constraints, constraints_from_labels  # noqa: E402

DATA = resolve_data_dir()[0]
DATA_SETS = (  # (name, file, number of constraints)
    ("digits048 data1", "datasets/digits048/data1.mat", 900),
    ("ionosphere", "datasets/real/ionosphere.mat", 5000),
    ("TTSCST", "datasets/MWM/TTSCST.mat", 7000),
)


def load(path):
    mat = scipy.io.loadmat(DATA / path)
    X = np.ascontiguousarray(mat["x"], dtype=np.float64)
    labels = np.unique(mat["x_labs"].ravel(), return_inverse=True)[1]
    return X, labels


def random_problem(X, labels, n_constraints, rng):
    n = len(X)
    k = int(labels.max()) + 1
    index = rng.choice(n, size=round(0.9 * n), replace=False)
    ml, cl = constraints_from_labels(labels, index)
    pool = np.concatenate([ml, cl])
    is_ml = np.arange(len(pool)) < len(ml)
    pick = np.sort(rng.choice(len(pool), size=n_constraints, replace=False))
    must_link, cannot_link = pool[pick[is_ml[pick]]], pool[pick[~is_ml[pick]]]
    centers = X[rng.choice(n, size=k, replace=False)]
    return must_link, cannot_link, centers


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(20240607)
    print(f"{'data set':<16} {'n':>4} {'p':>3} {'k':>2} {'m':>5} {'passes':>7} "
          f"{'engine us/fit':>14} {'reference us/fit':>17} {'ratio':>7}")
    for name, path, n_constraints in DATA_SETS:
        X, labels = load(path)
        n, p = X.shape
        k = int(labels.max()) + 1
        problems = [random_problem(X, labels, n_constraints, rng) for _ in range(args.problems)]
        prepared = [
            (Constraints.from_pairs(ml, cl, n_samples=n), centers)
            for ml, cl, centers in problems
        ]
        unassigned = np.full(n, -1, dtype=np.int64)
        mpckm_engine(X, prepared[0][1], unassigned, prepared[0][0])  # warm the JIT
        engine_best = np.inf
        for _ in range(args.repeat):
            start = time.perf_counter()
            results = [mpckm_engine(X, centers, unassigned, cons) for cons, centers in prepared]
            engine_best = min(engine_best, time.perf_counter() - start)
        start = time.perf_counter()
        expected = [
            reference_mpckm(X, centers, unassigned, ml, cl) for ml, cl, centers in problems
        ]
        reference_time = time.perf_counter() - start
        for got, want in zip(results, expected, strict=True):
            if not (np.array_equal(got.labels, want["labels"]) and got.n_iter == want["n_iter"]):
                raise SystemExit(f"{name}: engine and reference disagree")
        engine_us = 1e6 * engine_best / len(problems)
        reference_us = 1e6 * reference_time / len(problems)
        passes = np.mean([r.n_iter for r in results])
        print(f"{name:<16} {n:>4} {p:>3} {k:>2} {n_constraints:>5} {passes:>7.1f} "
              f"{engine_us:>14.0f} {reference_us:>17.0f} {reference_us / engine_us:>6.0f}x")


if __name__ == "__main__":
    main()

"""Microseconds per fit of the estimators on the paper's data sizes, with side-by-side ratios
measured in the same run.

Run by hand from the repository root:

    python benchmarks/bench_algorithms.py [--repeat 30] [--reference-repeat 2]

For each data set: DKM++ centres, and constraints drawn without replacement from the
label-derived pool (1 % and 10 % of the pairs of 90 % of the points, the protocol's range).
Rows:

* LKM: ``LloydKMeans(init=C0)`` vs scikit-learn ``KMeans(init=C0, n_init=1,
  algorithm="lloyd", max_iter=25)``; scikit-learn's threads are limited to 1 with
  threadpoolctl (our engine is single-threaded), and both times include input validation.
* PCKM / MPCKM: the estimator vs the plain-loop reference of ``tests/reference``.
* PCSKM / SKM: ``fit_path`` over the s grid 1.1, 1.3, ... <= sqrt(p) vs one ``fit`` per s.
* The s-path target: digits048 data1 (n=150, p=16, k=3), 900 constraints, s = 1.1:0.2:3.9.

Each time is the median over ``--repeat`` calls after one warm-up call (JIT compiled and
cached before timing); the references are run ``--reference-repeat`` times. Data come from
the data folder of the CLI. Every row also checks that the two
sides agree (labels), so a fast wrong answer cannot pass unnoticed.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.io

from pcskm.experiments import resolve_data_dir

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the plain reference implementations

from reference.mpckm import mpckm as reference_mpckm  # noqa: E402
from reference.pckm import pckm as reference_pckm  # noqa: E402
from sklearn.cluster import KMeans  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from pcskm.algorithms import (  # noqa: E402
    ClusteringFailedWarning,
    LloydKMeans,
    MPCKMeans,
    PCKMeans,
    PCSKMeans,
    SparseKMeans,
    constraints_from_labels,
    dkmpp_init,
)
from pcskm.algorithms._pckm import pckm_engine  # noqa: E402
from pcskm.algorithms.constraints import Constraints  # noqa: E402

DATA = resolve_data_dir()[0]
DATA_SETS = (  # (name, file, k)
    ("digits048/data1", "datasets/digits048/data1.mat", 3),
    ("ionosphere", "datasets/real/ionosphere.mat", 2),
    ("TTSCST", "datasets/MWM/TTSCST.mat", 3),
)


def load(path):
    mat = scipy.io.loadmat(DATA / path)
    return np.asarray(mat["x"], dtype=np.float64), np.asarray(mat["x_labs"]).ravel()


def sample_constraints(labels, fraction, rng):
    """m = fraction of the pairs of a random 90 % of the points, drawn from the pool."""
    n = len(labels)
    train = np.sort(rng.choice(n, size=int(round(0.9 * n)), replace=False))
    ml, cl = constraints_from_labels(labels, train)
    pool = np.concatenate([ml, cl])
    is_ml = np.arange(len(pool)) < len(ml)
    chosen = rng.choice(len(pool), size=int(round(fraction * len(pool))), replace=False)
    return pool[chosen][is_ml[chosen]], pool[chosen][~is_ml[chosen]]


def median_us(repeat, function, *args, **kwargs):
    """Median microseconds of ``function(*args, **kwargs)``; returns (time, last result)."""
    result = function(*args, **kwargs)  # warm-up (numba's cached compile, imports)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = function(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return 1e6 * float(np.median(times)), result


def row(data, m, what, ours, theirs, label):
    ratio = theirs / ours
    print(f"{data:16s} {m:6d}  {what:34s} {ours:12.1f} {theirs:14.1f}  {ratio:8.2f}x  {label}")


def fit_each_s(estimator, X, grid, **fit_kw):
    return np.array([estimator.set_params(sparsity=s).fit(X, **fit_kw).labels_ for s in grid])


def bench_data_set(name, X, y, k, rng, args):
    C0 = X[dkmpp_init(X, k)]
    grid = np.arange(1.1, np.sqrt(X.shape[1]) + 1e-9, 0.2)
    repeat, ref_repeat = args.repeat, args.reference_repeat

    with threadpool_limits(limits=1):
        t_sklearn, theirs = median_us(
            repeat, KMeans(n_clusters=k, init=C0, n_init=1, algorithm="lloyd", max_iter=25).fit,
            X)
    t_lkm, ours = median_us(repeat, LloydKMeans(k, init=C0).fit, X)
    assert (ours.labels_ == theirs.labels_).all()
    row(name, 0, "LloydKMeans.fit", t_lkm, t_sklearn, "sklearn KMeans lloyd, 1 thread")

    for fraction in (0.01, 0.1):
        ml, cl = sample_constraints(y, fraction, rng)
        m = len(ml) + len(cl)
        fit_kw = dict(must_link=ml, cannot_link=cl)
        constraints = Constraints.from_pairs(ml, cl, n_samples=len(X))

        t_ref, want = median_us(ref_repeat, reference_pckm, X, C0, ml, cl)
        t_pckm, ours = median_us(repeat, PCKMeans(k, init=C0).fit, X, **fit_kw)
        assert (ours.labels_ == want["labels"]).all()
        row(name, m, "PCKMeans.fit", t_pckm, t_ref, "plain reference (tests/reference)")
        t_engine, result = median_us(repeat, pckm_engine, X, C0, constraints)
        assert (result.labels == want["labels"]).all()
        row(name, m, "PCKM engine only", t_engine, t_ref, "plain reference (tests/reference)")
        t_validate, _ = median_us(repeat, Constraints.from_pairs, ml, cl, n_samples=len(X))
        print(f"{'':16s} {'':6s}  {'(of which Constraints.from_pairs)':34s} {t_validate:12.1f}")

        t_ref, want = median_us(ref_repeat, reference_mpckm, X, C0, [-1] * len(X), ml, cl)
        t_mpckm, ours = median_us(repeat, MPCKMeans(k, init=C0).fit, X, **fit_kw)
        assert (ours.labels_ == want["labels"]).all()
        row(name, m, "MPCKMeans.fit", t_mpckm, t_ref, "plain reference (tests/reference)")

        for cls in (PCSKMeans, SparseKMeans):
            estimator = cls(k, init=C0)
            t_path, path = median_us(repeat, estimator.fit_path, X, grid, **fit_kw)
            t_fits, labels = median_us(repeat, fit_each_s, estimator, X, grid, **fit_kw)
            assert (labels == path.labels).all()
            row(name, m, f"{cls.__name__}.fit_path ({len(grid)} s)", t_path, t_fits,
                f"{len(grid)} x fit, one per s")


def bench_s_path(args):
    X, y = load("datasets/digits048/data1.mat")
    C0 = X[dkmpp_init(X, 3)]
    grid = np.round(np.arange(1.1, 3.95, 0.2), 10)
    print(f"\ns-path target: digits048/data1, n=150, p=16, k=3, s = 1.1:0.2:3.9 ({len(grid)} "
          "values), 900 constraints from the whole pool, DKM++ centres")
    ml_pool, cl_pool = constraints_from_labels(y)
    pool = np.concatenate([ml_pool, cl_pool])
    is_ml = np.arange(len(pool)) < len(ml_pool)
    estimator = PCSKMeans(3, init=C0)
    per_path = []
    for seed in range(10):
        chosen = np.random.default_rng(seed).choice(len(pool), size=900, replace=False)
        fit_kw = dict(must_link=pool[chosen][is_ml[chosen]],
                      cannot_link=pool[chosen][~is_ml[chosen]])
        t_path, result = median_us(args.repeat, estimator.fit_path, X, grid, **fit_kw)
        per_path.append(t_path)
        print(f"  sample {seed}: {t_path / 1000:6.3f} ms per path ({t_path / len(grid):6.1f} us "
              f"per s); weight iterations {result.n_iter.tolist()}")
    print(f"  median {np.median(per_path) / 1000:.3f} ms per path, "
          f"{np.median(per_path) / len(grid):.1f} us per s (target < 3 ms, 200 us per s)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--reference-repeat", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore", ClusteringFailedWarning)
    rng = np.random.default_rng(2024)
    print(f"{'data':16s} {'m':>6s}  {'fit':34s} {'ours (us)':>12s} {'other (us)':>14s}"
          f"  {'ratio':>9s}  other")
    for name, path, k in DATA_SETS:
        X, y = load(path)
        bench_data_set(name, X, y, k, rng, args)
    bench_s_path(args)


if __name__ == "__main__":
    main()

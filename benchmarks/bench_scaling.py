"""How fit time grows with n, p, k and the number of constraints m: a table, the fitted
log-log exponents and a log-log plot.

    python benchmarks/bench_scaling.py [--repeat 21] [--out benchmarks/out/scaling.png] [--quick]

Synthetic data (NumPy seed 0): k Gaussian blobs (unit variance, centres drawn N(0, 1)) in
the first p/2 features, the other p/2 pure N(0, 1) noise; constraints: m distinct random
pairs labelled must-link / cannot-link by the blobs. One factor varies at a time around the
base point n=1000, p=20, k=4, m=2000: n 150 -> 5000, p 4 -> 200, k 2 -> 10, m 100 -> 50000.
Every fit starts from one point of each blob. Rows: LKM, PCKM, MPCKM ``fit`` and PCSKM
``fit_path`` over the s grid of p (protocol.md §7), and ``Constraints.from_pairs`` (the
validation and CSR build every constrained fit does once).

Time per pass = time per fit / passes (assignment + update sweeps; for PCSKM the inner PCKM
passes over all s). It still carries the one-off costs of a fit (validation, constraint
setup, init), which weigh more when a fit makes few passes (e.g. 3 at m = 50000), so the
table also gives the marginal time per pass: (time per fit - time per fit with max_iter=1) /
(passes - passes with max_iter=1), in which the one-off costs cancel.
Exponent = least-squares slope of log(time) on log(factor), over all values and over the
larger half of them ("upper"; at the small end the fixed costs flatten the slopes, so it is
closest to the asymptotic growth). Times are medians over --repeat calls; the machine may be
shared with other jobs, so single values are noisy.
"""

import argparse
import warnings
from pathlib import Path

import numpy as np
from _common import REPO, machine, median_seconds, print_table

from pcskm.algorithms import LloydKMeans, MPCKMeans, PCKMeans, PCSKMeans
from pcskm.algorithms.constraints import Constraints
from pcskm.experiments import sparsity_grid

BASE = {"n": 1000, "p": 20, "k": 4, "m": 2000}
FACTORS = {
    "n": (150, 300, 600, 1250, 2500, 5000),
    "p": (4, 10, 25, 50, 100, 200),
    "k": (2, 3, 4, 6, 8, 10),
    "m": (100, 300, 1000, 3000, 10000, 30000, 50000),
}
SETUP = "Constraints.from_pairs"
CONSTRAINED = ("PCKM", "MPCKM", "PCSKM fit_path")
COLOURS = {"LKM": "tab:blue", "PCKM": "tab:orange", "MPCKM": "tab:green",
           "PCSKM fit_path": "tab:red", SETUP: "tab:purple"}
QUICK_FACTORS = {"n": (150, 600, 2500), "p": (4, 25, 100), "k": (2, 4, 8), "m": (100, 3000, 30000)}


def blobs(n, p, k, seed=0):
    """X (n, p) and labels: k blobs in the first p/2 features, noise in the rest."""
    rng = np.random.default_rng(seed)
    informative = max(1, p // 2)
    labels = np.arange(n) % k
    X = rng.normal(size=(n, p))
    X[:, :informative] += rng.normal(scale=1.0, size=(k, informative))[labels]
    return X, labels


def random_constraints(labels, m, seed=0):
    """(must_link, cannot_link): m distinct random pairs a < b, labelled by ``labels``."""
    rng = np.random.default_rng(seed)
    n = len(labels)
    if m > n * (n - 1) // 2:
        raise ValueError(f"m={m} exceeds the {n * (n - 1) // 2} pairs of {n} points")
    codes = np.empty(0, dtype=np.int64)
    while len(codes) < m:
        a, b = rng.integers(0, n, size=(2, 2 * m))
        fresh = np.minimum(a, b) * n + np.maximum(a, b)
        codes = np.unique(np.concatenate([codes, fresh[a != b]]))
    pairs = np.stack(divmod(rng.permutation(codes)[:m], n), axis=1)
    same = labels[pairs[:, 0]] == labels[pairs[:, 1]]
    return pairs[same], pairs[~same]


def fits(X, k, must_link, cannot_link, max_iter=None):
    """{algorithm: callable returning the passes of one fit}; ``max_iter`` caps every
    estimator (None: their defaults)."""
    centres = X[:k]  # labels = arange(n) % k: one point of each blob
    constraints = {"must_link": must_link, "cannot_link": cannot_link}
    grid = sparsity_grid(X.shape[1])
    cap = {} if max_iter is None else {"max_iter": max_iter}

    def fit(cls, **kw):
        estimator = cls(k, init=centres, **cap)
        return lambda: estimator.fit(X, **kw).n_iter_

    path = PCSKMeans(k, init=centres, **cap)
    return {
        SETUP: lambda: setup(must_link, cannot_link, len(X)),
        "LKM": fit(LloydKMeans),
        "PCKM": fit(PCKMeans, **constraints),
        "MPCKM": fit(MPCKMeans, **constraints),
        "PCSKM fit_path": lambda: int(path.fit_path(X, grid, **constraints).inner_n_iter.sum()),
    }


def setup(must_link, cannot_link, n):
    """One ``Constraints.from_pairs`` call, counted as one pass."""
    Constraints.from_pairs(must_link, cannot_link, n_samples=n)
    return 1


def measure(factors, repeat):
    """Rows (factor, value, algorithm, s/fit, passes, s/pass, marginal s/pass): s/pass = s/fit
    over passes; marginal = (s/fit - s/fit at max_iter=1) / (passes - passes at max_iter=1),
    NaN when the capped fit made as many passes."""
    rows = []
    for factor, values in factors.items():
        for value in values:
            point = dict(BASE, **{factor: value})
            X, labels = blobs(point["n"], point["p"], point["k"])
            must_link, cannot_link = random_constraints(labels, point["m"])
            capped = fits(X, point["k"], must_link, cannot_link, max_iter=1)
            for algorithm, run in fits(X, point["k"], must_link, cannot_link).items():
                if factor == "m" and algorithm == "LKM":
                    continue  # it takes no constraints
                seconds, passes = median_seconds(repeat, run, warm_up=False)
                marginal = np.nan
                if algorithm != SETUP:
                    seconds_1, passes_1 = median_seconds(repeat, capped[algorithm],
                                                         warm_up=False)
                    if passes > passes_1:
                        marginal = (seconds - seconds_1) / (passes - passes_1)
                rows.append((factor, value, algorithm, seconds, passes, seconds / passes,
                             marginal))
            print(f"  measured {factor}={value}", flush=True)
    return rows


def slopes(rows, column):
    """{(factor, algorithm): (least-squares slope over all values, over the larger half)} in
    log-log, leaving out NaN and non-positive times."""
    result = {}
    for factor, algorithm in dict.fromkeys((r[0], r[2]) for r in rows):
        points = [(r[1], r[column]) for r in rows
                  if r[0] == factor and r[2] == algorithm and r[column] > 0]
        x, y = np.log([v for v, _ in points]), np.log([t for _, t in points])
        upper = len(x) // 2
        result[factor, algorithm] = tuple(
            np.polyfit(x[i:], y[i:], 1)[0] if len(x) - i >= 2 else np.nan for i in (0, upper))
    return result


def plot(rows, fit_slopes, pass_slopes, out):
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    factors = list(dict.fromkeys(r[0] for r in rows))
    figure, axes = plt.subplots(2, 2, figsize=(12, 9))
    for axis, factor in zip(axes.ravel(), factors, strict=False):
        for algorithm in dict.fromkeys(r[2] for r in rows if r[0] == factor):
            mine = [r for r in rows if r[0] == factor and r[2] == algorithm]
            values = [r[1] for r in mine]
            axis.loglog(values, [r[3] for r in mine], "o-", color=COLOURS[algorithm],
                        label=f"{algorithm}: fit {fit_slopes[factor, algorithm][0]:.2f}")
            if algorithm != SETUP:
                axis.loglog(values, [r[6] for r in mine], "s--", color=COLOURS[algorithm],
                            alpha=0.6,
                            label=f"marginal pass {pass_slopes[factor, algorithm][0]:.2f}")
        others = ", ".join(f"{f}={v}" for f, v in BASE.items() if f != factor)
        axis.set(xlabel=factor, ylabel="seconds", title=f"time vs {factor} ({others})")
        axis.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        axis.legend(fontsize=7)
        axis.grid(True, which="both", alpha=0.3)
    figure.suptitle("per fit (solid) and marginal time per pass (dashed); "
                    "legend: fitted log-log exponent")
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out" / "scaling.png")
    parser.add_argument("--quick", action="store_true", help="3 values per factor, 3 calls")
    args = parser.parse_args()
    factors, repeat = (QUICK_FACTORS, 3) if args.quick else (FACTORS, args.repeat)
    print(f"machine: {machine()}; shared with other jobs while measured")
    print(f"base point {BASE}; medians of {repeat} calls")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # failed or capped fits warn; they are still timed
        X, labels = blobs(60, 4, 2)
        for run in fits(X, 2, *random_constraints(labels, 50)).values():
            run()  # Numba caches read before any timing
        rows = measure(factors, repeat)
    print_table(["factor", "value", "algorithm", "ms/fit", "passes", "ms/pass",
                 "marginal ms/pass"],
                [(f, v, a, round(1e3 * t, 3), n, round(1e3 * q, 4),
                  "" if np.isnan(d) else round(1e3 * d, 4)) for f, v, a, t, n, q, d in rows])
    fit_slopes, per_pass, marginal = slopes(rows, 3), slopes(rows, 5), slopes(rows, 6)
    print("\nfitted log-log exponents (least squares over all values; upper = over the larger "
          "half of the values)")
    print_table(["factor", "algorithm", "per fit", "per fit upper", "per pass", "per pass upper",
                 "marginal pass", "marginal pass upper"],
                [(f, a, *(round(float(v), 2) for v in (*fit_slopes[f, a], *per_pass[f, a],
                                                       *marginal[f, a])))
                 for f, a in fit_slopes])
    worst = max((s[1], a) for (f, a), s in marginal.items() if f == "m" and a != SETUP)
    setup_m = fit_slopes["m", SETUP][1]
    print(f"\nconstraints: largest upper-half exponent of the marginal time per pass "
          f"{worst[0]:.2f} ({worst[1]}); of the constraint setup (once per fit) {setup_m:.2f}: "
          f"{'no step is' if max(worst[0], setup_m) <= 1.1 else 'a step IS'} worse than linear "
          "in m (threshold 1.1 for timing noise)")
    plot(rows, fit_slopes, marginal, args.out)
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()

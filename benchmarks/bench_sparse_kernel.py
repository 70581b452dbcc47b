"""The PCSKM s-path kernel against a limit measured on this machine: the same arithmetic in
a dependency-free C loop.

Run by hand from the repository root (needs a C compiler, ``cc``):

    python benchmarks/bench_sparse_kernel.py [--datasets digits048-1 ionosphere mwm-ttscst]

A cell per data set: the paper's random constraints at 10 % (run 0, fold 0, the densest
setting of the study), DKM++ centres, the data set's s grid. Two tables:

1. Unit costs of the four steps of a PCKM pass on the unweighted data (the path's inner
   loop, docs/method/algorithms.md §2.2 and §4.2), our compiled kernel against the C loop
   doing the same operations in the same order on the same layouts (so the same bits):
   E-step distances in ns per point x cluster x feature; the sequential assignment in ns per
   constraint visit (each constraint is visited from both of its points; the per-point
   argmin is included); centroids in ns per point x feature; the constraint distances that
   every weight iteration recomputes on Z, in ns per constraint x feature. Each is the
   fastest of 7 repeats of a few thousand calls from inside one compiled (or C) loop, in
   thread CPU time.
2. The whole path (``sparse_path``, all s) against its arithmetic floor: the work it did
   (every inner pass of every weight iteration with its number q of features of non-zero
   weight, and the constraint distances of every iteration r >= 2), priced at the C unit
   costs of table 1. The rest of the path (feature scores, the weight update, building Z)
   is in the ratio too: the floor counts only the four steps above. The s values whose run
   the path copies from another s, and the iterations it copies within a periodic run
   (module docstring of ``algorithms/_sparse.py``), are not counted: they cost nothing.
   Every pass's assignment is counted as the full rule (every constraint visited from both
   ends), though the path's PCKM runs keep their partner penalties and walk the partners of
   a point only where its choice is close (``_kernels.assign_sequential_kept``, the same
   labels): after the first pass of a run the path does less than the floor counts.

The C loop is compiled with ``-O3 -march=native``, without ``-ffast-math`` (which would
reorder the sums) and with ``-ffp-contract=off``: GCC's default fuses ``d += x * x`` into one
fused multiply-add, a different rounding, which Numba does not do. Numba compiles for the host
CPU as well. The benchmark checks that every step of the C loop gives the bits of ours (it
stops otherwise).
"""

import argparse
import ctypes
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import machine, print_table
from numba import njit

from pcskm.algorithms import Constraints, dkmpp_init
from pcskm.algorithms._kernels import (
    assign_sequential,
    center_distances_into,
    cluster_means,
    cluster_means_into,
    pair_sq_distances_into,
)
from pcskm.algorithms._pckm import constraint_costs
from pcskm.algorithms._result import EMPTY_CLUSTER_POLICIES
from pcskm.experiments import datasets, resolve_data_dir
from pcskm.experiments.protocol import Protocol, sparsity_grid

DATASETS = ("digits048-1", "ionosphere", "mwm-ttscst")
REPEATS = 7

C_SOURCE = r"""
#include <stdint.h>
/* out[h, i] = sum_m (YT[m, i] - centers[h, m])^2, m ascending (center_distances_into) */
static void distances(double *out, const double *YT, const double *centers, int64_t k,
                      int64_t q, int64_t n) {
    for (int64_t h = 0; h < k; h++) {
        double *row = out + h * n;
        for (int64_t i = 0; i < n; i++) row[i] = 0.0;
        for (int64_t m = 0; m < q; m++) {
            const double c = centers[h * q + m], *col = YT + m * n;
            for (int64_t i = 0; i < n; i++) { double d = col[i] - c; row[i] += 1.0 * d * d; }
        }
    }
}
/* the sequential assignment (assign_sequential, k <= 4) */
static int64_t assign(const double *dist, int64_t k, int64_t n, const int64_t *indptr,
                      const int64_t *partner, const double *costs, int64_t *labels) {
    int64_t moved = 0;
    for (int64_t i = 0; i < n; i++) {
        double c0 = dist[i], c1 = dist[n + i];
        double c2 = k > 2 ? dist[2 * n + i] : 0.0, c3 = k > 3 ? dist[3 * n + i] : 0.0;
        for (int64_t e = indptr[i]; e < indptr[i + 1]; e++) {
            int64_t lj = labels[partner[e]];
            if (lj < 0) continue;
            const double *row = costs + 2 * e;
            c0 += row[lj == 0]; c1 += row[lj == 1]; c2 += row[lj == 2]; c3 += row[lj == 3];
        }
        int64_t best = 0; double winner = c0;
        if (c1 < winner) { best = 1; winner = c1; }
        if (k > 2 && c2 < winner) { best = 2; winner = c2; }
        if (k > 3 && c3 < winner) { best = 3; winner = c3; }
        if (labels[i] != best) { moved++; labels[i] = best; }
    }
    return moved;
}
/* cluster_means_into */
static void means(double *out, int64_t *counts, const double *Y, const int64_t *labels,
                  int64_t n, int64_t q, int64_t k) {
    for (int64_t h = 0; h < k; h++) {
        counts[h] = 0;
        for (int64_t m = 0; m < q; m++) out[h * q + m] = 0.0;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t h = labels[i];
        if (h < 0) continue;
        counts[h]++;
        for (int64_t m = 0; m < q; m++) out[h * q + m] += Y[i * q + m];
    }
    for (int64_t h = 0; h < k; h++)
        if (counts[h] > 0) for (int64_t m = 0; m < q; m++) out[h * q + m] /= counts[h];
}
/* pair_sq_distances_into: four constraints side by side, m ascending */
static void pairs(double *out, const double *Y, const int64_t *ab, int64_t n_pairs,
                  int64_t q) {
    int64_t c = 0;
    for (; c + 4 <= n_pairs; c += 4) {
        const double *a0 = Y + ab[2 * c] * q, *b0 = Y + ab[2 * c + 1] * q;
        const double *a1 = Y + ab[2 * c + 2] * q, *b1 = Y + ab[2 * c + 3] * q;
        const double *a2 = Y + ab[2 * c + 4] * q, *b2 = Y + ab[2 * c + 5] * q;
        const double *a3 = Y + ab[2 * c + 6] * q, *b3 = Y + ab[2 * c + 7] * q;
        double d0 = 0.0, d1 = 0.0, d2 = 0.0, d3 = 0.0;
        for (int64_t m = 0; m < q; m++) {
            double x;
            x = a0[m] - b0[m]; d0 += 1.0 * x * x;
            x = a1[m] - b1[m]; d1 += 1.0 * x * x;
            x = a2[m] - b2[m]; d2 += 1.0 * x * x;
            x = a3[m] - b3[m]; d3 += 1.0 * x * x;
        }
        out[c] = d0; out[c + 1] = d1; out[c + 2] = d2; out[c + 3] = d3;
    }
    for (; c < n_pairs; c++) {
        double d = 0.0;
        for (int64_t m = 0; m < q; m++) {
            double x = Y[ab[2 * c] * q + m] - Y[ab[2 * c + 1] * q + m]; d += 1.0 * x * x;
        }
        out[c] = d;
    }
}
void repeat(int64_t step, int64_t reps, const double *Y, const double *YT, const double *centers,
            int64_t n, int64_t q, int64_t k, const int64_t *indptr, const int64_t *partner,
            const double *costs, int64_t *labels, double *dist, double *sums, int64_t *counts,
            const int64_t *ab, int64_t n_pairs, double *pair_dist) {
    for (int64_t r = 0; r < reps; r++) {
        if (step == 0) distances(dist, YT, centers, k, q, n);
        else if (step == 1) assign(dist, k, n, indptr, partner, costs, labels);
        else if (step == 2) means(sums, counts, Y, labels, n, q, k);
        else pairs(pair_dist, Y, ab, n_pairs, q);
    }
}
"""

STEPS = ("distances", "assignment", "centroids", "constraint distances")
UNITS = ("point x cluster x feature", "constraint visit", "point x feature",
         "constraint x feature")


@njit
def _repeat(step, reps, Y, YT, centers, indptr, partner, costs, labels, dist, sums, counts,
            pairs, pair_dist):
    metric = np.ones(Y.shape[1])
    for _ in range(reps):
        if step == 0:
            center_distances_into(dist, YT, centers, metric)
        elif step == 1:
            assign_sequential(dist, 0.0, indptr, partner, costs, labels)
        elif step == 2:
            cluster_means_into(sums, counts, Y, labels)
        else:
            pair_sq_distances_into(pair_dist, Y, pairs, None)


def compile_limit(folder):
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        sys.exit("no C compiler (cc) on PATH: the limit cannot be measured")
    source, library = Path(folder) / "limit.c", Path(folder) / "limit.so"
    source.write_text(C_SOURCE)
    subprocess.run([compiler, "-O3", "-march=native", "-ffp-contract=off", "-shared", "-fPIC",
                    "-o", str(library), str(source)], check=True)
    lib = ctypes.CDLL(str(library))
    lib.repeat.argtypes = [ctypes.c_int64] * 2 + [ctypes.c_void_p] * 3 + [ctypes.c_int64] * 3 + \
        [ctypes.c_void_p] * 7 + [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
    return lib


class Cell:
    """The benchmark's cell of ``name``: data, DKM++ centres, constraints, the s grid."""

    def __init__(self, name, data_dir):
        data = datasets.load(name, data_dir)
        self.X = np.ascontiguousarray(data.X, dtype=np.float64)
        self.k = int(data.n_clusters)
        self.centres = self.X[dkmpp_init(self.X, self.k)]
        protocol = Protocol(data)
        must_link, cannot_link = protocol.constraints("random", 10.0, 0, 0)
        self.constraints = Constraints.from_pairs(must_link, cannot_link,
                                                  n_samples=len(self.X))
        self.sparsities = sparsity_grid(self.X.shape[1])


def unit_costs(lib, cell):
    """Seconds per call of each step, ours and C, at the cell's final clustering. First each
    step runs once on the same inputs (the assignment from all labels -1, so that they move),
    and the benchmark stops unless the C loop writes our bits."""
    X, k = cell.X, cell.k
    n, q = X.shape
    constraints = cell.constraints
    pairs, is_must_link, indptr, partner, entries = constraints.kernel_arrays
    labels0 = _final_labels(cell)
    Y, YT = X, np.ascontiguousarray(X.T)
    centers, _ = cluster_means(Y, labels0, k)
    costs, _ = constraint_costs(Y, pairs, is_must_link, entries)
    dist, sums = np.empty((k, n)), np.empty((k, q))
    counts, pair_dist = np.empty(k, dtype=np.int64), np.empty(len(pairs))
    labels = labels0.copy()
    center_distances_into(dist, YT, centers, np.ones(q))
    written = ((dist,), (labels,), (sums, counts), (pair_dist,))  # per step

    def ours(step, reps):
        _repeat(step, reps, Y, YT, centers, indptr, partner, costs, labels, dist, sums, counts,
                pairs, pair_dist)

    def limit(step, reps):
        lib.repeat(step, reps, Y.ctypes.data, YT.ctypes.data, centers.ctypes.data, n, q, k,
                   indptr.ctypes.data, partner.ctypes.data, costs.ctypes.data,
                   labels.ctypes.data, dist.ctypes.data, sums.ctypes.data, counts.ctypes.data,
                   pairs.ctypes.data, len(pairs), pair_dist.ctypes.data)

    for step in range(4):
        results = []
        for run in (ours, limit):
            labels[:] = -1 if step == 1 else labels0
            run(step, 1)
            results.append(b"".join(array.tobytes() for array in written[step]))
        if results[0] != results[1]:
            sys.exit(f"the C loop's {STEPS[step]} differ from ours: the limit is not the same "
                     "arithmetic")
    units = (n * k * q, int(indptr[-1]), n * q, len(pairs) * q)
    reps = max(200, int(2e7 // max(units)))
    seconds = []
    for step in range(4):
        best = {ours: np.inf, limit: np.inf}
        for _ in range(REPEATS):
            for run in (ours, limit):
                labels[:] = labels0
                start = time.thread_time()
                run(step, reps)
                best[run] = min(best[run], (time.thread_time() - start) / reps)
        seconds.append((best[ours], best[limit], units[step]))
    return seconds


def _path(cell, sparsities=None, max_iter=25):
    from pcskm.algorithms._sparse import sparse_path
    return sparse_path(
        cell.X, cell.centres.copy(), *cell.constraints.kernel_arrays,
        cell.sparsities if sparsities is None else sparsities, False, max_iter, 25, 1e-4,
        EMPTY_CLUSTER_POLICIES["fail"])


def _final_labels(cell):
    return _path(cell)[0][len(cell.sparsities) // 2].copy()


def path_work(cell):
    """Work units of the path's four steps: (pass units per step summed over every inner
    pass, constraint distances of the iterations r >= 2), and the path's CPU seconds."""
    n, p = cell.X.shape
    k = cell.k
    visits = int(cell.constraints.indptr[-1])
    n_pairs = len(cell.constraints)
    out = _path(cell)
    labels, weights, inner = out[0], out[1], out[7]
    totals = np.zeros(4)
    for si in range(len(cell.sparsities)):
        if si > 0 and np.array_equal(labels[si], labels[si - 1]) and np.array_equal(
                weights[si], weights[si - 1], equal_nan=True) and np.array_equal(
                inner[si], inner[si - 1]):
            continue  # a copied run
        history = []  # the labels after iterations 1, 2, ...
        for r in range(1, inner.shape[1] + 1):
            passes = int(inner[si, r - 1])
            if passes == 0:
                continue
            if r == 1:
                q = p  # the first clustering, on X (shared by every s: counted once)
                if si > 0:
                    continue
            else:  # q = the features with non-zero weight after iteration r - 1
                previous = _path(cell, cell.sparsities[si:si + 1], max_iter=r - 1)
                history.append(previous[0][0])
                if r >= 3 and any(np.array_equal(history[-1], h) for h in history[:-1]):
                    break  # periodic from iteration r - 1 on: the rest is copied
                q = int((previous[1][0] > 0).sum())
                totals[3] += n_pairs * q
            totals[0] += passes * n * k * q
            totals[1] += passes * visits
            totals[2] += passes * n * q
    best = np.inf
    for _ in range(REPEATS):
        start = time.thread_time()
        _path(cell)
        best = min(best, time.thread_time() - start)
    return totals, best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    args = parser.parse_args()
    print(machine())
    data_dir, _ = resolve_data_dir()
    with tempfile.TemporaryDirectory() as folder:
        lib = compile_limit(folder)
        unit_rows, path_rows = [], []
        for name in args.datasets:
            cell = Cell(name, data_dir)
            n, p = cell.X.shape
            costs = unit_costs(lib, cell)
            for step, unit, (ours, limit, units) in zip(STEPS, UNITS, costs, strict=True):
                unit_rows.append((name, step, unit, round(ours / units * 1e9, 3),
                                  round(limit / units * 1e9, 3), round(ours / limit, 2)))
            work, seconds = path_work(cell)
            floor = sum(w * limit / units for w, (_, limit, units) in zip(work, costs, strict=True))
            path_rows.append((name, f"{n}x{p}", cell.k, len(cell.constraints),
                              len(cell.sparsities), round(seconds * 1e3, 2),
                              round(floor * 1e3, 2), round(seconds / floor, 2)))
    print("\nUnit costs, ours vs the C loop (ns per unit, fastest of 7, thread CPU time)")
    print_table(("data set", "step", "unit", "ours ns", "C ns", "ratio"), unit_rows)
    print("\nThe whole s path (10 % random constraints, run 0, fold 0, DKM++) vs its floor")
    print_table(("data set", "n x p", "k", "constraints", "s values", "path ms",
                 "floor ms", "ratio"), path_rows)


if __name__ == "__main__":
    main()

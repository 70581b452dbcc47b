"""Per-fit time of the project's estimators against the peers a user could pick, measured side
by side in one run on the paper's data sizes.

    pip install -e ".[bench]"        # active-semi-supervised-clustering==0.0.1
    python benchmarks/bench_peers.py [--repeat 20] [--peer-repeat 3] [--quick]

Data: digits048 data1 (n=150, p=16, k=3), ionosphere (351, 34, 2) and TT-SC-ST (424, 18, 3)
from the data folder of the CLI; constraints: the protocol's
random-kind sample at 1 % and 10 % (run 0, fold 0, seed 0); our fits start from the DKM++
centres. Peers:

* LKM: scikit-learn ``KMeans(init=<the same centres>, n_init=1, algorithm="lloyd",
  max_iter=25)``.
* PCKM, MPCKM: ``PCKMeans(max_iter=25)`` and ``MPCKMeans()`` (its default ``max_iter=10``; ours
  stops at 100 passes, D6) of ``active-semi-supervised-clustering`` 0.0.1, pure Python, with
  the same constraints. They are not the same algorithms as ours: they initialise from the
  constraints' neighbourhoods and NumPy's global RNG (seeded 0 before each fit), visit points
  in a random order, use a constant violation cost w=1 (PCKMeans), a single diagonal metric
  with a log2 det term and the farthest pair under the metric (MPCKMeans), and first take the
  transitive closure of the constraints (COP-KMeans style; column "closure"). So their passes
  differ from ours: this is a speed comparison, per fit and per pass (one assignment + update
  sweep). Their time per pass leaves the closure out; ours keeps all of the fit (validation,
  constraint setup), so the per-pass ratio flatters them slightly.
  The package (2018) does not import as shipped; ``_common.import_peers`` says how it is made
  to, without touching its files.

Every side runs single-threaded (threadpoolctl limits BLAS/OpenMP to 1 thread; our Numba
engines are serial). Times are medians over repeats; ours after one warm-up call.
"""

import argparse
import sys
import time
import warnings

import numpy as np
from _common import DATA_DIR, import_peers, machine, median_seconds, print_table
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from pcskm import experiments
from pcskm.algorithms import ClusteringFailedWarning, LloydKMeans, MPCKMeans, PCKMeans, PCSKMeans
from pcskm.experiments.cells import deterministic_centres

DATA_SETS = ("digits048-1", "ionosphere", "mwm-ttscst")


def our_fit(estimator, X, **constraints):
    """(passes, status) of one fit."""
    estimator.fit(X, **constraints)
    return estimator.n_iter_, estimator.status_


def our_path(estimator, X, grid, **constraints):
    """(passes, status) of a fit_path: inner PCKM passes summed over s, statuses counted."""
    path = estimator.fit_path(X, grid, **constraints)
    failed = int(np.count_nonzero(np.isin(path.status, ["empty_cluster", "degenerate_weights"])))
    return int(path.inner_n_iter.sum()), f"{len(grid)} s, {failed} failed"


def sklearn_fit(estimator, X):
    """(passes, outcome, closure seconds: none) of one fit."""
    estimator.fit(X)
    return estimator.n_iter_, "ok", 0.0


def peer_fit(cls, k, max_iter, X, must_link, cannot_link):
    """(passes, outcome, closure seconds) of one fit of a peer estimator. It records no
    iteration count: passes are counted by wrapping its per-pass centre update, and its
    constraint preprocessing (the transitive closure) is timed by wrapping the module function
    its fit calls."""
    estimator = cls(n_clusters=k, max_iter=max_iter)
    module = sys.modules[cls.__module__]
    closure, update_centres = module.preprocess_constraints, estimator._get_cluster_centers
    passes, closure_seconds = 0, 0.0

    def counted(*args):
        nonlocal passes
        passes += 1
        return update_centres(*args)

    def timed_closure(*args):
        nonlocal closure_seconds
        start = time.perf_counter()
        result = closure(*args)
        closure_seconds += time.perf_counter() - start
        return result

    estimator._get_cluster_centers = counted
    module.preprocess_constraints = timed_closure
    np.random.seed(0)  # noqa: NPY002 (their code draws from NumPy's legacy global RNG only)
    try:
        with np.errstate(all="raise"):  # what their mpckmeans module sets at import
            estimator.fit(X, ml=must_link, cl=cannot_link)
        outcome = "ok"
    except Exception as error:  # their EmptyClustersException, FloatingPointError
        outcome = f"raised {type(error).__name__}"
    finally:
        module.preprocess_constraints = closure
    return passes, outcome, closure_seconds


def row(name, m, algorithm, ours, theirs=None, peer="-"):
    """A table row; the peers' time per pass leaves out their closure (once per fit)."""
    t_ours, (n_ours, status_ours) = ours
    cells = [name, m, algorithm, round(1e3 * t_ours, 2), n_ours,
             round(1e3 * t_ours / max(n_ours, 1), 3), status_ours, peer]
    if theirs is None:
        return cells + [""] * 6
    t_theirs, (n_theirs, _, closure) = theirs
    per_pass_ours = t_ours / max(n_ours, 1)
    per_pass_theirs = max(t_theirs - closure, 0.0) / max(n_theirs, 1)
    # a peer fit that raised before its first pass has no time per pass
    per_pass_ratio = f"{per_pass_ours / per_pass_theirs:.2g}" if per_pass_theirs > 0 else "-"
    return cells + [round(1e3 * t_theirs, 2), n_theirs, round(1e3 * closure, 1),
                    round(1e3 * per_pass_theirs, 3), f"{t_ours / t_theirs:.2g}",
                    per_pass_ratio]


def bench(name, percents, repeat, peer_repeat, peers):
    peer_pckm, peer_mpckm = peers
    data = experiments.load(name, data_dir=DATA_DIR)
    X, k = data.X, data.n_clusters
    centres = deterministic_centres(name, DATA_DIR, "dkm++")
    protocol = experiments.Protocol(data, seed=0)
    rows = []
    kmeans = KMeans(n_clusters=k, init=centres, n_init=1, algorithm="lloyd", max_iter=25)
    lkm = LloydKMeans(k, init=centres)
    rows.append(row(name, 0, "LKM", median_seconds(repeat, our_fit, lkm, X),
                    median_seconds(repeat, sklearn_fit, kmeans, X), "sklearn KMeans"))
    for percent in percents:
        must_link, cannot_link = protocol.constraints("random", percent, run=0, fold=0)
        m = len(must_link) + len(cannot_link)
        ours = {"must_link": must_link, "cannot_link": cannot_link}
        theirs = (must_link.tolist(), cannot_link.tolist())
        rows.append(row(name, m, "PCKM",
                        median_seconds(repeat, our_fit, PCKMeans(k, init=centres), X, **ours),
                        median_seconds(peer_repeat, peer_fit, peer_pckm, k, 25, X, *theirs,
                                       warm_up=False), "asc PCKMeans"))
        rows.append(row(name, m, "MPCKM",
                        median_seconds(repeat, our_fit, MPCKMeans(k, init=centres), X, **ours),
                        median_seconds(peer_repeat, peer_fit, peer_mpckm, k, 10, X, *theirs,
                                       warm_up=False), "asc MPCKMeans"))
        grid = experiments.sparsity_grid(X.shape[1])
        rows.append(row(name, m, "PCSKM fit_path",
                        median_seconds(repeat, our_path, PCSKMeans(k, init=centres), X, grid,
                                       **ours)))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="timed calls of ours, sklearn")
    parser.add_argument("--peer-repeat", type=int, default=3, help="timed calls of the peers")
    parser.add_argument("--quick", action="store_true", help="1 %% only, fewer repeats")
    args = parser.parse_args()
    repeat, peer_repeat = (3, 1) if args.quick else (args.repeat, args.peer_repeat)
    percents = (1,) if args.quick else (1, 10)
    peers = import_peers()
    print(f"machine: {machine()}; shared with other jobs while measured")
    print(f"medians of {repeat} calls (ours, sklearn) and {peer_repeat} (peers); "
          "all single-threaded (threadpoolctl limit 1)")
    rows = []
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusteringFailedWarning)
        for name in DATA_SETS:
            rows += bench(name, percents, repeat, peer_repeat, peers)
    print_table(["data set", "m", "algorithm", "ours ms/fit", "passes", "ours ms/pass",
                 "our status", "peer", "peer ms/fit", "passes", "closure ms", "peer ms/pass",
                 "ratio fit", "ratio pass"], rows)
    print("\nratio = ours / theirs (below 1: ours faster). PCSKM fit_path (the whole s grid of "
          "the data set, passes = inner PCKM passes over all s) has no peer.")
    print("The peers' algorithms differ from ours in details (init from neighbourhoods, random "
          "visiting order, constant violation cost w=1, MPCKMeans' default max_iter=10); "
          "compare per pass. "
          "Closure = their transitive closure of the constraints, once per fit; their ms/pass "
          "leaves it out.")


if __name__ == "__main__":
    main()

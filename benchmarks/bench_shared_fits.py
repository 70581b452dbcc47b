"""How many of the selection scores' s paths a worker computes, and how many it copies from a
path of the same task, per data set family of the paper spec: the CV fold fits through each
fold's FitCache (``algorithms.selection.FoldSplit``, shared by the settings of a cell) and
the gap statistic's null fits through each null data set's (``experiments.selection_scores.
NullDataSets``, shared by the cells of a task). Counts, not times: the same on every machine.

Run by hand from the repository root:

    python benchmarks/bench_shared_fits.py [--families digits ionosphere mwm] [--runs 2]

A task per family and init kind, as the runner groups them: every setting of the family's
representative data set (``bench_paper_cells.FAMILIES``), deterministic inits or Seeding,
every percentage of the spec, runs 0 to ``--runs`` - 1 (runs with CV scores), folds 0-2.
"""

import argparse
import collections
from pathlib import Path

from bench_paper_cells import FAMILIES

from pcskm.algorithms import _sparse, selection
from pcskm.experiments import cells, selection_scores
from pcskm.experiments.spec import load_spec
from pcskm.runner.store import CubeView
from pcskm.runner.tasks import settings


class Counts:
    """Path requests and computed paths, by the kind of FitCache they went through."""

    def __init__(self):
        self.requested = collections.Counter()
        self.computed = collections.Counter()
        self.kind_of = {}  # id of a fold or null FitCache -> "fold" or "null"
        self._current = []

    def install(self):
        """Wrap the FitCaches' path, the kernel it computes with, and the two sources of
        fold and null FitCaches."""
        path, compute = _sparse.FitCache.path, _sparse.sparse_path_from
        training, first = selection.FoldSplit.training, selection_scores.NullDataSets.first

        def counted_path(cache, *args):
            kind = self.kind_of.get(id(cache), "cell")
            self.requested[kind] += 1
            self._current.append(kind)
            try:
                return path(cache, *args)
            finally:
                self._current.pop()

        def counted_compute(*args):
            self.computed[self._current[-1] if self._current else "other"] += 1
            return compute(*args)

        def recorded_training(split, number):
            train, cache = training(split, number)
            self.kind_of[id(cache)] = "fold"
            return train, cache

        def recorded_first(null_sets, *args):
            data_sets, caches = first(null_sets, *args)
            self.kind_of.update((id(cache), "null") for cache in caches)
            return data_sets, caches

        _sparse.FitCache.path = counted_path
        _sparse.sparse_path_from = counted_compute
        selection.FoldSplit.training = recorded_training
        selection_scores.NullDataSets.first = recorded_first


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="*", default=["digits", "ionosphere", "mwm"])
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    spec = load_spec("paper")
    view = CubeView.planned(Path("never-created.zarr"), spec)
    counts = Counts()
    counts.install()
    print(f"{'family':12s} {'inits':14s} {'fits':5s} {'requested':>9s} {'computed':>8s} "
          f"{'copied':>6s}")
    for family in args.families:
        dataset = FAMILIES[family][0]
        for seeding in (False, True):
            chosen = tuple(s for s in settings(spec, view)
                           if s.dataset == dataset and (s.init == cells.SEEDING) == seeding)
            kinds = spec.seeding_kinds if seeding else spec.kinds
            task = cells.Task(chosen, tuple(
                cells.Block(kind, percent, tuple(range(args.runs)))
                for kind in kinds for percent in spec.percentages), folds=(0, 1, 2))
            counts.requested.clear()
            counts.computed.clear()
            cells.evaluate(task)
            for kind in ("fold", "null"):
                requested, computed = counts.requested[kind], counts.computed[kind]
                copied = 1 - computed / requested if requested else 0.0
                print(f"{family:12s} {'Seeding' if seeding else 'deterministic':14s} "
                      f"{kind:5s} {requested:9d} {computed:8d} {copied:6.1%}", flush=True)


if __name__ == "__main__":
    main()

"""The compiled pair AUC gives the bits of the former one, s by s in NumPy, on real cells.

Run by hand from the repository root (minutes):

    python benchmarks/compare_pair_auc_bits.py fisheriris ionosphere

For SKM and PCSKM under every init of ``experiments/specs/paper.toml``, the sample task of
``bench_paper_cells.py`` is evaluated twice, once with ``pcskm.algorithms.selection.pair_auc``
and once with the former implementation written out below; the AUC, its standard error and
the cv score of every cell must be equal, NaN for NaN. It prints the count of finite AUC
values compared.
"""

import sys
from pathlib import Path

import numpy as np
from bench_paper_cells import sample_task

from pcskm.algorithms import selection
from pcskm.experiments import cells
from pcskm.experiments.spec import load_spec
from pcskm.runner.store import CubeView
from pcskm.runner.tasks import settings


def old_pair_auc(differences, is_must_link, weights):
    """pcskm's pair AUC before the kernel: one sort and two searches per s in NumPy."""
    must = np.asarray(is_must_link, dtype=bool)
    auc = np.full(len(weights), np.nan)
    if must.all() or not must.any():
        return auc
    distance = np.asarray(differences, dtype=np.float64) @ np.asarray(weights).T
    for row, finite in enumerate(np.isfinite(distance).all(axis=0)):
        if finite:
            must_link = np.sort(distance[must, row])
            cannot_link = distance[~must, row]
            below = np.searchsorted(must_link, cannot_link, side="left")
            not_above = np.searchsorted(must_link, cannot_link, side="right")
            auc[row] = (below + not_above).sum() / (2.0 * len(must_link) * len(cannot_link))
    return auc



spec = load_spec("paper")
view = CubeView.planned(Path("never-created.zarr"), spec)
by_key = {(s.dataset, s.algorithm, s.init): s for s in settings(spec, view)}
new = selection.pair_auc
n = 0
for dataset in sys.argv[1:]:
    for algorithm in ("SKM", "PCSKM"):
        for init in spec.inits:
            task = sample_task(by_key[(dataset, algorithm, init)], spec)
            results = {}
            for name, function in (("new", new), ("old", old_pair_auc)):
                selection.pair_auc = function
                results[name] = cells.evaluate(task)
            selection.pair_auc = new
            pairs = zip(results["new"].blocks, results["old"].blocks, strict=True)
            for new_blocks, old_blocks in pairs:
                for x, y in zip(new_blocks, old_blocks, strict=True):
                    for field in ("auc_score", "auc_se", "cv_score"):
                        u, v = getattr(x, field), getattr(y, field)
                        assert np.array_equal(u, v, equal_nan=True), (dataset, algorithm,
                                                                      init, field)
                        n += np.isfinite(u).sum()
            print(dataset, algorithm, init, "same", flush=True)
print("finite AUC values compared:", n)

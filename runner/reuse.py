"""Cells copied from another store instead of computed (``pcskm run SPEC --from STORE``).

A cell's values follow from its labels (data set, algorithm, init, kind, percent, run, fold)
and the settings that :func:`pcskm.runner.store.layout.merge_layouts` compares (seed, design, folds,
``max_iter``, s grids, the data and the algorithms' parameters): every random draw comes from
a seed derived from the cell (docs/method/protocol.md §2). Two stores that pass that check
hold the same values for the same labels, so a run copies the blocks (algorithm, init, kind,
percent, run; all folds) that the other store has done and this one misses. A block is
copied only when it carries every selection score this store wants for its algorithm
(:func:`pcskm.runner.store.schema.wanted_scores`); the others are computed as usual.
"""

import numpy as np

from .store import (
    SCORE_SETTINGS,
    SCORE_VARIABLES,
    check_store,
    label_positions,
    merge_layouts,
    open_root,
    read_layout,
    score_bits,
    wanted_scores,
)


def _copy_rows(values, other, mask, here, there):
    """``values`` (percent, run, ...) with the rows ``here`` that ``mask`` selects taken from
    the rows ``there`` of ``other``."""
    rows = mask.reshape(mask.shape + (1,) * (values.ndim - 2))
    values[here] = np.where(rows, other[there], values[here])
    return values


def copy_done_blocks(cube, source_path):
    """Copy into ``cube`` (an open :class:`pcskm.runner.store.views.Cube`) every block that is done
    in the store at ``source_path`` and not complete in ``cube``; returns the cells copied.
    Raises :class:`pcskm.runner.store.errors.IncompatibleStore` (nothing copied) if the two stores
    would compute their common cells differently."""
    check_store(source_path)
    source_layout = read_layout(source_path)
    merge_layouts(source_layout, cube.layout, store=str(source_path), check_scores=False,
                  advice="Nothing was copied: run without --from, or copy from a store made "
                         "with this spec's settings.")
    root = open_root(source_path)
    store_bits = np.uint8(score_bits(cube.layout.fixed))
    # the scores of the other store are this store's only if computed the same way
    same_scores = all(source_layout.fixed.get(key) == cube.layout.fixed.get(key)
                      for key in SCORE_SETTINGS if key != "cv_algorithms")
    copied = 0
    for name, group in cube.layout.groups.items():
        if name not in source_layout.groups:
            continue
        before, source = source_layout.groups[name], root[name]
        index = label_positions(group, before)
        runs = np.arange(min(group.n_runs, before.n_runs))
        done = source["done"][:]
        scored = (source["scored"][:] if same_scores and "scored" in source
                  else np.zeros_like(done))
        complete = cube.complete(name)
        wanted = wanted_scores(cube.layout.fixed, cube.layout.algorithms, group.algorithms)
        percents = np.flatnonzero(index["percent"] >= 0)
        if not len(percents) or not len(runs):
            continue
        here = np.ix_(percents, runs)  # the (percent, run) rows of this store ...
        there = np.ix_(index["percent"][percents], runs)  # ... and of the other store
        take = {}  # (a, i, k) -> boolean mask over those rows
        for a, i, k in np.ndindex(len(group.algorithms), len(group.inits), len(group.kinds)):
            sa, si, sk = index["algorithm"][a], index["init"][i], index["kind"][k]
            if min(sa, si, sk) < 0:
                continue
            mask = ((done[sa, si, sk][there] > 0)
                    & ((scored[sa, si, sk][there] & wanted[a]) == wanted[a])
                    & ~complete[a, i, k][here])
            if mask.any():
                take[a, i, k] = mask
        if not take:
            continue
        arrays = cube.arrays[name]
        variables = [v for v in arrays if arrays[v].metadata.dimension_names[:3] ==
                     ("algorithm", "init", "kind") and v not in ("done", "scored")]
        counts, other_counts = arrays["n_constraints"][...], source["n_constraints"][...]
        for (a, i, k), mask in take.items():
            sa, si, sk = index["algorithm"][a], index["init"][i], index["kind"][k]
            for variable in variables:
                if variable not in source or (variable in SCORE_VARIABLES and not same_scores):
                    continue
                arrays[variable][a, i, k] = _copy_rows(arrays[variable][a, i, k],
                                                       source[variable][sa, si, sk],
                                                       mask, here, there)
            _copy_rows(counts[k], other_counts[sk], mask, here, there)
            cube.done[name][a, i, k] = _copy_rows(cube.done[name][a, i, k], done[sa, si, sk],
                                                  mask, here, there)
            if cube.scored[name] is not None:
                cube.scored[name][a, i, k] = _copy_rows(
                    cube.scored[name][a, i, k], scored[sa, si, sk] & store_bits, mask, here, there)
            copied += int(mask.sum()) * group.n_folds
        arrays["n_constraints"][...] = counts
        cube.write_markers(name)
    return copied

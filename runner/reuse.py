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
    AUC_SETTING,
    SCORE_SETTINGS,
    SCORE_VARIABLES,
    block_chunk,
    check_store,
    chunk_region,
    label_positions,
    merge_layouts,
    open_root,
    read_layout,
    score_bits,
    wanted_scores,
)
from .store.provenance import RUN_INDEX, UNKNOWN


def _source_index(group, before):
    """Per block dim, the position in the other store's group ``before`` of each label of
    this store's ``group`` (-1 where it lacks it), and the runs both have."""
    index = label_positions(group, before)
    return ([index[dim] for dim in ("algorithm", "init", "kind", "percent")],
            np.arange(min(group.n_runs, before.n_runs)))


def _mapped(values, index, runs, shape, fill=0):
    """``values`` of the other store, (algorithm, init, kind, percent, run, ...), at this
    store's positions (``shape``: this store's block dims and runs): ``fill`` where it lacks
    a label or a run."""
    out = np.full((*shape, *values.shape[5:]), fill, values.dtype)
    valid = [np.flatnonzero(positions >= 0) for positions in index]
    if all(len(v) for v in valid) and len(runs):
        there = np.ix_(*(positions[v] for positions, v in zip(index, valid, strict=True)), runs)
        out[np.ix_(*valid, runs)] = values[there]
    return out


def _read(array, index, runs, region, like):
    """The other store's ``array`` at this store's block positions of ``region`` (slices of
    the block dims) and runs, shaped as ``like`` (this store's values there): its fill value
    where the other store lacks a label or a run."""
    sub = [positions[r] for positions, r in zip(index, region, strict=True)]
    valid = [np.flatnonzero(positions >= 0) for positions in sub]
    out = np.full(like.shape, array.fill_value, array.dtype)
    if all(len(v) for v in valid) and len(runs):
        selection = (*(positions[v] for positions, v in zip(sub, valid, strict=True)), runs)
        out[np.ix_(*valid, runs)] = array.get_orthogonal_selection(selection)
    return out


def copy_done_blocks(cube, source_path):
    """Copy into ``cube`` (an open :class:`pcskm.runner.store.views.Cube`) every block that is done
    in the store at ``source_path`` and not complete in ``cube``; returns the cells copied.
    Raises :class:`pcskm.runner.store.errors.IncompatibleStore` (nothing copied) if the two stores
    would compute their common cells differently. Each chunk of ``cube`` that receives a
    block is read and written once, whole."""
    check_store(source_path)
    source_layout = read_layout(source_path)
    merge_layouts(source_layout, cube.layout, store=str(source_path), check_scores=False,
                  advice="Nothing was copied: run without --from, or copy from a store made "
                         "with this spec's settings.")
    root = open_root(source_path)
    store_bits = np.uint8(score_bits(cube.layout.fixed))
    # the scores of the other store are this store's only if computed the same way (a store
    # without the pair AUC has the same CV scores: its markers lack the AUC's bit)
    same_scores = all(source_layout.fixed.get(key) == cube.layout.fixed.get(key)
                      for key in SCORE_SETTINGS if key not in ("cv_algorithms", AUC_SETTING))
    version = cube.layout.schema_version
    copied = 0
    for name, group in cube.layout.groups.items():
        if name not in source_layout.groups:
            continue
        source = root[name]
        index, runs = _source_index(group, source_layout.groups[name])
        shape = cube.done[name].shape
        done = _mapped(source["done"][:], index, runs, shape)
        scored = (_mapped(source["scored"][:], index, runs, shape)
                  if same_scores and "scored" in source else np.zeros_like(done))
        wanted = wanted_scores(cube.layout.fixed, cube.layout.algorithms, group.algorithms)
        wanted = wanted.reshape(-1, 1, 1, 1, 1)
        take = (done > 0) & ((scored & wanted) == wanted) & ~cube.complete(name)
        if not take.any():
            continue
        arrays = cube.arrays[name]
        variables = [v for v in arrays if arrays[v].metadata.dimension_names[:3] ==
                     ("algorithm", "init", "kind") and v not in ("done", "scored", RUN_INDEX)
                     and v in source and (v not in SCORE_VARIABLES or same_scores)]
        chunks = {block_chunk(version, block) for block in zip(*np.nonzero(take.any(axis=4)),
                                                                strict=True)}
        for chunk in sorted(chunks):
            region = chunk_region(version, chunk)
            mask = take[region]
            for variable in variables:
                values = arrays[variable][region]
                other = _read(source[variable], index, runs, region, values)
                rows = mask.reshape(mask.shape + (1,) * (values.ndim - 5))
                arrays[variable][region] = np.where(rows, other, values)
        cells = take.any(axis=(0, 1))  # (kind, percent, run) whose constraint counts copy
        counts = arrays["n_constraints"][...]
        # the other store's (kind, percent, run, fold) counts, mapped as one block's markers
        other_counts = _mapped(source["n_constraints"][...][None, None],
                               [np.zeros(1, int), np.zeros(1, int), *index[2:]], runs,
                               (1, 1, *shape[2:]))[0, 0]
        counts[cells] = other_counts[cells]
        arrays["n_constraints"][...] = counts
        cube.record_stored(name, sorted({chunk[2:] for chunk in chunks}))
        cube.done[name][take] = done[take]
        cube.run_index[name][take] = UNKNOWN  # computed by a run of the other store
        if cube.scored[name] is not None:
            cube.scored[name][take] = scored[take] & store_bits
        copied += int(take.sum()) * group.n_folds
        cube.write_markers(name)
    return copied

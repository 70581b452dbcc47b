"""A random sample of computed cells with every value the cube records for them, so that a
reader can recompute the cells and compare (``pcskm check SPEC cells_sample.csv``).

The sample is stratified: ``PER_ALGORITHM`` cells of every (data set, algorithm) drawn
uniformly from its computed cells (every init, kind, percentage, run and fold), with a
generator keyed by the master seed ``SAMPLE_SEED`` and the data set's and algorithm's
positions in the cube, so the same cube always gives the same sample. One row per cell and
s entry the algorithm fills (the s grid for SKM and PCSKM, the empty s for the others), with
the code that computed the cell as its run recorded it (``code``: the digest of its
definition, :mod:`pcskm.runner.store.provenance`, empty where unknown; ``code_description``:
that definition in words), so that ``pcskm check`` can say when a difference comes from
other code.
"""

import os
import shlex
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from pcskm.experiments.check import CODE
from pcskm.runner.store.provenance import (
    RUN_INDEX,
    code_words,
    run_codes,
)

from .fits import CELL_DIMS, status_codes

TABLE = "cells_sample.csv"

PER_ALGORITHM = 2
SAMPLE_SEED = 0
VALUES = ("f_score", "precision", "recall", "satisfied", "n_iter")
COLUMNS = ("dataset", *CELL_DIMS, "sparsity", *VALUES, "status", "n_constraints", *CODE)


def draw(store, name, fits, per_algorithm=PER_ALGORITHM):
    """The sampled rows of data set ``name`` (``fits``: its :func:`fits.fit_table`)."""
    ds = store.group(name)
    flags = {code: flag for flag, code in status_codes(ds.status).items()}
    dataset_index = store.names.index(name)
    points = []  # (algorithm, *cell position) of every sampled cell, algorithm by algorithm
    for a in range(fits.sizes["algorithm"]):
        computed = fits.computed.isel(algorithm=a).transpose(*CELL_DIMS[1:])
        flat = np.flatnonzero(computed.values)
        if not len(flat):
            continue
        rng = np.random.default_rng([SAMPLE_SEED, dataset_index, a])
        chosen = np.sort(rng.choice(flat, min(per_algorithm, len(flat)), replace=False))
        points.append(np.stack([np.full(len(chosen), a),
                                *np.unravel_index(chosen, computed.shape)]))
    if not points:
        return pd.DataFrame(columns=COLUMNS)
    at = np.concatenate(points, axis=1)
    cells = ds[[*VALUES, "status", "n_constraints"]].isel(
        {dim: xr.DataArray(index, dims="cell") for dim, index in zip(CELL_DIMS, at,
                                                                     strict=True)}).load()
    frame = cells[[*VALUES, "status"]].to_dataframe().reset_index()
    # the entries each algorithm fills: the s grid for a sparse one, the empty s for the others
    filled = fits.applies.transpose("algorithm", "sparsity").values[at[0]].reshape(-1)
    frame = frame[filled].reset_index(drop=True)
    frame["status"] = frame["status"].map(lambda code: flags[int(code)])
    frame["n_constraints"] = cells.n_constraints.values[frame["cell"].to_numpy()]
    frame["dataset"], frame["algorithm"] = name, frame["algorithm"].astype(str)
    frame["code"] = _codes(store, ds, at)[frame["cell"].to_numpy()]
    words = code_words(store.attrs)
    frame["code_description"] = frame["code"].map(lambda code: words.get(code, ""))
    return frame[list(COLUMNS)]


def _codes(store, ds, at):
    """The digest of the code that computed each cell at positions ``at`` (CELL_DIMS by
    cell), as the run that marked its block done recorded it; "" where unknown."""
    if RUN_INDEX not in ds:
        return np.full(at.shape[1], "", dtype=object)
    runs = ds[RUN_INDEX].transpose(*CELL_DIMS[:-1]).values[tuple(at[:-1])]
    codes = run_codes(store.attrs)
    algorithms = [str(a) for a in ds.algorithm.values]
    return np.array([codes[r].get(algorithms[a], "") if 0 <= r < len(codes) else ""
                     for a, r in zip(at[0], runs, strict=True)], dtype=object)


def check_command(attrs, out):
    """The ``pcskm check`` command that recomputes the sample, runnable in the report folder
    ``out``: the spec file and ``--preload`` files of the store's latest run (relative to
    ``out``; run records ``spec_file`` and ``preload``), else the spec's name (a bundled
    spec)."""
    runs = attrs.get("runs") or [{}]
    spec_file = runs[-1].get("spec_file")
    if spec_file is None:
        return f"pcskm check {attrs.get('spec_name', 'SPEC')} {TABLE}"
    here = Path(out).resolve()
    words = [os.path.relpath(spec_file, here), TABLE]
    for file in runs[-1].get("preload") or ():
        words += ["--preload", os.path.relpath(file, here)]
    return shlex.join(["pcskm", "check", *words])

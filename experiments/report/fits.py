"""The results cube as analysis input (schema: ``runner/store/schema.py``): one xarray Dataset per
data set with dims (algorithm, init, kind, percent, run, fold, sparsity), and the masks that
tell a fit that applies, one that is computed and one that failed.

* ``applies`` (algorithm, sparsity): the entries an algorithm fills, the s grid for SKM and
  PCSKM (and their variants, and a user estimator with ``sparsity``: ``Store.is_sparse``),
  the NaN entry for the others.
* ``expected`` (algorithm, init, kind, percent, run, fold): the cell belongs to the grid
  (its status is not ``not_applicable``, e.g. Seeding with a kind it is not run with).
* ``computed``: expected, its run marked ``done``, and no applicable entry still ``missing``.
  A cell that is not computed is *missing*: it is never averaged, only counted.
* ``failed`` (the fit dims): a computed fit with a failure status (F = NaN; ``nanmean`` leaves
  it out, the counts report it): every status of the store's flags but those of a fit with a
  result (converged, max_iter) and of no fit (missing, not_applicable), so ``empty_cluster``,
  ``degenerate_weights`` and any failure status a store adds (:func:`failure_flags`).

In a store with the per-s selection scores (``cv_score``, ``gap``, ``gap_sd``;
docs/reference/cube-schema.md, Selection scores), a cell is computed only when its block's
``scored`` marker also has every score its algorithm gets, as for ``pcskm status``; the
scores are read with the other variables, and ``score_bits`` (algorithm) says which kinds
each algorithm's cells carry. A store without them reads as before.

Only the store is read here, with xarray; which scores an algorithm gets, and when a block
carries them, are the runner's rules (``pcskm.runner.store.wanted_scores``,
``complete_blocks``).
"""

import contextlib
import itertools
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from pcskm.runner.store import (
    WEIGHTS_PER_S,
    complete_blocks,
    definition_is_sparse,
    wanted_scores,
)

FIT_DIMS = ("algorithm", "init", "kind", "percent", "run", "fold", "sparsity")
CELL_DIMS = FIT_DIMS[:-1]
LABEL_DIMS = ("algorithm", "init", "kind")
FITTED_FLAGS = ("converged", "max_iter")  # a fit with labels and an F-score
NO_FIT_FLAGS = ("missing", "not_applicable")  # not computed yet, or not in the grid
DEFAULT_FLAGS = ("missing", "converged", "max_iter", "empty_cluster", "degenerate_weights",
                 "not_applicable")


@dataclass
class Store:
    """An open cube: its path, root attributes, groups and the estimator of each algorithm."""

    path: Path
    tree: xr.DataTree
    attrs: dict
    names: tuple  # data set groups

    def group(self, name):
        """The lazily read Dataset of one data set (label coordinates as plain ``str``)."""
        ds = self.tree[name].to_dataset()
        return ds.assign_coords({dim: np.array([str(v) for v in ds[dim].values], dtype=str)
                                 for dim in LABEL_DIMS})

    @property
    def failure_flags(self):
        """The failure statuses of the store (:func:`failure_flags` of its root
        ``status_flags``)."""
        flags = self.attrs.get("status_flags")
        return failure_flags([flags[code] for code in sorted(flags, key=int)] if flags
                             else DEFAULT_FLAGS)

    def estimator(self, algorithm):
        """The estimator behind an algorithm name (a variant's estimator, e.g. PCSKM for
        PCSKM-paper)."""
        definitions = self.attrs.get("algorithm_definitions") or {}
        return (definitions.get(algorithm) or {}).get("estimator", algorithm)

    def is_sparse(self, algorithm):
        """Whether an algorithm fills the s grid (SKM, PCSKM, a user estimator with
        ``sparsity``)."""
        definition = (self.attrs.get("algorithm_definitions") or {}).get(algorithm) or {}
        return definition_is_sparse({"estimator": self.estimator(algorithm), **definition})


def open_store(store):
    """Open the cube at ``store`` read-only (ValueError if it is not a pcskm cube)."""
    from pcskm.runner.store import where

    location = where(store).pinned()
    if not location.exists():
        raise ValueError(f"no results cube at {location}")
    path = getattr(location, "path", location)  # a folder's Path, or the repository
    tree = location.open_datatree()
    names = tuple(name for name, node in tree.children.items() if "f_score" in node.data_vars)
    if not names:
        raise ValueError(f"{path} holds no data set group with f_score: not a pcskm cube")
    return Store(path=path, tree=tree, attrs=dict(tree.attrs), names=names)


def failure_flags(flags):
    """The statuses of a failed fit among ``flags`` (names, in code order): all but
    :data:`FITTED_FLAGS` and :data:`NO_FIT_FLAGS`."""
    return tuple(flag for flag in flags if flag not in (*FITTED_FLAGS, *NO_FIT_FLAGS))


def status_codes(status):
    """``{flag: code}`` of the status variable (its CF ``flag_meanings``)."""
    meanings = status.attrs.get("flag_meanings")
    flags = meanings.split() if meanings else DEFAULT_FLAGS
    values = status.attrs.get("flag_values", range(len(flags)))
    return {flag: int(value) for flag, value in zip(flags, values, strict=True)}


def failed_fits(status):
    """Where the cube's ``status`` holds a failed fit: a code of one of the
    :func:`failure_flags` of its own ``flag_meanings`` (a status a store adds counts too)."""
    codes = status_codes(status)
    return status.isin([codes[flag] for flag in failure_flags(codes)])


def fitted(status):
    """Where the cube's ``status`` holds a fit with labels and an F-score
    (:data:`FITTED_FLAGS`)."""
    codes = status_codes(status)
    return status.isin([codes[flag] for flag in FITTED_FLAGS])


# per-s selection scores, when stored
SCORE_VARIABLES = ("cv_score", "gap", "gap_sd", "auc_score", "auc_se")
ZERO_WEIGHTS = "n_zero_weights"  # per fit, from weights_per_s, when stored


def table_variables(variables):
    """The variables of the :func:`fit_table` of a group whose own variables are
    ``variables``: those, and ``n_zero_weights`` where it has ``weights_per_s``."""
    return {*variables, *((ZERO_WEIGHTS,) if WEIGHTS_PER_S in variables else ())}


BLOCK_DIMS = FIT_DIMS[:4]  # the dims along which the store cuts a variable into chunks


def chunk_blocks(variable):
    """The regions of ``variable`` (lazy, from the store) that each hold whole chunks along
    :data:`BLOCK_DIMS` (the store's chunks, ``preferred_chunks``; the whole extent along a
    dim it does not cut): dicts of slices, one region per chunk, so that reading them one
    after the other decodes every chunk once."""
    chunks = variable.encoding.get("preferred_chunks", {})
    steps = [chunks.get(dim, variable.sizes[dim]) for dim in BLOCK_DIMS]
    starts = [range(0, variable.sizes[dim], step) for dim, step in zip(BLOCK_DIMS, steps,
                                                                      strict=True)]
    for corner in itertools.product(*starts):
        yield {dim: slice(start, start + step)
               for dim, start, step in zip(BLOCK_DIMS, corner, steps, strict=True)}


def algorithm_chunks(variable, positions):
    """The chunks of ``variable`` (lazy, from the store; dims FIT_DIMS first, :func:`chunk_blocks`)
    that hold any of the algorithms at ``positions`` (ascending), one at a time:
    ``(inside, region, values)``, the indices into ``positions`` of the algorithms the chunk
    holds, its slices along the other BLOCK_DIMS and those algorithms' values. Each chunk is
    decoded whole and the algorithms taken in NumPy: an index array on the lazy variable
    would make Zarr copy every decoded chunk through it."""
    for block in chunk_blocks(variable):
        span = block["algorithm"]
        inside = np.flatnonzero((positions >= span.start) & (positions < span.stop))
        if inside.size:
            values = variable.isel(block).values[positions[inside] - span.start]
            yield inside, tuple(block[dim] for dim in BLOCK_DIMS[1:]), values


def zero_weight_counts(ds, sparse):
    """Per fit (the fit dims), the number of features whose weight is exactly 0 in
    ``weights_per_s`` (NaN weights, of no fit or a failed one, count as nonzero; 0 for the
    algorithms that are not ``sparse``, which thresholds nothing), read one chunk at a time
    (:func:`algorithm_chunks`) so that memory stays bounded by a chunk."""
    weights = ds[WEIGHTS_PER_S].transpose(*FIT_DIMS, "feature")
    counts = np.zeros(weights.shape[:-1], np.int16)
    counted = np.flatnonzero(sparse.values)  # the others' counts stay 0, uncounted
    for inside, region, chunk in algorithm_chunks(weights, counted):
        counts[(counted[inside], *region)] = np.add.reduce(chunk == 0, axis=-1,
                                                            dtype=np.int16)
    return xr.DataArray(counts, coords={d: ds[d] for d in FIT_DIMS}, dims=FIT_DIMS)


def score_bits(store, ds):
    """Per algorithm of the group ``ds``, the selection-score kinds (bits) its cells get:
    the runner's rule on the store's ``protocol`` and ``algorithm_definitions``; 0 for a
    store without scores."""
    algorithms = [str(a) for a in ds.algorithm.values]
    wanted = wanted_scores(store.attrs.get("protocol") or {},
                           store.attrs.get("algorithm_definitions") or {}, algorithms)
    return xr.DataArray(wanted, coords={"algorithm": ds.algorithm}, dims="algorithm")


def _with_scores(ds, bits):
    """The blocks (algorithm, init, kind, percent, run) marked done that carry every score
    kind (``bits``) their algorithm gets (``pcskm.runner.store.complete_blocks``)."""
    done = ds.done.load().transpose("algorithm", ...)
    scored = ds.scored.load().transpose(*done.dims).values if "scored" in ds.variables else None
    return done.copy(data=complete_blocks(done.values, scored, bits.values))


def complete(store, ds):
    """The complete blocks of the group ``ds`` (dims algorithm first): those marked done
    that carry every selection score their algorithm gets (:func:`score_bits`)."""
    return _with_scores(ds, score_bits(store, ds))


def fit_table(store, name):
    """The analysis variables of data set ``name`` (loaded into memory): f_score and
    satisfied (float64), the selection scores the store holds (float64), the masks
    ``applies``, ``expected``, ``computed``, ``failed`` and ``sparse`` (algorithm),
    ``score_bits`` (algorithm), ``cv_run`` (run: the runs with CV scores, the spec's
    ``cv_runs``), n_constraints, ``n_zero_weights`` where the store keeps ``weights_per_s``
    (:func:`zero_weight_counts`), and the data set's attributes with ``n_features`` (the
    weights themselves are read by :mod:`.weights`)."""
    ds = store.group(name)
    grid = ds.sparsity.values[~np.isnan(ds.sparsity.values)]
    if np.any(np.diff(grid) <= 0):
        raise ValueError(f"{name}: the s grid is not ascending ({grid}); ties in the best-s "
                         "selection go to the smallest s and need an ascending grid")
    codes = status_codes(ds.status)
    status = ds.status.load()
    sparse = xr.DataArray(
        [store.is_sparse(str(a)) for a in ds.algorithm.values],
        coords={"algorithm": ds.algorithm}, dims="algorithm")
    applies = sparse == ds.sparsity.notnull()
    expected = ((status != codes["not_applicable"]) & applies).any("sparsity")
    complete = ((status != codes["missing"]) | ~applies).all("sparsity")
    bits = score_bits(store, ds)
    done = _with_scores(ds, bits)
    computed = expected & done & complete
    failed = failed_fits(status) & applies & computed
    out = xr.Dataset(
        {
            "f_score": ds.f_score.astype(np.float64),
            "satisfied": ds.satisfied.astype(np.float64),
            "applies": applies,
            "expected": expected.transpose(*CELL_DIMS),
            "computed": computed.transpose(*CELL_DIMS),
            "failed": failed.transpose(*FIT_DIMS),
            "sparse": sparse,
            "score_bits": bits,
            **{score: ds[score].astype(np.float64)
               for score in SCORE_VARIABLES if score in ds.variables},
        },
        attrs={**ds.attrs, "n_features": ds.sizes.get("feature", 0)},
    ).load()
    out["n_constraints"] = ds.n_constraints.load()
    if WEIGHTS_PER_S in ds.variables:
        out[ZERO_WEIGHTS] = zero_weight_counts(ds, sparse)
    cv_runs = (store.attrs.get("protocol") or {}).get("cv_runs")
    out["cv_run"] = ds.run < (ds.sizes["run"] if cv_runs is None else cv_runs)
    if "uninformative" in ds.variables:
        out = out.assign_coords(uninformative=ds["uninformative"].load().astype(bool))
    return out


@contextlib.contextmanager
def quiet():
    """Silence NumPy's warnings for all-NaN slices: a mean or standard deviation of nothing
    is NaN here by design, and the counts say why."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
        warnings.filterwarnings("ignore", "Degrees of freedom <= 0", RuntimeWarning)
        warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
        yield

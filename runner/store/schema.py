"""The cube's schema: what a store holds, whatever spec made it (docs/reference/cube-schema.md).

One Zarr (v3) store per experiment run; one group per data set, because every data set has
its own s grid and number of features. In a group, every fit record has the dims
``(algorithm, init, kind, percent, run, fold, sparsity)``. The ``sparsity`` coordinate is
``NaN`` (no s) followed by the data set's s grid: LKM, PCKM and MPCKM fill only the NaN
entry, SKM and PCSKM only the grid; the other entries have status ``not_applicable``. One
shape for every algorithm keeps the analysis to plain xarray reductions (a NaN-skipping
maximum over ``sparsity`` is the best s of a sparse algorithm and the only value of the
others); the unused entries are runs of NaN that compress to almost nothing.

Chunks (:data:`CHUNKED_BY`): in schema version 2, one per (kind, percent) and variable,
holding every algorithm, init, run, fold and s (or feature), so that a store has tens of
thousands of files, not millions, and a task of the planner holds whole chunks
(:mod:`pcskm.runner.tasks`): each chunk a run writes is written by one task. Version 1 stores
have one chunk per (algorithm, init, kind). Every chunk carries a CRC32C checksum
(:data:`COMPRESSORS`).

A spec that turns on the per-s selection scores (``cv_folds``, ``gap_permutations``;
docs/method/selection.md) adds their variables to the store, and the ``scored`` markers
record which of them the done cells of each block carry: a store written before, or
without them, is extended in place and its done cells computed again (with the same values)
to get them. Once on, a store keeps them: a spec that turns them off, or changes their
number of folds or permutations, is refused. The held-out pair AUC (selection.md §7) comes
with the CV scores, from the same fold fits: a store's protocol records it as ``cv_auc``
(:func:`auc_setting`), false in a store made before it, which a spec with ``cv_folds``
extends the same way.
"""

import asyncio

import numpy as np
from zarr.codecs import Crc32cCodec, ZstdCodec
from zarr.core.sync import sync

from pcskm.algorithms._result import FIT_STATUS_NAMES, STATUS_NAMES
from pcskm.experiments import cells

SCHEMA_VERSION = 3
# The block dims along which each schema version cuts every per-cell variable into chunks
# (one entry per chunk along these, the whole extent along the others;
# docs/reference/cube-schema.md, Chunks and size). Version 1 stores are read, verified and
# reported in their own layout. Version 3 has the chunks of version 2 and binds each to its
# place (pcskm.runner.store.places); a run records a version 2 store's chunks as they are.
CHUNKED_BY = {1: ("algorithm", "init", "kind"), 2: ("kind", "percent"), 3: ("kind", "percent")}
# The first schema version whose stores hold, from their creation, the digests of their
# metadata (root attribute metadata_sha256) and of their chunks (pcskm.runner.store.places):
# in such a store a missing record is damage, not an older store.
RECORDS_SINCE = 3
# "error" (a user estimator's failed fit) came after "not_applicable": appended, so that
# every store keeps its codes.
STATUS_FLAGS = ("missing", *STATUS_NAMES, "not_applicable", "error")
MISSING = 0
NOT_APPLICABLE = STATUS_FLAGS.index("not_applicable")
ERROR = STATUS_FLAGS.index("error")
# The cube's code of each status code of a fit (pcskm.algorithms._result.FIT_STATUS_NAMES).
FIT_STATUS_CODES = np.array([STATUS_FLAGS.index(name) for name in FIT_STATUS_NAMES], np.int8)
FIT_DIMS = ("algorithm", "init", "kind", "percent", "run", "fold", "sparsity")
BLOCK_DIMS = FIT_DIMS[:4]
DONE_DIMS = (*BLOCK_DIMS, "run")
WEIGHT_DIMS = (*FIT_DIMS[:-1], "feature")
# The weights of every fit, per s (docs/reference/cube-schema.md, Weights per s): in every
# store made since the variable exists; a store made before keeps only the mean over s.
WEIGHTS_PER_S = "weights_per_s"
WEIGHTS_PER_S_DIMS = (*FIT_DIMS, "feature")
WEIGHTS_PER_S_ATTRS = {
    "long_name": "final feature weights of every fit: ones (LKM, PCKM) and the metric "
                 "diagonal a (MPCKM) at the no-s entry, w at each s of the grid (SKM, PCSKM) "
                 "(docs/method/protocol.md §11)",
    "comment": "NaN for a failed fit and where no fit exists (status missing or "
               "not_applicable); the weights variable holds their mean over s"}
CELL_DIMS = ("kind", "percent", "run", "fold")


def block_chunk(version, block):
    """The chunk (its place along the block dims) holding the block ``block`` (positions
    along (algorithm, init, kind, percent)) in a store of schema ``version``."""
    cut = CHUNKED_BY[version]
    return tuple(p if dim in cut else 0 for dim, p in zip(BLOCK_DIMS, block, strict=True))


def chunk_region(version, chunk):
    """The block dims' slices of the chunk at ``chunk`` (:func:`block_chunk`)."""
    cut = CHUNKED_BY[version]
    return tuple(slice(p, p + 1) if dim in cut else slice(None)
                 for dim, p in zip(BLOCK_DIMS, chunk, strict=True))


def in_chunk(version, block):
    """The place of the block ``block`` inside its chunk, along the block dims."""
    cut = CHUNKED_BY[version]
    return tuple(0 if dim in cut else p for dim, p in zip(BLOCK_DIMS, block, strict=True))


def chunk_shape(version, dims, shape):
    """The chunk shape of a per-cell variable with ``dims`` and ``shape`` in a store of schema
    ``version``: one entry along the dims of :data:`CHUNKED_BY`, the whole extent along the
    others; one chunk for a variable without all of those dims (``n_constraints`` in
    version 1)."""
    cut = CHUNKED_BY[version]
    if not set(cut) <= set(dims):
        return tuple(shape)
    return tuple(1 if dim in cut else size for dim, size in zip(dims, shape, strict=True))
SCORE_CELL_DIMS = FIT_DIMS[:-1]  # one entry per cell: no sparsity

FIT_VARIABLES = {  # name: (dtype, fill value, attributes)
    "f_score": ("f4", np.nan, {
        "long_name": "pairwise F-score on the fold's test points (docs/method/protocol.md §8.1)",
        "comment": "NaN for a failed fit (empty_cluster, degenerate_weights, error) and "
                   "where no fit exists (status missing or not_applicable)"}),
    "precision": ("f4", np.nan, {"long_name": "pairwise precision on the test points"}),
    "recall": ("f4", np.nan, {"long_name": "pairwise recall on the test points"}),
    "satisfied": ("f4", np.nan, {
        "long_name": "fraction of the cell's constraints satisfied by the labels of all n "
                     "points (docs/method/protocol.md §8.2; honest best-s selection §9.2)",
        "comment": "NaN for a failed fit; SKM and LKM are scored against the cell's "
                   "constraints although they did not use them"}),
    "status": ("i1", MISSING, {
        "long_name": "status of the fit",
        "flag_values": list(range(len(STATUS_FLAGS))),
        "flag_meanings": " ".join(STATUS_FLAGS),
        "comment": "missing: not computed yet; not_applicable: no such fit (an s entry of a "
                   "non-sparse algorithm or the no-s entry of a sparse one, or Seeding with "
                   "a kind outside the spec's seeding_kinds); error: a user estimator's fit "
                   "raised or returned unusable labels (its message: fit_error)"}),
    "n_iter": ("i2", -1, {
        "long_name": "iterations (E-step passes; weight updates for SKM/PCSKM)",
        "_FillValue": -1}),
}


# The per-s selection scores (docs/method/selection.md), stored when the store's spec turns
# them on: the bit of each kind in the ``scored`` markers, the spec keys that set them, and
# the variables of each kind, name: (bit, dims, dtype, fill value, attributes).
CV_SCORES, GAP_SCORES, AUC_SCORES = 1, 2, 4
# cv_auc: the CV fold fits also give the pair AUC; set from cv_folds (:func:`auc_setting`)
AUC_SETTING = "cv_auc"
SCORE_SETTINGS = ("cv_folds", "gap_permutations", "cv_algorithms", "cv_runs", AUC_SETTING)
SCORE_VARIABLES = {
    "cv_score": (CV_SCORES, FIT_DIMS, "f4", np.nan, {
        "long_name": "constraint cross-validation score: mean held-out CVCP F-measure over "
                     "the folds whose fit succeeded (docs/method/selection.md §2)",
        "comment": "NaN for a failed fit, where every fold failed, for a cell with fewer "
                   "than 2 groups of constraints and where not computed (non-sparse "
                   "algorithms, algorithms outside cv_algorithms)"}),
    "cv_folds_used": (CV_SCORES, SCORE_CELL_DIMS, "i1", -1, {
        "long_name": "folds K of the cell's cross-validation: cv_folds, or the number of "
                     "groups of its constraints when fewer (0: fewer than 2 groups, no score)",
        "_FillValue": -1}),
    "gap": (GAP_SCORES, FIT_DIMS, "f4", np.nan, {
        "long_name": "gap statistic: log O(s) - mean_b log O*_b(s) "
                     "(docs/method/selection.md §3)",
        "comment": "NaN for a failed fit and where not computed (non-sparse algorithms)"}),
    "gap_sd": (GAP_SCORES, FIT_DIMS, "f4", np.nan, {
        "long_name": "standard deviation of log O*_b(s) over the permutations (sparcl's "
                     "sdgaps, docs/method/selection.md §3.3)"}),
    "auc_score": (AUC_SCORES, FIT_DIMS, "f4", np.nan, {
        "long_name": "held-out pair AUC of the weighted distance: mean over the CV folds "
                     "that have one (docs/method/selection.md §7.1)",
        "comment": "NaN in cells of kinds must-link and cannot-link (one kind of pair: no "
                   "AUC), for a failed fit, where no fold has an AUC, and where cv_score is "
                   "not computed"}),
    "auc_se": (AUC_SCORES, FIT_DIMS, "f4", np.nan, {
        "long_name": "standard error of auc_score: the folds' sample standard deviation over "
                     "the square root of their number (docs/method/selection.md §7.1)",
        "comment": "NaN where auc_score is, and where fewer than 2 folds have an AUC"}),
}
SCORED_ATTRS = {
    "long_name": "selection scores the done cells of this (algorithm, init, kind, percent, "
                 "run) carry: bit 1 cv_score and cv_folds_used, bit 2 gap and gap_sd, bit 4 "
                 "auc_score and auc_se",
    "comment": "written with the done markers; a done block without the scores its "
               "algorithm gets is computed again by the next run"}


def auc_setting(fixed):
    """The ``cv_auc`` of the settings ``fixed`` (a spec's, :func:`pcskm.runner.store.layout.
    spec_layout`): on with the CV scores, whose fold fits give the AUC."""
    return bool(fixed.get("cv_folds", 0))


def score_bits(fixed):
    """The score kinds (bits) that the settings ``fixed`` (a store's or a spec's) turn on:
    the AUC only where ``cv_auc`` records it (a store made before it has CV without it)."""
    cv = fixed.get("cv_folds", 0)
    return ((CV_SCORES if cv else 0)
            | (GAP_SCORES if fixed.get("gap_permutations", 0) else 0)
            | (AUC_SCORES if cv and fixed.get(AUC_SETTING, False) else 0))


def score_variables(fixed):
    """The selection-score variables of a store with the settings ``fixed``."""
    bits = score_bits(fixed)
    return [name for name, (bit, *_) in SCORE_VARIABLES.items() if bits & bit]


# A user estimator's first error message per block and run (FIT_ERROR_DIMS), in stores
# whose algorithms include one (docs/reference/cube-schema.md).
FIT_ERROR_DIMS = ("algorithm", "init", "kind", "percent", "run")
FIT_ERROR_ATTRS = {
    "long_name": "first error of a user estimator's fits in this (algorithm, init, kind, "
                 "percent, run), in fold and s order: exception type and message; \"\" for "
                 "none (docs/reference/estimator-contract.md)",
    "comment": "the fits with status error are counted by the status variable"}


# The arrays of a data set's group as pcskm writes them (:func:`.create.write_group`; the
# record of chunk digests, :data:`.places.RECORD`, and of the runs, :data:`.provenance.RUN_INDEX`,
# named here too, since those modules come after this one). The store's layout is its root,
# the groups of the data sets its root attribute ``data_sha256`` names, and these arrays in
# them; any other node (an array or a group written by hand) is not part of it: verify names
# it, every command ignores it, and a run never records it (docs/reference/cube-schema.md,
# Nodes the layout does not name).
GROUP_ARRAYS = frozenset({*FIT_DIMS, "feature", "feature_name", "uninformative",
                          *FIT_VARIABLES, "weights", WEIGHTS_PER_S, "n_constraints", "done",
                          "run_index", *SCORE_VARIABLES, "scored", "chunk_sha256",
                          "fit_error"})


def layout_datasets(attrs):
    """The data sets whose groups the store with root attributes ``attrs`` holds (the keys
    of ``data_sha256``); None when the root does not name them (a store written by hand, as
    in the report's tests): then every group is taken for a data set's."""
    names = attrs.get("data_sha256")
    return frozenset(names) if isinstance(names, dict) else None


def in_layout(node, datasets):
    """Whether the node at path ``node`` ("iris", "iris/f_score") of a store holding the
    data sets ``datasets`` (:func:`layout_datasets`) is part of its layout."""
    group, _, array = node.partition("/")
    return (datasets is None or group in datasets) and (not array or array in GROUP_ARRAYS)


def not_in_layout(nodes, datasets):
    """The paths among ``nodes`` of the nodes that are not part of the layout of a store
    holding the data sets ``datasets`` (:func:`in_layout`), sorted; of a group, not its
    members."""
    found = []
    for node in sorted(nodes):
        if not in_layout(node, datasets) and not any(node.startswith(f"{f}/") for f in found):
            found.append(node)
    return found


def wanted_scores(fixed, definitions, algorithms):
    """Per algorithm (in the order of ``algorithms``), the score kinds (bits) its cells get:
    CV (and the AUC, where ``fixed`` has it) for ``cv_algorithms``, the gap for every SKM
    and PCSKM algorithm (``definitions``: name -> {"estimator", "params"})."""
    cv = score_bits(fixed) & (CV_SCORES | AUC_SCORES)
    wanted = np.zeros(len(algorithms), np.uint8)
    for a, name in enumerate(algorithms):
        if name in fixed.get("cv_algorithms", ()):
            wanted[a] |= cv
        if fixed.get("gap_permutations", 0) and \
                definitions.get(name, {}).get("estimator") in cells.SPARSE:
            wanted[a] |= GAP_SCORES
    return wanted


def complete_blocks(done, scored, wanted):
    """The blocks (algorithm, init, kind, percent, run) that are done and carry every score
    kind their algorithm gets: ``done`` and ``scored`` markers (``scored`` None: none), and
    ``wanted`` per algorithm (:func:`wanted_scores`)."""
    wanted = wanted.reshape(-1, *([1] * (done.ndim - 1)))
    scored = np.zeros_like(done) if scored is None else scored
    return (done > 0) & ((scored & wanted) == wanted)


# Zarr's default compressor followed by a CRC32C checksum of the compressed bytes, which
# Zarr checks on every read and `pcskm verify` checks without decompressing.
COMPRESSORS = (ZstdCodec(level=0, checksum=False), Crc32cCodec())
# Every chunk written is kept, even when it holds only fill values (a block whose every fit
# failed), so that a chunk missing under a done marker is always damage.
WRITE_CONFIG = {"write_empty_chunks": True}


def writable_arrays(group):
    """``{name: array}`` of a group, opened to write with :data:`WRITE_CONFIG`."""
    return {name: array.with_config(WRITE_CONFIG) for name, array in group.arrays()}


def write_regions(writes):
    """Write every ``(array, region, values)`` of ``writes`` (Zarr arrays, each region whole
    chunks) in one call into Zarr's event loop, their encoding and files overlapping (Zarr
    replaces each file atomically, as with one write at a time); returns once all are
    written, or raises the first error once no write is still running."""
    async def all_of():
        return await asyncio.gather(*(array._async_array.setitem(region, values)
                                      for array, region, values in writes),
                                    return_exceptions=True)

    for outcome in sync(all_of()):
        if isinstance(outcome, BaseException):
            raise outcome


TITLE = "pcskm results cube"  # root attribute title of a cube
# title of the best-s selections pcskm report writes beside a cube (experiments.report)
SELECTIONS_TITLE = "pcskm best-s selections"
RUNNING = "run_in_progress"  # root attribute: the run writing the store (Cube.begin_run)


def applicable(spec, init, kind):
    """Whether ``spec`` runs ``init`` with constraint kind ``kind`` (Seeding runs only with
    the spec's seeding_kinds)."""
    return kind in (spec.seeding_kinds if init == cells.SEEDING else spec.kinds)


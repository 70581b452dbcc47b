"""The results cube: its schema, its layout for a spec, creation, extension and opening.

One Zarr (v3) store per experiment run; one group per data set, because every data set has
its own s grid and number of features. In a group, every fit record has the dims
``(algorithm, init, kind, percent, run, fold, sparsity)``. The ``sparsity`` coordinate is
``NaN`` (no s) followed by the data set's s grid: LKM, PCKM and MPCKM fill only the NaN
entry, SKM and PCSKM only the grid; the other entries have status ``not_applicable``. One
shape for every algorithm keeps the analysis to plain xarray reductions (a NaN-skipping
maximum over ``sparsity`` is the best s of a sparse algorithm and the only value of the
others); the unused entries are runs of NaN that compress to almost nothing.

Chunks: one per (algorithm, init, kind) and variable, holding every percent, run, fold and
s (for the paper's grid about 300 kB of float32 before compression), so that a store has tens
of thousands of files, not millions. Tasks are rectangles of kinds x percents inside such
chunks.

The client process is the only writer (:mod:`pcskm.runner.writer`). It writes whole chunks, then the
``done`` completion markers of the blocks and runs they received. Zarr's local store replaces
every file atomically (write to a temporary file, then rename), so a run killed at any moment
leaves a readable store in which every cell marked done is intact; cells computed but not
marked done are recomputed, with the same values, by the next run.
A store is created, like an extension, beside its path and renamed into place once
complete (:func:`_build_beside`), so that a run killed while creating it leaves no store or
a whole one.

A spec that turns on the per-s selection scores (``cv_folds``, ``gap_permutations``;
docs/method/selection.md) adds their variables to the store, and the ``scored`` markers
record which of them the done cells of each block carry: a store written before, or
without them, is extended in place and its done cells computed again (with the same values)
to get them. Once on, a store keeps them: a spec that turns them off, or changes their
number of folds or permutations, is refused.

One run writes a store at a time, whatever path it was given: :func:`store_lock` holds a
kernel lock on ``<resolved store>.lock``. Every chunk carries a CRC32C checksum, and
:func:`prepare` verifies the store and clears the done markers of damaged chunks before a run
plans (:mod:`pcskm.runner.integrity`).
"""

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import socket
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np
import zarr
from zarr.codecs import Crc32cCodec, ZstdCodec

from pcskm.algorithms._result import FIT_STATUS_NAMES, STATUS_NAMES
from pcskm.experiments import cells, estimators
from pcskm.experiments.protocol import pct10
from pcskm.experiments.sources import check_folds, definition_json
from pcskm.experiments.spec import ADDED_DEFAULTS

log = logging.getLogger("pcskm")

SCHEMA_VERSION = 1
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
SCORE_CELL_DIMS = FIT_DIMS[:-1]  # one entry per cell: no sparsity
# Spec fields a store may grow along; every other field of the spec (seed, n_folds,
# max_iter, the s grid rule) fixes the results and must match the store's.
EXTENDABLE = ("datasets", "algorithms", "inits", "kinds", "seeding_kinds", "percentages",
              "n_runs", "data")  # data: a data set's definition; its digest is checked instead
FREE = ("name", "description", "source_text")

_FIT_VARIABLES = {  # name: (dtype, fill value, attributes)
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
CV_SCORES, GAP_SCORES = 1, 2
SCORE_SETTINGS = ("cv_folds", "gap_permutations", "cv_algorithms", "cv_runs")
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
}
SCORED_ATTRS = {
    "long_name": "selection scores the done cells of this (algorithm, init, kind, percent, "
                 "run) carry: bit 1 cv_score and cv_folds_used, bit 2 gap and gap_sd",
    "comment": "written with the done markers; a done block without the scores its "
               "algorithm gets is computed again by the next run"}


def score_bits(fixed):
    """The score kinds (bits) that the settings ``fixed`` (a store's or a spec's) turn on."""
    return ((CV_SCORES if fixed.get("cv_folds", 0) else 0)
            | (GAP_SCORES if fixed.get("gap_permutations", 0) else 0))


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
# What algorithm_definitions records of a user estimator's origin: a change warns, the rest
# of a definition must match the store's.
PROVENANCE_KEYS = ("distribution", "version", "source_sha256")


def definition_is_sparse(definition):
    """Whether an algorithm of ``algorithm_definitions`` fits the s grid (SKM, PCSKM, a user
    estimator with ``sparsity``)."""
    return definition.get("sparse", definition.get("estimator") in cells.SPARSE)


def has_user_algorithms(definitions):
    """Whether ``algorithm_definitions`` hold a user estimator (the store then has the
    ``fit_error`` variable)."""
    return any(estimators.is_import_path(d.get("estimator", "")) for d in definitions.values())


def algorithm_definition(variant):
    """What the cube records of a spec's algorithm: estimator and params, and for a user
    estimator its constraints mode, whether it fits the s grid and its provenance
    (:func:`pcskm.experiments.estimators.provenance`)."""
    definition = {"estimator": variant.estimator, "params": variant.params}
    if variant.is_user:
        definition.update(constraints=variant.constraints,
                          sparse=estimators.is_sparse(variant.estimator),
                          **estimators.provenance(variant.estimator))
    return _json(definition)


def wanted_scores(fixed, definitions, algorithms):
    """Per algorithm (in the order of ``algorithms``), the score kinds (bits) its cells get:
    CV for ``cv_algorithms``, the gap for every SKM and PCSKM algorithm (``definitions``:
    name -> {"estimator", "params"})."""
    wanted = np.zeros(len(algorithms), np.uint8)
    for a, name in enumerate(algorithms):
        if fixed.get("cv_folds", 0) and name in fixed.get("cv_algorithms", ()):
            wanted[a] |= CV_SCORES
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


class IncompatibleStore(ValueError):
    """The store was made with settings that change the results of this spec."""


class StoreBusy(ValueError):
    """Another ``pcskm run`` is writing the store."""


class StoreNotWritable(ValueError):
    """The store, or its lock file, cannot be written (read-only file system, permissions,
    disk full, no file locks)."""


class NotAStore(ValueError):
    """The path is not a pcskm results cube (a file, or a folder without Zarr metadata)."""


class DamagedStore(ValueError):
    """The store's metadata or layout cannot be read; names the file."""


class StoreChanged(ValueError):
    """The store was replaced (extended) or its metadata rewritten while it was read."""


def store_version(path, wait_seconds=10.0):
    """What changes when the store at ``path`` is swapped for an extended one or its metadata
    is rewritten: the identities of its folder and of its root ``zarr.json`` (both replaced,
    never written in place), None if there is no store. Waits up to ``wait_seconds`` for a
    store being swapped in (``<store>.old`` present)."""
    path, deadline = Path(path), time.monotonic() + wait_seconds
    while True:
        try:
            folder, root = os.stat(path), os.stat(path / "zarr.json")
            return (folder.st_dev, folder.st_ino, root.st_ino, root.st_mtime_ns)
        except FileNotFoundError:
            swapping = path.with_name(path.name + ".old").exists()
            if not swapping or time.monotonic() > deadline:
                return None
            time.sleep(0.05)


def read_consistently(path, read, attempts=2):
    """``read()`` (which reads the store at ``path``) done on one version of the store: read
    again if another run replaced the store or rewrote its metadata meanwhile (an extension
    swapped in, a run recording itself), and :class:`StoreChanged` if it changed under every
    attempt."""
    for _ in range(attempts):
        version = store_version(path)
        try:
            result = read()
        except Exception:
            if store_version(path) == version:
                raise
            continue
        if store_version(path) == version:
            return result
    raise StoreChanged(f"{path} changed while it was read {attempts} times (another pcskm run "
                       "is extending it or recording itself); read it again once that run "
                       "has begun computing or has ended")


LOCK_MODE = 0o644  # read and write, never executable


def lock_path(store):
    """The lock file of ``store``: ``<store>.lock`` beside the store's resolved path, so that
    every spelling of the path (symbolic links, ``..``, relative or absolute) names one
    lock file."""
    path = Path(store).resolve()
    return path.with_name(path.name + ".lock")


def _lock_opened(lock):
    """Called between opening the lock file and locking it (a hook for the tests that
    interleave two contenders)."""


def _same_file(fd, path):
    try:
        here, there = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _holder(fd):
    host, _, pid = os.pread(fd, 4096, 0).decode(errors="replace").strip().rpartition(" ")
    return (f"process {pid} on {host}" if pid.isdigit() else
            "a process that has not written its name yet")


def _lock(lock, store):
    """Open ``lock`` and take an exclusive ``flock`` on it, or raise :class:`StoreBusy`.

    The kernel releases the lock when its process ends, however it ends, so a lock file left
    by a killed run is simply taken: there is no stale lock to detect or delete. The holder
    deletes the file before releasing it; a contender that locked a file deleted meanwhile
    sees that the path now names another file and starts again.
    """
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, LOCK_MODE)
        except OSError as error:
            raise StoreNotWritable(
                f"cannot create the lock file {lock} of {store}: {error.strerror}. "
                "pcskm run writes the store and needs a writable folder; status, report --out "
                "and verify work on a read-only store") from None
        try:
            _lock_opened(lock)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StoreBusy(
                    f"{store} is being written by {_holder(fd)} (lock file {lock}); wait "
                    "for that run to end (the lock is released when its process ends, "
                    "however it ends)") from None
            except OSError as error:
                raise StoreNotWritable(
                    f"cannot lock {lock}: {error.strerror}. The file system does not "
                    "support file locks (on Lustre, mount with -o flock; on NFS, run lockd "
                    "or use NFSv4)") from None
            if _same_file(fd, lock):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # its holder deleted it while we waited: lock the file there now


def _unlock(lock, fd):
    try:
        if _same_file(fd, lock):
            lock.unlink()
    finally:
        os.close(fd)


@contextlib.contextmanager
def store_lock(path):
    """Hold the store's lock (:func:`lock_path`) while writing, so that two runs never write
    one store, whatever path each was given. The lock file names its holder (host and
    process); a lock that cannot be written is an error that leaves no lock behind."""
    lock = lock_path(path)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StoreNotWritable(f"cannot create the folder of {path}: {error.strerror}") from None
    fd = _lock(lock, path)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{socket.gethostname()} {os.getpid()}".encode(), 0)
        os.fsync(fd)
    except OSError as error:
        _unlock(lock, fd)
        raise StoreNotWritable(f"cannot write the lock file {lock}: {error.strerror}; no "
                               "lock was left behind. Free space (or fix the file system) "
                               "and rerun") from None
    try:
        yield
    finally:
        _unlock(lock, fd)


def _json(value):
    return json.loads(json.dumps(value))


def _versions():
    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "unknown"

    return {"pcskm": version("pcskm"), "numpy": np.__version__, "python": sys.version.split()[0],
            "zarr": zarr.__version__, "xarray": version("xarray"), "dask": version("dask"),
            "numba": version("numba")}


@dataclass(frozen=True)
class GroupLayout:
    """The coordinates and attributes of one data set's group."""

    dataset: str
    algorithms: tuple
    inits: tuple
    kinds: tuple
    percents: tuple
    n_runs: int
    n_folds: int
    sparsity: tuple  # the data set's s grid (the coordinate is NaN followed by these)
    feature_names: tuple
    uninformative: tuple | None
    attrs: dict = field(compare=False, hash=False)

    @property
    def sparsity_coord(self):
        return np.array((np.nan, *self.sparsity))

    def fit_shape(self):
        return (len(self.algorithms), len(self.inits), len(self.kinds), len(self.percents),
                self.n_runs, self.n_folds, 1 + len(self.sparsity))

    def coords(self):
        return {
            "algorithm": np.array(self.algorithms, dtype=str),
            "init": np.array(self.inits, dtype=str),
            "kind": np.array(self.kinds, dtype=str),
            "percent": np.array(self.percents, dtype=np.float64),
            "run": np.arange(self.n_runs, dtype=np.int64),
            "fold": np.arange(self.n_folds, dtype=np.int64),
            "sparsity": self.sparsity_coord,
            "feature": np.arange(len(self.feature_names), dtype=np.int64),
        }


@dataclass(frozen=True)
class Layout:
    groups: dict  # dataset name -> GroupLayout
    fixed: dict  # the spec fields that fix the results
    algorithms: dict  # variant name -> {"estimator", "params"}
    # the groups have weights_per_s: every new store; a store made before keeps its layout
    weights_per_s: bool = True


def _union(preferred, others):
    return tuple(preferred) + tuple(v for v in others if v not in preferred)


def spec_layout(spec, data_dir=None):
    """The layout of ``spec``'s cube (loads every data set of the spec)."""
    kinds = _union(spec.kinds, spec.seeding_kinds)
    groups = {}
    for name in spec.datasets:
        ref = spec.data_ref(name)
        data = cells.dataset(ref, data_dir)
        check_folds(data, spec.n_folds)
        sha = _data_sha256(data)
        attrs = {
            "dataset": name, "code": data.code, "subset": data.subset,
            "n_samples": data.n_samples, "n_features": data.n_features,
            "n_clusters": data.n_clusters, "description": data.description,
            "source": data.source, "data_sha256": sha,
            "feature_quality": data.feature_quality or "unknown",
        }
        if not isinstance(ref, str):  # a [data.NAME] table of the spec
            attrs["definition"] = definition_json(ref)
        uninformative = None if data.uninformative is None else tuple(
            bool(v) for v in data.uninformative)
        groups[name] = GroupLayout(
            dataset=name, algorithms=tuple(v.name for v in spec.algorithms),
            inits=tuple(spec.inits), kinds=kinds, percents=tuple(spec.percentages),
            n_runs=spec.n_runs, n_folds=spec.n_folds,
            sparsity=tuple(float(s) for s in spec.sparsity_grid(data.n_features)),
            feature_names=tuple(data.feature_names), uninformative=uninformative,
            attrs=attrs,
        )
    spec_dict = spec.to_dict()
    fixed = _json({k: v for k, v in spec_dict.items() if k not in EXTENDABLE + FREE})
    variants = {v.name: algorithm_definition(v) for v in spec.algorithms}
    return Layout(groups=groups, fixed=fixed, algorithms=variants)


def _data_sha256(data):
    digest = hashlib.sha256()
    digest.update(np.ascontiguousarray(data.X, dtype=np.float64).tobytes())
    digest.update(np.ascontiguousarray(data.y, dtype=np.int64).tobytes())
    return digest.hexdigest()


def _rounded(values):
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


def merge_layouts(old, new, store="the store", check_scores=True,
                  advice="Use another --store for this spec, or the settings the store was "
                         "made with."):
    """The layout covering both; raise :class:`IncompatibleStore` naming every difference
    that changes results (seed, folds, max_iter, s grid, algorithm parameters, data) and,
    with ``check_scores``, the selection-score settings that one store cannot hold together; the
    message ends with ``advice``."""
    problems = []
    for key in sorted((set(old.fixed) | set(new.fixed)) - set(SCORE_SETTINGS)):
        if old.fixed.get(key) != new.fixed.get(key):
            problems.append(f"{key} is {old.fixed.get(key)!r} in {store} but "
                            f"{new.fixed.get(key)!r} in this spec")
    scores = _merge_scores(old, new, store, problems) if check_scores else {}
    for name in sorted(set(old.algorithms) & set(new.algorithms)):
        before, now = (_without_provenance(layout.algorithms[name]) for layout in (old, new))
        if before != now:
            problems.append(f"algorithm {name} is {before} in {store} but {now} in this spec")
        elif old.algorithms[name] != new.algorithms[name]:
            _warn_provenance(name, old.algorithms[name], new.algorithms[name], store)
    groups = dict(old.groups)
    for name, group in new.groups.items():
        if name not in old.groups:
            groups[name] = group
            continue
        before = old.groups[name]
        if before.attrs.get("data_sha256") != group.attrs.get("data_sha256"):
            problems.append(f"the data of {name} differ from the data in {store}: SHA-256 "
                            f"{before.attrs.get('data_sha256')} there, "
                            f"{group.attrs['data_sha256']} as loaded now ({group.attrs['source']})"
                            f". The file was edited or another version was read: restore the "
                            f"data the store was computed from, or give the changed data set "
                            f"another name (or use another --store)")
        if len(before.sparsity) != len(group.sparsity) or not np.allclose(
                before.sparsity, group.sparsity, rtol=0, atol=1e-12):
            problems.append(f"the s grid of {name} is {_rounded(before.sparsity)} in {store} "
                            f"but {_rounded(group.sparsity)} in this spec")
        if before.n_folds != group.n_folds:
            problems.append(f"{name} has {before.n_folds} folds in {store}, {group.n_folds} "
                            "in this spec")
        if before.feature_names != group.feature_names:
            problems.append(f"the features of {name} differ from those in {store}")
        if problems:
            continue
        percents = sorted(set(before.percents) | set(group.percents), key=pct10)
        groups[name] = GroupLayout(
            dataset=name,
            algorithms=_union(before.algorithms, group.algorithms),  # old order, new appended
            inits=_union(before.inits, group.inits),
            kinds=_union(before.kinds, group.kinds),
            percents=tuple(percents),
            n_runs=max(before.n_runs, group.n_runs),
            n_folds=group.n_folds,
            sparsity=before.sparsity,
            feature_names=before.feature_names,
            uninformative=before.uninformative,
            attrs=before.attrs,
        )
    if problems:
        raise IncompatibleStore(
            f"{store} holds results that this spec would compute differently:\n  - "
            + "\n  - ".join(problems)
            + "\n" + advice
        )
    return Layout(groups=groups, fixed={**old.fixed, **scores},
                  algorithms={**old.algorithms, **new.algorithms},
                  weights_per_s=old.weights_per_s)


def _without_provenance(definition):
    return {k: v for k, v in definition.items() if k not in PROVENANCE_KEYS}


def _origin(definition):
    if definition.get("version", "unknown") != "unknown":
        return f"{definition.get('distribution')} {definition['version']}"
    return f"a module with source SHA-256 {str(definition.get('source_sha256'))[:12]}"


def _warn_provenance(name, before, now, store):
    """Warn that user estimator ``name`` comes from another version than the store's done
    cells, and say how to recompute them."""
    log.warning("algorithm %s: the cells in %s were computed with %s, this run uses %s; the "
                "done cells are kept (and the store now records %s). To recompute them, "
                "use a new --store, or rerun with --force --only algorithm=%s",
                name, store, _origin(before), _origin(now), _origin(now), name)


def _merge_scores(old, new, store, problems):
    """The selection-score settings covering both (appending to ``problems``): a store
    without a kind of score takes the spec's; a store with it keeps it, and the spec must
    have the same number of folds or permutations, and the same ``cv_runs`` for CV;
    ``cv_algorithms`` grows, but an algorithm of the spec that has CV scores in the store
    must keep them."""
    merged = {}
    for key in ("cv_folds", "gap_permutations"):
        before, wanted = old.fixed.get(key, 0), new.fixed.get(key, 0)
        merged[key] = before or wanted
        if before and wanted != before:
            problems.append(f"{key} is {before!r} in {store} but {wanted!r} in this spec (a "
                            "store keeps the selection scores it has, with their settings)")
    before, wanted = old.fixed.get("cv_runs"), new.fixed.get("cv_runs")
    merged["cv_runs"] = before if old.fixed.get("cv_folds", 0) else wanted
    if old.fixed.get("cv_folds", 0) and new.fixed.get("cv_folds", 0) and wanted != before:
        problems.append(f"cv_runs is {before!r} in {store} but {wanted!r} in this spec (a "
                        "store keeps the selection scores it has, with their settings)")
    before, wanted = old.fixed.get("cv_algorithms", []), new.fixed.get("cv_algorithms", [])
    dropped = [name for name in before if name in new.algorithms and name not in wanted]
    if dropped and new.fixed.get("cv_folds", 0):
        problems.append(f"{', '.join(dropped)} {'has' if len(dropped) == 1 else 'have'} CV "
                        f"scores in {store} but {'is' if len(dropped) == 1 else 'are'} not in "
                        "this spec's cv_algorithms")
    merged["cv_algorithms"] = [*before, *(name for name in wanted if name not in before)]
    return merged


# Zarr's default compressor followed by a CRC32C checksum of the compressed bytes, which
# Zarr checks on every read and `pcskm verify` checks without decompressing.
COMPRESSORS = (ZstdCodec(level=0, checksum=False), Crc32cCodec())
# Every chunk written is kept, even when it holds only fill values (a block whose every fit
# failed), so that a chunk missing under a done marker is always damage.
WRITE_CONFIG = {"write_empty_chunks": True}


def _building(step):
    """Called between the steps of building a store (:func:`_build_beside`): a hook for the
    tests that kill a run at every step."""


def _create_array(group, name, dims, shape, dtype, fill, attrs, chunks=None):
    _building(f"before array {name}")  # the previous array complete, its values written
    array = group.create_array(
        name, shape=shape, dtype=dtype, fill_value=fill, dimension_names=dims,
        chunks=chunks or shape, attributes=attrs, compressors=COMPRESSORS, config=WRITE_CONFIG,
    )
    _building(f"array {name} created")
    return array


def metadata_problem(path):
    """The first Zarr metadata file of the store at ``path`` that cannot be read, with the
    reason (``None`` if all can): the root ``zarr.json`` and that of every node it lists."""
    path = Path(path)
    files = [path / "zarr.json"]
    for file in files:  # grows by the nodes the root lists
        try:
            metadata = json.loads(file.read_bytes())
        except FileNotFoundError:
            return f"{file} is missing"
        except (OSError, ValueError) as error:
            return f"{file} cannot be read ({type(error).__name__}: {error})"
        if not isinstance(metadata, dict):
            return f"{file} does not hold a JSON object"
        if file == files[0]:
            nodes = (metadata.get("consolidated_metadata") or {}).get("metadata") or {}
            files.extend(path / name / "zarr.json" for name in nodes)
    return None


def half_created(path):
    """Why the store at ``path`` is one that a run of a pcskm before atomic creation was
    killed while creating (its root ``zarr.json`` is a pcskm cube's, without the consolidated
    metadata written as the last step of creation), or None."""
    try:
        metadata = json.loads((Path(path) / "zarr.json").read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(metadata, dict) or metadata.get("consolidated_metadata"):
        return None
    if (metadata.get("attributes") or {}).get("title") != "pcskm results cube":
        return None
    return "its root zarr.json lacks the consolidated metadata written last"


def _holds_done_markers(path):
    """Whether any group of the store at ``path`` has a written ``done`` chunk."""
    return any(file.is_file() and file.name != "zarr.json"
               for file in Path(path).glob("*/done/**/*"))


def check_store(path):
    """Raise :class:`NotAStore` if ``path`` is a file or a folder without Zarr metadata, and
    :class:`DamagedStore` naming the file if its metadata cannot be read, changed since pcskm
    wrote it (:mod:`pcskm.runner.metadata`) or the store was left half-created
    (:func:`half_created`); returns the metadata check."""
    from .metadata import checked_metadata

    path = Path(path)
    if not path.is_dir():
        raise NotAStore(f"{path} is {'a file' if path.exists() else 'missing'}, not a pcskm "
                        "results cube (a Zarr store is a folder)")
    if not (path / "zarr.json").exists():
        raise NotAStore(f"{path} is a folder without zarr.json: not a Zarr store (an empty "
                        "folder or another kind of file)")
    reason = half_created(path)
    if reason:
        raise DamagedStore(
            f"{path} was left half-created by a run killed while creating it ({reason}); "
            + ("yet it holds done markers, so pcskm does not delete it: restore it from a "
               "copy, or delete it and compute again" if _holds_done_markers(path) else
               "it holds no computed cell: pcskm run creates it again"))
    found = checked_metadata(path)
    problem = metadata_problem(path)
    if problem:
        raise DamagedStore(f"the metadata of {path} is damaged: {problem}. pcskm cannot repair "
                           "it; restore the store from a copy")
    return found


def open_root(path, mode="r"):
    """The root group of the store at ``path``; :func:`check_store`'s errors if it cannot
    be opened."""
    try:
        return zarr.open_group(str(path), mode=mode)
    except (OSError, ValueError, KeyError):
        check_store(path)
        raise


def writable_arrays(group):
    """``{name: array}`` of a group, opened to write with :data:`WRITE_CONFIG`."""
    return {name: array.with_config(WRITE_CONFIG) for name, array in group.arrays()}


def _create_score_arrays(group, layout, fixed):
    """Create the selection-score variables of ``fixed`` that ``group`` lacks (fill-valued)
    and its ``scored`` markers, written whole (zeros) so that their chunk always exists."""
    names = score_variables(fixed)
    if not names:
        return
    shape = layout.fit_shape()
    chunk = (1, 1, 1, *shape[3:])  # one chunk per (algorithm, init, kind)
    for name in names:
        if name in group:
            continue
        _, dims, dtype, fill, attrs = SCORE_VARIABLES[name]
        _create_array(group, name, dims, shape[:len(dims)], dtype, fill, attrs,
                      chunk[:len(dims)])
    if "scored" not in group:
        _create_array(group, "scored", DONE_DIMS, _done_shape(layout), "u1", 0,
                      SCORED_ATTRS)[...] = 0


def _write_group(root, layout, fixed, fit_errors=False, weights_per_s=True):
    """Create one data set's group: coordinates, then empty (fill-valued) arrays, those of
    the selection scores that ``fixed`` turns on and, with ``fit_errors``, ``fit_error``
    included (and ``weights_per_s`` unless told not to: a store made before it)."""
    attrs = {**layout.attrs, "feature_names": list(layout.feature_names)}
    group = root.create_group(layout.dataset, attributes=attrs)
    for name, values in layout.coords().items():
        dtype = str if values.dtype.kind == "U" else values.dtype
        fill = "" if dtype is str else (np.nan if values.dtype.kind == "f" else 0)
        array = _create_array(group, name, (name,), values.shape, dtype, fill, {})
        array[:] = values
    names = np.array(layout.feature_names, dtype=str)
    _create_array(group, "feature_name", ("feature",), names.shape, str, "",
                  {"long_name": "column name in the data file"})[:] = names
    coordinates = "feature_name"
    if layout.uninformative is not None:
        mask = np.array(layout.uninformative, dtype=bool)
        _create_array(group, "uninformative", ("feature",), mask.shape, "bool", False,
                      {"long_name": "known uninformative feature "
                                    "(docs/method/datasets.md §1)"})[:] = mask
        coordinates += " uninformative"
    shape = layout.fit_shape()
    n_alg, n_init, n_kind, n_pct, n_run, n_fold, n_s = shape
    chunk = (1, 1, 1, n_pct, n_run, n_fold, n_s)  # one chunk per (algorithm, init, kind)
    for name, (dtype, fill, var_attrs) in _FIT_VARIABLES.items():
        _create_array(group, name, FIT_DIMS, shape, dtype, fill, var_attrs, chunk)
    n_features = len(layout.feature_names)
    _create_array(
        group, "weights", WEIGHT_DIMS, (*shape[:-1], n_features), "f4", np.nan,
        {"long_name": "final feature weights: ones (LKM, PCKM), the metric diagonal a "
                      "(MPCKM), w (SKM, PCSKM) averaged over the s values whose fit did not "
                      "fail (docs/method/protocol.md §11)",
         "comment": "for SKM/PCSKM the mean over s of the non-failed fits; their number is "
                    "status.isin([1, 2]).sum('sparsity'), which gives exact pooled means",
         "coordinates": coordinates},
        (*chunk[:-1], n_features),
    )
    if weights_per_s:
        _create_array(group, WEIGHTS_PER_S, WEIGHTS_PER_S_DIMS, (*shape, n_features), "f4",
                      np.nan, {**WEIGHTS_PER_S_ATTRS, "coordinates": coordinates},
                      (*chunk, n_features))
    _create_array(group, "n_constraints", CELL_DIMS, (n_kind, n_pct, n_run, n_fold), "i4", -1,
                  {"long_name": "number of constraints of the cell (docs/method/protocol.md §4)",
                   "_FillValue": -1})
    _create_array(group, "done", DONE_DIMS, (n_alg, n_init, n_kind, n_pct, n_run), "u1", 0,
                  {"long_name": "completion marker: 1 when every fold of this (algorithm, "
                                "init, kind, percent, run) is written",
                   "comment": "written after the data; cells not marked done are "
                              "recomputed by the next run"})
    _create_score_arrays(group, layout, fixed)
    if fit_errors:
        _create_array(group, "fit_error", FIT_ERROR_DIMS, (n_alg, n_init, n_kind, n_pct, n_run),
                      str, "", FIT_ERROR_ATTRS, chunk[:5])[...] = ""  # every chunk exists
    return group


def _root_attrs(layout, spec, history=(), runs=()):
    return {
        "title": "pcskm results cube",
        "schema_version": SCHEMA_VERSION,
        "spec_name": spec.name,
        "spec_toml": spec.source_text,
        "spec_hash": spec.hash(),
        "spec_hashes": list(dict.fromkeys([*history, spec.hash()])),
        "preregistration": stored_preregistration(spec),
        "protocol": layout.fixed,
        "algorithm_definitions": layout.algorithms,
        "data_sha256": {name: g.attrs["data_sha256"] for name, g in layout.groups.items()},
        "versions": _versions(),
        "status_flags": {str(i): flag for i, flag in enumerate(STATUS_FLAGS)},
        "runs": list(runs),  # one entry per `pcskm run` into this store (Cube.record_run)
    }


def stored_preregistration(spec):
    """What the store records of the spec's ``[preregistration]`` (root attribute
    ``preregistration``; None without one)."""
    return None if spec.preregistration is None else spec.preregistration.to_dict()


def check_preregistration(path, spec):
    """Refuse (:class:`IncompatibleStore`) a spec whose ``[preregistration]`` differs from the
    one recorded in the store at ``path`` once the store holds a computed cell: the primary
    analysis is stated before any result (docs/reference/spec-toml.md, "[preregistration]").
    A store with nothing computed takes the new one."""
    old = open_root(path).attrs.asdict().get("preregistration")
    new = stored_preregistration(spec)
    if old == new or not _holds_done_markers(path):
        return
    changed = sorted(key for key in {*(old or {}), *(new or {})}
                     if (old or {}).get(key) != (new or {}).get(key))
    raise IncompatibleStore(
        f"{path} holds computed cells under the preregistration {_describe(old, changed)}, and "
        f"the spec {spec.name} states {_describe(new, changed)}: a pre-registered analysis "
        "cannot change after results exist. Restore the store's [preregistration] in the spec "
        "(see the store's spec_toml), or compute the new one into a new store")


def _describe(preregistration, keys):
    if preregistration is None:
        return "none (no [preregistration] table)"
    def shown(value):
        text = repr(value)
        return text if len(text) <= 60 else text[:56] + "...'"

    return "(" + ", ".join(f"{key} = {shown(preregistration.get(key))}" for key in keys) + ")"


def _consolidate(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        zarr.consolidate_metadata(str(path))


def write_layout(path, layout, spec, history=(), runs=()):
    """Create a new, empty store at ``path`` with ``layout``."""
    from .metadata import record_metadata

    root = zarr.open_group(str(path), mode="w-", zarr_format=3,
                           attributes=_root_attrs(layout, spec, history, runs))
    for group in layout.groups.values():
        _write_group(root, group, layout.fixed, has_user_algorithms(layout.algorithms),
                     layout.weights_per_s)
    _building("before consolidating")
    record_metadata(path)


def _add_score_arrays(path, layout, spec, history, runs):
    """Turn the selection scores of ``layout`` on in the store at ``path`` in place: add the
    variables it lacks, then record the settings (a run killed between the two leaves the
    store as it was, with unused variables that the next extension keeps)."""
    from .metadata import record_metadata

    root = open_root(path, "r+")
    for name, group in layout.groups.items():
        _create_score_arrays(root[name], group, layout.fixed)
    record_metadata(path, _root_attrs(layout, spec, history, runs))


def read_layout(path):
    """The layout of an existing store."""
    root = open_root(path)
    attrs = root.attrs.asdict()
    if attrs.get("schema_version") != SCHEMA_VERSION:
        raise IncompatibleStore(
            f"{path} is not a pcskm cube of schema version {SCHEMA_VERSION} (found "
            f"{attrs.get('schema_version')!r})"
        )
    groups, weights_per_s = {}, True
    for name, group in root.groups():
        weights_per_s &= WEIGHTS_PER_S in group
        gattrs = group.attrs.asdict()
        uninformative = (tuple(bool(v) for v in group["uninformative"][:])
                         if "uninformative" in group else None)
        groups[name] = GroupLayout(
            dataset=name,
            algorithms=tuple(str(v) for v in group["algorithm"][:]),
            inits=tuple(str(v) for v in group["init"][:]),
            kinds=tuple(str(v) for v in group["kind"][:]),
            percents=tuple(float(v) for v in group["percent"][:]),
            n_runs=int(group["run"].shape[0]),
            n_folds=int(group["fold"].shape[0]),
            sparsity=tuple(float(v) for v in group["sparsity"][1:]),
            feature_names=tuple(gattrs.pop("feature_names")),
            uninformative=uninformative,
            attrs=gattrs,
        )
    # a store written before a spec key existed was made with the key's implied value
    implied = {k: v for k, v in ADDED_DEFAULTS.items() if k not in EXTENDABLE}
    return Layout(groups=groups, fixed={**implied, **attrs["protocol"]},
                  algorithms=attrs["algorithm_definitions"], weights_per_s=weights_per_s)


def _positions(old, new):
    lookup = {value: i for i, value in enumerate(new)}
    return np.array([lookup.get(value, -1) for value in old], dtype=np.int64)


def label_positions(group, among):
    """Per label dimension (algorithm, init, kind, percent), the position in the group
    layout ``among`` of each label of the group layout ``group``; -1 where ``among`` lacks
    it."""
    return {
        "algorithm": _positions(group.algorithms, among.algorithms),
        "init": _positions(group.inits, among.inits),
        "kind": _positions(group.kinds, among.kinds),
        "percent": _positions([pct10(p) for p in group.percents],
                              [pct10(p) for p in among.percents]),
    }


def _copy_group(source, target, old, new):
    """Copy every record of ``old``'s group into ``new``'s (a superset), label by label."""
    index = {
        **label_positions(old, new),  # no -1: ``new`` has every label of ``old``
        "run": np.arange(old.n_runs),
        "fold": np.arange(old.n_folds),
        "sparsity": np.arange(1 + len(old.sparsity)),
        "feature": np.arange(len(old.feature_names)),
    }
    target = writable_arrays(target)
    scores = [name for name in (*SCORE_VARIABLES, "scored") if name in source]
    errors = ["fit_error"] if "fit_error" in source else []
    per_s = [WEIGHTS_PER_S] if WEIGHTS_PER_S in source else []
    for name in (*_FIT_VARIABLES, "weights", *per_s, "n_constraints", "done", *scores,
                 *errors):
        array = source[name]
        dims = array.metadata.dimension_names
        if dims[0] == "algorithm":  # one algorithm at a time keeps memory bounded
            for i, position in enumerate(index["algorithm"]):
                selection = (position, *(index[d] for d in dims[1:]))
                target[name].set_orthogonal_selection(selection, array[i])
        else:
            target[name].set_orthogonal_selection(tuple(index[d] for d in dims), array[:])


def _recover(path):
    """Finish or undo an interrupted rebuild (see :func:`_rebuild`) and delete the temporary
    files of writes cut short (``*.partial``: the file they were replacing is intact)."""
    path = Path(path)
    rebuild, old = path.with_name(path.name + ".rebuild"), path.with_name(path.name + ".old")
    if not path.exists() and old.exists():
        old.rename(path)
    if old.exists():
        shutil.rmtree(old)
    if rebuild.exists():
        shutil.rmtree(rebuild)
    if path.exists():
        for partial in path.rglob("*.partial"):
            partial.unlink()


def _build_beside(path, layout, spec, history=(), runs=(), fill=None):
    """Build the store at ``path`` beside it and move it into place, so that a store exists
    whole or not at all: the new layout is written to ``<store>.rebuild``, ``fill(rebuild)``
    (if given) copies the records of the store it replaces, then a new store is renamed to
    ``<store>``, or an existing one is swapped: renamed to ``<store>.old``, the new one
    renamed to ``<store>``, ``.old`` deleted. An interruption at any step leaves the old
    store (or none) or the new one intact (``_recover`` runs first on every open); a write
    that fails (a full disk) deletes the unfinished copy and leaves the store as it was."""
    path = Path(path)
    rebuild, backup = path.with_name(path.name + ".rebuild"), path.with_name(path.name + ".old")
    try:
        write_layout(rebuild, layout, spec, history, runs)
        if fill is not None:
            fill(rebuild)
    except OSError as error:
        shutil.rmtree(rebuild, ignore_errors=True)
        raise StoreNotWritable(
            f"cannot write {path} ({error.strerror or error}); it is as it was before this "
            "run (none if it did not exist). Free space (or fix the file system) and "
            "rerun") from None
    _building("built")
    if path.exists():
        os.replace(path, backup)
        _building("swapped out")
        os.replace(rebuild, path)
        shutil.rmtree(backup)
    else:
        os.replace(rebuild, path)


def _rebuild(path, old, new, spec, history, runs):
    """Extend the store: build the new layout beside it, copy every record, swap
    (:func:`_build_beside`)."""

    def copy(rebuild):
        source, target = open_root(path), open_root(rebuild, "r+")
        for name, group in old.groups.items():
            _copy_group(source[name], target[name], group, new.groups[name])

    _build_beside(path, new, spec, history, runs, fill=copy)


def _recreate_half_created(path):
    """Delete a store left half-created by an older pcskm (:func:`half_created`) if it holds
    no done marker, with a message (one with done markers is refused by
    :func:`check_store`)."""
    reason = half_created(path)
    if reason and not _holds_done_markers(path):
        log.warning("%s was left half-created by a run killed while creating it (%s); it "
                    "holds no computed cell: created again", path, reason)
        shutil.rmtree(path)


def prepare(path, spec, data_dir=None):
    """Open the store for ``spec``: create it, or check that it is a writable pcskm cube,
    repair it (:func:`pcskm.runner.integrity.repair`: damaged chunks deleted, their done
    markers cleared), record a run that was killed before recording itself, check that it is
    compatible and extend it to cover the spec (raises :class:`IncompatibleStore`). Returns
    ``(cube, action)`` with action "created", "extended" or "opened"."""
    from .integrity import repair, verify
    from .metadata import record_metadata, repair_metadata
    from .sizes import check_sizes

    path = Path(path)
    _recover(path)
    new = spec_layout(spec, data_dir)
    check_sizes(new, path)  # before anything is created
    if path.is_dir() and not any(path.iterdir()):
        path.rmdir()  # an empty folder: the new store takes its place
    _recreate_half_created(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        _build_beside(path, new, spec)
        action = "created"
    else:
        repair_metadata(path, new.groups)
        check_store(path)
        check_preregistration(path, spec)
        _check_writable(path)
        found = verify(path)
        _record_unfinished_run(path, found)
        repair(path, found)
        old = read_layout(path)
        merged = merge_layouts(old, new, store=str(path))
        stored = open_root(path).attrs.asdict()
        history, runs = stored.get("spec_hashes", []), stored.get("runs", [])
        numpy_then = stored.get("versions", {}).get("numpy")
        if numpy_then != np.__version__:  # docs/method/protocol.md §2: generator streams may change
            log.warning("%s was written with NumPy %s, this is NumPy %s: random streams may "
                        "differ between versions", path, numpy_then, np.__version__)
        if merged.groups == old.groups and merged.algorithms == old.algorithms \
                and merged.fixed != old.fixed:  # only selection scores turned on
            _add_score_arrays(path, merged, spec, history, runs)
            action = "extended"
        elif merged.groups != old.groups or merged.fixed != old.fixed \
                or merged.algorithms.keys() != old.algorithms.keys():
            check_sizes(merged, path, copies=True)
            _rebuild(path, old, merged, spec, history, runs)
            action = "extended"
        else:
            record_metadata(path, _root_attrs(merged, spec, history, runs))
            action = "opened"
    cube = Cube(path)
    cube.mark_applicability(spec)
    return cube, action


def write_error(folder):
    """Why no file can be created in ``folder`` (the ``OSError``), or None if one can: the
    answer of the file system itself (a read-only file system stops root too, permission
    bits stop other users; ``os.access`` would tell neither for root)."""
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".pcskm-write-test-"):
            pass
    except OSError as error:
        return error
    return None


def _check_writable(path):
    """Raise :class:`StoreNotWritable` unless the store can be written."""
    error = write_error(path)
    if error is not None:
        raise StoreNotWritable(
            f"{path} cannot be written ({error.strerror}): pcskm run needs a writable store. "
            "status, report --out DIR and verify work on a read-only store; to compute more "
            "cells, copy it to a writable place")


RUNNING = "run_in_progress"  # root attribute: the run writing the store (Cube.begin_run)


def _record_unfinished_run(path, found):
    """Record the run that began writing the store and was killed before recording itself
    (its ``run_in_progress`` entry is still there; the lock says it is gone): the cells it
    wrote are the cells marked done now less those marked done when it began."""
    root = open_root(path, "r+")
    attrs = root.attrs.asdict()
    entry = attrs.pop(RUNNING, None)
    if entry is None:
        return
    cells_written = max(0, found.done_cells() - entry.pop("done_cells", 0))
    if cells_written:
        log.warning("a previous run (%s, started %s on %s, process %s) wrote %d cells and "
                    "left no record; recorded now", entry.get("command"), entry.get("started"),
                    entry.get("client_host"), entry.get("client_pid"), cells_written)
        entry.update(cells=cells_written, finished=None, interrupted=True, killed=True)
        attrs["runs"] = [*attrs.get("runs", []), entry]
    root.attrs.put(attrs)
    _consolidate(path)


def applicable(spec, init, kind):
    """Whether ``spec`` runs ``init`` with constraint kind ``kind`` (Seeding runs only with
    the spec's seeding_kinds)."""
    return kind in (spec.seeding_kinds if init == cells.SEEDING else spec.kinds)


def _done_shape(layout):
    return layout.fit_shape()[:5]


class CubeView:
    """A layout with its ``done`` and ``scored`` markers (``scored``: None where a group has
    none) and label-to-position lookups (read only)."""

    def __init__(self, layout, done, scored=None):
        self.layout = layout
        self.done = done
        self.scored = {name: (scored or {}).get(name) for name in done}
        self._index = {
            name: {
                "algorithm": {v: i for i, v in enumerate(g.algorithms)},
                "init": {v: i for i, v in enumerate(g.inits)},
                "kind": {v: i for i, v in enumerate(g.kinds)},
                "percent": {pct10(v): i for i, v in enumerate(g.percents)},
            }
            for name, g in layout.groups.items()
        }

    @classmethod
    def planned(cls, path, spec, data_dir=None):
        """What :func:`prepare` would open for ``spec``, without writing anything (for
        ``--dry-run``): the merged layout and the store's done markers, if it exists, less
        those a run would clear because their chunks are damaged."""
        from .integrity import verify
        from .sizes import check_sizes

        path = Path(path)
        new = spec_layout(spec, data_dir)
        check_sizes(new, path)
        if not path.exists():
            return cls(new, {n: np.zeros(_done_shape(g), np.uint8)
                             for n, g in new.groups.items()})
        found = verify(path)
        old = read_layout(path)
        merged = merge_layouts(old, new, store=str(path))
        check_sizes(merged, path, copies=merged != old)
        done, scored = {}, {}
        for name, group in merged.groups.items():
            done[name] = np.zeros(_done_shape(group), np.uint8)
            scored[name] = np.zeros(_done_shape(group), np.uint8)
            if name in old.groups:
                before = old.groups[name]
                index = (_positions(before.algorithms, group.algorithms),
                         _positions(before.inits, group.inits),
                         _positions(before.kinds, group.kinds),
                         _positions([pct10(p) for p in before.percents],
                                    [pct10(p) for p in group.percents]),
                         np.arange(before.n_runs))
                done[name][np.ix_(*index)] = found.done_after_repair(name)
                if found.scored.get(name) is not None:
                    scored[name][np.ix_(*index)] = found.scored[name]
        return cls(merged, done, scored)

    def complete(self, dataset):
        """The blocks of ``dataset`` that are done and carry the selection scores their
        algorithm gets (:func:`complete_blocks`); the others are computed by a run."""
        layout = self.layout
        wanted = wanted_scores(layout.fixed, layout.algorithms,
                               layout.groups[dataset].algorithms)
        return complete_blocks(self.done[dataset], self.scored[dataset], wanted)

    def block_index(self, dataset, algorithm, init, kind=None, percent=None):
        """Integer positions of a block (or of its (algorithm, init[, kind]) prefix)."""
        index = self._index[dataset]
        out = [index["algorithm"][algorithm], index["init"][init]]
        if kind is not None:
            out.append(index["kind"][kind])
        if percent is not None:
            out.append(index["percent"][pct10(percent)])
        return tuple(out)


class Cube(CubeView):
    """An open store, for the writer: its layout, arrays and in-memory ``done`` markers."""

    def __init__(self, path):
        self.path = Path(path)
        root = open_root(self.path, "r+")
        layout = read_layout(self.path)
        self.arrays = {name: writable_arrays(root[name]) for name in layout.groups}
        super().__init__(layout, {name: arrays["done"][:]
                                  for name, arrays in self.arrays.items()},
                         {name: arrays["scored"][:] for name, arrays in self.arrays.items()
                          if "scored" in arrays})

    def mark_done(self, dataset, regions):
        """Mark the ``regions`` of ``dataset`` done, each ``(algorithm position, init
        position, kind positions, percent positions, runs, score bits)`` (the selection
        scores its cells now carry), and write the marker arrays (``scored`` first)."""
        scored = self.scored[dataset]
        for a, i, kinds, percents, runs, bits in regions:
            block = (a, i, *np.ix_(kinds, percents, runs))
            self.done[dataset][block] = 1
            if scored is None:
                if bits:
                    raise ValueError(f"the store has no selection scores for {dataset}")
            else:
                scored[block] = bits
        self.write_markers(dataset)

    def write_markers(self, dataset):
        """Write the in-memory ``scored`` and ``done`` markers of ``dataset`` (in that order;
        after the chunks they vouch for)."""
        if self.scored[dataset] is not None:
            self.arrays[dataset]["scored"][...] = self.scored[dataset]
        self.arrays[dataset]["done"][...] = self.done[dataset]

    def done_cells(self):
        """Cells done, with the selection scores their algorithm gets: (algorithm, init,
        kind, percent, run) blocks times folds."""
        return sum(int(self.complete(name).sum()) * self.layout.groups[name].n_folds
                   for name in self.done)

    def begin_run(self, entry):
        """Note in the store that a run is writing it (``entry``, with the cells done now),
        so that the next run can record this one if it is killed before :meth:`record_run`
        (see :func:`_record_unfinished_run`)."""
        root = open_root(self.path, "r+")
        root.attrs.update({RUNNING: _json({**entry, "done_cells": self.done_cells()})})
        _consolidate(self.path)

    def record_run(self, entry):
        """Append ``entry`` (a JSON-able dict: when, how long, where, what was computed;
        None: nothing to record) to the store's ``runs`` attribute, and remove the note of
        :meth:`begin_run`."""
        root = open_root(self.path, "r+")
        attrs = root.attrs.asdict()
        attrs.pop(RUNNING, None)
        if entry is not None:
            attrs["runs"] = [*attrs.get("runs", []), _json(entry)]
        root.attrs.put(attrs)
        _consolidate(self.path)

    def clear_done(self, tasks):
        """Unmark the blocks of ``tasks`` (``--force``), so that an interrupted forced run
        resumes where it stopped."""
        touched = set()
        for task in tasks:
            for s in task.settings:
                for block in task.blocks:
                    position = self.block_index(s.dataset, s.algorithm, s.init, block.kind,
                                                block.percent)
                    self.done[s.dataset][(*position, list(block.runs))] = 0
            touched.add(task.dataset)
        for name in touched:
            self.arrays[name]["done"][...] = self.done[name]

    def mark_applicability(self, spec):
        """Status ``not_applicable`` for the spec's (init, kind) pairs it does not run
        (Seeding outside seeding_kinds), ``missing`` again for pairs it now runs, in blocks
        not yet done."""
        for name in spec.datasets:
            layout, status = self.layout.groups[name], self.arrays[name]["status"]
            for algorithm in (v.name for v in spec.algorithms):
                for init in spec.inits:
                    for kind in layout.kinds:
                        position = self.block_index(name, algorithm, init, kind)
                        if self.done[name][position].any():
                            continue
                        wanted = MISSING if applicable(spec, init, kind) else NOT_APPLICABLE
                        other = NOT_APPLICABLE if wanted == MISSING else MISSING
                        current = status[position]
                        if (current == other).any():
                            status[position] = np.where(current == other, wanted, current)


def open_cube(path):
    """The cube as an ``xarray.DataTree`` (one child per data set), read lazily."""
    import xarray as xr  # not at start-up: pcskm status does without it

    return xr.open_datatree(str(path), engine="zarr")

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
"""

import contextlib
import hashlib
import json
import logging
import os
import shutil
import socket
import sys
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from pcskm.algorithms._result import STATUS_NAMES
from pcskm.experiments import cells
from pcskm.experiments.protocol import pct10

log = logging.getLogger("pcskm")

SCHEMA_VERSION = 1
STATUS_FLAGS = ("missing", *STATUS_NAMES, "not_applicable")
MISSING = 0
NOT_APPLICABLE = len(STATUS_FLAGS) - 1
FIT_DIMS = ("algorithm", "init", "kind", "percent", "run", "fold", "sparsity")
BLOCK_DIMS = FIT_DIMS[:4]
DONE_DIMS = (*BLOCK_DIMS, "run")
WEIGHT_DIMS = (*FIT_DIMS[:-1], "feature")
CELL_DIMS = ("kind", "percent", "run", "fold")
# Spec fields a store may grow along; every other field of the spec (seed, n_folds,
# max_iter, the s grid rule) fixes the results and must match the store's.
EXTENDABLE = ("datasets", "algorithms", "inits", "kinds", "seeding_kinds", "percentages",
              "n_runs")
FREE = ("name", "description", "source_text")

_FIT_VARIABLES = {  # name: (dtype, fill value, attributes)
    "f_score": ("f4", np.nan, {
        "long_name": "pairwise F-score on the fold's test points (docs/method/protocol.md §8.1)",
        "comment": "NaN for a failed fit (empty_cluster, degenerate_weights) and where no "
                   "fit exists (status missing or not_applicable)"}),
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
                   "a kind outside the spec's seeding_kinds)"}),
    "n_iter": ("i2", -1, {
        "long_name": "iterations (E-step passes; weight updates for SKM/PCSKM)",
        "_FillValue": -1}),
}


class IncompatibleStore(ValueError):
    """The store was made with settings that change the results of this spec."""


class StoreBusy(ValueError):
    """Another ``pcskm run`` is writing the store."""


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def store_lock(path):
    """Hold ``<store>.lock`` while writing, so that two runs never write one store. A lock
    left by a dead process of this host is taken over."""
    path = Path(path)
    lock = path.with_name(path.name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    me = f"{socket.gethostname()} {os.getpid()}"
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            host, _, pid = lock.read_text().strip().rpartition(" ")
            if host == socket.gethostname() and pid.isdigit() and not _alive(int(pid)):
                lock.unlink(missing_ok=True)  # stale: its process is gone
                continue
            raise StoreBusy(
                f"{path} is being written by process {pid} on {host} (lock file {lock}); "
                "wait for that run to end, or delete the lock file if it is gone"
            ) from None
        with os.fdopen(fd, "w") as handle:
            handle.write(me)
        break
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def _json(value):
    return json.loads(json.dumps(value))


def _versions():
    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "unknown"

    return {"pcskm": version("pcskm"), "numpy": np.__version__, "python": sys.version.split()[0],
            "zarr": zarr.__version__, "xarray": xr.__version__, "dask": version("dask"),
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


def _union(preferred, others):
    return tuple(preferred) + tuple(v for v in others if v not in preferred)


def spec_layout(spec, data_dir=None):
    """The layout of ``spec``'s cube (loads every data set of the spec)."""
    kinds = _union(spec.kinds, spec.seeding_kinds)
    groups = {}
    for name in spec.datasets:
        data = cells.dataset(name, data_dir)
        sha = _data_sha256(data)
        attrs = {
            "dataset": name, "code": data.code, "subset": data.subset,
            "n_samples": data.n_samples, "n_features": data.n_features,
            "n_clusters": data.n_clusters, "description": data.description,
            "source": data.source, "data_sha256": sha,
            "feature_quality": data.feature_quality or "unknown",
        }
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
    variants = _json({v.name: {"estimator": v.estimator, "params": v.params}
                      for v in spec.algorithms})
    return Layout(groups=groups, fixed=fixed, algorithms=variants)


def _data_sha256(data):
    digest = hashlib.sha256()
    digest.update(np.ascontiguousarray(data.X, dtype=np.float64).tobytes())
    digest.update(np.ascontiguousarray(data.y, dtype=np.int64).tobytes())
    return digest.hexdigest()


def _rounded(values):
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


def merge_layouts(old, new, store="the store"):
    """The layout covering both; raise :class:`IncompatibleStore` naming every difference
    that changes results (seed, folds, max_iter, s grid, algorithm parameters, data)."""
    problems = []
    for key in sorted(set(old.fixed) | set(new.fixed)):
        if old.fixed.get(key) != new.fixed.get(key):
            problems.append(f"{key} is {old.fixed.get(key)!r} in {store} but "
                            f"{new.fixed.get(key)!r} in this spec")
    for name in sorted(set(old.algorithms) & set(new.algorithms)):
        if old.algorithms[name] != new.algorithms[name]:
            problems.append(f"algorithm {name} is {old.algorithms[name]} in {store} but "
                            f"{new.algorithms[name]} in this spec")
    groups = dict(old.groups)
    for name, group in new.groups.items():
        if name not in old.groups:
            groups[name] = group
            continue
        before = old.groups[name]
        if before.attrs.get("data_sha256") != group.attrs.get("data_sha256"):
            problems.append(f"the data of {name} differ from the data in {store} (SHA-256 "
                            f"{before.attrs.get('data_sha256')} vs {group.attrs['data_sha256']})")
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
            + "\nUse another --store for this spec, or the settings the store was made with."
        )
    return Layout(groups=groups, fixed=old.fixed,
                  algorithms={**old.algorithms, **new.algorithms})


def _create_array(group, name, dims, shape, dtype, fill, attrs, chunks=None):
    return group.create_array(
        name, shape=shape, dtype=dtype, fill_value=fill, dimension_names=dims,
        chunks=chunks or shape, attributes=attrs,
    )


def _write_group(root, layout):
    """Create one data set's group: coordinates, then empty (fill-valued) arrays."""
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
    _create_array(group, "n_constraints", CELL_DIMS, (n_kind, n_pct, n_run, n_fold), "i4", -1,
                  {"long_name": "number of constraints of the cell (docs/method/protocol.md §4)",
                   "_FillValue": -1})
    _create_array(group, "done", DONE_DIMS, (n_alg, n_init, n_kind, n_pct, n_run), "u1", 0,
                  {"long_name": "completion marker: 1 when every fold of this (algorithm, "
                                "init, kind, percent, run) is written",
                   "comment": "written after the data; cells not marked done are "
                              "recomputed by the next run"})
    return group


def _root_attrs(layout, spec, history=(), runs=()):
    return {
        "title": "pcskm results cube",
        "schema_version": SCHEMA_VERSION,
        "spec_name": spec.name,
        "spec_toml": spec.source_text,
        "spec_hash": spec.hash(),
        "spec_hashes": list(dict.fromkeys([*history, spec.hash()])),
        "protocol": layout.fixed,
        "algorithm_definitions": layout.algorithms,
        "data_sha256": {name: g.attrs["data_sha256"] for name, g in layout.groups.items()},
        "versions": _versions(),
        "status_flags": {str(i): flag for i, flag in enumerate(STATUS_FLAGS)},
        "runs": list(runs),  # one entry per `pcskm run` into this store (Cube.record_run)
    }


def _consolidate(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        zarr.consolidate_metadata(str(path))


def write_layout(path, layout, spec, history=(), runs=()):
    """Create a new, empty store at ``path`` with ``layout``."""
    root = zarr.open_group(str(path), mode="w-", zarr_format=3,
                           attributes=_root_attrs(layout, spec, history, runs))
    for group in layout.groups.values():
        _write_group(root, group)
    _consolidate(path)


def read_layout(path):
    """The layout of an existing store."""
    root = zarr.open_group(str(path), mode="r")
    attrs = root.attrs.asdict()
    if attrs.get("schema_version") != SCHEMA_VERSION:
        raise IncompatibleStore(
            f"{path} is not a pcskm cube of schema version {SCHEMA_VERSION} (found "
            f"{attrs.get('schema_version')!r})"
        )
    groups = {}
    for name, group in root.groups():
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
    return Layout(groups=groups, fixed=attrs["protocol"],
                  algorithms=attrs["algorithm_definitions"])


def _positions(old, new):
    lookup = {value: i for i, value in enumerate(new)}
    return np.array([lookup[value] for value in old], dtype=np.int64)


def _copy_group(source, target, old, new):
    """Copy every record of ``old``'s group into ``new``'s (a superset), label by label."""
    index = {
        "algorithm": _positions(old.algorithms, new.algorithms),
        "init": _positions(old.inits, new.inits),
        "kind": _positions(old.kinds, new.kinds),
        "percent": _positions([pct10(p) for p in old.percents],
                              [pct10(p) for p in new.percents]),
        "run": np.arange(old.n_runs),
        "fold": np.arange(old.n_folds),
        "sparsity": np.arange(1 + len(old.sparsity)),
        "feature": np.arange(len(old.feature_names)),
    }
    for name in (*_FIT_VARIABLES, "weights", "n_constraints", "done"):
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


def _rebuild(path, old, new, spec, history, runs):
    """Extend the store: build the new layout beside it, copy every record, swap.

    The copy goes to ``<store>.rebuild``; the swap renames the store to ``<store>.old``,
    the copy to ``<store>`` and deletes ``.old``. An interruption at any step leaves the old
    store or the new one intact (``_recover`` runs first on every open).
    """
    path = Path(path)
    rebuild, backup = path.with_name(path.name + ".rebuild"), path.with_name(path.name + ".old")
    write_layout(rebuild, new, spec, history, runs)
    source = zarr.open_group(str(path), mode="r")
    target = zarr.open_group(str(rebuild), mode="r+")
    for name, group in old.groups.items():
        _copy_group(source[name], target[name], group, new.groups[name])
    os.replace(path, backup)
    os.replace(rebuild, path)
    shutil.rmtree(backup)


def prepare(path, spec, data_dir=None):
    """Open the store for ``spec``: create it, or check that it is compatible and extend it
    to cover the spec (raises :class:`IncompatibleStore`). Returns ``(cube, action)`` with
    action "created", "extended" or "opened"."""
    path = Path(path)
    _recover(path)
    new = spec_layout(spec, data_dir)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_layout(path, new, spec)
        action = "created"
    else:
        old = read_layout(path)
        merged = merge_layouts(old, new, store=str(path))
        stored = zarr.open_group(str(path), mode="r").attrs.asdict()
        history, runs = stored.get("spec_hashes", []), stored.get("runs", [])
        numpy_then = stored.get("versions", {}).get("numpy")
        if numpy_then != np.__version__:  # docs/method/protocol.md §2: generator streams may change
            log.warning("%s was written with NumPy %s, this is NumPy %s: random streams may "
                        "differ between versions", path, numpy_then, np.__version__)
        if merged != old:
            _rebuild(path, old, merged, spec, history, runs)
            action = "extended"
        else:
            root = zarr.open_group(str(path), mode="r+")
            attrs = _root_attrs(merged, spec, history, runs)
            if root.attrs.asdict() != _json(attrs):
                root.attrs.update(attrs)
                _consolidate(path)
            action = "opened"
    cube = Cube(path)
    cube.mark_applicability(spec)
    return cube, action


def applicable(spec, init, kind):
    """Whether ``spec`` runs ``init`` with constraint kind ``kind`` (Seeding runs only with
    the spec's seeding_kinds)."""
    return kind in (spec.seeding_kinds if init == cells.SEEDING else spec.kinds)


def _done_shape(layout):
    return layout.fit_shape()[:5]


class CubeView:
    """A layout with its ``done`` markers and label-to-position lookups (read only)."""

    def __init__(self, layout, done):
        self.layout = layout
        self.done = done
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
        ``--dry-run``): the merged layout and the store's done markers, if it exists."""
        path = Path(path)
        new = spec_layout(spec, data_dir)
        if not path.exists():
            return cls(new, {n: np.zeros(_done_shape(g), np.uint8)
                             for n, g in new.groups.items()})
        old = read_layout(path)
        merged = merge_layouts(old, new, store=str(path))
        root = zarr.open_group(str(path), mode="r")
        done = {}
        for name, group in merged.groups.items():
            done[name] = np.zeros(_done_shape(group), np.uint8)
            if name in old.groups:
                before = old.groups[name]
                index = (_positions(before.algorithms, group.algorithms),
                         _positions(before.inits, group.inits),
                         _positions(before.kinds, group.kinds),
                         _positions([pct10(p) for p in before.percents],
                                    [pct10(p) for p in group.percents]),
                         np.arange(before.n_runs))
                done[name][np.ix_(*index)] = root[name]["done"][:]
        return cls(merged, done)

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
        root = zarr.open_group(str(self.path), mode="r+")
        layout = read_layout(self.path)
        self.arrays = {name: dict(root[name].arrays()) for name in layout.groups}
        super().__init__(layout, {name: arrays["done"][:]
                                  for name, arrays in self.arrays.items()})

    def mark_done(self, dataset, regions):
        """Mark the ``regions`` of ``dataset`` done, each ``(algorithm position, init
        position, kind positions, percent positions, runs)``, and write the marker array."""
        for a, i, kinds, percents, runs in regions:
            self.done[dataset][(a, i, *np.ix_(kinds, percents, runs))] = 1
        self.arrays[dataset]["done"][...] = self.done[dataset]

    def record_run(self, entry):
        """Append ``entry`` (a JSON-able dict: when, how long, where, what was computed) to
        the store's ``runs`` attribute."""
        root = zarr.open_group(str(self.path), mode="r+")
        root.attrs.update({"runs": [*root.attrs.asdict().get("runs", []), _json(entry)]})
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
    return xr.open_datatree(str(path), engine="zarr")

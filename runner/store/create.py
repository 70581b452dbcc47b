"""Creating a store: the arrays of a data set's group as the schema lays them out, a new
empty store of a layout, and building a store beside its path to move it into place.

A store in a folder is created, like an extension, beside its path and renamed into place
once complete (:func:`build_beside`), so that a run killed while creating it leaves no store
or a whole one; a repository's is written in the run's transaction and committed at once
(:func:`build`).
"""

import os
import shutil
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import zarr

from . import schema
from .backends import where
from .backends.folder import Folder
from .digests import record_metadata
from .errors import StoreNotWritable
from .layout import done_shape, has_user_algorithms
from .places import (
    COORDINATES,
    RECORD,
    RECORD_ATTRS,
    RECORD_DIMS,
    STORE_ID,
    coordinate_digests,
    new_store_id,
    store_binding,
)
from .provenance import RUN_INDEX, RUN_INDEX_ATTRS, RUN_INDEX_DIMS, UNKNOWN
from .schema import (
    CELL_DIMS,
    DONE_DIMS,
    FIT_DIMS,
    FIT_ERROR_ATTRS,
    FIT_ERROR_DIMS,
    FIT_VARIABLES,
    RECORDS_SINCE,
    SCHEMA_VERSION,
    SCORE_VARIABLES,
    SCORED_ATTRS,
    STATUS_FLAGS,
    WEIGHT_DIMS,
    WEIGHTS_PER_S,
    WEIGHTS_PER_S_ATTRS,
    WEIGHTS_PER_S_DIMS,
    chunk_shape,
    score_variables,
)


def versions():
    """The versions of pcskm and of the packages its results depend on."""
    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "unknown"

    return {"pcskm": version("pcskm"), "numpy": np.__version__, "python": sys.version.split()[0],
            "zarr": zarr.__version__, "xarray": version("xarray"), "dask": version("dask"),
            "numba": version("numba")}


def _building(step):
    """Called between the steps of building a store (:func:`build_beside`): a hook for the
    tests that kill a run at every step."""


def _create_array(group, name, dims, shape, dtype, fill, attrs, version=None):
    """Create one array with the schema's codecs and write configuration, looked up in
    :mod:`.schema` at each call (the tests replace them to write a store as older versions
    did): one chunk, or with the schema ``version`` of a per-cell variable the chunks of
    :func:`.schema.chunk_shape`."""
    _building(f"before array {name}")  # the previous array complete, its values written
    chunks = shape if version is None else chunk_shape(version, dims, shape)
    array = group.create_array(
        name, shape=shape, dtype=dtype, fill_value=fill, dimension_names=dims,
        chunks=chunks, attributes=attrs, compressors=schema.COMPRESSORS,
        config=schema.WRITE_CONFIG,
    )
    _building(f"array {name} created")
    return array


def create_score_arrays(group, layout, fixed, version):
    """Create the selection-score variables of ``fixed`` that ``group`` lacks (fill-valued),
    chunked as schema ``version`` says, and its ``scored`` markers, written whole (zeros) so
    that their chunk always exists."""
    names = score_variables(fixed)
    if not names:
        return
    shape = layout.fit_shape()
    for name in names:
        if name in group:
            continue
        _, dims, dtype, fill, attrs = SCORE_VARIABLES[name]
        _create_array(group, name, dims, shape[:len(dims)], dtype, fill, attrs, version)
    if "scored" not in group:
        _create_array(group, "scored", DONE_DIMS, done_shape(layout), "u1", 0,
                      SCORED_ATTRS)[...] = 0


def create_run_index(group, shape):
    """Create the group's :data:`.provenance.RUN_INDEX` of ``shape`` (the done markers'),
    written whole (unknown) so that its chunk always exists."""
    _create_array(group, RUN_INDEX, RUN_INDEX_DIMS, shape, "i2", UNKNOWN,
                  RUN_INDEX_ATTRS)[...] = UNKNOWN


def create_record(group, shape):
    """Create the group's record of chunk digests (:data:`.places.RECORD`) of ``shape``
    (kinds, percents), written whole (no digest) so that its chunk always exists."""
    _create_array(group, RECORD, RECORD_DIMS, shape, str, "", RECORD_ATTRS)[...] = ""


def write_group(root, layout, fixed, fit_errors=False, weights_per_s=True,
                version=SCHEMA_VERSION):
    """Create one data set's group: coordinates, then empty (fill-valued) arrays chunked as
    schema ``version`` says, those of the selection scores that ``fixed`` turns on and, with
    ``fit_errors``, ``fit_error`` included (and ``weights_per_s`` unless told not to: a store
    made before it)."""
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
    for name, (dtype, fill, var_attrs) in FIT_VARIABLES.items():
        _create_array(group, name, FIT_DIMS, shape, dtype, fill, var_attrs, version)
    n_features = len(layout.feature_names)
    _create_array(
        group, "weights", WEIGHT_DIMS, (*shape[:-1], n_features), "f4", np.nan,
        {"long_name": "final feature weights: ones (LKM, PCKM), the metric diagonal a "
                      "(MPCKM), w (SKM, PCSKM) averaged over the s values whose fit did not "
                      "fail (docs/method/protocol.md §11)",
         "comment": "for SKM/PCSKM the mean over s of the non-failed fits; their number is "
                    "status.isin([1, 2]).sum('sparsity'), which gives exact pooled means",
         "coordinates": coordinates},
        version,
    )
    if weights_per_s:
        _create_array(group, WEIGHTS_PER_S, WEIGHTS_PER_S_DIMS, (*shape, n_features), "f4",
                      np.nan, {**WEIGHTS_PER_S_ATTRS, "coordinates": coordinates}, version)
    _create_array(group, "n_constraints", CELL_DIMS, (n_kind, n_pct, n_run, n_fold), "i4", -1,
                  {"long_name": "number of constraints of the cell (docs/method/protocol.md §4)",
                   "_FillValue": -1}, version)
    _create_array(group, "done", DONE_DIMS, (n_alg, n_init, n_kind, n_pct, n_run), "u1", 0,
                  {"long_name": "completion marker: 1 when every fold of this (algorithm, "
                                "init, kind, percent, run) is written",
                   "comment": "written after the data; cells not marked done are "
                              "recomputed by the next run"})
    create_run_index(group, (n_alg, n_init, n_kind, n_pct, n_run))
    create_score_arrays(group, layout, fixed, version)
    if version >= RECORDS_SINCE:
        create_record(group, (n_kind, n_pct))
    if fit_errors:
        _create_array(group, "fit_error", FIT_ERROR_DIMS, (n_alg, n_init, n_kind, n_pct, n_run),
                      str, "", FIT_ERROR_ATTRS, version)[...] = ""  # every chunk exists
    return group


def root_attrs(layout, spec, history=(), runs=()):
    """The root attributes of a store of ``layout`` made for ``spec``
    (docs/reference/cube-schema.md, Root attributes)."""
    return {
        "title": schema.TITLE,
        "schema_version": layout.schema_version,
        "spec_name": spec.name,
        "spec_toml": spec.source_text,
        "spec_hash": spec.hash(),
        "spec_hashes": list(dict.fromkeys([*history, spec.hash()])),
        "preregistration": stored_preregistration(spec),
        "protocol": layout.fixed,
        "algorithm_definitions": layout.algorithms,
        "data_sha256": {name: g.attrs["data_sha256"] for name, g in layout.groups.items()},
        "versions": versions(),
        "status_flags": {str(i): flag for i, flag in enumerate(STATUS_FLAGS)},
        "runs": list(runs),  # one entry per `pcskm run` into this store (Cube.record_run)
    }


def stored_preregistration(spec):
    """What the store records of the spec's ``[preregistration]`` (root attribute
    ``preregistration``; None without one)."""
    return None if spec.preregistration is None else spec.preregistration.to_dict()


def write_layout(path, layout, spec, history=(), runs=()):
    """Create a new, empty store at ``path`` (a folder or a repository in a transaction,
    :func:`.backends.where`) with ``layout``: its id drawn (:data:`.places.STORE_ID`) and the
    digests of its coordinates recorded (:data:`.places.COORDINATES`)."""
    location = where(path)
    attrs = {**root_attrs(layout, spec, history, runs), STORE_ID: new_store_id()}
    root = zarr.open_group(location.zarr_store("w-"), mode="w-", zarr_format=3,
                           attributes=attrs)
    for group in layout.groups.values():
        write_group(root, group, layout.fixed, has_user_algorithms(layout.algorithms),
                    layout.weights_per_s, layout.schema_version)
    _building("before consolidating")
    record_metadata(location, {COORDINATES: coordinate_digests(
        location, root.groups(), store_binding(attrs))})


def build_beside(path, layout, spec, history=(), runs=(), fill=None):
    """Build the store at ``path`` beside it and move it into place, so that a store exists
    whole or not at all: the new layout is written to ``<store>.rebuild``, ``fill(rebuild)``
    (if given) copies the records of the store it replaces, then a new store is renamed to
    ``<store>``, or an existing one is swapped: renamed to ``<store>.old``, the new one
    renamed to ``<store>``, ``.old`` deleted. An interruption at any step leaves the old
    store (or none) or the new one intact (:func:`.preparation.prepare` finishes or undoes it
    first); a write that fails (a full disk) deletes the unfinished copy and leaves the store
    as it was."""
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


def build(store, layout, spec, history=(), runs=(), fill=None):
    """Write a whole new store of ``layout`` in place of ``store`` (a path or URL,
    :func:`.backends.where`), ``fill(new)`` (if given) copying the records of the store
    before (:meth:`.backends.folder.Folder.before`): a folder is built beside its path and
    swapped in (:func:`build_beside`); a repository's transaction is emptied
    (:meth:`.backends.icechunk.Repository.start_over`) and written, and its next commit makes
    the new store visible at once."""
    location = where(store)
    if isinstance(location, Folder):
        location.path.parent.mkdir(parents=True, exist_ok=True)
        build_beside(location.path, layout, spec, history, runs, fill)
        return
    location.start_over()
    write_layout(location, layout, spec, history, runs)
    if fill is not None:
        fill(location)

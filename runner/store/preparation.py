"""Preparing a store for a run (:func:`prepare`): finishing or undoing an interrupted
rebuild, creating the store, or checking, repairing and extending the one there, so that it
covers the spec.

A store is extended like it is created: beside its path, then swapped in
(:func:`.create.build_beside`); only turning the selection scores on adds arrays in place.
"""

import logging
import shutil
from pathlib import Path

import numpy as np

from .access import (
    check_runnable,
    check_store,
    half_created,
    holds_done_markers,
    open_root,
    read_layout,
)
from .create import build_beside, create_score_arrays, root_attrs, stored_preregistration
from .digests import consolidate, record_metadata
from .errors import IncompatibleStore
from .integrity import repair, verify
from .layout import label_positions, merge_layouts, spec_layout
from .lock import check_writable
from .metadata import repair_metadata
from .schema import FIT_VARIABLES, RUNNING, SCORE_VARIABLES, WEIGHTS_PER_S, writable_arrays
from .sizes import check_sizes
from .views import Cube

log = logging.getLogger("pcskm")


def check_preregistration(path, spec):
    """Refuse (:class:`IncompatibleStore`) a spec whose ``[preregistration]`` differs from the
    one recorded in the store at ``path`` once the store holds a computed cell: the primary
    analysis is stated before any result (docs/reference/spec-toml.md, "[preregistration]").
    A store with nothing computed takes the new one."""
    old = open_root(path).attrs.asdict().get("preregistration")
    new = stored_preregistration(spec)
    if old == new or not holds_done_markers(path):
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


def _add_score_arrays(path, layout, spec, history, runs):
    """Turn the selection scores of ``layout`` on in the store at ``path`` in place: add the
    variables it lacks, then record the settings (a run killed between the two leaves the
    store as it was, with unused variables that the next extension keeps)."""
    root = open_root(path, "r+")
    for name, group in layout.groups.items():
        create_score_arrays(root[name], group, layout.fixed, layout.schema_version)
    record_metadata(path, root_attrs(layout, spec, history, runs))


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
    for name in (*FIT_VARIABLES, "weights", *per_s, "n_constraints", "done", *scores,
                 *errors):
        array = source[name]
        dims = array.metadata.dimension_names
        # one kind at a time keeps memory bounded and writes each chunk of the target once
        # (they hold one kind in every schema version)
        axis = dims.index("kind")
        for k, position in enumerate(index["kind"]):
            selection = tuple(position if dim == "kind" else index[dim] for dim in dims)
            values = array[(slice(None),) * axis + (k,)]
            target[name].set_orthogonal_selection(selection, values)


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
    """Extend the store: build the new layout beside it, copy every record, swap
    (:func:`build_beside`)."""

    def copy(rebuild):
        source, target = open_root(path), open_root(rebuild, "r+")
        for name, group in old.groups.items():
            _copy_group(source[name], target[name], group, new.groups[name])

    build_beside(path, new, spec, history, runs, fill=copy)


def _recreate_half_created(path):
    """Delete a store left half-created by an older pcskm (:func:`half_created`) if it holds
    no done marker, with a message (one with done markers is refused by
    :func:`check_store`)."""
    reason = half_created(path)
    if reason and not holds_done_markers(path):
        log.warning("%s was left half-created by a run killed while creating it (%s); it "
                    "holds no computed cell: created again", path, reason)
        shutil.rmtree(path)


def prepare(path, spec, data_dir=None):
    """Open the store for ``spec``: create it, or check that it is a writable pcskm cube,
    refuse a store of schema version 1 (:func:`.access.check_runnable`), repair it
    (:func:`pcskm.runner.store.integrity.repair`: damaged chunks deleted, their done
    markers cleared), record a run that was killed before recording itself, check that it is
    compatible and extend it to cover the spec (raises :class:`IncompatibleStore`). Returns
    ``(cube, action)`` with action "created", "extended" or "opened"."""
    path = Path(path)
    _recover(path)
    new = spec_layout(spec, data_dir)
    check_sizes(new, path)  # before anything is created
    if path.is_dir() and not any(path.iterdir()):
        path.rmdir()  # an empty folder: the new store takes its place
    _recreate_half_created(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        build_beside(path, new, spec)
        action = "created"
    else:
        repair_metadata(path, new.groups)
        check_store(path)
        check_runnable(path)
        check_preregistration(path, spec)
        check_writable(path)
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
            record_metadata(path, root_attrs(merged, spec, history, runs))
            action = "opened"
    cube = Cube(path)
    cube.mark_applicability(spec)
    return cube, action


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
    consolidate(path)

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

from pcskm.experiments.spec import preregistration_record

from .access import (
    check_runnable,
    check_store,
    half_created,
    holds_done_markers,
    open_root,
    read_layout,
)
from .backends import where
from .backends.common import CREATED, PREPARED, RECORDED, RUN_TAG
from .backends.folder import Folder
from .create import (
    build,
    create_record,
    create_run_index,
    create_score_arrays,
    root_attrs,
    stored_preregistration,
)
from .digests import ROOT, consolidate, read_document, record_metadata
from .errors import IncompatibleStore, LostReference
from .integrity import layout_problem, repair, verify
from .layout import dataset_groups, label_positions, merge_layouts, spec_layout
from .metadata import repair_metadata
from .notes import recorded_as
from .places import (
    COORDINATES,
    RECORD,
    STORE_ID,
    bound,
    chunk_digest,
    coordinate_arrays,
    coordinate_digests,
    new_store_id,
    record_stored,
    record_values,
    store_binding,
)
from .provenance import RUN_INDEX, read_run_index
from .schema import (
    FIT_VARIABLES,
    RECORDS_SINCE,
    RUNNING,
    SCHEMA_VERSION,
    SCORE_VARIABLES,
    WEIGHTS_PER_S,
    layout_datasets,
    writable_arrays,
)
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
    if old is not None:  # a record made before some keys existed reads as their defaults
        old = preregistration_record(old)
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


def _add_score_arrays(location, layout, spec, history, runs):
    """Turn the selection scores of ``layout`` on in the store in place: add the variables it
    lacks, then record the settings (a run killed between the two leaves the store as it
    was, with unused variables that the next extension keeps)."""
    root = open_root(location, "r+")
    for name, group in layout.groups.items():
        create_score_arrays(root[name], group, layout.fixed, layout.schema_version)
    record_metadata(location, root_attrs(layout, spec, history, runs))


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
    runs = [RUN_INDEX] if RUN_INDEX in source else []
    for name in (*FIT_VARIABLES, "weights", *per_s, "n_constraints", "done", *scores,
                 *errors, *runs):
        array = source[name]
        dims = array.metadata.dimension_names
        # one kind at a time keeps memory bounded and writes each chunk of the target once
        # (they hold one kind in every schema version)
        axis = dims.index("kind")
        for k, position in enumerate(index["kind"]):
            selection = tuple(position if dim == "kind" else index[dim] for dim in dims)
            values = array[(slice(None),) * axis + (k,)]
            target[name].set_orthogonal_selection(selection, values)


def _record_as_stored(path, binding=None):
    """Record the digests of the chunks of every done (kind, percent) of the store at
    ``path`` as they are stored (:func:`.places.record_stored`), bound to ``binding`` (else
    to the store's own, :func:`.places.store_binding`), in place of its records: the chunks
    an extension copied, or those of a store of an older version upgraded; returns how
    many."""
    location, root, count = where(path), open_root(path, "r+"), 0
    binding = binding or store_binding(root.attrs.asdict())
    for _, group in dataset_groups(root):
        arrays = writable_arrays(group)
        if RECORD not in arrays:
            continue
        record = {}
        places = [tuple(map(int, place))
                  for place in zip(*np.nonzero(arrays["done"][...].any(axis=(0, 1, 4))),
                                   strict=True)]
        record_stored(location, arrays, record, places, binding=binding)
        count += sum(map(len, record.values()))
        arrays[RECORD][...] = record_values(record, arrays[RECORD].shape)
    return count


def _bind_chunks(location, version):
    """Upgrade a store of schema version 2 to :data:`.schema.SCHEMA_VERSION` (same chunks,
    each bound to its place): create each group's record of chunk digests, record the
    chunks as they are (verified intact just before), then the new version."""
    root = open_root(location, "r+")
    for _, group in dataset_groups(root):
        if RECORD not in group:
            create_record(group, (group["kind"].shape[0], group["percent"].shape[0]))
    consolidate(location)  # readers of a folder see the new arrays
    count = _record_as_stored(location)
    record_metadata(location, {"schema_version": SCHEMA_VERSION})
    log.warning("%s was of schema version %d, whose chunks were not bound to their place: "
                "the digests of its %d chunks under done markers were recorded as they are "
                "(schema version %d); from now on a chunk moved, swapped or copied over "
                "another is found by pcskm verify and computed again", location, version,
                count, SCHEMA_VERSION)


def _bind_to_store(location):
    """Bind a store made before stores had an id to itself (:mod:`.places`): draw its id,
    record the digests of its chunks under done markers (verified just before) and of its
    coordinates bound to it, then the id (a run killed before the id is written leaves
    digests that the store's next verification finds unbound: their cells are computed
    again, none is read)."""
    root = open_root(location)
    store_id = new_store_id()
    binding = store_binding({**root.attrs.asdict(), STORE_ID: store_id})
    count = _record_as_stored(location, binding)
    coordinates = coordinate_digests(location, dataset_groups(open_root(location)), binding)
    record_metadata(location, {STORE_ID: store_id, COORDINATES: coordinates})
    log.warning("%s was made before stores were bound to their id: the digests of its %d "
                "chunks under done markers and of its %d coordinate chunks were recorded "
                "bound to it; from now on a group copied or linked from another store, or a "
                "rewritten coordinate, is found by pcskm verify", location, count,
                len(coordinates))


def _replace_links(path):
    """Delete the symbolic links that stand for data set groups in the store folder
    ``path`` (never what they point to): a group linked from another store is not this
    store's; the metadata repair then drops it, to be created again and computed by the
    run (:func:`.metadata.repair_metadata`)."""
    attrs = (read_document(Path(path) / ROOT)[0] or {}).get("attributes")
    datasets = layout_datasets(attrs if isinstance(attrs, dict) else {}) or ()
    for name in sorted(datasets):
        group = Path(path) / name
        if group.is_symlink():
            log.warning("%s: the group %s is a symbolic link to %s, not a group of this "
                        "store: the link is deleted (its target is left as it is) and the "
                        "group created again and computed", path, name, group.readlink())
            group.unlink()


def _fixed_order(array):
    """The values of the coordinate ``array`` in the order that every layout gives them, or
    None where a layout does not fix it: ``run``, ``fold`` and ``feature`` count from 0;
    ``percent`` rises (the stored values sorted, if distinct)."""
    name = array.basename
    if name in ("run", "fold", "feature"):
        return np.arange(array.shape[0], dtype=np.int64)
    if name != "percent":
        return None
    try:
        values = np.sort(array[...])
    except Exception:  # a chunk that cannot be decoded gives no order
        return None
    return values if layout_problem(name, values) is None else None


def _candidates(array, wanted):
    """The values that the coordinate ``array`` of a group can have been written with: the
    spec's (``wanted``, its group layout, or None) and the order a layout fixes
    (:func:`_fixed_order`)."""
    found, name = [], array.basename
    if wanted is not None:
        coords = {**wanted.coords(), "feature_name": np.array(wanted.feature_names, dtype=str)}
        if wanted.uninformative is not None:
            coords["uninformative"] = np.array(wanted.uninformative, dtype=bool)
        found.append(coords.get(name))
    found.append(_fixed_order(array))
    return [values for values in found if values is not None and values.shape == array.shape]


def _rewrite_coordinate(location, array, wanted, binding, recorded):
    """Rewrite the coordinate ``array`` with the first of its :func:`_candidates` whose
    chunk has the digest recorded for it (``recorded``, :data:`.places.COORDINATES`, bound to
    ``binding``); in a store made before the record, with the order a layout fixes
    (:func:`_fixed_order`) alone. Returns whether it was rewritten."""
    key = f"{array.path}/{array.metadata.encode_chunk_key((0,) * array.ndim)}"
    try:
        location.read_chunk(key)
    except LostReference:  # a repository's lost manifest: the array is written anew first
        location.delete_chunk(location.chunk_name(key))
    except FileNotFoundError:
        pass
    if binding is None or key not in recorded:
        values = _fixed_order(array)
        if values is not None:
            array[...] = values
        return values is not None
    for values in _candidates(array, wanted):
        array[...] = values
        if bound(chunk_digest(key, array.chunks, location.read_chunk(key)), binding) \
                == recorded[key]:
            return True
    return False


def _restore_coordinates(location, found, new):
    """Rewrite the damaged coordinates of the groups ``found`` names
    (:meth:`.integrity.Verification.relabelled`) from the spec's layout ``new`` where it gives
    their recorded digest; drop every other such group, whose values cannot be placed, to be
    created again and computed by this run (refused, :class:`IncompatibleStore`, if the spec
    lacks its data set). The values stay where they are: never moved to follow labels."""
    root = open_root(location, "r+")
    attrs = root.attrs.asdict()
    binding, recorded = store_binding(attrs), attrs.get(COORDINATES) or {}
    dropped = []
    for name in found.relabelled():
        arrays = coordinate_arrays(root[name])
        damaged = sorted({d.array for d in found.damage if d.dataset == name and d.blocks is None})
        if all(coordinate in arrays and _rewrite_coordinate(
                location, arrays[coordinate], new.groups.get(name), binding, recorded)
               for coordinate in damaged):
            log.warning("%s: the coordinates %s of %s were not those written when the store "
                        "was made: rewritten from the spec (their recorded digests)", location,
                        ", ".join(damaged), name)
        else:
            dropped.append(name)
    missing = [name for name in dropped if name not in new.groups]
    if missing:
        raise IncompatibleStore(
            f"the coordinates of {', '.join(missing)} in {location} are not those written when "
            "the store was made and this spec does not define them: run a spec with "
            f"{', '.join(missing)} on it, which rewrites them or computes the group again")
    for name in dropped:
        log.warning("%s: the coordinates of %s are not those written when the store was made "
                    "and the spec does not give them: its values are dropped and its cells "
                    "computed again", location, name)
        _drop_group(location, name)
    if dropped and isinstance(location, Folder):
        consolidate(location)
        repair_metadata(location.path, new)


def _drop_group(location, name):
    """Delete the data set group ``name`` (a folder's: the link itself if it is one)."""
    if isinstance(location, Folder):
        group = location.path / name
        if group.is_symlink():
            group.unlink()
        else:
            shutil.rmtree(group)
        return
    from zarr.core.sync import sync

    sync(location.zarr_store("r+").delete_dir(name))


def _add_run_index(location):
    """Give each group of a store made before :data:`.provenance.RUN_INDEX` existed the
    array, every block unknown (its done cells were computed before runs recorded their
    code), so that this run's blocks are recorded; returns whether it added any."""
    root = open_root(location, "r+")
    added = False
    for _, group in dataset_groups(root):
        if RUN_INDEX not in group:
            create_run_index(group, group["done"].shape)
            added = True
    if added:
        consolidate(location)
        record_metadata(location)
    return added


def recover_folder(path):
    """Finish or undo an interrupted rebuild of the store in the folder ``path`` (see
    :func:`_rebuild`), delete the temporary files of writes cut short (``*.partial``: the
    file they were replacing is intact) and a store left half-created by an older pcskm
    without done markers (:func:`_recreate_half_created`)."""
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
    _recreate_half_created(path)


def _rebuild(location, old, new, spec, history, runs):
    """Extend the store: build the new layout in its place (beside a folder, swapped in; in
    a repository's transaction), copying every record of the store before."""

    def copy(rebuild):
        source, target = open_root(location.before()), open_root(rebuild, "r+")
        for name, group in old.groups.items():
            _copy_group(source[name], target[name], group, new.groups[name])
        _record_as_stored(rebuild)

    build(location, new, spec, history, runs, fill=copy)


def _recreate_half_created(path):
    """Delete a store left half-created by an older pcskm (:func:`half_created`) if it holds
    no done marker, with a message (one with done markers is refused by
    :func:`check_store`)."""
    reason = path.is_dir() and half_created(path)
    if reason and not holds_done_markers(path):
        log.warning("%s was left half-created by a run killed while creating it (%s); it "
                    "holds no computed cell: created again", path, reason)
        shutil.rmtree(path)


def prepare(path, spec, data_dir=None):
    """Open the store for ``spec`` (a path or URL, or a place of :mod:`.location` being
    written): create it, or check that it is a writable pcskm cube, refuse a store of schema
    version 1 (:func:`.access.check_runnable`), repair it
    (:func:`pcskm.runner.store.integrity.repair`: damaged chunks deleted, their done markers
    cleared), record a run that was killed before recording itself, check that it is
    compatible and extend it to cover the spec (raises :class:`IncompatibleStore`). What it
    wrote is committed (in a repository, one commit). Returns ``(cube, action)`` with action
    "created", "extended" or "opened"."""
    location = where(path)
    if isinstance(location, Folder):  # a repository's killed run leaves its last commit whole
        recover_folder(location.path)
        _replace_links(location.path)
    new = spec_layout(spec, data_dir)
    check_sizes(new, location)  # before anything is created
    if location.is_new():
        build(location, new, spec)
        action = "created"
    else:
        # a repository's snapshots cannot change; a half-created folder has no metadata
        # record yet (check_store says what was left and what to do)
        if isinstance(location, Folder) and not half_created(location.path):
            repair_metadata(location.path, new)
        check_store(location)
        check_runnable(location)
        check_preregistration(location, spec)
        location.check_writable()
        found = verify(location)
        if found.relabelled():
            _restore_coordinates(location, found, new)
            found = verify(location)
        _record_unfinished_run(location, found)
        repair(location, found)
        if isinstance(found.version, int) and found.version < RECORDS_SINCE:
            _bind_chunks(location, found.version)
        if store_binding(open_root(location).attrs.asdict()) is None:
            _bind_to_store(location)
        _add_run_index(location)
        old = read_layout(location)
        merged = merge_layouts(old, new, store=str(location))
        stored = open_root(location).attrs.asdict()
        history, runs = stored.get("spec_hashes", []), stored.get("runs", [])
        numpy_then = stored.get("versions", {}).get("numpy")
        if numpy_then != np.__version__:  # docs/method/protocol.md §2: generator streams may change
            log.warning("%s was written with NumPy %s, this is NumPy %s: random streams may "
                        "differ between versions", location, numpy_then, np.__version__)
        if merged.groups == old.groups and merged.algorithms == old.algorithms \
                and merged.fixed != old.fixed:  # only selection scores turned on
            _add_score_arrays(location, merged, spec, history, runs)
            action = "extended"
        elif merged.groups != old.groups or merged.fixed != old.fixed \
                or merged.algorithms.keys() != old.algorithms.keys():
            if found.foreign:
                raise IncompatibleStore(
                    f"{location} holds nodes that are not part of its layout: "
                    f"{', '.join(found.foreign)} (written by hand, not by pcskm); this spec "
                    "extends the store, which builds it anew without them: move them out of "
                    "the store and rerun")
            check_sizes(merged, location, copies=True)
            _rebuild(location, old, merged, spec, history, runs)
            action = "extended"
        else:
            record_metadata(location, root_attrs(merged, spec, history, runs))
            action = "opened"
        if found.foreign:
            log.warning("%s: %s", location, found.foreign_line())
    cube = Cube(location)
    cube.mark_applicability(spec)
    location.commit(f"store {action} for spec {spec.name}",
                    CREATED if action == "created" else PREPARED)
    return cube, action


def _record_unfinished_run(location, found):
    """Record the run that began writing the store and was killed before recording itself
    (its ``run_in_progress`` entry is still there; the lock, or for a repository
    :meth:`.backends.icechunk.Repository.check_free`, says it is gone): the cells it wrote are the
    cells marked done now less those marked done when it began, or if more, the done cells
    whose blocks name it (``run_index``: a forced run or ``--recompute-changed`` marks done
    again blocks that were done). A run that did record itself, on commits that the branch
    no longer holds (reset to an older version), is recorded by its own record."""
    root = open_root(location, "r+")
    attrs = root.attrs.asdict()
    entry = attrs.pop(RUNNING, None)
    if entry is None:
        return
    recorded = recorded_as(entry, location.runs())
    if recorded is not None:
        tag, record = recorded
        log.warning("%s is at a version taken while the run %s (started %s) wrote it; that "
                    "run recorded itself (tag %s) on commits the branch no longer holds: its "
                    "record is kept, and the cells it marked done after this version are "
                    "computed again", location, entry.get("command"), entry.get("started"),
                    tag)
        attrs["runs"] = [*attrs.get("runs", []), record]
        root.attrs.put(attrs)
        location.commit(f"run {len(attrs['runs'])} ({entry.get('spec')}): its record, from "
                        f"tag {tag}", RECORDED, record)
        return
    number = len(attrs.get("runs", []))  # the place its blocks name
    marked = sum(int(((found.done[name] > 0) & (read_run_index(group) == number)).sum())
                 * found.n_folds[name] for name, group in dataset_groups(root))
    cells_written = max(0, found.done_cells() - entry.pop("done_cells", 0), marked)
    if cells_written:
        log.warning("a previous run (%s, started %s on %s, process %s) wrote %d cells and "
                    "left no record; recorded now", entry.get("command"), entry.get("started"),
                    entry.get("client_host"), entry.get("client_pid"), cells_written)
        entry.update(cells=cells_written, finished=None, interrupted=True, killed=True)
        attrs["runs"] = [*attrs.get("runs", []), entry]
    root.attrs.put(attrs)
    consolidate(location)
    if cells_written:
        number = len(attrs["runs"])
        location.commit(f"run {number} ({entry.get('spec')}), killed: recorded by the next run",
                        RECORDED, entry, RUN_TAG.format(number))

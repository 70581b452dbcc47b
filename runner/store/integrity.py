"""Checking a cube's chunks against its ``done`` markers, and repairing what fails.

A block (algorithm, init, kind, percent, run) marked done promises that every chunk holding
its values is intact (:mod:`pcskm.runner.store.writer`). :func:`verify` checks that promise:

* every chunk a done block needs exists (a worker keeps chunks that hold only fill values,
  so an absent one was deleted; stores made before this did not keep them, and there such a
  chunk, one whose every fit failed, is reported missing and recomputed, with the same
  values);
* every chunk file is intact: its CRC32C checksum (the last codec of every array of a store
  made by this version) is checked on the stored bytes, without decompressing; an array
  without checksums (a store made before them) has each chunk decoded instead, which finds
  truncated and most overwritten chunks, not a changed byte that still decodes;
* every chunk a done block needs is the one written at its place (schema version 3): its
  digest, of its key, chunk shape and bytes, is the one recorded for its place
  (:mod:`pcskm.runner.store.places`), so that a chunk swapped with another, copied over
  another array's or from another store, of the same shape or not, is damage;
* the status of every fit of a done block is not ``missing``;
* every chunk's digest is bound to the store (its id and seed, :func:`.places.bound`), so a
  group copied, linked or synced from another store is damage in every chunk (a group that
  is a symbolic link is named as such: a run replaces it, never writing through it);
* every coordinate chunk is the one written when the store was made (its bound digest, root
  attribute ``coordinate_sha256``), and every coordinate is what a store's layout can be:
  ``run``, ``fold`` and ``feature`` count from 0, ``percent`` rises, labels are distinct.

A selection-score variable (``cv_score``, ``gap``, ...) is needed only where a done block's
``scored`` marker says its cells carry that score (the store may have gained the variable
after the block was done).

:func:`repair` deletes the damaged chunks and clears the done markers of the blocks whose
values they held, so that the next run recomputes exactly those blocks (``pcskm run`` repairs
before it plans). Damage to the coordinates, which define the layout, is not repaired here:
a run rewrites them from its spec if that gives their recorded digest, and otherwise drops
the group and computes it again (:mod:`pcskm.runner.store.preparation`); the values are
never moved to follow stored labels.
"""

import itertools
import logging
from dataclasses import dataclass, field
from pathlib import PurePath

import google_crc32c
import numpy as np
import zarr
from zarr.codecs import Crc32cCodec

from pcskm.forking import forked_map

from .access import check_store, open_root
from .backends import where
from .backends.folder import Folder
from .errors import LostReference
from .layout import dataset_groups, foreign_nodes
from .places import (
    COORDINATES,
    LAYOUT_ARRAYS,
    RECORD,
    bound,
    chunk_digest,
    is_placed,
    place_of,
    read_record,
    store_binding,
)
from .schema import (
    DONE_DIMS,
    GROUP_ARRAYS,
    MISSING,
    NOT_APPLICABLE,
    RECORDS_SINCE,
    SCORE_VARIABLES,
    complete_blocks,
    wanted_scores,
    writable_arrays,
)

log = logging.getLogger("pcskm")

MAX_LISTED = 40  # damaged chunks listed by describe(); the rest are counted


@dataclass(frozen=True)
class Damage:
    """One damaged chunk (``chunk``: its position in the array's chunk grid): ``kind`` is
    ``missing``, ``corrupt`` or ``misplaced`` (intact bytes, not those recorded for its
    place, or none recorded; the repair deletes the files of these three),
    ``inconsistent`` (intact, but its blocks marked done hold no fit) or ``relabelled`` (a
    coordinate that is not the one written); ``blocks`` marks the group's done blocks whose
    values it held (None: a layout array)."""

    dataset: str
    array: str
    chunk: tuple
    file: PurePath  # the chunk's file, or its key in a repository
    kind: str
    problem: str
    where: str
    blocks: np.ndarray | None = field(repr=False, compare=False)


@dataclass
class Verification:
    """What :func:`verify` found in one store."""

    store: object  # the store's path, or its repository (pcskm.runner.store.backends)
    spec: str = "SPEC"  # the name of the spec that made the store
    damage: list = field(default_factory=list)
    n_chunks: int = 0  # chunk files read
    unchecksummed: list = field(default_factory=list)  # "group/array" without CRC32C
    done: dict = field(default_factory=dict)  # group -> done markers as stored (0 if unreadable)
    scored: dict = field(default_factory=dict)  # group -> scored markers (None: no array)
    wanted: dict = field(default_factory=dict)  # group -> score bits of each algorithm
    n_folds: dict = field(default_factory=dict)
    metadata: object = None  # the MetadataCheck of pcskm.runner.store.metadata
    foreign: list = field(default_factory=list)  # nodes the layout does not name
    version: int | None = None  # the store's schema version
    linked: dict = field(default_factory=dict)  # group -> the target of its symbolic link
    unbound: list = field(default_factory=list)  # groups none of whose chunks is this store's

    def add(self, part):
        """Add what the check of other groups found (:func:`_verify_group`)."""
        self.damage += part.damage
        self.n_chunks += part.n_chunks
        self.unchecksummed += part.unchecksummed
        self.unbound += part.unbound
        for name in ("done", "scored", "wanted", "n_folds", "linked"):
            getattr(self, name).update(getattr(part, name))

    @property
    def ok(self):
        return not self.damage and not self.linked

    def relabelled(self):
        """The groups whose coordinates are damaged (their layout cannot be read as
        stored)."""
        return sorted({damage.dataset for damage in self.damage if damage.blocks is None})

    def lost(self, name):
        """The done blocks of group ``name`` whose values are damaged."""
        lost = np.zeros(self.done[name].shape, bool)
        for damage in self.damage:
            if damage.dataset == name and damage.blocks is not None:
                lost |= damage.blocks
        return lost & (self.done[name] > 0)

    def done_after_repair(self, name):
        """The done markers of group ``name`` once the damaged blocks are cleared."""
        return np.where(self.lost(name), 0, self.done[name]).astype(self.done[name].dtype)

    def done_cells(self):
        """Cells done in the store as found, with the selection scores their algorithm gets
        (blocks times folds)."""
        return sum(int(complete_blocks(done, self.scored.get(name),
                                       self.wanted[name]).sum()) * self.n_folds[name]
                   for name, done in self.done.items())

    def lost_cells(self):
        return sum(int(self.lost(name).sum()) * self.n_folds[name] for name in self.done)

    def describe(self):
        """The text ``pcskm verify`` prints."""
        how = ("against their CRC32C checksums" if not self.unchecksummed else
               "(arrays without checksums decoded instead)")
        lines = [f"store {self.store}: {self.n_chunks} chunk files checked {how}",
                 self.metadata.describe()]
        if self.version is not None and self.version < RECORDS_SINCE:
            lines.append(
                f"the chunks are not bound to their place (schema version {self.version}): a "
                "chunk swapped with another or copied over one is not found; the next pcskm "
                "run records their digests as they are")
        if self.unchecksummed:
            lines.append(
                f"{len(self.unchecksummed)} arrays carry no checksums (the store was made "
                "before pcskm wrote them): missing and undecodable chunks are found, a changed "
                "byte that still decodes is not")
        if self.foreign:
            lines.append(self.foreign_line())
        if self.ok:
            lines.append("no damage: every cell marked done has intact chunks")
            return "\n".join(lines)
        run = f"pcskm run {self.spec} --store {self.store} (the store's spec, or its TOML file)"
        for name, target in sorted(self.linked.items()):
            lines.append(f"group {name} is a symbolic link to {target}, not a group of this "
                         f"store: {run} replaces it by a group of its own and computes its "
                         "cells (nothing is written through the link)")
        for name in self.unbound:
            lines.append(f"group {name}: none of its chunks is bound to this store (a group "
                         "copied or synced from another store): its cells are computed again")
        if self.damage:
            lines += self.listing()
        relabelled = self.relabelled()
        if relabelled:
            lines.append(f"the coordinates of {', '.join(relabelled)} are not those written "
                         f"when the store was made: {run} rewrites them from the spec if it "
                         "defines them, else drops the group's values and computes them again")
        if any(damage.blocks is not None for damage in self.damage):
            lines.append(f"{run} clears their done markers and recomputes those cells")
        return "\n".join(lines)

    def foreign_line(self):
        """The line naming the nodes that are not part of the store's layout."""
        return (f"not part of the store's layout: {', '.join(self.foreign)} (written by hand, "
                "not by pcskm); pcskm ignores them (reads, checks and records none of them), "
                "and a run that extends the store refuses until they are moved out of it")

    def listing(self):
        """One line per damaged chunk (the first :data:`MAX_LISTED`), after a count."""
        lines = [f"{len(self.damage)} damaged chunks; {self.lost_cells()} cells marked done "
                 "have lost values:"]
        for damage in self.damage[:MAX_LISTED]:
            file = (damage.file.relative_to(self.store) if damage.file.is_absolute()
                    else damage.file)
            lines.append(f"  {file}: {damage.problem} "
                         f"({damage.where})")
        if len(self.damage) > MAX_LISTED:
            lines.append(f"  ... and {len(self.damage) - MAX_LISTED} more")
        return lines


def _chunk_key(array, coords):
    """The key of a chunk in the store (``group/array/c/0/1/...``)."""
    return f"{array.path}/{array.metadata.encode_chunk_key(coords)}"


def _read_chunk(location, key):
    """``(bytes, None)`` of the chunk ``key``; ``(None, None)`` if it is missing; ``(None,
    why)`` if the manifest holding its reference in a repository is lost
    (:class:`.errors.LostReference`), which loses every chunk it references, done or not."""
    try:
        return location.read_chunk(key), None
    except LostReference as error:
        return None, f"missing: {error}"
    except FileNotFoundError:
        return None, None


def _has_checksum(array):
    return isinstance(array.metadata.codecs[-1], Crc32cCodec)


def _corruption(array, coords, data, checksummed):
    """Why the chunk of bytes ``data`` is unusable, or None."""
    if checksummed:
        if len(data) < 4:
            return f"truncated ({len(data)} bytes)"
        if google_crc32c.value(data[:-4]) != int.from_bytes(data[-4:], "little"):
            return "checksum mismatch (truncated or overwritten)"
        return None
    try:
        array.blocks[coords]
    except Exception as error:  # any failure to decode is damage, whatever the codec raises
        return f"cannot be decoded ({type(error).__name__}: {error})"
    return None


def _block_region(array, coords):
    """The slices of the done blocks whose values the chunk at ``coords`` holds (the chunk's
    extent along the done dims; all of them along a dim the array does not have)."""
    index = [slice(None)] * len(DONE_DIMS)
    for dim, position, size in zip(array.metadata.dimension_names, coords, array.chunks,
                                   strict=True):
        if dim in DONE_DIMS:
            index[DONE_DIMS.index(dim)] = slice(position * size, (position + 1) * size)
    return tuple(index)


def _mask(region, shape):
    """The boolean array of ``shape`` true in ``region`` (slices)."""
    blocks = np.zeros(shape, bool)
    blocks[region] = True
    return blocks


def _labels(group):
    """Label lists of the block dims, or positions where a coordinate cannot be read."""
    labels = {}
    for dim in DONE_DIMS[:4]:
        try:
            labels[dim] = [str(v) for v in group[dim][:]]
        except Exception:  # a damaged coordinate: reported by verify, named by position
            labels[dim] = None
    return labels


def _where(array, coords, labels):
    """``f_score of algorithm LKM, init seeding, kind random``: the labels of the dims
    along which the chunk holds one entry."""
    parts = [f"{dim} {labels[dim][position]}" if labels[dim] else f"{dim} #{position}"
             for dim, position, size in zip(array.metadata.dimension_names, coords,
                                            array.chunks, strict=True)
             if dim in labels and size == 1]
    name = array.path.rpartition("/")[2]
    return name + (f" of {', '.join(parts)}" if parts else "")


def _verify_done(location, name, group, found):
    done_array = group["done"]
    found.done[name] = np.zeros(done_array.shape, done_array.dtype)
    coords = (0,) * done_array.ndim
    key = _chunk_key(done_array, coords)
    file, (data, lost) = location.chunk_name(key), _read_chunk(location, key)
    if data is None and lost is None:
        return
    found.n_chunks += data is not None
    problem = lost or _corruption(done_array, coords, data, _has_checksum(done_array))
    if problem:
        found.damage.append(Damage(name, "done", coords, file, "missing" if lost else
                                   "corrupt", problem,
                                   "done markers: every block of the group is recomputed",
                                   np.ones(done_array.shape, bool)))
        found.done[name] = _computed_blocks(group, done_array.shape)
        return
    found.done[name] = done_array[...]


def _computed_blocks(group, shape):
    """The blocks (algorithm, init, kind, percent, run) whose every fit has a status (none
    ``missing``, not all ``not_applicable``): those that were done, as far as the status
    tells, when the ``done`` markers themselves are lost (a status chunk that cannot be read
    tells nothing)."""
    status, computed = group["status"], np.zeros(shape, np.uint8)
    for coords in itertools.product(*map(range, status.cdata_shape)):
        try:
            values = status.blocks[coords]  # (algorithm, ..., run, fold, sparsity)
        except Exception:  # a damaged chunk: reported by verify's chunk check
            continue
        computed[_chunk_slices(status, coords)[:len(DONE_DIMS)]] = (
            (values != MISSING).all(axis=(-2, -1)) & (values != NOT_APPLICABLE).any(axis=(-2, -1)))
    return computed


def _chunk_slices(array, coords):
    """The slices of ``array`` that its chunk at ``coords`` holds; for the status, whose
    leading dims are the done dims, the first of them are those of its done blocks."""
    return tuple(slice(c * size, (c + 1) * size)
                 for c, size in zip(coords, array.chunks, strict=True))


def _read_scored(group):
    """The group's ``scored`` markers (None without the array; zeros if unreadable: the
    chunk's damage is reported like any other's)."""
    if "scored" not in group:
        return None
    try:
        return group["scored"][...]
    except Exception:  # a damaged chunk: found and reported by verify's chunk check
        return np.zeros(group["scored"].shape, np.uint8)


def _needed(array_name, done, scored):
    """The done blocks whose values the array ``array_name`` must hold: all of them, or for
    a selection-score variable those whose cells carry that score."""
    if array_name not in SCORE_VARIABLES:
        return done > 0
    if scored is None:
        return np.zeros(done.shape, bool)
    return (done > 0) & ((scored & SCORE_VARIABLES[array_name][0]) > 0)


def _read_places(group, version):
    """The group's record of chunk digests (:func:`.places.read_record`); None in a store
    of a version without one, or if it cannot be read (its chunk's damage is reported like
    any other's, and clears every done block of the group)."""
    if version is None or version < RECORDS_SINCE or RECORD not in group:
        return None
    try:
        return read_record(group[RECORD])
    except Exception:  # a damaged chunk: found and reported by verify's chunk check
        return None


def _misplaced(array, coords, key, data, record, binding):
    """Why the intact chunk ``data`` at ``coords`` of ``array`` is not the one recorded for
    its place (``record``, :func:`_read_places`) in this store (``binding``,
    :func:`.places.store_binding`), or None."""
    place = place_of(array, coords)
    recorded = record.get(place, {}).get(array.basename)
    if recorded == bound(chunk_digest(key, array.chunks, data), binding):
        return None
    if recorded is None:
        return "no digest recorded for its place: not known to be the chunk written there"
    try:
        array.blocks[coords]
    except Exception as error:  # any failure to decode is a chunk of another shape or type
        shape = "x".join(map(str, array.chunks))
        return (f"not the chunk written here: a chunk of another shape or type (it does not "
                f"decode to this place's {shape} {array.dtype}: {type(error).__name__})")
    return ("not the chunk written here: its digest is not the one recorded for its place "
            "in this store (a chunk swapped with another, or copied here from this store or "
            "another)")


def _read_status(status):
    """The whole ``status`` array, or None if a chunk of it cannot be decoded (the intact
    chunks are then read one by one: :func:`_inconsistent_blocks`)."""
    try:
        return status[...]
    except Exception:  # a damaged chunk: found and reported by verify's chunk check
        return None


def _inconsistent_blocks(status, coords, done, values):
    """Done blocks of a status chunk with a ``missing`` fit (``values``: the whole status
    array, :func:`_read_status`, or None to read the chunk)."""
    chunk_at = _chunk_slices(status, coords)
    region = chunk_at[:len(DONE_DIMS)]
    chunk = status.blocks[coords] if values is None else values[chunk_at]
    bad = np.zeros(done.shape, bool)
    bad[region] = (chunk == MISSING).any(axis=(-2, -1)) & (done[region] > 0)
    return bad


def verify(store, workers=None):
    """Check every chunk of ``store`` (a path or URL, :func:`.backends.where`; see the
    module docstring); returns a :class:`Verification`. Raises :class:`DamagedStore`, in one
    line naming the files, if its metadata changed (:mod:`pcskm.runner.store.metadata`); a
    damaged coordinate is damage like a chunk's (:meth:`Verification.relabelled`). Reads
    only: works on a read-only store. The data set groups of a store in a folder with at
    least :data:`FORK_FROM` chunks are checked by up to ``workers`` forked children side by
    side (default: one per core, :mod:`pcskm.forking`), with the same result."""
    location = where(store).pinned()  # one snapshot of a repository for the whole check
    metadata = check_store(location)
    root = open_root(location)
    attrs = root.attrs.asdict()
    found = Verification(store=location, spec=attrs.get("spec_name", "SPEC"), metadata=metadata,
                         version=attrs.get("schema_version"))
    found.foreign = foreign_nodes(zarr.open_group(location.zarr_store(), mode="r",
                                                  use_consolidated=False))
    groups = dict(dataset_groups(root))
    chunks = sum(array.nchunks for group in groups.values() for _, array in group.arrays())
    if not isinstance(location, Folder) or chunks < FORK_FROM:
        workers = 1  # a repository's client threads do not survive a fork
    global _verifying
    _verifying = (location, groups, attrs)
    try:
        parts = forked_map(_verify_group, groups, workers=workers)
    finally:
        _verifying = None
    for part in parts:
        found.add(part)
    return found


FORK_FROM = 4096  # chunks worth forking for: ~0.8 s in one process; a pool of two costs ~0.03 s

# (location, data set groups by name, root attributes) of the running verify, which its
# forked children read (forked_map passes them only the group's name)
_verifying = None


def _verify_group(name):
    """What :func:`verify` finds in the data set group ``name`` (``_verifying``)."""
    location, groups, attrs = _verifying
    group, version = groups[name], attrs.get("schema_version")
    found = Verification(store=location)
    if isinstance(location, Folder) and (location.path / name).is_symlink():
        found.linked[name] = str((location.path / name).readlink())
    arrays = {key: array for key, array in group.arrays() if key in GROUP_ARRAYS}
    found.n_folds[name] = int(arrays["fold"].shape[0]) if "fold" in arrays else 0
    labels = _labels(group)
    _verify_done(location, name, group, found)
    done = found.done[name]
    found.scored[name] = _read_scored(group)
    record = _read_places(group, version)
    found.wanted[name] = wanted_scores(
        attrs.get("protocol", {}), attrs.get("algorithm_definitions", {}),
        labels["algorithm"] or [""] * done.shape[0])
    bindings = Bindings(store_binding(attrs), attrs.get(COORDINATES))
    for array_name, array in arrays.items():
        if array_name != "done":
            _verify_array(location, name, array, done, found, labels, record, bindings)
    placed = [d for d in found.damage if d.kind == "misplaced"]
    if record and bindings.store and placed and bindings.checked == len(placed):
        found.unbound.append(name)
    return found


class Bindings:
    """What binds a group's chunks to its store (:mod:`.places`): the store's binding (None
    for a store made before its id) and the recorded digests of the coordinate chunks (None
    before them); ``checked`` counts the placed chunks checked against their digest."""

    def __init__(self, store, coordinates):
        self.store = store
        self.coordinates = coordinates if isinstance(coordinates, dict) else None
        self.checked = 0


def _coordinate_problem(array, key, data, bindings):
    """Why the intact coordinate chunk ``data`` of ``array`` is not the one written when the
    store was made (its recorded digest, :data:`.places.COORDINATES`) or not what a store's
    layout can be (:func:`layout_problem`), or None."""
    if bindings.coordinates is not None and bindings.store is not None:
        if bindings.coordinates.get(key) != bound(chunk_digest(key, array.chunks, data),
                                                  bindings.store):
            return ("not the coordinate written when the store was made: its digest is not "
                    "the one recorded (labels rewritten, or the coordinate of another store)")
    try:
        return layout_problem(array.basename, array[...])
    except Exception as error:  # any failure to decode is a chunk of another shape or type
        return f"cannot be decoded ({type(error).__name__}: {error})"


def layout_problem(name, values):
    """Why the coordinate ``name`` holding ``values`` is not what a store's layout can be:
    ``run``, ``fold`` and ``feature`` count from 0 (:meth:`.layout.GroupLayout.coords`),
    ``percent`` rises, the labels are distinct; or None."""
    if name in ("run", "fold", "feature"):
        if not np.array_equal(values, np.arange(len(values))):
            return f"{name} is not 0, 1, ..., {len(values) - 1}"
    elif name == "percent":
        if len(values) > 1 and not (np.diff(values) > 0).all():
            return "the percentages do not rise"
    elif name in ("algorithm", "init", "kind") and len(set(values.tolist())) != len(values):
        return f"the {name} labels are not distinct"
    return None


def _verify_array(location, name, array, done, found, labels, record, bindings):
    """Check the chunks of ``array`` of group ``name`` (``done``: its done markers;
    ``record``: its chunk digests, :func:`_read_places`; ``bindings``: :class:`Bindings`),
    adding to ``found``."""
    array_name = array.basename
    layout = array_name in LAYOUT_ARRAYS
    needed = None if layout else _needed(array_name, done, found.scored[name])
    checksummed = _has_checksum(array)
    if not checksummed:
        found.unchecksummed.append(f"{name}/{array_name}")
    placed = record is not None and is_placed(array)
    status = _read_status(array) if array_name == "status" else None
    for coords in itertools.product(*map(range, array.cdata_shape)):
        key = _chunk_key(array, coords)
        data, lost = _read_chunk(location, key)
        region = None if layout else _block_region(array, coords)
        under_done = region is not None and bool(needed[region].any())
        kind, problem, blocks = None, None, None
        if data is None:
            # a layout array of a checksummed store is written whole when it is made
            if under_done or (layout and checksummed) or lost:
                kind, problem = "missing", lost or "missing"
        else:
            found.n_chunks += 1
            kind, problem = "corrupt", _corruption(array, coords, data, checksummed)
            if not problem and layout:
                kind, problem = "relabelled", _coordinate_problem(array, key, data, bindings)
            if not problem and under_done and placed:
                bindings.checked += 1
                kind, problem = "misplaced", _misplaced(array, coords, key, data, record,
                                                        bindings.store)
            if not problem and under_done and array_name == "status":
                blocks = _inconsistent_blocks(array, coords, done, status)
                kind, problem = "inconsistent", (
                    f"status 'missing' in {int(blocks.sum())} blocks marked done"
                    if blocks.any() else None)
        if problem:
            if kind != "inconsistent" and region is not None:
                blocks = _mask(region, done.shape)
            found.damage.append(Damage(name, array_name, coords, location.chunk_name(key),
                                       kind, problem, _where(array, coords, labels), blocks))


def repair(store, found):
    """Delete the damaged chunks ``found`` lists (a chunk whose object is missing from a
    repository is deleted from its snapshot) and clear the done markers of the blocks they
    held. A repair cut short leaves chunks missing under done markers, which the next
    verification finds."""
    if found.ok:
        return
    location = where(store)
    log.warning("%s: %s\nrepairing: the damaged chunks are deleted and their cells marked "
                "not done, to be computed again", store, "\n".join(found.listing()))
    for damage in found.damage:
        if damage.kind in ("corrupt", "missing", "misplaced"):
            location.delete_chunk(damage.file)
    root = open_root(location, "r+")
    for name in sorted({damage.dataset for damage in found.damage}):
        writable_arrays(root[name])["done"][...] = found.done_after_repair(name)

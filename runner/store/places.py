"""Chunks bound to their place (docs/reference/cube-schema.md, Chunk digests): the digest of
every chunk a task writes, recorded with its place, so that a valid chunk in the wrong place
(two chunk files swapped, a chunk copied over another array's, a chunk of another data set
with another shape) is damage that ``pcskm verify`` names, not a value read silently.

A chunk's digest is the SHA-256 of its place and its stored bytes: its key in the store
(``iris/f_score/c/0/0/2/3/0/0/0``: the array's path and the chunk's index), its decoded shape
(the array's chunk shape) and the bytes of its file or object (:func:`chunk_digest`). The
worker that writes a task's chunks computes it from the bytes it hands the store
(:class:`Recording`, no extra read) and returns it in its receipt; the client writes it into
the group's record, the array :data:`RECORD` (dims kind, percent: the place of every chunk a
task writes in schema version 3; each entry ``{array name: digest}`` as JSON), before the
``done`` markers that vouch for the chunk, and in a repository in the same commit. The
client records the chunks it writes itself (a store's chunks copied by an extension or by
``--from``, the status of pairs a spec no longer runs) from their stored bytes
(:func:`record_stored`).

Every digest recorded is bound to its store (:func:`bound`): the SHA-256 of the store's
binding and the chunk's digest, the binding being the store's id, 128 random bits drawn when
the store is created (root attribute :data:`STORE_ID`, under the root's metadata digest),
and its seed (:func:`store_binding`). A group copied, linked or synced from another store,
of the same spec or not, has no chunk whose digest is the one this store records for its
place, so every chunk of it is damage; a store copied whole keeps its id and stays valid.
The coordinates, written once when a store is made, are bound the same way: the digest of
each of their chunks is recorded in the root attribute :data:`COORDINATES`
(:func:`coordinate_digests`). A store made before the id has none: its digests are checked
unbound, and the next run draws its id and records them bound.
"""

import hashlib
import json
import secrets

import numpy as np
import zarr
from zarr.storage import WrapperStore

from .provenance import RUN_INDEX
from .schema import FIT_DIMS

RECORD = "chunk_sha256"  # per group: (kind, percent) -> JSON {array name: digest}
RECORD_DIMS = ("kind", "percent")
RECORD_ATTRS = {
    "long_name": "SHA-256 of every chunk a task wrote at this (kind, percent), per array: "
                 "of its key (array path and chunk index), chunk shape and stored bytes, "
                 "as JSON {array: digest} (docs/reference/cube-schema.md, Chunk digests)",
    "comment": "written by the client before the done markers that vouch for the chunks; "
               "a chunk under a done marker whose digest differs is damage"}
# arrays written whole by the client, not by tasks
MARKERS = ("done", "scored", RUN_INDEX, RECORD)
# arrays written once, when the store is made: they define its layout
LAYOUT_ARRAYS = frozenset({*FIT_DIMS, "feature", "feature_name", "uninformative"})
STORE_ID = "store_id"  # root attribute: the store's id, drawn when it is created
COORDINATES = "coordinate_sha256"  # root attribute: {coordinate chunk key: bound digest}


def chunk_digest(key, shape, data):
    """SHA-256 (hex) of a chunk: its key ``key``, its decoded shape ``shape`` and its stored
    bytes ``data``."""
    header = f"{key} {','.join(map(str, shape))}\n".encode()
    return hashlib.sha256(header + bytes(data)).hexdigest()


def new_store_id():
    """A store's id: 128 random bits, as hex."""
    return secrets.token_hex(16)


def store_binding(attrs):
    """What binds the digests of the store whose root attributes are ``attrs``: its id and
    seed (``id:seed``); None for a store made before the id (its digests are unbound)."""
    store_id = attrs.get(STORE_ID)
    if not isinstance(store_id, str) or not store_id:
        return None
    return f"{store_id}:{(attrs.get('protocol') or {}).get('seed')}"


def bound(digest, binding):
    """The digest ``digest`` bound to a store's ``binding`` (:func:`store_binding`): the
    SHA-256 of both; ``digest`` itself without a binding."""
    if binding is None:
        return digest
    return hashlib.sha256(f"{binding}\n{digest}".encode()).hexdigest()


def coordinate_arrays(group):
    """The coordinate arrays of a data set's group (those written once, when the store is
    made, that define its layout): ``{name: array}``."""
    return {name: array for name, array in group.arrays() if name in LAYOUT_ARRAYS}


def coordinate_digests(location, groups, binding):
    """``{chunk key: bound digest}`` of every chunk of the coordinate arrays of ``groups``
    (data set groups, ``(name, group)``), read from ``location`` (:func:`.backends.where`);
    a chunk without a file is left out."""
    found = {}
    for _, group in groups:
        for array in coordinate_arrays(group).values():
            for coords in np.ndindex(*array.cdata_shape):
                key = f"{array.path}/{array.metadata.encode_chunk_key(coords)}"
                try:
                    data = location.read_chunk(key)
                except FileNotFoundError:
                    continue
                found[key] = bound(chunk_digest(key, array.chunks, data), binding)
    return dict(sorted(found.items()))


def is_placed(array):
    """Whether a task writes ``array`` chunk by chunk, one per (kind, percent): every array
    of a group with both dims but the markers (:data:`MARKERS`)."""
    dims = array.metadata.dimension_names or ()
    return array.basename not in MARKERS and set(RECORD_DIMS) <= set(dims)


def place_of(array, coords):
    """The (kind, percent) position of the chunk of ``array`` at ``coords``."""
    dims = array.metadata.dimension_names
    return tuple(int(coords[dims.index(dim)]) for dim in RECORD_DIMS)


def _array_path(key):
    """The array path of the chunk key ``key`` (Zarr v3's default ``path/c/0/1...``)."""
    return key.rpartition("/c/")[0]


class Recording(WrapperStore):
    """A Zarr store that records the :func:`chunk_digest` of every chunk set through it of
    the arrays it watches (``shapes``: array path -> chunk shape; ``digests``: key ->
    digest)."""

    def __init__(self, store, shapes=None, digests=None):
        super().__init__(store)
        self.shapes = {} if shapes is None else shapes
        self.digests = {} if digests is None else digests

    def watch(self, arrays):
        """Record the chunks of the placed arrays among ``arrays`` (name -> array)."""
        self.shapes.update({array.path: array.chunks for array in arrays.values()
                            if is_placed(array)})

    def _with_store(self, store):
        return type(self)(store, self.shapes, self.digests)

    async def set(self, key, value):
        path = _array_path(key)
        if path in self.shapes:
            self.digests[key] = chunk_digest(key, self.shapes[path], value.to_bytes())
        await self._store.set(key, value)


def recording(group):
    """``(group, store)``: the Zarr group ``group`` opened again to write through a
    :class:`Recording` store (:meth:`Recording.watch` says which arrays it records)."""
    store = Recording(group.store)
    return zarr.open_group(store, mode="r+", path=group.path), store


def by_place(arrays, digests):
    """``{(kind, percent): {array name: digest}}`` of the chunk digests ``digests`` (key ->
    digest) of the group's arrays ``arrays`` (name -> array)."""
    names, places = {array.path: name for name, array in arrays.items()}, {}
    for key, digest in digests.items():
        path, _, index = key.rpartition("/c/")  # Zarr v3's default chunk keys
        name = names[path]
        coords = tuple(map(int, index.split("/")))
        places.setdefault(place_of(arrays[name], coords), {})[name] = digest
    return places


def read_record(array):
    """The record of a group (its :data:`RECORD` array): ``{(kind, percent): {array name:
    digest}}``."""
    values = array[...]
    return {(k, p): json.loads(str(values[k, p])) for k, p in np.ndindex(values.shape)
            if str(values[k, p])}


def record_values(record, shape):
    """The :data:`RECORD` array's values of ``record`` (:func:`read_record`)."""
    values = np.full(shape, "", dtype=object)
    for (k, p), entry in record.items():
        values[k, p] = json.dumps(dict(sorted(entry.items())), separators=(",", ":"))
    return values.astype(str)


def record_stored(location, arrays, record, places, names=None, binding=None):
    """Record in ``record`` (:func:`read_record`, updated in place) the digests of the
    stored chunks at ``places`` ((kind, percent) positions) of the placed arrays of
    ``arrays`` (name -> array; ``names``: only these), read from ``location``
    (:func:`.backends.where`), bound to the store's ``binding`` (:func:`bound`); a chunk
    without a file is left unrecorded."""
    for name, array in arrays.items():
        if not is_placed(array) or (names is not None and name not in names):
            continue
        dims = array.metadata.dimension_names
        for k, p in places:
            coords = tuple(k if dim == "kind" else p if dim == "percent" else 0 for dim in dims)
            key = f"{array.path}/{array.metadata.encode_chunk_key(coords)}"
            try:
                data = location.read_chunk(key)
            except FileNotFoundError:
                continue
            record.setdefault((k, p), {})[name] = bound(chunk_digest(key, array.chunks, data),
                                                        binding)

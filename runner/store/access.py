"""Opening an existing store: checking that a path holds a whole pcskm cube whose metadata
pcskm wrote (:func:`check_store`), opening it (:func:`open_root`), reading its layout
(:func:`read_layout`), checking that ``pcskm run`` can write it (:func:`check_runnable`),
and reading it on one version while another run may swap it
(:func:`read_consistently`).
"""

import json
from pathlib import Path

import zarr

from .backends import where
from .backends.folder import Folder
from .errors import DamagedStore, IncompatibleStore, NotAStore, StoreChanged
from .layout import dataset_groups, layout_of
from .metadata import checked_metadata
from .schema import CHUNKED_BY, SCHEMA_VERSION, SELECTIONS_TITLE, TITLE


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
    if (metadata.get("attributes") or {}).get("title") != TITLE:
        return None
    return "its root zarr.json lacks the consolidated metadata written last"


def not_a_cube(path):
    """Why the Zarr store at ``path`` is not a pcskm cube: the best-s selections that
    ``pcskm report`` writes beside a cube (its root's title says so), or None."""
    try:
        attrs = json.loads((Path(path) / "zarr.json").read_bytes()).get("attributes")
    except (OSError, ValueError, AttributeError):
        return None  # damaged metadata: check_folder names it
    if isinstance(attrs, dict) and str(attrs.get("title", "")).startswith(SELECTIONS_TITLE):
        return (f"{path} holds the best-s selections that pcskm report wrote for the cube "
                f"{attrs.get('cube', '(not named)')}, not a results cube: give the cube's "
                "store (the report writes the selections again)")
    return None


def holds_done_markers(store):
    """Whether any group of ``store`` (a path or URL, :func:`.backends.where`) has a done
    marker: in a folder, a written ``done`` chunk file (read without opening the store, which
    may be half-created); in a repository, a marker set in a ``done`` array."""
    location = where(store)
    if isinstance(location, Folder):
        return any(file.is_file() and file.name != "zarr.json"
                   for file in location.path.glob("*/done/**/*"))
    root = zarr.open_group(location.zarr_store(), mode="r")
    return any(bool(group["done"][...].any()) for _, group in dataset_groups(root))


def check_store(store):
    """Raise :class:`NotAStore` if ``store`` (a path or URL, :func:`.backends.where`) holds no
    pcskm cube, :class:`DamagedStore` if its metadata is damaged (:func:`check_folder`,
    :func:`check_repository`); returns the metadata check."""
    location = where(store)
    if isinstance(location, Folder):
        return check_folder(location.path)
    return check_repository(location)


class SnapshotCheck:
    """What :func:`check_store` reports of a repository's metadata: Icechunk's snapshots are
    immutable and name every node's metadata (docs/reference/cube-schema.md, "The store on
    object storage"), so no digest is recorded or checked."""

    recorded = True
    changes = ()

    def __init__(self, snapshot):
        self.snapshot = snapshot

    def describe(self):
        return (f"metadata: Icechunk snapshot {self.snapshot} (immutable; its metadata is "
                "not checked against digests)")


def check_repository(location):
    """Raise :class:`NotAStore` unless the repository ``location`` (a
    :class:`.backends.icechunk.Repository`) holds a pcskm cube; returns the
    :class:`SnapshotCheck` of the version read, or written from while a run writes it."""
    store = location.zarr_store()
    if not location.has_root(store):
        raise NotAStore(f"{location} holds no Zarr store (an Icechunk repository without a "
                        "committed pcskm cube: pcskm run creates it)")
    if zarr.open_group(store, mode="r").attrs.get("title") != TITLE:
        raise NotAStore(f"{location} holds a Zarr store that is not a pcskm results cube")
    transaction = location.transaction
    return SnapshotCheck(transaction.base if transaction else location.version())


def check_folder(path):
    """Raise :class:`NotAStore` if ``path`` is a file or a folder without Zarr metadata, and
    :class:`DamagedStore` naming the file if its metadata cannot be read, changed since pcskm
    wrote it (:mod:`pcskm.runner.store.metadata`) or the store was left half-created
    (:func:`half_created`); returns the metadata check."""
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
               "copy, or delete it and compute again" if holds_done_markers(path) else
               "it holds no computed cell: pcskm run creates it again"))
    found = checked_metadata(path)
    other = not_a_cube(path)
    if other:
        raise NotAStore(other)
    problem = metadata_problem(path)
    if problem:
        raise DamagedStore(f"the metadata of {path} is damaged: {problem}. pcskm cannot repair "
                           "it; restore the store from a copy")
    return found


def open_root(store, mode="r"):
    """The root group of ``store`` (a path or URL, :func:`.backends.where`);
    :func:`check_store`'s errors if it cannot be opened."""
    location = where(store)
    try:
        return zarr.open_group(location.zarr_store(mode), mode=mode)
    except (OSError, ValueError, KeyError):
        check_store(location)
        raise


def read_layout(store):
    """The layout of an existing store."""
    return layout_of(open_root(store), store)


def check_runnable(path):
    """Raise :class:`IncompatibleStore` if ``pcskm run`` cannot write the store at ``path``:
    a store of schema version 1, whose chunks hold one (algorithm, init, kind) and are shared
    between tasks, while the workers write whole chunks of one (kind, percent)
    (docs/reference/cube-schema.md, Chunks and size). Reading it still works."""
    version = open_root(path).attrs.get("schema_version")  # not the layout: its coordinates
    # may be damaged, which the verification names; an unknown version is read_layout's
    if version in CHUNKED_BY and CHUNKED_BY[version] != CHUNKED_BY[SCHEMA_VERSION]:
        raise IncompatibleStore(
            f"{path} is a store of schema version {version} (one chunk per "
            f"{', '.join(CHUNKED_BY[version])}), which pcskm run no longer writes: its workers "
            f"write whole chunks of one {' and '.join(CHUNKED_BY[SCHEMA_VERSION])}. Move its "
            f"cells into a new store with pcskm run SPEC --store NEW --from {path} (nothing "
            "is computed again); status, report and verify still read it")


def read_consistently(path, read, attempts=2):
    """``read()`` (which reads the store at ``path``) done on one version of the store: read
    again if another run replaced the store or rewrote its metadata meanwhile (an extension
    swapped in, a run recording itself, a commit to a repository), and :class:`StoreChanged`
    if it changed under every attempt."""
    location = where(path)
    for _ in range(attempts):
        version = location.version()
        try:
            result = read()
        except Exception:
            if location.version() == version:
                raise
            continue
        if location.version() == version:
            return result
    raise StoreChanged(f"{path} changed while it was read {attempts} times (another pcskm run "
                       "is extending it or recording itself); read it again once that run "
                       "has begun computing or has ended")

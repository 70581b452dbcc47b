"""The record of the store's metadata: the digest of every group's and array's ``zarr.json``
as pcskm wrote it (docs/reference/cube-schema.md, Metadata digests), written by
:func:`record_metadata` with the consolidated metadata that readers use.

Every node's metadata is stored twice: in its own ``zarr.json`` and, copied by Zarr's
consolidation, in the root ``zarr.json`` (the copy that readers use). When pcskm creates or
extends a store, or a run rewrites its root attributes, it records the SHA-256 of each node's
metadata in the root attribute ``metadata_sha256`` (keyed by the file's path in the store),
computed over canonical JSON (sorted keys, no spaces), so that a change that still parses (a
fill value, an ``endian``, a shape, a codec) is found before any value is read
(:mod:`pcskm.runner.store.metadata` checks the record).

A repository on object storage keeps no such record: its snapshots are immutable and name
every node's metadata, so :func:`record_metadata` only writes its root attributes and
:func:`consolidate` leaves it as it is (its readers list its nodes).
"""

import hashlib
import json
import os
import warnings
from pathlib import Path

import zarr

from .backends import where
from .backends.folder import Folder
from .schema import in_layout, layout_datasets

RECORD = "metadata_sha256"  # root attribute: {path of a zarr.json in the store: SHA-256}
ROOT = "zarr.json"
# Root attributes that a run rewrites without a new record (Cube.begin_run, Cube.record_run).
VOLATILE = (RECORD, "runs", "run_in_progress")


def canonical(document):
    """``document`` as canonical JSON: sorted keys, no spaces, ASCII."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def digest(document):
    """The SHA-256 of ``document``'s canonical JSON."""
    return hashlib.sha256(canonical(document).encode()).hexdigest()


def node_document(document):
    """A group's or array's metadata without the empty consolidated field that consolidation
    adds to a group's copy."""
    if not isinstance(document, dict):
        return document
    inner = document.get("consolidated_metadata", False)
    if inner is None or (isinstance(inner, dict) and inner.get("metadata") == {}):
        document = {k: v for k, v in document.items() if k != "consolidated_metadata"}
    return document


def root_document(document, attrs):
    """What the root's digest covers: its attributes ``attrs`` less :data:`VOLATILE`, and
    its format keys (not the consolidated copies, each checked against its node's digest)."""
    return {**{k: v for k, v in document.items()
               if k not in ("attributes", "consolidated_metadata")},
            "attributes": {k: v for k, v in attrs.items() if k not in VOLATILE}}


def node_file(node):
    """The path in the store of the metadata file of ``node`` (a group or an array)."""
    return f"{node}/{ROOT}"


def read_document(file):
    """``(document, problem)``: the parsed JSON of ``file``, or why it cannot be."""
    try:
        document = json.loads(file.read_bytes())
    except FileNotFoundError:
        return None, "is missing"
    except (OSError, ValueError) as error:
        return None, f"cannot be read ({type(error).__name__}: {error})"
    if not isinstance(document, dict):
        return None, "does not hold a JSON object"
    return document, None


def _digests(store, attrs):
    """The record of the store at ``store`` as its files are now, its root attributes being
    ``attrs``."""
    root = read_document(store / ROOT)[0]
    record = {ROOT: digest(root_document(root, attrs))}
    datasets = layout_datasets(attrs)
    group = zarr.open_group(str(store), mode="r", use_consolidated=False)
    for node, _ in group.members(max_depth=None):
        if in_layout(node, datasets):
            record[node_file(node)] = digest(
                node_document(read_document(store / node_file(node))[0]))
    return dict(sorted(record.items()))


def record_metadata(store, attrs=None):
    """Update the root attributes of ``store`` (a path or URL, :func:`.backends.where`) with
    ``attrs`` and, in a folder, record the digest of every metadata file in the same write,
    then consolidate; writes nothing when neither would change."""
    location = where(store)
    folder = isinstance(location, Folder)
    root = zarr.open_group(location.zarr_store("r+"), mode="r+")
    stored = root.attrs.asdict()
    wanted = {**stored, **json.loads(json.dumps(attrs or {}))}
    if folder:
        wanted[RECORD] = _digests(location.path, wanted)
    if wanted != stored:
        root.attrs.put(wanted)
        consolidate(location)


def consolidate(store):
    """Copy the metadata of every node of the layout of the folder ``store``
    (:func:`.schema.in_layout`) into its root ``zarr.json``; a node the layout does not name
    is left out, so that no reader sees it. Nothing for a repository."""
    location = where(store)
    if not isinstance(location, Folder):
        return
    path = location.path
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        zarr.consolidate_metadata(str(path))
    file = Path(path) / ROOT
    root = json.loads(file.read_bytes())
    datasets = layout_datasets(root.get("attributes") or {})
    copies = root["consolidated_metadata"]["metadata"]
    foreign = [node for node in copies if not in_layout(node, datasets)]
    if foreign:
        for node in foreign:
            del copies[node]
        partial = file.with_name(ROOT + ".partial")  # deleted by the next run if cut short
        partial.write_text(json.dumps(root, indent=2))
        os.replace(partial, file)


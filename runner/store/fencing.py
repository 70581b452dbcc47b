"""Fencing: a worker's write lands only while its run holds the store (docs/guide/hpc.md,
"A killed client's workers").

A Dask worker may finish a task long after the client that submitted it has died (a login
node's client killed while batch workers compute), and by then another run may hold the store
and have completed it. So no worker writes into the store itself. Each run that takes the
store draws a run token (:func:`new_token`); its workers write a task's chunks under that
token, and only the client holding the store publishes them, once it has the task's receipt:

* a folder: the worker writes the chunk files into the run's staging folder
  ``<store>.staged/<token>/`` (:class:`Staging`: it reads the store, writes there) and hands
  back their keys (:class:`Written`); the client, holding the store's lock, moves each file
  into place with one ``rename`` (:func:`publish`), atomic on POSIX and NFS file systems. A
  killed client's lock is freed by the kernel and it moves nothing again; the next run draws
  another token and deletes the staging folders of the others (:func:`clear_staged`), so a
  task of the killed client that finishes later writes a file that no run ever moves.
* an Icechunk repository: the worker writes into a fork of the run's session, which only the
  run's client merges; the fork comes back tagged with the token of the run that made it, and
  a run refuses to merge a fork of another (:func:`check_token`).
"""

import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from zarr.storage import LocalStore, WrapperStore

from .errors import StaleWrites

STAGED = ".staged"  # <store>.staged/<token>/: the chunk files a run's workers wrote


def new_token():
    """A run token: 128 random bits as hex, drawn by each run when it takes a store."""
    return secrets.token_hex(16)


@dataclass(frozen=True)
class Written:
    """What a worker hands back with a task's receipt for the client to publish: the run
    ``token`` it wrote under and its ``chunks``, the keys of the files it staged (a folder) or
    the fork of the run's session it wrote into (an Icechunk repository)."""

    token: str
    chunks: object


def check_token(token, written, store):
    """Raise :class:`StaleWrites` unless every :class:`Written` of ``written`` was made under
    ``token``, the run's that holds ``store``."""
    stale = [w.token for w in written if w.token != token]
    if stale:
        raise StaleWrites(f"{store}: writes made for the run of token {stale[0]} reached the "
                          f"run of token {token}, which holds the store; they are not "
                          "published")


def staging_root(path):
    """``<store>.staged``: beside the store (on its file system, so that a rename moves a
    file into it), named after its path as given to the workers."""
    path = Path(path)
    return path.with_name(path.name + STAGED)


def staging_folder(path, token):
    """The folder where the workers of the run of ``token`` stage its chunk files."""
    return staging_root(path) / token


class Staging(WrapperStore):
    """A Zarr store that reads ``store`` (a folder's) and writes into ``staged`` (a
    :class:`zarr.storage.LocalStore` of the run's staging folder), recording the key of every
    file it writes in ``keys``. A task's writes are whole chunks, set one key at a time; a
    delete or a partial write would change the store itself and is refused."""

    def __init__(self, store, staged=None, keys=None):
        super().__init__(store)
        self.staged, self.keys = staged, [] if keys is None else keys

    def _with_store(self, store):
        return type(self)(store, self.staged, self.keys)

    async def set(self, key, value):
        await self.staged.set(key, value)
        self.keys.append(key)

    async def set_if_not_exists(self, key, value):
        if not await self.exists(key):
            await self.set(key, value)

    async def _set_many(self, values):
        for key, value in values:
            await self.set(key, value)

    async def set_partial_values(self, key_start_values):
        raise NotImplementedError("a task writes whole chunks into the staging folder")

    async def delete(self, key):
        raise NotImplementedError(f"a task does not delete {key}: it writes whole chunks")

    async def delete_dir(self, prefix):
        raise NotImplementedError(f"a task does not delete {prefix}: it writes whole chunks")


def staging(path, token):
    """The :class:`Staging` store of the folder store at ``path`` for the run of ``token``."""
    return Staging(LocalStore(path), LocalStore(staging_folder(path, token)))


def publish(path, token, written):
    """Move the files of ``written`` (:class:`Written`, each of the run of ``token``:
    :func:`check_token`) from the run's staging folder into the store at ``path``, each with
    one ``rename`` (the file replaced at once); the caller holds the store's lock."""
    check_token(token, written, path)
    if not written:
        return
    source, target = staging_folder(path, token), Path(path)
    for chunks in written:
        for key in chunks.chunks:
            there = os.path.join(target, key)
            try:
                os.replace(os.path.join(source, key), there)
            except FileNotFoundError:  # its folder is new in the store (or the file gone)
                os.makedirs(os.path.dirname(there), exist_ok=True)
                os.replace(os.path.join(source, key), there)


def clear_staged(path):
    """Delete every staging folder of the store at ``path``, and ``<store>.staged``: called
    by a run holding the store when it takes it (every folder there is a dead run's) and when
    it ends (its own, with the files of receipts it never received). A worker of a dead run
    may write into its folder again meanwhile: that file is never published, and the next run
    deletes it."""
    root = staging_root(path)
    if not root.is_dir():
        return
    for folder in root.iterdir():
        shutil.rmtree(folder, ignore_errors=True)
    try:
        root.rmdir()
    except OSError:  # a late write made a folder again meanwhile
        pass

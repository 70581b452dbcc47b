"""Where a store lives: a folder on a POSIX file system (:class:`.folder.Folder`) or an
Icechunk repository on S3-compatible object storage (:class:`.icechunk.Repository`), told
apart by the store's name (:func:`where`; docs/guide/hpc.md, "The store on object storage").

Both backends give the other modules of the store the bytes and the transactions that differ
between them: the Zarr store to open (``zarr_store``), the bytes of one chunk
(``read_chunk``), how a run holds the store while it writes (``writing``: the folder's lock
file, or an Icechunk transaction), what a rebuild starts from (``before``; a repository's
transaction emptied by ``Repository.start_over``), how writes become durable (``commit``: in
place for a folder, an Icechunk commit for a repository), what changes when another run
writes (``version``), and what the Dask workers write their tasks' chunks into
(``for_workers``: the folder's staging folder, or a fork of the run's Icechunk session, which
the client merges back, ``absorb``, before its next commit).

A ``file://`` URL names a folder of this machine and ``s3://bucket/prefix`` an Icechunk
repository; any other URL is refused (:class:`..errors.UnsupportedStore`) before anything is
read or made, never taken for a relative path (``s3://b/x`` would be a folder ``s3:``).

This is the bottom of the store's layers: it knows bytes, locks and transactions, and imports
no module that creates, opens, checks or prepares a store; those modules, above it, tell a
:class:`.folder.Folder` from a :class:`.icechunk.Repository` where they differ
(docs/reference/cube-schema.md, The store's code).
"""

from urllib.parse import unquote, urlsplit

from pcskm.runner.locations import is_url

from ..errors import UnsupportedStore
from .folder import Folder, folder_path
from .icechunk import Repository

SUPPORTED = ("a folder on a local or network file system (a path, or file:///path) or an "
             "Icechunk repository on S3-compatible object storage (s3://bucket/prefix)")


def where(store):
    """The place of ``store``: a :class:`Folder` or :class:`Repository` as given, a
    :class:`Repository` for ``s3://bucket/prefix``, a :class:`Folder` for a path or a
    ``file://`` URL of this machine; :class:`UnsupportedStore` for any other URL."""
    if isinstance(store, Folder | Repository):
        return store
    if not is_url(store):
        return Folder(folder_path(store))
    parts = urlsplit(store)
    scheme = parts.scheme.lower()
    if "::" in store.partition("://")[0]:
        scheme = store.partition("://")[0]
    elif scheme == "file":
        if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
            raise UnsupportedStore(f"{store}: a file:// URL names a folder of this machine "
                                   "(file:///path); give the path itself")
        return Folder(folder_path(unquote(parts.path)))
    elif scheme == "s3":
        prefix = parts.path.strip("/")
        if not parts.netloc or not prefix or parts.query or parts.fragment:
            raise UnsupportedStore(f"{store}: an object store is named s3://bucket/prefix "
                                   "(a bucket and a prefix inside it, nothing after)")
        return Repository(parts.netloc, prefix)
    raise UnsupportedStore(f"{store}: {scheme}:// stores are not supported; a store is {SUPPORTED}")

"""A store in a folder on a POSIX file system (:class:`Folder`), and the folder as a Dask
worker writes it (:class:`FolderForWorkers`: the run's staging folder beside it,
:mod:`..fencing`)."""

import contextlib
import os
import platform
import time
from pathlib import Path

from ..errors import NotAStore, StoreNotWritable


def folder_path(path):
    """The folder that the store path ``path`` names, such that the files a run builds beside
    it (``<store>.rebuild``, ``<store>.old``) are beside it: ``path`` as given, or its real
    path if it is a symbolic link (the link's target is the store) or holds ``..``
    (``x.zarr/../x.zarr`` is ``x.zarr``). Raises :class:`NotAStore` for a symbolic link to
    nothing or a loop of links."""
    given = Path(path)
    if given.is_symlink():
        try:
            return given.resolve(strict=True)
        except FileNotFoundError:
            raise NotAStore(f"{given} is a symbolic link to {os.readlink(given)}, which does "
                            "not exist: create the folder it points to, or give the store's "
                            "real path") from None
        except (RuntimeError, OSError):  # a loop: RuntimeError before Python 3.13
            raise NotAStore(f"{given} is a loop of symbolic links, not a store: give the "
                            "store's real path") from None
    return Path(os.path.realpath(given)) if ".." in given.parts else given


class Folder:
    """A store in a folder: Zarr files written in place, one run at a time by a lock file
    (:func:`.lock.store_lock`), the workers' chunk files staged beside it and moved in by the
    client (:mod:`.fencing`). The modules above create it beside the folder and swap it in
    (:func:`.create.build`) and check its metadata against recorded digests
    (:mod:`.metadata`)."""

    def __init__(self, path):
        self.path = Path(path)
        self.token = None  # the run token, while a run holds the store (:meth:`writing`)

    def __fspath__(self):
        return os.fspath(self.path)

    def __str__(self):
        return str(self.path)

    def __repr__(self):
        return f"Folder({str(self.path)!r})"

    def __eq__(self, other):
        return isinstance(other, Folder) and other.path == self.path

    def __hash__(self):
        return hash(self.path)

    @property
    def name(self):
        return self.path.name

    def resolve(self):
        """The absolute path of the folder."""
        return self.path.resolve()

    def exists(self):
        return self.path.exists()

    def is_new(self):
        """Whether the store is yet to be created (no such path, or an empty folder)."""
        return not self.path.exists() or (self.path.is_dir() and not any(self.path.iterdir()))

    def zarr_store(self, mode="r"):
        return str(self.path)

    @contextlib.contextmanager
    def writing(self, take_over=False):
        """Hold the store's lock file while a run writes (:func:`.lock.store_lock`), with a
        run token of its own (:mod:`.fencing`): the staging folders of the runs before it are
        deleted when it takes the store, its own when it ends. ``take_over`` changes nothing:
        the kernel frees the lock of a killed run, so a lock held is a live run's, never taken
        over."""
        from ..fencing import clear_staged, new_token
        from ..lock import store_lock

        with store_lock(self.path):
            self.token = new_token()
            clear_staged(self.resolve())
            try:
                yield self
            finally:
                self.token = None
                clear_staged(self.resolve())

    def check_writable(self):
        from ..lock import check_writable

        check_writable(self.path)

    def before(self):
        """The store as it was before a rebuild (:func:`.create.build`: the folder, kept
        until the new one is swapped in)."""
        return self

    def commit(self, message, kind, run=None, tag=None):
        """Nothing: a folder's writes are in place as soon as Zarr returns."""

    def chunk_name(self, key):
        return self.path / key

    def read_chunk(self, key):
        """The bytes of the chunk object ``key`` (FileNotFoundError if it is missing)."""
        with open(os.path.join(self.path, key), "rb") as file:  # no Path: one per chunk
            return file.read()

    def delete_chunk(self, name):
        """Delete the chunk :meth:`chunk_name` named ``name``."""
        Path(name).unlink(missing_ok=True)

    def version(self, wait_seconds=10.0):
        """What changes when the store is swapped for an extended one or its metadata is
        rewritten: the identities of its folder and of its root ``zarr.json`` (both replaced,
        never written in place), None if there is no store. Waits up to ``wait_seconds`` for
        a store being swapped in (``<store>.old`` present)."""
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                folder, root = os.stat(self.path), os.stat(self.path / "zarr.json")
                return (folder.st_dev, folder.st_ino, root.st_ino, root.st_mtime_ns)
            except FileNotFoundError:
                swapping = self.path.with_name(self.path.name + ".old").exists()
                if not swapping or time.monotonic() > deadline:
                    return None
                time.sleep(0.05)

    def pinned(self):
        """The folder: a reader of a folder sees another run's swap through
        :func:`.access.read_consistently`."""
        return self

    def open_datatree(self, run=None):
        import xarray as xr

        if run is not None:
            raise ValueError(f"{self}: a store in a folder keeps no versions; run= names a "
                             "version of a store on object storage (s3://)")
        return xr.open_datatree(str(self.path), engine="zarr")

    def runs(self):
        """The versions of the store (none in a folder)."""
        return []

    def roll_back(self, tag, take_over=False):
        raise ValueError(f"{self}: a store in a folder keeps no versions; --from-tag names a "
                         "run tag of a store on object storage (s3://)")

    def for_workers(self):
        """What the workers write their tasks' chunks into: the run's staging folder beside
        the folder, at its absolute path (:class:`FolderForWorkers`); only while a run holds
        the store (:meth:`writing`)."""
        if self.token is None:
            raise StoreNotWritable(f"{self} is written only by a run holding it (pcskm run; "
                                   "from Python, inside `with where(path).writing():`)")
        return FolderForWorkers(str(self.resolve()), self.token)

    def absorb(self, written):
        """Move the chunk files that the workers staged (``written``: each a task's
        :class:`.fencing.Written`, of this run's token) into the folder
        (:func:`.fencing.publish`)."""
        from ..fencing import publish

        publish(self.resolve(), self.token, written)


class FolderForWorkers:
    """A folder as a worker writes it: at the path the client gave, which every worker must
    mount (docs/guide/hpc.md, "How the workers write"); the chunk files go to the staging
    folder of the run of ``token`` beside it, which the client moves into place
    (:mod:`.fencing`)."""

    def __init__(self, path, token):
        self.path, self.token = path, token

    def problem(self):
        """Why this process cannot write the store (a message naming this host and the
        path), or None if it can: the folder must exist here, and the run's staging folder
        beside it take a new file."""
        from ..fencing import staging_folder
        from ..lock import write_error

        path = Path(self.path)
        if not path.is_dir():
            problem = "does not exist"
        else:
            staged = staging_folder(path, self.token)
            try:
                staged.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                problem = f"cannot be written ({error.strerror}: {staged})"
            else:
                error = write_error(staged)
                if error is None:
                    return None
                problem = f"cannot be written ({error.strerror}: {staged})"
        return (f"the Dask workers cannot write the store: on worker host {platform.node()} "
                f"{path} {problem}, while the client opened it there. Put the store on a file "
                "system that every worker mounts at the same path (docs/guide/hpc.md, How the "
                "workers write)")

    @contextlib.contextmanager
    def writing(self, dataset):
        """The Zarr group of ``dataset``, opened to write (its group alone: opening the root
        would read every group's metadata): read from the folder, written into the run's
        staging folder (:class:`.fencing.Staging`)."""
        import zarr

        from ..fencing import staging

        yield zarr.open_group(staging(self.path, self.token), mode="r+", path=dataset)

    def written(self, group):
        """The keys of the chunk files staged through ``group`` (one task's), under the run's
        token: what the client moves into the folder (:meth:`Folder.absorb`)."""
        from ..fencing import Written

        return Written(self.token, tuple(group.store.keys))

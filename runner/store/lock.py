"""Who may write a store: one run at a time, and only where files can be written.

One run writes a store at a time, whatever path it was given: :func:`store_lock` holds a
kernel lock on ``<resolved store>.lock``, which the kernel releases when its process ends,
however it ends. :func:`check_writable` refuses a store that cannot be written before a run
touches it.
"""

import contextlib
import fcntl
import os
import socket
import tempfile
from pathlib import Path

from .errors import StoreBusy, StoreNotWritable

LOCK_MODE = 0o644  # read and write, never executable


def lock_path(store):
    """The lock file of ``store``: ``<store>.lock`` beside the store's resolved path, so that
    every spelling of the path (symbolic links, ``..``, relative or absolute) names one
    lock file."""
    path = Path(store).resolve()
    return path.with_name(path.name + ".lock")


def _lock_opened(lock):
    """Called between opening the lock file and locking it (a hook for the tests that
    interleave two contenders)."""


def _same_file(fd, path):
    try:
        here, there = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _holder(fd):
    host, _, pid = os.pread(fd, 4096, 0).decode(errors="replace").strip().rpartition(" ")
    return (f"process {pid} on {host}" if pid.isdigit() else
            "a process that has not written its name yet")


def _lock(lock, store):
    """Open ``lock`` and take an exclusive ``flock`` on it, or raise :class:`StoreBusy`.

    The kernel releases the lock when its process ends, however it ends, so a lock file left
    by a killed run is simply taken: there is no stale lock to detect or delete. The holder
    deletes the file before releasing it; a contender that locked a file deleted meanwhile
    sees that the path now names another file and starts again.
    """
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, LOCK_MODE)
        except OSError as error:
            raise StoreNotWritable(
                f"cannot create the lock file {lock} of {store}: {error.strerror}. "
                "pcskm run writes the store and needs a writable folder; status, report --out "
                "and verify work on a read-only store") from None
        try:
            _lock_opened(lock)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise StoreBusy(
                    f"{store} is being written by {_holder(fd)} (lock file {lock}); wait "
                    "for that run to end (the lock is released when its process ends, "
                    "however it ends)") from None
            except OSError as error:
                raise StoreNotWritable(
                    f"cannot lock {lock}: {error.strerror}. The file system does not "
                    "support file locks (on Lustre, mount with -o flock; on NFS, run lockd "
                    "or use NFSv4)") from None
            if _same_file(fd, lock):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # its holder deleted it while we waited: lock the file there now


def _unlock(lock, fd):
    try:
        if _same_file(fd, lock):
            lock.unlink()
    finally:
        os.close(fd)


@contextlib.contextmanager
def store_lock(path):
    """Hold the store's lock (:func:`lock_path`) while writing, so that two runs never write
    one store, whatever path each was given. The lock file names its holder (host and
    process); a lock that cannot be written is an error that leaves no lock behind."""
    lock = lock_path(path)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StoreNotWritable(f"cannot create the folder of {path}: {error.strerror}") from None
    fd = _lock(lock, path)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{socket.gethostname()} {os.getpid()}".encode(), 0)
        os.fsync(fd)
    except OSError as error:
        _unlock(lock, fd)
        raise StoreNotWritable(f"cannot write the lock file {lock}: {error.strerror}; no "
                               "lock was left behind. Free space (or fix the file system) "
                               "and rerun") from None
    try:
        yield
    finally:
        _unlock(lock, fd)


def write_error(folder):
    """Why no file can be created in ``folder`` (the ``OSError``), or None if one can: the
    answer of the file system itself (a read-only file system stops root too, permission
    bits stop other users; ``os.access`` would tell neither for root)."""
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".pcskm-write-test-"):
            pass
    except OSError as error:
        return error
    return None


def check_writable(path):
    """Raise :class:`StoreNotWritable` unless the store can be written."""
    error = write_error(path)
    if error is not None:
        raise StoreNotWritable(
            f"{path} cannot be written ({error.strerror}): pcskm run needs a writable store. "
            "status, report --out DIR and verify work on a read-only store; to compute more "
            "cells, copy it to a writable place")

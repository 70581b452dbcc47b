"""One writer per store: the lock is taken on the store's resolved path, with a kernel lock
(flock) that dies with its process, so that every spelling of the path meets the same lock,
a lock left by a killed run is taken by exactly one contender, and a lock that cannot be
written leaves nothing behind."""

import errno
import os
import resource
import signal
import socket
import threading

import pytest
from cubes import tiny_spec

from pcskm.experiments.spec import parse_spec
from pcskm.runner import run_spec
from pcskm.runner.store import StoreBusy, StoreNotWritable, lock_path, prepare, store_lock
from pcskm.runner.store import lock as lock_module

TINY = tiny_spec("tiny-lock")




@pytest.fixture
def store(tmp_path):
    """An empty cube at ``<tmp>/real/s.zarr`` (created, nothing computed)."""
    path = tmp_path / "real" / "s.zarr"
    prepare(path, parse_spec(TINY))
    return path


def spellings(store, tmp_path):
    """Other paths of the same store: a symbolic link to it, a ``..`` back out of one of its
    folders, and a ``..`` after a symbolic link to a folder (which only the kernel resolves
    right: a lexical normalisation would name another folder)."""
    link = tmp_path / "link.zarr"
    link.symlink_to(store)
    (tmp_path / "elsewhere" / "deep").mkdir(parents=True)
    (tmp_path / "elsewhere" / "to-group").symlink_to(store / "iris")
    return {"symlink": link,
            "dotdot": store / "iris" / "..",
            "symlinked dotdot": tmp_path / "elsewhere" / "to-group" / ".."}


@pytest.mark.parametrize("spelling", ["symlink", "dotdot", "symlinked dotdot"])
def test_every_spelling_of_the_path_meets_the_same_lock(store, tmp_path, spelling):
    """The reproducer of the two-writer damage: a run holds the store; a second run given
    another path to it must be refused (it was not: the lock was named after the path as
    typed)."""
    other = spellings(store, tmp_path)[spelling]
    assert os.path.samefile(other, store)
    assert lock_path(other) == lock_path(store)
    with store_lock(store):
        with pytest.raises(StoreBusy, match=f"being written by process {os.getpid()}"):
            run_spec(parse_spec(TINY), other, progress=False)
    with store_lock(other):  # and the other way round
        with pytest.raises(StoreBusy):
            with store_lock(store):
                pass
    assert not lock_path(store).exists()


def test_a_lock_left_by_a_dead_process_is_taken_by_exactly_one_contender(store, monkeypatch):
    """Two runs start together on a lock file left by a killed run. They used to both read
    the dead PID, both delete the file and both proceed. Here both have opened the lock file
    before either tries to lock it (a barrier in the hook between the two steps): exactly
    one holds it."""
    lock = lock_path(store)
    lock.write_text(f"{socket.gethostname()} 999999999")  # a PID no process has
    barrier = threading.Barrier(2, timeout=10)
    monkeypatch.setattr(lock_module, "_lock_opened", lambda path: barrier.wait())
    holding, release = threading.Barrier(3, timeout=10), threading.Event()
    outcome = {}

    def contender(name):
        try:
            with store_lock(store):
                outcome[name] = "held"
                holding.wait()
                release.wait(10)
        except StoreBusy as error:
            outcome[name] = str(error)
            holding.wait()

    threads = [threading.Thread(target=contender, args=(n,)) for n in ("a", "b")]
    for thread in threads:
        thread.start()
    holding.wait()  # both have either taken the lock or been refused
    release.set()
    for thread in threads:
        thread.join(10)
    assert sorted(v == "held" for v in outcome.values()) == [False, True], outcome
    assert not lock.exists()


def test_a_contender_that_locked_a_released_file_does_not_hold_the_store(store, monkeypatch):
    """The holder deletes the lock file as it releases it. A contender that opened the old
    file before (paused in the hook), and locks it after a third run created and locked the
    new one, must see that it holds a deleted file, and be refused."""
    lock = lock_path(store)
    opened, resume = threading.Event(), threading.Event()

    def hook(path):
        if threading.current_thread().name == "late" and not opened.is_set():
            opened.set()
            resume.wait(10)

    monkeypatch.setattr(lock_module, "_lock_opened", hook)
    outcome = []

    def late():
        try:
            with store_lock(store):
                outcome.append("held")
        except StoreBusy:
            outcome.append("refused")

    first = store_lock(store)
    first.__enter__()
    thread = threading.Thread(target=late, name="late")
    thread.start()
    assert opened.wait(10)  # "late" has the first holder's file open
    first.__exit__(None, None, None)  # released and deleted
    with store_lock(store):  # a third run takes the store
        resume.set()
        thread.join(10)
        assert outcome == ["refused"]
    assert not lock.exists()


def test_a_lock_that_cannot_be_written_leaves_no_lock(store):
    """A full disk when the lock is written (here the kernel's file size limit, which fails
    every write with EFBIG, even root's) used to leave an empty lock file that refused every
    later run ("being written by process  on")."""
    lock = lock_path(store)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, hard))
    try:
        with pytest.raises(StoreNotWritable, match="no lock was left behind") as raised:
            with store_lock(store):
                pytest.fail("the lock was taken without being written")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    assert os.strerror(errno.EFBIG) in str(raised.value)
    assert not lock.exists()
    with store_lock(store):  # the next run is not refused
        assert lock.read_text() == f"{socket.gethostname()} {os.getpid()}"


def test_a_disk_full_error_names_itself(store, monkeypatch):
    lock = lock_path(store)

    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "pwrite", full)
    with pytest.raises(StoreNotWritable, match="No space left on device"):
        with store_lock(store):
            pass
    assert not lock.exists()


def test_the_lock_file_is_not_executable(store):
    previous = os.umask(0)  # the mode asked for, not what a umask leaves of it
    try:
        with store_lock(store):
            mode = lock_path(store).stat().st_mode & 0o777
    finally:
        os.umask(previous)
    assert mode & 0o111 == 0 and mode & 0o600 == 0o600

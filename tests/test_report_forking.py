"""The report's forked children (pcskm/forking.py): the same results as the loop
they replace, in its order, and a child's error raised in the parent; a background value
computed elsewhere, its error raised here, its child ended with its block; a value given a
time limit (:func:`forking.within`); a child that neither
collects what it inherits nor keeps its parent's signal handlers, and that keeps the memory
it frees."""

import contextlib
import ctypes
import ctypes.util
import os
import platform
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from pcskm import forking


def _square_and_pid(item):
    return item * item, os.getpid()


def _fails_at_three(item):
    if item == 3:
        raise ValueError(f"item {item} refused")
    return item


def test_forked_map_is_the_loop_in_its_order():
    """Six items on two workers: the squares in the items' order, as a plain loop gives them;
    where the process can fork, computed by other processes than this one."""
    found = forking.forked_map(_square_and_pid, range(6), workers=2)
    assert [value for value, _pid in found] == [item * item for item in range(6)]
    pids = {pid for _value, pid in found}
    if forking.can_fork():
        assert os.getpid() not in pids
    else:
        assert pids == {os.getpid()}


def test_one_item_or_one_worker_stays_in_this_process():
    assert forking.forked_map(_square_and_pid, [4]) == [(16, os.getpid())]
    assert forking.forked_map(_square_and_pid, [1, 2], workers=1) == [(1, os.getpid()),
                                                                      (4, os.getpid())]


def test_a_childs_error_is_raised_here():
    with pytest.raises(ValueError, match="item 3 refused"):
        forking.forked_map(_fails_at_three, range(5), workers=2)


def test_a_background_value_is_the_functions_computed_elsewhere():
    """A closure over this process's memory (nothing pickled but the value): its value, from
    another process where there are two cores to fork to, else from this one."""
    data = np.arange(1000.0)
    with forking.Background(lambda: (float(data.sum()), os.getpid())) as running:
        total, pid = running.result()
        assert running.result() == (total, pid)  # taken once, kept
    assert total == 499500.0
    assert (pid != os.getpid()) == (forking.cores() > 1)


def test_a_background_error_is_raised_here():
    def fails():
        raise ValueError("refused in the background")

    with pytest.raises(ValueError, match="refused in the background"), \
            forking.Background(fails) as running:
        running.result()


@pytest.mark.skipif(forking.cores() < 2, reason="a background child needs two cores")
def test_leaving_the_block_ends_a_background_child():
    """A child whose value is never taken ends with the block (here, a minute's sleep)."""
    with forking.Background(lambda: time.sleep(60)) as running:
        (child,) = running._pool._pool
    child.join(timeout=10)
    assert not child.is_alive()


@pytest.mark.skipif(not forking.can_fork(), reason="needs fork")
def test_within_gives_the_value_the_error_the_time_out_or_the_death_of_its_child():
    """:func:`forking.within`: a closure's value computed in another process; its error
    raised here; a child still computing at the time limit ended (not waited for); a child
    that exits without a value named with its exit code."""
    data = np.arange(10.0)
    total, pid = forking.within(lambda: (float(data.sum()), os.getpid()), 30)
    assert total == 45.0 and pid != os.getpid()

    def fails():
        raise ValueError("refused in the child")

    with pytest.raises(ValueError, match="refused in the child"):
        forking.within(fails, 30)
    began = time.monotonic()
    with pytest.raises(TimeoutError):
        forking.within(lambda: time.sleep(60), 1)
    assert time.monotonic() - began < 10
    with pytest.raises(forking.ChildDied, match="exit code 3"):
        forking.within(lambda: os._exit(3), 30)


class _MallocInfo(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (malloc.h, glibc 2.33 and later)."""

    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _malloc_info():
    mallinfo2 = ctypes.CDLL(ctypes.util.find_library("c")).mallinfo2
    mallinfo2.restype = _MallocInfo
    return mallinfo2()


def _mapped_then_kept(_item):
    """Bytes of blocks malloc mapped on their own while a 64 MiB array lives; bytes free in
    its heap once the array is freed."""
    array = np.ones(2**23)
    mapped = _malloc_info().hblkhd
    del array
    return mapped, _malloc_info().fordblks


@pytest.mark.skipif(not forking.can_fork() or platform.libc_ver()[0] != "glibc",
                    reason="the children are forked on Linux only; mallinfo2 is glibc's")
def test_a_child_keeps_the_memory_of_a_freed_array_for_the_next_one():
    """glibc maps a 64 MiB array on its own when it is made and unmaps it when it is freed
    (here, in this process), so that the next array's pages are faulted in and zeroed
    again; a child (forking.keep_freed_memory) makes it in its heap and keeps the memory
    once it is freed."""
    size = 2**26
    mapped, _ = _mapped_then_kept(0)
    assert mapped >= size
    for mapped, kept in forking.forked_map(_mapped_then_kept, range(2), workers=2):
        assert mapped < size and kept >= size


_INHERITED_GARBAGE = """
import gc, os, signal, sys, time
from pcskm import forking

class WaitsForAThread:
    # a destructor that waits for a thread of the parent, which a forked child does not have
    def __del__(self):
        time.sleep(3600)

def collect(item):
    gc.collect()
    return item

gc.disable()
cycle = WaitsForAThread()
cycle.itself = cycle
del cycle
signal.signal(signal.SIGTERM, lambda signum, frame: None)  # a handler that keeps going
print(forking.forked_map(collect, range(4), workers=2), flush=True)
os._exit(0)  # this process would wait in the destructor at its exit
"""


@pytest.mark.skipif(not forking.can_fork(), reason="no forked children without fork")
def test_a_child_never_runs_the_destructors_of_what_it_inherits():
    """The parent holds cyclic garbage whose destructor would wait forever (as one waiting
    for a thread that a forked child does not have) and a SIGTERM handler that keeps going,
    and each child collects garbage: the map still ends, with its results. A child that
    collected the inherited cycle would wait in the destructor, out of reach of SIGTERM."""
    process = subprocess.Popen([sys.executable, "-c", _INHERITED_GARBAGE], text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):  # its children too, if they hang
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 0, err
    assert out.strip() == "[0, 1, 2, 3]"


def _signal_handlers(_item):
    return signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)


@pytest.mark.skipif(not forking.can_fork(), reason="no forked children without fork")
def test_a_child_takes_the_default_sigterm_and_leaves_sigint_to_its_parent():
    def keep_going(signum, frame):
        pass

    previous = signal.signal(signal.SIGTERM, keep_going)
    try:
        found = forking.forked_map(_signal_handlers, range(2), workers=2)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert found == [(signal.SIG_DFL, signal.SIG_IGN)] * 2

"""Work spread over forked children (Linux; elsewhere it is done in the process itself):
``pcskm verify`` checks a store's data set groups side by side, the report reads and
aggregates the data sets of the cube side by side (:func:`forked_map`), computes the tables
that only its last sections show while it writes the others (:class:`Background`), and
renders its figures while it goes on (:func:`pcskm.experiments.report.plotting.parallel_saves`).
A child does what the process would have done, on a copy of its memory, so the results are
the same.

A child is forked from a process that may have threads (Zarr's, an object store client's, a
test's server) and signal handlers of its own (``pcskm run`` turns SIGTERM into an
interrupt). Two rules keep such a child from hanging: it never collects the objects it
inherits (:func:`fork_safely`: their destructors may wait for threads that do not exist in
the child), and it takes the default SIGTERM (:func:`child_signals`), so that ending it
never depends on Python code running in it. A child of :func:`forked_map` also keeps the
memory it frees for its next arrays (:func:`keep_freed_memory`)."""

import contextlib
import ctypes
import ctypes.util
import gc
import multiprocessing
import os
import signal
import sys


def can_fork():
    """Whether work can go to forked children: on Linux, where fork is the safe start method
    (Zarr resets its event loop in a forked child)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def cores():
    """The cores this process may use (1 where it cannot fork)."""
    return len(os.sched_getaffinity(0)) if can_fork() else 1


@contextlib.contextmanager
def fork_safely():
    """Children forked inside the block never run the garbage collector over the objects
    they inherit (they are frozen, :func:`gc.freeze`, while the children are forked); this
    process collects them again after the block. It also spares the children the copies
    of memory pages a collection would write to."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def child_signals():
    """In a forked child: SIGTERM ends it (the default action) and SIGINT is left to the
    parent, which ends its children."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4


def keep_freed_memory():
    """Make glibc's malloc keep the memory this process frees for its next allocations:
    no block is given its own mapping (``M_MMAP_MAX`` 0) and the top of the heap is not
    given back (``M_TRIM_THRESHOLD`` at its largest). By default an array over 32 MiB is
    mapped when made and unmapped when freed, so that the next one of its size faults in
    and zeroes every page again; a report's child makes hundreds of such arrays per data
    set, each of the size of the last (docs/guide/paper-study.md, "The report and `pcskm
    check`", gives what it saves). For a short-lived child only: its memory stays at its
    peak until it exits. Returns whether malloc took the
    settings (False: not glibc)."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError, TypeError):
        return False
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, 2**31 - 1))


def _start_child():
    """A :func:`forked_map` child's start: :func:`child_signals`, :func:`keep_freed_memory`."""
    child_signals()
    keep_freed_memory()


def forked_map(function, items, workers=None):
    """``[function(item) for item in items]``, computed by up to ``workers`` forked children
    (default :func:`cores`) side by side, in the order of ``items``; in this process when it
    cannot fork, with one worker or one item. ``function`` must be a module-level function
    (the children get it by name) and its results picklable; an error of a child is raised
    here."""
    items = list(items)
    workers = min(workers or cores(), len(items)) if can_fork() else 1
    if workers < 2:
        return [function(item) for item in items]
    with fork_safely():
        pool = multiprocessing.get_context("fork").Pool(workers, initializer=_start_child)
    try:
        found = pool.map(function, items, chunksize=1)
    except BaseException:
        pool.terminate()
        raise
    pool.close()  # the children leave when the queue is empty: no signal needed
    pool.join()
    return found


class ChildDied(RuntimeError):
    """A child of :func:`within` ended without a value (killed, out of memory, or exited)."""


def _send_value(function, sender):
    """In a child of :func:`within`: send ``("value", function())``, or ``("error", e)``."""
    child_signals()
    try:
        message = ("value", function())
    except Exception as error:  # noqa: BLE001 - raised again in the parent
        message = ("error", error)
    try:
        sender.send(message)
    except Exception as error:  # noqa: BLE001 - a value or an error that cannot be pickled
        sender.send(("error", RuntimeError(f"{message[0]} not sent: {error!r}")))


def within(function, seconds):
    """``function()`` (any callable: the child inherits it) computed by a forked child given
    ``seconds``: its value; :class:`TimeoutError` if the child is still computing then (it
    is ended), :class:`ChildDied` with its exit code if it ended without a value; an error of
    ``function`` is raised here. In this process, with no time limit, where it cannot
    fork."""
    if not can_fork():
        return function()
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    with fork_safely():
        child = context.Process(target=_send_value, args=(function, sender), daemon=True)
        child.start()
    sender.close()  # the child's end alone is left open: it closes when the child ends
    try:
        if not receiver.poll(seconds):  # a value, or the end of the pipe
            raise TimeoutError(f"still computing after {seconds:g} s")
        try:
            kind, value = receiver.recv()
        except EOFError:
            child.join()
            raise ChildDied(f"the child process ended with exit code {child.exitcode} "
                            "before it had a value") from None
    finally:
        receiver.close()
        if child.is_alive():
            child.kill()
        child.join()
    if kind == "error":
        raise value
    return value


_pending = None  # the function of the Background child being forked, which inherits it


def _compute_pending(_):
    return _pending()


class Background:
    """``function()`` (any callable: the child inherits it, nothing is pickled but its value)
    computed by a forked child while this process goes on; :meth:`result` waits for its
    value and raises its error. In this process, at once, where it cannot fork or has one
    core. A context manager: leaving the block ends a child whose value was not taken."""

    def __init__(self, function):
        global _pending
        self._pool = None
        if cores() < 2:
            self._value = function()
            return
        _pending = function
        try:
            with fork_safely():
                self._pool = multiprocessing.get_context("fork").Pool(
                    1, initializer=_start_child)
        finally:
            _pending = None
        self._async = self._pool.apply_async(_compute_pending, (None,))

    def result(self):
        """The value of ``function()``, once it is computed."""
        if self._pool is not None:
            self._value = self._async.get()
            self._pool.close()
            self._pool.join()
            self._pool = None
        return self._value

    def __enter__(self):
        return self

    def __exit__(self, *error):
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

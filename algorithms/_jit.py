"""How this package compiles its kernels, and where the compiled code is kept.

A kernel is compiled by Numba the first time it is called with new argument types, and the
machine code is cached on disk (``cache=True``): in ``$NUMBA_CACHE_DIR`` if it is set, else in
the ``__pycache__`` folder beside the source, else, when that cannot be written (an
installation in a read-only site-packages), in the user's cache folder (``~/.cache/numba``).
A process that finds a kernel in the cache loads it in milliseconds; compiling the kernels
of the study takes tens of seconds of one core. The cache is keyed on the source file and
the CPU, so it is rebuilt after an update of pcskm or on another kind of machine. Numba
checks only the file of the kernel itself: a kernel keeps its compiled copy of the kernels
it calls from other files, so after editing a kernel in a working copy, delete the cache
(the ``*.nbi`` and ``*.nbc`` files) before timing or comparing results.
"""

import contextlib

from numba import njit
from numba.core import event

# nopython, cached on disk, and without the GIL: the GIL is free for other threads of the
# process (a Dask worker's event loop) while a kernel computes, instead of being taken from
# the computing thread at every wake of theirs.
kernel = njit(cache=True, nogil=True)
# For a kernel whose every division has a divisor it checked to be non-zero: Numba then
# compiles no ZeroDivisionError branch, whose exception path otherwise keeps it from pruning
# the reference counts of the array arguments (two atomic operations per array per call).
# The quotients are the same IEEE divisions.
kernel_checked_divisors = njit(cache=True, nogil=True, error_model="numpy")


def cache_dir():
    """The folder in which this package's kernels are cached (None if Numba does not say)."""
    from . import _kernels

    caches = (getattr(value, "_cache", None) for value in vars(_kernels).values())
    return next((cache.cache_path for cache in caches
                 if getattr(cache, "cache_path", None)), None)


class _Compiling(event.Listener):
    """Numba's ``numba:compile`` events, which it sends only for a kernel it did not find in
    the cache: calls ``on_first()`` at the first one and counts the kernels compiled."""

    def __init__(self, on_first):
        self.on_first = on_first
        self.n_compiled = 0
        self._depth = 0

    def on_start(self, event):
        if self.n_compiled == 0 and self._depth == 0:
            self.on_first()
        self._depth += 1

    def on_end(self, event):
        self._depth -= 1
        self.n_compiled += 1


@contextlib.contextmanager
def watch_compiling(on_first=lambda: None):
    """Inside the block, call ``on_first()`` when Numba starts compiling the first kernel that
    is not in the cache; yields a record whose ``n_compiled`` counts the functions compiled
    (kernels and the Numba internals they use; 0 when everything came from the cache)."""
    listener = _Compiling(on_first)
    with event.install_listener("numba:compile", listener):
        yield listener

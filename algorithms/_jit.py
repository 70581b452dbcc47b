"""How this package compiles its kernels, and where the compiled code is kept.

A kernel is compiled by Numba the first time it is called with new argument types, and the
machine code is cached on disk (``cache=True``): in ``$NUMBA_CACHE_DIR`` if it is set, else in
the per-user cache folder of this pcskm version, ``<user cache>/pcskm/numba/<version>``
(:func:`default_cache_folder`; ``~/.cache/pcskm/numba/0.1.0`` on Linux), outside the
installation, so that reinstalling the same version keeps the compiled kernels. A process
that finds a kernel in the cache loads it in milliseconds; compiling the kernels of the study
takes tens of seconds of one core. Within the folder, Numba keys the cache on the source
file (its folder and the SHA-256 of its content) and the CPU, so it is rebuilt after an update
of pcskm or on another kind of machine. Numba checks only the file of the kernel itself: a
kernel keeps its compiled copy of the kernels it calls from other files, so after editing a
kernel in a working copy, delete the cache (the ``*.nbi`` and ``*.nbc`` files) before timing
or comparing results.
"""

import contextlib
from pathlib import Path

import platformdirs
from numba import njit
from numba.core import caching, config, event

PACKAGE = Path(__file__).resolve().parents[1]  # the folder of the pcskm package
TOP_PACKAGE = __name__.split(".")[0] + "."  # "pcskm.": the modules of this package's kernels


def default_cache_folder():
    """The per-user folder of this pcskm version's compiled kernels when ``NUMBA_CACHE_DIR``
    is not set: ``<user cache>/pcskm/numba/<version>`` (``$XDG_CACHE_HOME/pcskm``, else
    ``~/.cache/pcskm`` on Linux; platformdirs' user cache folder elsewhere)."""
    from pcskm import __version__

    return Path(platformdirs.user_cache_dir("pcskm")) / "numba" / __version__


class VersionCacheLocator(caching.UserProvidedCacheLocator):
    """Numba's cache locator for the kernels of this package when ``NUMBA_CACHE_DIR`` is not
    set: :func:`default_cache_folder`, with Numba's subfolder per source folder. Numba's own
    locators serve every other function, and these too when ``NUMBA_CACHE_DIR`` is set."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(default_cache_folder() / self.get_suitable_cache_subpath(py_file))

    @classmethod
    def from_function(cls, py_func, py_file):
        if config.CACHE_DIR or not Path(py_file).resolve().is_relative_to(PACKAGE):
            return None
        return super(caching.UserProvidedCacheLocator, cls).from_function(py_func, py_file)


if VersionCacheLocator not in caching.CacheImpl._locator_classes:
    # before the kernels below are made: Numba picks a function's locator when it is decorated
    caching.CacheImpl._locator_classes.insert(0, VersionCacheLocator)

# nopython, cached on disk, and without the GIL: the GIL is free for other threads of the
# process (a Dask worker's event loop) while a kernel computes, instead of being taken from
# the computing thread at every wake of theirs.
kernel = njit(cache=True, nogil=True)
# For a kernel whose every division has a divisor it checked to be non-zero, or is meant to
# give IEEE's result for a zero divisor as NumPy's division does (0.0 / 0 is the machine's
# NaN): Numba then compiles no ZeroDivisionError branch, whose exception path otherwise keeps
# it from pruning the reference counts of the array arguments (two atomic operations per
# array per call). The quotients are the same IEEE divisions.
kernel_checked_divisors = njit(cache=True, nogil=True, error_model="numpy")


def cache_dir():
    """The folder in which this package's kernels are cached (None if Numba does not say)."""
    from . import _kernels

    caches = (getattr(value, "_cache", None) for value in vars(_kernels).values())
    return next((cache.cache_path for cache in caches
                 if getattr(cache, "cache_path", None)), None)


class _Compiling(event.Listener):
    """Numba's ``numba:compile`` events, which it sends only for a kernel it did not find in
    the cache: calls ``on_first()`` at the first one, counts the functions compiled and keeps
    the names of this package's kernels among them (``kernels``)."""

    def __init__(self, on_first):
        self.on_first = on_first
        self.n_compiled = 0
        self.kernels = set()
        self._depth = 0

    def on_start(self, event):
        if self.n_compiled == 0 and self._depth == 0:
            self.on_first()
        self._depth += 1

    def on_end(self, event):
        self._depth -= 1
        self.n_compiled += 1
        function = getattr((event.data or {}).get("dispatcher"), "py_func", None)
        if function is not None and function.__module__.startswith(TOP_PACKAGE):
            self.kernels.add(f"{function.__module__}.{function.__qualname__}")


@contextlib.contextmanager
def watch_compiling(on_first=lambda: None):
    """Inside the block, call ``on_first()`` when Numba starts compiling the first kernel that
    is not in the cache; yields a record whose ``n_compiled`` counts the functions compiled
    (kernels and the Numba internals they use; 0 when everything came from the cache) and
    whose ``kernels`` names this package's kernels compiled."""
    listener = _Compiling(on_first)
    with event.install_listener("numba:compile", listener):
        yield listener


def loaded_index_files():
    """The cache index files (``*.nbi``) of this package's kernels that this process has
    loaded or compiled: Numba rewrites a kernel's index when it compiles a new version of it,
    and a process that finds it missing or changed compiles. Only the modules of the package
    imported so far are searched."""
    import sys

    from numba.core.dispatcher import Dispatcher

    found = set()
    for name, module in list(sys.modules.items()):
        if not name.startswith(TOP_PACKAGE) or module is None:
            continue
        for value in list(vars(module).values()):
            cache = getattr(value, "_cache", None)
            if isinstance(value, Dispatcher) and value.signatures and cache is not None:
                index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
                if index is not None:
                    found.add(index)
    return sorted(found)


def cache_target():
    """The machine Numba compiles for, as its cache keys a compiled kernel: the target
    triple, the CPU name and its features (``NUMBA_CPU_NAME``, ``NUMBA_CPU_FEATURES`` when
    set). Nodes of another CPU type sharing a cache folder find other entries in it."""
    from numba.core.registry import cpu_target

    return " ".join(cpu_target.target_context.codegen().magic_tuple())

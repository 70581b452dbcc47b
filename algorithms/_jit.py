"""How this package compiles its kernels."""

from numba import njit

# nopython, cached on disk, and without the GIL: the GIL is free for other threads of the
# process (a Dask worker's event loop) while a kernel computes, instead of being taken from
# the computing thread at every wake of theirs.
kernel = njit(cache=True, nogil=True)

"""Which exceptions of a fit are the method's own, and which are faults of the machine.

A user estimator's fit that raises is stored as a failed fit (status ``error``,
docs/reference/cube-schema.md): the method failed on that cell, and a rerun would fail the
same way. A fault of the machine is not a result: out of memory, a file system that is full,
read-only or failing, too many open files, a lost connection. Such an exception fails the
task instead: its cells stay missing, the run ends non-zero naming it, and the next run
computes them (docs/guide/hpc.md). KeyboardInterrupt and SystemExit are not ``Exception``:
they are never caught as failed fits, and a worker that dies fails its task in Dask.

An ``OSError`` is the machine's by its ``errno`` (:data:`ENVIRONMENTAL_ERRNOS`); any other,
such as a ``FileNotFoundError`` of a file the method itself asks for, is the method's.
"""

import errno

ENVIRONMENTAL_ERRNOS = frozenset(
    getattr(errno, name) for name in (
        "ENOSPC", "EDQUOT", "EIO", "ENOMEM", "EMFILE", "ENFILE", "EROFS", "ESTALE", "EAGAIN",
        "ENOBUFS", "ENOLCK", "ETIMEDOUT", "ENETDOWN", "ENETUNREACH", "ENETRESET",
        "ECONNABORTED", "ECONNRESET", "ECONNREFUSED", "EHOSTDOWN", "EHOSTUNREACH", "EPIPE",
        "EREMOTEIO")
    if hasattr(errno, name))


def is_environmental(error):
    """True when ``error``, raised by a fit, is a fault of the machine rather than of the
    method: a ``MemoryError``, or an ``OSError`` whose errno is in
    :data:`ENVIRONMENTAL_ERRNOS`."""
    if isinstance(error, MemoryError):
        return True
    return isinstance(error, OSError) and error.errno in ENVIRONMENTAL_ERRNOS

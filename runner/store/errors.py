"""The errors of the store: each names the store (and the file or setting) that raised it."""


class IncompatibleStore(ValueError):
    """The store was made with settings that change the results of this spec."""


class StoreBusy(ValueError):
    """Another ``pcskm run`` is writing the store."""


class StoreNotWritable(ValueError):
    """The store, or its lock file, cannot be written (read-only file system, permissions,
    disk full, no file locks)."""


class UncommittedWrites(RuntimeError):
    """The workers' fork of a run's Icechunk session was asked for before the session's
    writes were committed (a fault of the caller, not of the store)."""


class StaleWrites(RuntimeError):
    """A worker's writes made under the token of a run that does not hold the store
    (:mod:`.fencing`): never published."""


class UnsupportedStore(ValueError):
    """The store is named by a URL of a kind pcskm cannot write (docs/reference/cli.md)."""


class NotAStore(ValueError):
    """The path is not a pcskm results cube (a file, or a folder without Zarr metadata)."""


class DamagedStore(ValueError):
    """The store's metadata or layout cannot be read; names the file."""


class DamagedRepository(DamagedStore):
    """An object of an Icechunk repository that pcskm cannot rebuild (a snapshot, a branch's
    ref) is missing or unreadable; names its key and the run tags that lead back to a
    readable version (``pcskm run --from-tag``)."""


class LostReference(FileNotFoundError):
    """A chunk of an Icechunk repository cannot be found because the manifest that holds
    its reference is missing or unreadable; names the manifest's object."""


class StoreChanged(ValueError):
    """The store was replaced (extended) or its metadata rewritten while it was read."""



class StoreUnreachable(ConnectionError):
    """The endpoint of a store on object storage did not answer for the time pcskm waits out
    an outage (:mod:`.outages`); what was committed is kept, and a rerun resumes."""

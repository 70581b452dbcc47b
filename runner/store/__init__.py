"""The results cube's store: one module per job (docs/reference/cube-schema.md, The store's
code), each importing only those listed before it, at the top of the module or inside a
function alike (tests/test_store_layers.py walks the imports). The backends come first and
know bytes, locks and transactions only; the modules that create, open, check, write and
prepare a store come after them and tell a folder from a repository where they differ.

* :mod:`.errors`: the errors a store raises (:class:`IncompatibleStore`, :class:`StoreBusy`,
  :class:`DamagedStore`, ...).
* :mod:`.objects`: the objects of an Icechunk repository in its bucket: which one an error
  names as damaged (a snapshot, a manifest, a branch's ref), the refs read and written where
  Icechunk cannot open the repository.
* :mod:`.schema`: what a store holds: dims, variables, status codes, selection scores,
  chunks and codecs.
* :mod:`.lock`: who may write a store: one run at a time (:func:`store_lock`), where files
  can be written.
* :mod:`.outages`: what went wrong with a store on object storage (no credentials, a
  missing bucket, an unreachable endpoint, ...), and an outage of its endpoint waited out.
* :mod:`.fencing`: a worker's write lands only while its run holds the store: run tokens,
  the staging folder of a folder's workers and the client's publishing of their files.
* :mod:`.notes`: the note of a run in progress: whether its process is gone, whether it
  recorded itself, how a message names it.
* :mod:`.backends.common`: what both backends share: the kinds of commit, the run tag.
* :mod:`.backends.folder`: a store in a folder, and the staging folder its workers write.
* :mod:`.backends.icechunk`: a store in an Icechunk repository on object storage, the run's
  transaction, and the fork of its session that the workers write and the client merges back.
* :mod:`.backends`: where a store lives (:func:`where`): a folder or an Icechunk repository,
  told apart by the store's name.
* :mod:`.digests`: the record of the metadata's digests (:func:`record_metadata`).
* :mod:`.provenance`: which code computed each cell: the ``run_index`` array and each run's
  definitions (docs/reference/cube-schema.md, Code provenance).
* :mod:`.places`: each chunk bound to its place: the record of its digest with its array,
  chunk index and shape.
* :mod:`.layout`: a store's groups and settings, for a spec or as stored, and their merging
  (:func:`merge_layouts`, which refuses a spec that would compute a cell differently).
* :mod:`.create`: creating a store, built beside its path and moved into place.
* :mod:`.metadata`: checking the metadata against its record, and repairing it.
* :mod:`.access`: opening an existing store (:func:`check_store`, :func:`read_layout`,
  :func:`check_runnable`: the schema versions ``pcskm run`` writes).
* :mod:`.integrity`: checking every chunk under a done marker, and repairing what fails
  (:func:`verify`, :func:`repair`).
* :mod:`.writer`: where a cell is written: a task's chunks by the worker that computed it
  (:func:`write_task`), then their ``done`` markers by the client (:class:`DoneMarks`).
* :mod:`.sizes`: the size of a store and of what a worker holds to write a task.
* :mod:`.views`: the store opened: :class:`CubeView`, :class:`Cube`, :func:`open_cube`.
* :mod:`.preparation`: preparing a store for a run (:func:`prepare`).

The public names are imported from here, on first use (:mod:`pcskm._lazy`).
"""

from pcskm._lazy import lazy_exports

_EXPORTS = {
    **dict.fromkeys(["DamagedRepository", "DamagedStore", "IncompatibleStore", "NotAStore",
                     "StaleWrites", "StoreBusy", "StoreChanged", "StoreNotWritable",
                     "StoreUnreachable", "UncommittedWrites", "UnsupportedStore"], ".errors"),
    **dict.fromkeys(["AUC_SCORES", "AUC_SETTING", "CHUNKED_BY", "COMPRESSORS", "CV_SCORES",
                     "ERROR", "FIT_DIMS", "GAP_SCORES", "MISSING", "NOT_APPLICABLE", "RUNNING",
                     "SCHEMA_VERSION", "SCORE_SETTINGS", "SCORE_VARIABLES", "SELECTIONS_TITLE",
                     "STATUS_FLAGS", "TITLE", "WEIGHTS_PER_S",
                     "applicable", "block_chunk", "chunk_region", "chunk_shape",
                     "complete_blocks", "score_bits", "wanted_scores"], ".schema"),
    **dict.fromkeys(["lock_path", "store_lock", "write_error"], ".lock"),
    "where": ".backends",
    "Folder": ".backends.folder",
    **dict.fromkeys(["Repository", "Transaction"], ".backends.icechunk"),
    **dict.fromkeys(["GroupLayout", "Layout", "dataset_groups", "definition_is_sparse",
                     "foreign_nodes", "label_positions", "merge_layouts", "spec_layout"],
                    ".layout"),
    "record_metadata": ".digests",
    **dict.fromkeys(["versions", "write_layout"], ".create"),
    **dict.fromkeys(["check_runnable", "check_store", "open_root", "read_consistently",
                     "read_layout"], ".access"),
    **dict.fromkeys(["Verification", "repair", "verify"], ".integrity"),
    **dict.fromkeys(["DoneMarks", "TaskReceipt", "TaskTarget", "block_records",
                     "carried_scores", "chunks_of", "score_names", "task_target", "write_task"],
                    ".writer"),
    **dict.fromkeys(["WRITE_SECONDS_PER_MIB", "WRITE_SECONDS_PER_TASK", "Sizes", "TooLarge",
                     "available_memory", "binary", "check_sizes", "disk_space", "free_disk",
                     "store_sizes", "write_seconds", "written_bytes"], ".sizes"),
    **dict.fromkeys(["Cube", "CubeView", "open_cube"], ".views"),
    "prepare": ".preparation",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

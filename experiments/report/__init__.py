"""The report of a results cube: the paper's Table 1, the best-s selections,
the performance figures, the Wilcoxon analyses, the feature-weight figures and the paper's
claims next to ours (docs/method/protocol.md §4.1, §9-§12).

``write_report(store, out_dir=None)`` writes ``report.md``, every figure as PNG and every
table as CSV into ``out_dir`` (default ``<store stem>-report`` beside the store), and stores
both best-s selections in ``<store stem>-selections.zarr`` beside the store, or in
``out_dir`` when the store's folder is read-only (the store itself is only read). It works
on a partial cube: missing cells are counted and shown, never averaged. It refuses a store
whose chunks fail verification (:mod:`pcskm.runner.store.integrity`): their values are not shown
as computed. While it writes, ``out_dir`` holds the file ``PARTIAL``, removed once the
report is complete: a report killed or failed midway leaves it.
"""

import logging
from pathlib import Path

from . import baseline as baselines
from . import study
from .aggregate import collect, sidecar_path
from .document import Progress, write_document
from .fits import failed_fits, fitted, open_store, status_codes
from .performance import GRIDS

__all__ = ["collect", "failed_fits", "fitted", "open_store", "sidecar_path", "status_codes",
           "write_report"]

log = logging.getLogger("pcskm")


# The file that marks a report folder being written: made before the first file of the
# report, removed after the last (docs/reference/cli.md, pcskm report). A folder that keeps
# it holds a report stopped or failed midway, its files a mix of old and new.
PARTIAL = "PARTIAL"
PARTIAL_TEXT = ("This report folder is incomplete: pcskm report was stopped or failed while "
                "writing it, and its files may mix an older report's with a newer one's. "
                "Write it again with pcskm report; this file goes when a report is "
                "complete.\n")


class OutputNotWritable(ValueError):
    """The report's folder cannot be written."""


def default_out_dir(store):
    """``<store stem>-report`` beside the store."""
    store = Path(store)
    return store.with_name(store.stem + "-report")


def _sidecar_for(store, out):
    """Where the selections go: beside the store if its folder (and an existing sidecar)
    can be written, else into ``out``."""
    from pcskm.runner.locations import is_url
    from pcskm.runner.store import where, write_error

    if is_url(str(store)):  # a store on object storage: the selections go with the report
        return out / sidecar_path(where(store).name).name
    beside = sidecar_path(store)
    error = write_error(beside.parent) or (write_error(beside) if beside.is_dir() else None)
    if error is None:
        return beside
    log.info("cannot write beside the store (%s): the selections go to %s", error.strerror,
             out / beside.name)
    return out / beside.name


def write_report(store, out_dir=None, focus=None, baseline=None, grids="primary"):
    """Write the report of the cube at ``store`` into ``out_dir``; returns the path of
    ``report.md``. ``focus``: the algorithm Analysis 1 compares with every other one (default:
    the spec's ``[report] focus``, else PCSKM; :mod:`.study`). ``baseline``: a report folder
    whose algorithms the store has not computed are compared with the store's
    (:mod:`.baseline`). ``grids``: the performance grids drawn, those of the primary
    selection (``"primary"``) or of every main selection (``"all"``); the values of every
    grid are written as CSV either way. Raises ``DamagedStore`` if the store fails
    verification, ValueError for a ``focus`` that is not an algorithm of the cube, a
    ``baseline`` of another protocol or another ``grids`` (before anything is written). A
    store swapped by another run while it is read is read again
    (:func:`pcskm.runner.store.access.read_consistently`)."""
    from pcskm.runner.store import check_store, read_consistently, where, write_error

    if grids not in GRIDS:
        raise ValueError(f"grids must be one of {', '.join(GRIDS)}, not {grids!r}")
    store = where(store).pinned()  # a store on object storage read at one snapshot
    check_store(store)  # before the report folder is made: not a cube, damaged metadata
    out = Path(out_dir) if out_dir is not None else default_out_dir(store)
    if focus is not None:
        study.check_focus(open_store(store), focus)
    if baseline is not None:
        baseline = baselines.read(baseline)
        baselines.check(open_store(store), baseline)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputNotWritable(f"cannot create the report folder {out} ({error.strerror}); "
                                "give another one with --out") from None
    error = write_error(out)
    if error is not None:
        raise OutputNotWritable(f"cannot write the report into {out} ({error.strerror}); "
                                "give another folder with --out")
    sidecar = _sidecar_for(store, out)

    def write():
        progress = Progress()
        return write_document(_verified_results(store, sidecar, progress, baseline), out,
                              focus=focus, progress=progress, grids=grids)

    marker = out / PARTIAL
    marker.write_text(PARTIAL_TEXT)
    written = read_consistently(store, write)
    marker.unlink()  # the last file of the report is written, the figures' too
    return written


def _verified_results(store, sidecar, progress, baseline=None):
    """The results of the store, which must pass verification, with the algorithms of
    ``baseline`` (:func:`baselines.read`) joined."""
    from pcskm.runner.store import DamagedStore, verify

    found = verify(store)
    if not found.ok:  # refused in its own lines, before any progress line
        raise DamagedStore(f"{found.describe()}\npcskm report shows no value it cannot verify")
    progress("the store's chunks verified")
    progress("reading the cube and selecting s")
    results = collect(open_store(store), sidecar=sidecar)
    if baseline is not None:
        baselines.join(results, baseline)
    return results

"""The report of a results cube: the paper's Table 1, the best-s selections,
the performance figures, the Wilcoxon analyses, the feature-weight figures and the paper's
claims next to ours (docs/method/protocol.md §4.1, §9-§12).

``write_report(store, out_dir=None)`` writes ``report.md``, every figure as PNG and every
table as CSV into ``out_dir`` (default ``<store stem>-report`` beside the store), and stores
both best-s selections in ``<store stem>-selections.zarr`` beside the store. It works on a
partial cube: missing cells are counted and shown, never averaged.
"""

from pathlib import Path

from .aggregate import collect, sidecar_path
from .document import write_document
from .fits import open_store

__all__ = ["collect", "open_store", "sidecar_path", "write_report"]


def default_out_dir(store):
    """``<store stem>-report`` beside the store."""
    store = Path(store)
    return store.with_name(store.stem + "-report")


def write_report(store, out_dir=None):
    """Write the report of the cube at ``store`` into ``out_dir``; returns the path of
    ``report.md``."""
    out = Path(out_dir) if out_dir is not None else default_out_dir(store)
    out.mkdir(parents=True, exist_ok=True)
    results = collect(open_store(store))
    return write_document(results, out)

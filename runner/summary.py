"""``pcskm status``: how much of a cube is computed, per data set and algorithm."""

import numpy as np
import zarr

from pcskm.algorithms._result import FAILED

from .cube import NOT_APPLICABLE, read_layout

FAILED_FLAGS = [code + 1 for code in FAILED]  # cube status codes of failed fits


def counts(path):
    """Rows ``(dataset, algorithm, cells, done, missing, fits, failed)``: cells are (init,
    kind, percent, run, fold) entries that apply; fits count every s of the done cells."""
    layout = read_layout(path)
    root = zarr.open_group(str(path), mode="r")
    rows = []
    for name, group_layout in layout.groups.items():
        group = root[name]
        status, done = group["status"], group["done"][:]
        for a, algorithm in enumerate(group_layout.algorithms):
            st = status[a]  # (init, kind, percent, run, fold, sparsity)
            fit_applies = st != NOT_APPLICABLE
            cell_applies = fit_applies.any(axis=-1)
            cell_done = cell_applies & done[a][..., None].astype(bool)
            fits = (fit_applies & cell_done[..., None]).sum()
            failed = (np.isin(st, FAILED_FLAGS) & cell_done[..., None]).sum()
            rows.append((name, algorithm, int(cell_applies.sum()), int(cell_done.sum()),
                         int((cell_applies & ~cell_done).sum()), int(fits), int(failed)))
    return rows


def status_text(path):
    """The ``pcskm status`` table."""
    root = zarr.open_group(str(path), mode="r")
    header = ("dataset", "algorithm", "cells", "done", "missing", "fits", "failed")
    rows = counts(path)
    total = ("total", "", *(sum(row[i] for row in rows) for i in range(2, 7)))
    table = [header, *[tuple(map(str, row)) for row in rows], tuple(map(str, total))]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = [f"store {path}: spec {root.attrs.get('spec_name')} "
             f"(hash {str(root.attrs.get('spec_hash'))[:12]})",
             "cells = (init, kind, percent, run, fold) entries; fits = one per s of the done "
             "cells; failed = empty_cluster or degenerate_weights (F = NaN)"]
    for i, row in enumerate(table):
        lines.append("  ".join(cell.ljust(w) if j < 2 else cell.rjust(w)
                               for j, (cell, w) in enumerate(zip(row, widths, strict=True))))
        if i == 0 or i == len(table) - 2:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)

"""The failed fits of user estimators in a store (status ``error``) and their messages
(docs/reference/cube-schema.md, Fit errors), for ``pcskm status`` and the report.

The ``fit_error`` variable keeps the first message of each done (algorithm, init, kind,
percent, run); the ``status`` variable counts the fits. Only the blocks marked done are
read: a block computed but not marked done is computed again by the next run.
"""

import numpy as np
import zarr

from .cube import ERROR

COLUMNS = ["dataset", "algorithm", "init", "kind", "percent", "error_fits", "first_error"]


def fit_errors(path):
    """One row per (data set, algorithm, init, kind, percent) of the store at ``path`` with
    a failed user fit in a done run: ``error_fits`` (fits with status error, one per s of a
    sparse estimator) and ``first_error`` (the message of the first such run, in run order:
    the exception's type and text). An empty frame when there is none."""
    root = zarr.open_group(str(path), mode="r")
    rows = []
    for name, group in root.groups():
        if "fit_error" not in group:
            continue
        labels = {dim: [str(v) for v in group[dim][:]] for dim in ("algorithm", "init", "kind")}
        percents = group["percent"][:]
        messages = np.asarray(group["fit_error"][...], dtype=object)
        done = group["done"][...] > 0
        blocks = np.argwhere(((messages != "") & done).any(axis=-1))
        for a, i, k, p in blocks:
            status = group["status"][a, i, k, p]  # (run, fold, sparsity)
            runs = done[a, i, k, p]
            first = next(str(m) for m, ok in zip(messages[a, i, k, p], runs, strict=True)
                         if ok and m)
            rows.append((name, labels["algorithm"][a], labels["init"][i], labels["kind"][k],
                         float(percents[p]), int((status[runs] == ERROR).sum()), first))
    import pandas as pd  # not at start-up: pcskm status does without it

    return pd.DataFrame(rows, columns=COLUMNS)


def error_lines(path):
    """Per algorithm with failed fits, one line of ``pcskm status``: their count over the
    store and the first message (in data set, init, kind, percent order)."""
    table = fit_errors(path)
    lines = []
    for algorithm, rows in table.groupby("algorithm", sort=False):
        first = rows.iloc[0]
        lines.append(f"{algorithm}: {int(rows.error_fits.sum())} failed fits (status error) "
                     f"in {len(rows)} blocks; first: {first.first_error} ({first.dataset}, "
                     f"{first.init}, {first.kind}, {first.percent:g} %)")
    return lines

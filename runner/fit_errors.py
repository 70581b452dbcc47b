"""The failed fits of user estimators in a store (status ``error``) and their messages
(docs/reference/cube-schema.md, Fit errors), for ``pcskm status`` and the report.

The ``fit_error`` variable keeps the first message of each done (algorithm, init, kind,
percent, run); the ``status`` variable counts the fits. Only the blocks marked done are
read: a block computed but not marked done is computed again by the next run.
"""

import numpy as np

from .store import ERROR

COLUMNS = ["dataset", "algorithm", "init", "kind", "percent", "error_fits", "first_error"]


def fit_errors(path):
    """One row per (data set, algorithm, init, kind, percent) of the store at ``path`` with
    a failed user fit in a done run: ``error_fits`` (fits with status error, one per s of a
    sparse estimator) and ``first_error`` (the message of the first such run, in run order:
    the exception's type and text). An empty frame when there is none."""
    import pandas as pd  # not at start-up: pcskm status does without it (error_lines)

    return pd.DataFrame(_error_rows(path), columns=COLUMNS)


def _error_rows(path):
    """The rows of :func:`fit_errors`, as tuples in the order of ``COLUMNS``."""
    from .store import dataset_groups, open_root

    root = open_root(path)
    rows = []
    for name, group in dataset_groups(root):
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
    return rows


def error_lines(path):
    """Per algorithm with failed fits, one line of ``pcskm status``: their count over the
    store and the first message (in data set, init, kind, percent order)."""
    by_algorithm = {}  # in the order of their first row
    for row in _error_rows(path):
        by_algorithm.setdefault(row[1], []).append(dict(zip(COLUMNS, row, strict=True)))
    lines = []
    for algorithm, rows in by_algorithm.items():
        first = rows[0]
        lines.append(f"{algorithm}: {sum(r['error_fits'] for r in rows)} failed fits (status "
                     f"error) in {len(rows)} blocks; first: {first['first_error']} "
                     f"({first['dataset']}, {first['init']}, {first['kind']}, "
                     f"{first['percent']:g} %)")
    return lines

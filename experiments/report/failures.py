"""Failed fits (docs/method/protocol.md §9, §11): per data set, algorithm, init, kind and
percentage, the computed fits that failed (status empty_cluster or degenerate_weights), the
computed cells with no successful fit at any s, and the failed share of the cells behind each
plotted point (at the selected s, per selection)."""

import pandas as pd
import xarray as xr

from .families import ALL_DATASETS
from .fits import quiet

CELL = ("run", "fold")
KEYS = ["algorithm", "init", "kind", "percent"]
COUNTS = ["cells", "fits", "failed_fits", "cells_all_failed"]


def table(name, fits):
    """One row per (algorithm, init, kind, percent) of data set ``name`` with expected
    cells: computed cells, computed fits (one per cell and applicable s), failed fits, and
    the computed cells whose every applicable fit failed."""
    fitted = fits.applies & fits.computed
    all_failed = (fits.failed | ~fits.applies).all("sparsity") & fits.computed
    counts = xr.Dataset({
        "expected": fits.expected.sum(CELL),
        "cells": fits.computed.sum(CELL),
        "fits": fitted.sum(("sparsity", *CELL)),
        "failed_fits": fits.failed.sum(("sparsity", *CELL)),
        "cells_all_failed": all_failed.sum(CELL),
    })
    frame = counts.to_dataframe().reset_index()
    frame = frame[frame.expected > 0].drop(columns="expected")
    frame.insert(0, "dataset", name)
    frame[["algorithm", "init", "kind"]] = frame[["algorithm", "init", "kind"]].astype(str)
    return frame[["dataset", *KEYS, *COUNTS]].reset_index(drop=True)


def point_fraction(data):
    """The failed share of the computed cells behind each point of the family aggregates
    ``data`` (``Results.families``): n_failed / n_cells, NaN where nothing is computed."""
    with quiet():
        return data.n_failed / data.n_cells.where(data.n_cells > 0)


def family_table(results):
    """``failures.csv``: the counts of :func:`table` summed over the members of each
    reported data set (the digits subsets), the failed share of the fits, and per selection
    the failed share of the cells behind the plotted point (``failed_fraction_<selection>``:
    the selected s of each cell or setting)."""
    if not results.failures:
        return pd.DataFrame()
    member_of = {name: label for label, members in results.family_members.items()
                 for name in members}
    rows = pd.concat(results.failures, ignore_index=True)
    rows["family"] = rows.dataset.map(member_of)
    frame = rows.groupby(["family", *KEYS], sort=False)[COUNTS].sum().reset_index()
    with quiet():
        frame["failed_fit_rate"] = frame.failed_fits / frame.fits.where(frame.fits > 0)
    if results.families is not None:
        points = point_fraction(results.families).to_dataframe(name="fraction").reset_index()
        points["selection"] = "failed_fraction_" + points.selection.astype(str)
        points = points.pivot(index=["family", *KEYS], columns="selection",
                              values="fraction").reset_index()
        points.columns.name = None
        for key in ("family", "algorithm", "init", "kind"):
            points[key] = points[key].astype(str)
        frame = frame.merge(points, on=["family", *KEYS], how="left")
    frame.insert(0, "dataset", frame.family.map(results.family_labels))
    return frame.drop(columns="family")


def summary(table):
    """Per (data set, algorithm) with failures, then per algorithm over every data set
    (``dataset`` = "all data sets"): fits, failed fits and their share, the setting (init,
    kind, percentage; and data set in the totals) with the largest share, and the cells
    with no successful fit at any s."""
    failed = table[table.failed_fits > 0]
    rows = []
    for (dataset, algorithm), group in failed.groupby(["dataset", "algorithm"], sort=False):
        rows.append(_summary_row(dataset, algorithm, group,
                                 table[(table.dataset == dataset)
                                       & (table.algorithm == algorithm)]))
    for algorithm, group in failed.groupby("algorithm", sort=False):
        rows.append(_summary_row(ALL_DATASETS, algorithm, group,
                                 table[table.algorithm == algorithm]))
    return pd.DataFrame(rows)


def _summary_row(dataset, algorithm, failed, everything):
    worst = failed.loc[failed.failed_fit_rate.idxmax()]
    where = f"{worst.dataset} / " if dataset == ALL_DATASETS else ""
    return {
        "dataset": dataset, "algorithm": algorithm,
        "fits": int(everything.fits.sum()), "failed_fits": int(failed.failed_fits.sum()),
        "failed_share": failed.failed_fits.sum() / everything.fits.sum(),
        "worst_setting": f"{where}{worst.init} / {worst.kind} / {worst.percent:g} %",
        "worst_share": float(worst.failed_fit_rate),
        "cells_all_failed": int(failed.cells_all_failed.sum()),
    }


def gaps(data):
    """The plotted points whose every computed cell failed (drawn as gaps): one row per
    (selection, family, init, kind, algorithm) with their percentages."""
    if data is None:
        return pd.DataFrame()
    frame = xr.Dataset({"n_cells": data.n_cells, "n_failed": data.n_failed}).to_dataframe()
    frame = frame.reset_index()
    frame = frame[(frame.n_cells > 0) & (frame.n_failed == frame.n_cells)]
    if frame.empty:
        return pd.DataFrame(columns=["selection", "family", "init", "kind", "algorithm",
                                     "percentages"])
    keys = ["selection", "family", "init", "kind", "algorithm"]
    for key in keys:
        frame[key] = frame[key].astype(str)
    order = {str(s): i for i, s in enumerate(data.selection.values)}
    frame = frame.sort_values("selection", key=lambda s: s.map(order), kind="stable")
    return frame.groupby(keys, sort=False).percent.agg(
        lambda p: ", ".join(f"{v:g}" for v in sorted(p))).rename("percentages").reset_index()

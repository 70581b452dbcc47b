"""How often the per-cell scores tie, and which s each selection picks (docs/method/selection.md
§1, §4): the subject of the tie rules. Counted per data set, summed over the subsets of a
family.

* :func:`tie_counts`: per (algorithm, init, kind, percent) of a sparse algorithm and per
  score (``satisfied``, ``cv_score``, ``auc_score``, ``gap``) the cube holds, the computed
  cells with a score, those where two or more s share the largest score, the tied s and the
  scored s (summed over the cells), and the cells where every scored s ties.
* :func:`choice_counts`: per sparse algorithm, selection and s, the computed cells whose
  selected s is that s (the paper-style and fixed-loo selections choose one s for all the
  cells of a setting or data set: each cell counted).
* :func:`threshold_counts`: per sparse algorithm, selection and kind, the computed cells
  with a selected s and those whose selected s thresholds (more weights exactly 0 there than
  at the cell's least sparse fit, ``n_zero_weights``): how often a selection makes use of
  sparsity.
* :func:`cv_sensitivity`: per data set and sparse algorithm, cv's tie share beside the mean
  F under cv and its tie rules (docs/method/selection.md §2.5).
"""

import numpy as np
import pandas as pd
import xarray as xr

from pcskm.algorithms._selection_kernels import top_counts_rows
from pcskm.runner.store import AUC_SCORES, CV_SCORES, GAP_SCORES

from .families import ALL_DATASETS
from .fits import CELL_DIMS, FIT_DIMS, ZERO_WEIGHTS, quiet
from .selection import by_selection, chosen_entries, covers, selected_names

CELL = ("run", "fold")
KEYS = ["algorithm", "init", "kind", "percent"]
# score variable -> (the selection that reads it with ties to the smallest s, its score bit)
# (the AUC's choice is not broken by a tie rule, docs/method/selection.md §7.2: its ties say
# how often the best AUC fails to single out one s)
SCORES = {"satisfied": ("honest", 0), "cv_score": ("cv", CV_SCORES),
          "auc_score": ("auc", CV_SCORES | AUC_SCORES), "gap": ("gap", GAP_SCORES)}
COUNTS = ["cells", "tied_cells", "all_tied_cells", "tied_s", "scored_s"]


def tie_counts(name, fits):
    """The tie counts of data set ``name`` (see the module docstring): one row per (score,
    sparse algorithm, init, kind, percent) with expected cells."""
    sparse = fits.algorithm[fits.sparse]
    usable = (fits.applies & fits.computed & ~fits.failed).sel(algorithm=sparse)
    expected = fits.expected.sel(algorithm=sparse)
    frames = []
    for score, (selection, bit) in SCORES.items():
        if score not in fits:
            continue
        n_top, n_scored = _top_counts(fits[score].sel(algorithm=sparse),
                                      usable & covers(fits, bit).sel(algorithm=sparse))
        counts = xr.Dataset({
            "expected": expected.sum(CELL),
            "cells": (n_scored > 0).sum(CELL),
            "tied_cells": (n_top > 1).sum(CELL),
            "all_tied_cells": ((n_top == n_scored) & (n_scored > 1)).sum(CELL),
            "tied_s": n_top.sum(CELL),
            "scored_s": n_scored.sum(CELL),
        })
        frame = counts.to_dataframe().reset_index()
        frames.append(frame[frame.expected > 0].drop(columns="expected").assign(
            score=score, selection=selection))
    if not frames:
        return pd.DataFrame(columns=["dataset", "score", "selection", *KEYS, *COUNTS])
    table = pd.concat(frames, ignore_index=True)
    table.insert(0, "dataset", name)
    table[["algorithm", "init", "kind"]] = table[["algorithm", "init", "kind"]].astype(str)
    return table[["dataset", "score", "selection", *KEYS, *COUNTS]]


def _top_counts(score, usable):
    """Per cell: how many of the ``usable`` s share the largest non-NaN ``score`` and how
    many have one (``top_counts_rows``), as DataArrays with the cell dims."""
    values = np.ascontiguousarray(score.transpose(*FIT_DIMS).values)
    mask = np.ascontiguousarray(usable.transpose(*FIT_DIMS).values)
    n_top, n_scored = (np.empty(values.shape[:-1], np.int64) for _ in range(2))
    top_counts_rows(values.reshape(-1, values.shape[-1]), mask.reshape(-1, mask.shape[-1]),
                    n_top.reshape(-1), n_scored.reshape(-1))
    coords = {dim: score[dim] for dim in CELL_DIMS}
    return (xr.DataArray(n_top, coords=coords, dims=CELL_DIMS),
            xr.DataArray(n_scored, coords=coords, dims=CELL_DIMS))


CHOICE_COLUMNS = ["dataset", "algorithm", "selection", "s", "cells"]


def chosen_cells(fits, selected):
    """Per selection of ``selected`` (``selection.select``, stacked along ``selection``) and
    cell of a sparse algorithm: whether it is computed, covered by the selection's score and
    has a selected s (``chosen``), and the grid entry of that s (-1 elsewhere), with the dims
    ``selection`` and :data:`CELL_DIMS`; None when ``selected`` holds no selection. What
    :func:`choice_counts` and :func:`threshold_counts` count, computed once for both."""
    if not selected_names(selected):
        return None
    sparse = fits.algorithm[fits.sparse]
    s, computed, _expected = (values.sel(algorithm=sparse)
                              for values in by_selection(selected, "s"))
    chosen = (computed & s.notnull()).transpose("selection", *CELL_DIMS)
    entries = chosen_entries(s.where(chosen), fits.sparsity, True)
    return chosen, entries.transpose("selection", *CELL_DIMS)


def choice_counts(name, fits, chosen):
    """Per sparse algorithm, selection and s of the grid: the computed cells of data set
    ``name`` (covered by the selection's score) whose selected s is that s; ``chosen``: the
    :func:`chosen_cells` of the selections."""
    if chosen is None:
        return _choice_table(name, [])
    chosen, entries = chosen
    n_sparsity = fits.sizes["sparsity"]
    rows = np.arange(chosen.sizes["selection"] * chosen.sizes["algorithm"])
    at = rows.reshape(chosen.shape[:2] + (1,) * (chosen.ndim - 2)) * n_sparsity + entries.values
    counts = np.bincount(at[entries.values >= 0], minlength=len(rows) * n_sparsity).reshape(
        len(rows), n_sparsity)[:, fits.sparsity.notnull().values]
    counts = xr.DataArray(
        counts.reshape(chosen.shape[:2] + counts.shape[-1:]),
        coords={"selection": chosen.selection, "algorithm": chosen.algorithm,
                "sparsity": fits.sparsity[fits.sparsity.notnull()]},
        dims=("selection", "algorithm", "sparsity"))
    return _choice_table(name, [counts.to_dataframe(name="cells").reset_index()])


THRESHOLD_COLUMNS = ["dataset", "algorithm", "selection", "kind", "cells", "thresholding_cells"]


def threshold_counts(name, fits, chosen):
    """Per sparse algorithm, selection (``chosen``: the :func:`chosen_cells` of the
    selections) and kind: the computed cells of data set ``name`` (covered by the selection's
    score) with a selected s, and those whose selected s thresholds: more weights exactly 0
    there (``n_zero_weights``) than at the cell's least sparse fit that did not fail, so that
    a feature no s weights (a constant one) does not count. Empty for a cube without the
    per-s weights. (fixed-loo, chosen across data sets, is not counted.)"""
    if ZERO_WEIGHTS not in fits or chosen is None:
        return pd.DataFrame(columns=THRESHOLD_COLUMNS)
    sparse = fits.algorithm[fits.sparse]
    zeros = fits[ZERO_WEIGHTS].sel(algorithm=sparse)
    usable = (fits.applies & fits.computed & ~fits.failed).sel(algorithm=sparse)
    floor = zeros.where(usable).min("sparsity")
    thresholded = (zeros > floor).transpose(*CELL_DIMS, "sparsity").values
    chosen, entries = chosen
    at = entries.values.clip(min=0)  # -1 (no s chosen) only outside ``chosen``
    thresholds = chosen & chosen.copy(data=np.take_along_axis(
        thresholded[None], at[..., None], axis=-1)[..., 0])
    others = [d for d in CELL_DIMS if d not in ("algorithm", "kind")]
    counts = xr.Dataset({"cells": chosen.sum(others),
                         "thresholding_cells": thresholds.sum(others)})
    table = counts.to_dataframe(dim_order=["selection", "algorithm", "kind"]).reset_index()
    table.insert(0, "dataset", name)
    table[["algorithm", "kind"]] = table[["algorithm", "kind"]].astype(str)
    return table[THRESHOLD_COLUMNS]


def fixed_choice_counts(name, summary, s):
    """The fixed-loo rows of :func:`choice_counts` from the data set's fixed-loo aggregates
    ``summary`` (``fixed_s.fixed_summary``) and its fixed s per algorithm ``s``: every
    computed cell of an algorithm at its s."""
    sparse = s.algorithm[s.notnull()]
    cells = summary.n_cells.sel(algorithm=sparse).sum(["init", "kind", "percent"])
    frame = xr.Dataset({"cells": cells, "s": s.sel(algorithm=sparse)}).to_dataframe()
    return _choice_table(name, [frame.reset_index().assign(selection="fixed-loo")])


def _choice_table(name, rows):
    if not rows:
        return pd.DataFrame(columns=CHOICE_COLUMNS)
    table = pd.concat(rows, ignore_index=True).rename(columns={"sparsity": "s"})
    table.insert(0, "dataset", name)
    table["algorithm"] = table.algorithm.astype(str)
    return table[CHOICE_COLUMNS]


def _by_reported_dataset(tables, member_of, labels):
    """The rows of ``tables`` (a list of tables) with each member data set replaced by the
    label of the data set it is reported under (empty without rows)."""
    if not tables:
        return pd.DataFrame()
    rows = pd.concat(tables, ignore_index=True)
    if not rows.empty:
        rows["dataset"] = rows.dataset.map(member_of).map(labels)
    return rows


def family_ties(tables, member_of, labels):
    """``selection_ties.csv``: the counts of :func:`tie_counts` (a list of tables) summed
    over the members of each reported data set, with the share of tied cells, the mean
    number of tied s and of scored s per cell, and the share of cells tied over every
    scored s."""
    rows = _by_reported_dataset(tables, member_of, labels)
    if rows.empty:
        return rows
    keys = ["dataset", "score", "selection", *KEYS]
    frame = rows.groupby(keys, sort=False)[COUNTS].sum().reset_index()
    return frame.assign(**shares(frame))


def shares(frame):
    """The shares and means of tie counts (columns of :data:`COUNTS`): ``tied_share``,
    ``all_tied_share``, ``mean_tied_s`` and ``mean_scored_s`` (NaN without a cell)."""
    cells = frame.cells.where(frame.cells > 0)
    return {"tied_share": frame.tied_cells / cells, "all_tied_share": frame.all_tied_cells / cells,
            "mean_tied_s": frame.tied_s / cells, "mean_scored_s": frame.scored_s / cells}


def family_choices(tables, member_of, labels):
    """``selection_choices.csv``: the counts of :func:`choice_counts` summed over the members
    of each reported data set, with each s's ``share`` of the cells of its (data set,
    algorithm, selection); the s that no cell chose are left out."""
    rows = _by_reported_dataset(tables, member_of, labels)
    if rows.empty:
        return rows
    keys = ["dataset", "algorithm", "selection"]
    frame = rows.groupby([*keys, "s"], sort=False).cells.sum().reset_index()
    total = frame.groupby(keys, sort=False).cells.transform("sum")
    frame["share"] = frame.cells / total.where(total > 0)
    return frame[frame.cells > 0].reset_index(drop=True)


def family_thresholds(tables, member_of, labels):
    """``selection_thresholds.csv``: the counts of :func:`threshold_counts` summed over the
    members of each reported data set, then per (algorithm, selection, kind) over every data
    set (``dataset`` = "all data sets"), with the ``thresholding_share`` of the cells."""
    rows = _by_reported_dataset(tables, member_of, labels)
    if rows.empty:
        return rows
    keys = ["dataset", "algorithm", "selection", "kind"]
    pooled = rows.assign(dataset=ALL_DATASETS)
    frame = pd.concat([rows, pooled]).groupby(keys, sort=False)[
        ["cells", "thresholding_cells"]].sum().reset_index()
    frame["thresholding_share"] = frame.thresholding_cells / frame.cells.where(frame.cells > 0)
    return frame


def most_chosen(choices):
    """Per (data set, algorithm, selection): the most chosen s (the smaller on ties) and its
    share of the cells."""
    if choices.empty:
        return pd.DataFrame(columns=["dataset", "algorithm", "selection", "s", "share"])
    order = choices.sort_values(["share", "s"], ascending=[False, True], kind="stable")
    return order.groupby(["dataset", "algorithm", "selection"], sort=False).head(1)[
        ["dataset", "algorithm", "selection", "s", "share"]]


def summary(ties):
    """Per (data set, algorithm, score), pooled over inits, kinds and percentages, then per
    (algorithm, score) pooled over every data set too (``dataset`` = "all data sets"): the
    cells, the share tied, the mean tied and scored s per cell and the share tied over every
    scored s."""
    if ties.empty:
        return ties
    keys = ["dataset", "algorithm", "score"]
    pooled = ties.assign(dataset=ALL_DATASETS)
    frame = pd.concat([ties, pooled]).groupby(keys, sort=False)[COUNTS].sum().reset_index()
    frame = frame.assign(**shares(frame))
    return frame[[*keys, "cells", "tied_share", "mean_tied_s", "mean_scored_s",
                  "all_tied_share"]]


CV_RULES = ("cv", "cv-smallest", "cv-median", "cv-largest", "oracle")


def cv_sensitivity(summary_table, family_results, labels):
    """Per (data set, sparse algorithm) of ``summary_table`` (:func:`summary`) with a CV
    score: the share of cells where cv ties and the mean number of tied s, then the mean F
    (over inits, kinds and percentages of the family aggregates ``family_results``, dims
    (family, selection, algorithm, ...), its families shown by ``labels``) under cv, its
    three tie rules and the oracle. Empty without CV scores."""
    columns = ["dataset", "algorithm", "tied_share", "mean_tied_s", *CV_RULES]
    if summary_table.empty or family_results is None:
        return pd.DataFrame(columns=columns)
    cv = summary_table[(summary_table.score == "cv_score") & (summary_table.cells > 0)]
    rules = [rule for rule in CV_RULES if rule in family_results.selection.values]
    if cv.empty or "cv" not in rules:
        return pd.DataFrame(columns=columns)
    with quiet():
        f = family_results.f_mean.sel(selection=rules).mean(["init", "kind", "percent"])
    frame = f.to_dataframe().f_mean.unstack("selection").reset_index().rename(
        columns={"family": "dataset"})
    frame["dataset"] = frame.dataset.map(labels)
    pooled = frame.assign(dataset=ALL_DATASETS).groupby(
        ["dataset", "algorithm"], sort=False)[rules].mean().reset_index()
    frame = pd.concat([frame, pooled], ignore_index=True)
    frame["algorithm"] = frame.algorithm.astype(str)
    table = cv[["dataset", "algorithm", "tied_share", "mean_tied_s"]].merge(
        frame, on=["dataset", "algorithm"], how="left")
    return table[[c for c in columns if c in table.columns]]

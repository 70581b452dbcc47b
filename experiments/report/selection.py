"""Best-s selection (docs/method/protocol.md §9) and the aggregates of one selection.

Both selections treat every algorithm alike on its applicable s entries: a non-sparse
algorithm has one entry (s = NaN), so its "selection" is its only fit.

* paper-style (§9.1): per (algorithm, init, kind, percent), the s with the largest Fbar =
  nanmean of F over the computed (run, fold) cells; NaN excluded; ties -> smallest s.
* honest (§9.2): per (algorithm, init, kind, percent, run, fold), the s whose labels satisfy
  the largest fraction of the cell's sampled constraints (``satisfied``); failed fits
  excluded; ties -> smallest s. SKM is selected the same way although it did not use them.

Aggregates (§9): Fbar = nanmean over (run, fold) of F at the selected s; the standard
deviation is over runs of the per-run mean over folds; every aggregate carries its counts of
computed, expected and failed cells. For a family of subsets (digits), every step runs per
subset and the aggregates are then averaged over the subsets.
"""

import numpy as np
import xarray as xr

from .fits import quiet

SELECTIONS = ("paper", "honest")
CELL = ("run", "fold")
SELECTION_TITLES = {
    "paper": "paper-style best s (largest mean test F; optimistic)",
    "honest": "honest best s (most training constraints satisfied, per run and fold)",
}


def first_argmax(values, dim):
    """Position of the largest non-NaN value along ``dim`` (the first one on ties) and
    whether there is any non-NaN value."""
    found = values.notnull().any(dim)
    index = values.fillna(-np.inf).argmax(dim)
    return index, found


def _at(values, index, dim):
    return values.isel({dim: index}).drop_vars(dim)


def paper_selection(fits):
    """§9.1: ``s`` (algorithm, init, kind, percent), NaN when nothing was selected (and for
    the non-sparse algorithms), and ``f_score`` at that s per (run, fold)."""
    f = fits.f_score.where(fits.applies & fits.computed)
    with quiet():
        fbar = f.mean(CELL)
    index, found = first_argmax(fbar, "sparsity")
    return xr.Dataset({
        "s": _at(fits.sparsity, index, "sparsity").where(found),
        "f_score": _at(f, index, "sparsity").where(found),
    })


def honest_selection(fits):
    """§9.2: ``s`` and ``f_score`` per (algorithm, init, kind, percent, run, fold); NaN where
    every s failed or the cell is not computed."""
    usable = fits.applies & fits.computed & ~fits.failed
    key = xr.where(fits.sparse, fits.satisfied, 0.0).where(usable)
    index, found = first_argmax(key, "sparsity")
    f = fits.f_score.where(fits.applies & fits.computed)
    return xr.Dataset({
        "s": _at(fits.sparsity, index, "sparsity").where(found),
        "f_score": _at(f, index, "sparsity").where(found),
    })


def select(fits):
    """Both selections of one data set: a Dataset with ``paper_s``, ``paper_f``,
    ``honest_s``, ``honest_f``, ``computed`` and ``expected`` (what the sidecar store
    holds)."""
    paper, honest = paper_selection(fits), honest_selection(fits)
    return xr.Dataset({
        "paper_s": paper.s, "paper_f": paper.f_score,
        "honest_s": honest.s, "honest_f": honest.f_score,
        "computed": fits.computed, "expected": fits.expected,
    })


def summarise(f_score, computed, expected):
    """Aggregates over (run, fold) of F at the selected s: ``f_mean`` (nanmean, §9),
    ``run_mean`` (mean over folds per run), ``n_cells`` (computed), ``n_expected`` and
    ``n_failed`` (computed but F = NaN)."""
    f = f_score.where(computed)
    with quiet():
        return xr.Dataset({
            "f_mean": f.mean(CELL),
            "run_mean": f.mean("fold"),
            "n_cells": computed.sum(CELL),
            "n_expected": expected.sum(CELL),
            "n_failed": (computed & f.isnull()).sum(CELL),
        })


def summaries(selected):
    """``summarise`` for both selections, stacked along a ``selection`` dim."""
    return xr.concat(
        [summarise(selected[f"{name}_f"], selected.computed, selected.expected)
         for name in SELECTIONS],
        dim=xr.DataArray(list(SELECTIONS), dims="selection", name="selection"),
    )


COUNTS = ("n_cells", "n_expected", "n_failed")


def combine(per_member, n_members):
    """Aggregates of a family from its members' ``summaries`` (a list): means over the
    subsets (docs/method/protocol.md §9, digits), counts summed, ``f_std`` over runs of the
    subset-averaged run means, ``n_subsets`` with a value, and ``complete`` (every member
    in the cube and every expected cell computed)."""
    stacked = xr.concat(per_member, dim="subset", join="outer",
                        fill_value={**{name: 0 for name in COUNTS},
                                    "f_mean": np.nan, "run_mean": np.nan})
    with quiet():
        run_mean = stacked.run_mean.mean("subset")
        out = xr.Dataset({
            "f_mean": stacked.f_mean.mean("subset"),
            "f_std": run_mean.std("run", ddof=1),
            "n_subsets": stacked.f_mean.notnull().sum("subset"),
            **{name: stacked[name].sum("subset") for name in COUNTS},
        })
    out["complete"] = ((out.n_cells == out.n_expected) & (out.n_expected > 0)
                       & (len(per_member) == n_members))
    out["n_members"] = n_members
    out["n_present"] = len(per_member)
    return out

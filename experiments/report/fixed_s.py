"""The ``fixed-loo`` selection (docs/guide/choosing-s.md, "In the report"): one s per sparse
algorithm for a whole data set, chosen leave-one-data-set-out, as a user would fix s from
other data sets before seeing this one.

The pool is the paper's six data sets (:data:`families.PAPER_SIX`) in the cube; a cube with
none of them (a study of the user's own data sets) pools every data set it holds. For a held-out
data set h and an algorithm, every s of h's grid is a candidate. The grids end at sqrt(p),
which differs between the data sets (iris 1.1 to 1.9, ionosphere 1.1 to 5.7), so a candidate
is carried to another data set d by its relative position: s / sqrt(p_h) becomes the value of
d's grid nearest to s sqrt(p_d) / sqrt(p_h) (ties -> the smaller). The candidate's score is
the mean over the other pool data sets d of d's mean F there: Fbar (docs/method/protocol.md §9)
averaged over d's (init, kind, percent) settings (nanmean; digits: the mean over the subsets
first). The largest score wins (ties -> smallest s), and h is reported at that s in every cell.
A data set outside the pool (Brodinova, contaminated digits) is never trained on: its s is
chosen on every pool data set. A data set with no other pool data set holding values of the
algorithm gets no fixed-loo value (not computed). Non-sparse algorithms: their only fit.
"""

import numpy as np
import pandas as pd
import xarray as xr

from pcskm.algorithms.selection import best_sparsity_index

from . import families
from .fits import quiet

SETTINGS = ("init", "kind", "percent")


def mean_f_by_s(per_s_members):
    """F per (algorithm, s) of a family for the choice: the members' Fbar at every s
    (``selection.per_s_summary``), averaged over the members, then over the settings
    (nanmean)."""
    f_mean = xr.concat([member.f_mean for member in per_s_members], dim="subset",
                       join="outer")
    with quiet():
        return f_mean.mean("subset").mean(SETTINGS)


def grid_of(values):
    """The s grid of a family's F per (algorithm, s): the non-NaN ``sparsity`` values."""
    return values.sel(sparsity=values.sparsity.notnull())


def nearest(grid, targets):
    """Position in the ascending ``grid`` of the value nearest to each target (ties -> the
    smaller)."""
    return np.abs(np.asarray(grid)[None, :] - np.asarray(targets)[:, None]).argmin(axis=1)


def candidate_scores(training, grid, root_p, algorithms):
    """The score of every candidate s of ``grid`` (a held-out data set's grid, with
    sqrt(p) ``root_p``) per algorithm of ``algorithms``: the mean over the ``training`` data
    sets (a list of (F per (algorithm, s) on their grid, sqrt(p))) that hold any value of
    the algorithm, of their F at the nearest relative position; NaN if one of them has none
    there. Returns (scores (algorithm, candidate), number of training data sets per
    algorithm); (None, None) without training data sets."""
    grid = np.asarray(grid, dtype=np.float64)
    mapped, held = [], []
    for values, root_d in training:
        values = grid_of(values).reindex(algorithm=algorithms)
        at = nearest(values.sparsity.values, grid * root_d / root_p)
        mapped.append(values.transpose("algorithm", "sparsity").values[:, at])
        held.append(values.notnull().any("sparsity").values)
    if not mapped:
        return None, None
    mapped, held = np.array(mapped), np.array(held)  # (d, algorithm, candidate), (d, algorithm)
    n_training = held.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = np.where(held[..., None], mapped, 0.0).sum(axis=0) / n_training[:, None]
    return scores, n_training


def choose_fixed(per_s, n_features, members):
    """The fixed s of every family in ``members`` (label -> its data sets in the cube), from
    the per-s summaries ``per_s`` (data set -> ``selection.per_s_summary``) and the numbers
    of features ``n_features`` (data set -> p). Returns ``(chosen, table)``: chosen maps a
    family label to the fixed s per algorithm (a DataArray, NaN: none or non-sparse), table
    has one row per (held-out data set, algorithm, candidate s) with its relative position,
    training data sets, score and whether it was chosen."""
    pool = [f.label for f in families.PAPER_SIX if f.label in members] or list(members)
    by_family = {label: mean_f_by_s([per_s[name] for name in names])
                 for label, names in members.items()}
    root = {label: np.sqrt(n_features[names[0]]) for label, names in members.items()}
    chosen, rows = {}, []
    for label, values in by_family.items():
        sparse = per_s[members[label][0]].sparse.reindex(algorithm=values.algorithm)
        training = [other for other in pool if other != label]
        grid = grid_of(values).sparsity.values
        scores, n_training = candidate_scores(
            [(by_family[other], root[other]) for other in training], grid, root[label],
            values.algorithm.values)
        s = sparse.copy(data=np.full(sparse.shape, np.nan))
        if scores is not None:
            index = best_sparsity_index(scores, ties="smallest")
            s = s.copy(data=np.where((index >= 0) & sparse.values, grid[index.clip(0)],
                                     np.nan))
            for a, algorithm in enumerate(values.algorithm.values):
                if not sparse.values[a] or not n_training[a]:
                    continue
                rows += [{"dataset": label, "algorithm": str(algorithm), "s": grid[c],
                          "s_over_sqrt_p": grid[c] / root[label],
                          "training": ", ".join(training), "n_training": int(n_training[a]),
                          "mean_f_training": scores[a, c], "chosen": bool(c == index[a])}
                         for c in range(len(grid))]
        chosen[label] = s
    return chosen, pd.DataFrame(rows, columns=[
        "dataset", "algorithm", "s", "s_over_sqrt_p", "training", "n_training",
        "mean_f_training", "chosen"])


def fixed_summary(per_s, s):
    """The aggregates of ``selection.summarise`` of a data set at its fixed s per algorithm
    (``s``; a non-sparse algorithm: its only fit), from its per-s summary ``per_s``; nothing
    computed (counts 0, F NaN) for a sparse algorithm without a fixed s."""
    coord = per_s.sparsity.values
    positions = []
    for a, algorithm in enumerate(per_s.algorithm.values):
        if not per_s.sparse.values[a]:
            positions.append(int(np.argmax(per_s.applies.sel(algorithm=algorithm).values)))
            continue
        value = float(s.sel(algorithm=algorithm))
        found = np.flatnonzero(np.isclose(coord, value, rtol=0, atol=1e-9))
        positions.append(int(found[0]) if len(found) else -1)
    positions = xr.DataArray(positions, coords={"algorithm": per_s.algorithm}, dims="algorithm")
    has = positions >= 0
    at = per_s.drop_vars(["sparse", "applies"]).isel(sparsity=positions.clip(min=0))
    at = at.drop_vars("sparsity")
    return xr.Dataset({
        "f_mean": at.f_mean.where(has), "run_mean": at.run_mean.where(has),
        "n_cells": at.n_cells.where(has, 0), "n_expected": at.n_expected,
        "n_failed": at.n_failed.where(has, 0),
    })

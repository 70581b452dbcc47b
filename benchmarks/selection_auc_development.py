"""The pair-AUC rule for s (docs/method/selection.md §7) against cv and the unthresholded s on
the development sets (§7.3), never on a set of a confirmatory study.

Run by hand from the repository root (about 2 minutes on one core):

    python benchmarks/selection_auc_development.py --out docs/results/selection-auc

Per development set, SKM and PCSKM with DKM++ on the paper's protocol (docs/method/
protocol.md: 10 folds of the points, constraints of kind random sampled from the training
points, the paper's s grid), spec seed 0, percentages 2, 5 and 10, runs 0 to 4, every fold:
the per-s cv score and pair AUC from the same 3 constraint folds and fold fits (key (8, ...)
of the cell), the gap statistic with B = 10 (key (9, ...)) for cv's tie rule, and the F of
the test fold at every s. Besides rule auc (one standard error, §7.2) it scores the variants
§7.3 allows: half a standard error (``auc-half-se``) and none (``auc-best``, the largest s
tied at the best AUC). Two oracles read the test labels: ``oracle``, per cell the s with the
best test F (ties to the median), and ``paper``, per data set, algorithm and percentage the
one s with the best mean test F over the runs and folds (docs/method/protocol.md §9.1), the
gain a fixed s could bring. Writes ``cells.csv`` (one row per cell: the s each rule chooses, its
F, whether it thresholds a feature, the ties; rewritten after each data set) and
``summary.csv`` (per data set and algorithm, per family of development sets, and over all)
and ``against_unthresholded.csv`` (each rule's F minus the F at the unthresholded s, §6).
"""

import argparse
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from pcskm.algorithms import (
    PCSKMeans,
    SparseKMeans,
    best_sparsity_index,
    one_standard_error_index,
    pairwise_f_score,
)
from pcskm.algorithms.constraints import Constraints
from pcskm.algorithms.selection import (
    _cross_validate_path,
    _failed,
    log_weighted_bcss,
    null_data_sets,
    null_estimator,
    null_log_objectives,
    null_summary,
)
from pcskm.experiments import Protocol
from pcskm.experiments.development import DEVELOPMENT_SETS, load_development
from pcskm.experiments.protocol import sparsity_grid

PERCENTAGES = (2, 5, 10)
RUNS = (0, 1, 2, 3, 4)
CV_FOLDS = 3
PERMUTATIONS = 10
ESTIMATORS = {"SKM": SparseKMeans, "PCSKM": PCSKMeans}


def tied_at_top(scores):
    """How many non-NaN scores equal the largest."""
    return int((scores == np.nanmax(scores)).sum()) if not np.isnan(scores).all() else 0


def distinct_tied(scores, weights):
    """How many distinct weight vectors among the s tied at the largest score."""
    if np.isnan(scores).all():
        return 0
    tied = np.flatnonzero(scores == np.nanmax(scores))
    return len({weights[i].tobytes() for i in tied})


def unthresholded_index(weights, failed):
    """selection.md §6: the first s with no zero weight, else the largest s that did not
    fail."""
    full = np.flatnonzero(~failed & (weights > 0).all(axis=1))
    if len(full):
        return int(full[0])
    return int(np.flatnonzero(~failed)[-1])


def null_gap_summary(estimator, X, path, seed):
    """Mean and sd of the null log objectives (§3.2) from the path's initial centres."""
    null = null_estimator(estimator).set_params(init=path.initial_centers)

    def fit_null(_, permuted):
        null_path = null.fit_path(permuted, path.sparsity)
        return null_path.labels, null_path.weights, _failed(null_path)

    return null_summary(null_log_objectives(null_data_sets(X, PERMUTATIONS, seed),
                                            estimator.n_clusters, fit_null))


def cells(name):
    dataset = load_development(name)
    protocol = Protocol(dataset, seed=0, n_folds=10)
    X, y, k = dataset.X, dataset.y, dataset.n_clusters
    grid = sparsity_grid(X.shape[1])
    nulls = {}
    for algorithm, estimator_class in ESTIMATORS.items():
        estimator = estimator_class(k, init="dkm++")
        for percent in PERCENTAGES:
            rows, f_per_s, thresholds_per_s = [], [], []
            for run in RUNS:
                for fold in range(10):
                    must_link, cannot_link = protocol.constraints("random", percent, run, fold)
                    path = estimator.fit_path(X, grid, must_link=must_link,
                                              cannot_link=cannot_link)
                    failed = _failed(path)
                    constraints = Constraints.from_pairs(must_link, cannot_link,
                                                         n_samples=len(y))
                    _, scores = _cross_validate_path(
                        estimator, X, path, constraints, CV_FOLDS,
                        protocol.cv_fold_seed("random", percent, run, fold), with_auc=True)
                    key = path.initial_centers.tobytes()
                    if key not in nulls:  # DKM++: the same centres, the same null fits
                        nulls[key] = null_gap_summary(estimator, X, path,
                                                      protocol.permutation_seed())
                    gap = (log_weighted_bcss(X, path.labels, path.weights, failed, k)
                           - nulls[key][0])
                    test = protocol.test_index(fold)
                    f = np.array([np.nan if bad else pairwise_f_score(y[test], labels[test])
                                  .f_score for labels, bad in zip(path.labels, failed,
                                                                  strict=True)])
                    choice = {
                        "auc": one_standard_error_index(scores.auc, scores.auc_se),
                        "auc-half-se": one_standard_error_index(scores.auc, scores.auc_se / 2),
                        "auc-best": best_sparsity_index(scores.auc, ties="largest"),
                        "cv": best_sparsity_index(scores.score, ties="median",
                                                  tie_scores=gap),
                        "unthresholded": unthresholded_index(path.weights, failed),
                        "largest": int(np.flatnonzero(~failed)[-1]),
                        "oracle": best_sparsity_index(f, ties="median"),
                    }
                    row = {"dataset": name, "algorithm": algorithm, "percent": percent,
                           "run": run, "fold": fold, "n_s": len(grid),
                           "auc_tied": tied_at_top(scores.auc),
                           "auc_tied_distinct": distinct_tied(scores.auc, path.weights),
                           "cv_tied": tied_at_top(scores.score),
                           "cv_tied_distinct": distinct_tied(scores.score, path.weights)}
                    thresholds = (path.weights == 0).any(axis=1)
                    for rule, index in choice.items():
                        row[f"s_{rule}"] = grid[index] if index >= 0 else np.nan
                        row[f"f_{rule}"] = f[index] if index >= 0 else np.nan
                        row[f"thresholds_{rule}"] = (bool(thresholds[index])
                                                     if index >= 0 else np.nan)
                    rows.append(row)
                    f_per_s.append(f)
                    thresholds_per_s.append(thresholds)
            yield from with_paper_oracle(rows, np.array(f_per_s), np.array(thresholds_per_s),
                                         grid)


def with_paper_oracle(rows, f, thresholds, grid):
    """The rows of one data set, algorithm and percentage with the paper's s (protocol §9.1):
    one s for all its runs and folds, the largest mean test F over them, ties to the
    smallest s; ``f`` and ``thresholds`` are (cells, s)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an s at which every fit failed
        index = best_sparsity_index(np.nanmean(f, axis=0), ties="smallest")
    for row, f_cell, thresholds_cell in zip(rows, f, thresholds, strict=True):
        row.update({"s_paper": grid[index], "f_paper": f_cell[index],
                    "thresholds_paper": bool(thresholds_cell[index])} if index >= 0 else
                   {"s_paper": np.nan, "f_paper": np.nan, "thresholds_paper": np.nan})
        yield row


RULES = ("auc", "auc-half-se", "auc-best", "cv", "unthresholded", "largest", "paper", "oracle")


def family(name):
    """``dev-brodinova`` or ``dev-weak``: the family of development set ``name``."""
    return "-".join(name.split("-")[:2])


def summarise(table):
    """Per data set and algorithm, per family and algorithm, and per algorithm over all: the
    shares of cells with tied best scores, the share in which each rule's s thresholds a
    feature, and each rule's mean test F."""

    def summary(group):
        out = {"cells": len(group),
               "auc_tied_share": (group.auc_tied > 1).mean(),
               "auc_tied_distinct_share": (group.auc_tied_distinct > 1).mean(),
               "cv_tied_share": (group.cv_tied > 1).mean(),
               "cv_tied_distinct_share": (group.cv_tied_distinct > 1).mean(),
               "auc_below_largest_share": (group.s_auc < group.s_largest).mean()}
        out.update({f"thresholds_{rule}_share": group[f"thresholds_{rule}"].astype(float).mean()
                    for rule in RULES})
        out.update({f"f_{rule}": group[f"f_{rule}"].mean() for rule in RULES})
        return pd.Series(out)

    def per(keys, **labels):
        return (table.groupby(keys).apply(summary, include_groups=False).reset_index()
                .assign(**labels))

    table = table.assign(family=table.dataset.map(family))
    parts = [per(["dataset", "algorithm"]),
             per(["family", "algorithm"]).rename(columns={"family": "dataset"}),
             per("algorithm", dataset="all")]
    return pd.concat(parts, ignore_index=True).round(4)


def against_unthresholded(table):
    """Per data set, family and all, algorithm and rule: the mean over the cells of the
    rule's test F minus the F at the unthresholded s (§6), its standard error over the cells
    (sd / sqrt(cells); cells of one set are not independent, so read it as a scale), and the
    number of data sets whose mean difference is above and below 0."""
    names = list(dict.fromkeys(table.dataset))
    groups = ([(name, [name]) for name in names]
              + [(f, [n for n in names if family(n) == f]) for f in
                 dict.fromkeys(map(family, names))]
              + [("all", names)])
    rows = []
    for rule in (r for r in RULES if r != "unthresholded"):
        gain = table[f"f_{rule}"] - table.f_unthresholded
        per_set = gain.groupby([table.dataset, table.algorithm]).mean()
        for algorithm in dict.fromkeys(table.algorithm):
            for label, members in groups:
                cells = gain[table.dataset.isin(members) & (table.algorithm == algorithm)]
                sets = per_set.loc[[(name, algorithm) for name in members]]
                rows.append({"dataset": label, "algorithm": algorithm, "rule": rule,
                             "cells": len(cells), "mean_difference": cells.mean(),
                             "se_over_cells": cells.std(ddof=1) / np.sqrt(len(cells)),
                             "sets_above": int((sets > 0).sum()),
                             "sets_below": int((sets < 0).sum())})
    return pd.DataFrame(rows).round(4)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--datasets", nargs="*", default=list(DEVELOPMENT_SETS))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.datasets:
        rows.extend(cells(name))
        table = pd.DataFrame(rows)
        table.to_csv(args.out / "cells.csv", index=False)
        print(f"{name}: done", flush=True)
    summary = summarise(table)
    summary.to_csv(args.out / "summary.csv", index=False)
    against_unthresholded(table).to_csv(args.out / "against_unthresholded.csv", index=False)
    print(summary.to_string())


if __name__ == "__main__":
    main()

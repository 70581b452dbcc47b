"""The pair-AUC rule for s (docs/method/selection.md §7) on the extended study, as a
sensitivity analysis beside its pre-registered rule cv: how often its best score ties, how
often its s thresholds a feature, and its F against the unthresholded s (§6). Read from the
report in docs/results/extended (its ``selection_ties_summary.csv``,
``selection_thresholds.csv`` and ``case_values.csv``); writes beside them:

* ``auc_sensitivity.csv``: per data set (then "all data sets") and sparse algorithm, for the
  selections cv and auc: the share of cells whose best score ties (``tied_share``) and whose
  every scored s ties (``all_tied_share``), the share whose chosen s thresholds
  (``thresholding_share``, the report's definition), the data set's value (the mean of its
  10 pre-registered case values, as the primary analysis) and its difference with the
  unthresholded s's; the same (``_random``) on the cells and settings of kind random, the
  only ones with a pair AUC (in the others auc takes cv's choice);
* ``auc_sensitivity_tests.csv``: per set of settings (all; random pairs) and sparse
  algorithm, the signed-rank test of the data-set
  level (docs/method/protocol.md §10: the report's own ``statistics.wilcoxon``, exact, as at
  that level) of each of
  cv and auc against the unthresholded s. cv's row for PCSKM is the report's reference arm
  (``reference_arm_tests.csv``), which this script checks it reproduces.

    python benchmarks/extended_auc_sensitivity.py [docs/results/extended]
"""

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from pcskm.experiments.report.families import ALL_DATASETS
from pcskm.experiments.report.statistics import wilcoxon

FOLDER = Path(__file__).resolve().parents[1] / "docs" / "results" / "extended"
RULES = {"cv": "cv_score", "auc": "auc_score"}  # selection -> the score whose ties it shows
REFERENCE = "unthresholded"
SPARSE = ("SKM", "PCSKM")
# the kind whose cells carry a pair AUC: in the others (one kind of pair) auc takes cv's choice
RANDOM = "random"


def dataset_values(folder, kinds=None):
    """Per (selection, data set, algorithm): the mean of the data set's case values that
    have a value (the study's rule for failed fits, "available": statlog and yeast have
    none under Maximin(D) with must-links); only its settings of ``kinds`` when given."""
    cases = pd.read_csv(folder / "case_values.csv")
    if kinds is not None:
        cases = cases[cases.kind.isin(kinds)]
    long = cases.melt(id_vars=["selection", "dataset", "init", "kind"], var_name="algorithm",
                      value_name="f")
    return long.groupby(["selection", "dataset", "algorithm"]).f.mean()


def sensitivity_table(folder):
    ties = pd.read_csv(folder / "selection_ties_summary.csv")
    thresholds = pd.read_csv(folder / "selection_thresholds.csv")
    values = {"": dataset_values(folder), "_random": dataset_values(folder, [RANDOM])}
    rows = []
    for dataset in thresholds.dataset.unique():
        for algorithm in SPARSE:
            for rule, score in RULES.items():
                tie = ties[(ties.dataset == dataset) & (ties.algorithm == algorithm)
                           & (ties.score == score)]
                used = thresholds[(thresholds.dataset == dataset)
                                  & (thresholds.algorithm == algorithm)
                                  & (thresholds.selection == rule)]
                random = used[used.kind == RANDOM]
                row = {
                    "dataset": dataset, "algorithm": algorithm, "selection": rule,
                    "cells": int(used.cells.sum()), "cells_random": int(random.cells.sum()),
                    "tied_share": float(tie.tied_share.iloc[0]) if len(tie) else np.nan,
                    "all_tied_share": float(tie.all_tied_share.iloc[0]) if len(tie) else np.nan,
                    "thresholding_share": used.thresholding_cells.sum() / used.cells.sum(),
                    "thresholding_share_random": (random.thresholding_cells.sum()
                                                  / random.cells.sum()),
                }
                for suffix, value in values.items():
                    if dataset == ALL_DATASETS:
                        f = value[rule, :, algorithm].mean()
                        reference = value[REFERENCE, :, algorithm].mean()
                    else:
                        f = value[rule, dataset, algorithm]
                        reference = value[REFERENCE, dataset, algorithm]
                    row |= {f"f{suffix}": f, f"f_minus_unthresholded{suffix}": f - reference}
                rows.append(row)
    return pd.DataFrame(rows)


def tests_table(folder):
    rows = []
    for settings, kinds in (("all", None), ("random pairs", [RANDOM])):
        values = dataset_values(folder, kinds)
        for algorithm in SPARSE:
            for rule in RULES:
                x = values[rule, :, algorithm]
                y = values[REFERENCE, :, algorithm].reindex(x.index)
                rows.append({"settings": settings, "algorithm": algorithm,
                             "x": f"{algorithm} ({rule})", "y": f"{algorithm} ({REFERENCE})",
                             **wilcoxon(x.to_numpy(), y.to_numpy(), method="exact")})
    return pd.DataFrame(rows)


def check_reference_arm(folder, tests):
    """cv's test for PCSKM is the report's reference arm, x and y swapped."""
    arm = pd.read_csv(folder / "reference_arm_tests.csv").iloc[0]
    mine = tests[(tests.settings == "all") & (tests.x == "PCSKM (cv)")].iloc[0]
    assert (mine.wins, mine.losses, mine.ties) == (arm.losses, arm.wins, arm.ties), (mine, arm)
    assert np.isclose(mine.p_value, arm.p_value, rtol=1e-9), (mine.p_value, arm.p_value)


def main():
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else FOLDER
    table = sensitivity_table(folder)
    tests = tests_table(folder)
    check_reference_arm(folder, tests)
    table.to_csv(folder / "auc_sensitivity.csv", index=False, float_format="%.4g")
    tests.to_csv(folder / "auc_sensitivity_tests.csv", index=False, float_format="%.4g")
    print(table[table.dataset == ALL_DATASETS].to_string(index=False))
    print(tests[["settings", "x", "y", "n", "wins", "losses", "ties", "p_value",
                 "mean_diff"]].to_string(index=False))


if __name__ == "__main__":
    main()

"""The digits with added uninformative features against the clean digits
(docs/method/datasets.md §5 and §5.1): how much the four added columns change each algorithm's
mean F, per selection of s."""

import numpy as np
import pandas as pd

# The versions of a data set with added features, as their family labels end.
VERSIONS = ("contaminated", "shuffled")
KEYS = ["selection", "init", "kind", "algorithm", "percent"]
COLUMNS = ["selection", "dataset", "added", "algorithm", "settings", "f_clean", "f_added",
           "mean_diff", "max_abs_diff", "settings_differing"]


def table(long):
    """One row per (selection, clean data set, added version, algorithm) from the performance
    table ``long`` (:func:`performance.long_table`): the (init, kind, percent) settings with a
    mean F in both versions, the mean over them of the clean and the added version's mean F,
    the mean and largest absolute difference (added - clean), and the settings whose mean F
    differs at 4 decimals."""
    if long.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = []
    for version in VERSIONS:
        added = long[long.dataset.str.endswith(" " + version)]
        for label, part in added.groupby("dataset", sort=True):
            clean = long[long.dataset == label.removesuffix(" " + version)]
            both = part[KEYS + ["f_mean"]].merge(clean[KEYS + ["f_mean"]], on=KEYS,
                                                 suffixes=("_added", "_clean"))
            both = both.dropna(subset=["f_mean_added", "f_mean_clean"])
            for (selection, algorithm), pair in both.groupby(["selection", "algorithm"],
                                                             sort=True):
                diff = pair.f_mean_added - pair.f_mean_clean
                rows.append({
                    "selection": selection, "dataset": label.removesuffix(" " + version),
                    "added": version, "algorithm": algorithm, "settings": len(pair),
                    "f_clean": pair.f_mean_clean.mean(), "f_added": pair.f_mean_added.mean(),
                    "mean_diff": diff.mean(), "max_abs_diff": np.abs(diff).max(),
                    "settings_differing": int((pair.f_mean_added.round(4)
                                               != pair.f_mean_clean.round(4)).sum()),
                })
    return pd.DataFrame(rows, columns=COLUMNS)

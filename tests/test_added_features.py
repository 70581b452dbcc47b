"""The added-features table of the report against a plain loop over a hand-built
performance table."""

import itertools

import numpy as np
import pandas as pd
import pytest

from pcskm.experiments.report import added_features


def performance_rows(rng):
    rows = []
    settings = itertools.product(("paper", "honest"), ("dkm++", "seeding"), ("random",),
                                 ("SKM", "PCSKM"), (1.0, 5.5, 10.0))
    for selection, init, kind, algorithm, percent in settings:
        clean = rng.uniform(0.5, 0.9)
        for dataset, shift in (("digits 0-4-8", 0.0), ("digits 0-4-8 contaminated", 0.0),
                               ("digits 0-4-8 shuffled", rng.uniform(-0.05, 0.05))):
            rows.append({"selection": selection, "dataset": dataset, "init": init,
                         "kind": kind, "algorithm": algorithm, "percent": percent,
                         "f_mean": clean + shift})
    return pd.DataFrame(rows)


def f_mean(long, **where):
    match = long
    for column, value in where.items():
        match = match[match[column] == value]
    assert len(match) == 1
    return float(match.f_mean.iloc[0])


def test_added_features_against_a_loop():
    long = performance_rows(np.random.default_rng(3))
    long.loc[(long.dataset == "digits 0-4-8 contaminated") & (long.percent == 10.0)
             & (long.init == "seeding"), "f_mean"] += 0.001   # differs at 4 decimals
    long.loc[(long.dataset == "digits 0-4-8 shuffled") & (long.percent == 1.0)
             & (long.init == "dkm++") & (long.algorithm == "SKM"), "f_mean"] = np.nan
    table = added_features.table(long).set_index(["selection", "added", "algorithm"])
    assert len(table) == 2 * 2 * 2
    assert set(table.dataset) == {"digits 0-4-8"}
    for (selection, added, algorithm), row in table.iterrows():
        pairs = []
        for init, percent in itertools.product(("dkm++", "seeding"), (1.0, 5.5, 10.0)):
            at = {"selection": selection, "init": init, "algorithm": algorithm,
                  "percent": percent}
            clean = f_mean(long, dataset="digits 0-4-8", **at)
            other = f_mean(long, dataset=f"digits 0-4-8 {added}", **at)
            if not np.isnan(other):
                pairs.append((clean, other))
        clean, other = np.array(pairs).T
        assert row.settings == len(pairs)
        assert row.f_clean == pytest.approx(clean.mean())
        assert row.f_added == pytest.approx(other.mean())
        assert row.mean_diff == pytest.approx((other - clean).mean())
        assert row.max_abs_diff == pytest.approx(np.abs(other - clean).max())
        assert row.settings_differing == sum(round(a, 4) != round(b, 4) for a, b in pairs)
    contaminated = table.xs("contaminated", level="added")
    assert (contaminated.settings_differing == 1).all()   # the seeding, 10 % setting only
    assert contaminated.max_abs_diff.to_numpy() == pytest.approx(0.001)
    assert table.xs(("shuffled", "SKM"), level=("added", "algorithm")).settings.tolist() == [5, 5]


def test_no_added_features_no_rows():
    long = performance_rows(np.random.default_rng(0))
    assert added_features.table(long[long.dataset == "digits 0-4-8"]).empty
    assert added_features.table(pd.DataFrame()).empty

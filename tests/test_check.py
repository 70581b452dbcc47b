"""The report's cell sample and ``pcskm check``: the sample holds what the cube holds, a
recomputation agrees with it, and a changed value is caught."""

import numpy as np
import pandas as pd
import pytest
import zarr

from pcskm.experiments.check import read_table, recompute
from pcskm.experiments.spec import load_spec
from pcskm.runner.cli import main

SMOKE = load_spec("smoke")
FLAGS = ("missing", "converged", "max_iter", "empty_cluster", "degenerate_weights",
         "not_applicable")


@pytest.fixture(scope="module")
def sample(smoke_report):
    store, report = smoke_report
    return store, report.parent / "cells_sample.csv"


def test_sample_rows_are_the_cube_values(sample):
    """Every row against the raw Zarr arrays, read by position; every (data set,
    algorithm) of the spec is sampled twice; only computed cells are drawn."""
    store, path = sample
    table = pd.read_csv(path)
    root = zarr.open_group(str(store), mode="r")
    for (name, _), rows in table.groupby(["dataset", "algorithm"]):
        group = root[name]
        assert len(rows.drop_duplicates(["init", "kind", "percent", "run", "fold"])) == 2

        def position(coordinate, value, group=group):
            values = group[coordinate][:]
            if values.dtype.kind == "f":
                found = np.flatnonzero(np.isclose(values, value, equal_nan=True))
            else:
                found = np.flatnonzero([str(v) == str(value) for v in values])
            assert len(found) == 1, (coordinate, value)
            return int(found[0])

        for row in rows.itertuples():
            cell = tuple(position(c, getattr(row, c)) for c in
                         ("algorithm", "init", "kind", "percent", "run", "fold"))
            s = position("sparsity", row.sparsity)
            assert group["done"][cell[:5]] == 1
            for variable in ("f_score", "precision", "recall", "satisfied", "n_iter"):
                assert getattr(row, variable) == pytest.approx(
                    float(group[variable][(*cell, s)]), rel=1e-9, nan_ok=True), variable
            assert row.status == FLAGS[group["status"][(*cell, s)]]
            assert row.n_constraints == group["n_constraints"][cell[2:]]
    assert set(table.dataset) == set(SMOKE.datasets)
    assert set(table.algorithm) == {variant.name for variant in SMOKE.algorithms}


def test_recomputation_agrees_and_a_changed_value_is_caught(sample, tmp_path):
    _, path = sample
    table = read_table(path)
    assert recompute(SMOKE, table).agrees.all()
    changed = table.copy()
    scored = int(np.flatnonzero(table.f_score.notna().to_numpy())[0])
    other = scored + 2
    changed.loc[scored, "f_score"] = changed.loc[scored, "f_score"] * (1 - 1e-4) - 1e-4
    changed.loc[other, "n_constraints"] += 2
    checked = recompute(SMOKE, changed)
    assert np.flatnonzero(~checked.agrees.to_numpy()).tolist() == [scored, other]
    changed.to_csv(tmp_path / "changed.csv", index=False)
    assert main(["check", "smoke", str(tmp_path / "changed.csv")]) == 1
    assert main(["check", "smoke", str(path), "--cells", "3"]) == 0


def test_a_cell_outside_the_spec_or_a_missing_column_is_an_error(sample, tmp_path):
    _, path = sample
    table = read_table(path)
    outside = table.head(1).assign(init="maximin")
    with pytest.raises(ValueError, match="not in spec smoke"):
        recompute(SMOKE, outside)
    table.drop(columns="satisfied").to_csv(tmp_path / "short.csv", index=False)
    with pytest.raises(ValueError, match="missing column"):
        read_table(tmp_path / "short.csv")

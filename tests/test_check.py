"""The report's cell sample and ``pcskm check``: the sample holds what the cube holds, a
recomputation agrees with it, and a changed value is caught."""

import hashlib
import json
from importlib import resources

import numpy as np
import pandas as pd
import pytest
import zarr

from pcskm.experiments.check import read_table, recompute
from pcskm.experiments.spec import load_spec
from pcskm.runner.cli import main

SMOKE = load_spec("smoke")
SMOKE_TEXT = (resources.files("pcskm.experiments") / "specs" / "smoke.toml").read_text()
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
            # the code: the definition its run recorded, as SHA-256 of canonical JSON
            run = root.attrs["runs"][int(group["run_index"][cell[:5]])]
            definition = run["code"][row.algorithm]
            assert row.code == hashlib.sha256(json.dumps(
                definition, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
            assert row.code_description == f"{definition['estimator']} with params " \
                                           f"{definition['params']}"
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


def test_integers_compare_as_numbers_and_a_failed_fit_by_its_status(own_study):
    """A sample with failed fits (NaN scores, the fill -1 for their iterations) makes the
    n_iter column float ("8.0"): it checks clean, and a changed iteration count or status is
    still caught."""
    folder, report = own_study
    table = read_table(report / "cells_sample.csv")
    assert (table.status == "error").any() and table.n_iter.dtype == float
    assert table.n_iter[table.status == "error"].isna().all()
    assert (table.n_iter[table.status == "converged"] >= 1).all()
    spec = load_spec(folder / "own.toml")
    assert recompute(spec, table).agrees.all()
    converged = int(np.flatnonzero(table.status == "converged")[0])
    failed = int(np.flatnonzero(table.status == "error")[0])
    changed = table.copy()
    changed.loc[converged, "n_iter"] += 1
    changed.loc[failed, "status"] = "max_iter"
    checked = recompute(spec, changed)
    assert np.flatnonzero(~checked.agrees.to_numpy()).tolist() == sorted([converged, failed])


def test_the_command_the_report_prints_runs_as_printed(own_study):
    """Section 8 of the report names the spec file and the --preload module (relative to the
    report folder), and the command passes there, where the module is not importable
    without --preload."""
    import re
    import shlex

    from cubes import pcskm

    _, report = own_study
    text = (report / "report.md").read_text()
    command = re.search(r"`(pcskm check [^`]*)`, run in this folder", text).group(1)
    words = shlex.split(command)
    assert words[2:4] == ["../own.toml", "cells_sample.csv"]
    assert words[4:] == ["--preload", "../always_fails_for_pcskm.py"]
    done = pcskm(*words[1:], cwd=report)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every recorded value equals its recomputation" in done.stdout


def test_a_bundled_spec_is_named_in_the_printed_command(sample):
    """A bundled spec (here run from Python, so with no spec file) is named by its name."""
    _, path = sample
    assert "`pcskm check smoke cells_sample.csv`, run in this folder" in \
        (path.parent / "report.md").read_text()


@pytest.mark.parametrize("command", [["datasets", "list"], ["compile"], ["check"]])
def test_every_command_reading_a_spec_takes_preload(own_study, command, tmp_path):
    """Run elsewhere, the spec's module is importable only through --preload: refused
    without it (exit code 2, naming the module), done with it."""
    from cubes import pcskm

    folder, report = own_study
    words = [*command, folder / "own.toml"]
    if command == ["check"]:
        words.append(report / "cells_sample.csv")
    refused = pcskm(*words, cwd=tmp_path)
    assert refused.returncode == 2 and "always_fails_for_pcskm" in refused.stderr
    done = pcskm(*words, "--preload", folder / "always_fails_for_pcskm.py", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_difference_names_the_code_recorded_for_its_cells_and_the_current_one(sample,
                                                                                tmp_path,
                                                                                capfd):
    """Issue 65, item 4: a table that records other code for PCKM's cells than the spec's
    current definition, and a changed PCKM value: check names the recorded code (digest and
    words) and the current one, the SHA-256 of the definition the store records, worked out
    here; the rows of the current code are not named."""
    store, path = sample
    table = read_table(path)
    pckm = np.flatnonzero(table.algorithm.to_numpy() == "PCKM")
    changed = table.copy()
    changed.loc[pckm, "code"] = "ab" * 32
    changed.loc[pckm, "code_description"] = "module SHA-256 0123456789ab"
    changed.loc[pckm[0], "f_score"] = changed.loc[pckm[0], "f_score"] * 0.5
    lkm = int(np.flatnonzero(table.algorithm.to_numpy() == "LKM")[0])
    changed.loc[lkm, "f_score"] = changed.loc[lkm, "f_score"] * 0.5
    changed.to_csv(tmp_path / "changed.csv", index=False)
    definition = zarr.open_group(str(store), mode="r").attrs["algorithm_definitions"]["PCKM"]
    current = hashlib.sha256(json.dumps(definition, sort_keys=True,
                                        separators=(",", ":")).encode()).hexdigest()
    capfd.readouterr()
    assert main(["check", "smoke", str(tmp_path / "changed.csv")]) == 1
    notes = [line for line in capfd.readouterr().err.splitlines() if "differing values" in line]
    assert notes == [f"pcskm: PCKM: 1 of the differing values were computed by code "
                     f"abababababab (module SHA-256 0123456789ab); the spec's current code is "
                     f"{current[:12]} (PCKM with params {{}})"]


def test_the_cells_of_a_data_set_without_its_files_are_listed_and_the_rest_checked(
        sample, tmp_path, capfd, monkeypatch):
    """Issue 65, item 4: a sample whose ionosphere cells have no data file (an empty data
    folder): the cells of iris and the generated set are checked, ionosphere's are named
    with their count and the reason (exit 0); a sample of ionosphere alone: exit 2."""
    monkeypatch.delenv("PCSKM_DATA", raising=False)
    _, path = sample
    table = read_table(path)
    extra = table[table.dataset == "iris"].assign(dataset="ionosphere")
    n_extra = len(extra.drop_duplicates(["init", "kind", "percent", "run", "fold",
                                         "algorithm"]))
    n_rest = len(table.drop_duplicates(["dataset", "algorithm", "init", "kind", "percent",
                                        "run", "fold"]))
    pd.concat([table, extra]).to_csv(tmp_path / "with.csv", index=False)
    extra.to_csv(tmp_path / "alone.csv", index=False)
    spec = tmp_path / "smoke.toml"
    spec.write_text(SMOKE_TEXT.replace('datasets = ["iris", "brodinova-5-5"]',
                                       'datasets = ["iris", "brodinova-5-5", "ionosphere"]'))
    empty = tmp_path / "data"
    empty.mkdir()
    capfd.readouterr()
    assert main(["check", str(spec), str(tmp_path / "with.csv"), "--data-dir",
                 str(empty)]) == 0
    found = capfd.readouterr()
    assert found.out.startswith(f"{n_rest} cells, {len(table)} rows: every recorded value "
                                "equals")
    assert f"not checked: {n_extra} cells of ionosphere (data missing)" in found.out
    assert any(line.startswith(f"pcskm: ionosphere: {n_extra} cells not checked, its data is "
                               "missing: ") and str(empty) in line
               for line in found.err.splitlines()), found.err
    assert main(["check", str(spec), str(tmp_path / "alone.csv"), "--data-dir",
                 str(empty)]) == 2
@pytest.mark.parametrize(("column", "value", "named"), [
    ("run", 99, f"run 99 is not a run of spec smoke (its runs are 0 to {SMOKE.n_runs - 1})"),
    ("fold", SMOKE.n_folds,
     f"fold {SMOKE.n_folds} is not a fold of spec smoke (its folds are 0 to "
     f"{SMOKE.n_folds - 1})"),
    ("run", 0.5, "run 0.5 is not a run of spec smoke"),
    ("percent", 99.0, "percent 99.0 is not a percentage of spec smoke"),
])
def test_a_cell_outside_the_spec_grid_is_refused_naming_the_range(column, value, named):
    """``pcskm check`` recomputed a sample with run = 99, a run the spec never ran, and
    compared it; now it names the value and the spec's range."""
    variant = next(v for v in SMOKE.algorithms if not v.name.endswith("SKM"))
    row = {"dataset": SMOKE.datasets[0], "algorithm": variant.name, "init": "dkm++",
           "kind": SMOKE.kinds[0], "percent": SMOKE.percentages[0], "run": 0, "fold": 0,
           "sparsity": np.nan, **dict.fromkeys(("f_score", "precision", "recall", "satisfied",
                                                "n_iter", "n_constraints"), np.nan),
           "status": "converged", column: value}
    with pytest.raises(ValueError) as refused:
        recompute(SMOKE, pd.DataFrame([row]))
    assert str(refused.value).startswith(named), refused.value

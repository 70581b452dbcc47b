"""``pcskm report STORE --baseline FOLDER`` (issue 47, point 5): a store that computed only
the focus, reported with the report folder of a store that computed every algorithm of the
same spec, gives the tests of the full report; a store of another protocol is refused."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from cubes import pcskm

from pcskm.experiments.report import baseline, open_store
from pcskm.experiments.report.failure_rules import RULES

SPEC = """
name = "{name}"
seed = {seed}
datasets = ["iris", "points"]
algorithms = ["LKM", "SKM", "PCKM", "PCSKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [1, 10]
n_runs = 2
n_folds = {n_folds}

[data.points]
path = "{points}"
label_column = "group"
"""
# every table of the report computed from the values of the algorithms (the others describe
# the store's cells, selections and weights, which a baseline does not carry)
TESTS = ["case_values.csv", "wilcoxon_tests.csv", "wilcoxon_cases.csv", "wilcoxon_datasets.csv",
         "selections_analysis1.csv", "bayesian_tests.csv", "dataset_t_tests.csv",
         "friedman.csv", "performance.csv", "figure1_performance_extra_honest.csv",
         "figure1_performance_paper.csv", "figure_selections.csv"]


def _points(path, shift=0.0):
    """Two groups of 30 points in 4 features, the first feature of the first point moved by
    ``shift``."""
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(0, 1, (30, 4)), rng.normal(2.5, 1, (30, 4))])
    X[0, 0] += shift
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(4)]).assign(
        group=np.repeat(["a", "b"], 30))
    frame.to_csv(path, index=False)


def _spec(folder, name, seed=0, n_folds=3, points="points.csv"):
    path = folder / f"{name}.toml"
    path.write_text(SPEC.format(name=name, seed=seed, n_folds=n_folds, points=points))
    return path


def _run(spec, store, only):
    out = pcskm("run", spec, "--store", store, "--workers", "1", "--no-progress", "--only",
                only, timeout=900)
    assert out.returncode == 0, out.stderr


@pytest.fixture(scope="module")
def studies(tmp_path_factory):
    """The full store's report (folder A), and the report of the store of PCSKM alone with
    ``--baseline A`` (folder B)."""
    folder = tmp_path_factory.mktemp("baseline")
    _points(folder / "points.csv")
    spec = _spec(folder, "both")
    _run(spec, folder / "full.zarr", "algorithm=*")
    _run(spec, folder / "focus.zarr", "algorithm=PCSKM")
    for store, out, more in (("full.zarr", "A", ()),
                             ("focus.zarr", "B", ("--baseline", folder / "A"))):
        done = pcskm("report", folder / store, "--out", folder / out, *more, timeout=900)
        assert done.returncode == 0, done.stderr
    return folder


@pytest.mark.parametrize("name", TESTS)
def test_the_joined_tests_are_the_full_reports(studies, name):
    """Each test table of the focus's report against A equals the full report's: the joined
    values are those of a store that computed every algorithm."""
    full = pd.read_csv(studies / "A" / name)
    joined = pd.read_csv(studies / "B" / name)
    assert not full.empty
    pd.testing.assert_frame_equal(joined, full)


def test_the_joined_values_are_the_full_stores(studies):
    """B's own baseline values (the joined ones) are A's, and the focus's came from its
    store: the store of PCSKM alone computed none of the others."""
    for name in (baseline.VALUES_FILE, baseline.RUN_FOLD_FILE):
        full = pd.read_csv(studies / "A" / name)
        joined = pd.read_csv(studies / "B" / name)
        pd.testing.assert_frame_equal(joined, full)
    assert baseline.computed_algorithms(open_store(studies / "focus.zarr")) == ["PCSKM"]


def test_the_comparison_is_not_empty_and_the_report_says_where_it_came_from(studies):
    tests = pd.read_csv(studies / "B" / "wilcoxon_tests.csv")
    shown = tests[(tests.level == "datasets") & (tests.selection == "honest")]
    assert set(shown.test) == {"PCSKM vs LKM", "PCSKM vs SKM", "PCSKM vs PCKM"}
    assert (shown.n == 2).all()  # both data sets compared
    summary = (studies / "B" / "report.md").read_text().split("**Contents**")[0]
    assert "**Compared with a baseline**: LKM, SKM, PCKM from" in summary
    assert "beside PCSKM of this store" in summary


@pytest.mark.parametrize("change, named", [
    ({"seed": 1}, "seed 1 in the store, 0 in the baseline"),
    pytest.param({"n_folds": 5}, "n_folds 5 in the store, 3 in the baseline",
                 marks=pytest.mark.slow),  # another study each: about 12 and 20 s
    pytest.param({"points": "moved.csv"}, "the data of points differ", marks=pytest.mark.slow),
])
def test_another_protocol_is_refused_naming_what_differs(studies, change, named):
    """A store of the spec with another seed, other folds or other data: one line naming the
    difference, exit code 2, no report folder."""
    folder = studies
    _points(folder / "moved.csv", shift=0.5)
    key = "-".join(f"{k}{v}".replace(".", "") for k, v in change.items())
    spec = _spec(folder, f"other-{key}", **change)
    store = folder / f"other-{key}.zarr"
    _run(spec, store, "algorithm=PCSKM,dataset=iris,percent=1")
    out = pcskm("report", store, "--out", folder / f"refused-{key}", "--baseline",
                folder / "A")
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "was not computed with the protocol of" in lines[0]
    assert named in lines[0], lines[0]
    assert not (folder / f"refused-{key}").exists()


def test_a_trimmed_copy_of_the_spec_compares_without_hand_edits(studies):
    """Issue 65, item 5, the route of docs/guide/quick-study.md: a copy of the baseline's spec
    with ``datasets`` trimmed to iris, its ``[data.points]`` table left in (a warning, not a
    refusal), run with ``--only algorithm=PCSKM`` and reported with ``--baseline``: the
    report compares PCSKM with the baseline's algorithms on iris."""
    folder = studies
    text = (folder / "both.toml").read_text().replace('datasets = ["iris", "points"]',
                                                      'datasets = ["iris"]')
    spec = folder / "trimmed.toml"
    spec.write_text(text.replace('name = "both"', 'name = "trimmed"'))
    run = pcskm("run", spec, "--store", folder / "trimmed.zarr", "--workers", "1",
                "--no-progress", "--only", "algorithm=PCSKM", timeout=900)
    assert run.returncode == 0, run.stderr
    assert "[data.points] defined but not listed in datasets: ignored" in run.stderr
    done = pcskm("report", folder / "trimmed.zarr", "--out", folder / "T", "--baseline",
                 folder / "A", timeout=900)
    assert done.returncode == 0, done.stderr
    summary = (folder / "T" / "report.md").read_text().split("**Contents**")[0]
    assert "**Compared with a baseline**: LKM, SKM, PCKM from" in summary
    tests = pd.read_csv(folder / "T" / "wilcoxon_tests.csv")
    assert set(tests.test) >= {"PCSKM vs LKM", "PCSKM vs SKM", "PCSKM vs PCKM"}


def test_a_baseline_that_adds_nothing_or_is_no_report_is_refused(studies):
    out = pcskm("report", studies / "full.zarr", "--out", studies / "none", "--baseline",
                studies / "A")
    assert out.returncode == 2 and "adds no algorithm" in out.stderr, out.stderr
    out = pcskm("report", studies / "focus.zarr", "--out", studies / "none", "--baseline",
                studies)
    assert out.returncode == 2 and f"has no {baseline.PROTOCOL_FILE}" in out.stderr
    assert not (studies / "none").exists()


def _slices(n_failed):
    """Family aggregates of one data set, selection, init and kind at two percentages, for
    FOCUS (the store's), OTHER and LKM (the baseline's); ``n_failed`` per algorithm and
    percentage; 4 cells each, all computed."""
    dims = ("family", "selection", "algorithm", "init", "kind", "percent")
    coords = {"family": ["d"], "selection": ["honest"], "algorithm": ["FOCUS", "OTHER", "LKM"],
              "init": ["dkm++"], "kind": ["random"], "percent": [1.0, 2.0]}
    shape = (1, 1, 3, 1, 1, 2)
    failed = np.array(n_failed).reshape(shape)
    four = np.full(shape, 4)
    rules = np.stack([np.full(shape, 0.5), np.full(shape, 0.4), np.full(shape, 0.3)], axis=2)
    return xr.Dataset(
        {"n_failed": (dims, failed), "n_cells": (dims, four), "n_expected": (dims, four),
         "f_rules": (("family", "selection", "failures", *dims[2:]), rules)},
        coords=coords | {"failures": list(RULES)})


def test_itt_and_complete_case_are_kept_only_where_exact():
    """FOCUS has a failed cell at 1 %. complete-case pairs every algorithm: at 1 % no joined
    mean is exact (n/a for all), at 2 % each is the available mean. itt fills a failed cell
    with LKM's F in that cell: the baseline's OTHER was filled from the baseline's LKM
    (exact), FOCUS's failed cell was not (n/a at 1 %); with a number as the failure value
    every itt mean is exact."""
    data = _slices([[1, 0], [0, 0], [0, 0]])
    joined = baseline._with_exact_rules(data.f_rules,
                                        baseline._exact(data, ["OTHER", "LKM"], "LKM"))
    cc = joined.sel(failures="complete-case").squeeze()
    assert np.isnan(cc.sel(percent=1.0)).all()
    assert (cc.sel(percent=2.0) == 0.5).all()
    itt = joined.sel(failures="itt").squeeze()
    assert np.isnan(itt.sel(algorithm="FOCUS", percent=1.0))
    assert itt.sel(algorithm="FOCUS", percent=2.0) == 0.4
    assert (itt.sel(algorithm=["OTHER", "LKM"]) == 0.4).all()
    assert (joined.sel(failures="available") == 0.5).all()
    number = baseline._with_exact_rules(data.f_rules,
                                        baseline._exact(data, ["OTHER", "LKM"], 0.0))
    assert (number.sel(failures="itt") == 0.4).all()


def test_a_refusal_names_a_few_data_sets_and_counts_the_rest():
    """Issue 65, item 5: six data sets of the store absent from a baseline of twenty are one
    short phrase (the first four names and a count of each list), not one phrase per data
    set repeating the baseline's list."""
    def record(names):
        return {"protocol": {"seed": 0}, "failure_value": "LKM",
                "datasets": {name: {"family": name, "data_sha256": name, "n_runs": 2,
                                    "n_folds": 3, "percents": [1.0], "inits": ["dkm++"],
                                    "kinds": ["random"], "constraints": {}}
                             for name in names}}

    ours = [f"mine-{i}" for i in range(6)]
    theirs = [f"set-{i}" for i in range(20)]
    found = baseline.differences(record(ours), record(theirs))
    assert found == ["data sets mine-0, mine-1, mine-2, mine-3 and 2 more not in the baseline "
                     "(its 20 data sets: set-0, set-1, set-2, set-3 and 16 more)"]
    assert baseline.differences(record(ours[:1] + theirs[:3]), record(theirs)) == [
        "data set mine-0 not in the baseline (its 20 data sets: set-0, set-1, set-2, set-3 "
        "and 16 more)"]

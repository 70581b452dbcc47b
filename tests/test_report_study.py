"""The report of a study that is not the paper's (issue 30, part 3): data sets and algorithm
names the report has never seen, a focus algorithm set with ``[report] focus``, a store without
PCSKM, and a failure status the report's code does not name. The focus comparison is checked
against scipy on the case values computed here from the cube with xarray, Holm by hand."""

import re
import shutil
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import xarray as xr
import zarr
from cubes import pcskm

from pcskm.experiments.report import families, statistics, write_report
from pcskm.experiments.spec import parse_spec
from pcskm.runner.store import record_metadata
from pcskm.runner.store.backends import where
from pcskm.runner.store.layout import dataset_groups
from pcskm.runner.store.places import COORDINATES, coordinate_digests, store_binding
from pcskm.runner.store.preparation import _record_as_stored

SPEC = """
name = "own"
seed = 0
datasets = ["iris", "brodinova-3-7"]
algorithms = ["LKM", "MyPCKM", "Sparse2"]
inits = ["dkm++"]
kinds = ["random", "must-link", "cannot-link"]
percentages = [1, 10]
n_runs = 2
n_folds = 3
max_iter = 10
sparsity_max_values = 4

[variants.MyPCKM]
estimator = "PCKM"

[variants.Sparse2]
estimator = "PCSKM"
params = { weight_update = "paper" }
"""
FOCUS = '\n[report]\nfocus = "Sparse2"\n'
# the cube's groups renamed to names no registry or report module knows
RENAMED = {"iris": "wine", "brodinova-3-7": "my-table"}
SELECTIONS = ("paper", "oracle")  # the two whose s is worked out here from f_score alone


def _rewrite_root(store, **attrs):
    """Set root attributes of a copied store, record the digests of its metadata again and
    consolidate it, as pcskm does when it writes a store (docs/reference/cube-schema.md,
    Metadata digests)."""
    record_metadata(store, attrs)


@pytest.fixture(scope="module")
def own_store(tmp_path_factory):
    """The study computed by the runner, its groups renamed to unknown data set names."""
    from distributed import Client

    from pcskm.runner import run_spec

    folder = tmp_path_factory.mktemp("own")
    computed = folder / "computed.zarr"
    with Client(processes=False, n_workers=1, threads_per_worker=2,
                dashboard_address=":0") as client:
        run_spec(parse_spec(SPEC + FOCUS), computed, client=client, progress=False)
    store = folder / "own.zarr"
    shutil.copytree(computed, store)
    for old, new in RENAMED.items():
        (store / old).rename(store / new)
    digests = zarr.open_group(str(store), mode="r").attrs["data_sha256"]
    _rewrite_root(store, data_sha256={RENAMED.get(name, name): digest
                                      for name, digest in digests.items()})
    # a chunk's digest binds it to its key, which names the group: record the renamed
    # groups' chunks and coordinates as stored, as pcskm does for the chunks it copies
    _record_as_stored(store)
    root = zarr.open_group(str(store), mode="r")
    _rewrite_root(store, **{COORDINATES: coordinate_digests(
        where(store), dataset_groups(root), store_binding(root.attrs.asdict()))})
    return store


@pytest.fixture(scope="module")
def own_report(own_store, tmp_path_factory):
    out = tmp_path_factory.mktemp("own-report")
    return write_report(own_store, out).parent


def case_values(store):
    """V per (selection, data set, algorithm, kind) from the cube alone: F at the selection's
    s (paper: per (kind, percent) the s with the largest mean over runs and folds, ties to the
    smallest; oracle: per cell the largest F over s; a non-sparse algorithm: its one fit),
    nanmean over runs and folds, mean over the percentages."""
    tree = xr.open_datatree(str(store), engine="zarr")
    rows = []
    for name in RENAMED.values():
        ds = tree[name].to_dataset()
        for algorithm in ds.algorithm.values:
            f = ds.f_score.sel(algorithm=algorithm, init="dkm++").astype(np.float64)
            f = f.dropna("sparsity", how="all")  # the entries this algorithm fills
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                paper = f.mean(("run", "fold")).max("sparsity")
                oracle = f.max("sparsity").mean(("run", "fold"))
            for selection, fbar in (("paper", paper), ("oracle", oracle)):
                for kind in fbar.kind.values:
                    rows.append({"selection": selection, "family": name,
                                 "algorithm": str(algorithm), "kind": str(kind),
                                 "V": float(fbar.sel(kind=kind).mean("percent",
                                                                     skipna=False))})
    return pd.DataFrame(rows)


def hodges_lehmann(d):
    walsh = [(d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d))]
    return float(np.median(walsh))


def holm(p):
    """Holm's adjusted p-values, written out: the i-th smallest times (m - i), running max."""
    order = np.argsort(p)
    adjusted, running = np.empty(len(p)), 0.0
    for i, k in enumerate(order):
        running = max(running, min(1.0, (len(p) - i) * p[k]))
        adjusted[k] = running
    return adjusted


def test_the_focus_comparison_is_scipys_on_the_cubes_case_values(own_store, own_report):
    """Every statistic of the focus comparison, at both levels, for the selections worked out
    here (the CSV holds 10 significant digits)."""
    tests = pd.read_csv(own_report / "wilcoxon_tests.csv")
    assert set(tests.analysis) == {1}  # the paper's Analysis 2 is not run
    assert set(tests.test) == {"Sparse2 vs LKM", "Sparse2 vs MyPCKM"}
    values = case_values(own_store)
    for selection in SELECTIONS:
        for level in ("cases", "datasets"):
            rows = tests[(tests.selection == selection) & (tests.level == level)]
            p_values = []
            for row in rows.itertuples():
                pivot = values[(values.selection == selection)].pivot_table(
                    index=["family", "kind"], columns="algorithm", values="V")
                x, y = pivot["Sparse2"], pivot[row.y]
                if level == "datasets":
                    x, y = x.groupby("family").mean(), y.groupby("family").mean()
                x, y = x.to_numpy(), y.to_numpy()
                d = x - y
                assert row.n == len(d) == (6 if level == "cases" else 2)
                assert (row.wins, row.losses, row.ties) == (
                    (d > 0).sum(), (d < 0).sum(), (d == 0).sum())
                assert row.mean_diff == pytest.approx(d.mean(), rel=1e-8, abs=1e-10)
                assert row.hl_estimate == pytest.approx(hodges_lehmann(d), rel=1e-8, abs=1e-10)
                if (d == 0).all():
                    assert np.isnan(row.p_value)
                    p_values.append(np.nan)
                    continue
                expected = scipy.stats.wilcoxon(
                    x, y, zero_method="wilcox", correction=False,
                    method="auto" if level == "cases" else "exact")
                assert row.p_value == pytest.approx(expected.pvalue, rel=1e-8)
                ranks = scipy.stats.rankdata(np.abs(d[d != 0]))
                nonzero = d[d != 0]
                assert row.rank_biserial == pytest.approx(
                    (ranks[nonzero > 0].sum() - ranks[nonzero < 0].sum()) / ranks.sum())
                p_values.append(expected.pvalue)
            present = ~np.isnan(p_values)
            assert present.any()
            np.testing.assert_allclose(
                rows.p_holm.to_numpy()[present], holm(np.array(p_values)[present]), rtol=1e-8)
            assert set(rows.holm_m) == {present.sum()}


def test_the_report_of_an_unknown_study_leaves_out_the_paper_only_parts(own_report):
    text = (own_report / "report.md").read_text()
    for heading in ("## 2. Table 1", "## 7. Paper vs ours"):
        assert text.split(heading)[1].split("\n\n")[1].startswith("Does not apply: ")
    assert "The cube holds none of the paper's data sets" in text
    assert "Focus algorithm: **Sparse2**" in text
    assert not (own_report / "table1.csv").exists() and not (own_report / "claims.csv").exists()
    # the performance grids have the study's data sets as columns, under their own names
    plotted = pd.read_csv(own_report / "figure1_performance_honest.csv")
    assert set(plotted.dataset) == set(RENAMED.values())
    assert set(plotted.algorithm) == {"LKM", "MyPCKM", "Sparse2"}
    assert (own_report / "figure_selections.png").exists()
    # fixed-loo pools the study's own data sets: each is chosen on the other
    assert "chosen on the other data sets of the cube" in text
    fixed = pd.read_csv(own_report / "fixed_s.csv")
    assert set(zip(fixed.dataset, fixed.training, strict=True)) == {("wine", "my-table"),
                                                                    ("my-table", "wine")}
    # the weights of the data set with known uninformative features (Brodinova 3+7's last 7)
    drawn = pd.read_csv(own_report / "figure_weights.csv")
    assert set(zip(drawn.dataset, drawn.algorithm, strict=True)) == {("my-table", "Sparse2")}
    assert list(drawn.drop_duplicates("feature").uninformative) == [False] * 3 + [True] * 7
    # the s selections of the sparse algorithm, per data set
    best = pd.read_csv(own_report / "best_s.csv")
    assert set(best.algorithm) == {"Sparse2"} and set(best.dataset) == set(RENAMED.values())


def test_a_store_without_pcskm_or_focus_says_so(own_store, tmp_path):
    store = tmp_path / "nofocus.zarr"
    shutil.copytree(own_store, store)
    _rewrite_root(store, spec_toml=SPEC)  # the same study, no [report] table
    out = write_report(store, tmp_path / "report").parent
    text = (out / "report.md").read_text()
    assert "No focus algorithm: the cube has no PCSKM and the spec names no focus" in text
    for heading in ("### 3.4 Analysis 1 under every selection",
                    "## 5. Wilcoxon signed-rank analyses"):
        assert text.split(heading)[1].split("\n\n")[1].startswith("Not computed: the study "
                                                                  "has no focus algorithm")
    assert not (out / "wilcoxon_tests.csv").exists()
    assert (out / "performance.csv").exists() and (out / "failures.csv").exists()


def test_a_failure_status_added_to_the_store_is_counted(own_store, own_report, tmp_path):
    """A failure status appended to the store's flags (as `error` was for user algorithms) is a
    failed fit in failures.csv and counts.csv without any code naming it."""
    store = tmp_path / "error.zarr"
    shutil.copytree(own_store, store)
    flags = dict(zarr.open_group(str(own_store), mode="r").attrs["status_flags"])
    error = len(flags)
    flags[str(error)] = "diverged"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        group = zarr.open_group(str(store / "wine"), mode="r+")
        status = group["status"]
        status.attrs.update({"flag_values": list(range(error + 1)),
                             "flag_meanings": " ".join(flags[str(c)] for c in range(error + 1))})
        values = status[:]
        lkm = list(group["algorithm"][:]).index("LKM")
        at = (lkm, 0, 0, 0, slice(None), slice(None), 0)  # dkm++, first kind, 1 %, no-s entry
        assert set(np.unique(values[at])) <= {1, 2}  # converged or max_iter before
        values[at] = error
        status[:] = values
        f_score = group["f_score"][:]
        f_score[at] = np.nan
        group["f_score"][:] = f_score
    _rewrite_root(store, status_flags=flags)
    _record_as_stored(store)  # the chunks written here by hand
    out = write_report(store, tmp_path / "report").parent
    n_errors = values[at].size
    old = pd.read_csv(own_report / "failures.csv")
    new = pd.read_csv(out / "failures.csv")
    key = ["dataset", "algorithm", "init", "kind", "percent"]
    merged = old.merge(new, on=key, suffixes=("_old", "_new"))
    added = merged.failed_fits_new - merged.failed_fits_old
    assert added.sum() == n_errors
    assert set(merged[added > 0].algorithm) == {"LKM"} and set(merged[added > 0].dataset) == {
        "wine"}
    counts = pd.read_csv(out / "counts.csv").set_index("count")
    old_counts = pd.read_csv(own_report / "counts.csv").set_index("count")
    assert counts.loc["failed_fits", "value"] == old_counts.loc["failed_fits", "value"] + n_errors
    assert counts.loc["failed_fits", "definition"] == (
        "fits with status empty_cluster, degenerate_weights, error or diverged (F = NaN)")
    assert "A fit fails with status empty_cluster, degenerate_weights, error or diverged" in (
        out / "report.md").read_text()


def test_unknown_data_sets_are_families_of_their_own():
    reported = families.reported(("wine", "digits048-2", "iris", "digits048-1"))
    assert [(f.label, f.members) for f in reported[2:]] == [("wine", ("wine",))]
    assert [f.label for f in reported[:2]] == ["fisheriris", "digits 0-4-8"]
    assert families.family_of("my-table").members == ("my-table",)


def test_the_report_table_is_validated_and_not_hashed():
    plain = parse_spec(SPEC)
    focused = parse_spec(SPEC + FOCUS)
    assert focused.focus == "Sparse2" and plain.focus is None
    assert focused.hash() == plain.hash() and focused.to_dict() == {
        **plain.to_dict(), "source_text": focused.source_text}
    with pytest.raises(ValueError, match=r"report.focus 'Sparse' is not an algorithm of the "
                                         r"spec; did you mean 'Sparse2'\? \(the spec's "
                                         r"algorithms: LKM, MyPCKM, Sparse2\)"):
        parse_spec(SPEC + '\n[report]\nfocus = "Sparse"\n')
    with pytest.raises(ValueError, match=r"unknown key 'fokus' in \[report\]; did you mean "
                                         r"'focus'\?"):
        parse_spec(SPEC + '\n[report]\nfokus = "Sparse2"\n')
    with pytest.raises(ValueError, match="report must be a table"):
        parse_spec('report = "Sparse2"\n' + SPEC)


def test_pcskm_report_focus_overrides_the_spec(own_store, tmp_path):
    out = write_report(own_store, tmp_path / "lkm", focus="LKM").parent
    tests = pd.read_csv(out / "wilcoxon_tests.csv")
    assert set(tests.test) == {"LKM vs MyPCKM", "LKM vs Sparse2"} and set(tests.x) == {"LKM"}
    # issue 65: two data sets and Holm over two tests cannot reach 0.05, which the headline
    # says with the number needed (scipy's exact p of n differences of one sign); the weight
    # caption names the algorithms the study runs, not SKM, PCSKM and MPCKM
    text = (out / "report.md").read_text()
    sets = tests[(tests.analysis == 1) & (tests.level == "datasets")]
    n, m = int(sets.n.max()), int(sets.holm_m.max())
    need = next(k for k in range(1, 30) if min(1, m * scipy.stats.wilcoxon(
        np.arange(1.0, k + 1), method="exact").pvalue) < 0.05)
    assert (n, m, need) == (2, 2, 7)
    summary = text.split("**Contents**")[0]
    assert re.search(r"LKM's comparisons use 2 data sets \((wine, my-table|my-table, wine)\), "
                     r"and an exact signed-rank test adjusted by Holm over 2 tests can reach "
                     rf"p < 0\.05 only with {need} or more", summary), summary
    weights = text[text.index("## 6. Feature weights"):text.index("## 7.")]
    assert "Sparse2: weights at the s" in weights
    assert "MPCKM" not in weights and "SKM, PCSKM" not in weights
    with pytest.raises(ValueError, match=r"--focus 'PCSKM' is not an algorithm of .*own.zarr; "
                                         r"did you mean 'MyPCKM'\? \(its algorithms: LKM, "
                                         r"MyPCKM, Sparse2\)"):
        write_report(own_store, tmp_path / "none", focus="PCSKM")
    assert not (tmp_path / "none").exists()  # refused before anything is written
    result = pcskm("report", own_store, "--out", tmp_path / "cli", "--focus", "Sparse")
    assert result.returncode != 0 and "--focus 'Sparse' is not an algorithm" in result.stderr
    assert "; did you mean 'Sparse2'?" in result.stderr  # issue 65, item 11


def _plan_input(labels, algorithms=("LKM", "SKM", "PCKM", "MPCKM", "PCSKM", "Mine")):
    """Family aggregates with cells expected everywhere but (seeding, must-link), which the
    spec does not run."""
    coords = {"family": list(labels), "selection": ["paper"], "algorithm": list(algorithms),
              "init": ["dkm++", "seeding"], "kind": ["random", "must-link"], "percent": [1.0]}
    expected = xr.DataArray(np.ones([len(c) for c in coords.values()], int), coords=coords,
                            dims=list(coords))
    expected.loc[{"init": "seeding", "kind": "must-link"}] = 0
    return SimpleNamespace(families=xr.Dataset({"n_expected": expected}))


def test_the_papers_analysis_1_is_the_special_case_of_pcskm_on_its_data_sets():
    assert statistics.study_plan(_plan_input(["fisheriris", "Brodinova 5+5"]),
                                 "PCSKM") is statistics.PAPER
    # a data set of the user's own: PCSKM against every other algorithm, on what the cube has
    plan = statistics.study_plan(_plan_input(["fisheriris", "wine"]), "PCSKM")
    assert not plan.paper and plan.focus == "PCSKM"
    assert plan.others == ("LKM", "SKM", "PCKM", "MPCKM", "Mine")
    assert plan.settings == (("dkm++", "random"), ("dkm++", "must-link"), ("seeding", "random"))
    assert plan.datasets == ("fisheriris", "wine")
    # another focus on the paper's data, and PCSKM without any of the paper's six
    mine = statistics.study_plan(_plan_input(["fisheriris"]), "Mine")
    assert not mine.paper and mine.others == ("LKM", "SKM", "PCKM", "MPCKM", "PCSKM")
    assert not statistics.study_plan(_plan_input(["Brodinova 5+5"]), "PCSKM").paper

"""One count of cells and fits everywhere (issue 13, item 7; docs/reference/cube-schema.md,
Counts): the plan (what the dry run and the run print), the run's summary and record,
``pcskm status`` and the report's coverage table give the numbers of the definition,
computed here from the spec alone."""

import pytest
import zarr

from pcskm.experiments.report import coverage
from pcskm.experiments.report.fits import fit_table, open_store
from pcskm.experiments.spec import load_spec
from pcskm.runner import run_spec
from pcskm.runner.store import CubeView
from pcskm.runner.summary import counts, status_text
from pcskm.runner.tasks import parse_only, plan

SMOKE = load_spec("smoke")
ONLY = "dataset=iris"
IRIS_FEATURES = 4


def defined_counts(spec, dataset_features):
    """(cells, fits) of the definition: a cell per (data set, algorithm, init, kind, percent,
    run, fold) the spec runs (Seeding only with its seeding kinds); a fit per cell and s
    (every s of the grid for SKM and PCSKM), a fit shared by cells counted in each."""
    cells = fits = 0
    for n_features in dataset_features:
        for variant in spec.algorithms:
            n_s = (len(spec.sparsity_grid(n_features)) if variant.estimator in ("SKM", "PCSKM")
                   else 1)
            for init in spec.inits:
                kinds = spec.seeding_kinds if init == "seeding" else spec.kinds
                n = len(kinds) * len(spec.percentages) * spec.n_runs * spec.n_folds
                cells += n
                fits += n * n_s
    return cells, fits


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from distributed import Client

    path = tmp_path_factory.mktemp("counts") / "smoke.zarr"
    with Client(processes=False, n_workers=1, threads_per_worker=2,
                dashboard_address=":0") as client:
        summary = run_spec(SMOKE, path, client=client, selection=parse_only(ONLY),
                           progress=False)
    assert not summary.errors and not summary.interrupted
    return path, summary


def test_plan_run_record_status_and_report_count_alike(store, tmp_path):
    path, summary = store
    cells, fits = defined_counts(SMOKE, [IRIS_FEATURES])
    assert (cells, fits) == (400, 80 * 3 + 2 * 80 * len(SMOKE.sparsity_grid(IRIS_FEATURES)))

    the_plan = plan(SMOKE, CubeView.planned(tmp_path / "fresh.zarr", SMOKE),
                    selection=parse_only(ONLY))
    assert (the_plan.n_cells, the_plan.n_fits) == (cells, fits)  # dry run, run's first line
    assert (summary.n_cells, summary.n_fits) == (cells, fits)  # the run's last line
    record = zarr.open_group(str(path), mode="r").attrs["runs"][-1]
    assert (record["cells"], record["fits"]) == (cells, fits)
    assert record["selection"] == ONLY

    rows = counts(path)  # pcskm status
    iris = [row for row in rows if row[0] == "iris"]
    assert sum(row[3] for row in iris) == cells and sum(row[5] for row in iris) == fits

    opened = open_store(path)  # pcskm report, coverage.csv
    table = coverage.table("iris", fit_table(opened, "iris"))
    assert (int(table.computed.sum()), int(table.fits.sum())) == (cells, fits)


def test_status_shows_the_selection_run_and_the_whole_spec(store):
    path, _ = store
    whole, _ = defined_counts(SMOKE, [IRIS_FEATURES, 10])  # iris and brodinova-5-5
    selected, _ = defined_counts(SMOKE, [IRIS_FEATURES])
    text = status_text(path)
    assert (f"selection --only {ONLY} (run into this store): {selected} cells, {selected} "
            "done, 0 missing") in text
    assert f"whole spec: {whole} cells, {selected} done, {whole - selected} missing" in text


def test_status_reads_only_the_done_markers_and_attributes(store, tmp_path):
    """pcskm status answers in about a second on a paper-sized store because it reads no fit
    variable: garbling every chunk of them changes nothing in its output."""
    import shutil

    path, _ = store
    copy = tmp_path / path.name
    shutil.copytree(path, copy)
    garbled = 0
    for variable in ("f_score", "precision", "recall", "satisfied", "status", "n_iter",
                     "weights", "n_constraints"):
        for chunk in (copy / "iris" / variable).rglob("c/**/*"):
            if chunk.is_file():
                chunk.write_bytes(b"not a chunk" * 10)
                garbled += 1
    assert garbled >= 8
    assert status_text(copy).replace(str(copy), str(path)) == status_text(path)

"""Which code computed each cell (docs/reference/cube-schema.md, Code provenance): a user
module edited between runs, the store read back against the SHA-256 of each version of the
file written here, ``pcskm status`` naming both codes, ``--recompute-changed`` computing
exactly the cells of the old code again, and a store made before the run index existed."""

import hashlib
import importlib
import shutil
import sys

import numpy as np
import pytest
import zarr
from test_user_algorithms import HERE, group, spec_text

from pcskm.experiments.spec import parse_spec
from pcskm.runner import run_spec
from pcskm.runner.store import verify
from pcskm.runner.summary import status_text

IN_PROCESS_CLIENT = True  # one worker thread in this process: it sees the module reloaded
MODULE = "edited_for_pcskm"
SOURCE = f"from {HERE} import WrappedPCKM as Mine  # noqa: F401\n"


def spec_with(percentages):
    text = spec_text({"MINE": f'estimator = "{MODULE}:Mine"'}, ["PCKM", "MINE"])
    return parse_spec(text.replace("percentages = [1, 5]", f"percentages = {percentages}"))


def cells_per_algorithm(spec):
    """The cells of one algorithm of ``spec``, counted from its fields: every (init, kind)
    pair it runs (Seeding only with the seeding kinds), percentage, run and fold."""
    kinds = dict.fromkeys((*spec.kinds, *spec.seeding_kinds))
    pairs = sum(kind in (spec.seeding_kinds if init == "seeding" else spec.kinds)
                for init in spec.inits for kind in kinds)
    return pairs * len(spec.percentages) * spec.n_runs * spec.n_folds


def cell_sources(store, dataset="iris"):
    """Per done block of MINE: the percent and the source SHA-256 recorded by the run that
    marked it done, read from the store's arrays and run records."""
    root = zarr.open_group(str(store), mode="r")
    runs, g = root.attrs["runs"], root[dataset]
    a = [str(v) for v in g["algorithm"][:]].index("MINE")
    done, index, percents = g["done"][:][a], g["run_index"][:][a], g["percent"][:]
    return [(float(percents[p]), runs[index[i, k, p, r]]["code"]["MINE"]["source_sha256"])
            for i, k, p, r in zip(*np.nonzero(done), strict=True)]


@pytest.fixture()
def module(tmp_path, monkeypatch):
    path = tmp_path / f"{MODULE}.py"
    path.write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield path
    sys.modules.pop(MODULE, None)


def edit(path, line):
    path.write_text(path.read_text() + line)
    importlib.reload(importlib.import_module(MODULE))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_edited_module_keeps_the_old_cells_code_and_recomputes_them(module, tmp_path,
                                                                       client):
    old = hashlib.sha256(module.read_bytes()).hexdigest()
    store = tmp_path / "store.zarr"
    first = spec_with([1])
    assert run_spec(first, store, client=client, progress=False).complete
    n_old = cells_per_algorithm(first)
    assert len(cell_sources(store)) * first.n_folds == n_old
    assert {sha for _, sha in cell_sources(store)} == {old}

    new = edit(module, "# version 2\n")
    assert run_spec(spec_with([1]), store, client=client, progress=False) is None  # nothing
    # the case: the store now defines MINE by the new file, its cells keep the old
    definitions = zarr.open_group(str(store), mode="r").attrs["algorithm_definitions"]
    assert definitions["MINE"]["source_sha256"] == new
    assert {sha for _, sha in cell_sources(store)} == {old}
    text = status_text(store)
    assert f"MINE: {n_old} cells by module SHA-256 {old[:12]} (run 1)" in text

    second = spec_with([1, 5])
    summary = run_spec(second, store, client=client, progress=False)
    assert summary.complete and summary.n_cells == 2 * cells_per_algorithm(spec_with([5]))
    sources = cell_sources(store)
    assert {sha for percent, sha in sources if percent == 1} == {old}
    assert {sha for percent, sha in sources if percent == 5} == {new}
    assert len(zarr.open_group(str(store), mode="r").attrs["runs"]) == 2
    text = status_text(store)
    assert f"{n_old} cells by module SHA-256 {old[:12]} (run 1)" in text
    assert f"{n_old} cells by module SHA-256 {new[:12]} (run 2, current)" in text
    assert "PCKM:" not in text  # a built-in of one code is not listed

    before = group(store, "iris")
    again = run_spec(second, store, client=client, progress=False, recompute_changed=True)
    assert again.complete and again.n_cells == n_old  # MINE at 1 %, not PCKM, not 5 %
    assert {sha for _, sha in cell_sources(store)} == {new}
    after = group(store, "iris")
    for name in ("f_score", "status", "satisfied"):  # a comment changes no value
        np.testing.assert_array_equal(after[name].values, before[name].values)
    text = status_text(store)
    assert old[:12] not in text
    assert f"MINE: {2 * n_old} cells by module SHA-256 {new[:12]} (runs 2, 3, current)" in text
    assert run_spec(second, store, client=client, progress=False,
                    recompute_changed=True) is None  # nothing changed any more


@pytest.mark.filterwarnings("ignore:Consolidated metadata")
def test_a_store_made_before_the_run_index_reads_unknown_and_gains_it(module, tmp_path,
                                                                       client):
    from pcskm.runner.store import record_metadata

    store = tmp_path / "store.zarr"
    assert run_spec(spec_with([1]), store, client=client, progress=False).complete
    root = zarr.open_group(str(store), mode="r+")
    root.attrs["runs"] = [{k: v for k, v in run.items() if k != "code"}
                          for run in root.attrs["runs"]]
    shutil.rmtree(store / "iris" / "run_index")  # as a store of version 3 made before it
    zarr.consolidate_metadata(str(store))
    record_metadata(store)
    assert verify(store).ok
    n_old = cells_per_algorithm(spec_with([1]))
    assert f"MINE: {n_old} cells of unknown code" in status_text(store)

    new = edit(module, "# version 2\n")
    summary = run_spec(spec_with([1, 5]), store, client=client, progress=False,
                       recompute_changed=True)  # the cells of unknown code are kept
    assert summary.n_cells == 2 * cells_per_algorithm(spec_with([5]))
    assert verify(store).ok
    index = zarr.open_group(str(store), mode="r")["iris"]["run_index"][:]
    done = zarr.open_group(str(store), mode="r")["iris"]["done"][:] > 0
    assert set(np.unique(index[done])) == {-1, 1}  # unknown, and the second run
    text = status_text(store)
    assert (f"MINE: {n_old} cells of unknown code; {n_old} cells by module SHA-256 "
            f"{new[:12]} (run 2, current)") in text


def test_a_killed_run_that_marked_done_blocks_again_is_recorded_with_its_code(module,
                                                                            tmp_path, client):
    """A forced run (or --recompute-changed) killed after marking done again blocks that were
    done leaves as many done cells as before: the next run records it all the same, by the
    blocks that name it, so that they keep its code."""
    from pcskm.runner.store import Cube, prepare

    store = tmp_path / "store.zarr"
    spec = spec_with([1])
    assert run_spec(spec, store, client=client, progress=False).complete
    new = edit(module, "# version 2\n")
    cube = Cube(store)
    cube.begin_run({"spec": spec.name, "code": {"MINE": {"source_sha256": new}}})
    a = cube.layout.groups["iris"].algorithms.index("MINE")
    cube.run_index["iris"][a][cube.done["iris"][a] > 0] = cube.run_number
    cube.write_markers("iris")  # killed here: no record, its note left
    n_mine = cells_per_algorithm(spec)
    prepare(store, spec)
    runs = zarr.open_group(str(store), mode="r").attrs["runs"]
    assert len(runs) == 2 and runs[1]["killed"] and runs[1]["cells"] == n_mine
    assert {sha for _, sha in cell_sources(store)} == {new}


def test_the_resume_command_keeps_recompute_changed_and_drops_force():
    """An interrupted ``--recompute-changed`` run resumes with the option (the cells it has
    computed again now carry the current code), unlike ``--force``, which cleared its done
    markers when it began."""
    from pcskm.runner.cli import _resume_command, build_parser

    args = build_parser().parse_args(["run", "my.toml", "--recompute-changed", "--force"])
    assert args.recompute_changed
    words = _resume_command(args, "s.zarr").split()
    assert "--recompute-changed" in words and "--force" not in words


def test_a_report_names_each_code_of_an_algorithm_with_its_cells(module, tmp_path, client):
    """The issue's case (65, item 3): the module edited between two runs and
    ``--recompute-changed`` on one data set; report.md names both module digests in its
    summary, each with the cells counted here from the run records and the run index."""
    from collections import Counter

    from pcskm.experiments.report import write_report
    from pcskm.runner.tasks import parse_only

    def both(percentages):
        text = spec_text({"MINE": f'estimator = "{MODULE}:Mine"'}, ["PCKM", "MINE"])
        return parse_spec(text.replace("percentages = [1, 5]", f"percentages = {percentages}")
                          .replace('datasets = ["iris"]', 'datasets = ["iris", "brodinova-3-7"]'))

    store = tmp_path / "store.zarr"
    old = hashlib.sha256(module.read_bytes()).hexdigest()
    assert run_spec(both([1]), store, client=client, progress=False).complete
    new = edit(module, "# version 2\n")
    again = run_spec(both([1]), store, client=client, progress=False,
                     selection=parse_only("dataset=iris"), recompute_changed=True)
    assert again.complete
    counted = Counter()
    for dataset in ("iris", "brodinova-3-7"):
        counted.update(sha for _, sha in cell_sources(store, dataset))
    n_folds = both([1]).n_folds
    assert set(counted) == {old, new}  # iris recomputed, brodinova-3-7 kept

    text = write_report(store, tmp_path / "report").read_text()
    summary = text[:text.index("**Contents**")]
    assert "cells from 2 versions" in summary
    for sha in (old, new):
        assert f"{counted[sha] * n_folds:,} cells by module SHA-256 {sha[:12]}" in summary
    assert "PCKM: one code" in text  # PCKM was not recomputed: one code, not in the summary
    assert "PCKM: **cells from" not in text

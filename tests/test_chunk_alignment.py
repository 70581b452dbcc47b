"""Chunks aligned to tasks (docs/reference/cube-schema.md, Chunks and size): every per-cell
variable has one chunk per (kind, percent); every chunk that a run computes is in exactly one
task of its plan (fresh, resumed, ``--only``, ``--force``, an extended store), which computes
exactly its missing cells; a store of schema version 1 is read, verified and reported, refused
by ``pcskm run`` before anything is computed, and moved into a new store with ``--from``."""

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import zarr
from cubes import STORE_RECORDS, results_data

from pcskm.experiments.protocol import pct10
from pcskm.experiments.report import write_report
from pcskm.experiments.spec import load_spec, parse_spec
from pcskm.runner import run_spec
from pcskm.runner.cli import main
from pcskm.runner.store import (
    AUC_SCORES,
    CV_SCORES,
    GAP_SCORES,
    Cube,
    CubeView,
    prepare,
    spec_layout,
    verify,
)
from pcskm.runner.store.create import write_layout
from pcskm.runner.tasks import plan

IN_PROCESS_CLIENT = True  # conftest's client: one worker thread in this process
SMOKE = load_spec("smoke")
SCORED = """
name = "aligned"
seed = 0
datasets = ["iris"]
algorithms = ["LKM", "SKM", "PCSKM"]
inits = ["dkm++", "seeding"]
kinds = ["random", "must-link"]
percentages = [1, 5.5, 10]
n_runs = 3
n_folds = 10
cv_folds = 3
gap_permutations = 2
"""
COORDINATES = {"algorithm", "init", "kind", "percent", "run", "fold", "sparsity", "feature",
               "feature_name", "uninformative"}
MARKERS = {"done", "scored", "run_index", "chunk_sha256"}  # written whole by the client


def runnable(spec, view, name, selection=None):
    """The blocks and runs (algorithm, init, kind, percent, run) of data set ``name`` that
    the spec runs (Seeding only with its seeding_kinds) and ``selection`` (label ->
    allowed values, as sets) keeps, from the spec and the group's labels alone."""
    group = view.layout.groups[name]
    labels = (group.algorithms, group.inits, group.kinds, [pct10(p) for p in group.percents])
    keep = selection or {}
    axes = [np.array([value in keep.get(dim, {value}) for value in values])
            for dim, values in zip(("algorithm", "init", "kind", "percent"), labels,
                                   strict=True)]
    axes[0] &= np.isin(group.algorithms, [v.name for v in spec.algorithms])
    axes[1] &= np.isin(group.inits, spec.inits)
    axes[3] &= np.isin(labels[3], [pct10(p) for p in spec.percentages])
    mask = np.ones(view.done[name].shape, bool)
    for axis, allowed in enumerate(axes):
        mask &= allowed.reshape([-1 if n == axis else 1 for n in range(5)])
    mask[..., spec.n_runs:] = False
    for k, kind in enumerate(group.kinds):
        for i, init in enumerate(group.inits):
            if kind not in (spec.seeding_kinds if init == "seeding" else spec.kinds):
                mask[:, i, k] = False
    return mask


def assert_aligned(tasks, view, missing):
    """Every chunk (data set, kind, percent: the rule of the schema) of the plan ``tasks`` is
    in one task; the plan computes exactly the ``missing`` cells (per data set, a boolean
    (algorithm, init, kind, percent, run) array), each once, and no other chunk; a task
    holds, per chunk, the settings (algorithm, init) that miss any of its cells, each with
    every run that any of them misses, and skips the cells among them that are done."""
    counts = {name: np.zeros(view.done[name].shape, int) for name in view.done}
    owner = {name: np.full(view.done[name].shape[2:4], -1) for name in view.done}
    for n, task in enumerate(tasks):
        name = task.dataset
        for b, block in enumerate(task.blocks):
            k, p = view.block_index(name, task.settings[0].algorithm, task.settings[0].init,
                                    block.kind, block.percent)[2:]
            assert owner[name][k, p] in (-1, n), (
                f"chunk {name} {block.kind} {block.percent} in tasks {owner[name][k, p]} and {n}")
            owner[name][k, p] = n
            chunk = missing[name][:, :, k, p]
            assert list(block.runs) == list(np.flatnonzero(chunk.any(axis=(0, 1))))
            settings = {view.block_index(name, s.algorithm, s.init) for s in task.settings}
            assert settings == set(zip(*np.nonzero(chunk.any(axis=2)), strict=True))
            for index, setting in enumerate(task.settings):
                a, i = view.block_index(name, setting.algorithm, setting.init)
                counts[name][a, i, k, p, task.runs_of(index, b)] += 1
    for name, wanted in missing.items():
        np.testing.assert_array_equal(counts[name], wanted.astype(int), err_msg=name)
        assert ((owner[name] >= 0) == wanted.any(axis=(0, 1, 4))).all()


def set_markers(view, done):
    """Mark the blocks ``done`` (per data set) done, with every selection score."""
    for name, marks in done.items():
        view.done[name][...] = marks
        view.scored[name] = ((CV_SCORES | GAP_SCORES | AUC_SCORES) * marks).astype(np.uint8)


def test_every_per_cell_variable_has_one_chunk_per_kind_and_percent(tmp_path):
    prepare(tmp_path / "aligned.zarr", parse_spec(SCORED))
    root = zarr.open_group(str(tmp_path / "aligned.zarr"), mode="r")
    assert root.attrs["schema_version"] == 3
    group = root["iris"]
    per_cell = set(group.array_keys()) - COORDINATES - MARKERS
    assert {"f_score", "status", "weights", "weights_per_s", "n_constraints", "cv_score",
            "cv_folds_used", "gap", "gap_sd"} <= per_cell
    for name in per_cell:
        array = group[name]
        dims = array.metadata.dimension_names
        assert array.chunks == tuple(1 if dim in ("kind", "percent") else size
                                     for dim, size in zip(dims, array.shape, strict=True)), name
    for name in MARKERS:
        assert group[name].chunks == group[name].shape


@pytest.mark.parametrize(("name", "n_tasks"), [
    pytest.param("paper", 1118, marks=pytest.mark.slow),  # plans 17 million cells: 16 s
    ("extended", 132)])
def test_a_plan_gives_each_chunk_to_one_task(name, n_tasks, data_dir, clustbench_dir):
    """Fresh, resumed from random done markers, an ``--only`` selection of it, the same
    ``--force``d, and an extension (the cells of a smaller spec done)."""
    spec = load_spec(name)
    view = CubeView.planned(Path("never-created.zarr"), spec, data_dir)
    every = {group: runnable(spec, view, group) for group in view.done}
    fresh = plan(spec, view, data_dir=data_dir)
    assert_aligned(fresh.tasks, view, every)
    assert len(fresh.tasks) == n_tasks  # docs/reference/cube-schema.md, Chunks and size

    rng = np.random.default_rng(3)
    set_markers(view, {group: (rng.random(mask.shape) < 0.8) & mask
                       for group, mask in every.items()})
    resumed = plan(spec, view, data_dir=data_dir)
    assert_aligned(resumed.tasks, view, {g: every[g] & ~view.complete(g) for g in every})
    assert 0 < resumed.n_cells < fresh.n_cells

    percents = {pct10(spec.percentages[0]), pct10(spec.percentages[-1])}
    keep = {"algorithm": {a.name for a in spec.algorithms if a.name.startswith("PCSKM")}
            | {"SKM"}, "kind": {"random", "must-link"}, "percent": percents}
    only = {"algorithm": ["PCSKM*", "SKM"], "kind": ["random", "must-link"],
            "percent": [str(spec.percentages[0]), str(spec.percentages[-1])]}
    selected = {group: runnable(spec, view, group, keep) for group in every}
    chosen = plan(spec, view, selection=only, data_dir=data_dir)
    assert_aligned(chosen.tasks, view, {g: selected[g] & ~view.complete(g) for g in every})
    forced = plan(spec, view, selection=only, force=True, data_dir=data_dir)
    assert_aligned(forced.tasks, view, selected)

    smaller = {"algorithm": {a.name for a in spec.algorithms[:-1]},
               "init": set(spec.inits[:-1]), "percent": {pct10(p) for p in spec.percentages[:-1]}}
    grown = {group: runnable(spec, view, group, smaller) for group in every}
    for marks in grown.values():
        marks[..., spec.n_runs - 2:] = False  # two runs more
    set_markers(view, grown)
    extended = plan(spec, view, data_dir=data_dir)
    assert_aligned(extended.tasks, view, {g: every[g] & ~grown[g] for g in every})


def version_1_store(path, spec):
    """An empty store of ``spec`` laid out as schema version 1 stores were: one chunk per
    (algorithm, init, kind) of every per-cell variable, with every percent, run, fold and s;
    ``n_constraints`` one chunk."""
    layout = dataclasses.replace(spec_layout(spec), schema_version=1)
    write_layout(path, layout, spec)
    group = zarr.open_group(str(path), mode="r")[spec.datasets[0]]
    n_alg, n_init, n_kind, n_pct, n_run, n_fold, n_s = group["f_score"].shape
    assert group["f_score"].chunks == (1, 1, 1, n_pct, n_run, n_fold, n_s)
    assert group["weights"].chunks == (1, 1, 1, n_pct, n_run, n_fold, group["weights"].shape[-1])
    assert group["n_constraints"].chunks == group["n_constraints"].shape
    return path


def cube_values(path):
    """Every group's variables and coordinates, loaded, and the root attributes but for the
    run log, the metadata digests and the schema version."""
    tree = xr.open_datatree(str(path), engine="zarr")
    attrs = {k: v for k, v in tree.attrs.items()
             if k not in (*STORE_RECORDS, "schema_version")}
    return attrs, {name: results_data(tree[name].to_dataset()).load() for name in tree.children}


@pytest.fixture(scope="module")
def reference(client, tmp_path_factory):
    """The smoke spec run into a new store."""
    store = tmp_path_factory.mktemp("reference") / "smoke.zarr"
    assert not run_spec(SMOKE, store, client=client, progress=False).errors
    return store


def assert_same_values(a, b):
    attrs_a, groups_a = cube_values(a)
    attrs_b, groups_b = cube_values(b)
    assert attrs_a == attrs_b and groups_a.keys() == groups_b.keys()
    for name, values in groups_b.items():
        xr.testing.assert_identical(groups_a[name], values)


def test_scattered_missing_cells_are_computed_alone_in_their_chunks_task(reference, client,
                                                                          tmp_path):
    """Done markers cleared at random (blocks and runs, as an earlier ``--only`` run or a
    repair leaves them): the run computes exactly those cells, one task per chunk, and keeps
    the done cells of the same chunks as stored: the cube is the reference's."""
    store = tmp_path / "scattered.zarr"
    shutil.copytree(reference, store)
    rng = np.random.default_rng(5)
    cleared = 0
    for name in SMOKE.datasets:
        group = zarr.open_group(str(store), mode="r+")[name]
        marks = group["done"][...]
        clear = (rng.random(marks.shape) < 0.3) & (marks == 1)
        marks[clear] = 0
        group["done"][...] = marks
        f_score = group["f_score"][...]
        f_score[clear] = -1  # what the run must compute again
        group["f_score"][...] = f_score
        cleared += int(clear.sum()) * SMOKE.n_folds
    cube = Cube(store)  # the chunks rewritten above recorded, as a run that wrote them does
    for name in SMOKE.datasets:
        kinds, percents = cube.done[name].shape[2:4]
        cube.record_stored(name, np.ndindex(kinds, percents), ("f_score",))
        cube.write_markers(name)
    assert cleared and verify(store).ok
    summary = run_spec(SMOKE, store, client=client, progress=False)
    assert summary.n_cells == cleared
    assert_same_values(store, reference)


def test_a_version_1_store_is_read_refused_by_run_and_moved_with_from(reference, client,
                                                                     tmp_path, capsys):
    """The smoke spec's cells in a version 1 store (copied there from the reference, half of
    them): status, verify and report read it; ``pcskm run`` (and its dry run) stops before
    computing anything with the message that says how to move it; ``--from`` moves it into a
    new store, which then computes the rest and equals the reference."""
    from pcskm.runner.reuse import copy_done_blocks
    from pcskm.runner.store import Cube, IncompatibleStore

    old = version_1_store(tmp_path / "old.zarr", SMOKE)
    copy_done_blocks(Cube(old), reference)
    half = zarr.open_group(str(old), mode="r+")[SMOKE.datasets[0]]
    half["done"][...] = 0  # the other data set's cells only
    before = sorted(p.relative_to(old) for p in old.rglob("*"))
    assert verify(old).ok
    assert main(["status", str(old)]) == 0
    assert main(["verify", str(old)]) == 0
    write_report(old, tmp_path / "report")
    assert any((tmp_path / "report").iterdir())
    capsys.readouterr()
    for dry in ([], ["--dry-run"]):
        assert main(["run", "smoke", "--store", str(old), "--workers", "1", *dry]) == 2
        error = capsys.readouterr().err
        assert f"{old} is a store of schema version 1" in error, error
        assert f"pcskm run SPEC --store NEW --from {old}" in error
        assert "Traceback" not in error and len(error.strip().splitlines()) == 1
    with pytest.raises(IncompatibleStore, match="schema version 1"):
        run_spec(SMOKE, old, client=client, progress=False)
    assert sorted(p.relative_to(old) for p in old.rglob("*")) == before  # nothing written
    root = zarr.open_group(str(old), mode="r")
    assert root.attrs["schema_version"] == 1 and root.attrs["runs"] == []
    moved = tmp_path / "moved.zarr"  # to the new layout: a new store, the cells copied
    summary = run_spec(SMOKE, moved, client=client, progress=False, reuse_from=old)
    assert 0 < summary.n_cells < plan(SMOKE, CubeView.planned(tmp_path / "none.zarr",
                                                               SMOKE)).n_cells
    assert zarr.open_group(str(moved), mode="r").attrs["schema_version"] == 3
    assert_same_values(moved, reference)


def test_the_quick_guides_log_counts_the_plan_of_the_quick_spec():
    """docs/guide/quick-study.md's example log gives the cells, fits and tasks of the quick
    spec's plan into a new store (it once said 53 tasks after the plan made 19)."""
    import re

    spec = load_spec("quick")
    fresh = plan(spec, CubeView.planned(Path("never-created.zarr"), spec, None))
    guide = (Path(__file__).resolve().parents[1] / "docs/guide/quick-study.md").read_text()
    line = re.search(r"^pcskm: spec quick: .*$", guide, re.M).group(0)
    assert line == (f"pcskm: spec quick: {fresh.n_cells_spec} cells in the spec, 0 already "
                    f"done; computing {fresh.n_cells} cells ({fresh.n_fits} fits) in "
                    f"{len(fresh.tasks)} tasks")
    n = len(fresh.tasks)
    assert f"pcskm: {n} of {n} tasks written ({fresh.n_cells} cells, {fresh.n_fits} fits," \
        in guide

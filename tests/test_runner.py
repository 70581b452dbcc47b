"""The runner end to end on a LocalCluster: the cube's content, reproducibility across
worker counts, killed workers (between tasks and while writing) and clients, interruptions,
the order in which tasks are written and marked done, spec extensions and refusals."""

import os
import signal
import warnings

import numpy as np
import pytest
import xarray as xr
import zarr
from cubes import assert_same_cube, done_cells, results_data

from pcskm import algorithms
from pcskm.experiments import cells
from pcskm.experiments.protocol import Protocol
from pcskm.experiments.spec import load_spec, parse_spec
from pcskm.runner import IncompatibleStore, open_cube, run_spec
from pcskm.runner.store import (
    Cube,
    CubeView,
    DoneMarks,
    chunks_of,
    prepare,
    task_target,
    verify,
    write_task,
)
from pcskm.runner.store.writer import chunk_variables
from pcskm.runner.tasks import plan, work

SMOKE = load_spec("smoke")
FAILED_FLAGS = [3, 4]  # empty_cluster, degenerate_weights (attrs flag_meanings)
NOT_APPLICABLE = 5

SMALL = """
name = "small"
seed = 0
datasets = ["iris"]
algorithms = ["LKM", "PCSKM"]
inits = ["dkm++", "seeding"]
kinds = ["random"]
percentages = [1]
n_runs = 1
n_folds = 10
"""
EXTENDED = """
name = "extended"
seed = 0
datasets = ["iris", "brodinova-3-7"]
algorithms = ["LKM", "PCKM", "PCSKM"]
inits = ["dkm++", "seeding"]
kinds = ["random", "must-link"]
percentages = [1, 5.5]
n_runs = 2
n_folds = 10
"""


@pytest.fixture(scope="module")
def reference(client, tmp_path_factory):
    """The smoke spec, uninterrupted, on two workers."""
    store = tmp_path_factory.mktemp("reference") / "smoke.zarr"
    summary = run_spec(SMOKE, store, client=client, progress=False)
    assert not summary.errors and not summary.interrupted
    return store


def spec_cells(spec):
    """Cells of a spec, counted from its definition (Seeding only with seeding_kinds)."""
    count = 0
    for init in spec.inits:
        kinds = spec.seeding_kinds if init == "seeding" else spec.kinds
        count += len(kinds)
    return (count * len(spec.datasets) * len(spec.algorithms) * len(spec.percentages)
            * spec.n_runs * spec.n_folds)


def test_end_to_end_on_two_workers(reference):
    """Read without project code: every cell present, status where it belongs, values
    where they belong (one cell checked against a direct fit)."""
    for name in SMOKE.datasets:
        ds = xr.open_zarr(reference, group=name).load()
        assert (ds.done == 1).all()
        status = ds.status
        sparse = ds.algorithm.isin(["SKM", "PCSKM"])
        no_s = ds.sparsity.isnull()
        assert ((status == NOT_APPLICABLE) == (sparse == no_s)).all()
        assert not (status == 0).any()
        failed = status.isin(FAILED_FLAGS) | (status == NOT_APPLICABLE)
        assert (ds.f_score.isnull() == failed).all()
        cv = Protocol(cells.dataset(name), seed=SMOKE.seed)
        for percent in SMOKE.percentages:
            assert (ds.n_constraints.sel(percent=percent) == cv.count(percent)).all()
        # LKM with DKM++ is one fit: its fold scores repeat over percentages and runs (§6)
        lkm = ds.f_score.sel(algorithm="LKM", init="dkm++").isel(sparsity=0)
        assert (lkm == lkm.isel(percent=0, run=0)).all()

    data, cv = cells.dataset("brodinova-5-5"), Protocol(cells.dataset("brodinova-5-5"), seed=0)
    kind, percent, run, fold = "random", 10.0, 1, 4
    must_link, cannot_link = cv.constraints(kind, percent, run, fold)
    model = algorithms.PCSKMeans(n_clusters=3, init="seeding", max_iter=25,
                                 random_state=cv.seeding_seed(kind, percent, run, fold))
    grid = SMOKE.sparsity_grid(data.n_features)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", algorithms.ClusteringFailedWarning)
        path = model.fit_path(data.X, grid, must_link=must_link, cannot_link=cannot_link)
    cell = xr.open_zarr(reference, group="brodinova-5-5").sel(
        algorithm="PCSKM", init="seeding", kind=kind, percent=percent, run=run, fold=fold)
    test = cv.fold_of == fold
    expected = [algorithms.pairwise_f_score(data.y[test], labels[test])[0]
                for labels in path.labels]
    np.testing.assert_allclose(cell.f_score.values[1:], expected, rtol=1e-6)
    ok = ~np.isin(path.status_code, list(algorithms._result.FAILED))
    np.testing.assert_allclose(cell.weights.values, path.weights[ok].mean(axis=0), rtol=1e-6)
    assert (cell.status.values[1:] == path.status_code + 1).all()


def test_one_worker_gives_the_same_cube(reference, tmp_path):
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as one:
        run_spec(SMOKE, tmp_path / "one.zarr", client=one, progress=False)
    assert_same_cube(reference, tmp_path / "one.zarr")


def test_killed_worker_then_rerun_gives_the_same_cube(reference, client, tmp_path):
    store = tmp_path / "killed.zarr"
    killed = []

    def kill_one_worker(result, summary):
        if summary.n_written == 3 and not killed:
            pid = next(iter(client.run(os.getpid).values()))
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    summary = run_spec(SMOKE, store, client=client, progress=False,
                       on_result=kill_one_worker)
    assert killed and not summary.interrupted
    run_spec(SMOKE, store, client=client, progress=False)  # computes what is missing, if any
    assert_same_cube(reference, store)
    client.wait_for_workers(2, timeout=60)


def test_interrupted_run_resumes_with_only_the_missing_cells(reference, client, tmp_path):
    store = tmp_path / "interrupted.zarr"

    def interrupt(result, summary):  # half of the smoke plan's 4 tasks, one per chunk
        if summary.n_written == 2:
            raise KeyboardInterrupt

    first = run_spec(SMOKE, store, client=client, progress=False, on_result=interrupt)
    assert first.interrupted and first.n_written == 2
    done = done_cells(store)
    assert done == first.n_cells
    second = run_spec(SMOKE, store, client=client, progress=False)
    assert second.n_cells == spec_cells(SMOKE) - done
    assert_same_cube(reference, store)


def test_extended_spec_computes_only_the_new_cells(client, tmp_path):
    small, extended = parse_spec(SMALL), parse_spec(EXTENDED)
    store = tmp_path / "grown.zarr"
    first = run_spec(small, store, client=client, progress=False)
    assert first.n_cells == spec_cells(small)
    second = run_spec(extended, store, client=client, progress=False)
    assert second.n_cells == spec_cells(extended) - spec_cells(small)
    runs = zarr.open_group(str(store), mode="r").attrs["runs"]  # the extension kept run 1
    assert [(r["spec"], r["cells"], r["tasks"]) for r in runs] == [
        ("small", first.n_cells, first.n_written), ("extended", second.n_cells,
                                                    second.n_written)]
    for run, summary in zip(runs, (first, second), strict=True):
        assert run["started"] <= run["finished"] and not run["interrupted"]
        # recorded to 0.1 s: an extension of a few cells can round to 0.0 on a fast machine
        assert run["wall_seconds"] >= run["compute_wall_seconds"] >= 0
        assert summary.wall_seconds > 0
        assert run["compute_wall_seconds"] == pytest.approx(summary.wall_seconds, abs=0.1)
    direct = tmp_path / "direct.zarr"
    run_spec(extended, direct, client=client, progress=False)
    grown, fresh = open_cube(store), open_cube(direct)
    for name in extended.datasets:
        # the digest record names each chunk's key, which the grown layout's positions change
        a, b = (results_data(cube[name].to_dataset())
                for cube in (grown, fresh))
        xr.testing.assert_identical(a.sel({d: b[d] for d in b.dims}).load(), b.load())


def test_incompatible_spec_is_refused(tmp_path):
    store = tmp_path / "store.zarr"
    prepare(store, parse_spec(SMALL))
    changes = {
        "seed": SMALL.replace("seed = 0", "seed = 1"),
        "n_folds": SMALL.replace("n_folds = 10", "n_folds = 5"),
        "max_iter": SMALL + "max_iter = 30\n",
        "sparsity_step": SMALL + "sparsity_step = 0.3\n",
    }
    for what, text in changes.items():
        with pytest.raises(IncompatibleStore, match=what):
            prepare(store, parse_spec(text))
    renamed = SMALL.replace('"PCSKM"]', '"PCSKM", "X"]') + (
        '[variants.X]\nestimator = "PCSKM"\nparams = { weight_update = "paper" }\n')
    prepare(store, parse_spec(renamed))  # a new variant name extends the store
    clash = renamed.replace('"paper"', '"code"')
    with pytest.raises(IncompatibleStore, match="algorithm X"):
        prepare(store, parse_spec(clash))


def test_only_and_force_select_cells(client, tmp_path):
    spec = parse_spec(SMALL)
    store = tmp_path / "only.zarr"
    first = run_spec(spec, store, client=client, progress=False,
                     selection={"algorithm": ["PCSKM"], "init": ["seed*"]})
    per_setting = spec_cells(spec) // (len(spec.algorithms) * len(spec.inits))
    assert first.n_cells == per_setting
    ds = xr.open_zarr(store, group="iris")
    assert int(ds.done.sum()) * 10 == per_setting
    assert (ds.done.sel(algorithm="PCSKM", init="seeding") == 1).all()
    before = ds.f_score.load()
    forced = run_spec(spec, store, client=client, progress=False, force=True,
                      selection={"algorithm": ["PCSKM"], "init": ["seeding"]})
    assert forced.n_cells == per_setting
    xr.testing.assert_identical(xr.open_zarr(store, group="iris").f_score.load(), before)


def test_two_runs_never_write_one_store(tmp_path):
    import socket
    import subprocess
    import sys

    from pcskm.runner.store import StoreBusy, store_lock

    store = tmp_path / "locked.zarr"
    with store_lock(store):
        with pytest.raises(StoreBusy, match="being written by process"):
            run_spec(parse_spec(SMALL), store, progress=False)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    lock = tmp_path / "locked.zarr.lock"
    lock.write_text(f"{socket.gethostname()} {dead}")  # left by a killed run
    with store_lock(store):
        assert lock.read_text() == f"{socket.gethostname()} {os.getpid()}"
    assert not lock.exists()


def test_not_applicable_cells_become_missing_when_the_spec_runs_them(client, tmp_path):
    """Seeding outside seeding_kinds is not_applicable (5), distinct from missing (0); a spec
    that adds the kind to seeding_kinds computes exactly those cells."""
    base = SMALL.replace('kinds = ["random"]', 'kinds = ["random", "must-link"]')
    store = tmp_path / "seeding.zarr"
    run_spec(parse_spec(base), store, client=client, progress=False)
    status = xr.open_zarr(store, group="iris").status.sel(init="seeding", kind="must-link")
    assert (status == NOT_APPLICABLE).all()
    wider = parse_spec(base + 'seeding_kinds = ["random", "must-link"]\n')
    summary = run_spec(wider, store, client=client, progress=False)
    assert summary.n_cells == len(wider.algorithms) * wider.n_runs * wider.n_folds
    status = xr.open_zarr(store, group="iris").status.sel(init="seeding", kind="must-link")
    assert not status.isin([0]).any() and (status != NOT_APPLICABLE).any()


def test_plan_fills_the_chunks_one_after_the_other(tmp_path):
    """Data set by data set (most work first), kind by kind in spec order, largest task first
    within a kind: the tasks touching any one chunk are consecutive in the plan (one task
    per chunk: docs/reference/cube-schema.md, Chunks and size)."""
    spec = parse_spec(EXTENDED.replace("percentages = [1, 5.5]", "percentages = [1, 2, 5.5, 10]")
                      .replace("n_runs = 2", "n_runs = 6"))
    view = CubeView.planned(tmp_path / "never.zarr", spec)
    tasks = plan(spec, view, min_work=1).tasks
    units = [work(task, view) for task in tasks]
    dataset_work = {}
    for task, unit in zip(tasks, units, strict=True):
        dataset_work[task.dataset] = dataset_work.get(task.dataset, 0) + unit
    keys = [(-dataset_work[t.dataset], t.dataset, spec.kinds.index(t.blocks[0].kind), -unit)
            for t, unit in zip(tasks, units, strict=True)]
    assert len(dataset_work) == 2 and len({k[:3] for k in keys}) == 4 and len(tasks) > 8
    assert keys == sorted(keys)
    for chunk in {c for task in tasks for c in chunks_of(task, view)}:
        touching = [i for i, task in enumerate(tasks) if chunk in chunks_of(task, view)]
        assert touching == list(range(touching[0], touching[-1] + 1)), chunk


@pytest.fixture(scope="module")
def smoke_results(tmp_path_factory):
    """Every task of the smoke spec on an empty store, evaluated in this process, in a
    shuffled order."""
    view = CubeView.planned(tmp_path_factory.mktemp("planned") / "none.zarr", SMOKE)
    results = [cells.evaluate(task) for task in plan(SMOKE, view).tasks]
    order = np.random.default_rng(7).permutation(len(results))
    return [results[i] for i in order]


def worker_writes(cube, result):
    """What a worker does with ``result`` once computed: write its chunks into ``cube``'s
    store (opened anew, as a worker opens it), return the receipt."""
    group = zarr.open_group(str(cube.path), mode="r+")[result.task.dataset]
    return write_task(group, result, task_target(cube, result.task))


@pytest.mark.parametrize("flush_seconds", [float("inf"), 0.0])
def test_tasks_written_in_any_order_give_the_reference_cube(reference, smoke_results, tmp_path,
                                                            flush_seconds):
    """Every task's chunks written by its worker, in a shuffled order, and the receipts marked
    done at the end (``inf``) or one by one (0): the reference cube."""
    cube, _ = prepare(tmp_path / "written.zarr", SMOKE)
    marks = DoneMarks(cube, flush_seconds=flush_seconds)
    for result in smoke_results:
        marks.take(worker_writes(cube, result))
    marks.write()
    assert_same_cube(reference, tmp_path / "written.zarr")


def assert_done_cells_are_the_references(store, reference):
    """Every cell marked done in ``store`` holds the reference's values, in every
    variable."""
    for name in SMOKE.datasets:
        done = xr.open_zarr(store, group=name).done.load() == 1
        # results_data leaves out the chunk digests: per (kind, percent) chunk, not per cell
        got, want = (results_data(xr.open_zarr(s, group=name)).load().where(done)
                     for s in (store, reference))
        xr.testing.assert_identical(got.drop_vars("done"), want.drop_vars("done"))


def test_killed_client_keeps_the_marked_tasks_and_the_rerun_fills_the_rest(
        reference, client, smoke_results, tmp_path):
    """A client that dies after marking done the receipts of the first data set's tasks,
    while the workers have written the chunks of one more task (its receipt taken, not yet
    marked): exactly the cells of the marked receipts are done, equal to the reference; the
    next run computes every other cell and gives the reference cube."""
    store = tmp_path / "killed-client.zarr"
    cube, _ = prepare(store, SMOKE)
    first = [r for r in smoke_results if r.task.dataset == SMOKE.datasets[0]]
    later = [r for r in smoke_results if r.task.dataset != SMOKE.datasets[0]][:1]
    marks = DoneMarks(cube, flush_seconds=float("inf"))
    for result in first:
        marks.take(worker_writes(cube, result))
    marks.write()
    for result in later:
        marks.take(worker_writes(cube, result))
    del marks  # killed: its last receipts never marked
    expected = sum(r.task.n_cells for r in first)
    assert 0 < expected and done_cells(store) == expected
    assert_done_cells_are_the_references(store, reference)
    rerun = run_spec(SMOKE, store, client=client, progress=False)
    assert rerun.n_cells == spec_cells(SMOKE) - expected
    assert_same_cube(reference, store)


class Killed(BaseException):
    """Stands for a SIGKILL of the worker: nothing after it runs."""


def test_a_worker_killed_while_writing_leaves_every_done_cell_intact(
        reference, client, tmp_path, monkeypatch):
    """A store with done cells scattered through every chunk (the others' values spoilt),
    and a worker killed while writing a block's chunks (one per variable, written together),
    half of them written, before its receipt: every cell marked done still holds the
    reference's values (the worker rewrote the done cells of the chunks it wrote with their
    stored values), the spoilt cells it wrote are not marked done, and the rerun gives the
    reference cube."""
    import shutil

    store = tmp_path / "killed-writer.zarr"
    shutil.copytree(reference, store)
    rng = np.random.default_rng(11)
    for name in SMOKE.datasets:
        group = zarr.open_group(str(store), mode="r+")[name]
        marks = group["done"][...]
        clear = (rng.random(marks.shape) < 0.5) & (marks == 1)
        marks[clear] = 0
        group["done"][...] = marks
        f_score = group["f_score"][...]
        f_score[clear] = -1  # what a run must compute again
        group["f_score"][...] = f_score
    recorded = Cube(store)  # the chunks rewritten above recorded, as a run that wrote them does
    for name in SMOKE.datasets:
        kinds, percents = recorded.done[name].shape[2:4]
        recorded.record_stored(name, np.ndindex(kinds, percents), ("f_score",))
        recorded.write_markers(name)
    cube, _ = prepare(store, SMOKE)
    task = max(plan(SMOKE, cube).tasks, key=lambda t: len(t.skip))
    assert task.skip  # done cells kept in the chunks it writes
    result = cells.evaluate(task)
    variables = len(chunk_variables(cube.arrays[task.dataset])) + 1  # and n_constraints
    writes = []
    setitem = zarr.AsyncArray.setitem

    async def dies_half_way(array, selection, value):
        writes.append(array.path)
        if len(writes) > variables // 2:
            raise Killed
        await setitem(array, selection, value)

    monkeypatch.setattr(zarr.AsyncArray, "setitem", dies_half_way)
    with pytest.raises(Killed):
        worker_writes(cube, result)
    monkeypatch.undo()
    assert variables > 6 and len(writes) == variables  # the first chunk's, half written
    assert_done_cells_are_the_references(store, reference)
    missing = spec_cells(SMOKE) - done_cells(store)
    # the chunk the killed worker rewrote no longer has the digest recorded for its place:
    # its done cells, intact as checked above, are computed again with the missing ones
    rewritten = verify(store).lost_cells()
    assert 0 < rewritten < done_cells(store)
    rerun = run_spec(SMOKE, store, client=client, progress=False)
    assert rerun.n_cells == missing + rewritten
    assert_same_cube(reference, store)


def die_while_writing(marker, after):
    """In a worker process: the first chunk write after the ``after``-th ends the process at
    once (``os._exit``, no cleanup, as a SIGKILL), in the first process to create ``marker``
    only."""
    setitem = zarr.AsyncArray.setitem
    count = [0]

    async def dying(array, selection, value):
        count[0] += 1
        if count[0] > after:
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
            else:
                os._exit(9)
        await setitem(array, selection, value)

    zarr.AsyncArray._setitem_before_the_test = setitem
    zarr.AsyncArray.setitem = dying


def write_as_before():
    if hasattr(zarr.AsyncArray, "_setitem_before_the_test"):
        zarr.AsyncArray.setitem = zarr.AsyncArray._setitem_before_the_test
        del zarr.AsyncArray._setitem_before_the_test


def test_a_worker_process_killed_while_writing_is_replaced_and_the_cube_is_the_same(
        reference, client, tmp_path):
    """A worker process dies in the middle of writing a task's chunks (after a few of them,
    before its receipt): Dask computes the task again on another worker, which writes the
    chunks whole; the run completes with the reference cube."""
    marker = tmp_path / "died"
    client.run(die_while_writing, str(marker), 5)
    try:
        summary = run_spec(SMOKE, tmp_path / "died.zarr", client=client, progress=False)
    finally:
        client.run(write_as_before)
    assert marker.exists() and summary.complete and not summary.errors
    assert_same_cube(reference, tmp_path / "died.zarr")
    client.wait_for_workers(2, timeout=60)


# In the slow suite: a cluster of eight workers on two cores: about 16 s.
@pytest.mark.slow
def test_eight_workers_give_the_same_cube_as_two(reference, tmp_path):
    """The smoke spec on eight worker processes (each writing its tasks' chunks) gives the
    cube of two."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=8, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as eight:
        summary = run_spec(SMOKE, tmp_path / "eight.zarr", client=eight, progress=False)
    assert summary.max_workers == 8 and not summary.errors
    assert_same_cube(reference, tmp_path / "eight.zarr")


def test_batch_jobs_export_the_quiet_worker_settings():
    """The job-script lines give a worker process the same Dask settings as local workers
    (read back by Dask itself in a fresh process)."""
    import subprocess
    import sys

    from pcskm.runner.clusters import QUIET_WORKERS, quiet_worker_exports

    env = dict(os.environ)
    for line in quiet_worker_exports():
        name, _, value = line.removeprefix("export ").partition("=")
        env[name] = value
    read = subprocess.run(
        [sys.executable, "-c", "import sys, dask, distributed; "
         "print(repr([dask.config.get(k) for k in sys.argv[1:]]))", *QUIET_WORKERS],
        env=env, capture_output=True, text=True, check=True).stdout
    assert read.strip() == repr(list(QUIET_WORKERS.values()))

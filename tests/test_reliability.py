"""A run's failures that must leave the store usable: a kill at any step of creating a store,
a store left half-created by an older pcskm, a cluster that does not start."""

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest
from cubes import REPO, Progress, assert_same_cube, pcskm, tiny_spec

from pcskm.experiments.spec import parse_spec
from pcskm.runner import run_spec
from pcskm.runner.store import DamagedStore, spec_layout, verify, write_layout
from pcskm.runner.store import create as create_module

TINY = tiny_spec("tiny-reliability")
SPEC = parse_spec(TINY)


class Killed(BaseException):
    """Stands for a SIGKILL: no handler of the runner catches it, and the test writes nothing
    after it, so the disk is left as the kill would leave it."""


IN_PROCESS_CLIENT = True  # conftest's client: one worker thread in this process


@pytest.fixture(scope="module")
def reference(client, tmp_path_factory):
    store = tmp_path_factory.mktemp("reference") / "tiny.zarr"
    run_spec(SPEC, store, client=client, progress=False)
    return store


def kill_at(monkeypatch, step):
    """Make the ``step``-th call of the creation hook (counting from 0), or the call at the
    step of that name, a kill; returns the list of the steps seen."""
    seen = []

    def building(name):
        seen.append(name)
        if step in (len(seen) - 1, name):
            raise Killed(name)

    monkeypatch.setattr(create_module, "_building", building)
    return seen


# In the slow suite: a kill at each of the creation's steps in turn: about 20 s;
# test_a_process_killed_while_creating_its_store_then_rerun covers two of them.
@pytest.mark.slow
def test_a_kill_at_every_step_of_creation_leaves_no_store_or_a_whole_one(
        reference, client, tmp_path, monkeypatch):
    """The run is killed at each step of creating its store in turn (every array created,
    every array's values written, the metadata consolidated, the rename): afterwards the
    store does not exist or is whole, and the rerun gives the reference cube. Before atomic
    creation, 3 of 6 kills in the first half second left a store that no command could open
    again."""
    steps = kill_at(monkeypatch, -1)
    run_spec(SPEC, tmp_path / "counted.zarr", client=client, progress=False)
    assert len(steps) > 30 and steps[-1] == "built"  # every array, twice; consolidation
    for step in range(len(steps)):
        store = tmp_path / f"killed-{step}.zarr"
        kill_at(monkeypatch, step)
        with pytest.raises(Killed):
            run_spec(SPEC, store, client=client, progress=False)
        monkeypatch.setattr(create_module, "_building", lambda name: None)
        if store.exists():  # killed after the rename: a whole, empty store
            assert verify(store).ok and verify(store).done_cells() == 0
        run_spec(SPEC, store, client=client, progress=False)
        assert not store.with_name(store.name + ".rebuild").exists()
        assert_same_cube(reference, store)


def half_created_store(path, monkeypatch, step=12):
    """A store as a pcskm before atomic creation left it when killed at ``step`` of its
    creation: the layout written in place, up to that step."""
    kill_at(monkeypatch, step)
    with pytest.raises(Killed):
        write_layout(path, spec_layout(SPEC), SPEC)
    monkeypatch.setattr(create_module, "_building", lambda name: None)


def test_a_half_created_store_of_an_older_version_is_created_again(
        reference, client, tmp_path, monkeypatch, caplog):
    store = tmp_path / "old.zarr"
    half_created_store(store, monkeypatch)
    with pytest.raises(DamagedStore, match="half-created.*pcskm run creates it again"):
        verify(store)
    run_spec(SPEC, store, client=client, progress=False)
    assert "left half-created by a run killed while creating it" in caplog.text
    assert "holds no computed cell: created again" in caplog.text
    assert_same_cube(reference, store)


def test_a_half_created_store_with_done_markers_is_refused(tmp_path, monkeypatch, client):
    """Done markers in a store without its metadata: pcskm does not delete what it cannot
    read, and says so."""
    store = tmp_path / "old.zarr"
    half_created_store(store, monkeypatch, step="before consolidating")
    chunk = store / "iris" / "done" / "c" / "0" / "0" / "0" / "0" / "0"
    assert (store / "iris" / "done" / "zarr.json").exists()
    chunk.parent.mkdir(parents=True)
    chunk.write_bytes(b"\x01")
    with pytest.raises(DamagedStore, match="holds done markers, so pcskm does not delete it"):
        run_spec(SPEC, store, client=client, progress=False)
    assert chunk.exists()


def test_a_scheduler_that_cannot_be_reached_leaves_no_store(tmp_path):
    """Issue 33: a run that fails to start creates nothing (it created an empty store)."""
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    store = tmp_path / "never.zarr"
    out = pcskm("run", spec, "--store", store, "--scheduler", "tcp://127.0.0.1:1",
                "--no-progress", env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"},
                timeout=120)
    assert out.returncode == 2, out.stderr
    assert "the Dask cluster did not start" in out.stderr and "Traceback" not in out.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.toml"]


@pytest.mark.parametrize("n_runs", ["100000000", "1000000000000", "1e6"])
def test_a_grid_that_cannot_fit_is_refused_before_anything_is_made(tmp_path, n_runs):
    """Issue 35: ``n_runs = 1e8`` ran 72 s into a MemoryError traceback, ``1e12`` into
    "Unable to allocate 3.64 TiB". Now one line, exit code 2, nothing created, for the run
    and its dry run alike (TOML's 1e6 is a float: refused by the spec's own check)."""
    spec = tmp_path / "huge.toml"
    spec.write_text(TINY.replace("n_runs = 1\n", f"n_runs = {n_runs}\n"))
    store = tmp_path / "store" / "huge.zarr"
    for dry in ([], ["--dry-run"]) if n_runs == "100000000" else ([],):
        out = pcskm("run", spec, "--store", store, "--no-progress", *dry, timeout=120)
        assert out.returncode == 2, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
        if n_runs == "1e6":
            assert "n_runs must be an integer" in out.stderr
        else:  # 10 folds x 1e8 runs x (19 bytes x 6 s entries + 16 of weights): 121 GiB
            assert f"the store {store} of this spec cannot be written" in out.stderr
            assert "in memory (the largest chunk" in out.stderr
        assert not store.exists() and not store.with_name("huge.zarr.rebuild").exists()


def test_the_sizes_are_those_of_the_arrays_written(tmp_path):
    """The uncompressed size computed from the spec equals the bytes of every array of a
    store made for it (its coordinates aside); the values of a complete store are the
    entries a fit fills: the no-s entry of LKM, the s grid of PCSKM, with its selection
    scores (CV, pair AUC, gap)."""
    from pcskm.runner.store import prepare, store_sizes, written_bytes
    from pcskm.runner.tasks import plan

    spec = parse_spec(TINY.replace('["LKM"]', '["LKM", "PCSKM"]')
                      .replace("n_runs = 1\n", "n_runs = 3\ngap_permutations = 2\n"
                                                "cv_folds = 3\n"))
    cube, _ = prepare(tmp_path / "s.zarr", spec)
    group = cube.arrays["iris"]
    coordinates = {"algorithm", "init", "kind", "percent", "run", "fold", "sparsity",
                   "feature", "feature_name", "uninformative"}
    found = store_sizes(cube.layout)
    # the record of chunk digests aside: JSON text per chunk, a few hundred bytes
    assert found.store_bytes == sum(a.nbytes for n, a in group.items()
                                    if n not in coordinates | {"chunk_sha256"})
    n_s = group["sparsity"].shape[0]
    runs, folds = 3, 10
    per_entry = 4 * 4 + 1 + 2  # f_score, precision, recall, satisfied; status; n_iter
    # cv_score, auc_score, auc_se, gap, gap_sd (PCSKM only: the entries of its s grid)
    scores = 5 * 4
    folds_used = 1  # cv_folds_used, per cell of PCSKM
    values = (runs * folds * (1 * per_entry + (n_s - 1) * (per_entry + scores) + folds_used)
              + 2 * runs * folds * 4 * 4  # weights of both algorithms, 4 features
              + runs * folds * n_s * 4 * 4  # weights_per_s: LKM's entry, PCSKM's s grid
              + runs * folds * 4 + 2 * (1 + 1 + 2) * runs)  # n_constraints; done, scored, run_index
    assert found.values_bytes == values
    # one chunk per (kind, percent): both algorithms
    assert found.chunk_bytes == 2 * runs * folds * (n_s * (per_entry + scores + 4 * 4)
                                                    + 4 * 4 + folds_used)
    # the dry run's writer estimate: the chunks the plan fills, every variable of the writer
    written = {"f_score", "precision", "recall", "satisfied", "status", "n_iter", "weights",
               "weights_per_s", "cv_score", "cv_folds_used", "auc_score", "auc_se", "gap",
               "gap_sd"}
    assert set(group) - coordinates - written == {"n_constraints", "done", "scored", "run_index",
                                                  "chunk_sha256"}
    assert written_bytes(cube, plan(spec, cube).tasks) == sum(group[n].nbytes for n in written)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(predicate, seconds=120):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_run_whose_workers_are_all_gone_says_so_and_stops(tmp_path):
    """Issue 35: with every worker of a --scheduler cluster killed, the client kept showing
    "1 workers" and waited for ever. A real scheduler and one worker (with its nanny) in
    their own processes; the worker's process group is killed once the run has connected
    and submitted its tasks: the run says that no worker is connected, stops after
    --worker-timeout with exit code 1 and the command that resumes it, --scheduler
    included."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    scheduler = subprocess.Popen([*dask, "--host", "127.0.0.1", "--port", str(port),
                                  "--dashboard-address", ":0"], stderr=subprocess.DEVNULL,
                                 start_new_session=True)
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                               "--nworkers", "1", "--nthreads", "1", "--dashboard-address",
                               ":0"], stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        spec = tmp_path / "longer.toml"
        spec.write_text((REPO / "experiments" / "specs" / "smoke.toml").read_text()
                        .replace("n_runs = 2\n", "n_runs = 25\n"))
        store = tmp_path / "s.zarr"
        run = subprocess.Popen([sys.executable, "-m", "pcskm.runner.cli", "run", spec,
                                "--store", store, "--scheduler", address, "--no-progress",
                                "--worker-timeout", "6"], cwd=REPO, stderr=subprocess.PIPE)
        progress = Progress(run)
        wait_for(lambda: "tasks" in progress.text() and run.poll() is None)  # planned
        wait_for(lambda: f"connected to the Dask scheduler at {address}" in progress.text())
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
        run.wait(timeout=120)
        stderr = progress.join()
    finally:
        for process in (worker, scheduler):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    assert run.returncode == 1, stderr
    assert re.search(r"waiting for workers: none connected for \d+ s", stderr), stderr
    assert re.search(r"no Dask worker has been connected for \d+ s \(the limit set by "
                     r"--worker-timeout, 6 s\); stopped", stderr), stderr
    assert f"Resume with: pcskm run {spec} --store {store} --no-progress --scheduler " \
           f"{address} --worker-timeout 6.0" in stderr
    assert "Traceback" not in stderr


def test_a_spec_that_is_not_utf8_is_named(tmp_path):
    spec = tmp_path / "latin1.toml"
    spec.write_bytes(TINY.replace('name = "tiny-reliability"', 'name = "d\xe9j\xe0"')
                     .encode("latin-1"))
    out = pcskm("run", spec, "--dry-run")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert f"spec {spec} is not UTF-8 text" in out.stderr
    assert "can't decode byte 0xe9" in out.stderr


def test_a_report_while_another_run_swaps_an_extension_in(reference, tmp_path, monkeypatch):
    """Issue 35: a report read a store that another run extended meanwhile ("cannot reshape
    array of size 780 into shape (1,1,1,3,25,10)"). Here the extension is swapped in at a
    fixed point, after the report opened the store and before it reads the values: the
    report is that of one version, the same as a report written after the extension."""
    import shutil

    from pcskm.experiments import report as report_module
    from pcskm.experiments.report import write_report
    from pcskm.runner.store import prepare

    store = tmp_path / "s.zarr"
    shutil.copytree(reference, store)
    collect, calls = report_module.collect, []

    def collect_during_a_swap(opened, sidecar=None):
        calls.append(opened.path)
        if len(calls) == 1:
            assert prepare(store, extended_tiny())[1] == "extended"  # the other run's swap
        return collect(opened, sidecar=sidecar)

    monkeypatch.setattr(report_module, "collect", collect_during_a_swap)
    write_report(store, tmp_path / "report-1")
    assert len(calls) == 2  # read again, once
    monkeypatch.undo()
    write_report(store, tmp_path / "report-2")
    assert_same_reports(tmp_path / "report-1", tmp_path / "report-2")


def extended_tiny():
    """The tiny spec with a second run and a second kind: an extension of its store."""
    return parse_spec(TINY.replace("n_runs = 1\n", "n_runs = 2\n")
                      .replace('kinds = ["random"]', 'kinds = ["random", "must-link"]'))


def assert_same_reports(during, after):
    """The reports in the folders ``during`` and ``after`` hold the same tables and text
    (their own folder's name aside)."""
    texts = sorted(p.relative_to(during) for p in during.rglob("*")
                   if p.suffix in (".md", ".csv"))
    assert texts and texts == sorted(p.relative_to(after) for p in after.rglob("*")
                                     if p.suffix in (".md", ".csv"))
    for name in texts:
        assert (during / name).read_text().replace(during.name, after.name) == \
            (after / name).read_text(), name


def test_a_report_on_object_storage_while_another_run_commits_an_extension(s3, client,
                                                                           tmp_path,
                                                                           monkeypatch):
    """The same race on an s3:// store: the report reads the snapshot at the branch's tip
    when it opened the store, so another run's extension, committed after the report opened
    it and before it reads the values, changes nothing: the report is that of the version
    before, read once (docs/guide/hpc.md, "The store on object storage")."""
    from pcskm.experiments import report as report_module
    from pcskm.experiments.report import write_report
    from pcskm.runner.store import prepare, where

    url = f"s3://{s3.bucket('report-race')}/tiny"
    run_spec(SPEC, url, client=client, progress=False)
    before = where(url).version()
    collect, calls = report_module.collect, []

    def collect_during_a_commit(opened, sidecar=None):
        calls.append(opened.path)
        if len(calls) == 1:
            with where(url).writing() as location:  # the other run, committing
                assert prepare(location, extended_tiny())[1] == "extended"
        return collect(opened, sidecar=sidecar)

    monkeypatch.setattr(report_module, "collect", collect_during_a_commit)
    write_report(url, tmp_path / "report-1")
    assert len(calls) == 1 and where(url).version() != before
    monkeypatch.undo()
    as_before = where(url)
    as_before.snapshot = before
    write_report(as_before, tmp_path / "report-2")
    assert_same_reports(tmp_path / "report-1", tmp_path / "report-2")
    write_report(url, tmp_path / "extended")  # the extension is there for the next reader
    assert (tmp_path / "extended" / "report.md").read_text() != \
        (tmp_path / "report-2" / "report.md").read_text().replace("report-2", "extended")


def seconds(text):
    """``"42 s"``, ``"12.5 min"``, ``"3.1 h"`` -> seconds."""
    value, unit = text.split()
    return float(value) * {"s": 1, "min": 60, "h": 3600}[unit]


# In the slow suite: plans the paper spec's 17 million cells: about 14 s (22 s on a slow
# VM). The writing's model is tested by hand in tests/test_dry_run.py.
@pytest.mark.slow
def test_the_dry_run_spreads_the_writing_over_the_workers(data_dir):
    """Issue 35 found ``pcskm run paper --dry-run --workers 256`` blind to the 120 s the
    client spent writing; the workers now write their tasks' chunks (issue 32), so the
    estimate adds the writing, over the workers, to their compute: no writer bounds it."""
    out = pcskm("run", "paper", "--dry-run", "--workers", 256, "--calibration-seconds", 5,
                "--data-dir", data_dir, "--store", "never/paper.zarr", timeout=600)
    assert out.returncode == 0, out.stderr
    writing = re.search(r"estimated writing: (.+) in all, by the workers, each its tasks' "
                        r"chunks \((\d+) tasks at ([\d.]+) s and ([\d.]+) GiB of chunks, "
                        r"uncompressed, at ([\d.]+) s per MiB\): (.+) on 256 workers; the "
                        r"client only marks done", out.stdout)
    start = re.search(r"estimated start of the run: (.+) before the workers compute", out.stdout)
    compute = re.search(r"estimated compute: (.+) on one core", out.stdout)
    total = re.search(r"estimated run time on 256 workers: (.+): the start and (.+) of compute "
                      r"and writing", out.stdout)
    assert writing and start and compute and total, out.stdout
    assert "bound by" not in out.stdout
    tasks, per_task, gib, per_mib = (float(writing.group(i)) for i in range(2, 6))
    in_all = tasks * per_task + gib * 1024 * per_mib  # rounded to 0.1 GiB
    assert seconds(writing.group(1)) == pytest.approx(in_all, rel=0.02, abs=1)
    assert seconds(writing.group(6)) == pytest.approx(in_all / 256, abs=1)
    spread = seconds(compute.group(1)) / 256 / 0.92 + in_all / 256
    assert seconds(total.group(2)) == pytest.approx(spread, rel=0.05, abs=1)
    assert seconds(total.group(1)) == pytest.approx(seconds(start.group(1)) + spread,
                                                   rel=0.05, abs=2)


# "array done created" in the slow suite: about 12 s (23 s on a slow VM); the slow suite
# also kills at every step of the creation (above).
@pytest.mark.parametrize("step", [pytest.param("array done created", marks=pytest.mark.slow),
                                  "built"])
def test_a_process_killed_while_creating_its_store_then_rerun(reference, tmp_path, step):
    """The same kill as a real one: ``pcskm run`` in a subprocess whose creation hook ends
    the process with ``os._exit`` at ``step`` (no handler, no cleanup runs); then the same
    command again gives the reference cube."""
    spec = tmp_path / "tiny.toml"
    spec.write_text(TINY)
    store = tmp_path / "s.zarr"
    args = ["run", str(spec), "--store", str(store), "--workers", "1", "--no-progress"]
    killer = ("import os, sys\n"
              "from pcskm.runner.store import create\n"
              f"create._building = lambda name: os._exit(9) if name == {step!r} else None\n"
              "from pcskm.runner.cli import main\n"
              f"sys.exit(main({args!r}))\n")
    log = tmp_path / "killed.log"
    with log.open("w") as stderr:  # a file: the killed client's workers may outlive it
        killed = subprocess.Popen([sys.executable, "-c", killer], cwd=REPO, stderr=stderr,
                                  start_new_session=True)
        try:
            assert killed.wait(timeout=300) == 9, log.read_text()
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(killed.pid, signal.SIGKILL)  # its local cluster's workers
    assert not store.exists() and store.with_name("s.zarr.rebuild").exists()
    rerun = pcskm(*args)
    assert rerun.returncode == 0, rerun.stderr
    assert not store.with_name("s.zarr.rebuild").exists()
    assert_same_cube(reference, store)

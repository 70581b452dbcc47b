"""A worker's write lands only while its run holds the store (issue 46, point 1;
docs/guide/hpc.md, "A killed client's workers"): the task of a killed client that a stopped
worker finishes after the next run has completed the store changes nothing in a folder or in
an Icechunk repository on S3 (the moto server of the test session), and a late task's fork
handed to the next run of a repository is never merged."""

import contextlib
import os
import pickle
import signal
import socket
import subprocess
import sys
import time

import cloudpickle
import numpy as np
import pytest
import zarr
from cubes import Progress, assert_same_cube, pcskm

from pcskm.experiments.spec import load_spec, parse_spec
from pcskm.runner import run_spec
from pcskm.runner.store.fencing import staging_root

SMOKE = load_spec("smoke")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(predicate, seconds=180, every=0.05):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(every)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The smoke spec computed in one uninterrupted run (a worker thread of this process)."""
    from distributed import Client

    store = tmp_path_factory.mktemp("reference") / "smoke.zarr"
    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address=":0") as client:
        assert run_spec(SMOKE, store, client=client, progress=False).complete
    return store


@contextlib.contextmanager
def external_cluster():
    """A ``dask scheduler`` and one ``dask worker`` (one thread, with its nanny), each in a
    process group of its own: ``(address, worker process)``."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                                  "--host", "127.0.0.1", "--port", str(port),
                                  "--dashboard-address", ":0"], stderr=subprocess.DEVNULL,
                                 start_new_session=True)
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                               "--nworkers", "1", "--nthreads", "1", "--dashboard-address",
                               ":0"], stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield address, worker
    finally:
        for process in (worker, scheduler):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGCONT)
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def executing(dask_worker):
    """The keys of the tasks the worker's thread is computing now (run on the worker)."""
    return [str(state.key) for state in dask_worker.state.executing]


def finished_since(dask_worker, since):
    """The keys of the tasks whose function returned on the worker at or after the time
    ``since``, read from its log of transitions ``(key, start, finish, ..., time)``: a task
    whose client is gone goes from ``cancelled`` to ``memory`` too (run on the worker)."""
    return sorted({str(entry[0]) for entry in dask_worker.state.log
                   if len(entry) > 3 and entry[2] == "memory" and entry[-1] >= since})


cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import it


def a_stopped_worker_finishes_a_killed_clients_task(store, cwd, look):
    """The reproduction of issue 46, point 1: ``pcskm run smoke --store STORE --scheduler
    ADDR --only algorithm=PCSKM``; once the worker computes a task, the worker is stopped
    (SIGSTOP: a slow task) and the client's process group killed (SIGKILL); ``pcskm run smoke
    --store STORE --workers 2`` completes the store; then the old worker goes on (SIGCONT) and
    finishes its task. Returns ``look()`` before the worker goes on and once it has
    finished, and the keys of the tasks the worker finished once it went on (its log)."""
    from distributed import Client

    with external_cluster() as (address, worker), \
            Client(address, timeout=60) as watcher:
        wait_for(lambda: len(watcher.nthreads()) == 1)
        client = subprocess.Popen(
            [sys.executable, "-m", "pcskm.runner.cli", "run", "smoke", "--store", str(store),
             "--scheduler", address, "--only", "algorithm=PCSKM", "--no-progress"],
            cwd=cwd, stderr=subprocess.PIPE, start_new_session=True)
        progress = Progress(client)
        try:
            wait_for(lambda: "computing" in progress.text() or client.poll() is not None)
            wait_for(lambda: any(watcher.run(executing).values()) or client.poll() is not None)
            assert client.poll() is None, progress.text()
            os.killpg(worker.pid, signal.SIGSTOP)
            os.killpg(client.pid, signal.SIGKILL)
            client.wait(timeout=60)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(client.pid, signal.SIGKILL)
            progress.join()
        rerun = pcskm("run", "smoke", "--store", store, "--workers", "2", "--no-progress",
                      cwd=cwd, timeout=600)
        assert rerun.returncode == 0, rerun.stderr
        before = look()
        resumed = time.time()  # the worker's clock: the same host
        os.killpg(worker.pid, signal.SIGCONT)
        wait_for(lambda: not any(watcher.run(executing).values()), every=0.2)
        late = {key for keys in watcher.run(finished_since, since=resumed).values()
                for key in keys}
        return before, look(), late


def assert_nothing_changed_and_nothing_to_do(store, reference):
    assert_same_cube(store, reference)
    out = pcskm("verify", store)
    assert out.returncode == 0 and "no damage" in out.stdout, out.stdout + out.stderr
    again = pcskm("run", "smoke", "--store", store, "--workers", "1", "--no-progress")
    assert again.returncode == 0 and "nothing to compute" in again.stderr, again.stderr
    assert_same_cube(store, reference)


@pytest.mark.slow  # 145 s on the shared VM, 303 s at a load average of 15
def test_a_killed_clients_task_finished_after_the_next_run_changes_no_folder(
        reference, tmp_path):
    """The late task writes its chunk files into the staging folder of the killed run, which
    no run moves into the store; the next run to take the store deletes them."""
    store = tmp_path / "z.zarr"
    staged = staging_root(store)

    def files():
        return sorted(path for path in staged.rglob("*") if path.is_file())

    before, after, late = a_stopped_worker_finishes_a_killed_clients_task(store, tmp_path,
                                                                          files)
    assert late, "the killed client's task did not finish after the rerun"
    assert before == [] and after, "the killed client's task did not write after the rerun"
    assert_nothing_changed_and_nothing_to_do(store, reference)
    assert not staged.exists()


@pytest.mark.slow  # as the folder's, with the moto server
def test_a_killed_clients_task_finished_after_the_next_run_changes_no_repository(
        reference, s3, tmp_path):
    """The late task writes into its fork of the killed client's session, which only the
    client that made it could merge: its function returns on the worker after the rerun (the
    worker's log), and the branch holds the reference cube. (The smoke spec's chunks are
    small enough for Icechunk to keep them inline in the fork's manifest, so its writes leave
    no object in the bucket to look at.)"""
    url = f"s3://{s3.bucket('late-worker')}/z"
    *_, late = a_stopped_worker_finishes_a_killed_clients_task(url, tmp_path, lambda: None)
    assert late, "the killed client's task did not finish after the rerun"
    assert_nothing_changed_and_nothing_to_do(url, reference)


SMALL = """
name = "small"
seed = 0
datasets = ["iris"]
algorithms = ["LKM", "PCKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [1]
n_runs = 1
n_folds = 10
"""


def a_task_of_a_run_that_ends(store):
    """Take ``store`` (a path or an s3:// URL) in a run that prepares it for :data:`SMALL`
    and hands its workers a task, then ends (its client killed): ``(task, target, what its
    workers write into, pickled as for a worker process)``."""
    from pcskm.runner.store import prepare, task_target, where
    from pcskm.runner.tasks import plan

    spec = parse_spec(SMALL)
    with where(store).writing() as first:
        cube, _ = prepare(first, spec)
        task = plan(spec, cube).tasks[0]
        return task, task_target(cube, task), pickle.dumps(first.for_workers())


def test_files_staged_for_a_run_that_no_longer_holds_the_folder_are_never_moved_in(tmp_path):
    """The late task of a run that has ended writes its files into that run's staging folder
    while the next run holds the store; handed to the next run (as a stray receipt would
    be), they are refused by their token and the store's files stay byte for byte."""
    from pcskm.runner import execute
    from pcskm.runner.store import StaleWrites, where
    from pcskm.runner.store.fencing import staging_folder

    store = tmp_path / "s.zarr"
    task, target, sent = a_task_of_a_run_that_ends(store)
    place = pickle.loads(sent)

    def files():
        return {path: path.read_bytes() for path in store.rglob("*") if path.is_file()}

    stored = files()
    with where(store).writing() as second:
        assert second.token != place.token
        late = execute.compute_and_write(task, target, place)  # the worker goes on
        staged = staging_folder(store.resolve(), place.token)
        assert sorted(path.relative_to(staged).as_posix() for path in staged.rglob("*")
                      if path.is_file()) == sorted(late.written.chunks)
        with pytest.raises(StaleWrites, match=f"token {place.token} reached the run of "
                                              f"token {second.token}"):
            second.absorb([late.written])
        assert files() == stored
    assert files() == stored and not staging_root(store).exists()


def test_a_fork_of_a_dead_clients_session_is_never_merged_into_the_next_run(s3):
    """A late task's fork of the killed client's session, handed to the next run after it
    has committed (as a stray receipt would be): refused by its token, its chunks never
    reach the branch. Icechunk itself merges such a fork into the later session: the
    token is what refuses it."""
    import icechunk

    from pcskm.runner import execute
    from pcskm.runner.store import StaleWrites, where

    bucket = s3.bucket("dead-fork")
    url = f"s3://{bucket}/small"
    task, target, sent = a_task_of_a_run_that_ends(url)
    late = execute.compute_and_write(task, target, pickle.loads(sent))  # the worker goes on
    with where(url).writing() as second:
        root = zarr.open_group(second.zarr_store("r+"), mode="r+")
        root.attrs["note"] = "the second run's first commit"
        base = second.commit("the second run", "started")
        with pytest.raises(StaleWrites, match="are not published"):
            second.absorb([late.written])
        assert not second.transaction.changed
        second.transaction.merge(late.written.chunks)  # what the token check prevents
        assert second.transaction.changed
    assert where(url).version() == base  # the merge above was never committed
    fork = zarr.open_group(late.written.chunks.store, mode="r")["iris"]
    tip = icechunk.Repository.open(s3.storage(bucket, "small")).readonly_session(branch="main")
    group = zarr.open_group(tip.store, mode="r")["iris"]
    assert np.isfinite(fork["f_score"][...]).any()  # the late task's values, in its fork
    assert np.isnan(group["f_score"][...]).all() and not group["done"][...].any()

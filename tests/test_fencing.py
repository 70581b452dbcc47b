"""A worker's write lands only while its run holds the store (issue 46, point 1;
docs/guide/hpc.md, "A killed client's workers"): the task of a killed client that a stopped
worker finishes after the next run has completed the store changes nothing, in a folder and
in an Icechunk repository on S3 (the moto server of the test session)."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time

import cloudpickle
import pytest
import xarray as xr
from cubes import Progress, pcskm, results_attrs, results_data

from pcskm.experiments.spec import load_spec
from pcskm.runner import run_spec

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


def read_cube(store):
    """The root attributes and every group of the cube at ``store`` (a folder or an s3://
    URL), loaded."""
    from pcskm.runner.store import where

    tree = xr.open_datatree(where(store).zarr_store(), engine="zarr", consolidated=False)
    return results_attrs(tree), {name: results_data(tree[name].to_dataset()).load()
                                 for name in tree.children}


def assert_same_cube(store, reference):
    (attrs, groups), (expected_attrs, expected) = read_cube(store), read_cube(reference)
    assert attrs == expected_attrs
    assert groups.keys() == expected.keys()
    for name in expected:
        xr.testing.assert_identical(groups[name], expected[name])


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


cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import it


def a_stopped_worker_finishes_a_killed_clients_task(store, cwd):
    """The reproduction of issue 46, point 1: ``pcskm run smoke --store STORE --scheduler
    ADDR --only algorithm=PCSKM``; once the worker computes a task, the worker is stopped
    (SIGSTOP: a slow task) and the client's process group killed (SIGKILL); ``pcskm run smoke
    --store STORE --workers 2`` completes the store; then the old worker goes on (SIGCONT) and
    finishes its task. Returns once it has."""
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
        os.killpg(worker.pid, signal.SIGCONT)
        wait_for(lambda: not any(watcher.run(executing).values()), every=0.2)


def test_a_killed_clients_task_finished_after_the_next_run_changes_no_folder(
        reference, tmp_path):
    store = tmp_path / "z.zarr"
    a_stopped_worker_finishes_a_killed_clients_task(store, tmp_path)
    assert_same_cube(store, reference)
    out = pcskm("verify", store)
    assert out.returncode == 0 and "no damage" in out.stdout, out.stdout + out.stderr
    again = pcskm("run", "smoke", "--store", store, "--workers", "1", "--no-progress")
    assert again.returncode == 0 and "nothing to compute" in again.stderr, again.stderr
    assert_same_cube(store, reference)

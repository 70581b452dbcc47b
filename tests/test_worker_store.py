"""Workers that cannot write the store the client opened (docs/guide/hpc.md, How the workers
write): the run stops before any compute with one message naming the worker's host, the path
and the fix, a file system every worker mounts at the same path."""

import contextlib
import os
import platform
import shutil
import signal
import subprocess
import sys

import pytest
from cubes import done_cells, pcskm, tiny_spec
from test_reliability import free_port, wait_for

from pcskm.experiments.spec import parse_spec
from pcskm.runner import execute
from pcskm.runner.store import CubeView, prepare, task_target, where
from pcskm.runner.tasks import plan

SPEC = tiny_spec("worker-store")


def mount_namespaces_work():
    """Whether this machine lets a process mount a file system of its own (a user and mount
    namespace: ``unshare --user --map-root-user --mount``)."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                            "mount -t tmpfs tmpfs /mnt"], capture_output=True)
    return probe.returncode == 0


@pytest.fixture
def worker_elsewhere(tmp_path):
    """A scheduler, and one worker whose view of ``tmp_path / "shared"`` is an empty file
    system of its own (a tmpfs mounted over it in its own mount namespace), as a worker on
    a host that does not mount the client's folder: ``(scheduler address, folder)``."""
    if not mount_namespaces_work():
        pytest.skip("this machine does not let a process mount a file system of its own "
                    "(unshare --user --mount), which stands for a worker on another host")
    shared = tmp_path / "shared"
    shared.mkdir()
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                                  "--host", "127.0.0.1", "--port", str(port),
                                  "--dashboard-address", ":0"], stderr=subprocess.DEVNULL,
                                 start_new_session=True)
    worker_command = (f"mount -t tmpfs tmpfs {shared} && exec {sys.executable} -m "
                      f"distributed.cli.dask_worker {address} --nworkers 1 --nthreads 1 "
                      "--dashboard-address :0 --no-nanny")
    worker = subprocess.Popen(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                               worker_command], stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        from distributed import Client

        with Client(address, timeout=60) as client:
            wait_for(lambda: len(client.nthreads()) == 1)
        yield address, shared
    finally:
        for process in (worker, scheduler):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


def test_a_worker_that_cannot_reach_the_store_stops_the_run_before_any_compute(
        tmp_path, worker_elsewhere):
    address, shared = worker_elsewhere
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    store = shared / "s.zarr"
    out = pcskm("run", spec, "--store", store, "--scheduler", address, "--no-progress",
                timeout=300)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and "failed:" not in out.stderr, out.stderr
    assert out.stderr.count("cannot write the store") == 1, out.stderr
    assert (f"the Dask workers cannot write the store: on worker host {platform.node()} "
            f"{store} does not exist, while the client opened it there. Put the store on a "
            "file system that every worker mounts at the same path") in out.stderr
    assert store.exists() and done_cells(store) == 0  # created by the client; nothing computed


def test_a_task_on_a_worker_that_cannot_reach_the_store_computes_nothing(tmp_path,
                                                                         monkeypatch):
    """A worker that joins after the run's check: its first task stops before computing."""
    spec = parse_spec(SPEC)
    cube, _ = prepare(tmp_path / "s.zarr", spec)
    task = plan(spec, CubeView.planned(tmp_path / "none.zarr", spec)).tasks[0]

    def computes(task):
        raise AssertionError("the task computed")

    monkeypatch.setattr(execute, "evaluate_on_worker", computes)
    elsewhere = tmp_path / "not-mounted" / "s.zarr"
    with where(elsewhere).writing() as location, \
            pytest.raises(execute.WorkersLackStore, match=f"{elsewhere} does not exist"):
        execute.compute_and_write(task, task_target(cube, task), location.for_workers())

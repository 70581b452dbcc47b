"""Workers that cannot see the data files the client read (docs/guide/hpc.md): the run stops
on the first task that meets it, with one message naming the folder, the worker's host and
the two fixes, instead of one error per task."""

import platform

import pytest
from cubes import pcskm

SPEC = """
name = "worker-data"
seed = 0
datasets = ["fisheriris"]
algorithms = ["LKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [1, 5, 10]
n_runs = 2
n_folds = 10
"""


@pytest.fixture
def workers_without_data(tmp_path):
    """A local cluster of one worker whose PCSKM_DATA is an empty folder."""
    from distributed import LocalCluster

    empty = tmp_path / "empty"
    empty.mkdir()
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0",
                      env={"PCSKM_DATA": str(empty)}) as cluster:
        yield cluster.scheduler_address, empty


def test_workers_without_the_data_files_stop_the_run_once(tmp_path, data_dir,
                                                          workers_without_data):
    address, empty = workers_without_data
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    out = pcskm("run", spec, "--store", tmp_path / "s.zarr", "--scheduler", address,
                "--no-progress", env={"PCSKM_DATA": str(data_dir)}, timeout=300)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    assert out.stderr.count("cannot see the data folder") == 1, out.stderr
    assert "failed:" not in out.stderr, out.stderr  # no "task ... failed: ..." per task
    assert (f"the Dask workers cannot see the data folder: on worker host {platform.node()} "
            f"the files of fisheriris are not in {empty} (from PCSKM_DATA), while the client "
            "found them") in out.stderr
    assert "--data-dir" in out.stderr and "PCSKM_DATA in the workers' environment" in out.stderr

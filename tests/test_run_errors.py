"""``pcskm run`` (and the commands that read a store) on bad input or a failed start: one
line on stderr naming the problem, exit code 2, no traceback, and no "Resume with" advice
where resuming cannot help."""

import pytest
from cubes import pcskm, tiny_spec

from pcskm.experiments.spec import parse_spec
from pcskm.runner.store import prepare

TINY_SPEC = tiny_spec("tiny-errors")


def assert_clean_error(out, *phrases, resume=False):
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    assert ("Rerun: pcskm run" in out.stderr) == resume, out.stderr
    assert "Resume with" not in out.stderr, out.stderr
    for phrase in phrases:
        assert phrase in out.stderr, out.stderr


@pytest.fixture
def spec_file(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_SPEC)
    return path


@pytest.mark.parametrize("workers", ["-1", "0"])
def test_a_worker_count_below_one_is_refused(spec_file, tmp_path, workers):
    """--workers -1 waited for ever for a worker; --workers 0 meant every core."""
    out = pcskm("run", spec_file, "--store", tmp_path / "s.zarr", "--workers", workers,
                timeout=60)
    assert out.returncode == 2, out.stderr
    assert f"--workers: must be at least 1, got {workers}" in out.stderr
    assert not (tmp_path / "s.zarr").exists()


def test_a_store_path_that_is_a_file_is_refused(spec_file, tmp_path):
    store = tmp_path / "s.zarr"
    store.write_text("not a store")
    assert_clean_error(pcskm("run", spec_file, "--store", store, "--no-progress"),
                       f"{store} is a file, not a pcskm results cube")
    assert store.read_text() == "not a store"
    assert not (tmp_path / "s.zarr.lock").exists()


def test_a_truncated_root_metadata_file_is_named(spec_file, tmp_path):
    store = tmp_path / "s.zarr"
    prepare(store, parse_spec(TINY_SPEC))
    root = store / "zarr.json"
    root.write_bytes(root.read_bytes()[:100])
    for command in (("run", spec_file, "--store", store, "--no-progress"),
                    ("status", store), ("report", store, "--out", tmp_path / "report")):
        assert_clean_error(pcskm(*command), f"{root} cannot be read")


def test_a_worker_killed_while_the_cluster_starts(spec_file, tmp_path):
    """A worker process that dies during the LocalCluster's start-up (here killed by a Dask
    preload script, the same way each time) used to crash the client with "RuntimeError:
    Nanny failed to start." and no advice."""
    preload = tmp_path / "die.py"
    preload.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    env = {"DASK_DISTRIBUTED__WORKER__PRELOAD": f'["{preload}"]'}
    store = tmp_path / "s.zarr"
    out = pcskm("run", spec_file, "--store", store, "--workers", 1, "--no-progress", env=env,
                timeout=300)
    assert_clean_error(out, "the Dask cluster did not start", "nothing was computed",
                       resume=True)
    assert not (tmp_path / "s.zarr.lock").exists()

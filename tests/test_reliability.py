"""A run's failures that must leave the store usable: a kill at any step of creating a store,
a store left half-created by an older pcskm, a cluster that does not start."""

import pytest
import xarray as xr
from cubes import pcskm, results_attrs, tiny_spec

from pcskm.experiments.spec import parse_spec
from pcskm.runner import cube as cube_module
from pcskm.runner import run_spec
from pcskm.runner.cube import DamagedStore, spec_layout, write_layout
from pcskm.runner.integrity import verify

TINY = tiny_spec("tiny-reliability")
SPEC = parse_spec(TINY)


class Killed(BaseException):
    """Stands for a SIGKILL: no handler of the runner catches it, and the test writes nothing
    after it, so the disk is left as the kill would leave it."""


@pytest.fixture(scope="module")
def client():
    from distributed import Client

    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address=":0") as client:
        yield client


@pytest.fixture(scope="module")
def reference(client, tmp_path_factory):
    store = tmp_path_factory.mktemp("reference") / "tiny.zarr"
    run_spec(SPEC, store, client=client, progress=False)
    return store


def assert_same_cube(a, b):
    ta, tb = xr.open_datatree(a, engine="zarr"), xr.open_datatree(b, engine="zarr")
    assert set(ta.children) == set(tb.children) and results_attrs(ta) == results_attrs(tb)
    for name in ta.children:
        xr.testing.assert_identical(ta[name].to_dataset().load(), tb[name].to_dataset().load())


def kill_at(monkeypatch, step):
    """Make the ``step``-th call of the creation hook (counting from 0), or the call at the
    step of that name, a kill; returns the list of the steps seen."""
    seen = []

    def building(name):
        seen.append(name)
        if step in (len(seen) - 1, name):
            raise Killed(name)

    monkeypatch.setattr(cube_module, "_building", building)
    return seen


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
        monkeypatch.setattr(cube_module, "_building", lambda name: None)
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
    monkeypatch.setattr(cube_module, "_building", lambda name: None)


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

"""Nothing in a store is trusted that cannot be checked (issue 64): a group copied or linked
from another store is found by ``verify`` and computed again by ``pcskm run``; a rewritten
coordinate is found and rewritten from the spec, the values never moved to follow it; what
the spec defines (the root's attributes, the record of metadata digests, a group's
attributes) is rebuilt from it by a run instead of refused, a seed that differs is refused.
Each ends in the cube of a store computed cleanly from the same spec."""

import hashlib
import json
import shutil

import numpy as np
import pytest
import zarr
from cubes import assert_same_cube, pcskm

from pcskm.experiments.spec import parse_spec
from pcskm.runner import run_spec
from pcskm.runner.store import DamagedStore, IncompatibleStore, verify

TINY = """
name = "tiny-binding"
seed = 0
datasets = ["iris"]
algorithms = ["LKM", "PCKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [1, 5]
n_runs = 1
n_folds = 10
"""
SPEC = parse_spec(TINY)
OTHER_SEED = parse_spec(TINY.replace("seed = 0", "seed = 1"))
ALL_CELLS = 2 * 2 * 10  # algorithms x percentages x folds

IN_PROCESS_CLIENT = True  # conftest's client: one worker thread in this process


@pytest.fixture(scope="module")
def reference(client, tmp_path_factory):
    store = tmp_path_factory.mktemp("reference") / "a.zarr"
    run_spec(SPEC, store, client=client, progress=False)
    return store


@pytest.fixture(scope="module")
def other(client, tmp_path_factory):
    """A store of the same spec but for its seed."""
    store = tmp_path_factory.mktemp("other") / "b.zarr"
    run_spec(OTHER_SEED, store, client=client, progress=False)
    return store


def copy(store, tmp_path, name="copy.zarr"):
    target = tmp_path / name
    shutil.copytree(store, target, symlinks=True)
    return target


def values_differ(a, b):
    """Whether the f_score values of two stores differ anywhere."""
    fa, fb = (zarr.open_group(str(s), mode="r")["iris"]["f_score"][...] for s in (a, b))
    return not np.array_equal(fa, fb, equal_nan=True)


def folder_digest(folder):
    """SHA-256 of every file's path and bytes under ``folder``."""
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(folder)).encode() + file.read_bytes())
    return digest.hexdigest()


def test_a_group_copied_from_a_store_of_another_seed_is_found_and_computed_again(
        reference, other, client, tmp_path):
    assert values_differ(reference, other)  # the seed changes the values
    store = copy(reference, tmp_path)
    shutil.rmtree(store / "iris")
    shutil.copytree(other / "iris", store / "iris")  # cp -a b.zarr/iris a.zarr/iris
    found = verify(store)
    assert not found.ok and found.unbound == ["iris"]
    assert found.lost_cells() == ALL_CELLS
    result = pcskm("verify", store)
    assert result.returncode != 0 and "group iris: none of its chunks" in result.stdout
    assert run_spec(SPEC, store, client=client, progress=False).n_cells == ALL_CELLS
    assert verify(store).ok
    assert_same_cube(reference, store)


def test_a_group_linked_from_another_store_is_replaced_never_written_through(
        reference, other, client, tmp_path):
    store, target = copy(reference, tmp_path), copy(other, tmp_path, "b.zarr")
    before = folder_digest(target)
    shutil.rmtree(store / "iris")
    (store / "iris").symlink_to(target / "iris", target_is_directory=True)
    found = verify(store)
    assert not found.ok and found.linked == {"iris": str(target / "iris")}
    assert run_spec(SPEC, store, client=client, progress=False).n_cells == ALL_CELLS
    assert not (store / "iris").is_symlink()
    assert verify(store).ok
    assert_same_cube(reference, store)
    assert folder_digest(target) == before  # the other store is as it was


def test_a_store_copied_whole_stays_valid(reference, client, tmp_path):
    store = copy(reference, tmp_path, "backup.zarr")  # cp -a of the whole folder
    assert verify(store).ok
    assert run_spec(SPEC, store, client=client, progress=False) is None  # nothing to compute
    assert_same_cube(reference, store)


def relabel(store, name, change):
    """Rewrite the coordinate ``name`` of iris with ``change(values)`` (valid chunks,
    written with Zarr)."""
    array = zarr.open_array(str(store / "iris" / name), mode="r+")
    values = array[...]
    array[...] = change(values)
    assert not np.array_equal(array[...], values)


@pytest.mark.parametrize("name, change", [
    ("algorithm", lambda v: v[::-1]),  # LKM and PCKM swapped
    ("percent", lambda v: v[::-1]),  # 1 and 5 swapped
    ("fold", lambda v: v[::-1]),  # 9, 8, ..., 0
])
def test_a_relabelled_coordinate_is_found_and_rewritten_the_values_never_moved(
        reference, client, tmp_path, name, change):
    store = copy(reference, tmp_path)
    relabel(store, name, change)
    found = verify(store)
    assert not found.ok and found.relabelled() == ["iris"]
    assert [d.array for d in found.damage] == [name]
    result = pcskm("verify", store)
    assert result.returncode != 0 and "rewrites them from the spec" in result.stdout
    summary = run_spec(SPEC, store, client=client, progress=False)
    assert summary is None  # the labels rewritten, every value kept where it was
    assert verify(store).ok
    assert_same_cube(reference, store)


def edit_root(store, change):
    """Apply ``change`` to the root attributes, in the root zarr.json only."""
    file = store / "zarr.json"
    root = json.loads(file.read_text())
    change(root["attributes"])
    file.write_text(json.dumps(root, indent=2))


def edit_group_attribute(store, key, value):
    """Set a group attribute of iris in its zarr.json and its consolidated copy."""
    file = store / "iris" / "zarr.json"
    group = json.loads(file.read_text())
    group["attributes"][key] = value
    file.write_text(json.dumps(group, indent=2))
    edit_root_copy = json.loads((store / "zarr.json").read_text())
    edit_root_copy["consolidated_metadata"]["metadata"]["iris"]["attributes"][key] = value
    (store / "zarr.json").write_text(json.dumps(edit_root_copy, indent=2))


EDITS = {
    "record deleted": lambda s: edit_root(s, lambda a: a.pop("metadata_sha256")),
    "spec_name": lambda s: edit_root(s, lambda a: a.update(spec_name="renamed")),
    "spec_toml": lambda s: edit_root(s, lambda a: a.update(spec_toml=a["spec_toml"] + "#\n")),
    "data_sha256 of iris": lambda s: edit_group_attribute(s, "data_sha256", "0" * 64),
}


@pytest.mark.parametrize("edit", EDITS)
def test_derivable_metadata_is_rebuilt_by_a_run_not_refused(reference, client, tmp_path, edit):
    store = copy(reference, tmp_path)
    EDITS[edit](store)
    with pytest.raises(DamagedStore, match="derivable: pcskm run rebuilds it") as refused:
        verify(store)
    assert "restore the store from a copy" not in str(refused.value)
    assert run_spec(SPEC, store, client=client, progress=False) is None  # every chunk kept
    assert verify(store).ok
    assert_same_cube(reference, store)


def test_a_seed_that_differs_from_the_spec_is_refused_naming_it(reference, client, tmp_path):
    store = copy(reference, tmp_path)
    edit_root(store, lambda a: a["protocol"].update(seed=1))
    with pytest.raises(DamagedStore, match="derivable") as found:
        verify(store)
    assert "a seed or setting of the store that differs from the spec's is refused" in str(
        found.value)
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    with pytest.raises(IncompatibleStore, match="seed is 1 in .* but 0 in this spec"):
        run_spec(SPEC, store, client=client, progress=False)
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before

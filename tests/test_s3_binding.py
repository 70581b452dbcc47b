"""Issue 64 on an Icechunk repository (the moto S3 server of the test session,
tests/s3_server.py): a group copied from another repository of another seed is found by
``verify`` and computed again by ``pcskm run``; a rewritten coordinate is found and rewritten
from the spec, the values never moved to follow it. Each ends in the cube of a repository
computed cleanly from the same spec. (Derived metadata: a repository keeps no record of
metadata digests, its snapshots being immutable, so there is nothing to rebuild.)"""

import icechunk
import numpy as np
import pytest
import xarray as xr
import zarr
from cubes import assert_same_trees
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

from pcskm.experiments.spec import parse_spec
from pcskm.runner import run_spec
from pcskm.runner.store import verify

TINY = """
name = "tiny-s3-binding"
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
ALL_CELLS = 2 * 2 * 10  # algorithms x percentages x folds

IN_PROCESS_CLIENT = True  # conftest's client: one worker thread in this process


def computed(s3, client, name, spec=SPEC):
    bucket = s3.bucket(name)
    run_spec(spec, f"s3://{bucket}/cube", client=client, progress=False)
    return bucket


@pytest.fixture(scope="module")
def reference(s3, client):
    return computed(s3, client, "binding-reference")


@pytest.fixture(scope="module")
def other(s3, client):
    """A repository of the same spec but for its seed."""
    return computed(s3, client, "binding-other", parse_spec(TINY.replace("seed = 0",
                                                                         "seed = 1")))


def assert_same_cube(s3, a, b):
    """:func:`cubes.assert_same_trees` on the repositories of the buckets ``a`` and ``b``."""
    def tree(bucket):
        session = icechunk.Repository.open(s3.storage(bucket, "cube")).readonly_session(
            branch="main")
        return xr.open_datatree(session.store, engine="zarr", consolidated=False)

    assert_same_trees(tree(a), tree(b))


def written(s3, bucket, change):
    """Commit ``change(store)`` (a writable Zarr store of the repository) to its branch."""
    session = icechunk.Repository.open(s3.storage(bucket, "cube")).writable_session("main")
    change(session.store)
    session.commit("written by hand")


def copy_group(source):
    """A change copying the objects of the group iris of the Zarr store ``source`` over
    those of the store it is given (the group deleted first)."""
    prototype = default_buffer_prototype()

    async def keys():
        return [key async for key in source.list_prefix("iris/")]

    def change(store):
        sync(store.delete_dir("iris"))
        for key in sync(keys()):
            sync(store.set(key, sync(source.get(key, prototype))))

    return change


def test_a_group_copied_from_a_repository_of_another_seed_is_computed_again(
        s3, client, reference, other):
    bucket = computed(s3, client, "binding-copied")
    source = icechunk.Repository.open(s3.storage(other, "cube")).readonly_session(
        branch="main").store
    written(s3, bucket, copy_group(source))
    url = f"s3://{bucket}/cube"
    found = verify(url)
    assert not found.ok and found.unbound == ["iris"]
    assert run_spec(SPEC, url, client=client, progress=False).n_cells == ALL_CELLS
    assert verify(url).ok
    assert_same_cube(s3, reference, bucket)


def test_a_relabelled_percent_is_rewritten_the_values_never_moved(s3, client, reference):
    bucket = computed(s3, client, "binding-relabelled")

    def swap(store):
        array = zarr.open_array(store, path="iris/percent", mode="r+")
        array[...] = array[...][::-1]

    written(s3, bucket, swap)
    url = f"s3://{bucket}/cube"
    found = verify(url)
    assert not found.ok and found.relabelled() == ["iris"]
    assert run_spec(SPEC, url, client=client, progress=False) is None  # no value moved
    assert verify(url).ok
    assert_same_cube(s3, reference, bucket)
    percent = zarr.open_group(icechunk.Repository.open(s3.storage(bucket, "cube"))
                              .readonly_session(branch="main").store, mode="r")["iris/percent"]
    assert np.array_equal(percent[...], [1.0, 5.0])

"""Object storage in the test session (issue 32): a moto S3 server on 127.0.0.1
(tests/s3_server.py) holds an Icechunk repository of Zarr arrays, written and read back by
two independent repository handles, and refuses a second writer's commit (Icechunk's
conflict detection, the object-store stand-in for the local store's flock)."""

import icechunk
import numpy as np
import pytest
import zarr


def test_a_zarr_array_round_trips_through_the_s3_server(s3, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing may land on the local disk
    bucket = s3.bucket("roundtrip")
    values = np.arange(6 * 300, dtype="f4").reshape(6, 300) / 7  # chunks above the 512 B inlined
    repo = icechunk.Repository.create(s3.storage(bucket, "cube"))
    session = repo.writable_session("main")
    array = zarr.create_array(session.store, name="f_score", shape=(6, 300), chunks=(2, 300),
                              dtype="f4", fill_value=np.nan)
    array[...] = values
    session.commit("three chunks")

    reader = icechunk.Repository.open(s3.storage(bucket, "cube")).readonly_session("main")
    back = zarr.open_array(reader.store, path="f_score", mode="r")[...]
    np.testing.assert_array_equal(back, values)
    keys = [item["Key"] for item in
            s3.client().list_objects_v2(Bucket=bucket, Prefix="cube/")["Contents"]]
    assert sum(key.startswith("cube/chunks/") for key in keys) == 3  # one object per chunk
    assert list(tmp_path.iterdir()) == []


def test_a_second_writer_is_refused_at_commit(s3):
    bucket = s3.bucket("two-writers")
    repo = icechunk.Repository.create(s3.storage(bucket, "cube"))
    session = repo.writable_session("main")
    zarr.create_array(session.store, name="done", shape=(4,), chunks=(1,), dtype="u1",
                      fill_value=0)
    session.commit("layout")
    first, second = repo.writable_session("main"), repo.writable_session("main")
    zarr.open_array(first.store, path="done")[0] = 1
    zarr.open_array(second.store, path="done")[1] = 1
    first.commit("first writer")
    with pytest.raises(icechunk.ConflictError):
        second.commit("second writer, from the same snapshot")
    reader = icechunk.Repository.open(s3.storage(bucket, "cube")).readonly_session("main")
    assert zarr.open_array(reader.store, path="done", mode="r")[...].tolist() == [1, 0, 0, 0]


def test_forks_of_one_session_merge_across_commits_and_one_chunk_keeps_the_last_fork(s3):
    """The properties of Icechunk's forks that the workers-write design relies on
    (docs/guide/hpc.md, "How the workers write"): forks made once from a clean session
    are merged by the client over several commits, each fork's chunks kept; but two forks
    that write parts of one chunk do not conflict, the last merged replaces the other's
    whole chunk, so no two tasks of a run may write one chunk."""
    bucket = s3.bucket("forks")
    repo = icechunk.Repository.create(s3.storage(bucket, "cube"))
    session = repo.writable_session("main")
    zarr.create_array(session.store, name="x", shape=(3, 4), chunks=(1, 4), dtype="f4",
                      fill_value=np.nan)
    session.commit("layout")
    parent = repo.writable_session("main")
    forks = [parent.fork() for _ in range(4)]
    for row, fork in enumerate(forks[:2]):  # two tasks, a chunk (row) each
        zarr.open_array(fork.store, path="x")[row] = row + 1
    zarr.open_array(forks[2].store, path="x")[2, :2] = 3  # two tasks, one chunk
    zarr.open_array(forks[3].store, path="x")[2, 2:] = 4
    parent.merge(forks[0])
    parent.commit("first result")
    session = repo.writable_session("main")  # the next commit's session
    session.merge(forks[1])
    session.merge(forks[2], forks[3])
    session.commit("the other results")
    x = zarr.open_array(repo.readonly_session("main").store, path="x", mode="r")[...]
    nan = np.nan
    np.testing.assert_array_equal(x, [[1, 1, 1, 1], [2, 2, 2, 2], [nan, nan, 4, 4]])

"""A damaged Icechunk repository (issue 49; docs/guide/hpc.md, "The store on object
storage"), on the moto S3 server of the test session: a lost manifest is named by verify and
its array's cells recomputed by the next run; a damaged snapshot or branch ref is named by
every command, without a traceback, with the run tags that lead back to a readable version,
and ``pcskm run --from-tag`` goes back to one and computes what it lacks; a branch reset to a
version taken mid-run runs at once; a group written by hand is left out of the report.
Each object is deleted, cut in half or scrambled (tests/test_integrity.py's ``damage``), and
every repaired cube is compared value for value with the same spec run into a folder."""

import asyncio
import json
import logging

import icechunk
import pytest
import zarr
from test_integrity import damage
from test_s3_store import SMALL, assert_same, objects, read_local, read_s3

from pcskm.experiments.spec import parse_spec
from pcskm.runner import open_cube, run_spec
from pcskm.runner.cli import main
from pcskm.runner.store import verify, where
from pcskm.runner.store.errors import DamagedRepository
from pcskm.runner.tasks import parse_only

IN_PROCESS_CLIENT = True  # one worker thread: the small spec in seconds
MODES = ["delete", "truncate", "scramble"]


@pytest.fixture(scope="module")
def two_runs(s3, client):
    """A repository of the small spec computed by two runs: LKM's cells (tag run-0001),
    then PCKM's (run-0002); ``(bucket, prefix)``, copied by each test (:func:`copy_of`)."""
    bucket = s3.bucket("damage-base")
    url = f"s3://{bucket}/small"
    spec = parse_spec(SMALL)
    run_spec(spec, url, client=client, progress=False, selection=parse_only("algorithm=LKM"))
    run_spec(spec, url, client=client, progress=False)
    return bucket, "small"


@pytest.fixture(scope="module")
def direct(client, tmp_path_factory):
    """The small spec run into a folder: what every repaired repository must hold."""
    store = tmp_path_factory.mktemp("direct") / "small.zarr"
    run_spec(parse_spec(SMALL), store, client=client, progress=False)
    return read_local(store)


def copy_of(s3, source, name):
    """A copy of the repository ``source`` (every object, its prefix replaced) in a bucket of
    its own: ``(bucket, prefix, url)``."""
    bucket, prefix = source
    target = s3.bucket(name)
    client = s3.client()
    for key in objects(s3, bucket):
        client.copy_object(Bucket=target, Key=key.replace(prefix, "small", 1),
                           CopySource={"Bucket": bucket, "Key": key})
    return target, "small", f"s3://{target}/small"


def damage_object(s3, tmp_path, bucket, key, mode):
    """Delete, truncate or scramble the object ``key`` (as a file is, by ``damage``)."""
    client, copy = s3.client(), tmp_path / "object"
    copy.write_bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())
    damage(copy, mode)
    if mode == "delete":
        client.delete_object(Bucket=bucket, Key=key)
    else:
        client.put_object(Bucket=bucket, Key=key, Body=copy.read_bytes())


def repository(s3, bucket, prefix):
    return icechunk.Repository.open(s3.storage(bucket, prefix))


def commands_name(url, key, tags, tmp_path, capsys):
    """verify, status and report each exit 2 with one line naming the object ``key`` and the
    run tags ``tags``, never a traceback nor the credentials; the report writes nothing."""
    for command in (["verify", url], ["status", url],
                    ["report", url, "--out", str(tmp_path / "report")]):
        assert main(command) == 2, command
        err = capsys.readouterr().err
        assert key in err and f"readable versions have the run tags {tags}" in err, err
        assert "Traceback" not in err and "credentials" not in err
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "report").exists()


@pytest.mark.parametrize("mode", MODES)
def test_a_lost_manifest_is_named_and_its_cells_recomputed(s3, client, two_runs, direct,
                                                           tmp_path, capsys, mode):
    """The manifest of iris's f_score (the references of its chunks; one per array in
    Icechunk 1) lost: verify names it under each chunk it held, and the run, which cannot
    delete chunks from an array whose manifest it cannot read, writes the array anew and
    recomputes exactly the cells of those chunks."""
    bucket, prefix, url = copy_of(s3, two_runs, f"manifest-{mode}")
    repo = repository(s3, bucket, prefix)
    # the async call: the blocking one holds the GIL that the in-process S3 server needs
    snapshot = json.loads(asyncio.run(repo.inspect_snapshot_async(repo.lookup_branch("main"))))
    node = next(n for n in snapshot["nodes"] if n["path"] == "/iris/f_score")
    key = f"{prefix}/manifests/{node['manifest_refs'][0]['id']}"
    damage_object(s3, tmp_path, bucket, key, mode)
    f_score = zarr.open_group(repo.readonly_session(branch="main").store, mode="r")["iris"][
        "f_score"]
    n_chunks = f_score.nchunks
    found = verify(url)
    assert len(found.damage) == n_chunks
    assert all(d.array == "f_score" and key in d.problem for d in found.damage)
    assert found.lost_cells() == 2 * 10  # every cell: one chunk holds both algorithms
    assert main(["verify", url]) == 1
    assert key in capsys.readouterr().out
    rerun = run_spec(parse_spec(SMALL), url, client=client, progress=False)
    assert rerun.n_cells == found.lost_cells()
    assert verify(url).ok
    assert_same(direct, read_s3(s3, bucket, prefix))


@pytest.mark.parametrize("mode", MODES)
def test_a_damaged_snapshot_is_named_and_the_run_goes_back_to_a_tag(
        s3, client, two_runs, direct, tmp_path, capsys, mode):
    """The snapshot at the tip (run-0002's) damaged: every command names its object and the
    readable tag run-0001, without a traceback; a run is refused the same way; ``run
    --from-tag run-0001`` resets the branch to it and computes PCKM's cells again."""
    bucket, prefix, url = copy_of(s3, two_runs, f"snapshot-{mode}")
    repo = repository(s3, bucket, prefix)
    tip = repo.lookup_branch("main")
    assert repo.lookup_tag("run-0002") == tip
    key = f"{prefix}/snapshots/{tip}"
    damage_object(s3, tmp_path, bucket, key, mode)
    commands_name(url, key, "run-0001", tmp_path, capsys)
    with pytest.raises(DamagedRepository, match=f"{key}.*--from-tag run-0001"):
        run_spec(parse_spec(SMALL), url, client=client, progress=False)
    rerun = run_spec(parse_spec(SMALL), url, client=client, progress=False,
                     from_tag="run-0001")
    assert rerun.n_cells == 10  # PCKM's: one run of ten folds
    repo = repository(s3, bucket, prefix)
    assert repo.list_tags() == {"run-0001", "run-0002", "run-0003"}
    assert repo.lookup_tag("run-0003") == repo.lookup_branch("main")
    assert verify(url).ok
    assert_same(direct, read_s3(s3, bucket, prefix))


@pytest.mark.parametrize("mode", MODES)
def test_a_damaged_branch_ref_is_named_and_restored_from_a_tag(
        s3, client, two_runs, direct, tmp_path, capsys, mode):
    """The ref of branch main damaged: Icechunk cannot open the repository, and every
    command names the ref's object and the tags (read from their own objects), not "no
    repository" nor the credentials; ``run --from-tag run-0002`` writes the branch's ref
    again, and nothing is left to compute."""
    bucket, prefix, url = copy_of(s3, two_runs, f"ref-{mode}")
    key = f"{prefix}/refs/branch.main/ref.json"
    damage_object(s3, tmp_path, bucket, key, mode)
    commands_name(url, key, "run-0002, run-0001", tmp_path, capsys)
    with pytest.raises(DamagedRepository, match=f"{key}.*--from-tag run-0002"):
        run_spec(parse_spec(SMALL), url, client=client, progress=False)
    assert run_spec(parse_spec(SMALL), url, client=client, progress=False,
                    from_tag="run-0002") is None  # nothing missing
    repo = repository(s3, bucket, prefix)
    assert repo.lookup_branch("main") == repo.lookup_tag("run-0002")
    assert verify(url).ok
    assert_same(direct, read_s3(s3, bucket, prefix))


@pytest.mark.parametrize("mode", MODES)
def test_a_damaged_snapshot_of_an_older_tag_is_named_by_status_and_blocks_nothing(
        s3, client, two_runs, direct, tmp_path, capsys, mode):
    """The snapshot of run-0001 (not the tip) damaged: the store is whole, so verify finds no
    damage and the report is written; status lists that run as unreadable, naming its
    object, beside the readable run-0002; opening that version names the object; a run has
    nothing to compute."""
    bucket, prefix, url = copy_of(s3, two_runs, f"old-tag-{mode}")
    old = repository(s3, bucket, prefix).lookup_tag("run-0001")
    key = f"{prefix}/snapshots/{old}"
    damage_object(s3, tmp_path, bucket, key, mode)
    assert main(["verify", url]) == 0
    assert main(["status", url]) == 0
    out = capsys.readouterr().out
    problem = "missing" if mode == "delete" else "unreadable ("
    assert f"  run-0001  unreadable: its snapshot, object {key}, is {problem}" in out
    assert "  run-0002  " in out and "10 cells  spec small" in out
    with pytest.raises(DamagedRepository, match=key):
        open_cube(url, run="run-0001")
    assert main(["report", url, "--out", str(tmp_path / "report")]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert run_spec(parse_spec(SMALL), url, client=client, progress=False) is None  # none missing
    assert_same(direct, read_s3(s3, bucket, prefix))


def test_from_tag_names_a_tag_of_the_repository(s3, two_runs, tmp_path, capsys):
    bucket, _, url = copy_of(s3, two_runs, "no-such-tag")
    before = objects(s3, bucket)
    with pytest.raises(ValueError, match="no run tag 'run-0009'; its run tags are run-0001, "
                                         "run-0002"):
        where(url).roll_back("run-0009")
    assert objects(s3, bucket) == before
    assert main(["run", "smoke", "--store", str(tmp_path / "x.zarr"), "--from-tag",
                 "run-0001"]) == 2
    assert "a store in a folder keeps no versions" in capsys.readouterr().err


def test_a_branch_reset_to_a_version_taken_mid_run_runs_at_once(s3, client, two_runs, direct,
                                                                caplog):
    """The branch reset (by hand, with Icechunk) to the snapshot that noted the second run's
    start: that run recorded itself (tag run-0002), so the first run after the reset takes
    its record from the tag rather than recording it as killed, computes the cells missing
    there and tags itself run-0003 (run-0002 is taken)."""
    bucket, prefix, url = copy_of(s3, two_runs, "reset-mid-run")
    repo = repository(s3, bucket, prefix)
    started = next(c for c in repo.ancestry(branch="main")
                   if (c.metadata or {}).get("pcskm") == "started")
    repo.reset_branch("main", started.id)
    recorded = next(iter(repo.ancestry(snapshot_id=repo.lookup_tag("run-0002")))).metadata
    with caplog.at_level(logging.WARNING, logger="pcskm"):
        rerun = run_spec(parse_spec(SMALL), url, client=client, progress=False)
    assert rerun.complete and rerun.n_cells == 10
    assert "left no record" not in caplog.text and "tag run-0002" in caplog.text
    repo = repository(s3, bucket, prefix)
    assert repo.lookup_tag("run-0003") == repo.lookup_branch("main")
    runs = zarr.open_group(repo.readonly_session(branch="main").store, mode="r").attrs["runs"]
    assert len(runs) == 3 and runs[1] == recorded["run"]
    assert verify(url).ok
    assert_same(direct, read_s3(s3, bucket, prefix))


def test_a_group_written_by_hand_is_left_out_of_the_cube_and_the_report(s3, two_runs,
                                                                        tmp_path, capsys):
    """A group ``notes`` and an array ``iris/extra`` written by hand into the repository
    (arrays without dimension names, which xarray cannot open): verify names them, and the
    cube, the status and the report read the layout's nodes alone, as for a folder."""
    bucket, prefix, url = copy_of(s3, two_runs, "foreign")
    session = repository(s3, bucket, prefix).writable_session("main")
    root = zarr.open_group(session.store, mode="r+")
    root.create_group("notes").create_array("todo", shape=(2,), dtype="i4")[...] = 1
    root["iris"].create_array("extra", shape=(3,), dtype="f8")[...] = 2.0
    session.commit("written by hand")
    assert "iris/extra, notes" in verify(url).describe()
    tree = open_cube(url)
    assert set(tree.children) == {"iris"} and "extra" not in tree["iris"].data_vars
    assert main(["status", url]) == 0
    assert main(["report", url, "--out", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "report.md").is_file()

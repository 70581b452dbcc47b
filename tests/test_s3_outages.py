"""A store on object storage when its endpoint fails (issue 49, points 2 and 3;
docs/guide/hpc.md, "When the endpoint fails"): outages of the endpoint at several moments of
a run, made by a proxy in front of the moto S3 server (tests/s3_server.py) that refuses
connections for a while, are waited out and the run gives the cube of a run without them; an
endpoint that stays down is named, with the time waited and how to resume; and each cause of
a failed access has its own line: no credentials, credentials refused, a missing bucket (also
one an endpoint lost), an unreachable endpoint (credentials that may only read:
tests/test_s3_store.py); a commit whose answer is lost is known as made."""

import os

import pytest
from s3_server import Proxy
from test_s3_store import GROWN, SMALL, assert_same, read_local, read_s3

from pcskm.experiments.spec import parse_spec
from pcskm.runner import run_spec
from pcskm.runner.cli import main
from pcskm.runner.store import StoreNotWritable, where

IN_PROCESS_CLIENT = True  # one worker thread: a small spec in seconds
SPEC = parse_spec(GROWN)  # several tasks: outages between them


@pytest.fixture(scope="module")
def direct(client, tmp_path_factory):
    """The cube of the run into a folder, without outages."""
    store = tmp_path_factory.mktemp("direct") / "grown.zarr"
    assert run_spec(SPEC, store, client=client, progress=False).complete
    return store


@pytest.fixture
def proxy(s3, monkeypatch):
    """A proxy in front of the S3 server, the endpoint of this test's requests."""
    proxy = Proxy(int(s3.endpoint_url.rsplit(":", 1)[1]))
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint_url)
    yield proxy
    proxy.close()


def run_through_outages(url, client, proxy, seconds):
    """``run_spec`` of :data:`SPEC` into ``url`` with the endpoint cut for ``seconds`` as the
    run opens the store, after its first and its second results (the workers write, the
    client commits) and after its last (its last commit and its record)."""
    timers = []

    def cut_after(receipt, summary):
        if summary.n_written in (1, 2, summary.n_tasks):
            timers[-1].join()  # one outage after the other, however fast the results come
            timers.append(proxy.outage(seconds))

    timers.append(proxy.outage(seconds))
    try:
        return run_spec(SPEC, url, client=client, progress=False, on_result=cut_after)
    finally:
        for timer in timers:
            timer.join()


# In the slow suite: outages at several moments of a run: about 25 s.
@pytest.mark.slow
def test_short_outages_at_several_moments_are_waited_out(s3, client, proxy, direct,
                                                         monkeypatch):
    monkeypatch.setenv("PCSKM_S3_RETRY_SECONDS", "120")
    bucket = s3.bucket("short-outages")
    summary = run_through_outages(f"s3://{bucket}/grown", client, proxy, 4)
    assert summary.complete and not summary.errors
    assert proxy.outages >= 3  # at the start, during the run and at its end
    assert_same(read_local(direct), read_s3(s3, bucket, "grown"))


@pytest.mark.slow
def test_outages_of_20_s_at_several_moments_are_waited_out(s3, client, proxy, direct):
    """As the series of issue 49 cut the endpoint, with the default time waited."""
    bucket = s3.bucket("long-outages")
    summary = run_through_outages(f"s3://{bucket}/grown", client, proxy, 20)
    assert summary.complete and not summary.errors
    assert_same(read_local(direct), read_s3(s3, bucket, "grown"))


def test_a_commit_whose_answer_is_lost_is_known_as_made(s3, client, proxy, direct):
    """The response to the request that moves the branch to a commit (the PUT of its ref)
    lost, once the first result is in: Icechunk tries again and finds the branch moved by
    that very commit. The run knows its commit by the id in its metadata and goes on, where
    it stopped before saying another run (itself) had written the store."""
    bucket = s3.bucket("lost-answer")
    ref = f"PUT /{bucket}/grown/refs/branch.main/ref.json".encode()

    def lose_once(receipt, summary):
        if summary.n_written == 1:
            proxy.lose_response(ref)

    summary = run_spec(SPEC, f"s3://{bucket}/grown", client=client, progress=False,
                       on_result=lose_once)
    assert proxy.lost == 1
    assert summary.complete and not summary.errors
    assert_same(read_local(direct), read_s3(s3, bucket, "grown"))


@pytest.mark.slow  # two outages of a minute
def test_an_outage_longer_than_icechunks_own_retries_is_waited_out_by_pcskm(
        s3, client, proxy, direct, monkeypatch):
    """Icechunk tries a refused request again for 15-40 s itself. The endpoint cut for 60 s
    once the first result is in (the workers have written, the client commits): without
    pcskm's waits (PCSKM_S3_RETRY_SECONDS=0) the run stops, naming the endpoint; with the
    default wait it lives through the outage and gives the cube of a run without it."""
    from pcskm.runner.store import StoreUnreachable

    def cut_once(outages):
        def cut(receipt, summary):
            if not outages:
                outages.append(proxy.outage(60))
        return cut

    outages = []
    monkeypatch.setenv("PCSKM_S3_RETRY_SECONDS", "0")
    url = f"s3://{s3.bucket('outage-no-wait')}/grown"
    try:
        with pytest.raises(StoreUnreachable, match="was unreachable for"):
            run_spec(SPEC, url, client=client, progress=False, on_result=cut_once(outages))
    finally:
        outages[0].join()
    monkeypatch.delenv("PCSKM_S3_RETRY_SECONDS")
    outages = []
    bucket = s3.bucket("outage-waited")
    try:
        summary = run_spec(SPEC, f"s3://{bucket}/grown", client=client, progress=False,
                           on_result=cut_once(outages))
    finally:
        outages[0].join()
    assert summary.complete and not summary.errors
    assert_same(read_local(direct), read_s3(s3, bucket, "grown"))


@pytest.mark.slow
def test_an_endpoint_down_longer_than_the_wait_is_named_and_the_rerun_resumes(
        s3, client, proxy, direct, tmp_path):
    """``pcskm run`` loses its endpoint once its first results are in, for longer than
    PCSKM_S3_RETRY_SECONDS: it exits 1 saying the endpoint was unreachable, for how long, and
    how to resume, never blaming the credentials; the rerun, with the endpoint back, records
    it and gives the cube of the run without the outage."""
    import subprocess
    import sys
    import time

    from cubes import Progress

    bucket = s3.bucket("long-down")
    url = f"s3://{bucket}/grown"
    spec = tmp_path / "grown.toml"
    spec.write_text(GROWN)
    process = subprocess.Popen(
        [sys.executable, "-m", "pcskm.runner.cli", "run", str(spec), "--store", url,
         "--workers", "1"], cwd=tmp_path, stderr=subprocess.PIPE,
        env={**os.environ, "PCSKM_S3_RETRY_SECONDS": "3"})
    progress = Progress(process)
    deadline = time.monotonic() + 300
    while progress.cells() == 0 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proxy.cut()
    assert process.wait(timeout=600) == 1
    err = progress.join()
    stop = next(line for line in err.splitlines() if "was unreachable for" in line)
    assert f"{url}: the object store's endpoint {proxy.endpoint_url} was unreachable" in stop
    assert "PCSKM_S3_RETRY_SECONDS=3 s" in stop and "pcskm run again resumes" in stop
    assert "credentials" not in stop and "Resume with:" in err
    proxy.restore()
    rerun = run_spec(SPEC, url, client=client, progress=False)
    assert rerun.complete
    assert_same(read_local(direct), read_s3(s3, bucket, "grown"))


# In the slow suite: waits out the retries of an endpoint that never answers: about 30 s.
@pytest.mark.slow
def test_an_unreachable_endpoint_has_its_own_line(s3, proxy, monkeypatch, capsys):
    """Nothing listens at the endpoint: status exits 2 naming it unreachable, with the time
    waited, not the credentials or the bucket."""
    bucket = s3.bucket("unreachable")
    monkeypatch.setenv("PCSKM_S3_RETRY_SECONDS", "0")
    proxy.cut()
    assert main(["status", f"s3://{bucket}/small"]) == 2
    err = capsys.readouterr().err
    assert f"s3://{bucket}/small: the object store's endpoint {proxy.endpoint_url} was " \
           "unreachable for" in err
    assert "Connection refused" in err
    assert "credentials" not in err and "does not exist" not in err


def test_a_missing_bucket_has_its_own_line(s3, client, capsys):
    """A bucket never made, and one the endpoint lost (an S3 server restarted without its
    data) after a run: each command says the bucket does not exist, at which endpoint."""
    assert main(["status", "s3://never-made/small"]) == 2
    err = capsys.readouterr().err
    assert f"the bucket never-made does not exist at {s3.endpoint_url} (" in err
    assert "NoSuchBucket" in err and "unreachable" not in err
    bucket = s3.bucket("lost")
    url = f"s3://{bucket}/small"
    run_spec(parse_spec(SMALL), url, client=client, progress=False)
    storage = s3.client()
    for page in storage.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            storage.delete_object(Bucket=bucket, Key=item["Key"])
    storage.delete_bucket(Bucket=bucket)
    for command in ("status", "verify", "report"):
        assert main([command, url]) == 2
        assert f"the bucket {bucket} does not exist" in capsys.readouterr().err
    with pytest.raises(StoreNotWritable, match=f"the bucket {bucket} does not exist"):
        run_spec(parse_spec(SMALL), url, client=client, progress=False)


def test_no_credentials_have_their_own_line(s3, monkeypatch, capsys):
    bucket = s3.bucket("no-credentials-at-all")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    for name in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"):  # no profile either
        monkeypatch.setenv(name, "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert main(["status", f"s3://{bucket}/small"]) == 2
    err = capsys.readouterr().err
    assert "no AWS credentials were found" in err and "AWS_ACCESS_KEY_ID" in err
    assert "unreachable" not in err and f"the bucket {bucket} does not exist" not in err


def test_refused_credentials_have_their_own_line(s3, monkeypatch, capsys):
    """A secret the endpoint does not know (moto checks every signature inside
    ``enable_iam_authentication``)."""
    from moto.core.authorization import enable_iam_authentication

    bucket = s3.bucket("refused")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with enable_iam_authentication():
        assert main(["status", f"s3://{bucket}/small"]) == 2
    err = capsys.readouterr().err
    assert "refused the AWS credentials" in err and "InvalidAccessKeyId" in err
    assert "unreachable" not in err and f"the bucket {bucket} does not exist" not in err


def test_a_wait_for_the_endpoint_is_a_number_of_seconds(monkeypatch):
    monkeypatch.setenv("PCSKM_S3_RETRY_SECONDS", "ten minutes")
    with pytest.raises(ValueError, match="PCSKM_S3_RETRY_SECONDS='ten minutes': give the "
                                         "seconds"):
        where("s3://bucket/smoke")


def test_the_workers_wait_as_long_as_the_client(s3, monkeypatch):
    """The time waited is the client's, sent with the fork to the workers (whose environment
    may lack the variable)."""
    import pickle

    from test_s3_store import prepare

    monkeypatch.setenv("PCSKM_S3_RETRY_SECONDS", "42")
    bucket = s3.bucket("workers-wait")
    with where(f"s3://{bucket}/small").writing() as location:
        prepare(location, parse_spec(SMALL))
        location.commit("prepared", "prepared")
        sent = pickle.dumps(location.for_workers())
    monkeypatch.delenv("PCSKM_S3_RETRY_SECONDS")
    assert pickle.loads(sent).patience.seconds == 42


def test_a_root_group_read_as_missing_during_an_outage_is_read_again_after_it(
        s3, proxy, monkeypatch):
    """Under load, a worker's first read of its fork once found no root group while the
    endpoint was cut, and the run stopped blaming the worker's credentials. Here the first
    read answers "missing" as the outage begins: the worker reads the repository again once
    the endpoint is back, and finds nothing wrong."""
    import pickle
    import time

    import zarr
    from test_s3_store import prepare

    from pcskm.runner.store.backends.icechunk import ForkForWorkers

    bucket = s3.bucket("missing-root")
    with where(f"s3://{bucket}/small").writing() as location:
        prepare(location, parse_spec(SMALL))
        location.commit("prepared", "prepared")
        fork = pickle.loads(pickle.dumps(location.for_workers()))
    outages = []
    read = ForkForWorkers.store

    def missing_at_first(self):
        if not outages:  # the first read: the outage begins, and the root reads as missing
            outages.append(proxy.outage(4))
            return zarr.storage.MemoryStore()
        return read.fget(self)

    monkeypatch.setattr(ForkForWorkers, "store", property(missing_at_first))
    began = time.monotonic()
    assert fork.problem() is None
    assert time.monotonic() - began >= 3.5  # the outage was waited out
    outages[0].join()


def test_credentials_that_fail_to_load_are_not_an_outage():
    """The AWS SDK's chain of providers reports a failed last provider (here the EC2
    instance metadata, forbidden) as a "dispatch failure", an outage's words too: it is no
    credentials, said at once, not waited out for ten minutes."""
    from pcskm.runner.store.outages import NO_CREDENTIALS, cause

    text = ("error getting object from object store dispatch failure\n"
            "  |-> dispatch failure\n  |-> other\n"
            "  |-> an error occurred while loading credentials\n"
            "  |-> failed to load IMDS session token\n  |-> service error\n"
            "  `-> request forbidden: IMDS is disabled or the caller has insufficient "
            "permissions.")
    assert cause(text) == NO_CREDENTIALS

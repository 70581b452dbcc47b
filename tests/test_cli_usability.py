"""The command line's messages and refusals (issue 13, items 2, 5 and 6): a resume command
that a shell runs as printed, one line and an exit code for every expected failure (a
traceback only with --debug), arguments in any order, nothing created before a refusal, help
that names the default store, the selection named as such, and no alarming lines when a
cluster with busy workers stops."""

import os
import shlex
import subprocess
import sys
import time

import pooch
import pytest
import requests
from cubes import pcskm

from pcskm.experiments import _datafiles
from pcskm.runner.cli import _resume_command, build_parser, main

ONLY = "dataset=ionosphere|fisheriris,kind=random"


def one_clear_line(stderr):
    lines = stderr.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith("pcskm: ") and "Traceback" not in stderr


# item 2: the resume command


def test_the_resume_command_runs_in_a_shell_as_printed(tmp_path):
    """bash receives exactly the arguments of the run (the old, unquoted command piped its
    --only into a command named after the second data set)."""
    store = tmp_path / "my results" / "paper.zarr"
    argv = ["run", "paper", "--store", str(store), "--data-dir", str(tmp_path / "data dir"),
            "--only", ONLY]
    resume = _resume_command(build_parser().parse_args(argv), store)
    assert shlex.split(resume) == ["pcskm", *argv]
    program, _, arguments = resume.partition(" ")
    assert program == "pcskm"
    shell = subprocess.run(["bash", "-c", "printf '%s\\0' " + arguments],
                           capture_output=True, text=True, timeout=30)
    assert shell.stdout.split("\0")[:-1] == argv, shell.stderr


# item 5: expected failures


@pytest.fixture
def no_data(tmp_path):
    """A user without the paper's data files."""
    env = {key: value for key, value in os.environ.items() if key != "PCSKM_DATA"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "empty-cache")
    return env


def test_missing_data_is_one_line_and_exit_code_2(no_data, tmp_path):
    out = subprocess.run([sys.executable, "-m", "pcskm.runner.cli", "run", "paper",
                          "--dry-run", "--store", str(tmp_path / "paper.zarr")],
                         capture_output=True, text=True, timeout=300, env=no_data)
    assert out.returncode == 2
    assert one_clear_line(out.stderr), out.stderr
    assert "is not in the data folder" in out.stderr and "pcskm datasets fetch" in out.stderr


def test_debug_shows_the_traceback(no_data, tmp_path):
    out = subprocess.run([sys.executable, "-m", "pcskm.runner.cli", "--debug", "run", "paper",
                          "--dry-run", "--store", str(tmp_path / "paper.zarr")],
                         capture_output=True, text=True, timeout=300, env=no_data)
    assert out.returncode != 0
    assert "Traceback" in out.stderr and "DataNotFoundError" in out.stderr


def test_a_failed_download_is_one_line_and_exit_code_1(tmp_path, monkeypatch, capsys):
    def offline(self, url, output_file, pooch):
        raise requests.ConnectionError("Name or service not known")

    monkeypatch.setattr(pooch.HTTPDownloader, "__call__", offline)
    monkeypatch.setattr(_datafiles, "RETRIES", 0)
    code = main(["datasets", "fetch", "--data-dir", str(tmp_path), "fisheriris"])
    assert code == 1
    assert one_clear_line(capsys.readouterr().err)


def test_a_closed_pipe_ends_quietly(tmp_path):
    """``pcskm datasets list | head``: the reader is gone before the table is printed."""
    process = subprocess.Popen([sys.executable, "-m", "pcskm.runner.cli", "datasets", "list"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1
    assert stderr == ""


def test_a_missing_spec_file_is_one_line_and_exit_code_2(tmp_path):
    out = pcskm("run", tmp_path / "nothing.toml", "--dry-run")
    assert out.returncode == 2
    assert one_clear_line(out.stderr), out.stderr


# item 6: details


@pytest.mark.parametrize("argv", [
    ["datasets", "fetch", "--data-dir", "X", "fisheriris", "iono*"],
    ["datasets", "fetch", "fisheriris", "iono*", "--data-dir", "X"],
    ["datasets", "--data-dir", "X", "fetch", "fisheriris", "iono*"],
])
def test_datasets_fetch_takes_its_options_in_any_order(argv):
    args = build_parser().parse_args(argv)
    assert (args.action, args.names, args.data_dir) == ("fetch", ["fisheriris", "iono*"], "X")


def test_an_unknown_selection_is_refused_before_the_store_is_created(tmp_path, capsys):
    store = tmp_path / "results" / "smoke.zarr"
    code = main(["run", "smoke", "--store", str(store), "--only", "dataset=iriss"])
    assert code == 2
    assert "dataset=iriss matches nothing" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # no store, no lock file, no folder


@pytest.mark.parametrize("command", ["status", "report", "verify"])
def test_store_commands_say_what_they_do_and_the_default_store(command, capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args([command, "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert ("the Zarr store: a folder or s3://bucket/prefix (default: results/quick.zarr)"
            in help_text)
    assert len(help_text.split("options:")[0]) > 120  # a description, not just the usage


def test_a_dry_run_with_a_selection_names_the_selection(tmp_path):
    out = pcskm("run", "smoke", "--only", "dataset=iris", "--dry-run",
                "--calibration-seconds", 0, "--store", tmp_path / "never.zarr")
    assert out.returncode == 0, out.stderr
    counts = next(line for line in out.stdout.splitlines() if line.startswith("cells:"))
    # iris: 5 algorithms x (dkm++ and Seeding, kind random) x 2 percentages x 2 runs x 10 folds
    assert counts.startswith("cells: 400 in the selection dataset=iris (of 800 in the spec), "
                             "0 done, 400 to compute")


def test_a_heartbeat_cut_by_the_closing_scheduler_says_nothing(capfd):
    """A worker's heartbeat that meets the scheduler closing its connection (what happens when
    a Ctrl-C stops a run) is not logged; one that times out (a network fault) still is. Each
    goes through distributed's own heartbeat code on a real worker, its call to the scheduler
    replaced by one that raises."""
    from distributed.comm.core import CommClosedError

    from pcskm.runner.clusters import dask_client

    async def heartbeat_failing_with(error, dask_worker):
        async def heartbeat_worker(**_):
            raise error

        dask_worker.scheduler.heartbeat_worker = heartbeat_worker
        try:
            await dask_worker.heartbeat()
        finally:
            del dask_worker.scheduler.heartbeat_worker

    with dask_client(workers=1) as client:
        client.run(heartbeat_failing_with, CommClosedError("in <TCP (closed)>: Stream is closed"))
        closed = capfd.readouterr().err
        client.run(heartbeat_failing_with, OSError("Timed out trying to connect"))
        timed_out = capfd.readouterr().err
    assert "Failed to communicate" not in closed and "Stream is closed" not in closed, closed
    assert "Failed to communicate with scheduler during heartbeat" in timed_out, timed_out
    assert "Timed out trying to connect" in timed_out, timed_out


def test_a_ctrl_c_before_a_client_call_starts_says_nothing(capfd, caplog, monkeypatch):
    """A Ctrl-C that lands in a blocking Client call before its coroutine has started: the
    call raises KeyboardInterrupt and nothing is logged (distributed's ``sync`` schedules a
    cancel that fails with a NameError, which tornado would log with a traceback). The event
    loop is kept busy while the call is made, so the cancel runs before the coroutine's
    second step, where it would assign the future; a second call, run after the cancel
    (the loop runs its callbacks in order), tells when it has run."""
    import threading

    from distributed.utils import sync

    from pcskm.runner.clusters import dask_client

    class InterruptedEvent(threading.Event):
        def wait(self, timeout=None):
            if threading.current_thread() is threading.main_thread():
                raise KeyboardInterrupt
            return super().wait(timeout)

    async def request():
        return "answered"

    with dask_client(workers=1) as client:
        client.loop.add_callback(time.sleep, 1.0)
        with monkeypatch.context() as patched:
            patched.setattr(threading, "Event", InterruptedEvent)
            with pytest.raises(KeyboardInterrupt):
                sync(client.loop, request)
        assert sync(client.loop, request) == "answered"
        said = capfd.readouterr().err + caplog.text
    assert "NameError" not in said and "free variable" not in said, said


def test_stopping_a_cluster_with_busy_workers_says_nothing(capfd, caplog):
    """Cancelling a running task and closing the cluster while its worker still computes:
    no "Worker process still alive after 4.0 seconds, killing", no CancelledError line."""
    from pcskm.runner.clusters import dask_client

    with dask_client(workers=1) as client:
        future = client.submit(time.sleep, 30, pure=False)
        deadline = time.monotonic() + 60
        while not any(client.processing().values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)
        client.cancel(future)
    said = capfd.readouterr().err + caplog.text
    assert "still alive" not in said and "CancelledError" not in said, said


def test_run_help_lists_every_bundled_spec(capsys):
    from pcskm.experiments.spec import BUNDLED

    with pytest.raises(SystemExit):
        build_parser().parse_args(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert [name for name in BUNDLED if name not in help_text.replace("- ", "-")] == []


@pytest.mark.parametrize("error, named", [
    (TimeoutError(), "the Dask cluster did not answer in time (TimeoutError)"),
    (ConnectionResetError(), "ConnectionResetError with no message"),
])
def test_a_run_failing_with_an_error_without_text_names_it(tmp_path, monkeypatch, capfd,
                                                            error, named):
    """A run stopped by distributed's TimeoutError() once printed "pcskm: " and nothing."""
    from pcskm.runner import execute

    def failing(*args, **kwargs):
        raise error

    monkeypatch.setattr(execute, "run_spec", failing)
    code = main(["run", "smoke", "--store", str(tmp_path / "s.zarr"), "--no-progress"])
    assert code == 1
    err = capfd.readouterr().err
    assert f"pcskm: {named}" in err and "Resume with: pcskm run smoke" in err

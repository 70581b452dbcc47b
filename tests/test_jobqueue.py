"""``--cluster`` without a working batch system (docs/guide/hpc.md, Batch jobs): a job that is
not accepted ends the run at once with the submit command's own message; a job accepted but
queued is named with its queue state; the log folder of ``jobqueue.yaml`` is expanded before
it reaches the job script; a missing configuration points to the guide. Fake ``sbatch`` and
``squeue`` scripts stand in for Slurm."""

import logging
import os
import shutil
import signal
import time

import dask
import pytest
from cubes import pcskm, tiny_spec
from test_run_errors import assert_clean_error

from pcskm.runner.clusters import (
    dask_client,
    import_jobqueue,
    jobqueue_cluster,
    queued_jobs,
    submission_failure,
)

import_jobqueue()  # registers dask-jobqueue's configuration defaults

SLURM_CONFIG = """
jobqueue:
  slurm:
    cores: 1
    processes: 1
    memory: 1GB
    interface: lo
    log-directory: {log_directory}
    scheduler-options:
      dashboard_address: ":0"
"""


def fake_command(folder, name, body):
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def run_env(tmp_path):
    """A Dask configuration with the guide's kind of Slurm section, a home folder of its own
    and a PATH holding only an empty folder (``bin``, where a test puts its fake commands)."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "jobqueue.yaml").write_text(
        SLURM_CONFIG.format(log_directory=tmp_path / "logs"))
    (tmp_path / "bin").mkdir()
    (tmp_path / "spec.toml").write_text(tiny_spec("tiny-jobqueue"))
    return {"DASK_CONFIG": str(tmp_path / "config"), "HOME": str(tmp_path / "home"),
            "PATH": str(tmp_path / "bin")}


def run_on_slurm(tmp_path, env):
    return pcskm("run", tmp_path / "spec.toml", "--store", tmp_path / "s.zarr", "--cluster",
                 "slurm", "--jobs", 2, "--no-progress", env=env, timeout=120)


def test_a_rejected_submission_ends_the_run_with_sbatchs_message(tmp_path, run_env):
    message = "sbatch: error: Batch job submission failed: Invalid account or account/partition"
    fake_command(tmp_path / "bin", "sbatch", f"echo '{message}' >&2\nexit 1")
    out = run_on_slurm(tmp_path, run_env)
    assert_clean_error(out, f"job submission failed: {message}", resume=True)
    assert "waiting for workers" not in out.stderr
    assert not (tmp_path / "s.zarr").exists()  # a run that fails to start leaves no store


def test_no_sbatch_on_path_ends_the_run(tmp_path, run_env):
    out = run_on_slurm(tmp_path, run_env)
    assert_clean_error(out, "job submission failed: cannot run 'sbatch' (No such file or "
                            "directory)", resume=True)


def test_without_a_jobqueue_configuration_the_guide_is_named(tmp_path, run_env):
    (tmp_path / "config" / "jobqueue.yaml").unlink()
    out = run_on_slurm(tmp_path, run_env)
    assert_clean_error(out, "--cluster slurm: the worker jobs are not configured (cores and "
                            "memory missing", "docs/guide/hpc.md")
    assert "SLURMCluster(cores=8" not in out.stderr  # dask-jobqueue's hint for Python code


def slurm_config(**options):
    """Dask's configuration of Slurm jobs with ``options`` on top of one-core jobs."""
    return {"jobqueue.slurm": {**dask.config.get("jobqueue.slurm"), "cores": 1,
                               "processes": 1, "memory": "1GB", "interface": "lo",
                               "scheduler-options": {"dashboard_address": ":0"}, **options}}


def wait_until(condition, seconds=30):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


@pytest.fixture
def fake_slurm(tmp_path, monkeypatch):
    """An ``sbatch`` that accepts jobs 4242, 4243, ... and an ``squeue`` that says every job
    asked about is PENDING for Priority, first on PATH."""
    bin_dir = tmp_path / "bin"
    counter = tmp_path / "job-counter"
    counter.write_text("4242")
    # dask-jobqueue submits the jobs concurrently: the counter is read and written under a lock
    fake_command(bin_dir, "sbatch", f'exec 9>{counter}.lock; flock 9\n'
                                    f'n=$(cat {counter}); echo $((n + 1)) > {counter}\n'
                                    'echo "Submitted batch job $n"')
    fake_command(bin_dir, "squeue", 'for id in $(echo "$3" | tr , " "); do '
                                    'echo "$id PENDING Priority"; done')
    fake_command(bin_dir, "scancel", "exit 0")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def test_queued_jobs_are_named_with_their_queue_state(tmp_path, fake_slurm):
    with dask.config.set(slurm_config(**{"log-directory": None})), \
            jobqueue_cluster("slurm", jobs=2) as cluster:
        wait_until(lambda: len(cluster.workers) == 2
                   and all(job.job_id for job in cluster.workers.values()))
        assert submission_failure(cluster) is None
        assert queued_jobs(cluster) in ("jobs 4242 (PENDING, Priority), 4243 (PENDING, Priority)",
                                        "jobs 4243 (PENDING, Priority), 4242 (PENDING, Priority)")


def test_ctrl_c_without_scancel_names_the_jobs_to_cancel_by_hand(tmp_path, fake_slurm,
                                                                  monkeypatch, caplog):
    """A Ctrl-C while the jobs are queued and no ``scancel`` on PATH: the cluster closes, the
    KeyboardInterrupt the runner resumes from comes out (not dask-jobqueue's
    FileNotFoundError), and one line names the jobs and the command to cancel them."""
    (fake_slurm / "scancel").unlink()
    for tool in ("cat", "flock", "tr"):  # what the fake sbatch and squeue run
        (fake_slurm / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(fake_slurm))
    with dask.config.set(slurm_config(**{"log-directory": None})), \
            caplog.at_level(logging.WARNING, logger="pcskm"), pytest.raises(KeyboardInterrupt):
        with dask_client(cluster="slurm", jobs=2) as client:
            wait_until(lambda: len(client.cluster.workers) == 2
                       and all(job.job_id for job in client.cluster.workers.values()))
            raise KeyboardInterrupt
    lines = [record.getMessage() for record in caplog.records if "scancel" in
             record.getMessage()]
    assert len(lines) == 1, lines
    jobs = lines[0].rpartition("cancel them by hand: scancel ")[2].split()
    assert sorted(jobs) == ["4242", "4243"], lines
    assert lines[0].startswith("cannot run 'scancel' (No such file or directory): the batch "
                               "jobs 424"), lines


@pytest.mark.parametrize("written, expected", [
    ("~/dask-logs", "{home}/dask-logs"),
    ("$SCRATCH/dask-logs", "{scratch}/dask-logs"),
])
def test_the_log_folder_is_expanded_in_the_job_script(tmp_path, monkeypatch, written, expected):
    """dask-jobqueue writes ``log-directory`` as given into ``#SBATCH -e`` and makes the
    folder relative to the current one: ``~`` gave a folder named ``~``."""
    home, scratch = tmp_path / "home", tmp_path / "scratch"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SCRATCH", str(scratch))
    monkeypatch.chdir(tmp_path)
    fake_command(tmp_path / "bin", "sbatch", "exit 1")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    with dask.config.set(slurm_config(**{"log-directory": written})), \
            jobqueue_cluster("slurm", jobs=1) as cluster:
        script = cluster.job_script()
    folder = expected.format(home=home, scratch=scratch)
    assert f"#SBATCH -e {folder}/dask-worker-%J.err" in script
    assert f"#SBATCH -o {folder}/dask-worker-%J.out" in script
    assert os.path.isdir(folder)
    assert not (tmp_path / "~").exists() and not (tmp_path / "$SCRATCH").exists()


def test_an_unset_variable_in_the_log_folder_is_refused(monkeypatch):
    monkeypatch.delenv("PCSKM_TEST_UNSET", raising=False)
    with dask.config.set(slurm_config(**{"log-directory": "$PCSKM_TEST_UNSET/logs"})), \
            pytest.raises(ValueError, match=r"log-directory "
                                                '\'\\$PCSKM_TEST_UNSET/logs\': an environment '
                                                "variable in it is not set"):
        jobqueue_cluster("slurm", jobs=1)



def test_importing_dask_jobqueue_keeps_the_ctrl_c_handler(monkeypatch):
    """dask-jobqueue sets SIGINT's handler to sys.exit when its runner module is imported: a
    Ctrl-C would then end a run with SystemExit instead of the KeyboardInterrupt it resumes
    from (and, in the tests, break the Ctrl-C tests run after this file in one process)."""
    import sys

    def mine(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, mine)
    try:
        for name in [m for m in sys.modules if m.startswith("dask_jobqueue")]:
            monkeypatch.delitem(sys.modules, name)
        import_jobqueue()
        assert signal.getsignal(signal.SIGINT) is mine
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)

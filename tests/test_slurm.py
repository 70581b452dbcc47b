"""A real HPC scheduler: the smoke spec through ``pcskm run --cluster slurm`` with two
one-core worker jobs, one of them cancelled with ``scancel`` mid-run, must still give the
cube of a LocalCluster run, value for value. Needs a reachable Slurm (``.ci/slurm-start.sh``
starts a single-node one); skipped when ``sinfo`` fails, except in CI (``CI=true``, where
``.ci/run`` started Slurm), where an unreachable Slurm is a failure."""

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from cubes import Progress, assert_same_cube, done_cells

from pcskm.experiments.spec import load_spec
from pcskm.runner import run_spec

REPO = Path(__file__).resolve().parents[1]
SMOKE = load_spec("smoke")

pytestmark = pytest.mark.slurm


def slurm_reachable():
    if shutil.which("sinfo") is None:
        return "sinfo is not installed"
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True,
                             timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo timed out"
    if out.returncode != 0:
        return f"sinfo failed: {out.stderr.strip()}"
    if not {"idle", "mixed", "allocated"} & set(out.stdout.split()):
        return f"no Slurm node is up (sinfo: {out.stdout.strip()!r})"
    return None


def running_jobs(name):
    out = subprocess.run(["squeue", "-h", "-n", name, "-t", "RUNNING", "-o", "%i"],
                         capture_output=True, text=True, timeout=20)
    return out.stdout.split()


def needs_slurm():
    """Skip without a reachable Slurm, except in CI, which started one: there, fail."""
    reason = slurm_reachable()
    if reason and os.environ.get("CI") == "true":
        pytest.fail(f"CI started Slurm (.ci/slurm-start.sh) but it is not reachable: {reason}")
    if reason:
        pytest.skip(f"no Slurm reachable: {reason}")


def slurm_jobs(tmp_path, job_name, walltime):
    """The environment of a ``pcskm run --cluster slurm`` whose jobs are named ``job_name``
    and end at ``walltime``: a Dask configuration folder with its jobqueue.yaml."""
    config = tmp_path / "dask-config"
    config.mkdir()
    (config / "jobqueue.yaml").write_text(f"""
jobqueue:
  slurm:
    name: {job_name}
    cores: 1
    processes: 1
    memory: 1GB
    walltime: "{walltime}"
    interface: lo
    death-timeout: 60
    local-directory: {tmp_path / "dask-local"}
    log-directory: {tmp_path / "dask-logs"}
    scheduler-options:
      dashboard_address: ":0"
""")
    return {**os.environ, "DASK_CONFIG": str(config)}


def smoke_on_a_local_cluster(tmp_path):
    """The smoke spec computed by a LocalCluster of 2 workers: the reference cube."""
    from distributed import Client, LocalCluster

    reference = tmp_path / "local.zarr"
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        run_spec(SMOKE, reference, client=client, progress=False)
    return reference


def test_smoke_on_slurm_survives_a_cancelled_worker_job(tmp_path):
    needs_slurm()
    reference = smoke_on_a_local_cluster(tmp_path)

    job_name = f"pcskm-test-{uuid.uuid4().hex[:8]}"
    store = tmp_path / "slurm.zarr"
    total = len(SMOKE.datasets) * len(SMOKE.algorithms) * len(SMOKE.inits) \
        * len(SMOKE.percentages) * SMOKE.n_runs * SMOKE.n_folds  # kind random only
    process = subprocess.Popen(
        [sys.executable, "-m", "pcskm.runner.cli", "run", "smoke", "--store", str(store),
         "--cluster", "slurm", "--jobs", "2"],
        cwd=REPO, env=slurm_jobs(tmp_path, job_name, "00:10:00"), stderr=subprocess.PIPE)
    progress = Progress(process)
    try:
        deadline = time.monotonic() + 180
        jobs = []
        while time.monotonic() < deadline and process.poll() is None:
            jobs = running_jobs(job_name)
            if len(jobs) == 2 and progress.cells() > 0:
                break
            time.sleep(0.1)
        assert len(jobs) == 2 and process.poll() is None, "the run never had two workers"
        cells_before = progress.cells()
        cancelled = subprocess.run(["scancel", jobs[0]], capture_output=True, text=True,
                                   timeout=20)
        assert cancelled.returncode == 0, cancelled.stderr
        assert cells_before < total, "the run finished before the job could be cancelled"
        process.wait(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    stderr = progress.join()
    assert process.returncode == 0, stderr
    assert "export DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL=1s" in stderr  # the job script
    assert done_cells(store) == total
    assert_same_cube(reference, store)
    assert jobs[0] not in running_jobs(job_name)

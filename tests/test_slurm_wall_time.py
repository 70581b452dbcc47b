"""Batch jobs end (issue 67) on a real Slurm (``.ci/slurm-start.sh``): jobs of a 1-minute wall
time, whose workers retire before it (``--lifetime``), fill the smoke spec's cube value for
value as a LocalCluster does; a chunk that no such job can finish is refused before any job is
submitted, in one line naming it, its estimate and the wall time."""

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from cubes import assert_same_cube, done_cells
from test_slurm import (
    needs_slurm,
    running_jobs,
    slurm_jobs,
    smoke_on_a_local_cluster,
)
from test_wall_time import WAITS

from pcskm.experiments.spec import load_spec

REPO = Path(__file__).resolve().parents[1]
SMOKE = load_spec("smoke")

pytestmark = pytest.mark.slurm

# One chunk of 8 PCSKM variants x 5,000 runs x 10 folds on 120 points: 259 s by work units,
# more than 5 times the 44 s a worker of a 1-minute job lives at the least
TOO_BIG = """
name = "too-big"
datasets = ["brodinova-3-97"]
algorithms = [{names}]
inits = ["dkm++"]
kinds = ["random"]
percentages = [1]
n_runs = 5000
{variants}
"""


def test_a_chunk_no_job_can_finish_is_refused_before_submission(tmp_path):
    needs_slurm()
    names = [f"P{n}" for n in range(8)]
    variants = "\n".join(f'[variants.P{n}]\nestimator = "PCSKM"\nparams = {{ max_iter = '
                         f"{20 + n} }}" for n in range(8))
    spec = tmp_path / "too-big.toml"
    spec.write_text(TOO_BIG.format(names=", ".join(f'"{n}"' for n in names),
                                   variants=variants))
    job_name = f"pcskm-test-{uuid.uuid4().hex[:8]}"
    began = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "pcskm.runner.cli", "run", str(spec),
                          "--store", str(tmp_path / "s.zarr"), "--cluster", "slurm",
                          "--jobs", "1"], cwd=REPO, env=slurm_jobs(tmp_path, job_name, "00:01:00"),
                         capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - began
    assert run.returncode == 2, run.stderr
    line = run.stderr.strip()
    assert "\n" not in line and "KilledWorker" not in line
    assert line.startswith("pcskm: the chunk dataset=brodinova-3-97, kind=random, percent=1 "
                           "is estimated at 259 s on one core")
    assert "the wall time 60 s" in line and "nothing was submitted" in line
    assert not (tmp_path / "s.zarr").exists()
    assert not (tmp_path / "dask-logs").exists() or not any((tmp_path / "dask-logs").iterdir())
    assert running_jobs(job_name) == []
    assert seconds < 120  # planning only: 33 s of CPU at a load average of 30 on 2 cores


# One chunk of two cells of a user estimator that waits 40 s per fit: 80 s, which work units
# price as milliseconds
EIGHTY_SECONDS = """
name = "eighty-seconds"
datasets = ["iris"]
algorithms = ["WAIT"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [1]
n_runs = 1
n_folds = 2

[variants.WAIT]
estimator = "waits40_for_pcskm:Waits"
constraints = "ignore"
"""


# In the slow suite: waits 22 s for a user's fit on the real Slurm: about 28 s. The default
# suite refuses a 30-s fit after 2 s without Slurm (tests/test_wall_time.py).
@pytest.mark.slow
def test_an_80_second_user_task_is_refused_before_submission_without_a_dry_run(tmp_path):
    """No dry run kept a calibration of it: one cell is timed in a child of the client,
    which is given the 44 s a worker of a 1-minute job lives at the least, times its 1/2
    share of the chunk; still computing after 22 s, the run is refused, before its fit
    ends."""
    needs_slurm()
    module = tmp_path / "waits40_for_pcskm.py"
    module.write_text(WAITS.replace("SECONDS = 0.0", "SECONDS = 40"))
    spec = tmp_path / "eighty.toml"
    spec.write_text(EIGHTY_SECONDS)
    job_name = f"pcskm-test-{uuid.uuid4().hex[:8]}"
    env = slurm_jobs(tmp_path, job_name, "00:01:00")
    env["PYTHONPATH"] = f"{tmp_path}:{env.get('PYTHONPATH', '')}"
    began = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "pcskm.runner.cli", "run", str(spec),
                          "--store", str(tmp_path / "s.zarr"), "--cluster", "slurm",
                          "--jobs", "1", "--preload", str(module)], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - began
    assert run.returncode == 2, run.stderr
    line = run.stderr.strip().splitlines()[-1]
    assert "KilledWorker" not in run.stderr and "Traceback" not in run.stderr
    assert line.startswith("pcskm: one cell of WAIT (dkm++) in the chunk dataset=iris, "
                           "kind=random, percent=1, timed before submitting, was still "
                           "computing after 22 s: the chunk's 2 cells of WAIT (dkm++) take more "
                           "than 44 s, longer than a worker lives"), line
    assert "the wall time 60 s" in line and "nothing was submitted" in line
    assert not (tmp_path / "s.zarr").exists()
    assert not (tmp_path / "dask-logs").exists() or not any((tmp_path / "dask-logs").iterdir())
    assert running_jobs(job_name) == []
    assert seconds < 40 + 30  # not after the fit's 40 s: 22 s and the start of the command


@pytest.mark.slow
def test_a_run_through_one_minute_jobs_equals_the_local_cube(tmp_path):
    needs_slurm()
    reference = smoke_on_a_local_cluster(tmp_path)
    job_name = f"pcskm-test-{uuid.uuid4().hex[:8]}"
    store = tmp_path / "slurm.zarr"
    run = subprocess.run([sys.executable, "-m", "pcskm.runner.cli", "run", "smoke", "--store",
                          str(store), "--cluster", "slurm", "--jobs", "2", "--no-progress"],
                         cwd=REPO, env=slurm_jobs(tmp_path, job_name, "00:01:00"),
                         capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stderr
    assert "--lifetime 47s --lifetime-stagger 3s" in run.stderr  # the job script
    assert "of the jobs' wall time of 60 s" in run.stderr
    assert done_cells(store) == done_cells(reference) > 0
    assert_same_cube(reference, store)

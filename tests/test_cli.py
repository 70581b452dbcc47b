"""The ``pcskm`` command line in subprocesses: a full run, SIGINT mid-run and resume, the
dry run, status, report, datasets and refusals."""

import re
import shlex
import signal
import uuid

import pytest
import xarray as xr
from cubes import (
    REPO,
    assert_same_cube,
    done_cells,
    pcskm,
    signal_mid_run,
)

from pcskm.experiments.spec import load_spec
from pcskm.runner.cli import build_parser
from pcskm.runner.store import where

SMOKE = load_spec("smoke")
SMOKE_CELLS = (len(SMOKE.datasets) * len(SMOKE.algorithms) * len(SMOKE.percentages)
               * SMOKE.n_runs * SMOKE.n_folds
               * sum(len(SMOKE.seeding_kinds if i == "seeding" else SMOKE.kinds)
                     for i in SMOKE.inits))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    store = tmp_path_factory.mktemp("cli") / "smoke.zarr"
    done = pcskm("run", "smoke", "--store", store, "--workers", 2, "--no-progress")
    assert done.returncode == 0, done.stderr
    assert f"store: {store.resolve()}" in done.stderr
    return store


def test_defaults_are_the_quick_spec_and_its_store():
    args = build_parser().parse_args(["run"])
    assert args.spec == "quick" and args.store is None


FOLDER_THEN_SLOW_S3 = pytest.mark.parametrize(
    "interrupted", ["folder", pytest.param("s3", marks=pytest.mark.slow)], indirect=True)
S3_THEN_SLOW_FOLDER = pytest.mark.parametrize(
    "interrupted", [pytest.param("folder", marks=pytest.mark.slow), "s3"], indirect=True)


@pytest.fixture(params=["folder", "s3"])
def interrupted(request, tmp_path):
    """Where an interrupted run's store goes: a folder, or a repository on the test
    session's S3 server (tests/s3_server.py; docs/guide/hpc.md, "The store on object
    storage"), so that every interruption is tested on both kinds of store. The default suite
    has SIGINT on S3 and SIGTERM on a folder; the slow one has the other two
    (:data:`S3_THEN_SLOW_FOLDER`, :data:`FOLDER_THEN_SLOW_S3`) and a lost scheduler on both,
    to keep the default suite within its time."""
    if request.param == "folder":
        return tmp_path / "interrupted.zarr"
    s3 = request.getfixturevalue("s3")
    return f"s3://{s3.bucket(f'interrupted-{uuid.uuid4().hex[:12]}')}/longer"


@S3_THEN_SLOW_FOLDER
def test_sigint_mid_run_then_rerun_gives_the_same_cube(interrupted, longer_smoke):
    """Ctrl-C (SIGINT to the whole process group, workers included, as a terminal sends it)
    once the progress bar shows computed cells: the tasks whose receipts were received so far
    are marked done (the client holds them in memory until then), no process prints a traceback,
    and the rest is computed by the next run. The smoke grid with 25 runs instead of 2
    (``longer_smoke``): the smoke spec itself can end on a fast machine before the signal
    arrives."""
    spec, reference = longer_smoke
    store = interrupted
    returncode, stderr = signal_mid_run(["run", spec, "--store", store, "--workers", 2],
                                        signal.SIGINT, cwd=REPO)
    assert returncode == 130, stderr
    assert f"Resume with: pcskm run {spec} --store" in stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert done_cells(store) > 0
    where(store).open_datatree().load()  # readable after the interruption
    assert_the_rerun_completes(spec, store, reference)


def test_dry_run_counts_cells_and_tasks_and_writes_nothing(tmp_path):
    store = tmp_path / "never.zarr"
    out = pcskm("run", "smoke", "--store", store, "--dry-run", "--calibration-seconds", 5)
    assert out.returncode == 0, out.stderr
    assert f"cells: {SMOKE_CELLS} in the spec, 0 done, {SMOKE_CELLS} to compute" in out.stdout
    assert "estimated run time on" in out.stdout
    assert not store.exists()
    # issue 33, point 7: the run time counts the run's start (pcskm's own, the client's
    # kernels, the local cluster, a worker's), which the probes do not time, then the
    # workers' compute and writing
    worker = re.search(r"estimated start of a worker: (\d+) s before its first result", out.stdout)
    start = re.search(r"estimated start of the run: (\d+) s before the workers compute "
                      r"\(pcskm's start (\d+) s, the client's kernels (\d+) s, the local "
                      r"cluster (\d+) s, a worker's start (\d+) s\)", out.stdout)
    total = re.search(r"estimated run time on \d+ workers: (\d+) s: the start and (\d+) s "
                      r"of compute and writing", out.stdout)
    assert worker and start and total, out.stdout
    assert int(worker.group(1)) > 0 and int(start.group(5)) == int(worker.group(1))
    parts = [int(start.group(i)) for i in range(2, 6)]
    assert abs(int(start.group(1)) - sum(parts)) <= 2  # each part rounded to the second
    assert abs(int(total.group(1)) - int(start.group(1)) - int(total.group(2))) <= 1


def test_status_counts_the_cells(reference):
    out = pcskm("status", reference)
    assert out.returncode == 0, out.stderr
    total = next(line for line in out.stdout.splitlines() if line.startswith("total"))
    cells, done, missing = map(int, total.split()[1:4])
    assert (cells, done, missing) == (SMOKE_CELLS, SMOKE_CELLS, 0)


def test_rerun_of_a_complete_store_computes_nothing(reference):
    out = pcskm("run", "smoke", "--store", reference, "--no-progress")
    assert out.returncode == 0, out.stderr
    assert "nothing to compute" in out.stderr


def test_incompatible_spec_is_refused_with_exit_code_2(reference, tmp_path):
    changed = tmp_path / "smoke-seed1.toml"
    changed.write_text(SMOKE.source_text.replace("seed = 0", "seed = 1"))
    out = pcskm("run", changed, "--store", reference)
    assert out.returncode == 2
    assert "seed is 0" in out.stderr and "but 1 in this spec" in out.stderr


def test_report_writes_the_report(reference, tmp_path):
    out = pcskm("report", reference, "--out", tmp_path / "report")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "report" / "report.md").is_file()


def test_datasets_list_and_bad_only_selection():
    listed = pcskm("datasets", "list")
    assert listed.returncode == 0 and "brodinova-5-5" in listed.stdout
    bad = pcskm("run", "smoke", "--dry-run", "--only", "algorithm=KMEANS")
    assert bad.returncode == 2 and "matches nothing" in bad.stderr


def test_the_resume_command_keeps_where_and_how_to_compute():
    """Issue 35: after a lost scheduler the run printed ``pcskm run SPEC --store ...``,
    which on a cluster computes on the login node. The resume command must parse back to
    the options given (but --force: the forced run cleared its done markers already)."""
    from pcskm.runner.cli import _resume_command

    given = ["--quiet", "run", "paper", "--scheduler", "tcp://10.0.0.5:8786", "--workers",
             "8", "--only", "kind=random|must-link", "--data-dir", "/data dir", "--force"]
    command = _resume_command(build_parser().parse_args(given), "results/paper.zarr")
    assert command == ("pcskm --quiet run paper --store results/paper.zarr --data-dir "
                       "'/data dir' --only 'kind=random|must-link' --workers 8 "
                       "--scheduler tcp://10.0.0.5:8786")
    words = shlex.split(command)
    assert words[0] == "pcskm"
    resumed, original = build_parser().parse_args(words[1:]), build_parser().parse_args(given)
    assert {**vars(original), "force": False, "store": "results/paper.zarr"} == vars(resumed)
    for cluster in (["--cluster", "slurm", "--jobs", "4"],
                    ["--cluster", "pbs", "--minimum-jobs", "1", "--maximum-jobs", "9"]):
        args = build_parser().parse_args(["run", "smoke", *cluster])
        assert shlex.split(_resume_command(args, "s.zarr"))[-len(cluster):] == cluster


OPEN_STUDY = """
name = "open"
datasets = ["blobs"]
algorithms = ["PCKM", "COPKM", "KMeans"]
inits = ["dkm++", "seeding"]
kinds = ["random"]
percentages = [0.5, 1]
n_runs = 10
n_folds = 5

[data.blobs]
path = "blobs.csv"
label_column = "group"
standardise = true

[variants.COPKM]
estimator = "copkm:COPKMeans"

[variants.KMeans]
estimator = "sklearn.cluster:KMeans"
constraints = "ignore"
params = { n_init = 1 }
"""

COPKM = '''
import numpy as np


class COPKMeans:
    """COP-KMeans (Wagstaff et al., 2001): raises when a point has no allowed cluster."""

    def __init__(self, n_clusters=3, init=None, max_iter=20):
        self.n_clusters, self.init, self.max_iter = n_clusters, init, max_iter

    def get_params(self, deep=True):
        return {"n_clusters": self.n_clusters, "init": self.init, "max_iter": self.max_iter}

    def fit(self, X, must_link=None, cannot_link=None):
        n = len(X)
        must, cannot = [[] for _ in range(n)], [[] for _ in range(n)]
        for partners, pairs in ((must, must_link), (cannot, cannot_link)):
            for a, b in pairs:
                partners[a].append(b)
                partners[b].append(a)
        centres = np.array(self.init, dtype=float)
        for _ in range(self.max_iter):
            labels = np.full(n, -1)
            for i in range(n):
                for c in np.argsort(((centres - X[i]) ** 2).sum(axis=1)):
                    if all(labels[j] in (-1, c) for j in must[i]) and \\
                            all(labels[j] != c for j in cannot[i]):
                        labels[i] = c
                        break
                else:
                    raise RuntimeError(f"point {i} has no allowed cluster")
            centres = np.array([X[labels == c].mean(axis=0) if np.any(labels == c)
                                else centres[c] for c in range(self.n_clusters)])
        self.labels_ = labels
        return self
'''


# In the slow suite: a study of a user's estimator killed and rerun: about 45 s.
@pytest.mark.slow
def test_killed_run_of_an_open_study_then_rerun_gives_the_same_cube(tmp_path):
    """The kill/rerun guarantee holds for a study of a CSV data set with user estimators (a
    preloaded module whose fits fail on some cells, and scikit-learn's KMeans): the client and
    its workers killed (SIGKILL to the process group) once results arrive, then the rerun, give
    the cube of the uninterrupted run, failed fits and their messages included."""
    import numpy as np

    rng = np.random.default_rng(3)
    groups = np.repeat([1, 2, 3], 40)
    X = np.column_stack([rng.normal(size=(120, 2)) + 3 * groups[:, None], rng.normal(
        size=(120, 2)), groups])
    np.savetxt(tmp_path / "blobs.csv", X, delimiter=",", header="a,b,c,d,group", comments="",
               fmt="%.5f")
    (tmp_path / "copkm.py").write_text(COPKM)
    spec = tmp_path / "open.toml"
    spec.write_text(OPEN_STUDY)
    run = ["run", spec, "--preload", tmp_path / "copkm.py", "--workers", 2]
    reference = tmp_path / "reference.zarr"
    done = pcskm(*run, "--store", reference, "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    errors = xr.open_zarr(reference, group="blobs").status.sel(algorithm="COPKM")
    assert 0 < int((errors == 6).sum()) < errors.size  # some fits fail, some do not
    store = tmp_path / "killed.zarr"
    signal_mid_run([*run, "--store", store], signal.SIGKILL, cwd=tmp_path)
    n_cells = 3 * 2 * 2 * 10 * 5
    assert done_cells(store) < n_cells  # killed before the end
    resumed = pcskm(*run, "--store", store, "--no-progress", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert_same_cube(reference, store)


def test_dry_run_of_a_spec_with_three_folds(tmp_path):
    """The calibration times the folds a spec has: with 3 folds, folds 0 to 2 (it timed folds
    1 to 3 of the paper's 10, and fold 3 does not exist)."""
    from cubes import tiny_spec

    spec = tmp_path / "three.toml"
    spec.write_text(tiny_spec("three").replace("n_folds = 10", "n_folds = 3"))
    out = pcskm("run", spec, "--store", tmp_path / "three.zarr", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "cells: 3 in the spec, 0 done, 3 to compute" in out.stdout
    assert not (tmp_path / "three.zarr").exists()


def test_a_failed_worker_start_is_reported_not_raised(tmp_path):
    """The dry run's fresh worker process (issue 33, point 7) imports the --preload files; one
    that fails there ends in WorkerStartFailed with the process's own last error line."""
    from pcskm.runner.calibrate import WorkerStartFailed, worker_start_seconds

    broken = tmp_path / "broken_for_pcskm.py"
    broken.write_text("raise RuntimeError('not on this worker')\n")
    with pytest.raises(WorkerStartFailed, match="not on this worker"):
        worker_start_seconds([], preload=[broken])
    assert worker_start_seconds([]) > 0


@pytest.fixture(scope="module")
def longer_smoke(tmp_path_factory):
    """The smoke grid with 25 runs (a few seconds of compute, so that a signal arrives
    mid-run) and its cube, uninterrupted, on 2 local workers: ``(spec, cube)``."""
    folder = tmp_path_factory.mktemp("longer")
    spec = folder / "longer.toml"
    spec.write_text((REPO / "experiments" / "specs" / "smoke.toml").read_text()
                    .replace("n_runs = 2\n", "n_runs = 25\n"))
    reference = folder / "reference.zarr"
    done = pcskm("run", spec, "--store", reference, "--workers", 2, "--no-progress")
    assert done.returncode == 0, done.stderr
    return spec, reference


def assert_the_rerun_completes(spec, store, reference):
    """``store``, left by an interrupted run of the ``longer_smoke`` spec, holds fewer cells
    than the spec; its rerun computes exactly the others and gives the uninterrupted cube
    ``reference``."""
    n_cells = SMOKE_CELLS // SMOKE.n_runs * 25
    done = done_cells(store)
    assert done < n_cells
    resumed = pcskm("run", spec, "--store", store, "--workers", 2, "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{done} already done; computing {n_cells - done} cells" in resumed.stderr
    assert_same_cube(reference, store)


@FOLDER_THEN_SLOW_S3
def test_sigterm_mid_run_then_rerun_gives_the_same_cube(interrupted, longer_smoke):
    """SIGTERM to the client and its workers (a batch system ending the job) once results
    arrive: the run stops with the resume command, the store is readable, and the rerun gives
    the cube of the uninterrupted run."""
    spec, reference = longer_smoke
    store = interrupted
    returncode, stderr = signal_mid_run(["run", spec, "--store", store, "--workers", 2],
                                        signal.SIGTERM, cwd=REPO)
    assert returncode == 130, stderr
    assert f"Resume with: pcskm run {spec} --store" in stderr and "Traceback" not in stderr
    assert_the_rerun_completes(spec, store, reference)


# In the slow suite: about 25 s per store.
@pytest.mark.slow
@pytest.mark.parametrize("interrupted", ["folder", "s3"], indirect=True)
def test_a_scheduler_lost_mid_run_then_rerun_gives_the_same_cube(interrupted, longer_smoke):
    """A real scheduler and two workers in their own processes; the scheduler killed
    (SIGKILL) once results reach the client: the run stops (exit code 1) with the resume
    command, and the rerun (here on a local cluster) gives the cube of the uninterrupted
    run."""
    import contextlib
    import os
    import subprocess
    import sys

    from cubes import Progress
    from test_reliability import free_port, wait_for

    spec, reference = longer_smoke
    address = f"tcp://127.0.0.1:{free_port()}"
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                                  "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                                  "--dashboard-address", ":0"], stderr=subprocess.DEVNULL,
                                 start_new_session=True)
    workers = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                                "--nworkers", "2", "--nthreads", "1", "--dashboard-address",
                                ":0"], stderr=subprocess.DEVNULL, start_new_session=True)
    store = interrupted
    try:
        run = subprocess.Popen([sys.executable, "-m", "pcskm.runner.cli", "run", spec,
                                "--store", store, "--scheduler", address], cwd=REPO,
                               stderr=subprocess.PIPE)
        progress = Progress(run)
        wait_for(lambda: progress.cells() > 0 or run.poll() is not None, seconds=300)
        os.killpg(scheduler.pid, signal.SIGKILL)
        run.wait(timeout=300)
        stderr = progress.join()
    finally:
        for process in (workers, scheduler):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    assert run.returncode == 1, stderr
    assert f"Resume with: pcskm run {spec} --store {store} --scheduler {address}" in stderr
    assert_the_rerun_completes(spec, store, reference)

"""A fault of the machine during a fit is not a result (issue 64, case 3): out of memory, a
failing file system or a worker that dies fails the task, whose cells stay missing and are
computed by the next run; only the method's own exceptions are stored as failed fits."""

import errno

import pytest
from cubes import assert_same_cube, done_cells, pcskm

from pcskm.experiments.faults import is_environmental

ESTIMATORS = '''
import os
import time
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin

MARKER = Path(os.environ["FAULTY_MARKER"])  # the worker imports a copy of this module


class MemoryOnce(ClusterMixin, BaseEstimator):
    """Raises MemoryError in the first fit it meets (a marker file says it did), then labels
    the points in turn."""

    def __init__(self, n_clusters=2):
        self.n_clusters = n_clusters

    def fit(self, X):
        if not MARKER.exists():
            MARKER.touch()
            raise MemoryError("no memory left for this fit")
        self.labels_ = np.arange(len(X)) % self.n_clusters
        return self


class Exits(ClusterMixin, BaseEstimator):
    """Ends its process in the middle of a fit."""

    def __init__(self, n_clusters=2):
        self.n_clusters = n_clusters

    def fit(self, X):
        os._exit(1)


class Hogs(ClusterMixin, BaseEstimator):
    """Holds 2 GB and waits for its worker's nanny to end it."""

    def __init__(self, n_clusters=2):
        self.n_clusters = n_clusters

    def fit(self, X):
        held = np.ones(2**28)  # every page written: 2 GB resident
        time.sleep(60)
        self.labels_ = np.arange(len(X)) % self.n_clusters + int(held[0]) - 1
        return self
'''

SPEC = '''
name = "faults"
seed = 0
datasets = ["iris"]
algorithms = ["{name}", "LKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [1]
n_runs = 1
n_folds = 3

[variants.{name}]
estimator = "faulty_for_pcskm:{estimator}"
constraints = "ignore"
'''


def study(folder, estimator):
    """The module and a spec of ``estimator`` beside LKM in ``folder``: the spec's path."""
    (folder / "faulty_for_pcskm.py").write_text(ESTIMATORS)
    spec = folder / "faults.toml"
    spec.write_text(SPEC.format(name=estimator.upper(), estimator=estimator))
    return spec


def run(spec, store, env=None):
    """``pcskm run`` of ``spec``, its MemoryError marker beside it."""
    env = {"FAULTY_MARKER": str(spec.with_name("memory-error-raised")), **(env or {})}
    return pcskm("run", spec, "--store", store, "--workers", 1, "--no-progress", "--preload",
                 spec.with_name("faulty_for_pcskm.py"), env=env, cwd=spec.parent)


@pytest.mark.parametrize(("error", "expected"), [
    (MemoryError(), True),
    (OSError(errno.ENOSPC, "No space left on device"), True),
    (OSError(errno.EIO, "Input/output error"), True),
    (OSError(errno.EMFILE, "Too many open files"), True),
    (FileNotFoundError(errno.ENOENT, "No such file or directory"), False),
    (PermissionError(errno.EACCES, "Permission denied"), False),
    (ValueError("bad input"), False),
    (RuntimeError("did not converge"), False),
])
def test_faults_of_the_machine_are_told_from_the_methods(error, expected):
    assert is_environmental(error) is expected


@pytest.mark.slow  # three runs of pcskm, each starting its cluster: about a minute
def test_a_memory_error_leaves_the_cells_missing_for_the_next_run(tmp_path):
    """The first run ends non-zero naming MemoryError, with nothing marked done; the second
    computes the cells, and the cube equals that of a run in which no fit raised."""
    (tmp_path / "faulty").mkdir()
    faulty = study(tmp_path / "faulty", "MemoryOnce")
    store = tmp_path / "faulty.zarr"
    first = run(faulty, store)
    assert first.returncode == 1, first.stderr
    assert "MemoryError: no memory left for this fit" in first.stderr, first.stderr
    assert done_cells(store) == 0
    second = run(faulty, store)
    assert second.returncode == 0, second.stderr
    assert done_cells(store) == 2 * 3

    (tmp_path / "clean").mkdir()
    clean = study(tmp_path / "clean", "MemoryOnce")
    (clean.parent / "memory-error-raised").touch()  # no fit raises
    out = run(clean, tmp_path / "clean.zarr")
    assert out.returncode == 0, out.stderr
    assert_same_cube(store, tmp_path / "clean.zarr")


def test_a_fit_that_ends_its_worker_is_named(tmp_path):
    """A fit calling os._exit(1) ended the run with exit code 1 and nothing said (the client
    ran it to compile the kernels); now the task fails once its worker has died, named."""
    spec = study(tmp_path, "Exits")
    out = run(spec, tmp_path / "exits.zarr",
              env={"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"})
    assert out.returncode == 1, out.stderr
    assert "the worker died while running it (1 attempt" in out.stderr, out.stderr
    assert "1 tasks failed (first: pcskm-iris-random-1-0-" in out.stderr, out.stderr
    assert done_cells(tmp_path / "exits.zarr") == 0


# In the slow suite: a worker filled past its memory limit: about 12 s (23 s on a slow VM).
# The default suite names a worker that died of a fit (above).
@pytest.mark.slow
def test_a_worker_past_its_memory_limit_is_named_with_the_limit(tmp_path):
    """A fit holding 2 GB in the only worker, whose nanny restarts it past 5 % of its memory
    limit (Dask's default for one worker: the machine's memory, 1.2 GB on 24 GB): the task
    fails with one line naming what the worker held and the limit Dask gave it, and no
    KilledWorker text."""
    import re

    from dask.utils import format_bytes
    from distributed.system import MEMORY_LIMIT

    spec = study(tmp_path, "Hogs")
    share = 0.05
    out = run(spec, tmp_path / "hogs.zarr",
              env={"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0",
                   "DASK_DISTRIBUTED__WORKER__MEMORY__TERMINATE": str(share)})
    assert out.returncode == 1, out.stderr
    found = re.search(r"the worker ran out of memory while running it \(1 attempt; .*\): its "
                      r"nanny restarted it holding (\S+ \S+), past its memory limit of "
                      r"(\S+ \S+)", out.stderr)
    assert found, out.stderr
    limit = MEMORY_LIMIT  # of one worker of a local cluster: the machine's
    assert found[2] == format_bytes(limit)
    held = float(found[1].split()[0]) * {"GiB": 2**30, "MiB": 2**20}[found[1].split()[1]]
    assert share * limit < held < 4 * 2**30
    assert "KilledWorker" not in out.stderr
    assert done_cells(tmp_path / "hogs.zarr") == 0

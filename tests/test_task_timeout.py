"""No task waits forever (issue 64, case 6): a task past ``--task-timeout`` (or the spec's
``[run] task_timeout``) is ended, its worker restarted, its settings run again one at a time,
the hung one's cells left missing, and the run ends non-zero naming it, every other cell
kept; a task far slower than expected is
named in the progress line (:mod:`pcskm.runner.task_clock`)."""

import re
import textwrap

import pytest
import xarray as xr

from pcskm.experiments.spec import parse_spec
from pcskm.runner.progress import Progress
from pcskm.runner.task_clock import TaskClock

HANGS = '''
import time

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin


class Fast(ClusterMixin, BaseEstimator):
    def __init__(self, n_clusters=2):
        self.n_clusters = n_clusters

    def fit(self, X):
        self.labels_ = np.arange(len(X)) % self.n_clusters
        return self


class HangsOnIris(Fast):
    """Hangs on the data set of 4 features (iris), fits the others at once."""

    def fit(self, X):
        if X.shape[1] == 4:
            time.sleep(3600)
        return super().fit(X)
'''


ESTIMATOR = {"FAST": "Fast", "HANG": "HangsOnIris"}


def spec_text(extra="", algorithms=("FAST", "HANG")):
    variants = "".join(f"""
        [variants.{name}]
        estimator = "hangs_for_pcskm:{ESTIMATOR[name]}"
        constraints = "ignore"
        """ for name in algorithms)
    return textwrap.dedent(f"""
        name = "hangs"
        datasets = ["iris", "brodinova-5-5"]
        algorithms = {list(algorithms)}
        inits = ["dkm++"]
        kinds = ["random"]
        percentages = [1, 5]
        n_runs = 1
        n_folds = 3
        {variants}
        {extra}
        """)


class FakeScheduler:
    """What :class:`TaskClock` asks of a client: the tasks executing, set by the test."""

    def __init__(self):
        self.executing, self.asked, self.idle = {}, 0, set()

    def run_on_scheduler(self, function):
        self.asked += 1
        return dict(self.executing), sorted({w for w, _ in self.executing.values()}
                                            | self.idle)


def test_a_task_past_the_limit_is_overdue_once_and_the_others_are_not():
    client = FakeScheduler()
    clock = TaskClock(client, {"a": 1.0, "b": 1.0, "c": 1.0}, limit=20.0, every=0.0)
    client.executing = {"a": ("w1", 19.9), "b": ("w2", 20.1), "other-run": ("w3", 99.0)}
    assert clock.overdue() == [("b", "w2", 20.1)]  # not a task of this run, not under it
    client.executing["a"] = ("w1", 25.0)
    assert clock.overdue() == [("a", "w1", 25.0)]  # b was ended already: not again
    assert TaskClock(client, {"a": 1.0}, limit=None).overdue() == []  # no limit
    assert client.asked == 2


def test_the_scheduler_is_asked_at_most_every_interval():
    client = FakeScheduler()
    clock = TaskClock(client, {"a": 1.0}, limit=20.0, every=60.0)
    for _ in range(5):
        clock.overdue()
    assert client.asked == 1


def test_a_task_far_slower_than_expected_is_named():
    client = FakeScheduler()
    weights = {"done": 2.0, "light": 1.0, "heavy": 10.0}
    clock = TaskClock(client, weights, every=0.0, slow_factor=3.0, slow_seconds=5.0)
    client.executing = {"light": ("w1", 100.0)}
    assert clock.slow() is None  # no task finished: nothing is expected yet
    clock.finished("done", 8.0)  # 4 s per unit of weight: light 4 s, heavy 40 s expected
    client.executing = {"light": ("w1", 11.9), "heavy": ("w2", 119.0)}
    assert clock.slow() is None  # both under 3 times their expected time
    client.executing = {"light": ("w1", 13.0), "heavy": ("w2", 200.0)}
    assert clock.slow() == "task heavy has run 3.3 min, 5 times its expected 40 s"  # worst
    client.executing = {"light": ("w1", 4.5)}
    clock.done_seconds = 1.0  # expected 0.5 s: 9 times, but under slow_seconds
    assert clock.slow() is None
    progress = Progress(10, bar=False)
    progress.slow("task heavy has run 3.3 min, 5 times its expected 40 s")
    assert progress.line().endswith("0 failed tasks; task heavy has run 3.3 min, 5 times its "
                                    "expected 40 s")
    progress.close()


@pytest.mark.parametrize("table, message", [
    ("[run]\ntask_timeout = 0", "run.task_timeout must be a positive number of seconds"),
    ("[run]\ntask_timeout = \"1h\"", "run.task_timeout must be a number"),
    ("[run]\ntask_timout = 5", "unknown key"),
])
def test_the_spec_key_is_checked(tmp_path, monkeypatch, table, message):
    (tmp_path / "hangs_for_pcskm.py").write_text(HANGS)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=message):
        parse_spec(spec_text(table))


def test_the_spec_key_changes_no_hash(tmp_path, monkeypatch):
    (tmp_path / "hangs_for_pcskm.py").write_text(HANGS)
    monkeypatch.syspath_prepend(str(tmp_path))
    plain, limited = parse_spec(spec_text()), parse_spec(spec_text("[run]\ntask_timeout = 9.5"))
    assert (plain.task_timeout, limited.task_timeout) == (None, 9.5)
    assert plain.hash() == limited.hash()


# In the slow suite: two runs of pcskm, one past a time limit twice: about 70 s;
# tests/test_overdue.py covers the split without a cluster.
@pytest.mark.slow
@pytest.mark.parametrize("where", ["option", "spec"])
def test_a_hanging_fit_ends_the_run_naming_it_and_every_other_cell_is_kept(tmp_path, where):
    """Fails without a time limit: the run would wait an hour for the hung fits (the
    subprocess' timeout); the limit leaves room for a fresh worker's first task on a loaded
    machine (a 4 s limit ended one at load average 20 on 2 cores). Each task of iris holds
    both algorithms: past the limit it runs again one algorithm at a time, so FAST's cells of
    iris are kept, equal to those of a run of FAST alone."""
    from cubes import pcskm, results_data

    limit = 15
    (tmp_path / "hangs_for_pcskm.py").write_text(HANGS)
    spec = tmp_path / "hangs.toml"
    spec.write_text(spec_text(f"[run]\ntask_timeout = {limit}" if where == "spec" else ""))
    store = tmp_path / "hangs.zarr"
    env = {"PYTHONPATH": f"{tmp_path}:" + _pythonpath()}
    run = pcskm("run", spec, "--store", store, "--preload", tmp_path / "hangs_for_pcskm.py",
                "--workers", "2", "--no-progress",
                *(["--task-timeout", limit] if where == "option" else []),
                cwd=tmp_path, env=env, timeout=240)
    assert run.returncode == 1, run.stderr
    first = re.findall(r"pcskm: task (\S+) ran (\d+) s, past the time limit of "
                       rf"{limit} s per task .*; its 2 settings run again one at a time",
                       run.stderr)
    hung = re.findall(r"pcskm: task (\S+) \(algorithm HANG, init dkm\+\+\) ran (\d+) s, past "
                      rf"the time limit of {limit} s per task", run.stderr)
    assert len(first) == len(hung) == 2, run.stderr  # iris's two chunks, each split once
    assert max(int(seconds) for _, seconds in first + hung) <= limit + 5  # within seconds
    assert {key for key, _ in hung} == {f"{key}-HANG-dkm++" for key, _ in first}
    assert "2 tasks failed (first: pcskm-iris-random-" in run.stderr
    cube = {name: xr.open_zarr(store, group=name) for name in ("iris", "brodinova-5-5")}
    assert cube["brodinova-5-5"]["done"].all()  # every cell of the other data set kept
    assert cube["iris"]["done"].sel(algorithm="FAST").all()
    assert not cube["iris"]["done"].sel(algorithm="HANG").any()

    alone = tmp_path / "fast.toml"
    alone.write_text(spec_text(algorithms=("FAST",)))
    reference = tmp_path / "fast.zarr"
    run = pcskm("run", alone, "--store", reference, "--preload",
                tmp_path / "hangs_for_pcskm.py", "--workers", "1", "--no-progress",
                cwd=tmp_path, env=env, timeout=240)
    assert run.returncode == 0, run.stderr
    kept = results_data(cube["iris"]).sel(algorithm=["FAST"])
    expected = results_data(xr.open_zarr(reference, group="iris"))
    for name in expected.data_vars:
        assert kept[name].equals(expected[name]), name


def _pythonpath():
    import os

    return os.environ.get("PYTHONPATH", "")

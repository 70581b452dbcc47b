"""Batch jobs end (issue 67): workers retire before the jobs' wall time, tasks are cut to a
share of it, a chunk that cannot fit is refused before anything is submitted, and a task
whose workers keep dying is named in one line (:mod:`pcskm.runner.wall_time`,
:func:`pcskm.runner.clusters.worker_lifetime`)."""

import textwrap
import time
from collections import Counter
from pathlib import Path

import dask
import pytest

from pcskm.experiments.spec import parse_spec
from pcskm.runner.clusters import _jobqueue_options, wall_seconds, worker_lifetime
from pcskm.runner.progress import Progress
from pcskm.runner.store import CubeView
from pcskm.runner.tasks import plan
from pcskm.runner.wall_time import (
    SECONDS_PER_UNIT,
    TASK_SHARE,
    UNCALIBRATED_SLACK,
    TaskCannotFit,
    job_wall_seconds,
    sized_plan,
)

SPEC = parse_spec(textwrap.dedent("""
    name = "walls"
    datasets = ["iris", "brodinova-5-5"]
    algorithms = ["LKM", "PCKM"]
    inits = ["dkm++"]
    kinds = ["random", "must-link"]
    percentages = [1, 5, 10]
    n_runs = 4
    n_folds = 3
    """))


@pytest.mark.parametrize("text, seconds", [
    ("00:01:00", 60), ("04:00:00", 14400), ("1:30:00", 5400), ("2-00:00:00", 172800),
    ("45:30", 2730), ("90", 5400), (None, None), ("", None),
])
def test_wall_times_are_read_as_the_batch_systems_write_them(text, seconds):
    assert wall_seconds(text) == seconds


def test_a_malformed_wall_time_is_named():
    with pytest.raises(ValueError, match="walltime 'an hour'"):
        wall_seconds("an hour")


@pytest.mark.parametrize("wall", [60, 600, 3600, 14400, 86400])
def test_a_worker_retires_within_the_wall_time_less_the_margin(wall):
    lifetime, stagger = worker_lifetime(wall)
    margin = min(max(0.05 * wall, 10), 300)  # docs/guide/hpc.md, Wall time
    assert lifetime + stagger == pytest.approx(wall - margin)  # the latest it retires
    assert 0 < stagger <= 240 and lifetime - stagger > 0.5 * wall  # most of the job is used
    assert worker_lifetime(3600) == (3240, 180)  # dask-jobqueue's 55m +- 4m, a little earlier


def test_a_wall_time_too_short_to_work_in_is_refused():
    with pytest.raises(ValueError, match="walltime of 15 s: too short"):
        worker_lifetime(15)


def jobqueue_config(**extra):
    return {"jobqueue": {"slurm": {"cores": 1, "memory": "1GB", "walltime": "01:00:00",
                                   **extra}}}


def test_the_workers_get_a_lifetime_from_the_wall_time():
    with dask.config.set(jobqueue_config(**{"worker-extra-args": ["--resources", "x=1"]})):
        options = _jobqueue_options("slurm")
    assert options["worker_extra_args"] == ["--resources", "x=1", "--lifetime", "3240s",
                                            "--lifetime-stagger", "180s"]


def test_a_lifetime_the_user_set_is_kept():
    with dask.config.set(jobqueue_config(**{"worker-extra-args": ["--lifetime", "50m"]})):
        assert "worker_extra_args" not in _jobqueue_options("slurm")  # dask-jobqueue's own
    with dask.config.set(jobqueue_config(walltime=None)):
        assert "worker_extra_args" not in _jobqueue_options("slurm")  # no wall time


def test_the_wall_time_is_that_of_the_cluster_asked_for():
    with dask.config.set(jobqueue_config(walltime="00:10:00")):
        assert job_wall_seconds({"cluster": "slurm"}) == 600
        assert job_wall_seconds({"cluster": None, "workers": 2}) is None
        assert job_wall_seconds(None) is None


def chunks(tasks):
    return Counter((task.dataset, block.kind, block.percent, block.runs)
                   for task in tasks for block in task.blocks)


def units_seconds(task, view):
    """A task's estimate without a calibration: fits times points, at 0.6 us a unit."""
    n_samples = view.layout.groups[task.dataset].attrs["n_samples"]
    return task.n_fits * n_samples * SECONDS_PER_UNIT


def test_tasks_are_cut_to_the_share_of_the_wall_time():
    view = CubeView.planned(Path("never-created.zarr"), SPEC)
    loose = plan(SPEC, view, min_work=10**12)  # one task per group of settings and data set
    longest = max(units_seconds(task, view) for task in loose.tasks)
    chunk = max(units_seconds(task, view) for task in plan(SPEC, view, min_work=1).tasks)
    wall = 1.5 * longest / TASK_SHARE / 2  # the loose tasks do not fit its share
    assert chunk < TASK_SHARE * wall < longest
    sizing = sized_plan(SPEC, view, wall, shortest_life=wall, min_work=10**12)
    assert chunks(sizing.plan.tasks) == chunks(loose.tasks)  # every chunk, once each
    assert len(sizing.plan.tasks) > len(loose.tasks)
    seconds = [units_seconds(task, view) for task in sizing.plan.tasks]
    assert sizing.seconds == pytest.approx(seconds)
    assert max(seconds) <= TASK_SHARE * wall
    assert "25 % of it" in sizing.largest() and "by its work units" in sizing.largest()


def test_a_chunk_over_the_share_is_named_as_a_chunk_never_cut():
    """A chunk estimated over the share of the wall time (but within a worker's life) is run
    whole; the dry run's line says so instead of claiming the tasks were cut to the share."""
    view = CubeView.planned(Path("never-created.zarr"), SPEC)
    heaviest = max(units_seconds(task, view) for task in plan(SPEC, view, min_work=1).tasks)
    wall = 2 * heaviest  # the chunk is 50 % of it
    sizing = sized_plan(SPEC, view, wall, shortest_life=wall, min_work=1)
    assert max(sizing.seconds) == pytest.approx(heaviest)
    assert "50 % of the jobs' wall time" in sizing.largest()
    assert "one chunk, which is never cut" in sizing.largest()


def test_a_chunk_longer_than_a_worker_lives_is_refused_naming_it():
    view = CubeView.planned(Path("never-created.zarr"), SPEC)
    by_chunk = plan(SPEC, view, min_work=1).tasks
    heaviest = max(by_chunk, key=lambda task: units_seconds(task, view))
    seconds = units_seconds(heaviest, view)
    slack = UNCALIBRATED_SLACK  # no calibration: by work units, refused only well over it
    with pytest.raises(TaskCannotFit) as refused:
        sized_plan(SPEC, view, 10 * seconds, shortest_life=0.9 * seconds / slack)
    message = str(refused.value)
    assert f"the chunk dataset={heaviest.dataset}, kind=" in message
    assert f"estimated at {seconds:.0f} s on one core" in message
    assert f"the wall time {10 * seconds:.0f} s" in message and "nothing was submitted" in message
    sized_plan(SPEC, view, 10 * seconds, shortest_life=1.1 * seconds / slack)  # not refused


def test_the_progress_line_counts_lost_workers_and_restarted_tasks():
    from test_task_timeout import FakeScheduler

    from pcskm.runner.task_clock import TaskClock

    client = FakeScheduler()
    clock = TaskClock(client, {"a": 1.0, "b": 1.0, "c": 1.0}, every=0.0)
    client.executing, client.idle = {"a": ("w1", 5.0), "b": ("w2", 5.0)}, {"w3"}
    clock.slow()
    client.executing, client.idle = {"a": ("w3", 0.5)}, set()  # w1 and w2 gone; b finished
    clock.finished("b", 5.0)
    clock.slow()
    assert (clock.n_lost, clock.n_restarted) == (2, 1)  # a lost its worker, b had finished
    progress = Progress(10, bar=False)
    progress.workers(1)
    progress.lost(clock.n_lost, clock.n_restarted)
    assert "; 1 workers (2 lost, 1 tasks restarted), 0 failed tasks" in progress.line()
    progress.close()


@pytest.mark.parametrize("wall, words", [
    (60.0, "the batch jobs' wall time, 60 s, most likely ended them first. Give the jobs a "
           "longer walltime"),
    (None, "a worker crash or its memory limit"),
])
def test_a_task_whose_workers_keep_dying_is_named_in_one_line(wall, words):
    from distributed import KilledWorker

    from pcskm.runner.execute import _lost_message

    error = KilledWorker("pcskm-iris-random-10-0-abc", "tcp://127.0.0.1:1", allowed_failures=3)
    message = _lost_message(error.allowed_failures + 1, 80.4, wall)
    assert message.startswith("the worker died while running it (4 attempts; expected to "
                              "take about 80 s)")
    assert words in message and "\n" not in message and "KilledWorker" not in message


def test_a_task_that_keeps_losing_its_worker_is_given_up_once():
    from test_task_timeout import FakeScheduler

    from pcskm.runner.task_clock import TaskClock

    client = FakeScheduler()
    clock = TaskClock(client, {"a": 1.0, "b": 1.0}, every=0.0, max_restarts=3)
    for n in range(3):  # a retires with each worker; b stays on w0 throughout
        client.executing = {"a": (f"w{n + 1}", 40.0), "b": ("w0", 1.0)}
        assert clock.given_up() == []
    client.executing = {"b": ("w0", 1.0)}
    assert clock.given_up() == [("a", 3)]  # w1, w2 and w3 gone while it ran on them
    clock.finished("b", 1.0)
    client.executing, client.idle = {}, {"w0"}
    assert clock.given_up() == []  # a given up once only; b finished on w0, still here
    assert (clock.n_lost, clock.n_restarted) == (3, 3)


def test_a_task_lost_early_in_each_run_is_not_given_up_but_one_lost_late_is():
    """With batch jobs, a loss counts towards giving up only after the task ran at least
    ``long_loss_seconds`` (half a worker's life): a task that fits but started late in its
    worker's life three times runs again; one cut off after long runs three times is given
    up."""
    from test_task_timeout import FakeScheduler

    from pcskm.runner.task_clock import TaskClock

    client = FakeScheduler()
    clock = TaskClock(client, {"short": 1.0, "long": 1.0}, every=0.0, max_restarts=3,
                      long_loss_seconds=20.0)
    for n in range(3):  # each worker retires: short had run 5 s on it, long 25 s
        client.executing = {"short": (f"s{n}", 5.0), "long": (f"l{n}", 25.0)}
        assert clock.given_up() == []
    client.executing = {}
    assert clock.given_up() == [("long", 3)]
    for n in range(3, 6):  # short lost three more times, early each time
        client.executing = {"short": (f"s{n}", 19.9)}
        clock.given_up()
    client.executing = {}
    assert clock.given_up() == []
    assert clock.n_restarted == 9


WAITS = '''
import os
import time

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin


class Waits(ClusterMixin, BaseEstimator):
    """Waits SECONDS in each fit, as a fit waiting for a device or a lock would (a negative
    SECONDS: exits its process)."""

    SECONDS = 0.0

    def __init__(self, n_clusters=2):
        self.n_clusters = n_clusters

    def fit(self, X):
        if self.SECONDS < 0:
            os._exit(3)
        time.sleep(self.SECONDS)
        self.labels_ = np.arange(len(X)) % self.n_clusters
        return self
'''


def waiting_spec(tmp_path, monkeypatch, seconds, variants=("WAIT",)):
    """A spec of LKM and user estimators (``variants``) waiting ``seconds`` per fit: one chunk
    per data set, kind and percentage holds 2 runs x 2 folds = 4 cells of each."""
    # a module of its own per wait
    module = "waits_for_pcskm_" + f"{seconds:g}".replace(".", "_").replace("-", "minus_")
    (tmp_path / f"{module}.py").write_text(WAITS.replace("SECONDS = 0.0", f"SECONDS = {seconds}"))
    monkeypatch.syspath_prepend(str(tmp_path))
    return parse_spec(textwrap.dedent(f"""
        name = "waits"
        datasets = ["iris"]
        algorithms = {["LKM", *variants]}
        inits = ["dkm++"]
        kinds = ["random"]
        percentages = [1, 5]
        n_runs = 2
        n_folds = 2
        """) + "".join(f"""
[variants.{name}]
estimator = "{module}:Waits"
constraints = "ignore"
""" for name in variants))


def test_a_user_estimator_is_priced_by_one_timed_cell(tmp_path, monkeypatch, caplog):
    """Work units price a waiting fit as a millisecond one; one timed cell prices it at its
    wall time: each chunk's 4 cells of 0.5 s are about 2 s."""
    spec = waiting_spec(tmp_path, monkeypatch, 0.5)
    view = CubeView.planned(tmp_path / "never-created.zarr", spec)
    by_units = sized_plan(spec, view, 600.0, time_user_cells=False, min_work=1)
    assert max(by_units.seconds) < 0.1
    with caplog.at_level("INFO", logger="pcskm"):
        sizing = sized_plan(spec, view, 600.0, min_work=1)
        sized_plan(spec, view, 600.0, min_work=1)  # planned again: the timing is kept
    assert caplog.text.count("timing one cell of WAIT (dkm++) on iris") == 1
    assert len(sizing.plan.tasks) == 2  # a task per percentage
    for task, seconds in zip(sizing.plan.tasks, sizing.seconds, strict=True):
        lkm = task.settings.index(next(s for s in task.settings if s.algorithm == "LKM"))
        assert task.cells_of(1 - lkm) == 4
        assert 4 * 0.5 <= seconds < 4 * 0.5 + 2  # the timed cell's wait, four times
    assert "and a timed cell of each user estimator" in sizing.largest()


def test_a_user_cell_that_shows_its_chunk_cannot_fit_is_refused_before_it_ends(
        tmp_path, monkeypatch):
    """With 4 cells in a chunk and a worker's life of 8 s, a cell still waiting after 2 s
    refuses the run then, not after its 30 s."""
    spec = waiting_spec(tmp_path, monkeypatch, 30)
    view = CubeView.planned(tmp_path / "never-created.zarr", spec)
    began = time.monotonic()
    with pytest.raises(TaskCannotFit) as refused:
        sized_plan(spec, view, 60.0, shortest_life=8.0, min_work=1)
    assert time.monotonic() - began < 10
    message = str(refused.value)
    assert message.startswith("one cell of WAIT (dkm++) in the chunk dataset=iris, kind=random, "
                              "percent=")
    assert "was still computing after 2 s: the chunk's 4 cells of WAIT (dkm++)" in message
    assert "the wall time 60 s" in message and "nothing was submitted" in message


def test_a_timed_cell_that_ends_its_process_is_logged_and_priced_by_units(
        tmp_path, monkeypatch, caplog):
    spec = waiting_spec(tmp_path, monkeypatch, -1)
    view = CubeView.planned(tmp_path / "never-created.zarr", spec)
    by_units = sized_plan(spec, view, 600.0, time_user_cells=False, min_work=1)
    with caplog.at_level("WARNING", logger="pcskm"):
        sizing = sized_plan(spec, view, 600.0, min_work=1)
    assert sizing.seconds == pytest.approx(by_units.seconds)
    assert "the timed cell of WAIT (dkm++) on iris did not finish (the child process ended " \
           "with exit code 3" in caplog.text


def test_a_chunk_whose_timed_cells_add_up_past_a_workers_life_is_refused(tmp_path, monkeypatch):
    """Two user variants of 4 cells of 0.6 s each: each cell is within its share of a 3-s
    life (0.75 s), but the chunk's 8 cells, about 4.8 s, are not. (A wait of its own: the
    timings of a process are kept, :mod:`pcskm.runner.user_cells`.)"""
    spec = waiting_spec(tmp_path, monkeypatch, 0.6, variants=("WAIT", "WAIT2"))
    view = CubeView.planned(tmp_path / "never-created.zarr", spec)
    with pytest.raises(TaskCannotFit) as refused:
        sized_plan(spec, view, 60.0, shortest_life=3.0, min_work=1)
    message = str(refused.value)
    assert message.startswith("the chunk dataset=iris, kind=random, percent=")
    seconds = float(message.split("is estimated at ")[1].split(" s")[0])
    assert 4 <= seconds < 8
    assert "and one timed cell of each user estimator" in message
    sized_plan(spec, view, 60.0, shortest_life=10.0, min_work=1)  # not refused

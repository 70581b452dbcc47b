"""What ``pcskm run`` shows while it computes (issue 13, item 3): cells counted as their task
finishes, not when the client marks them done; the cells marked done shown apart; a bar whose clock
moves while no task ends; without a bar, a log line every minute with the rate and the time
left, weighted by the tasks' estimated work."""

import logging
import re
import time
from types import SimpleNamespace

import pytest

from pcskm.experiments.spec import parse_spec
from pcskm.runner import calibrate, execute
from pcskm.runner.progress import Progress
from pcskm.runner.store import CubeView
from pcskm.runner.tasks import plan

SMALL = parse_spec("""
name = "small"
seed = 0
datasets = ["iris"]
algorithms = ["LKM", "PCKM"]
inits = ["dkm++"]
kinds = ["random", "must-link"]
percentages = [1, 5, 10]
n_runs = 2
n_folds = 10
""")
TASK_SECONDS, WRITE_SECONDS = 0.3, 0.6


def bar_counts(text):
    """Every ``done/total [`` count the tqdm bar has drawn, in order."""
    return [int(n) for n in re.findall(r"(\d+)/\d+ \[", text)]


def slow_task(task, target, place):
    """A task's worker side (computed and written) taking TASK_SECONDS; its receipt."""
    time.sleep(TASK_SECONDS)
    return SimpleNamespace(dataset=task.dataset, regions=(), n_cells=task.n_cells,
                           seconds=TASK_SECONDS, write_seconds=0.0, n_failed_fits=1)


def without_store(monkeypatch, tmp_path, marks):
    """Tasks that take TASK_SECONDS and write nothing, a store of nothing marked done, and
    the client's marking done by ``marks``; returns the cube to give ``run_tasks``."""
    monkeypatch.setattr(execute, "compute_and_write", slow_task)
    monkeypatch.setattr(execute, "task_target", lambda cube, task: None)
    monkeypatch.setattr(execute, "DoneMarks", marks)
    # no store, so no run holds one: the workers are given no place to write into
    monkeypatch.setattr(execute, "where", lambda path: SimpleNamespace(for_workers=lambda: None))
    monkeypatch.setattr(execute, "check_workers_reach", lambda client, place: None)
    return SimpleNamespace(done_cells=lambda: 0, path=tmp_path)


IN_PROCESS_CLIENT = True  # conftest's client: one worker thread in this process


def test_cells_count_when_their_task_ends_not_when_they_are_written(client, tmp_path,
                                                                    monkeypatch, capsys):
    """A slow client that marks nothing done before the run ends: when it takes a task's
    receipt, the bar already counts that task's cells, and shows that none is written
    yet."""
    tasks = plan(SMALL, CubeView.planned(tmp_path / "never.zarr", SMALL)).tasks
    assert len(tasks) >= 4
    handed, seen = [], []  # cells of each receipt taken; what the bar showed at each

    class HoldingMarks:
        def __init__(self, cube):
            pass

        def take(self, receipt):
            handed.append(receipt.n_cells)
            seen.append(capsys.readouterr().err)
            time.sleep(WRITE_SECONDS)

        def write(self):
            pass

    nothing_written = without_store(monkeypatch, tmp_path, HoldingMarks)
    summary = execute.run_tasks(client, nothing_written, tasks, progress=True)
    assert summary.n_written == len(tasks)
    shown = 0
    for i, text in enumerate(seen):
        shown = max([shown, *bar_counts(text)])
        assert shown == sum(handed[:i + 1]), (i, text)  # this task's cells included
        assert "written=0" in text or i == 0


def test_a_ctrl_c_as_the_bar_counts_a_task_still_writes_that_task(client, tmp_path,
                                                                 monkeypatch):
    """SIGINT delivered at the moment the bar counts a finished task's cells: the run stops
    (interrupted, the other tasks cancelled) and that task's receipt has been taken and
    marked done, so what the bar showed as finished is what the store keeps."""
    import signal

    tasks = plan(SMALL, CubeView.planned(tmp_path / "never.zarr", SMALL)).tasks
    handed, marked = [], []

    class HoldingMarks:
        def __init__(self, cube):
            pass

        def take(self, receipt):
            handed.append(receipt.n_cells)

        def write(self):
            marked.extend(handed)

    class InterruptedProgress(Progress):
        def finished(self, n_cells, **how):
            super().finished(n_cells, **how)
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(execute, "Progress", InterruptedProgress)
    nothing_written = without_store(monkeypatch, tmp_path, HoldingMarks)
    # Python's own Ctrl-C handler, whatever this process inherited: pytest started in the
    # background of a non-interactive shell ignores SIGINT
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        summary = execute.run_tasks(client, nothing_written, tasks, progress=False)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert summary.interrupted
    assert handed == marked == [tasks[0].n_cells] and summary.n_cells == tasks[0].n_cells


def test_the_last_count_of_cells_written_includes_the_final_marks(client, tmp_path,
                                                                   monkeypatch):
    """A client that marks done only when the run ends (a run shorter than the flush
    interval): the display's last count of cells written is every cell of the run, not the
    count before that final marking; the summary adds up the failed fits of the receipts."""
    tasks = plan(SMALL, CubeView.planned(tmp_path / "never.zarr", SMALL)).tasks
    held, marked, last = [], [0], []

    class FinalMarks:
        def __init__(self, cube):
            pass

        def take(self, receipt):
            held.append(receipt.n_cells)

        def write(self):
            marked[0] += sum(held)
            held.clear()

    class LastCount(Progress):
        def close(self):
            last.append(self.n_written)
            super().close()

    monkeypatch.setattr(execute, "Progress", LastCount)
    cube = without_store(monkeypatch, tmp_path, FinalMarks)
    cube.done_cells = lambda: marked[0]
    summary = execute.run_tasks(client, cube, tasks, progress=False)
    assert last == [sum(task.n_cells for task in tasks)] == [marked[0]]
    assert summary.n_failed_fits == len(tasks)  # one per receipt (slow_task)
    assert f"fits, {len(tasks)} of them failed)" in summary.describe()


def test_the_bar_clock_moves_while_no_task_ends(capsys):
    with Progress(100, bar=True, redraw_every=0.2):
        time.sleep(2.5)
    drawn = capsys.readouterr().err
    assert bar_counts(drawn) and set(bar_counts(drawn)) == {0}
    assert "[00:02, left=?" in drawn  # redrawn after two seconds without any update


def test_without_a_bar_a_line_every_interval_with_rate_and_time_left(caplog):
    logger = logging.getLogger("pcskm")
    propagate = logger.propagate
    logger.addHandler(caplog.handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False  # caplog's handler is on the root logger too
    try:
        with Progress(1000, bar=False, log_every=0.5, redraw_every=0.05) as progress:
            progress.workers(2)
            progress.finished(250)
            progress.written(100)
            time.sleep(1.3)
    finally:
        logger.removeHandler(caplog.handler)
        logger.propagate = propagate
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("cells:")]
    assert len(lines) == 2  # at 0.5 s and 1.0 s
    for line in lines:
        assert line.startswith("cells: 250 of 1,000 finished (25 %), 100 written; ")
        rate = float(re.search(r"([\d.]+) cells/s", line).group(1))
        assert 250 / 1.3 <= rate <= 250 / 0.5
        left = int(re.search(r"about (\d+) s left", line).group(1))
        assert left == pytest.approx(750 / rate, abs=1)  # the rest at the same rate
        assert line.endswith("; 2 workers, 0 failed tasks")


def test_the_time_left_weighs_the_tasks_by_their_work():
    """Half the cells but nine tenths of the work done in 90 s: 10 s are left, not the 90 s
    that counting cells gives."""
    with Progress(100, work=10, bar=False) as progress:
        progress.finished(50, work=9)
        assert progress.seconds_left(90.0) == pytest.approx(10.0)
        progress._start = time.perf_counter() - 90.0
        assert "about 10 s left" in progress.line()
    unweighted = Progress(100, bar=False)
    unweighted.finished(50)
    unweighted.close()
    assert unweighted.seconds_left(90.0) == pytest.approx(90.0)


def test_the_bar_shows_the_weighted_time_left(capsys):
    with Progress(100, work=10, bar=True, redraw_every=0.1) as progress:
        progress._start = time.perf_counter() - 90.0
        progress.finished(50, work=9)
        time.sleep(0.5)
    drawn = capsys.readouterr().err
    assert re.search(r"50/100 \[00:0\d, left=1\d s, written=0", drawn), drawn


def test_run_tasks_weighs_each_finished_task_by_its_weight(client, tmp_path, monkeypatch):
    tasks = plan(SMALL, CubeView.planned(tmp_path / "never.zarr", SMALL)).tasks
    weights = [2.0 ** i for i in range(len(tasks))]
    seen = []

    class Recording(Progress):
        def finished(self, n_cells, **how):
            seen.append(how["work"])
            super().finished(n_cells, **how)

        def close(self):
            seen.append((self.work, self.work_done))
            super().close()

    class Marks:
        def __init__(self, cube):
            pass

        def take(self, receipt):
            pass

        def write(self):
            pass

    monkeypatch.setattr(execute, "Progress", Recording)
    cube = without_store(monkeypatch, tmp_path, Marks)
    execute.run_tasks(client, cube, tasks, progress=False, weights=weights)
    assert sorted(seen[:-1]) == weights  # each task once, with its own weight
    assert seen[-1] == (sum(weights), sum(weights))


def test_task_weights_without_a_calibration_are_the_work_of_the_samples(tmp_path):
    """No kept calibration: a task weighs its samples (runs x folds) times (points +
    constraints) x clusters x features x s values, the constraints the mean over the
    percentages of t (t - 1) / 2 pairs of t = n (K - 1) / K training points; worked by
    hand for brodinova-5-5 (120 points, 10 features, 3 clusters) and iris (150, 4, 3)."""
    spec = parse_spec("""
name = "weights"
seed = 0
datasets = ["iris", "brodinova-5-5"]
algorithms = ["LKM", "PCSKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [1, 5, 10]
sparsity_max_values = 3
n_runs = 2
n_folds = 10
""")
    view = CubeView.planned(tmp_path / "never.zarr", spec)
    tasks = plan(spec, view).tasks
    weights = calibrate.task_weights(tasks, view, spec)

    def by_hand(n, p, k, n_sparsity):
        t = n * 9 / 10
        constraints = t * (t - 1) / 2 * (1 + 5 + 10) / 3 / 100
        return 2 * 10 * (n + constraints) * k * p * (1 + n_sparsity)  # LKM counts one s

    s_values = {task.dataset: len(task.settings[1].sparsities) for task in tasks}
    assert s_values == {"iris": 1, "brodinova-5-5": 3}  # s up to sqrt(p), 3 values at most
    expected = {"iris": by_hand(150, 4, 3, 1), "brodinova-5-5": by_hand(120, 10, 3, 3)}
    assert weights == pytest.approx([expected[task.dataset] for task in tasks])


def test_task_weights_with_a_kept_calibration_are_the_dry_runs_estimate(tmp_path):
    """After a dry run kept its probes, a run weighs each task by the dry run's estimate of
    it, with no probe timed again."""
    view = CubeView.planned(tmp_path / "never.zarr", SMALL)
    tasks = plan(SMALL, view).tasks
    kept = calibrate.Kept(folder=tmp_path / "kept")
    estimated = calibrate.estimate(tasks, view, SMALL, budget_seconds=600.0, kept=kept)
    kept.save()
    assert estimated.n_probes == estimated.n_groups and estimated.extrapolated_seconds == 0
    again = calibrate.Kept(folder=tmp_path / "kept")
    assert calibrate.task_weights(tasks, view, SMALL, again) == pytest.approx(
        estimated.task_seconds)

"""The dry run's model of a run's time (issue 33, point 7; docs/guide/paper-study.md, Small
specs): its parts against hand computation, not timed."""

import dataclasses
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pcskm.experiments.spec import load_spec
from pcskm.runner import calibrate
from pcskm.runner.store import CubeView, sizes
from pcskm.runner.tasks import plan


def test_run_time_by_hand():
    """Start 2 + 1 + 3 + 4 = 10 s; the workers compute 20 s and write 5 s, each their
    tasks': 35 s."""
    timed = calibrate.RunTime(process=2.0, kernels=1.0, cluster=3.0, worker=4.0,
                              compute=20.0, writing=5.0)
    assert timed.fixed == 10.0
    assert timed.seconds == 35.0


def test_writing_counts_each_task_and_each_mib():
    """The smoke plan's writing: 0.0247 s per task plus the MiB of the chunks it fills, and
    the constants reproduce the workers' writing measured by bench_writer.py on the whole
    paper plan with a paper store's values: 184.3 CPU-seconds for 1,118 tasks and 36,236 MiB
    (docs/results/paper/bench_writer_whole_plan_values.txt)."""
    spec = load_spec("smoke")
    view = CubeView.planned(Path("never-created.zarr"), spec)
    tasks = plan(spec, view).tasks
    mib = sizes.written_bytes(view, tasks) / 2**20
    assert sizes.write_seconds(view, tasks) == pytest.approx(
        0.0247 * len(tasks) + sizes.WRITE_SECONDS_PER_MIB * mib)
    assert 1118 * sizes.WRITE_SECONDS_PER_TASK + 36236 * sizes.WRITE_SECONDS_PER_MIB == (
        pytest.approx(184.3, rel=0.01))


def test_process_age_counts_from_the_process_start():
    """The start time of this process, against the clock: the age grows as time passes and
    is at least the time since a moment taken now; a fresh process is no older than the
    time since its parent started it (psutil's start time, in whole seconds of boot time,
    made it up to 1 s older)."""
    before = calibrate.process_age_seconds()
    mark = time.time()
    time.sleep(0.05)
    after = calibrate.process_age_seconds()
    assert after >= before + 0.05 - 0.02
    assert after >= time.time() - mark - 0.02
    for _ in range(3):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", "from pcskm.runner import calibrate; "
                               "print(calibrate.process_age_seconds())"],
                              capture_output=True, text=True, check=True)
        assert 0.0 < float(done.stdout) <= time.perf_counter() - started + 0.02


def test_a_short_budget_times_the_group_of_most_work_and_says_what_it_priced(monkeypatch,
                                                                             tmp_path):
    """Two data sets, iris (150 points, 4 features) and brodinova-5-45 (120 points, 50
    features): the latter's group has the most work (points + constraints) x clusters x
    features x s entries, computed here by hand from the protocol's constraint count, so a
    budget of one probe times it; the other group is priced from it per unit of work and is
    reported as the estimate's extrapolated part."""
    from cubes import tiny_spec

    from pcskm.experiments.spec import parse_spec

    text = (tiny_spec("two-sets").replace('["iris"]', '["iris", "brodinova-5-45"]')
            .replace('["LKM"]', '["SKM"]'))
    spec = parse_spec(text)
    view = CubeView.planned(tmp_path / "never.zarr", spec)
    tasks = plan(spec, view).tasks
    probed = []

    def probe(settings, kind, percents, run, warm):
        probed.append(settings[0].dataset)
        return calibrate._Cost(per_sample=2.0, per_task=0.0)

    clock = iter(range(100))
    monkeypatch.setattr(calibrate, "_probe", probe)
    monkeypatch.setattr(calibrate.time, "perf_counter", lambda: next(clock))
    found = calibrate.estimate(tasks, view, spec, budget_seconds=1.5)  # one probe
    work = {}
    for name in spec.datasets:
        group = view.layout.groups[name]
        n, p, k = (group.attrs[key] for key in ("n_samples", "n_features", "n_clusters"))
        t = n * 9 / 10  # training points of a fold
        m = t * (t - 1) / 2 * 1 / 100  # constraints at 1 % (docs/method/protocol.md §4)
        work[name] = (n + m) * k * p * len(group.sparsity[:-1])
    assert probed == [max(work, key=work.get)] == ["brodinova-5-45"]
    assert (found.n_probes, found.n_groups) == (1, 2)
    other = [s for s, task in zip(found.task_seconds, tasks, strict=True)
             if task.dataset == "iris"]
    assert found.extrapolated_seconds == pytest.approx(sum(other))
    assert 0 < found.extrapolated_seconds < found.core_seconds


def test_the_skipped_cells_of_a_resumed_task_are_not_counted(monkeypatch, tmp_path):
    """A task whose second setting skips every run of its first block (done cells of a
    partly done chunk, ``Task.skip``) costs, at 2 s per sample and setting group, 2 s x the
    samples its settings compute over their number: counted by hand from the blocks."""
    from dataclasses import replace

    from cubes import tiny_spec

    from pcskm.experiments.spec import parse_spec

    spec = parse_spec(tiny_spec("resumed").replace('["LKM"]', '["LKM", "PCKM"]')
                      .replace("n_runs = 1", "n_runs = 2"))
    view = CubeView.planned(tmp_path / "never.zarr", spec)
    [task, *_] = [t for t in plan(spec, view).tasks if len(t.settings) == 2]
    first = task.blocks[0]
    skip = frozenset((1, 0, run) for run in first.runs)
    resumed = replace(task, skip=skip)
    monkeypatch.setattr(calibrate, "_probe", lambda *args, **kw: calibrate._Cost(2.0, 0.0))
    folds = len(task.fold_list)
    whole = sum(len(block.runs) for block in task.blocks) * folds
    assert calibrate.estimate([task], view, spec).core_seconds == pytest.approx(2.0 * whole)
    expected = 2.0 * (whole - len(first.runs) * folds / 2)
    assert calibrate.estimate([resumed], view, spec).core_seconds == pytest.approx(expected)


def _two_groups(tmp_path):
    """The tasks, view and spec of two data sets, iris and brodinova-5-45, with SKM: two task
    groups."""
    from cubes import tiny_spec

    from pcskm.experiments.spec import parse_spec

    text = (tiny_spec("two-sets").replace('["iris"]', '["iris", "brodinova-5-45"]')
            .replace('["LKM"]', '["SKM"]'))
    spec = parse_spec(text)
    view = CubeView.planned(tmp_path / "never.zarr", spec)
    return plan(spec, view).tasks, view, spec


def test_the_rounds_stop_once_the_estimate_is_precise(monkeypatch, tmp_path):
    """Probes of a constant cost: the standard error is 0 after MIN_ROUNDS rounds, so each
    group is timed MIN_ROUNDS times. Probes alternating 1 and 3 s per sample: the relative
    standard error stays above TARGET_ERROR (bound by hand below), so every one of the
    MAX_ROUNDS rounds is timed."""
    tasks, view, spec = _two_groups(tmp_path)
    calls = []

    def constant(settings, kind, percents, run, warm):
        calls.append(settings[0].dataset)
        return calibrate._Cost(per_sample=2.0, per_task=0.0)

    monkeypatch.setattr(calibrate, "_probe", constant)
    calibrate.estimate(tasks, view, spec)
    assert sorted(calls) == sorted(["iris", "brodinova-5-45"] * calibrate.MIN_ROUNDS)

    calls.clear()
    cost = iter([1.0, 1.0, 3.0, 3.0] * 100)  # per round, the two groups get the same cost

    def alternating(settings, kind, percents, run, warm):
        calls.append(settings[0].dataset)
        return calibrate._Cost(per_sample=next(cost), per_task=0.0)

    monkeypatch.setattr(calibrate, "_probe", alternating)
    calibrate.estimate(tasks, view, spec)
    # after k rounds (k even) each group's costs per sample are k/2 ones and k/2 threes: mean
    # 2, variance k / (k - 1), so the standard error of a group of weight w is w / sqrt(k - 1)
    # and that of the sum 2 (w1 + w2) is sqrt(w1^2 + w2^2) / sqrt(k - 1), at least
    # (w1 + w2) / sqrt(2 (k - 1)): relative error >= 1 / (2 sqrt(2 (k - 1))), above
    # 1 / (2 sqrt(2 MAX_ROUNDS)) (odd k: about the same)
    assert 1 / (2 * np.sqrt(2 * calibrate.MAX_ROUNDS)) > calibrate.TARGET_ERROR
    assert len(calls) == 2 * calibrate.MAX_ROUNDS


def _one_second_probes(monkeypatch):
    """Probes of a constant cost (2 s per sample) that take 1 s each of a clock advanced by
    the probe; returns the list of the data sets probed, in order."""
    clock = [0.0]
    calls = []

    def constant(settings, kind, percents, run, warm):
        calls.append(settings[0].dataset)
        clock[0] += 1.0
        return calibrate._Cost(per_sample=2.0, per_task=0.0)

    monkeypatch.setattr(calibrate, "_probe", constant)
    monkeypatch.setattr(calibrate.time, "perf_counter", lambda: clock[0])
    return calls


def test_the_rounds_stop_once_the_probes_took_a_share_of_the_run(monkeypatch, tmp_path):
    """Issue 65, item 8: probes of a constant cost that take 1 s each (a clock advanced by
    the probe): with the run's compute on its workers at 3 / RUN_SHARE s, the probes stop
    after the round that takes them past 3 s, the second (4 s), not at MIN_ROUNDS."""
    tasks, view, spec = _two_groups(tmp_path)
    calls = _one_second_probes(monkeypatch)
    whole = calibrate.estimate(tasks, view, spec, budget_seconds=1e9).core_seconds
    assert len(calls) == 2 * calibrate.MIN_ROUNDS  # 10 s: below the share of 1 worker
    calls.clear()
    workers = calibrate.RUN_SHARE * whole / 3.0
    found = calibrate.estimate(tasks, view, spec, budget_seconds=1e9, workers=workers)
    assert len(calls) == 2 * 2 and found.core_seconds == pytest.approx(whole)


def test_probes_stopped_by_the_run_share_are_reused_for_that_spec_alone(monkeypatch,
                                                                         tmp_path):
    """Rounds stopped by the run's share after 2 probes a group, fewer than MIN_ROUNDS:
    the next dry run of the same spec times nothing (it would stop there again); a dry run
    of another spec with the same groups times them until its own rule stops it; rounds
    cut short by the time budget are timed again."""
    tasks, view, spec = _two_groups(tmp_path)
    calls = _one_second_probes(monkeypatch)
    whole = calibrate.estimate(tasks, view, spec, budget_seconds=1e9).core_seconds
    workers = calibrate.RUN_SHARE * whole / 3.0
    kept = calibrate.Kept(folder=tmp_path / "kept")
    calls.clear()
    loads = []  # before_probes: the dry run loads the kernels there

    def estimate(spec, kept, budget_seconds=1e9):
        return calibrate.estimate(tasks, view, spec, budget_seconds=budget_seconds,
                                  workers=workers, kept=kept,
                                  before_probes=lambda: loads.append(len(calls)))

    estimate(spec, kept)
    assert len(calls) == 2 * 2 < 2 * calibrate.MIN_ROUNDS and loads == [0]
    again = estimate(spec, kept)
    assert len(calls) == 4 and again.n_kept == 2 and loads == [0]  # nothing timed or loaded

    other = dataclasses.replace(spec, seed=1)
    assert other.hash() != spec.hash()
    estimate(other, kept)
    assert len(calls) == 4 + 2 * 2 and loads == [0, 4]

    short = calibrate.Kept(folder=tmp_path / "short")
    estimate(spec, short, budget_seconds=0.5)
    assert len(calls) == 8 + 1  # the second group not timed: over the budget
    estimate(spec, short, budget_seconds=0.5)
    assert len(calls) == 9 + 1 and loads == [0, 4, 8, 9]  # timed and loaded again


def test_a_kept_calibration_is_reused_and_not_timed_again(monkeypatch, tmp_path):
    """A dry run's probes kept in a folder: the next estimate from the same folder times
    nothing and gives the same compute; ``fresh`` (--recalibrate) times every group again;
    another code version (a preload file's bytes changed) keeps its own file. The starts
    are kept by name."""
    tasks, view, spec = _two_groups(tmp_path)
    calls = []
    cost = iter(np.linspace(1.0, 2.0, 500))

    def probe(settings, kind, percents, run, warm):
        calls.append(settings[0].dataset)
        return calibrate._Cost(per_sample=float(next(cost)), per_task=0.0)

    monkeypatch.setattr(calibrate, "_probe", probe)
    folder = tmp_path / "kept"
    kept = calibrate.Kept(folder=folder)
    first = calibrate.estimate(tasks, view, spec, kept=kept)
    kept.add_start("worker", 3.5)
    kept.save()
    timed = len(calls)
    assert timed >= 2 * calibrate.MIN_ROUNDS and first.n_kept == 0

    again = calibrate.Kept(folder=folder)
    loads = []
    second = calibrate.estimate(tasks, view, spec, kept=again,
                                before_probes=lambda: loads.append(1))
    assert len(calls) == timed and not loads  # nothing timed, nothing loaded for it
    assert (second.n_kept, second.n_probes) == (2, 2)
    assert second.core_seconds == pytest.approx(first.core_seconds)
    assert again.start("worker") == 3.5 and again.start("cluster 2") is None

    calibrate.estimate(tasks, view, spec, kept=calibrate.Kept(folder=folder, fresh=True))
    assert len(calls) > timed

    preload = tmp_path / "estimator.py"
    preload.write_text("A = 1\n")
    one = calibrate.Kept(preload=[preload], folder=folder).path
    preload.write_text("A = 2\n")
    assert calibrate.Kept(preload=[preload], folder=folder).path != one != kept.path


def test_a_repeated_dry_run_loads_no_kernels_and_times_nothing(monkeypatch, tmp_path, capsys):
    """``pcskm run --dry-run`` twice on one machine and code: the first loads the kernels
    (its probes need them) and times the groups and the starts; the second, with every
    group's probes and the kernels' loading time kept, does neither and prints the same
    compute."""
    from pcskm.runner import cli, compiling

    loads, probes = [], []
    monkeypatch.setattr(calibrate, "kept_folder", lambda: tmp_path / "kept")
    monkeypatch.setattr(compiling, "compile_kernels", lambda tasks: loads.append(1) or 1.5)
    monkeypatch.setattr(calibrate, "_probe", lambda *args, **kwargs: probes.append(1)
                        or calibrate._Cost(per_sample=0.01, per_task=0.0))
    monkeypatch.setattr(calibrate, "worker_start_seconds", lambda tasks, preload: 4.0)
    monkeypatch.setattr(calibrate, "cluster_start_seconds", lambda workers: 2.0)
    command = ["run", "smoke", "--store", str(tmp_path / "never.zarr"), "--dry-run",
               "--workers", "2"]
    printed = []
    for _ in range(2):
        assert cli.main(command) == 0
        printed.append([line for line in capsys.readouterr().out.splitlines()
                        if line.startswith("estimated compute")])
    assert len(loads) == 1 and len(probes) >= calibrate.MIN_ROUNDS
    timed = len(probes)
    assert cli.main(command) == 0
    assert len(loads) == 1 and len(probes) == timed
    assert "the client's kernels 2 s" in capsys.readouterr().out  # 1.5 s, kept
    assert printed[0] == printed[1]

"""The dry run's model of a run's time (issue 33, point 7; docs/guide/paper-study.md, Small
specs): its parts against hand computation, not timed."""

import time
from pathlib import Path

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
    """psutil's start time of this process, against the clock: the age grows as time passes
    and is at least the time since a moment taken now."""
    before = calibrate.process_age_seconds()
    mark = time.time()
    time.sleep(0.05)
    after = calibrate.process_age_seconds()
    assert after >= before + 0.05 - 0.02
    assert after >= time.time() - mark - 0.02


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

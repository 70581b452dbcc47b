"""The dry run's model of a run's time (issue 33, point 7; docs/guide/paper-study.md, Small
specs): its parts against hand computation, not timed."""

import time
from pathlib import Path

import pytest

from pcskm.experiments.spec import load_spec
from pcskm.runner import calibrate, sizes
from pcskm.runner.cube import CubeView
from pcskm.runner.tasks import plan


def test_run_time_by_hand():
    """Start 2 + 1 + 3 + 4 = 10 s; compute 20 s outlasts writing 5 s: 30 s; a writer-bound
    run: 1 + 6 = 7 s."""
    timed = calibrate.RunTime(process=2.0, kernels=1.0, cluster=3.0, worker=4.0,
                              compute=20.0, writing=5.0)
    assert timed.fixed == 10.0
    assert timed.seconds == 30.0
    writer_bound = calibrate.RunTime(process=0.0, kernels=0.0, cluster=0.0, worker=1.0,
                                     compute=2.0, writing=6.0)
    assert writer_bound.seconds == 7.0


def test_writing_counts_each_task_and_each_mib():
    """The smoke plan's writing: 0.07 s per task plus the MiB of the chunks it fills, and the
    constants reproduce the paper run's 119.9 s for its 1,115 tasks and 9,590 MiB."""
    spec = load_spec("smoke")
    view = CubeView.planned(Path("never-created.zarr"), spec)
    tasks = plan(spec, view).tasks
    mib = sizes.written_bytes(view, tasks) / 2**20
    assert sizes.write_seconds(view, tasks) == pytest.approx(
        0.07 * len(tasks) + sizes.WRITE_SECONDS_PER_MIB * mib)
    assert 1115 * sizes.WRITE_SECONDS_PER_TASK + 9590 * sizes.WRITE_SECONDS_PER_MIB == (
        pytest.approx(119.9))


def test_process_age_counts_from_the_process_start():
    """psutil's start time of this process, against the clock: the age grows as time passes
    and is at least the time since a moment taken now."""
    before = calibrate.process_age_seconds()
    mark = time.time()
    time.sleep(0.05)
    after = calibrate.process_age_seconds()
    assert after >= before + 0.05 - 0.02
    assert after >= time.time() - mark - 0.02

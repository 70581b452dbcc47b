"""A task past the time limit runs again one setting at a time (:mod:`pcskm.runner.overdue`):
its parts are its settings, each with exactly the cells the task computes for it, run in
turn; the end-to-end run is in tests/test_task_timeout.py (slow suite)."""

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from pcskm.experiments.spec import parse_spec
from pcskm.runner.overdue import Parts, one_setting_each, part_key
from pcskm.runner.store import CubeView
from pcskm.runner.tasks import plan

SPEC = parse_spec(textwrap.dedent("""
    name = "parts"
    datasets = ["iris"]
    algorithms = ["LKM", "PCKM", "SKM"]
    inits = ["dkm++", "maximin"]
    kinds = ["random"]
    percentages = [1, 5]
    n_runs = 3
    n_folds = 3
    """))


@pytest.fixture
def task():
    """The one task of the spec (every setting, both chunks), with some cells done: all of
    (LKM, maximin) and run 1 of the second chunk of (SKM, dkm++)."""
    view = CubeView.planned(Path("never-created.zarr"), SPEC)
    (whole,) = plan(SPEC, view, min_work=10**15).tasks
    names = [(s.algorithm, s.init) for s in whole.settings]
    done_setting, partly = names.index(("LKM", "maximin")), names.index(("SKM", "dkm++"))
    skip = {(done_setting, b, run) for b, block in enumerate(whole.blocks) for run in block.runs}
    skip.add((partly, 1, whole.blocks[1].runs[1]))
    return replace(whole, skip=frozenset(skip))


def test_each_setting_with_cells_is_a_part_with_exactly_its_cells(task):
    parts = one_setting_each(task)
    names = [(s.algorithm, s.init) for s in task.settings]
    assert len(task.settings) == 6
    assert [(s.algorithm, s.init) for s, _ in parts] == [n for n in names
                                                        if n != ("LKM", "maximin")]
    for setting, part in parts:
        index = task.settings.index(setting)
        assert part.settings == (setting,) and part.blocks == task.blocks
        for b in range(len(task.blocks)):
            assert part.runs_of(0, b) == task.runs_of(index, b)
        assert part.n_cells == task.cells_of(index)
    assert sum(part.n_cells for _, part in parts) == task.n_cells
    skm = dict(parts)[task.settings[names.index(("SKM", "dkm++"))]]
    assert skm.n_cells == (2 * 3 - 1) * 3  # two chunks of three runs, one run done; 3 folds


def test_the_parts_run_in_turn_weighed_by_their_cells(task):
    parts = Parts()
    n = parts.split("t", task, weight=60.0)
    expected = one_setting_each(task)
    assert n == len(expected)
    seen, key = [], "t"
    while (following := parts.after(key)) is not None:
        key, part, weight = following
        seen.append((key, part, weight))
    assert [part for _, part, _ in seen] == [part for _, part in expected]
    assert [k for k, _, _ in seen] == [part_key("t", s) for s, _ in expected]
    assert [w for _, _, w in seen] == pytest.approx(
        [60.0 * part.n_cells / task.n_cells for _, part in expected])
    assert parts.after("t") is None and parts.waiting == {}

"""The run record: written on every exit path of a run that wrote cells, including an
interrupt after the last write; a run killed outright is recorded by the next run."""

import logging
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import zarr

from pcskm.experiments.report.document import _run_lines
from pcskm.experiments.spec import parse_spec
from pcskm.runner import run_spec
from pcskm.runner.store import RUNNING, DoneMarks
from pcskm.runner.store.notes import recorded_as

TINY = """
name = "tiny-record"
seed = 0
datasets = ["iris"]
algorithms = ["LKM", "PCSKM"]
inits = ["dkm++", "maximin"]
kinds = ["random"]
percentages = [1, 5]
n_runs = 2
n_folds = 10
"""
SPEC = parse_spec(TINY)
ALL_CELLS = 2 * 2 * 1 * 2 * 2 * 10  # algorithms x inits x kinds x percentages x runs x folds


IN_PROCESS_CLIENT = True  # conftest's client: one worker thread in this process


def root_attrs(store):
    return zarr.open_group(str(store), mode="r").attrs.asdict()


def done_cells(store):
    group = zarr.open_group(str(store), mode="r")["iris"]
    return int(group["done"][...].sum()) * group["fold"].shape[0]


def test_an_interrupt_after_the_last_write_keeps_the_record(client, tmp_path, monkeypatch):
    """SIGINT while the client marks done the last receipts (held until the markers are on
    disk, then delivered): the run is complete, and says so, and its record is kept. It used
    to escape as a KeyboardInterrupt ("interrupted", exit code 130) and lose the record."""
    write = DoneMarks.write

    def write_then_interrupt(marks):
        write(marks)
        signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(DoneMarks, "write", write_then_interrupt)
    store = tmp_path / "late.zarr"
    try:
        summary = run_spec(SPEC, store, client=client, progress=False)
    except KeyboardInterrupt:
        pytest.fail("the interrupt after the last write escaped the run")
    assert summary.complete and not summary.interrupted
    attrs = root_attrs(store)
    assert RUNNING not in attrs
    [record] = attrs["runs"]
    assert record["cells"] == ALL_CELLS == done_cells(store)
    assert not record["interrupted"] and record["error"] is None


def test_an_interrupted_run_records_the_cells_it_wrote(client, tmp_path):
    """The record carries the note's fields, its ``run_id`` among them; the next run of the
    same process draws another id."""
    store = tmp_path / "interrupted.zarr"
    notes = []

    def interrupt(result, summary):
        if summary.n_written == 1:
            notes.append(root_attrs(store)[RUNNING])
            raise KeyboardInterrupt

    summary = run_spec(SPEC, store, client=client, progress=False, on_result=interrupt)
    assert summary.interrupted and not summary.complete
    [record] = root_attrs(store)["runs"]
    assert record["interrupted"] and record["tasks"] == 1
    assert record["cells"] == summary.n_cells == done_cells(store) > 0
    [note] = notes
    assert {key: record[key] for key in note if key != "done_cells"} == {
        key: value for key, value in note.items() if key != "done_cells"}
    assert len(note["run_id"]) == 32
    run_spec(SPEC, store, client=client, progress=False)
    first, second = root_attrs(store)["runs"]
    assert second["run_id"] != first["run_id"]
    assert second["client_pid"] == first["client_pid"]


def test_a_note_finds_its_own_record_among_runs_of_one_process_in_one_second():
    """Two runs of one process that started in the same second share host, process, its
    start and ``started``: the note of the second finds the second's record by its
    ``run_id``, not the first's (a branch reset to the second run's start took the first's
    record for it). A note without an id (an older store's) is matched by the process and
    start."""
    process = {"client_host": "node", "client_pid": 7, "client_start": "boot:1",
               "started": "2026-11-30T02:00:00+00:00"}
    runs = [(f"run-000{n}", None, {**process, "run_id": f"{n}" * 32, "cells": n}, f"S{n}")
            for n in (1, 2)]
    assert recorded_as({**process, "run_id": "2" * 32}, runs) == ("run-0002", runs[1][2])
    assert recorded_as({**process, "run_id": "3" * 32}, runs) is None
    assert recorded_as(process, runs) == ("run-0001", runs[0][2])
    assert recorded_as({**process, "client_pid": 8}, runs) is None


KILLED_RUN = textwrap.dedent("""
    import os, signal, sys
    from distributed import Client
    from pcskm.experiments.spec import parse_spec
    from pcskm.runner import run_spec
    from pcskm.runner.store import DoneMarks

    DoneMarks.__init__.__kwdefaults__["flush_seconds"] = 0.0  # every receipt marked at once

    def kill(result, summary):
        if summary.n_written == 1:
            os.kill(os.getpid(), signal.SIGKILL)

    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address=":0") as client:
        run_spec(parse_spec(sys.argv[1]), sys.argv[2], client=client, progress=False,
                 on_result=kill)
""")


def test_a_killed_run_is_recorded_by_the_next_run(client, tmp_path, caplog):
    """SIGKILL after the first of the two tasks (one per chunk) was written: the store keeps
    its cells and the note the run left when it began; the next run records it ("wrote N
    cells and left no record")."""
    store = tmp_path / "killed.zarr"
    killed = subprocess.run([sys.executable, "-c", KILLED_RUN, TINY, str(store)],
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    written = done_cells(store)
    assert 0 < written < ALL_CELLS
    attrs = root_attrs(store)
    assert attrs["runs"] == [] and attrs[RUNNING]["client_pid"] > 0
    with caplog.at_level(logging.WARNING, logger="pcskm"):
        summary = run_spec(SPEC, store, client=client, progress=False)
    assert f"wrote {written} cells and left no record" in caplog.text
    assert summary.n_cells == ALL_CELLS - written
    first, second = root_attrs(store)["runs"]
    assert first["killed"] and first["interrupted"] and first["cells"] == written
    assert first["run_id"] == attrs[RUNNING]["run_id"]
    assert second["cells"] == ALL_CELLS - written and not second["interrupted"]
    assert RUNNING not in root_attrs(store)
    killed_line, complete_line = _run_lines([first, second])
    assert "(killed; recorded by the next run)" in killed_line and "None" not in killed_line
    assert "(complete)" in complete_line

"""Results pinned to code (issue 63, item 6): the commit a run records, checked on a git
repository made here, and ``pcskm run``'s refusal of a spec with a ``[preregistration]`` from
a package with uncommitted changes unless ``--allow-uncommitted`` (docs/reference/cli.md);
the real work tree is never changed (``source_commit`` is replaced)."""

import hashlib
import subprocess

import pytest
import zarr
from cubes import tiny_spec

from pcskm.runner import execute
from pcskm.runner.cli import EXIT_USAGE, main

IN_PROCESS_CLIENT = True
PREREG = '\n[preregistration]\nrule = "honest"\nfocus = "LKM"\nhypotheses = "None."\n'
DIRTY = {"commit": "0123456789abcdef0123456789abcdef01234567+dirty",
         "commit_date": "2026-12-01T10:00:00+00:00", "diff_sha256": "d" * 64}


def _git(root, *arguments):
    return subprocess.run(["git", "-C", str(root), *arguments], check=True,
                          capture_output=True).stdout


@pytest.fixture
def repository(tmp_path):
    """A git repository with a package file committed."""
    root = tmp_path / "repo"
    (root / "runner").mkdir(parents=True)
    (root / "runner" / "a.py").write_text("A = 1\n")
    (root / "README.md").write_text("not the package\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first")
    return root


def test_a_clean_tree_records_its_commit_and_date_and_no_digest(repository):
    (repository / "README.md").write_text("changed, outside the package\n")
    found = execute.source_commit(repository)
    head = _git(repository, "rev-parse", "HEAD").decode().strip()
    date = _git(repository, "show", "-s", "--format=%cI", "HEAD").decode().strip()
    assert found == {"commit": head, "commit_date": date, "diff_sha256": None}


def test_a_changed_tree_records_the_digest_of_its_diff_and_untracked_files(repository):
    (repository / "runner" / "a.py").write_text("A = 2\n")
    head = _git(repository, "rev-parse", "HEAD").decode().strip()
    diff = _git(repository, "diff", "HEAD", "--", "__init__.py", "algorithms", "experiments",
                "runner")
    found = execute.source_commit(repository)
    assert found["commit"] == head + "+dirty"
    assert found["diff_sha256"] == hashlib.sha256(diff).hexdigest()
    # a new module is part of the change, though git diff HEAD leaves it out
    (repository / "runner" / "b.py").write_text("B = 1\n")
    expected = hashlib.sha256(diff + b"\0runner/b.py\0B = 1\n").hexdigest()
    assert execute.source_commit(repository)["diff_sha256"] == expected


@pytest.fixture
def spy(monkeypatch):
    """``run_spec`` replaced by a recorder of its calls (nothing is computed)."""
    calls = []
    monkeypatch.setattr(execute, "run_spec", lambda *args, **kwargs: calls.append(args))
    return calls


def _spec(tmp_path, prereg=True):
    path = tmp_path / "spec.toml"
    path.write_text(tiny_spec("pinned").replace('["LKM"]', '["LKM", "PCKM"]')
                    + (PREREG if prereg else ""))
    return path


def test_a_preregistered_spec_from_a_changed_tree_is_refused_in_one_line(
        tmp_path, monkeypatch, spy, capfd):
    monkeypatch.setattr(execute, "source_commit", lambda: DIRTY)
    store = tmp_path / "s.zarr"
    code = main(["run", str(_spec(tmp_path)), "--store", str(store), "--no-progress"])
    assert code == EXIT_USAGE and spy == [] and not store.exists()
    lines = [line for line in capfd.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "[preregistration]" in lines[0] and "--allow-uncommitted" in lines[0]
    assert "0123456789ab+dirty" in lines[0]


@pytest.mark.parametrize("arguments, prereg, commit", [
    (["--allow-uncommitted"], True, DIRTY),
    ([], False, DIRTY),  # no preregistration
    ([], True, {**DIRTY, "commit": DIRTY["commit"][:-6], "diff_sha256": None}),  # clean
    ([], True, None),  # not a git tree (an installed package)
])
def test_what_is_not_refused(tmp_path, monkeypatch, spy, arguments, prereg, commit):
    monkeypatch.setattr(execute, "source_commit", lambda: commit)
    code = main(["run", str(_spec(tmp_path, prereg)), "--store", str(tmp_path / "s.zarr"),
                 "--no-progress", *arguments])
    assert code == 0 and len(spy) == 1


def test_an_allowed_run_records_the_digest(tmp_path, monkeypatch, client):
    """The run computes and its record names the commit and the diff's digest."""
    monkeypatch.setattr(execute, "source_commit", lambda: DIRTY)
    store = tmp_path / "s.zarr"
    code = main(["run", str(_spec(tmp_path)), "--store", str(store), "--no-progress",
                 "--allow-uncommitted", "--scheduler", client.scheduler.address])
    assert code == 0
    run = zarr.open_group(str(store), mode="r").attrs["runs"][-1]
    assert {key: run[key] for key in DIRTY} == DIRTY
    assert run["cells"] > 0


def test_runs_csv_puts_the_commit_date_beside_the_start():
    """Two records, one from before runs recorded their commit's date: runs.csv has the date
    column for both, beside ``started``, every other key kept in the record's order."""
    from pcskm.experiments.report.document import _run_lines, runs_table

    old = {"run_id": "a", "spec": "s", "started": "2026-11-29T10:49:13+00:00",
           "command": "pcskm run", "commit": "58c989f", "finished": "2026-11-29T11:12:28+00:00",
           "wall_seconds": 1395.2, "cells": 4}
    new = {**old, "run_id": "b", "commit": DIRTY["commit"],
           "commit_date": DIRTY["commit_date"], "diff_sha256": DIRTY["diff_sha256"]}
    table = runs_table([old, new])
    assert list(table.columns) == ["run_id", "spec", "started", "commit_date", "commit",
                                   "diff_sha256", "finished", "wall_seconds", "command",
                                   "cells"]
    assert table.commit_date.isna().tolist() == [True, False]
    assert table.commit_date.iloc[1] == DIRTY["commit_date"] and table.cells.tolist() == [4, 4]
    lines = _run_lines([old, new])
    assert "(commit 58c989f);" in lines[0]
    assert f"(commit {DIRTY['commit']} of {DIRTY['commit_date']});" in lines[1]

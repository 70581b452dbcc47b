"""A report that fails midway says so (issue 64, "Tracebacks and wrong words"): a figure's
forked child reports its error in one line, no traceback, and the report folder keeps the
file PARTIAL until the report's last file is written."""

import errno

import pytest
from cubes import tiny_spec

from pcskm import forking
from pcskm.experiments.report import PARTIAL, document, plotting, write_report
from pcskm.experiments.spec import parse_spec
from pcskm.runner.store import prepare


def _full_disk():
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.skipif(not forking.can_fork(), reason="figures are built in forked children "
                                                    "on Linux only")
def test_a_figure_child_on_a_full_disk_is_one_line(tmp_path, capfd):
    """The child printed a full traceback (multiprocessing's) before the parent's error."""
    with pytest.raises(plotting.FigureNotWritten) as failed:
        with plotting.parallel_saves(workers=2):
            plotting.draw(tmp_path / "full.png", _full_disk)
    assert str(failed.value) == (f"could not write the figure(s) {tmp_path / 'full.png'} "
                                 "(OSError: [Errno 28] No space left on device)")
    assert capfd.readouterr().err == ""


def test_a_report_failed_midway_is_marked_partial(tmp_path, monkeypatch):
    store, out = tmp_path / "s.zarr", tmp_path / "report"
    prepare(store, parse_spec(tiny_spec("tiny-partial")))
    monkeypatch.setattr(document, "_failures", lambda *args: _full_disk())
    with pytest.raises(OSError, match="No space left"):
        write_report(store, out)
    assert (out / "coverage.csv").is_file() and not (out / "report.md").exists()
    assert "incomplete" in (out / PARTIAL).read_text()
    monkeypatch.undo()
    write_report(store, out)
    assert (out / "report.md").is_file() and not (out / PARTIAL).exists()

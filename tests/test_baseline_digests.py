"""``pcskm report --baseline`` reads only files as their report wrote them (issue 64, case
4): each value file's SHA-256 is in baseline_protocol.json; an edited, truncated or
malformed file is refused in one line naming it, and every committed report folder is
accepted as it is."""

import gzip
import hashlib
import json
import shutil

import pandas as pd
import pytest
from cubes import REPO, pcskm, tiny_spec

from pcskm.experiments.report import baseline
from pcskm.experiments.spec import parse_spec
from pcskm.runner.store import prepare

COMMITTED = sorted(path.parent for path in (REPO / "docs" / "results").rglob(
    baseline.PROTOCOL_FILE))


@pytest.fixture
def copied(tmp_path):
    """The baseline files of the smallest committed report folder, copied."""
    source = min(COMMITTED, key=lambda folder: (folder / baseline.VALUES_FILE).stat().st_size)
    folder = tmp_path / "baseline"
    folder.mkdir()
    for name in (baseline.PROTOCOL_FILE, *baseline.VALUE_FILES):
        shutil.copy(source / name, folder / name)
    return folder


def report_with(baseline_folder, tmp_path):
    """``pcskm report`` of an empty store with ``--baseline baseline_folder``."""
    store = tmp_path / "s.zarr"
    prepare(store, parse_spec(tiny_spec("tiny-baseline")))
    return pcskm("report", store, "--out", tmp_path / "out", "--baseline", baseline_folder)


def assert_one_line(out, *phrases):
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    for phrase in phrases:
        assert phrase in lines[0], lines[0]


@pytest.mark.parametrize("folder", COMMITTED, ids=lambda f: str(f.relative_to(REPO)))
def test_every_committed_report_folder_records_its_files_digests(folder):
    record = json.loads((folder / baseline.PROTOCOL_FILE).read_text())
    assert record["files"] == {name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
                               for name in baseline.VALUE_FILES}
    assert baseline.read(folder).values.sizes["algorithm"] > 0


def test_a_halved_value_is_refused_naming_the_file(copied, tmp_path):
    path = copied / baseline.VALUES_FILE
    frame = pd.read_csv(path)
    frame.loc[frame.algorithm == "LKM", "f_mean"] /= 2
    frame.to_csv(path, index=False, compression=baseline.GZIP)
    with pytest.raises(ValueError, match="is not the file its report wrote"):
        baseline.read(copied)
    assert_one_line(report_with(copied, tmp_path), str(path), "edited or damaged")
    assert not (tmp_path / "out").exists()


def test_a_truncated_file_is_one_line_naming_it(copied, tmp_path):
    """A truncated gzip file used to end in an EOFError traceback; its digest is checked
    first, and one read anyway (its digest recorded with it) is named too."""
    path = copied / baseline.RUN_FOLD_FILE
    path.write_bytes(path.read_bytes()[:5000])
    assert_one_line(report_with(copied, tmp_path), str(path))
    baseline.record_digests(copied)  # the truncated file recorded as the report's
    with pytest.raises(ValueError, match=f"{path} cannot be read"):
        baseline.read(copied)


def test_a_malformed_record_is_one_line_naming_it(copied, tmp_path):
    path = copied / baseline.PROTOCOL_FILE
    path.write_text(path.read_text()[:-10])
    assert_one_line(report_with(copied, tmp_path), str(path), "cannot be read")
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="is not a baseline record"):
        baseline.read(copied)


def test_a_record_without_digests_is_refused_and_the_helper_adds_them(copied):
    path = copied / baseline.PROTOCOL_FILE
    record = json.loads(path.read_text())
    old = {key: value for key, value in record.items() if key != "files"}
    path.write_text(json.dumps(old, indent=1, sort_keys=True) + "\n")
    with pytest.raises(ValueError, match="records no SHA-256 of the value files"):
        baseline.read(copied)
    baseline.record_digests(copied)
    assert json.loads(path.read_text()) == record
    with gzip.open(copied / baseline.VALUES_FILE) as values:
        assert values.read()  # untouched: still a whole gzip file
    baseline.read(copied)


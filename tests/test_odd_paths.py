"""Odd store paths (issue 49): a symbolic link to nothing or a loop of links, ``..`` in the
path of a new store, the report's own selections given as a store, ``report`` on a file, and
a disk that fills up mid-run: each is one line on stderr with exit code 2
(docs/reference/cli.md, Exit codes) and leaves nothing behind, the folder listed before and
after; the CLI in subprocesses, as a user runs it."""

import os
import shutil
import subprocess
import sys

import pytest
from cubes import assert_same_cube, pcskm, tiny_spec

SPEC_TEXT = tiny_spec("tiny-odd")


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("spec") / "tiny.toml"
    path.write_text(SPEC_TEXT)
    return path


@pytest.fixture(scope="module")
def reference(spec_file, tmp_path_factory):
    """The tiny spec computed into a plain path, and its report (with the selections beside
    it)."""
    folder = tmp_path_factory.mktemp("reference")
    store = folder / "tiny.zarr"
    done = pcskm("run", spec_file, "--store", store, "--workers", 1, "--no-progress")
    assert done.returncode == 0, done.stderr
    report = pcskm("report", store, "--out", folder / "report")
    assert report.returncode == 0, report.stderr
    return store


def listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def contents(folder):
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def assert_one_line(done, *phrases):
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, \
        done.stderr
    for phrase in phrases:
        assert phrase in done.stderr, done.stderr


def commands(spec_file, store, out):
    return (["run", spec_file, "--store", store, "--workers", 1, "--no-progress"],
            ["status", store], ["verify", store], ["report", store, "--out", out])


LINKS = {
    "a symbolic link to nothing": (lambda folder: (folder / "link.zarr").symlink_to("nowhere.zarr"),
                                   "link.zarr is a symbolic link to nowhere.zarr, which does "
                                   "not exist"),
    "a loop of symbolic links": (lambda folder: ((folder / "link.zarr").symlink_to("other"),
                                                 (folder / "other").symlink_to("link.zarr")),
                                 "link.zarr is a loop of symbolic links"),
}


@pytest.mark.parametrize("case", LINKS)
def test_a_store_path_that_is_a_broken_link_is_refused_by_every_command(spec_file, tmp_path,
                                                                         case):
    make, phrase = LINKS[case]
    make(tmp_path)
    before = listing(tmp_path)
    for command in commands(spec_file, "link.zarr", "report"):
        done = pcskm(*command, cwd=tmp_path)
        assert_one_line(done, phrase)
        assert "Resume with" not in done.stderr
        assert listing(tmp_path) == before  # no <store>.rebuild, no target, no report folder


def test_dot_dot_in_the_path_of_a_new_store_is_the_store_itself(spec_file, reference,
                                                                  tmp_path):
    done = pcskm("run", spec_file, "--store", "x.zarr/../x.zarr", "--workers", 1,
                 "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["x.zarr"]  # no .old, no .rebuild
    assert pcskm("verify", "x.zarr/../x.zarr", cwd=tmp_path).returncode == 0
    assert_same_cube(reference, tmp_path / "x.zarr")


def test_the_reports_selections_given_as_a_store_are_named(spec_file, reference, tmp_path):
    selections = reference.with_name("tiny-selections.zarr")
    assert selections.is_dir()
    before = contents(selections)
    for command in commands(spec_file, selections, tmp_path / "report"):
        assert_one_line(pcskm(*command), f"{selections} holds the best-s selections that "
                        f"pcskm report wrote for the cube {reference.resolve()}, not a "
                        "results cube")
    assert contents(selections) == before and not (tmp_path / "report").exists()
    assert not selections.with_name(selections.name + ".rebuild").exists()


def test_report_on_a_file_creates_no_report_folder(tmp_path):
    (tmp_path / "file.txt").write_text("not a store")
    assert_one_line(pcskm("report", "file.txt", "--out", "D", cwd=tmp_path),
                    "file.txt is a file, not a pcskm results cube")
    assert listing(tmp_path) == ["file.txt"]


def mount_namespaces_work():
    """Whether this machine lets a process mount a file system of its own."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                            "mount -t tmpfs tmpfs /mnt"], capture_output=True)
    return probe.returncode == 0


DISK_FULL = """
set -u
mount -t tmpfs -o size=4m tmpfs "$DISK"
cp -r "$REFERENCE" "$DISK/s.zarr"
rm -r "$DISK/s.zarr/iris/f_score/c"  # the run recomputes its 10 cells
# fill the disk to 3 pages of 4 KiB short of full: the run starts, and cannot write its cells
free=$(df -k --output=avail "$DISK" | tail -1)
dd if=/dev/zero of="$DISK/fill" bs=4k count=$((free / 4 - 3)) 2>/dev/null
run() {
  "$PYTHON" -m pcskm.runner.cli run "$SPEC" --store "$DISK/s.zarr" --workers 1 --no-progress
}
run 2> "$OUT/full.err"; echo $? > "$OUT/full.rc"
find "$DISK" -name '*.partial' > "$OUT/partial"
"$PYTHON" -m pcskm.runner.cli verify "$DISK/s.zarr" > /dev/null 2>&1; echo $? > "$OUT/verify.rc"
rm "$DISK/fill"
run 2> "$OUT/resumed.err"; echo $? > "$OUT/resumed.rc"
cp -r "$DISK/s.zarr" "$OUT/after.zarr"
"""


def test_a_disk_full_mid_run_exits_2_keeps_the_done_cells_and_resumes(spec_file, reference,
                                                                      tmp_path):
    """The store on a tmpfs of its own (a mount namespace), filled up before the run writes
    its cells: exit code 2 and one line naming the file system, no temporary file left, the
    store verifies, and once space is freed the resumed run gives the reference cube."""
    if not mount_namespaces_work():
        pytest.skip("this machine does not let a process mount a file system of its own "
                    "(unshare --user --mount), which the full disk is made of")
    disk, out = tmp_path / "disk", tmp_path / "out"
    disk.mkdir()
    out.mkdir()
    env = {"DISK": str(disk), "OUT": str(out), "REFERENCE": str(reference),
           "SPEC": str(spec_file), "PYTHON": sys.executable}
    subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", DISK_FULL],
                   env={**os.environ, **env}, check=True, timeout=600)
    err = (out / "full.err").read_text()
    lines = [line for line in err.splitlines() if "no space left" in line]
    assert (out / "full.rc").read_text().strip() == "2", err
    assert "Traceback" not in err and len(lines) == 1, err
    assert f"the file system mounted at {disk}" in lines[0] and "cells marked done are kept" \
        in lines[0], err
    assert (out / "partial").read_text() == ""
    assert (out / "verify.rc").read_text().strip() == "0"
    assert (out / "resumed.rc").read_text().strip() == "0", (out / "resumed.err").read_text()
    assert_same_cube(reference, out / "after.zarr")

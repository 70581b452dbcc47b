"""A store that cannot be written: ``status``, ``verify`` and ``report --out`` read it and
write nothing beside it; ``run`` and a report without ``--out`` refuse it with one line and
exit code 2.

The tests run as root, whom permission bits do not stop. The read-only condition is a
read-only bind mount of the store's folder in a private mount namespace (``unshare``): the
file system refuses every write with EROFS, root's too, exactly as on a read-only project
or archive mount. Where namespaces are not allowed, a user other than root gets the
permission-bit version (``chmod -R a-w``), which stops that user.
"""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pcskm.experiments.spec import parse_spec
from pcskm.runner import run_spec

REPO = Path(__file__).resolve().parents[1]
TINY = """
name = "tiny-readonly"
seed = 0
datasets = ["iris"]
algorithms = ["LKM", "PCSKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [1]
n_runs = 2
n_folds = 10
"""
MOUNT_READ_ONLY = 'mount --bind -o ro "$0" "$0" && exec "$@"'


def _namespaces_allowed(folder):
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            MOUNT_READ_ONLY, str(folder), "true"], capture_output=True)
    return probe.returncode == 0


@pytest.fixture(scope="module")
def read_only(tmp_path_factory):
    """``(folder, store, spec file, pcskm)``: a computed store in ``folder``, and a function
    running the CLI with ``folder`` read-only."""
    from distributed import Client

    folder = tmp_path_factory.mktemp("read-only")
    store = folder / "tiny.zarr"
    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address=":0") as client:
        run_spec(parse_spec(TINY), store, client=client, progress=False)
    spec = tmp_path_factory.mktemp("spec") / "tiny.toml"
    spec.write_text(TINY)
    if _namespaces_allowed(folder):
        def pcskm(*args, mounted=folder):
            return subprocess.run(
                ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                 MOUNT_READ_ONLY, str(mounted), sys.executable, "-m", "pcskm.runner.cli",
                 *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=300)
    elif os.geteuid() != 0:
        def pcskm(*args, mounted=folder):
            modes = {p: p.stat().st_mode for p in [mounted, *mounted.rglob("*")]}
            for path, mode in modes.items():
                path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
            try:
                return subprocess.run([sys.executable, "-m", "pcskm.runner.cli",
                                       *map(str, args)], cwd=REPO, capture_output=True,
                                      text=True, timeout=300)
            finally:
                for path, mode in modes.items():
                    path.chmod(mode)
    else:
        pytest.skip("root, and no mount namespace to make a folder read-only for root")
    return folder, store, spec, pcskm


def files(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def assert_clean_refusal(out, *phrases):
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and "Resume with" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    for phrase in phrases:
        assert phrase in out.stderr, out.stderr


def test_status_verify_and_report_read_a_read_only_store(read_only, tmp_path):
    folder, store, _, pcskm = read_only
    before = files(folder)
    status = pcskm("status", "--verify", store)
    assert status.returncode == 0, status.stderr
    total = next(line for line in status.stdout.splitlines() if line.startswith("total"))
    assert total.split()[1:4] == ["40", "40", "0"]
    verified = pcskm("verify", store)
    assert verified.returncode == 0, verified.stderr
    assert "no damage" in verified.stdout
    out = tmp_path / "report"
    report = pcskm("report", store, "--out", out)
    assert report.returncode == 0, report.stderr
    assert (out / "report.md").is_file()
    assert (out / "tiny-selections.zarr" / "zarr.json").is_file()  # not beside the store
    assert files(folder) == before


def test_run_and_a_report_without_out_refuse_a_read_only_store(read_only):
    folder, store, spec, pcskm = read_only
    before = files(folder)
    assert_clean_refusal(pcskm("run", spec, "--store", store, "--no-progress"),
                         "cannot create the lock file", "read-only store")
    assert_clean_refusal(pcskm("report", store), "give another one with --out")
    # only the store read-only, its folder writable: the lock is taken, the store refused
    assert_clean_refusal(pcskm("run", spec, "--store", store, "--no-progress",
                               mounted=store), f"{store} cannot be written")
    assert files(folder) == before  # no lock file left behind

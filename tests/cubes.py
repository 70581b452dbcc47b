"""Helpers shared by the tests that compare result cubes and run ``pcskm run`` in a
subprocess."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import xarray as xr
import zarr

REPO = Path(__file__).resolve().parents[1]


def tiny_spec(name):
    """The text of a one-block spec (iris, LKM, DKM++, random, 1 %, one run): a store in
    seconds, for the tests of the store's defences."""
    return f"""
name = "{name}"
seed = 0
datasets = ["iris"]
algorithms = ["LKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [1]
n_runs = 1
n_folds = 10
"""


def pcskm(*args, env=None, timeout=300, cwd=REPO):
    """``pcskm ARGS`` in a subprocess (``env`` added to this process's environment)."""
    return subprocess.run([sys.executable, "-m", "pcskm.runner.cli", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def done_cells(store):
    """Cells marked done in every group of ``store``, a folder or an ``s3://`` repository
    (0 before the store exists)."""
    from pcskm.runner.store import where

    try:
        root = zarr.open_group(where(store).zarr_store(), mode="r")
        return sum(int(g["done"][:].sum()) * g["fold"].shape[0] for _, g in root.groups())
    except (FileNotFoundError, KeyError, ValueError):  # not created yet (NotAStore too)
        return 0


def results_data(dataset):
    """A group's dataset without ``run_index``, the log of which run marked each block done
    (it differs between a store computed in one run and one computed in several), and
    ``chunk_sha256``, the chunk digests bound to the store's id (they differ between any two
    stores)."""
    return dataset.drop_vars(["run_index", "chunk_sha256"], errors="ignore")


# Root attributes of a store's identity and records, not of its results: they differ
# between two stores of the same results.
STORE_RECORDS = ("runs", "metadata_sha256", "store_id", "coordinate_sha256")


def results_attrs(tree):
    """A cube's root attributes without ``runs``, the log of when and where it was computed
    (it differs between two stores of the same results), ``metadata_sha256``, the digests
    of its metadata (they differ between two stores written with different codecs), and the
    store's id and the digests bound to it (``store_id``, ``coordinate_sha256``)."""
    return {key: value for key, value in tree.attrs.items() if key not in STORE_RECORDS}


def assert_same_trees(a, b):
    """The cube trees ``a`` and ``b`` hold the same results: the same groups, and every
    coordinate, variable and attribute identical (NaN equal to NaN), their stores' own
    records (:func:`results_attrs`, :func:`results_data`) aside."""
    assert set(a.children) == set(b.children) and results_attrs(a) == results_attrs(b)
    for name in a.children:
        xr.testing.assert_identical(results_data(a[name].to_dataset()).load(),
                                    results_data(b[name].to_dataset()).load())


def assert_same_cube(a, b):
    """:func:`assert_same_trees` for the stores ``a`` and ``b`` (folders or ``s3://``
    repositories)."""
    from pcskm.runner.store import where

    assert_same_trees(where(a).open_datatree(), where(b).open_datatree())


class Progress:
    """Reads a ``pcskm run`` subprocess's stderr (``stderr=subprocess.PIPE``) in a thread:
    ``cells()`` is the largest cell count its progress bar has shown so far, which tells that
    results have reached the client (it may hold their receipts in memory, unmarked, until the
    run ends)."""

    def __init__(self, process):
        self._received = []
        self._reader = threading.Thread(target=lambda: self._received.extend(iter(
            lambda: os.read(process.stderr.fileno(), 4096), b"")))
        self._reader.start()

    def text(self):
        return b"".join(self._received).decode(errors="replace")

    def cells(self):  # tqdm's "cells:  12%|#  | 96/800 [..."
        return max(map(int, re.findall(r"(\d+)/\d+ \[", self.text())), default=0)

    def join(self):
        """The whole stderr, once the process has closed it."""
        self._reader.join()
        return self.text()


def ctrl_c_as_in_a_terminal():
    """Run in the child before ``exec`` (``preexec_fn``): SIGINT's default action, as a
    terminal's foreground job has it. A process started in the background of a
    non-interactive shell (``pytest ... &``) ignores SIGINT, its children inherit that, and a
    ``pcskm run`` started with SIGINT ignored keeps ignoring it (docs/reference/cli.md,
    Interrupting)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def signal_mid_run(arguments, sig, cwd, wait=120):
    """Start ``pcskm ARGUMENTS`` in a process group of its own (as a terminal starts it), send
    ``sig`` to the whole group (client and workers) once its progress bar shows computed
    cells, and return ``(returncode, stderr)`` once it has ended."""
    process = subprocess.Popen([sys.executable, "-m", "pcskm.runner.cli", *map(str, arguments)],
                               cwd=cwd, stderr=subprocess.PIPE, start_new_session=True,
                               preexec_fn=ctrl_c_as_in_a_terminal)
    progress = Progress(process)
    deadline = time.monotonic() + wait
    while progress.cells() == 0 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(process.pid, sig)
    process.wait(timeout=wait)
    return process.returncode, progress.join()

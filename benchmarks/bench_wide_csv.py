"""Reading an over-wide CSV data set (issue 46, point 5): rows x columns of numbers and a
label column, read by a spec's ``[data.NAME]`` table (``path = "wide.csv"``).

    python benchmarks/bench_wide_csv.py [--rows 12] [--columns 1000000] [--with-pandas]
        [--dry-run]

Writes the file into a temporary folder and prints the CPU and wall time of
``load_definition`` (the project's reader, Python's ``csv`` module) and, with
``--with-pandas``, of the reader it replaced (``pandas.read_csv(dtype=str)``, then one
column at a time), which took more than 240 s on 12 x 10^6. With ``--dry-run``, also the wall
time of ``pcskm run SPEC --dry-run`` on a spec of that one set (PCSKM, 3 folds, one run and
percentage) until it prints the store's sizes, and what it printed. Run by hand; the figures
depend on the machine and its load, which the first line names.
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import machine

from pcskm.experiments.sources import load_definition, parse_definition


def timed(function):
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def with_pandas(path):
    """The replaced reader: pandas' frame of text, then each feature column converted."""
    import pandas as pd

    cells = pd.read_csv(path, header=None, dtype=str, keep_default_na=False,
                        skipinitialspace=True).to_numpy(dtype=str)
    X = np.empty((len(cells), cells.shape[1] - 1))
    for k in range(cells.shape[1] - 1):
        X[:, k] = cells[:, k].astype(np.float64)
    return X


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=12)
    parser.add_argument("--columns", type=int, default=1_000_000)
    parser.add_argument("--with-pandas", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()
    print(machine())
    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.rows, args.columns)).round(4)
    y = np.arange(args.rows) % 2
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "wide.csv"
        np.savetxt(path, np.column_stack([X, y]), delimiter=",", fmt="%g")
        print(f"{path.name}: {args.rows} rows x {args.columns + 1} columns, "
              f"{path.stat().st_size / 2**20:.1f} MiB")
        definition = parse_definition("wide", {"path": str(path)})
        data, wall, cpu = timed(lambda: load_definition(definition))
        assert np.array_equal(data.X, X) and np.array_equal(data.y, y)
        print(f"load_definition: {wall:.1f} s wall, {cpu:.1f} s CPU")
        if args.with_pandas:
            found, wall, cpu = timed(lambda: with_pandas(path))
            assert np.array_equal(found, X)
            print(f"pandas.read_csv(dtype=str), column by column: {wall:.1f} s wall, "
                  f"{cpu:.1f} s CPU")
        if args.dry_run:
            dry_run(Path(folder), path)


SPEC = """
name = "wide"
seed = 0
datasets = ["wide"]
algorithms = ["PCSKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [10]
n_runs = 1
n_folds = 3

[data.wide]
path = "{path}"
"""


def dry_run(folder, path):
    """``pcskm run SPEC --dry-run`` on a spec of the wide set: the wall time until it prints
    the store's sizes (the plan and the size check done; a set too large is refused there),
    and those lines. The calibration that follows fits PCSKM on every feature, the run's own
    cost, and is stopped."""
    spec = folder / "wide.toml"
    spec.write_text(SPEC.format(path=path))
    command = [sys.executable, "-u", "-m", "pcskm.runner.cli", "run", str(spec), "--dry-run",
               "--store", str(folder / "wide.zarr")]
    start, lines = time.perf_counter(), []
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as process:
        for line in process.stdout:
            lines.append(line.rstrip())
            if line.startswith("store:") or "error" in line.lower():
                break
        wall = time.perf_counter() - start
        process.kill()
    print(f"pcskm run --dry-run: the sizes after {wall:.1f} s wall")
    for line in lines:
        print(f"    {line}")


if __name__ == "__main__":
    main()

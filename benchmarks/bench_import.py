"""Start-up time of the ``pcskm`` command and of the library: import time per command.

    python benchmarks/bench_import.py [--repeat 5]

Runs each command in a fresh interpreter under ``python -X importtime`` (so the files are in
the page cache after the first of the repeats) and prints, per command, the smallest over the
repeats of the import time (the sum of every module's own time, as ``-X importtime`` reports
it) and of the wall time of the whole process, with the heaviest packages it imported. The
commands are the ones that should answer at once: usage errors, ``--help``, ``pcskm status``
on a store (a new store of the smoke spec: status reads only its markers). Run by hand; the
figures depend on the machine and its load, which the first line names.
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import machine

LINE = re.compile(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)")


def commands(store):
    cli = ["-m", "pcskm.runner.cli"]
    return {
        "pcskm --help": [*cli, "--help"],
        "pcskm status --help": [*cli, "status", "--help"],
        "pcskm status (no such store)": [*cli, "status", str(store) + "-missing"],
        "pcskm run --workers 0 (usage error)": [*cli, "run", "smoke", "--workers", "0"],
        "pcskm run no-such-spec": [*cli, "run", "no-such-spec"],
        "pcskm status STORE": [*cli, "status", str(store)],
        "pcskm datasets list": [*cli, "datasets", "list"],
        "from pcskm import PCSKMeans": ["-c", "from pcskm import PCSKMeans"],
        "import sklearn.base (for comparison)": ["-c", "import sklearn.base"],
    }


def measure(argv):
    """``(import seconds, wall seconds, {top-level package: import seconds})`` of one run."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-X", "importtime", *argv], capture_output=True,
                         text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""})
    wall = time.perf_counter() - start
    by_package = collections.Counter()
    for match in LINE.finditer(out.stderr):
        by_package[match.group(2).split(".")[0]] += int(match.group(1)) / 1e6
    return sum(by_package.values()), wall, by_package


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from pcskm.experiments.spec import load_spec
    from pcskm.runner.store import prepare

    print(machine(), f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "smoke.zarr"
        prepare(store, load_spec("smoke"))
        print(f"{'command':40} {'import s':>9} {'wall s':>7}  heaviest imports (s)")
        for name, argv in commands(store).items():
            runs = [measure(argv) for _ in range(args.repeat)]
            imports, wall = min(r[0] for r in runs), min(r[1] for r in runs)
            heaviest = min(runs)[2].most_common(4)
            print(f"{name:40} {imports:9.2f} {wall:7.2f}  "
                  + ", ".join(f"{package} {seconds:.2f}" for package, seconds in heaviest))


if __name__ == "__main__":
    main()

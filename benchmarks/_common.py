"""Helpers shared by the benchmarks."""

import importlib.util
import numbers
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from pcskm.experiments import resolve_data_dir

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "out"  # the benchmarks' logs (not committed)

DATA_DIR = resolve_data_dir()[0]


def export(commit, folder):
    """The tree of ``commit`` as the package ``folder/pcskm`` (put ``folder`` on PYTHONPATH to
    import it); returns ``folder``."""
    target = folder / "pcskm"
    target.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return folder


def importable(commit, folder):
    """A folder to put on PYTHONPATH to import ``pcskm`` as ``commit``'s tree (exported into
    ``folder``), or as this checkout when ``commit`` is None (its parent when the checkout is
    named pcskm, else ``folder`` holding a link to it)."""
    if commit is not None:
        return export(commit, folder)
    if REPO.name == "pcskm":
        return REPO.parent
    folder.mkdir(parents=True)
    (folder / "pcskm").symlink_to(REPO)
    return folder


def result_arrays(results):
    """``(field, array)`` of every numeric array of the block results in ``results`` (what
    ``experiments.cells.evaluate`` returns), in a fixed order: what the benches compare bit
    for bit."""
    return [(name, value) for result in results for per_setting in result.blocks
            for block in per_setting for name, value in sorted(vars(block).items())
            if isinstance(value, np.ndarray) and value.dtype != object]


def machine():
    """One line naming the machine; every figure was measured on a shared machine."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"NumPy {np.__version__}")


def load():
    """The load averages (1, 5, 15 min), as a benchmark prints them before and after."""
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def print_header(note=""):
    """The first lines of a timing benchmark's output: its command line (with ``note``) and
    the time, the machine, the load average before."""
    print(f"$ python benchmarks/{Path(sys.argv[0]).name} {' '.join(sys.argv[1:])}   # "
          f"{note}{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    print(machine())
    print(f"load average before: {load()}")


def median_seconds(repeat, function, *args, warm_up=True, **kwargs):
    """Median wall seconds of ``function(*args, **kwargs)`` over ``repeat`` calls, after one
    untimed warm-up call (Numba caches, imports) unless ``warm_up`` is False; returns
    (seconds, result of the last call)."""
    if warm_up:
        function(*args, **kwargs)
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return float(np.median(times)), result


def print_table(header, rows):
    """A plain text table: columns as wide as their widest cell, numbers right-aligned."""
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row, raw):
        return "  ".join(c.rjust(w) if isinstance(v, numbers.Number) else c.ljust(w)
                         for c, w, v in zip(row, widths, raw, strict=True)).rstrip()

    print(line(cells[0], header))
    print("  ".join("-" * w for w in widths))
    for text, raw in zip(cells[1:], rows, strict=True):
        print(line(text, raw))


def import_peers():
    """``(PCKMeans, MPCKMeans)`` of the ``active-semi-supervised-clustering`` package (0.0.1,
    2018), with the two fixes it needs to import, applied at run time (its files untouched):

    * its ``semi_supervised/pairwise_constraints`` modules import ``..exceptions`` and
      ``..farthest_first_traversal``, which the wheel ships one level higher (the package
      fails with ModuleNotFoundError): the two top-level modules are registered under the
      names the relative imports look for;
    * ``mpckmeans.py`` calls ``np.seterr('raise')`` at import, for the whole process: the
      previous settings are restored (run their fits under ``np.errstate(all="raise")``).
    """
    before = np.geterr()
    # the wheel ships the same code twice, as active_semi_clustering (used by its labeled_data
    # modules) and active_semi_supervised_clustering; both need the aliases
    for package in ("active_semi_clustering", "active_semi_supervised_clustering"):
        spec = importlib.util.find_spec(package)
        if spec is None:
            raise ImportError("pip install active-semi-supervised-clustering==0.0.1 "
                              "(pip install -e '.[bench]')")
        root = Path(spec.submodule_search_locations[0])
        for module in ("exceptions", "farthest_first_traversal"):
            name = f"{package}.semi_supervised.{module}"
            if name not in sys.modules:
                module_spec = importlib.util.spec_from_file_location(name, root / f"{module}.py")
                sys.modules[name] = importlib.util.module_from_spec(module_spec)
                module_spec.loader.exec_module(sys.modules[name])
    from active_semi_supervised_clustering import MPCKMeans, PCKMeans

    np.seterr(**before)
    return PCKMeans, MPCKMeans


def paper_tasks(dataset, kinds, percents, runs, spec="paper"):
    """Tasks of the paper spec (or ``spec``, a name or TOML file) on ``dataset`` grouped as
    the runner groups them: one per constraint kind, holding every (algorithm, init) that
    runs the kind (Seeding only with the seeding kinds) and its blocks of ``percents`` with
    ``runs``, all folds."""
    from pcskm.experiments.cells import Block, Task
    from pcskm.experiments.spec import load_spec
    from pcskm.runner.store import CubeView, applicable
    from pcskm.runner.tasks import settings

    spec = load_spec(spec)
    view = CubeView.planned(Path("never-created.zarr"), spec)
    ours = [s for s in settings(spec, view) if s.dataset == dataset]
    return [Task(tuple(s for s in ours if applicable(spec, s.init, kind)),
                 tuple(Block(kind, float(p), tuple(runs)) for p in percents))
            for kind in kinds]

"""The ``pcskm`` command starts without the heavy packages it does not need (import time is
measured by benchmarks/bench_import.py, not here): the command line module imports neither
Dask nor Numba, and ``pcskm status`` reads a store without scikit-learn, xarray or Dask."""

import json
import subprocess
import sys

from cubes import tiny_spec

from pcskm.experiments.spec import parse_spec
from pcskm.runner.store import prepare

HEAVY = ("dask", "distributed", "numba", "sklearn", "xarray", "pandas", "matplotlib",
         "zarr", "scipy")


def imported_after(code, tmp_path):
    """The packages of ``HEAVY`` that a fresh interpreter has imported after ``code``."""
    probe = (f"import sys\n{code}\nimport json\n"
             f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_the_command_line_module_imports_no_heavy_package(tmp_path):
    assert imported_after("import pcskm.runner.cli", tmp_path) == set()


def test_status_reads_a_store_without_scikit_learn_xarray_or_dask(tmp_path):
    store = tmp_path / "s.zarr"
    prepare(store, parse_spec(tiny_spec("tiny-startup")))
    code = ("from pcskm.runner.cli import main\n"
            f"assert main(['status', {str(store)!r}]) == 0")
    loaded = imported_after(code, tmp_path)
    assert not loaded & {"dask", "distributed", "sklearn", "xarray", "pandas", "matplotlib"}, \
        loaded

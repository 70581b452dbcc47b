"""The Numba kernels are compiled once, in the client, and said so (issue 13, item 4): with an
empty cache (a temporary ``NUMBA_CACHE_DIR``) ``pcskm run`` announces the compilation; a fresh
process with the same cache, as a worker of a local cluster is, then computes every cell of
the run without compiling anything, and a second client says nothing."""

import json
import os
import subprocess
import sys
import textwrap

ONLY = "algorithm=LKM,init=dkm++"  # a small selection: its kernels compile in seconds
COMPILING = "compiling the Numba kernels"

WORKER = textwrap.dedent(f"""
    import json, logging
    from pcskm.algorithms._jit import watch_compiling
    from pcskm.experiments import cells
    from pcskm.experiments.spec import load_spec
    from pcskm.runner.compiling import compile_kernels
    from pcskm.runner.cube import CubeView
    from pcskm.runner.tasks import parse_only, plan

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    spec = load_spec("smoke")
    tasks = plan(spec, CubeView.planned("never.zarr", spec),
                 selection=parse_only({ONLY!r})).tasks
    with watch_compiling() as compiling:
        for task in tasks:  # every cell of the run, as the workers compute them
            cells.evaluate(task)
    worker_compiled = compiling.n_compiled
    compile_kernels(tasks)  # a second client
    print(json.dumps({{"worker_compiled": worker_compiled, "tasks": len(tasks)}}))
""")


def test_a_cold_cache_is_compiled_once_in_the_client_and_announced(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    first = subprocess.run(
        [sys.executable, "-m", "pcskm.runner.cli", "run", "smoke", "--only", ONLY,
         "--dry-run", "--calibration-seconds", "0", "--store", str(tmp_path / "never.zarr")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count(COMPILING) == 1, first.stderr
    assert f"cached in {tmp_path / 'numba-cache'}" in first.stderr
    assert "kernels compiled in" in first.stderr
    assert any((tmp_path / "numba-cache").rglob("*.nbi"))  # Numba's cache index files

    then = subprocess.run([sys.executable, "-c", WORKER], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=600)
    assert then.returncode == 0, then.stderr
    found = json.loads(then.stdout.strip().splitlines()[-1])
    assert found["tasks"] > 1
    assert found["worker_compiled"] == 0  # a fresh process loads every kernel from the cache
    assert COMPILING not in then.stderr  # nor does a second client say it compiles

"""The Numba kernels are compiled once, in the client, and said so (issue 13, item 4): with an
empty cache (a temporary ``NUMBA_CACHE_DIR``) ``pcskm run`` announces the compilation; a fresh
process with the same cache, as a worker of a local cluster is, then computes every cell of
the run without compiling anything, and a second client says nothing."""

import functools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ONLY = "algorithm=LKM,init=dkm++"  # a small selection: its kernels compile in seconds
COMPILING = "compiling the Numba kernels"
COMPILING_ON_WORKERS = "the workers are compiling the Numba kernels"

WORKER = textwrap.dedent(f"""
    import json, logging
    from pcskm.algorithms._jit import watch_compiling
    from pcskm.experiments import cells
    from pcskm.experiments.spec import load_spec
    from pcskm.runner.compiling import compile_kernels
    from pcskm.runner.store import CubeView
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


# In the slow suite: compiles every kernel from an empty cache: about 30 s (50 s on a slow
# VM). The default suite has the workers' announcement (below), and CI's offline pass
# compiles from an empty cache.
@pytest.mark.slow
def test_a_cold_cache_is_compiled_once_in_the_client_and_announced(tmp_path):
    """``pcskm run`` (here its dry run) compiles a cold cache once, and says so; then
    ``pcskm compile``, a fresh process computing every cell (as a worker) and a second
    client find every kernel in the cache. One cold cache for both commands: they compile
    through the same ``compile_kernels``."""
    cache = tmp_path / "numba-cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    first = subprocess.run(
        [sys.executable, "-m", "pcskm.runner.cli", "run", "smoke", "--only", ONLY,
         "--dry-run", "--calibration-seconds", "0", "--store", str(tmp_path / "never.zarr")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count(COMPILING) == 1, first.stderr
    assert f"cached in {cache}" in first.stderr
    assert "kernels compiled in" in first.stderr
    assert any(cache.rglob("*.nbi")) and any(cache.rglob("*.nbc"))  # index and code
    # its progress (issue 65, item 8): the steps, one per (algorithm, init) of the selection
    # (here one), and the kernels compiled, each of which Numba indexes in one *.nbi file
    assert "in 1 steps, one per algorithm and init" in first.stderr
    kernels = len(list(cache.rglob("*.nbi")))
    assert f"compiling: 1 of 1 steps done (LKM, dkm++), {kernels} kernels compiled" \
        in first.stderr, first.stderr

    compiled = subprocess.run(
        [sys.executable, "-m", "pcskm.runner.cli", "compile", "smoke", "--only", ONLY],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert compiled.returncode == 0, compiled.stderr
    assert f"in the Numba cache {cache};" in compiled.stdout
    assert COMPILING not in compiled.stderr  # everything found in the cache
    assert not list(tmp_path.glob("*.zarr"))  # no store made by either

    then = subprocess.run([sys.executable, "-c", WORKER], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=600)
    assert then.returncode == 0, then.stderr
    found = json.loads(then.stdout.strip().splitlines()[-1])
    assert found["tasks"] > 1
    assert found["worker_compiled"] == 0  # a fresh process loads every kernel from the cache
    assert COMPILING not in then.stderr  # nor does a second client say it compiles


def test_the_client_says_when_its_workers_compile(tmp_path):
    """A worker started outside pcskm (here a local cluster whose workers have an empty
    NUMBA_CACHE_DIR of their own, reached with --scheduler) compiles the kernels: the client
    says so as soon as it starts. The run is then stopped (Ctrl-C)."""
    import signal
    import time

    from cubes import Progress, ctrl_c_as_in_a_terminal
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0",
                      env={"NUMBA_CACHE_DIR": str(tmp_path / "worker-cache")}) as cluster:
        process = subprocess.Popen(
            [sys.executable, "-m", "pcskm.runner.cli", "run", "smoke", "--only", ONLY,
             "--store", str(tmp_path / "s.zarr"), "--scheduler", cluster.scheduler_address],
            cwd=tmp_path, stderr=subprocess.PIPE, preexec_fn=ctrl_c_as_in_a_terminal)
        progress = Progress(process)
        try:
            deadline = time.monotonic() + 300
            while (COMPILING_ON_WORKERS not in progress.text() and process.poll() is None
                   and time.monotonic() < deadline):
                time.sleep(0.2)
            said = COMPILING_ON_WORKERS in progress.text()
            process.send_signal(signal.SIGINT)
            process.wait(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
        stderr = progress.join()
    assert said, stderr
    assert f"cache {tmp_path / 'worker-cache'}" in stderr, stderr
    assert "Traceback" not in stderr, stderr


def test_the_client_repeats_how_long_the_workers_have_compiled(caplog):
    """The reminder of :class:`WorkersCompiling`, with events as a worker sends them."""
    import logging
    import time

    from pcskm.runner.compiling import WorkersCompiling

    class Client:  # subscribe_topic and unsubscribe_topic of distributed.Client
        def subscribe_topic(self, topic, handler):
            self.handler = handler

        def unsubscribe_topic(self, topic):
            self.handler = None

    client = Client()
    caplog.set_level(logging.INFO, logger="pcskm")
    watch = WorkersCompiling(client, every=0.05).start()
    time.sleep(0.2)
    assert "compiling" not in caplog.text  # nothing said before a worker compiles
    client.handler((0.0, {"state": "started", "host": "node-7", "cache": "/shared/numba"}))
    time.sleep(0.3)
    client.handler((1.0, {"state": "done", "host": "node-7", "seconds": 42.0,
                          "n_compiled": 12}))
    time.sleep(0.2)
    watch.stop()
    assert caplog.text.count(COMPILING_ON_WORKERS) == 1
    assert "first: host node-7, cache /shared/numba" in caplog.text
    assert caplog.text.count("the workers have been compiling the Numba kernels for 0 s") >= 2
    assert "a worker (host node-7) compiled its kernels in 42 s" in caplog.text
    reminders = caplog.text.count("have been compiling")
    time.sleep(0.2)
    assert caplog.text.count("have been compiling") == reminders  # none after it finished


FIT = textwrap.dedent("""
    import json
    import numpy as np
    from pcskm import LloydKMeans
    from pcskm.algorithms._jit import cache_dir, watch_compiling

    X = np.random.default_rng(0).normal(size=(40, 3))
    with watch_compiling() as compiling:
        LloydKMeans(n_clusters=2, random_state=0).fit(X)
    print(json.dumps({"cache": str(cache_dir()), "compiled": compiling.n_compiled}))
""")


# In the slow suite: compiles the kernels in two fresh processes: about 20 s.
@pytest.mark.slow
def test_the_cache_is_a_per_user_folder_of_the_version_outside_the_package(tmp_path):
    """Without NUMBA_CACHE_DIR the kernels are cached in $XDG_CACHE_HOME/pcskm/numba/VERSION
    (Numba's subfolder per source folder): outside the package, so a reinstall keeps them,
    and a fresh process loads them from there; NUMBA_CACHE_DIR, when set, is used instead."""
    from importlib import metadata
    from pathlib import Path

    import pcskm

    env = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "user-cache")

    def fit(env):
        out = subprocess.run([sys.executable, "-c", FIT], capture_output=True, text=True,
                             env=env, cwd=tmp_path, timeout=600)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.splitlines()[-1])

    first, second = fit(env), fit(env)
    folder = Path(first["cache"])
    assert folder.parent == tmp_path / "user-cache" / "pcskm" / "numba" / metadata.version(
        "pcskm")
    assert not folder.resolve().is_relative_to(Path(pcskm.__file__).resolve().parent)
    assert any(folder.glob("*.nbi")) and any(folder.glob("*.nbc"))
    assert first["compiled"] > 0 and second == {**first, "compiled": 0}
    explicit = subprocess.run(  # where the kernels would be cached: nothing to compile
        [sys.executable, "-c", "from pcskm.algorithms._jit import cache_dir; print(cache_dir())"],
        capture_output=True, text=True, env={**env, "NUMBA_CACHE_DIR": str(tmp_path / "explicit")},
        cwd=tmp_path, timeout=600)
    assert explicit.returncode == 0, explicit.stderr
    assert Path(explicit.stdout.strip()).parent == tmp_path / "explicit"


def test_compiling_says_how_far_it_is_while_a_step_compiles(monkeypatch, caplog, tmp_path):
    """Issue 65, item 8: two steps of 0.5 s each, compiling (a stand-in for Numba's
    events): while a step runs the client says, every 0.1 s, the steps done, the one under
    way and the kernels compiled; after each, the steps done of all."""
    import contextlib
    import time
    from types import SimpleNamespace

    from pcskm.runner import compiling

    @contextlib.contextmanager
    def watch(on_first):
        on_first()
        yield SimpleNamespace(n_compiled=3, kernels={"one", "two"})

    monkeypatch.setattr(compiling, "watch_compiling", watch)
    monkeypatch.setattr(compiling, "warm_up_tasks", lambda tasks: tasks)
    monkeypatch.setattr(compiling, "WarmCache", functools.partial(compiling.WarmCache,
                                                                  folder=tmp_path))
    monkeypatch.setattr(compiling.cells, "evaluate", lambda task: time.sleep(0.5))
    steps = [SimpleNamespace(settings=[SimpleNamespace(algorithm=name, init="dkm++")])
             for name in ("LKM", "PCSKM")]
    with caplog.at_level("INFO", logger="pcskm"):
        compiling.compile_kernels(steps, every=0.1)
    text = caplog.text
    assert "in 2 steps, one per algorithm and init" in text
    assert "compiling: 0 of 2 steps done, step 1 (LKM, dkm++) under way, 2 kernels compiled" \
        in text
    assert "compiling: 1 of 2 steps done (LKM, dkm++), 2 kernels compiled" in text
    assert "compiling: 1 of 2 steps done, step 2 (PCSKM, dkm++) under way" in text
    assert "compiling: 2 of 2 steps done (PCSKM, dkm++), 2 kernels compiled" in text
    assert text.index("1 of 2 steps done (LKM") < text.index("step 2 (PCSKM, dkm++) under way")


def test_a_warm_cache_is_recorded_and_its_kernels_not_loaded_again(monkeypatch, tmp_path):
    """The client loads the smoke plan's kernels once (here from the suite's cache) and
    records the index files Numba then has for them; a second client evaluates nothing.
    An index file rewritten since (a kernel compiled again), or one missing, or a step not
    recorded, makes the client load them again. Stand-in index files in a folder of the test
    take the place of Numba's, which the test must not touch."""
    from pcskm.algorithms._jit import cache_dir, loaded_index_files
    from pcskm.experiments.spec import load_spec
    from pcskm.runner import compiling
    from pcskm.runner.store import CubeView
    from pcskm.runner.tasks import parse_only, plan

    spec = load_spec("smoke")
    tasks = plan(spec, CubeView.planned(tmp_path / "never.zarr", spec)).tasks
    evaluated = []
    evaluate = compiling.cells.evaluate
    monkeypatch.setattr(compiling.cells, "evaluate",
                        lambda task: evaluated.append(task) or evaluate(task))
    monkeypatch.setattr(compiling, "WarmCache", functools.partial(compiling.WarmCache,
                                                                  folder=tmp_path / "warm"))
    compiling.compile_kernels(tasks)
    steps = len(evaluated)
    assert steps == len(compiling.warm_up_tasks(tasks)) >= 4
    real = loaded_index_files()
    assert real and all(path.endswith(".nbi") and Path(path).is_file() for path in real)
    assert str(cache_dir()) in {str(Path(path).parent) for path in real}
    assert compiling.compile_kernels(tasks) == 0.0
    assert len(evaluated) == steps  # a second client: nothing evaluated

    stand_ins = []
    for number, path in enumerate(real):
        stand_in = tmp_path / "index" / f"{number}-{Path(path).name}"
        stand_in.parent.mkdir(exist_ok=True)
        stand_in.write_bytes(b"index")
        stand_ins.append(str(stand_in))
    monkeypatch.setattr(compiling, "loaded_index_files", lambda: stand_ins)
    monkeypatch.setattr(compiling, "WarmCache", functools.partial(compiling.WarmCache,
                                                                  folder=tmp_path / "other"))
    compiling.compile_kernels(tasks)  # records the stand-ins
    assert len(evaluated) == 2 * steps
    assert compiling.compile_kernels(tasks) == 0.0
    assert len(evaluated) == 2 * steps

    Path(stand_ins[0]).write_bytes(b"a new index")  # rewritten, as a compilation does
    compiling.compile_kernels(tasks)
    assert len(evaluated) == 3 * steps
    compiling.compile_kernels(tasks)
    assert len(evaluated) == 3 * steps  # recorded again
    Path(stand_ins[-1]).unlink()
    compiling.compile_kernels(tasks)
    assert len(evaluated) == 4 * steps

    Path(stand_ins[-1]).write_bytes(b"index")
    lkm = plan(spec, CubeView.planned(tmp_path / "never.zarr", spec),
               selection=parse_only(ONLY)).tasks
    compiling.compile_kernels(lkm)
    assert len(evaluated) == 4 * steps + 1  # (LKM, dkm++) alone, recorded alone
    compiling.compile_kernels(tasks)
    assert len(evaluated) == 5 * steps + 1  # the other steps were not recorded
    assert compiling.compile_kernels(lkm) == compiling.compile_kernels(tasks) == 0.0
    assert len(evaluated) == 5 * steps + 1


def test_the_warm_cache_record_is_kept_per_cpu_type_cache_folder_and_code(monkeypatch,
                                                                           tmp_path):
    """A home folder shared by a login node and compute nodes of another CPU type: the
    record of one is not the other's, nor that of another cache folder."""
    from pcskm.algorithms._jit import cache_target
    from pcskm.runner import compiling

    here = compiling.WarmCache(folder=tmp_path).path
    assert cache_target().split()[1]  # the CPU name Numba compiles for
    monkeypatch.setattr(compiling, "cache_target", lambda: "x86_64-unknown-linux-gnu other")
    there = compiling.WarmCache(folder=tmp_path).path
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "shared"))
    shared = compiling.WarmCache(folder=tmp_path).path
    assert len({here, there, shared}) == 3

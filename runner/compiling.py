"""Compiling the Numba kernels once per machine, in the client, before the workers start.

A process that calls a kernel missing from Numba's on-disk cache compiles it
(:mod:`pcskm.algorithms._jit`). On a fresh installation every worker of a local cluster used to
compile the same kernels at the same time, silently, before its first result. Instead the
client evaluates one cell of every (algorithm, init) of the plan, on the data set of the plan
with the fewest points (for a user estimator, only the built-in init that gives its centres:
its own code runs on the workers alone), and says so while Numba compiles; the workers of a
local cluster run on the same machine with the same cache folder, and load the kernels from
it.

Workers started otherwise (``--scheduler``, ``--cluster``) compile what their own cache lacks:
each reports it to the client (:func:`reported_to_client`), which says so, and for how long
(:class:`WorkersCompiling`). ``pcskm compile`` fills a cache once (docs/guide/hpc.md).
"""

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import platform
import threading
import time
from pathlib import Path

from pcskm.algorithms._jit import (
    cache_dir,
    cache_target,
    default_cache_folder,
    loaded_index_files,
    watch_compiling,
)
from pcskm.experiments import cells
from pcskm.experiments.cells import Block, Task

from .calibrate import code_digest, keep_json, kept_folder

log = logging.getLogger("pcskm")


def warm_up_tasks(tasks):
    """One task of one cell (first run, first fold) per (algorithm, init) of ``tasks``, on the
    data set with the fewest points among those the plan runs it on."""
    chosen = {}  # (algorithm, init) -> (n_samples, task)
    for task in tasks:
        n_samples = cells.dataset(task.settings[0].data_ref, task.settings[0].data_dir).n_samples
        block = task.blocks[0]
        one_cell = (Block(block.kind, block.percent, block.runs[:1]),)
        for setting in map(stand_in, task.settings):
            key = (setting.algorithm, setting.init)
            if key not in chosen or n_samples < chosen[key][0]:
                chosen[key] = (n_samples, Task((setting,), one_cell, folds=task.fold_list[:1]))
    return [task for _, task in chosen.values()]


def stand_in(setting):
    """The part of ``setting`` that runs pcskm's kernels: the setting itself for a built-in
    estimator; for a user estimator, the LKM setting whose init gives its initial centres
    (:class:`pcskm.experiments.cells.UserFitter`). The user's own ``fit`` is not called in
    the client's process: it may take long, exhaust the memory, or end its process (a run
    on batch jobs times one of its cells in a forked child, :mod:`.user_cells`)."""
    if not setting.is_user:
        return setting
    return dataclasses.replace(setting, algorithm="LKM", estimator="LKM", params=(),
                               constraints="use")


PROGRESS_SECONDS = 15.0  # while a step compiles, how often the client says how far it is


def compile_kernels(tasks, every=PROGRESS_SECONDS):
    """Compile (or load from the cache) every kernel the cells of ``tasks`` use, in this
    process, one step per (algorithm, init) (:func:`warm_up_tasks`); logs when compiling
    starts, then after each step and every ``every`` seconds within one the steps done of
    all and the kernels compiled so far, and how long it took. Nothing is done when a
    :class:`WarmCache` record says that the cache already holds the kernels of every step
    (loading them here cost a run's client 2-3 s of a core). Returns the seconds spent."""
    start = time.perf_counter()
    steps = warm_up_tasks(tasks)
    warm = WarmCache()
    names = [_step_name(task) for task in steps]
    if warm.holds(names):
        return 0.0
    at = [0, None]  # the steps done, the setting of the step under way

    def announce():
        log.info("compiling the Numba kernels for this machine, once (it takes a minute or "
                 "two, in %d steps, one per algorithm and init; they are cached in %s for the "
                 "workers and for later runs)", len(steps), cache_dir() or "Numba's cache folder")

    def remind():
        if compiling.n_compiled and at[1] is not None:
            log.info("compiling: %d of %d steps done, step %d (%s, %s) under way, %d kernels "
                     "compiled, %.0f s", at[0], len(steps), at[0] + 1, *at[1],
                     len(compiling.kernels), time.perf_counter() - start)

    with watch_compiling(announce) as compiling, _every(every, remind):
        for number, task in enumerate(steps, 1):
            setting = task.settings[0]
            at[1] = (setting.algorithm, setting.init)
            cells.evaluate(task)
            at[0] = number
            if compiling.n_compiled:
                log.info("compiling: %d of %d steps done (%s, %s), %d kernels compiled, %.0f s",
                         number, len(steps), *at[1], len(compiling.kernels),
                         time.perf_counter() - start)
        at[1] = None
    seconds = time.perf_counter() - start
    if compiling.n_compiled:
        log.info("kernels compiled in %.0f s", seconds)
    warm.add(names)
    return seconds


def _step_name(task):
    setting = task.settings[0]
    return f"{setting.algorithm} {setting.init}"


class WarmCache:
    """A record that the Numba cache holds the kernels of the warm-up steps (algorithm,
    init) a process has loaded or compiled: the steps and the size and modification time of
    every index file of the kernels it then had (:func:`loaded_index_files`), in one JSON
    file of the user cache folder per code version, cache folder and CPU type (a home
    folder is often shared by the login and compute nodes of a cluster, and Numba keeps
    each CPU type's kernels apart: :func:`cache_target`). The cache holds them
    while every one of those files is unchanged: Numba rewrites a kernel's index when it
    compiles it, and one deleted by hand is missing. If the record errs anyway (a kernel
    needed with argument types no step used), the workers compile it, and the client says
    so (:class:`WorkersCompiling`)."""

    def __init__(self, folder=None):
        where = os.environ.get("NUMBA_CACHE_DIR") or str(default_cache_folder())
        name = hashlib.sha256(f"{where} {cache_target()} {code_digest()}".encode())
        name = name.hexdigest()[:32]
        self.path = Path(folder or kept_folder().parent / "warm") / f"{name}.json"

    def _read(self):
        with contextlib.suppress(OSError, ValueError):
            record = json.loads(self.path.read_text())
            if isinstance(record, dict):
                return record
        return {"steps": [], "files": {}}

    def holds(self, steps):
        """Whether the record has every one of ``steps`` and its files are unchanged."""
        record = self._read()
        return bool(record["files"]) and set(steps) <= set(record["steps"]) and _unchanged(
            record["files"])

    def add(self, steps):
        """Record ``steps`` as loaded, with the index files of the kernels this process has;
        a record whose files changed since is started afresh (a file that cannot be written
        records nothing)."""
        try:
            files = {path: _stamp(path) for path in loaded_index_files()}
        except OSError:
            return
        if files:
            record = self._read()
            if not _unchanged(record["files"]):
                record = {"steps": [], "files": {}}
            keep_json(self.path, {"steps": sorted({*record["steps"], *steps}),
                                  "files": {**record["files"], **files}})


def _stamp(path):
    found = os.stat(path)
    return [found.st_size, found.st_mtime_ns]


def _unchanged(files):
    """Whether every file of ``files`` (path -> :func:`_stamp`) is there with its stamp."""
    try:
        return all(_stamp(path) == stamp for path, stamp in files.items())
    except OSError:
        return False


@contextlib.contextmanager
def _every(seconds, action):
    """Inside the block, ``action()`` every ``seconds`` in a thread of its own."""
    stopped = threading.Event()

    def loop():
        while not stopped.wait(seconds):
            action()

    thread = threading.Thread(target=loop, name="pcskm-compile-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stopped.set()
        thread.join()


TOPIC = "pcskm-compiling"  # the Dask events of the workers' compilations


@contextlib.contextmanager
def reported_to_client():
    """On a Dask worker, a Numba compilation inside the block (a kernel missing from the
    worker's cache) is logged as events of ``TOPIC`` for the client: ``started`` at the first
    kernel compiled, ``done`` with the seconds it took when the block ends. Elsewhere, nothing."""
    from distributed import get_worker

    try:
        worker = get_worker()
    except ValueError:  # not in a worker's task
        yield
        return
    started = []

    def announce():
        started.append(time.monotonic())
        worker.log_event(TOPIC, {"state": "started", "host": platform.node(),
                                 "cache": str(cache_dir() or "Numba's cache folder")})

    with watch_compiling(announce) as compiling:
        try:
            yield
        finally:
            if started:
                worker.log_event(TOPIC, {"state": "done", "host": platform.node(),
                                         "seconds": time.monotonic() - started[0],
                                         "n_compiled": compiling.n_compiled})


class WorkersCompiling:
    """On the client, between :meth:`start` and :meth:`stop`: says when the first worker
    starts compiling the Numba kernels (:func:`reported_to_client`), every ``every`` seconds
    for how long so far, and when the first worker has finished."""

    def __init__(self, client, every=30.0):
        self.client, self.every = client, every
        self.started = self.finished = None
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._remind, name="pcskm-compiling",
                                        daemon=True)

    def start(self):
        self.client.subscribe_topic(TOPIC, self._on_event)
        self._thread.start()
        return self

    def stop(self):
        self._stopped.set()
        with contextlib.suppress(Exception):  # a lost scheduler: nothing left to unsubscribe
            self.client.unsubscribe_topic(TOPIC)

    def _on_event(self, event):
        message = event[1]
        if message["state"] == "started" and self.started is None:
            self.started = time.monotonic()
            log.info("the workers are compiling the Numba kernels, which are not in their "
                     "cache (first: host %s, cache %s); results wait for it, a minute or more. "
                     "A shared cache filled once by `pcskm compile` avoids it "
                     "(docs/guide/hpc.md)", message["host"], message["cache"])
        elif message["state"] == "done" and self.finished is None:
            self.finished = time.monotonic()
            log.info("a worker (host %s) compiled its kernels in %.0f s", message["host"],
                     message["seconds"])

    def _remind(self):
        while not self._stopped.wait(self.every):
            if self.started is not None and self.finished is None:
                log.info("the workers have been compiling the Numba kernels for %.0f s",
                         time.monotonic() - self.started)

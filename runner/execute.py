"""Running tasks on a Dask cluster: the workers compute and write, the client marks done.

The client submits every task in the plan's order (data set by data set,
:func:`pcskm.runner.tasks.in_writing_order`), each with where its results go
(:class:`pcskm.runner.store.writer.TaskTarget`). The worker computes the task, writes its
chunks into the store and returns a small receipt (:func:`compute_and_write`); the client
marks done the blocks of the receipts it has received every minute and when the run ends,
however it ends (:class:`pcskm.runner.store.writer.DoneMarks`; docs/guide/hpc.md, How the
workers write). What a worker writes into is the location's
(:meth:`pcskm.runner.store.backends.folder.Folder.for_workers`): a folder every worker mounts at the
path the client gives, or a fork of the run's Icechunk session that the worker writes with
its own credentials and hands back in the receipt. The workers connected when the run starts
are checked before any task is submitted, and every task checks it before computing. SIGINT
and SIGTERM received while the client takes a receipt or marks done are held until it is
done. The summary measures the scheduling overhead as 1 - (compute time reported by the
tasks) / (worker time available).
"""

import contextlib
import errno
import hashlib
import logging
import math
import os
import platform
import shlex
import signal
import subprocess
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from pcskm.experiments import DataNotFoundError, cells

from .overdue import Parts, describe
from .progress import Progress
from .store import (
    DoneMarks,
    StoreNotWritable,
    StoreUnreachable,
    task_target,
    where,
    write_task,
)
from .store.notes import process_start
from .task_clock import TaskClock
from .tasks import fits, format_only, task_key

log = logging.getLogger("pcskm")


@dataclass
class RunSummary:
    n_tasks: int
    n_written: int = 0
    n_cells: int = 0
    n_fits: int = 0
    n_failed_fits: int = 0  # fits written with a failed status (F = NaN)
    wall_seconds: float = 0.0
    compute_seconds: float = 0.0
    worker_seconds: float = 0.0  # integral of the number of connected workers over time
    write_seconds: float = 0.0  # time the workers spent writing their tasks' chunks
    mark_seconds: float = 0.0  # time the client spent marking done
    max_workers: int = 0  # most workers connected at once
    errors: list = field(default_factory=list)  # (task key, message)
    interrupted: bool = False  # stopped (SIGINT, SIGTERM) before every task was written

    @property
    def complete(self):
        """Every task written."""
        return self.n_written == self.n_tasks

    @property
    def efficiency(self):
        """Compute time over worker time: 1 minus the overhead of scheduling, transfer,
        the workers' writing and idle workers."""
        return self.compute_seconds / self.worker_seconds if self.worker_seconds else float("nan")

    def describe(self):
        rate = self.n_cells / self.wall_seconds if self.wall_seconds else 0.0
        busy = (f"workers busy computing {100 * self.efficiency:.1f} % of their time"
                if math.isfinite(self.efficiency) else "no worker started")
        return (f"{self.n_written} of {self.n_tasks} tasks written ({self.n_cells} cells, "
                f"{self.n_fits} fits, {self.n_failed_fits} of them failed) in "
                f"{self.wall_seconds:.1f} s: {rate:.1f} cells/s; "
                f"{busy}; the workers' writing took {self.write_seconds:.1f} s, the "
                f"client's marking done {self.mark_seconds:.1f} s")


@contextlib.contextmanager
def held_signals():
    """Hold SIGINT and SIGTERM inside the block; deliver them (once) when it ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = []
    previous = {sig: signal.signal(sig, lambda signum, frame: received.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if received:
            signal.raise_signal(received[0])


WORKER_TIMEOUT = 600.0  # seconds without a worker before a run stops (not for --cluster)


class NoWorkers(ConnectionError):
    """No Dask worker has been connected for the run's worker timeout."""


class WorkerWatch:
    """The number of workers connected to the scheduler, asked every ``every`` seconds
    (``Client.nthreads``: the count the client caches is not refreshed when every worker is
    gone). With none connected, :meth:`count` logs "waiting for workers: none connected for
    N s" every ``report_every`` seconds (``queued``: adds the batch jobs waited for and their
    queue state, :func:`pcskm.runner.clusters.queued_jobs`, or that they may be queued) and,
    after ``timeout`` seconds (``math.inf``: never), raises :class:`NoWorkers`."""

    def __init__(self, client, timeout, *, every=1.0, report_every=60.0, queued=False):
        self.client, self.timeout, self.every, self.queued = client, timeout, every, queued
        self.cluster = getattr(client, "cluster", None)  # None for a --scheduler client
        self.report_every = min(report_every, timeout / 2)
        self.n_workers, self.asked, self.since, self.reported = 0, None, None, None

    def count(self):
        now = time.monotonic()
        if self.asked is not None and now - self.asked < self.every:
            return self.n_workers
        self.asked, self.n_workers = now, len(self.client.nthreads())
        if self.n_workers:
            self.since = None
            return self.n_workers
        if self.since is None:
            self.since = self.reported = now
        waited = now - self.since
        if now - self.reported >= self.report_every:
            self.reported = now
            log.warning("waiting for workers: none connected for %.0f s%s", waited,
                        self._queue() if self.queued else "")
        if waited >= self.timeout:
            raise NoWorkers(f"no Dask worker has been connected for {waited:.0f} s (the limit "
                            f"set by --worker-timeout, {self.timeout:g} s); stopped")
        return 0

    def _queue(self):
        from .clusters import queued_jobs

        jobs = queued_jobs(self.cluster)
        return f" ({jobs} queued)" if jobs else " (batch jobs may be queued)"


def _wait_for_a_worker(client, watch):
    """Wait until a worker has connected (``watch``: a :class:`WorkerWatch`, which reports
    the wait and ends it after its timeout); a batch job that was not accepted
    (:func:`pcskm.runner.clusters.submission_failure`) ends the wait with a
    :class:`ClusterStartError` within ``watch.every`` seconds."""
    from distributed.client import TimeoutError as DaskTimeoutError

    from .clusters import submission_failure

    while not watch.count():
        failure = submission_failure(watch.cluster)
        if failure is not None:
            raise ClusterStartError(f"job submission failed: {failure}")
        with contextlib.suppress(TimeoutError, DaskTimeoutError):
            client.wait_for_workers(1, timeout=watch.every)


def _arrivals(completed, look, poll=0.05):
    """The futures of ``completed`` as they finish; while none is ready, ``look()`` is
    called (it counts the workers, so that a run without workers says so and stops after the
    watch's timeout, and looks at the tasks' running times)."""
    while True:
        if completed.has_ready():
            yield next(completed)
        elif completed.is_empty():
            return
        else:
            look()
            time.sleep(poll)


class WorkersLackData(DataNotFoundError):
    """The Dask workers cannot read the data files that the client read: raised once, on the
    first task that meets it, and not counted as a failed task (docs/guide/hpc.md)."""


def evaluate_on_worker(task):
    """:func:`pcskm.experiments.cells.evaluate` on a worker; a data file it cannot find is a
    :class:`WorkersLackData` naming this worker's host, the folder it looked in and the two
    fixes (the client found the files when it planned the run)."""
    from .compiling import reported_to_client

    try:
        with reported_to_client():
            return cells.evaluate(task)
    except DataNotFoundError:
        from pcskm.experiments import resolve_data_dir

        setting = task.settings[0]
        folder, how = resolve_data_dir(setting.data_dir)
        raise WorkersLackData(
            f"the Dask workers cannot see the data folder: on worker host {platform.node()} "
            f"the files of {setting.dataset} are not in {folder} ({how}), while the client "
            "found them. Either give --data-dir a folder every worker can read at that path, "
            "or set PCSKM_DATA in the workers' environment (docs/guide/hpc.md)") from None


class WorkersLackStore(StoreNotWritable):
    """A Dask worker cannot write the store (a folder not mounted at the client's path, a
    repository without the credentials): raised before any compute where it can be seen then
    (docs/guide/hpc.md, How the workers write; "The store on object storage")."""


def check_workers_reach(client, place):
    """Raise :class:`WorkersLackStore` unless every worker connected to ``client`` can write
    ``place`` (what the location gives the workers: its ``problem()``, run on each). A
    worker lost during the check is not a problem of the store: the run's worker watch
    counts the workers (:class:`WorkerWatch`)."""
    answers = client.run(place.problem, on_error="return").values()
    problems = [p for p in answers if isinstance(p, str)]
    if problems:
        raise WorkersLackStore(problems[0])


def compute_and_write(task, target, place):
    """On a worker: check that ``place`` (what the store's location gives the workers,
    :meth:`pcskm.runner.store.backends.folder.Folder.for_workers`) can be written here, compute
    ``task`` (:func:`evaluate_on_worker`), write its chunks into it at ``target``
    (:func:`pcskm.runner.store.writer.write_task`) and return the receipt, with what the
    client publishes (``place.written(group)``: the files staged, or the fork, under the
    run's token; :mod:`pcskm.runner.store.fencing`)."""
    problem = place.problem()
    if problem:
        raise WorkersLackStore(problem)
    result = evaluate_on_worker(task)
    try:
        with place.writing(task.dataset) as group:
            receipt = write_task(group, result, target)
            written = place.written(group)
    except StoreNotWritable as error:
        raise WorkersLackStore(str(error)) from None
    return replace(receipt, written=written)


def task_failure(error, expected=None, wall_seconds=None, memory_restarts=None):
    """What a failed task's ``error`` says: a worker that died while running it (Dask's
    ``KilledWorker``: its process ended, killed, out of memory, by the task's own code, or at
    its batch job's end, on every attempt) in one line of :func:`_lost_message` (``expected``:
    the task's expected one-core seconds; ``wall_seconds``: the batch jobs' wall time), or of
    :func:`_memory_message` where its nanny restarted the last of those workers past its
    memory limit (``memory_restarts``, :func:`memory_restarts`); else the exception's type and
    message."""
    from distributed.scheduler import KilledWorker

    if isinstance(error, KilledWorker):
        times, worker = error.allowed_failures + 1, error.last_worker
        rss = (memory_restarts or {}).get(getattr(worker, "address", None))
        if rss is not None:
            return _memory_message(times, expected, rss, worker.memory_limit)
        return _lost_message(times, expected, wall_seconds)
    return "".join(traceback.format_exception_only(type(error), error)).strip()


def memory_restarts(client):
    """``{worker address: bytes}`` of the workers that their nanny restarted past the memory
    limit, with the memory each held then (the nannies' ``worker-restart-memory`` events, kept
    by the scheduler); empty if the scheduler cannot say."""
    try:
        events = client.get_events("worker-restart-memory")
    except Exception:  # the scheduler gone: the failure is named without the cause
        return {}
    return {event["worker"]: event["rss"] for _, event in events}


def run_tasks(client, cube, tasks, *, progress=True, on_result=None, summary=None,
              worker_timeout=WORKER_TIMEOUT, queued=False, weights=None, task_timeout=None,
              wall_seconds=None):
    """Compute ``tasks`` on ``client``'s cluster, each worker writing its tasks' chunks into
    ``cube`` (:func:`compute_and_write`), and mark done the blocks of every receipt
    (:class:`pcskm.runner.store.writer.DoneMarks`). ``on_result(receipt, summary)`` is called
    after each receipt is taken. A worker that cannot write the store stops the run with
    :class:`WorkersLackStore` before it computes anything. With no worker connected for
    ``worker_timeout`` seconds (``math.inf``: no limit; ``queued``: batch jobs, which may wait
    in a queue), it stops with :class:`NoWorkers` (:class:`WorkerWatch`). Returns the
    :class:`RunSummary` (``summary`` if given, filled as receipts arrive, so that the caller
    knows what was written however this ends); a KeyboardInterrupt (SIGINT, or SIGTERM turned
    into one by the CLI) cancels the remaining tasks and returns with ``interrupted`` set.
    ``weights``: the tasks' relative costs, by which the progress weighs the time left
    (:func:`pcskm.runner.calibrate.task_weights`; by default their cells). ``task_timeout``:
    the seconds a task may run (None: no limit); a task past it is cancelled and its worker
    restarted (:func:`_end_overdue`); one of several settings runs again one setting at a
    time (:mod:`.overdue`), and a task of one setting past it has its cells left missing and
    is counted in ``summary.errors``; the progress names a task far slower than expected
    (:class:`pcskm.runner.task_clock.TaskClock`) and counts the workers lost and the tasks
    restarted. A task whose workers kept dying (Dask's KilledWorker) is counted in
    ``summary.errors`` with one line naming the cause (:func:`task_failure`;
    ``wall_seconds``: the batch jobs' wall time, if any)."""
    from distributed import as_completed

    from .clusters import worker_lifetime
    from .compiling import WorkersCompiling

    summary = summary if summary is not None else RunSummary(n_tasks=len(tasks))
    if not tasks:
        return summary
    place = where(cube.path).for_workers()  # after the last commit: a repository forks here
    if client.nthreads():
        check_workers_reach(client, place)
    marks = DoneMarks(cube)
    compiling = WorkersCompiling(client).start()  # before a worker can start a task
    token = uuid.uuid4().hex[:8]
    weights = [task.n_cells for task in tasks] if weights is None else list(weights)
    by_key, weight_of, futures = {}, {}, []
    for i, task in enumerate(tasks):
        key = task_key(task, i, token)
        by_key[key] = task
        weight_of[key] = weights[i]
        futures.append(client.submit(compute_and_write, task, task_target(cube, task),
                                     place, key=key, pure=False, priority=len(tasks) - i))
    watch = WorkerWatch(client, worker_timeout, queued=queued)
    try:
        _wait_for_a_worker(client, watch)
    except BaseException:
        compiling.stop()
        raise
    shown = Progress(sum(task.n_cells for task in tasks), work=sum(weights), bar=progress)
    clock = TaskClock(client, weight_of, task_timeout,
                      long_loss_seconds=(0.0 if wall_seconds is None
                                         else worker_lifetime(wall_seconds)[0] / 2))
    future_of = {future.key: future for future in futures}
    done_before = cube.done_cells()
    start = last = time.perf_counter()
    workers = summary.max_workers = watch.count()
    shown.workers(workers)

    parts = Parts()

    def start_next(key):
        """Submit the part that follows ``key`` (:mod:`.overdue`), if any, once what the
        parts before it wrote is published and marked done."""
        following = parts.after(key)
        if following is None:
            return
        part_key, part, weight = following
        marks.write()
        by_key[part_key], weight_of[part_key] = part, weight
        future = client.submit(compute_and_write, part, task_target(cube, part), place,
                               key=part_key, pure=False, priority=len(tasks))
        futures.append(future)
        future_of[part_key] = future
        completed.add(future)

    def look():
        shown.workers(watch.count())
        shown.lost(clock.n_lost, clock.n_restarted)
        for key, worker, seconds in clock.overdue():
            task = by_key[key]
            ended = _end_overdue(client, future_of[key], worker, seconds, task_timeout)
            if len(task.settings) > 1:
                n_parts = parts.split(key, task, weight_of[key])
                summary.n_tasks += n_parts - 1  # the task is its parts now
                log.warning("task %s %s; its %d settings run again one at a time, so that "
                            "those that end keep their cells", key, ended, n_parts)
            else:
                message = f"({describe(task.settings[0])}) {ended}"
                summary.errors.append((key, message))
                log.error("task %s %s", key, message)
                shown.finished(task.n_cells, work=weight_of[key], failed=True)
            start_next(key)
        for key, times in clock.given_up():
            client.cancel(future_of[key])
            message = _lost_message(times, clock.expected(key), wall_seconds)
            summary.errors.append((key, message))
            log.error("task %s: %s", key, message)
            shown.finished(by_key[key].n_cells, work=weight_of[key], failed=True)
            start_next(key)
        shown.slow(clock.slow())

    nanny, quiet = logging.getLogger("distributed.nanny"), _QuietRestarts()
    nanny.addFilter(quiet)
    try:
        completed = as_completed(futures)
        for future in _arrivals(completed, look):
            if future.key in clock.ended:  # cancelled at the time limit: counted then
                continue
            task = by_key[future.key]
            now, count = time.perf_counter(), watch.count()
            summary.worker_seconds += (workers + count) / 2 * (now - last)  # trapezoid
            last, workers = now, count
            summary.max_workers = max(summary.max_workers, count)
            shown.workers(count)
            if future.status == "lost":  # its worker died after computing it: recomputed
                completed.add(future)
                continue
            if future.status == "finished":
                try:
                    receipt = future.result()
                except Exception:
                    if future.status not in ("lost", "pending"):
                        raise
                    completed.add(future)  # lost while being fetched: wait for the rerun
                    continue
                began = time.perf_counter()
                with held_signals():  # a task shown as finished is one marked done
                    shown.finished(task.n_cells, work=weight_of[future.key])
                    marks.take(receipt)
                    summary.n_cells += receipt.n_cells
                summary.mark_seconds += time.perf_counter() - began
                shown.written(cube.done_cells() - done_before)
                summary.n_written += 1
                summary.n_fits += fits(task)
                summary.n_failed_fits += receipt.n_failed_fits
                summary.compute_seconds += receipt.seconds
                summary.write_seconds += receipt.write_seconds
                clock.finished(future.key, receipt.seconds)
                if on_result is not None:
                    on_result(receipt, summary)
                start_next(future.key)
            elif future.status == "error":
                error = future.exception()
                if isinstance(error, (WorkersLackData, WorkersLackStore, StoreUnreachable)):
                    client.cancel(futures)  # every task would fail alike
                    raise type(error)(str(error)) from None
                if isinstance(error, OSError) and error.errno == errno.ENOSPC:  # alike too
                    client.cancel(futures)
                    raise OSError(error.errno, error.strerror, error.filename) from None
                message = task_failure(error, clock.expected(future.key), wall_seconds,
                                       memory_restarts(client))
                summary.errors.append((future.key, message))
                log.error("task %s failed: %s", future.key, message)
                shown.finished(task.n_cells, work=weight_of[future.key], failed=True)
                start_next(future.key)
            else:  # cancelled: the scheduler is gone
                raise ConnectionError(f"task {future.key} was {future.status}; the Dask "
                                      "scheduler or the connection to it was lost")
            future.release()
            look()
    except KeyboardInterrupt:
        summary.interrupted = True
        client.cancel(futures)
    finally:
        compiling.stop()
        nanny.removeFilter(quiet)
        try:
            with held_signals():  # every receipt taken is marked done, however the run ends
                began = time.perf_counter()
                marks.write()
                now = time.perf_counter()
                summary.mark_seconds += now - began
                summary.worker_seconds += workers * (now - last)
                summary.wall_seconds = now - start
            shown.written(cube.done_cells() - done_before)  # the last marks included
        finally:
            shown.close()
    return summary


def _lost_message(times, expected, wall_seconds):
    """One line for a task whose workers died (or retired) ``times`` times while it ran
    (``expected``: its expected one-core seconds, or None), in place of Dask's KilledWorker
    text: with batch jobs of ``wall_seconds``, the jobs' end is the likely cause and a longer
    wall time the remedy; else a crash or the workers' memory limit."""
    estimate = ("its expected time unknown" if expected is None
                else f"expected to take about {expected:.0f} s")
    lost = (f"the worker died while running it ({times} attempt{'s' if times != 1 else ''}; "
            f"{estimate})")
    if wall_seconds is not None:
        return (f"{lost}: the batch jobs' wall time, {wall_seconds:.0f} s, most likely ended "
                "them first. Give the jobs a longer walltime in jobqueue.yaml "
                "(docs/guide/hpc.md, Wall time); its cells stay missing")
    return (f"{lost}: a worker crash or its memory limit (the nanny restarts a worker past "
            "it); see the workers' logs, or give them more memory; its cells stay missing")


def _memory_message(times, expected, rss, limit):
    """One line for a task whose worker's nanny restarted it ``times`` times past its memory
    limit (``limit`` bytes; the last held ``rss``), in place of Dask's KilledWorker text."""
    from dask.utils import format_bytes

    estimate = ("its expected time unknown" if expected is None
                else f"expected to take about {expected:.0f} s")
    return (f"the worker ran out of memory while running it ({times} "
            f"attempt{'s' if times != 1 else ''}; {estimate}): its nanny restarted it holding "
            f"{format_bytes(rss)}, past its memory limit of {format_bytes(limit)} (Dask's "
            "distributed.worker.memory.terminate share of it). Give each worker more memory: "
            "fewer workers per machine (--workers), or a larger memory per job in "
            "jobqueue.yaml (docs/guide/hpc.md); its cells stay missing")


def _end_overdue(client, future, worker, seconds, limit):
    """End the task of ``future``, run ``seconds`` on ``worker`` past the time limit
    (``limit`` seconds): cancel it, so that it is not run again, and have the scheduler
    restart its worker (:func:`_restart_worker`), which stops the computing thread with its
    process; returns what was done, with the limit and the way to change it."""
    client.cancel(future)
    status = client.run_on_scheduler(_restart_worker, worker, RESTART_TIMEOUT).get(worker)
    return (f"ran {seconds:.0f} s, past the time limit of {limit:g} s per task "
            "(--task-timeout, or the spec's [run] task_timeout); ended, its worker "
            + {"OK": "restarted", "removed": "stopped (it has no nanny to restart it)",
               None: "gone already"}.get(status, f"not stopped ({status})"))


async def _restart_worker(worker, timeout, dask_scheduler=None):
    """On the scheduler: restart ``worker`` by its nanny (one without a nanny is stopped),
    not waiting for it to come back; ``{worker: "OK" | "removed" | "timed out"}``."""
    return await dask_scheduler.restart_workers(
        [worker], timeout=timeout, wait_for_workers=False, on_error="return",
        stimulus_id=f"pcskm-task-timeout-{time.time()}")


RESTART_TIMEOUT = 30.0  # seconds a worker's nanny has to stop it


class _QuietRestarts(logging.Filter):
    """Drops the nanny's warnings of a worker it kills and starts again (a LocalCluster's
    nannies log in the client's process): the runner names each worker it restarts."""

    def filter(self, record):
        return not record.getMessage().startswith(("Worker process still alive after",
                                                   "Restarting worker"))


class ClusterStartError(RuntimeError):
    """The Dask cluster could not be started (e.g. a worker process died while starting)."""


def run_spec(spec, store, *, client=None, cluster_options=None, selection=None, force=False,
             data_dir=None, progress=True, on_result=None, min_work=None, reuse_from=None,
             preload=(), worker_timeout=None, take_over=False, recompute_changed=False,
             from_tag=None, task_timeout=None):
    """Fill ``store`` (created or extended as needed) with ``spec``'s missing cells.

    ``preload``: Python files of user estimators (single modules) that every worker imports
    before any task (:mod:`pcskm.runner.preload`; ``pcskm run --preload``).

    With ``reuse_from`` (another store), the blocks done there are copied first
    (:func:`pcskm.runner.reuse.copy_done_blocks`) and only the rest is computed.

    Uses ``client`` if given, else opens one with ``runner.clusters.dask_client(
    **cluster_options)`` (only when there is something to compute). Returns the
    :class:`RunSummary` (``interrupted`` set if SIGINT or SIGTERM stopped it before every
    task was written), or None when nothing was missing. The run is recorded in the store
    whenever it wrote cells, however it ends. ``worker_timeout``: the seconds without a
    worker after which the run stops (:class:`NoWorkers`); ``math.inf``: never; None:
    :data:`WORKER_TIMEOUT`, no limit for batch jobs (``cluster`` in ``cluster_options``),
    which may wait in their queue for hours. ``take_over``: write a repository whose note
    names a run of another host, taken for killed (``pcskm run --take-over``,
    :meth:`pcskm.runner.store.backends.icechunk.Repository.check_free`). ``recompute_changed``: also
    compute again the done cells whose code differs from the current one (``pcskm run
    --recompute-changed``, :meth:`pcskm.runner.store.views.CubeView.changed`). ``from_tag``:
    first reset the repository's branch to the version of that run tag (``pcskm run
    --from-tag``, :meth:`pcskm.runner.store.backends.icechunk.Repository.roll_back`).
    ``task_timeout``: the seconds a task may run (``pcskm run --task-timeout``; None: the
    spec's ``[run] task_timeout``, else no limit; 0: no limit), :func:`run_tasks`.
    """
    location = where(store)  # a folder (locked) or a repository (a transaction)
    if from_tag is not None:
        before, now = location.roll_back(from_tag, take_over)
        log.warning("%s: the branch is reset to snapshot %s, the version of %s (it was at "
                    "%s); the commits after it stay in the repository under their tags",
                    location, now, from_tag, before or "a version that cannot be read")
    with location.writing(take_over):
        return _run_locked(spec, location, client, cluster_options, selection, force, data_dir,
                           progress, on_result, min_work, reuse_from, preload, worker_timeout,
                           recompute_changed, task_timeout)


def _run_locked(spec, store, client, cluster_options, selection, force, data_dir, progress,
                on_result, min_work, reuse_from, preload, worker_timeout, recompute_changed,
                task_timeout):
    from .preload import import_files
    from .store import CubeView
    from .wall_time import plan_for_jobs

    started, clock = datetime.now(UTC), time.perf_counter()
    where = cluster_options if client is None else {"client": True}
    import_files(preload)  # before the store records the estimators' provenance
    with contextlib.ExitStack() as stack:
        if client is None and _is_new(store):  # a run that fails to start leaves no store
            view = CubeView.planned(store, spec, data_dir)
            client = _start_cluster(stack, cluster_options or {}, plan_for_jobs(
                spec, view, cluster_options, preload, say=False, selection=selection,
                data_dir=data_dir, min_work=min_work).tasks)
            _check_submitted(client)
        return _prepared_run(spec, store, client, cluster_options, selection, force,
                             data_dir, progress, on_result, min_work, reuse_from, preload,
                             started, clock, where, worker_timeout, recompute_changed,
                             task_timeout)


SUBMIT_WAIT = 60.0  # seconds a new store waits for the batch system to answer a first job


def _check_submitted(client, wait=SUBMIT_WAIT, poll=0.1):
    """For batch jobs (a dask-jobqueue cluster of ``client``): wait until the batch system
    has accepted a job, or a worker has connected, or ``wait`` seconds have passed; a job it
    refused raises :class:`ClusterStartError`, before the store is created
    (docs/guide/hpc.md: a run that fails to start leaves no store)."""
    from .clusters import submission_failure

    cluster = getattr(client, "cluster", None)
    if not hasattr(cluster, "job_cls"):
        return
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        failure = submission_failure(cluster)
        if failure is not None:
            raise ClusterStartError(f"job submission failed: {failure}; nothing was created")
        jobs = list(getattr(cluster, "workers", {}).values())
        if any(getattr(job, "job_id", None) for job in jobs) or client.nthreads():
            return
        time.sleep(poll)


def _is_new(store):
    """Whether ``store`` is yet to be created (no such path, or an empty folder; no
    committed cube in a repository)."""
    return where(store).is_new()


def _prepared_run(spec, store, client, cluster_options, selection, force, data_dir, progress,
                  on_result, min_work, reuse_from, preload, started, clock, where,
                  worker_timeout, recompute_changed=False, task_timeout=None):
    """The run once the store can be created: prepare it, plan, compute (``client``, or a
    cluster of ``cluster_options`` started now, with the ``preload`` files shipped to its
    workers) and record (``where``: the cluster options, or ``{"client": True}`` for a
    client given by the caller)."""
    from .calibrate import Kept, task_weights
    from .preload import ship
    from .reuse import copy_done_blocks
    from .store import prepare
    from .wall_time import job_wall_seconds, plan_for_jobs

    cube, action = prepare(store, spec, data_dir)
    log.info("store: %s (%s)", cube.path.resolve(), action)
    if reuse_from is not None:
        copied = copy_done_blocks(cube, reuse_from)
        log.info("copied %d done cells from %s", copied, reuse_from)
    jobs = None if (where or {}).get("client") else cluster_options  # not a caller's client
    the_plan = plan_for_jobs(spec, cube, jobs, preload, selection=selection, force=force,
                             data_dir=data_dir, min_work=min_work,
                             recompute_changed=recompute_changed)
    if recompute_changed:
        log.info("%d done cells were computed by code other than the current one (pcskm "
                 "status lists the codes): computed again", the_plan.n_cells_changed)
    log.info("spec %s: %d cells %s, %d already done; computing %d cells (%d fits) in %d "
             "tasks", spec.name, the_plan.n_cells_total, the_plan.scope(),
             the_plan.n_cells_done, the_plan.n_cells, the_plan.n_fits, len(the_plan.tasks))
    if not the_plan.tasks:
        log.info("nothing to compute")
        return None
    if force:
        cube.clear_done(the_plan.tasks)
    summary = RunSummary(n_tasks=len(the_plan.tasks))
    start = run_start(spec, started, where, selection, preload)
    cube.begin_run(start)

    def record(error=None):
        """Record the run if it wrote cells or finished; else only end its note."""
        keep = summary.n_written > 0 or (error is None and not summary.interrupted)
        entry = run_entry(start, summary, time.perf_counter() - clock, error)
        try:
            with held_signals():
                cube.record_run(entry if keep else None)
        except KeyboardInterrupt:
            pass  # the record is written: nothing is left to stop

    try:
        with contextlib.ExitStack() as stack:
            if client is None:
                client = _start_cluster(stack, cluster_options or {}, the_plan.tasks)
            ship(client, preload)
            queued = bool((cluster_options or {}).get("cluster"))
            if worker_timeout is None:
                worker_timeout = math.inf if queued else WORKER_TIMEOUT
            run_tasks(client, cube, the_plan.tasks, progress=progress, on_result=on_result,
                      summary=summary, worker_timeout=worker_timeout, queued=queued,
                      weights=task_weights(the_plan.tasks, cube, spec, Kept(preload or ())),
                      task_timeout=_time_limit(task_timeout, spec),
                      wall_seconds=job_wall_seconds(jobs))
    except KeyboardInterrupt:  # while starting, computing, writing or stopping the cluster
        summary.interrupted = not summary.complete
    except BaseException as error:
        summary.interrupted = not summary.complete
        record("".join(traceback.format_exception_only(type(error), error)).strip())
        raise
    record()
    return summary


def _time_limit(task_timeout, spec):
    """The seconds a task may run: ``task_timeout`` (0: no limit), else the spec's
    ``[run] task_timeout``; None: no limit."""
    seconds = spec.task_timeout if task_timeout is None else task_timeout
    return seconds or None


def _start_cluster(stack, cluster_options, tasks):
    """Enter ``dask_client(**cluster_options)`` on ``stack`` (the Numba kernels of ``tasks``
    compiled first for a local cluster, whose workers share this machine's cache); a failure
    to start is a :class:`ClusterStartError` (nothing was computed yet)."""
    from .clusters import dask_client, is_local
    from .compiling import compile_kernels

    if is_local(**cluster_options):
        compile_kernels(tasks)
    try:
        return stack.enter_context(dask_client(**cluster_options))
    except (RuntimeError, OSError, TimeoutError) as error:
        raise ClusterStartError(
            f"the Dask cluster did not start ({type(error).__name__}: {error}); nothing "
            "was computed") from error


_PACKAGE_PATHS = ("__init__.py", "algorithms", "experiments", "runner")


def _git(root, *arguments):
    return subprocess.run(["git", "-C", str(root), *arguments], capture_output=True,
                          timeout=10).stdout


def _diff_digest(root):
    """The SHA-256 of the package's uncommitted change: ``git diff HEAD`` over its paths, then
    each untracked file under them (path and bytes, sorted by path), which the diff omits."""
    digest = hashlib.sha256(_git(root, "diff", "HEAD", "--", *_PACKAGE_PATHS))
    untracked = _git(root, "ls-files", "--others", "--exclude-standard", "-z", "--",
                     *_PACKAGE_PATHS).split(b"\0")
    for name in sorted(filter(None, untracked)):
        digest.update(b"\0" + name + b"\0" + (Path(root) / name.decode()).read_bytes())
    return digest.hexdigest()


def source_commit(root=None):
    """The git commit of this source tree (``root``: the package's folder), or None if it is
    not a git work tree (an installed wheel): ``commit`` (``+dirty`` if the package's files
    differ from it), ``commit_date`` (the commit's own date, which may be later than a run's
    start if the run began from a tree committed afterwards) and ``diff_sha256``
    (:func:`_diff_digest`, only if dirty: which uncommitted change computed the cells)."""
    root = Path(__file__).resolve().parents[1] if root is None else Path(root)
    if not (root / ".git").exists():
        return None
    try:
        commit = _git(root, "rev-parse", "HEAD").decode().strip()
        date = _git(root, "show", "-s", "--format=%cI", "HEAD").decode().strip()
        dirty = _git(root, "status", "--porcelain", "--", *_PACKAGE_PATHS).strip()
        digest = _diff_digest(root) if dirty else None
    except (OSError, subprocess.SubprocessError):
        return None
    if not commit:
        return None
    return {"commit": commit + ("+dirty" if dirty else ""), "commit_date": date or None,
            "diff_sha256": digest}


class UncommittedSource(ValueError):
    """A spec with a ``[preregistration]`` run from a package tree with uncommitted
    changes."""


def check_committed(spec, allow_uncommitted=False):
    """Refuse (:class:`UncommittedSource`) to compute a spec with a ``[preregistration]``
    from a package tree whose files differ from its commit (:func:`source_commit`): results
    meant to confirm a hypothesis must name code anyone can check out. ``allow_uncommitted``
    (``pcskm run --allow-uncommitted``): run anyway; the run records the diff's SHA-256."""
    if spec.preregistration is None or allow_uncommitted:
        return
    found = source_commit()
    if found and found["commit"].endswith("+dirty"):
        raise UncommittedSource(
            f"spec {spec.name} has a [preregistration] and the package has uncommitted "
            f"changes (commit {found['commit'][:12]}+dirty, under "
            f"{', '.join(_PACKAGE_PATHS)}): commit them first, or pass --allow-uncommitted "
            "to run anyway (the run records the diff's SHA-256); nothing was computed")


def _where(cluster_options):
    options = {k: v for k, v in (cluster_options or {}).items() if v is not None}
    if options.get("client"):
        return "a Dask client given by the caller"
    if options.get("scheduler"):
        return f"the Dask scheduler at {options['scheduler']}"
    if options.get("cluster"):
        return f"{options['cluster']} batch jobs (dask-jobqueue)"
    return "a local Dask cluster"


def run_start(spec, started, cluster_options, selection=None, preload=()):
    """Who runs what, where: the note a run leaves in the store when it begins writing
    (:meth:`pcskm.runner.store.views.Cube.begin_run`), also part of its record.
    ``spec_file`` and ``preload`` (absolute paths) say what recomputes its cells
    (``pcskm check``, the report's section "Checking cells"); ``code``, each algorithm's
    definition as ``algorithm_definitions`` records it (a user estimator's module version or
    source SHA-256), says which code computed the cells the run marks done
    (:mod:`pcskm.runner.store.provenance`); ``run_id``, drawn here, names the run: a note
    finds its own record by it (:func:`pcskm.runner.store.notes.recorded_as`), where two
    runs of one process may share every other field, down to the second they started."""
    from .clusters import machine_description
    from .preload import check_files
    from .store import versions
    from .store.fencing import new_token
    from .store.layout import algorithm_definition

    return {
        "run_id": new_token(),
        "spec": spec.name,
        "spec_file": spec.path,
        "preload": [str(file) for file in check_files(preload)],
        "selection": format_only(selection or {}) or None,  # --only; None: the whole spec
        "started": started.isoformat(timespec="seconds"),
        "where": _where(cluster_options),
        "client_host": platform.node(),
        "client_pid": os.getpid(),
        "client_start": process_start(os.getpid()),  # the PID's start: a reused PID differs
        "client_machine": machine_description(),
        "command": shlex.join(sys.argv),
        "pcskm": versions()["pcskm"],
        **(source_commit() or {"commit": None, "commit_date": None, "diff_sha256": None}),
        "code": {variant.name: algorithm_definition(variant) for variant in spec.algorithms},
    }


def run_entry(start, summary, wall_seconds, error=None):
    """What a run records in the store (``runs`` attribute): its note ``start``
    (:func:`run_start`), how long it took, what it computed, and the error that stopped it,
    if any."""
    return {
        **start,
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "wall_seconds": round(wall_seconds, 1),  # the whole run: store, plan, cluster, compute
        "compute_wall_seconds": round(summary.wall_seconds, 1),  # first task to last write
        "tasks": summary.n_written,
        "cells": summary.n_cells,
        "fits": summary.n_fits,
        "errors": len(summary.errors),
        "interrupted": summary.interrupted,
        "max_workers": summary.max_workers,
        "worker_compute_share": (round(summary.efficiency, 4)
                                 if math.isfinite(summary.efficiency) else None),
        "write_seconds": round(summary.write_seconds, 1),  # the workers' writing, summed
        "mark_seconds": round(summary.mark_seconds, 1),  # the client's marking done
        "error": error,
    }

"""Dask clusters: a LocalCluster sized to the machine, a running scheduler, or batch jobs on
an HPC scheduler through dask-jobqueue (configured the Dask way, in
``~/.config/dask/jobqueue.yaml`` or ``DASK_JOBQUEUE__<SYSTEM>__<OPTION>`` variables)."""

import contextlib
import logging
import os
import signal
import threading
import traceback
from pathlib import Path

from distributed.comm.core import CommClosedError
from distributed.diagnostics.plugin import WorkerPlugin

log = logging.getLogger("pcskm")

JOBQUEUE = {
    "slurm": "SLURMCluster",
    "pbs": "PBSCluster",
    "sge": "SGECluster",
    "lsf": "LSFCluster",
    "htcondor": "HTCondorCluster",
}


def machine_cores():
    """Cores this process may use (affinity and cgroup limits included)."""
    from dask.system import CPU_COUNT

    return CPU_COUNT


def machine_description():
    """``"AMD EPYC, 2 cores, 23.5 GiB RAM, Linux 6.1"``: what a run's wall time was measured
    on (the CPU model from /proc/cpuinfo where there is one)."""
    import platform

    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as cpuinfo:
            model = next((line.split(":", 1)[1].strip() for line in cpuinfo
                          if line.startswith("model name")), model)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{model}, {machine_cores()} cores, {memory:.1f} GiB RAM, "
            f"{platform.system()} {platform.release().split('-')[0]}")


# A worker computes in one thread while its event loop thread wakes up now and then; every
# wake takes the GIL from the computing thread, which holds it (Python and Numba code) and
# must hand it over and wait to get it back. Dask's defaults wake the loop every 10 ms for
# the statistical profiler (about 10 % of the throughput of these tasks), every 20 ms for
# the blocked-loop check ("tick"), every 100 ms to read the worker's memory and every 500 ms
# for the dashboard's system monitor: strace counted 2,200 futex calls per second in a busy
# worker, against 250 with these settings.
QUIET_WORKERS = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
}


def quiet_worker_exports():
    """``QUIET_WORKERS`` as the shell lines that set them for a batch job's worker
    (``export DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL=1s``, ...)."""
    return [f"export DASK_{key.upper().replace('.', '__').replace('-', '_')}={value}"
            for key, value in QUIET_WORKERS.items()]


@contextlib.contextmanager
def _sigint_ignored_by_children():
    """Processes started inside the block ignore SIGINT: an ignored signal stays ignored
    across ``exec``, and Python then installs no KeyboardInterrupt handler. A Ctrl-C in the
    terminal goes to the whole process group; the client stops the run and its workers, which
    would otherwise die at once, each printing a KeyboardInterrupt traceback. (A Ctrl-C in
    this short window is not seen.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def local_cluster(n_workers=None):
    """One single-threaded worker process per core (numeric code holds the GIL), with the
    event loop's periodic work spaced out (``QUIET_WORKERS``); the workers leave SIGINT to the
    client."""
    import dask
    from distributed import LocalCluster

    with dask.config.set(QUIET_WORKERS), _sigint_ignored_by_children():
        return LocalCluster(
            n_workers=n_workers or machine_cores(), threads_per_worker=1, processes=True,
            dashboard_address=":0",
        )


def jobqueue_cluster(system, jobs=None, minimum_jobs=None, maximum_jobs=None):
    """A dask-jobqueue cluster for ``system`` (slurm, pbs, sge, lsf, htcondor), configured
    from Dask's config, whose job scripts also export ``QUIET_WORKERS``. ``jobs`` keeps that
    many jobs (a lost job is replaced); otherwise the cluster adapts between
    ``minimum_jobs`` and ``maximum_jobs`` (default 1 and 1)."""
    import dask
    import dask_jobqueue

    if system not in JOBQUEUE:
        raise ValueError(f"--cluster must be one of {', '.join(JOBQUEUE)}; got {system!r}")
    prologue = dask.config.get(f"jobqueue.{system}.job-script-prologue", None) or []
    cluster = getattr(dask_jobqueue, JOBQUEUE[system])(
        job_script_prologue=[*prologue, *quiet_worker_exports()])
    if jobs is not None:
        minimum_jobs = maximum_jobs = jobs
    minimum_jobs = 1 if minimum_jobs is None else minimum_jobs
    maximum_jobs = max(minimum_jobs, 1 if maximum_jobs is None else maximum_jobs)
    # adapt, not scale: adapt replaces a job that dies or is cancelled, scale does not
    cluster.adapt(minimum_jobs=minimum_jobs, maximum_jobs=maximum_jobs)
    log.info("submitted %s worker jobs to %s (%d to %d jobs); job script:\n%s",
             system, JOBQUEUE[system], minimum_jobs, maximum_jobs, cluster.job_script())
    return cluster


def is_local(*, scheduler=None, cluster=None, **_):
    """Whether :func:`dask_client` with these options starts its workers on this machine (a
    LocalCluster)."""
    return not scheduler and not cluster


class _SchedulerClosedHeartbeat(logging.Filter):
    """Drops a worker's "Failed to communicate with scheduler during heartbeat" when the
    scheduler closed the connection (CommClosedError): the scheduler of a cluster made here
    lives in the client's process and closes a worker's connections when the run ends (or
    when it drops that worker, which then stops), and a heartbeat in flight at that moment
    fails. A heartbeat that times out (the network, a scheduler that hangs) is still logged."""

    def filter(self, record):
        return not (record.getMessage().startswith("Failed to communicate with scheduler")
                    and record.exc_info is not None
                    and isinstance(record.exc_info[1], CommClosedError))


class QuietEndOfRun(WorkerPlugin):
    """A Dask worker plugin for the normal end of an interrupted run, which the runner reports
    itself: a worker logs a warning for each running task that is cancelled ("Async
    instruction ... ended with CancelledError"), which is how an interrupted run stops its
    tasks (the runner has kept what they finished), and an error with a traceback for a
    heartbeat that meets the scheduler closing (:class:`_SchedulerClosedHeartbeat`)."""

    name = "pcskm-quiet-end-of-run"

    def setup(self, worker):
        logging.getLogger("distributed.worker.state_machine").setLevel(logging.ERROR)
        worker_log = logging.getLogger("distributed.worker")
        if not any(isinstance(f, _SchedulerClosedHeartbeat) for f in worker_log.filters):
            worker_log.addFilter(_SchedulerClosedHeartbeat())


class _CancelBeforeStart(logging.Filter):
    """Drops tornado's log of a NameError in distributed's ``sync`` (every blocking Client
    call): a Ctrl-C that lands in a call before its coroutine has started schedules a cancel
    that reads the coroutine's future before it is assigned (distributed 2026.8,
    ``distributed/utils.py``, ``sync.<locals>.cancel``), and tornado logs "NameError: cannot
    access free variable 'future'" with a traceback. The interrupt itself is handled by the
    caller; the coroutine it did not cancel is one of the client's short requests."""

    def filter(self, record):
        if record.exc_info is None or not isinstance(record.exc_info[1], NameError):
            return True
        frames = traceback.extract_tb(record.exc_info[2])
        return not (frames and frames[-1].name == "cancel"
                    and Path(frames[-1].filename).parts[-2:] == ("distributed", "utils.py"))


@contextlib.contextmanager
def _client_logs_quiet_on_interrupt():
    """:class:`_CancelBeforeStart` on tornado's callback log inside the block."""
    callbacks = logging.getLogger("tornado.application")
    quiet = _CancelBeforeStart()
    callbacks.addFilter(quiet)
    try:
        yield
    finally:
        callbacks.removeFilter(quiet)


@contextlib.contextmanager
def dask_client(*, scheduler=None, cluster=None, workers=None, jobs=None, minimum_jobs=None,
                maximum_jobs=None):
    """A connected ``distributed.Client``: to ``scheduler`` (an address) if given, else to a
    dask-jobqueue ``cluster``, else to a new LocalCluster with ``workers`` processes.

    A Ctrl-C is the way to stop a run, and what the runner reports of it is enough: the
    client does not log a cancel that came too early (:class:`_CancelBeforeStart`), and the
    workers of a cluster made here do not log the tasks cancelled when a run stops, nor a
    heartbeat cut by the scheduler closing (:class:`QuietEndOfRun`), nor, when the cluster
    closes, the workers still computing that it kills after a few seconds (distributed.nanny's
    "Worker process still alive after 4.0 seconds, killing")."""
    with _client_logs_quiet_on_interrupt():
        yield from _connected_client(scheduler, cluster, workers, jobs, minimum_jobs,
                                     maximum_jobs)


def _connected_client(scheduler, cluster, workers, jobs, minimum_jobs, maximum_jobs):
    """The generator of :func:`dask_client`: yields the client once, closes what it made."""
    from distributed import Client

    if scheduler and cluster:
        raise ValueError("give either --scheduler or --cluster, not both")
    if scheduler:
        with Client(scheduler) as client:
            log.info("connected to the Dask scheduler at %s", scheduler)
            yield client
        return
    made = (jobqueue_cluster(cluster, jobs, minimum_jobs, maximum_jobs) if cluster
            else local_cluster(workers))
    nanny = logging.getLogger("distributed.nanny")
    level = nanny.level
    try:
        with made, Client(made) as client:
            client.register_plugin(QuietEndOfRun())
            if not cluster:
                n_workers = len(made.workers)
                log.info("local Dask cluster: %d worker process%s (one thread each) on %d "
                         "cores", n_workers, "" if n_workers == 1 else "es", machine_cores())
            try:
                yield client
            finally:
                nanny.setLevel(logging.ERROR)
    finally:
        nanny.setLevel(level)


def worker_pids(client):
    """``{worker address: pid}`` of the connected workers."""
    return client.run(os.getpid)

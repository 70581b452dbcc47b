"""Dask clusters: a LocalCluster sized to the machine, a running scheduler, or batch jobs on
an HPC scheduler through dask-jobqueue (configured the Dask way, in
``~/.config/dask/jobqueue.yaml`` or ``DASK_JOBQUEUE__<SYSTEM>__<OPTION>`` variables)."""

import contextlib
import logging
import os
import signal
import subprocess
import threading
import traceback
from pathlib import Path

from distributed.comm.core import CommClosedError
from distributed.core import Status
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


class SubmissionFailed(RuntimeError):
    """A batch job was not accepted: the submit command (``sbatch``, ``qsub``, ...) is missing
    or exited with an error; the message is the command's own."""


def _checked_job_class(job_class):
    """A subclass of dask-jobqueue's ``job_class`` whose submission failures raise
    :class:`SubmissionFailed` with the submit command's own message and are kept in the
    class's ``failures`` list, which the client reads (:func:`submission_failure`): dask-jobqueue
    raises them in the cluster's event loop, where they are only logged. A job whose cancel
    command cannot run (no ``scancel`` on PATH) is kept in ``not_cancelled`` and the cluster
    closes on (:func:`report_not_cancelled`)."""

    async def _submit_job(self, script_filename):
        try:
            return await job_class._submit_job(self, script_filename)
        except OSError as error:  # FileNotFoundError: no sbatch on PATH
            message = f"cannot run {self.submit_command.split()[0]!r} ({error.strerror or error})"
        except RuntimeError as error:  # dask-jobqueue's "Command exited with non-zero ..."
            text = str(error)
            message = (text.partition("stderr:\n")[2].strip()
                       or text.partition("stdout:\n")[2].partition("stderr:")[0].strip()
                       or text.strip())
        self.failures.append("; ".join(filter(None, map(str.strip, message.splitlines()))))
        self.status = Status.failed  # closing the cluster expects a job that did not start
        raise SubmissionFailed(self.failures[-1])

    async def _close_job(cls, job_id, cancel_command):
        try:
            await job_class._close_job(job_id, cancel_command)
        except OSError as error:  # FileNotFoundError: no scancel on PATH
            cls.not_cancelled.append((job_id, cancel_command, error.strerror or str(error)))

    return type(job_class.__name__, (job_class,),
                {"_submit_job": _submit_job, "_close_job": classmethod(_close_job),
                 "failures": [], "not_cancelled": [], "__module__": __name__})


def report_not_cancelled(cluster):
    """Log, in one line, the jobs of ``cluster`` (made by :func:`jobqueue_cluster`) whose
    cancel command (``scancel``, ...) could not run when the cluster closed, and how to cancel
    them by hand; the close goes on without them (dask-jobqueue raised its FileNotFoundError)."""
    missed = getattr(getattr(cluster, "job_cls", None), "not_cancelled", None)
    if missed:
        jobs = " ".join(job for job, _, _ in missed)
        command, reason = missed[0][1], missed[0][2]
        log.warning("cannot run %r (%s): the batch jobs %s may still be queued; cancel them "
                    "by hand: %s %s", command.split()[0], reason, ", ".join(jobs.split()),
                    command, jobs)


def submission_failure(cluster):
    """The submit command's message of the first job of ``cluster`` (made by
    :func:`jobqueue_cluster`) that was not accepted, or None."""
    failures = getattr(getattr(cluster, "job_cls", None), "failures", None)
    return failures[0] if failures else None


class _SubmissionFailedLogged(logging.Filter):
    """Drops tornado's traceback of a :class:`SubmissionFailed` raised in the cluster's event
    loop: the client reports the failure itself, in one line (:func:`submission_failure`)."""

    def filter(self, record):
        return record.exc_info is None or not isinstance(record.exc_info[1], SubmissionFailed)


def queued_jobs(cluster):
    """``"jobs 1234 (PENDING, Priority), 1235 (PENDING, Priority)"``: the batch jobs of
    ``cluster`` that were accepted, with their state in the queue where the system tells it
    (Slurm's ``squeue``); None if ``cluster`` is not a dask-jobqueue cluster or has no job."""
    jobs = [job.job_id for job in list(getattr(cluster, "workers", {}).values())
            if getattr(job, "job_id", None)]
    if not jobs or not hasattr(cluster, "job_cls"):
        return None
    states = {}
    if cluster.job_cls.submit_command == "sbatch":
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(["squeue", "-h", "-j", ",".join(jobs), "-o", "%i %T %r"],
                                 capture_output=True, text=True, timeout=10).stdout
            states = {job: state.replace(" ", ", ") for job, _, state in
                      (line.strip().partition(" ") for line in out.splitlines())}
    return "jobs " + ", ".join(f"{job} ({states[job]})" if job in states else job
                               for job in jobs)


def _jobqueue_options(system):
    """The options pcskm gives dask-jobqueue's cluster for ``system`` on top of Dask's
    configuration: the job script's prologue with ``QUIET_WORKERS``, and the log folder with
    ``~`` and environment variables expanded (the batch system would take them literally).
    A configuration without ``cores`` or ``memory`` is refused with a pointer to the guide's
    example (docs/guide/hpc.md, Batch jobs)."""
    import dask

    config = dask.config.get(f"jobqueue.{system}", None) or {}
    missing = [key for key in ("cores", "memory") if config.get(key) is None]
    if missing:
        raise ValueError(
            f"--cluster {system}: the worker jobs are not configured ({' and '.join(missing)} "
            f"missing from the jobqueue: {system}: section of Dask's configuration). Write "
            "~/.config/dask/jobqueue.yaml (or a file in $DASK_CONFIG) as in the example of "
            "docs/guide/hpc.md, section 'Batch jobs: --cluster'")
    options = {"job_script_prologue": [*(config.get("job-script-prologue") or []),
                                       *quiet_worker_exports()]}
    worker_args = list(config.get("worker-extra-args") or [])
    walltime = wall_seconds(config.get("walltime"))
    if walltime is not None and not any(str(a).startswith("--lifetime") for a in worker_args):
        lifetime, stagger = worker_lifetime(walltime)
        options["worker_extra_args"] = [*worker_args, "--lifetime", f"{lifetime:.0f}s",
                                         "--lifetime-stagger", f"{stagger:.0f}s"]
    if config.get("log-directory"):
        options["log_directory"] = expand_path(config["log-directory"], "log-directory")
    return options


def wall_seconds(walltime):
    """The seconds of a batch job's wall time as dask-jobqueue's ``walltime`` gives it
    (``"00:30:00"``, ``"1:00:00"``, ``"2-00:00:00"`` with days, ``"45:00"``, ``"90"`` minutes
    as Slurm reads a bare number), or None for none."""
    if walltime in (None, ""):
        return None
    text = str(walltime).strip()
    days, _, clock = text.rpartition("-")
    try:
        parts = [float(part) for part in clock.split(":")]
        seconds = {1: lambda m: 60 * m[0], 2: lambda m: 60 * m[0] + m[1],
                   3: lambda m: 3600 * m[0] + 60 * m[1] + m[2]}[len(parts)](parts)
        return seconds + 86400 * (float(days) if days else 0.0)
    except (ValueError, KeyError):
        raise ValueError(f"walltime {walltime!r}: expected [days-]hours:minutes:seconds, "
                         "e.g. \"04:00:00\"") from None


# A worker retires before its job's wall time (the Dask worker's --lifetime): it closes
# gracefully, its finished results are in the store and the task in flight moves to another
# worker, instead of the batch system killing it mid-write. It retires LIFETIME_MARGIN of the
# wall time before the end (at least 10 s, at most 5 min: the time to close and for the
# batch system's kill signal), less a random stagger of up to LIFETIME_STAGGER of the wall
# time (at most 4 min) either side, so that the jobs of a run do not all end at once
# (dask-jobqueue's advice: walltime 1 h, --lifetime 55m, --lifetime-stagger 4m). No
# --lifetime-restart: a worker restarted inside its job would still be killed at the job's
# end; the adaptive cluster submits a new job instead.
LIFETIME_MARGIN = (0.05, 10.0, 300.0)  # share of the wall time, least and most seconds
LIFETIME_STAGGER = (0.05, 240.0)  # share of the wall time, most seconds


def worker_lifetime(walltime):
    """``(lifetime, stagger)`` seconds of a worker in a job of ``walltime`` seconds: it
    retires ``lifetime`` +- ``stagger`` seconds after it starts, at the latest
    ``LIFETIME_MARGIN`` before the wall time; a wall time that leaves a worker less than
    that margin to live is refused."""
    share, least, most = LIFETIME_MARGIN
    margin = min(max(share * walltime, least), most)
    stagger = min(LIFETIME_STAGGER[0] * walltime, LIFETIME_STAGGER[1])
    lifetime = walltime - margin - stagger
    if lifetime - stagger < margin:  # a worker would live less than its margin
        raise ValueError(f"walltime of {walltime:g} s: too short for a worker to start, "
                         f"compute and retire {margin:g} s before it ends")
    return lifetime, stagger


def expand_path(path, what):
    """``path`` with ``~`` and ``$VARIABLES`` expanded; a variable that is not set is an
    error naming ``what``."""
    expanded = os.path.expanduser(os.path.expandvars(str(path)))
    if "$" in expanded:
        raise ValueError(f"{what} {path!r}: an environment variable in it is not set "
                         f"(expanded: {expanded!r})")
    return expanded


def import_jobqueue():
    """``dask_jobqueue``, imported with Ctrl-C's handler kept: importing it replaces the
    process's SIGINT handler with ``sys.exit`` (its ``runner`` module does so at import), which
    would turn a Ctrl-C into a SystemExit instead of the KeyboardInterrupt that a run stops
    and resumes on."""
    handler = signal.getsignal(signal.SIGINT)
    import dask_jobqueue

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, handler)
    return dask_jobqueue


def jobqueue_cluster(system, jobs=None, minimum_jobs=None, maximum_jobs=None):
    """A dask-jobqueue cluster for ``system`` (slurm, pbs, sge, lsf, htcondor), configured
    from Dask's config (:func:`_jobqueue_options`), whose job scripts also export
    ``QUIET_WORKERS`` and whose submission failures the client can read
    (:func:`submission_failure`). ``jobs`` keeps that many jobs (a lost job is replaced);
    otherwise the cluster adapts between ``minimum_jobs`` and ``maximum_jobs`` (default 1
    and 1)."""
    dask_jobqueue = import_jobqueue()
    if system not in JOBQUEUE:
        raise ValueError(f"--cluster must be one of {', '.join(JOBQUEUE)}; got {system!r}")
    cluster_class = getattr(dask_jobqueue, JOBQUEUE[system])
    cluster = cluster_class(job_cls=_checked_job_class(cluster_class.job_cls),
                            **_jobqueue_options(system))
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
    """:class:`_CancelBeforeStart` and :class:`_SubmissionFailedLogged` on tornado's callback
    log inside the block."""
    callbacks = logging.getLogger("tornado.application")
    quiet = (_CancelBeforeStart(), _SubmissionFailedLogged())
    for one in quiet:
        callbacks.addFilter(one)
    try:
        yield
    finally:
        for one in quiet:
            callbacks.removeFilter(one)


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
        report_not_cancelled(made)


def worker_pids(client):
    """``{worker address: pid}`` of the connected workers."""
    return client.run(os.getpid)

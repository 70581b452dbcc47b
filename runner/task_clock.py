"""How long each task has run on its worker: the task time limit and the slow-task notice.

The scheduler learns from each worker's heartbeat (every 0.5 s up to 10 workers) how long
each task it executes has run (``WorkerState.executing``; a task waiting in a worker's queue
is not executing). The client asks every ``every`` seconds (:func:`executing`), adding the
time since the worker's last heartbeat, so that a worker too busy to send one is not taken
for idle.

A task past the time limit (``pcskm run --task-timeout``, the spec's ``[run] task_timeout``)
is overdue (:meth:`TaskClock.overdue`): the runner cancels it and restarts its worker (a
thread cannot be stopped, its process can: ``Client.restart_workers``, by the worker's
nanny), so that the task is neither run again nor left holding the worker. A task of several
settings then runs again one setting at a time (:mod:`.overdue`); the one of a single setting
past the limit has its cells left missing, and the run ends non-zero naming it
(:mod:`pcskm.runner.execute`).

Between two asks, the workers gone are counted as lost, and the tasks they were running as
restarted (the scheduler runs them again elsewhere): the progress line shows both. A task
that lost its worker ``MAX_RESTARTS`` times, each time after running at least
``long_loss_seconds``, is given up (:meth:`TaskClock.given_up`): a worker that retires at its
lifetime (:func:`pcskm.runner.clusters.worker_lifetime`) hands its task back without Dask
counting a failure, so a task longer than the jobs' wall time would otherwise start again
for ever. With batch jobs, ``long_loss_seconds`` is half a worker's lifetime: a task cut to
fit the wall time (:mod:`pcskm.runner.wall_time`) that merely started late in its worker's
life is lost after a short run, and runs again as often as it takes; only a task that keeps
running that long without ending is taken for one that cannot fit.

A task's expected time is its weight (:func:`pcskm.runner.calibrate.task_weights`) at the
rate of the tasks finished so far (their compute seconds over their weight); one that has run
more than ``SLOW_FACTOR`` times that, and at least ``SLOW_SECONDS``, is named in the progress
line (:meth:`TaskClock.slow`), so that a hung estimator shows before any limit ends it.
"""

import time
from collections import Counter

from .progress import duration

SLOW_FACTOR = 3.0
SLOW_SECONDS = 60.0
MAX_RESTARTS = 3  # times a task may lose its worker (Dask's allowed-failures, 3)


def executing(dask_scheduler):
    """On the scheduler: ``{key: (worker address, seconds it has run)}`` of the tasks the
    workers execute, as of now, and the addresses of the workers connected."""
    from distributed.metrics import time as scheduler_time  # the clock of ws.last_seen

    now = scheduler_time()
    workers = list(dask_scheduler.workers.values())
    return ({ts.key: (ws.address, seconds + max(now - ws.last_seen, 0.0))
             for ws in workers for ts, seconds in list(ws.executing.items())},
            [ws.address for ws in workers])


class TaskClock:
    """The running times of a run's tasks (``weight_of``: task key -> weight), asked of
    ``client``'s scheduler at most every ``every`` seconds. ``limit``: the seconds a task may
    run (None: no limit)."""

    def __init__(self, client, weight_of, limit=None, *, every=1.0, slow_factor=SLOW_FACTOR,
                 slow_seconds=SLOW_SECONDS, max_restarts=MAX_RESTARTS,
                 long_loss_seconds=0.0):
        self.client, self.weight_of, self.limit, self.every = client, weight_of, limit, every
        self.slow_factor, self.slow_seconds = slow_factor, slow_seconds
        self.running = {}  # key -> (worker, seconds), as last asked
        self.workers = set()  # connected, as last asked
        self.asked = None
        self.done_weight = self.done_seconds = 0.0
        self.ended = set()  # keys ended at the limit
        self.done = set()  # keys finished
        self.n_lost = 0  # workers gone (died, killed, retired at their lifetime)
        self.n_restarted = 0  # times a task lost its worker while it ran
        self.restarts = Counter()  # key -> times it lost its worker while it ran
        self.max_restarts = max_restarts
        self.long_loss_seconds = long_loss_seconds
        self.long_losses = Counter()  # key -> of those, after at least long_loss_seconds

    def finished(self, key, seconds):
        """The task ``key`` finished after ``seconds`` of compute."""
        self.done_weight += self.weight_of[key]
        self.done_seconds += seconds
        self.done.add(key)

    def expected(self, key):
        """The seconds ``key`` is expected to take, or None before a task has finished."""
        if self.done_weight <= 0:
            return None
        return self.weight_of[key] * self.done_seconds / self.done_weight

    def ask(self):
        """Refresh :attr:`running` (at most every ``every`` seconds)."""
        now = time.monotonic()
        if self.asked is not None and now - self.asked < self.every:
            return
        self.asked = now
        running, workers = self.client.run_on_scheduler(executing)
        workers = set(workers)
        self.n_lost += len(self.workers - workers)
        for key, (worker, seconds) in self.running.items():
            if worker not in workers and key not in self.done | self.ended:
                self.restarts[key] += 1
                self.long_losses[key] += seconds >= self.long_loss_seconds
                self.n_restarted += 1
        self.running = {key: value for key, value in running.items() if key in self.weight_of}
        self.workers = workers

    def overdue(self):
        """``(key, worker, seconds)`` of each task that has run past the limit, once each."""
        if self.limit is None:
            return []
        self.ask()
        late = [(key, worker, seconds) for key, (worker, seconds) in self.running.items()
                if seconds > self.limit and key not in self.ended]
        self.ended.update(key for key, _, _ in late)
        return late

    def given_up(self):
        """``(key, restarts)`` of each task that has lost its worker ``max_restarts`` times
        while it ran, each after at least ``long_loss_seconds``, once each: its workers keep
        dying (or retiring at their lifetime, which Dask does not count as a failure) before
        it ends."""
        self.ask()
        lost = [(key, self.restarts[key]) for key, n in self.long_losses.items()
                if n >= self.max_restarts and key not in self.ended | self.done]
        self.ended.update(key for key, _ in lost)
        return lost

    def slow(self):
        """``"task K has run 4.2 min, 3 times or more its expected 1.2 min"`` for the task
        that has run longest past ``slow_factor`` times its expected time (and at least
        ``slow_seconds``), or None."""
        self.ask()
        worst = None
        for key, (_, seconds) in self.running.items():
            expected = self.expected(key)
            if (expected is None or key in self.ended or seconds < self.slow_seconds
                    or seconds < self.slow_factor * expected):
                continue
            if worst is None or seconds / expected > worst[1] / worst[2]:
                worst = (key, seconds, expected)
        if worst is None:
            return None
        key, seconds, expected = worst
        return (f"task {key} has run {duration(seconds)}, {seconds / expected:.0f} times its "
                f"expected {duration(expected)}")

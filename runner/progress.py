"""What a run shows while it computes: the cells of the tasks finished so far, and of them
the cells written to the store.

A task's cells count as soon as its receipt reaches the client (its worker has written its
chunks); the client marks them done every minute (:mod:`.store.writer`), so the cells
written (marked done in the store) follow behind and are shown apart. The display is a
progress bar redrawn every second (so that its clock moves while a long task computes), or,
without a bar (``pcskm run --no-progress``), a log line every ``log_every`` seconds.

The time left is the time so far times the work left over the work done, the work of a task
being its estimated cost (:func:`pcskm.runner.calibrate.task_weights`): tasks differ in cost by
orders of magnitude (a data set of 600 points against one of 60), so the cells finished so far
say little of the time left when the first tasks are the heavy ones.
"""

import logging
import threading
import time

log = logging.getLogger("pcskm")


def duration(seconds):
    """``"42 s"``, ``"12.5 min"``, ``"3.1 h"``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    """Counts cells for a run of ``total`` cells and ``work`` units of work (by default one
    per cell); ``bar``: a tqdm bar on stderr, else a log line every ``log_every`` seconds. Use
    as a context manager."""

    def __init__(self, total, *, work=None, bar=True, log_every=60.0, redraw_every=1.0):
        from tqdm import tqdm

        self.total = total
        self.n_finished = 0  # cells of the tasks whose result reached the client
        self.n_written = 0  # cells marked done in the store by this run
        self.n_errors = 0  # failed tasks
        self.work = float(total if work is None else work)
        self.work_done = 0.0  # of the tasks whose result reached the client, or that failed
        self.n_workers = 0
        self.n_lost = self.n_restarted = 0  # workers gone, tasks that lost their worker
        self.slow_task = None  # a task that has run far longer than expected, named
        self.log_every = log_every
        self._start = time.perf_counter()
        # tqdm's own time left counts cells: the bar shows the one weighted by work instead
        self._bar = tqdm(total=total, unit="cell", dynamic_ncols=True, desc="cells",
                         bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"
                         ) if bar else None
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, args=(redraw_every,), daemon=True,
                                        name="pcskm-progress")
        self._ticker.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def finished(self, n_cells, *, work=None, failed=False):
        """A task of ``n_cells`` cells and ``work`` units of work (by default ``n_cells``)
        ended: its result reached the client (or it failed, ``failed``)."""
        self.n_finished += n_cells
        self.work_done += n_cells if work is None else work
        self.n_errors += failed
        if self._bar is not None:
            self._bar.update(n_cells)
            self._postfix()

    def written(self, n_cells):
        """The cells marked done in the store by this run so far."""
        self.n_written = n_cells
        if self._bar is not None:
            self._postfix()

    def workers(self, count):
        self.n_workers = count

    def lost(self, workers, tasks):
        """``workers`` lost so far, ``tasks`` restarted because their worker was lost."""
        self.n_lost, self.n_restarted = workers, tasks

    def slow(self, note):
        """``note``: a task that has run far longer than expected
        (:meth:`pcskm.runner.task_clock.TaskClock.slow`), or None."""
        self.slow_task = note

    def line(self):
        """``cells: 1,200 of 9,000 finished (13 %), 800 written; 12.3 cells/s, about 11 min
        left; 2 workers, 0 failed tasks``; ``2 workers (3 lost, 2 tasks restarted)`` once
        workers were lost, and ``; task K has run ...`` when a task has run far longer than
        expected."""
        elapsed = time.perf_counter() - self._start
        rate = self.n_finished / elapsed if elapsed > 0 else 0.0
        seconds = self.seconds_left(elapsed)
        left = ("time left unknown until the first task ends" if seconds is None
                else f"about {duration(seconds)} left")
        share = 100 * self.n_finished / self.total if self.total else 100.0
        return (f"cells: {self.n_finished:,} of {self.total:,} finished ({share:.0f} %), "
                f"{self.n_written:,} written; {rate:.1f} cells/s over {duration(elapsed)}, "
                f"{left}; {self.n_workers} workers{self._losses()}, {self.n_errors} failed "
                "tasks" + (f"; {self.slow_task}" if self.slow_task else ""))

    def _losses(self):
        """``" (3 lost, 2 tasks restarted)"``, or nothing while no worker was lost."""
        if not self.n_lost and not self.n_restarted:
            return ""
        return f" ({self.n_lost} lost, {self.n_restarted} tasks restarted)"

    def seconds_left(self, elapsed):
        """``elapsed`` times the work left over the work done; None before any is done."""
        if self.work_done <= 0 or self.work <= 0:
            return None
        return elapsed * max(self.work - self.work_done, 0.0) / self.work_done

    def close(self):
        self._stop.set()
        self._ticker.join()
        if self._bar is not None:
            self._bar.close()

    def _postfix(self):
        seconds = self.seconds_left(time.perf_counter() - self._start)
        self._bar.set_postfix({"left": "?" if seconds is None else duration(seconds),
                               "written": self.n_written, "workers": self.n_workers,
                               "errors": self.n_errors,
                               **({"lost": self.n_lost, "restarted": self.n_restarted}
                                  if self.n_lost or self.n_restarted else {}),
                               **({"slow": self.slow_task} if self.slow_task else {})},
                              refresh=False)

    def _tick(self, redraw_every):
        next_line = self._start + self.log_every
        while not self._stop.wait(redraw_every):
            if self._bar is not None:
                self._postfix()
                self._bar.refresh()
            elif time.perf_counter() >= next_line:
                log.info("%s", self.line())
                next_line += self.log_every

"""What a run shows while it computes: the cells of the tasks finished so far, and of them
the cells written to the store.

A task's cells count as soon as its receipt reaches the client (its worker has written its
chunks); the client marks them done every minute (:mod:`.store.writer`), so the cells
written (marked done in the store) follow behind and are shown apart. The display is a
progress bar redrawn every second (so that its clock moves while a long task computes), or,
without a bar (``pcskm run --no-progress``), a log line every ``log_every`` seconds.
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
    """Counts cells for a run of ``total`` cells; ``bar``: a tqdm bar on stderr, else a log
    line every ``log_every`` seconds. Use as a context manager."""

    def __init__(self, total, *, bar=True, log_every=60.0, redraw_every=1.0):
        from tqdm import tqdm

        self.total = total
        self.n_finished = 0  # cells of the tasks whose result reached the client
        self.n_written = 0  # cells marked done in the store by this run
        self.n_errors = 0  # failed tasks
        self.n_workers = 0
        self.log_every = log_every
        self._start = time.perf_counter()
        self._bar = tqdm(total=total, unit="cell", smoothing=0.05, dynamic_ncols=True,
                         desc="cells") if bar else None
        self._stop = threading.Event()
        self._ticker = threading.Thread(target=self._tick, args=(redraw_every,), daemon=True,
                                        name="pcskm-progress")
        self._ticker.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def finished(self, n_cells, *, failed=False):
        """A task ended: its result reached the client (or it failed, ``failed``)."""
        self.n_finished += n_cells
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

    def line(self):
        """``cells: 1,200 of 9,000 finished (13 %), 800 written; 12.3 cells/s, about 11 min
        left; 2 workers, 0 failed tasks``."""
        elapsed = time.perf_counter() - self._start
        rate = self.n_finished / elapsed if elapsed > 0 else 0.0
        left = (f"about {duration((self.total - self.n_finished) / rate)} left" if rate > 0
                else "time left unknown until the first task ends")
        share = 100 * self.n_finished / self.total if self.total else 100.0
        return (f"cells: {self.n_finished:,} of {self.total:,} finished ({share:.0f} %), "
                f"{self.n_written:,} written; {rate:.1f} cells/s over {duration(elapsed)}, "
                f"{left}; {self.n_workers} workers, {self.n_errors} failed tasks")

    def close(self):
        self._stop.set()
        self._ticker.join()
        if self._bar is not None:
            self._bar.close()

    def _postfix(self):
        self._bar.set_postfix({"written": self.n_written, "workers": self.n_workers,
                               "errors": self.n_errors}, refresh=False)

    def _tick(self, redraw_every):
        next_line = self._start + self.log_every
        while not self._stop.wait(redraw_every):
            if self._bar is not None:
                self._bar.refresh()
            elif time.perf_counter() >= next_line:
                log.info("%s", self.line())
                next_line += self.log_every

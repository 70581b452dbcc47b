"""The report's work spread over forked children (Linux; elsewhere it is done in the process
itself): the data sets of the cube are read and aggregated side by side
(:func:`forked_map`), and the figures are rendered while the report goes on
(:func:`pcskm.experiments.report.plotting.parallel_saves`). A child does what the process
would have done, on a copy of its memory, so the results are the same."""

import multiprocessing
import os
import sys


def can_fork():
    """Whether work can go to forked children: on Linux, where fork is the safe start method
    (Zarr resets its event loop in a forked child)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def cores():
    """The cores this process may use (1 where it cannot fork)."""
    return len(os.sched_getaffinity(0)) if can_fork() else 1


def forked_map(function, items, workers=None):
    """``[function(item) for item in items]``, computed by up to ``workers`` forked children
    (default :func:`cores`) side by side, in the order of ``items``; in this process when it
    cannot fork, with one worker or one item. ``function`` must be a module-level function
    (the children get it by name) and its results picklable; an error of a child is raised
    here."""
    items = list(items)
    workers = min(workers or cores(), len(items)) if can_fork() else 1
    if workers < 2:
        return [function(item) for item in items]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return pool.map(function, items, chunksize=1)

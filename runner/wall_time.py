"""Tasks sized to the batch jobs' wall time (``--cluster``, docs/guide/hpc.md, Wall time).

A batch job ends at its wall time; its worker retires a little before
(:func:`pcskm.runner.clusters.worker_lifetime`), and the task it was computing starts again
from nothing on another worker. So that a job's end costs little, the planner cuts the tasks
so that each is estimated at most ``TASK_SHARE`` of the wall time: the planner merges chunks
until a task holds ``min_work`` units and cuts a row of chunks into pieces of about that
(:func:`pcskm.runner.tasks.plan`), so a task holds less than twice ``min_work``, and
``min_work`` is lowered to half the share at the tasks' pace (seconds per unit of work). A
task's estimate is the dry run's calibration kept for this machine and code where there is
one (:func:`pcskm.runner.calibrate.kept_estimate`), else its work units at
``SECONDS_PER_UNIT``, and those of a user estimator at the pace of one of its cells timed
before submitting (:mod:`pcskm.runner.user_cells`).

The planner never splits a chunk (one data set, kind and percentage with every algorithm,
init, run and fold: the unit one task writes whole). A chunk estimated over the shortest
life of a worker (its lifetime less the stagger; the part priced by work units counts at
1 / ``UNCALIBRATED_SLACK`` of its estimate, a timed user cell's part in full) can never
finish: the run is refused before any job is submitted (:class:`TaskCannotFit`), naming the
chunk, its estimate and the wall time.
"""

from dataclasses import dataclass

from .progress import duration

TASK_SHARE = 0.25  # the most of the wall time a task is planned to take
SECONDS_PER_UNIT = 0.6e-6  # one-core seconds per work unit (pcskm.runner.tasks.MIN_WORK)
MAX_CUTS = 12  # halvings of min_work tried before a task over the share is left as it is
# Work units price a task within a factor of several: ionosphere's chunks of the paper spec
# are 54 s by units, about 10 s as measured in issue 67's run (61 tasks in 6 min 57 s on 2
# workers busy 72.6 % of the time). Without a calibration, a chunk is refused only when its
# units exceed UNCALIBRATED_SLACK times a worker's life.
UNCALIBRATED_SLACK = 5.0


class TaskCannotFit(ValueError):
    """A chunk that no worker lives long enough to compute, refused before submission."""


def job_wall_seconds(cluster_options):
    """The wall time, in seconds, of the batch jobs that ``cluster_options`` (``--cluster``)
    submit, from Dask's jobqueue configuration; None without ``--cluster`` or a wall time."""
    import dask

    from .clusters import wall_seconds

    system = (cluster_options or {}).get("cluster")
    if not system:
        return None
    return wall_seconds((dask.config.get(f"jobqueue.{system}", None) or {}).get("walltime"))


@dataclass(frozen=True)
class Sizing:
    """The plan cut to the wall time: its tasks' estimates (one-core seconds) and how."""

    plan: object  # pcskm.runner.tasks.Plan
    seconds: list  # estimate of each task, in the plan's order
    calibrated: bool  # by the kept calibration (else by work units)
    wall_seconds: float
    timed_user_cells: bool = False  # and a timed cell of each user estimator

    def largest(self):
        """``"largest task: about 12 s on one core (by its work units; dataset=iris,
        kind=random, percent=5), 20 % of the jobs' wall time of 60 s (tasks are cut to at
        most 25 % of it)"``."""
        if not self.seconds:
            return f"no task; the jobs' wall time is {duration(self.wall_seconds)}"
        i = max(range(len(self.seconds)), key=self.seconds.__getitem__)
        how = ("by the kept calibration" if self.calibrated else "by its work units"
               + (" and a timed cell of each user estimator" if self.timed_user_cells else ""))
        share = self.seconds[i] / self.wall_seconds
        cut = (f"tasks are cut to at most {100 * TASK_SHARE:.0f} % of it" if share <= TASK_SHARE
               else f"one chunk, which is never cut; tasks are cut to at most "
               f"{100 * TASK_SHARE:.0f} % of it where their chunks allow")
        return (f"largest task: about {duration(self.seconds[i])} on one core ({how}; "
                f"{describe(self.plan.tasks[i])}), {100 * share:.0f} % of the jobs' wall time "
                f"of {duration(self.wall_seconds)} ({cut})")


def describe(task):
    """``"dataset=iris, kind=random, percent=5|10"``: the chunks of a task, named as
    ``--only`` selects them."""
    kinds = "|".join(dict.fromkeys(block.kind for block in task.blocks))
    percents = "|".join(dict.fromkeys(f"{block.percent:g}" for block in task.blocks))
    return f"dataset={task.dataset}, kind={kinds}, percent={percents}"


def estimates(tasks, view, spec, kept, rates=None):
    """``(seconds, calibrated)``: each task's one-core estimate (:mod:`module docstring
    <pcskm.runner.wall_time>`); ``rates``: seconds per unit of work of the user variants
    timed by :func:`pcskm.runner.user_cells.seconds_per_unit`."""
    from .calibrate import kept_estimate

    weights, calibrated = kept_estimate(tasks, view, spec, kept)
    if calibrated:
        return weights, True
    return [priced(task, view, rates or {}, SECONDS_PER_UNIT) for task in tasks], False


def priced(task, view, rates, untimed):
    """The seconds of ``task``: its settings' units of work at their variant's timed
    ``rates``, at ``untimed`` seconds per unit for the others."""
    from .tasks import work
    from .user_cells import variant

    return sum(work(task, view, index) * rates.get(variant(setting), untimed)
               for index, setting in enumerate(task.settings))


def sized_plan(spec, view, wall, kept=None, *, shortest_life=None, time_user_cells=True,
               **plan_options):
    """:func:`pcskm.runner.tasks.plan` of ``spec`` on ``view`` (``plan_options``), its tasks
    cut to at most ``TASK_SHARE`` of ``wall`` seconds where chunks allow; a chunk estimated
    over ``shortest_life`` seconds (default: the shortest a worker of such a job lives,
    :func:`pcskm.runner.clusters.worker_lifetime`) raises :class:`TaskCannotFit`. Without a
    kept calibration, one cell of each user estimator is timed first
    (:mod:`pcskm.runner.user_cells`; not if ``time_user_cells`` is false). Returns a
    :class:`Sizing`."""
    from .clusters import worker_lifetime
    from .tasks import plan, work
    from .user_cells import seconds_per_unit

    if shortest_life is None:
        lifetime, stagger = worker_lifetime(wall)
        shortest_life = lifetime - stagger
    cap = min(TASK_SHARE * wall, shortest_life)
    the_plan = plan(spec, view, **plan_options)
    seconds, calibrated = estimates(the_plan.tasks, view, spec, kept)
    rates = {}
    if not calibrated and time_user_cells:
        rates = seconds_per_unit(the_plan.tasks, view, shortest_life, wall)
        seconds, calibrated = estimates(the_plan.tasks, view, spec, kept, rates)
    for _ in range(MAX_CUTS):
        over = [i for i, s in enumerate(seconds) if s > cap and len(the_plan.tasks[i].blocks) > 1]
        if not over:
            break
        units = [work(the_plan.tasks[i], view) for i in over]
        pace = sum(seconds[i] for i in over) / max(sum(units), 1)  # seconds per unit
        min_work = max(1, min(int(cap / 2 / pace), min(units) // 2))  # each round smaller
        the_plan = plan(spec, view, min_work=min_work,
                        **{k: v for k, v in plan_options.items() if k != "min_work"})
        seconds, calibrated = estimates(the_plan.tasks, view, spec, kept, rates)
    # the least a task may take: its timed parts, and its work units UNCALIBRATED_SLACK times
    # faster than their estimate
    least = seconds if calibrated else [
        priced(task, view, rates, SECONDS_PER_UNIT / UNCALIBRATED_SLACK)
        for task in the_plan.tasks]
    too_long = [i for i, s in enumerate(least) if s > shortest_life]
    if too_long:
        i = max(too_long, key=seconds.__getitem__)
        how = ("the kept calibration" if calibrated else
               f"its work units, which may err several-fold: refused at {UNCALIBRATED_SLACK:g}"
               " times" + (", and one timed cell of each user estimator" if rates else ""))
        raise TaskCannotFit(
            f"the chunk {describe(the_plan.tasks[i])} is estimated at "
            f"{seconds[i]:.0f} s on one core (by {how}), longer than a worker lives in a job "
            f"of the wall time {wall:.0f} s (at least {shortest_life:.0f} s before it "
            "retires): it could never finish, and a chunk is never split. Give the jobs a "
            "longer walltime in jobqueue.yaml (docs/guide/hpc.md, Wall time)"
            + ("" if calibrated else ", or time it with pcskm run --dry-run, whose "
               "calibration is kept")
            + "; nothing was submitted")
    return Sizing(plan=the_plan, seconds=seconds, calibrated=calibrated, wall_seconds=wall,
                  timed_user_cells=bool(rates))


def plan_for_jobs(spec, view, cluster_options, preload=(), *, say=True,
                  time_user_cells=True, **plan_options):
    """The plan of a run: :func:`pcskm.runner.tasks.plan`, or with batch jobs of a wall time
    (:func:`job_wall_seconds`) :func:`sized_plan` by the calibration kept for ``preload``'s
    code (``time_user_cells``: else by timing a cell of each user estimator), its largest
    task logged beside the wall time (``say``)."""
    import logging

    from .calibrate import Kept
    from .tasks import plan

    wall = job_wall_seconds(cluster_options)
    if wall is None:
        return plan(spec, view, **plan_options)
    sizing = sized_plan(spec, view, wall, Kept(preload or ()), time_user_cells=time_user_cells,
                        **plan_options)
    if say:
        logging.getLogger("pcskm").info("%s", sizing.largest())
    return sizing.plan

"""The prototype of the Icechunk design, in which the workers write the cube into forks of
one session (issue 32), for bench_writer.py: not the runner's code (the region design it was
measured against is now the runner's own, :func:`pcskm.runner.store.writer.write_task`).

It needs a chunk layout aligned to the tasks: a task writes whole chunks that no other task
of the run writes, because Icechunk merges forks chunk by chunk, the last merged winning,
without a conflict. The prototype chunks the fit variables by (kind, percent), as schema
version 2 does: one chunk per (kind, percent) holding every algorithm, init, run, fold and s
(:func:`aligned_layout`), written by the one task of the plan that holds that (kind,
percent) (docs/guide/hpc.md, "How the workers write").

* ``icechunk``: the client forks one clean Icechunk session per task; each worker writes its
  blocks into its fork and sends the fork back; the client merges it into its session and
  commits every ``flush_seconds`` of (virtual) time, the done markers and constraint counts of
  the merged results written just before each commit, so that data and markers land in one
  atomic commit.

The workers are simulated in the benchmark's own process, one task after another; their time
is measured apart from the client's (``process_time`` of each side, so other load on the
machine does not count).
"""

import pickle
import time

import numpy as np
import zarr

from pcskm.runner.store import COMPRESSORS, block_records, carried_scores, score_names

# Variables a worker writes, per block (the rest of a group is the client's or the layout's).
MARKERS = ("done", "scored", "n_constraints")


def _fit_names(arrays):
    """The per-block fit variables of ``arrays`` (a cube's group, ``{name: array}``): every
    array with the block's four leading dims."""
    return [name for name, array in arrays.items() if array.ndim >= 5 and name not in MARKERS]


def aligned_layout(root, cube):
    """Create in ``root`` (a writable Zarr group) every data set group of ``cube`` with its
    fit variables chunked by block and its markers and constraint counts as in the cube."""
    for name, group in cube.arrays.items():
        target = root.create_group(name)
        for variable, array in group.items():
            if array.ndim < 4 and variable != "n_constraints":
                continue  # coordinates: not written by a run
            chunks = ((*array.shape[:2], 1, 1, *array.shape[4:]) if variable not in MARKERS
                      else array.shape)
            target.create_array(variable, shape=array.shape, dtype=array.dtype,
                                fill_value=array.fill_value, chunks=chunks,
                                compressors=COMPRESSORS, config={"write_empty_chunks": True})


def _runs(runs):
    """A slice for consecutive runs (whole chunks written without reading), else the list."""
    return slice(runs[0], runs[-1] + 1) if list(runs) == list(range(runs[0], runs[-1] + 1)) \
        else list(runs)


def write_blocks(root, cube, result):
    """The worker's side: write every block of ``result`` into ``root``. A task's blocks are a
    rectangle of kinds x percents with the same runs, for a rectangle of algorithms x inits
    (:mod:`pcskm.runner.tasks`), so each variable is written in one orthogonal region, its
    chunks whole (but for the inits a kind does not apply to, which only this task writes);
    Zarr writes the chunks of one call concurrently."""
    task = result.task
    name = task.dataset
    group = root[name]
    arrays = {variable: group[variable] for variable in _fit_names(cube.arrays[name])}
    n_sparsity = 1 + len(cube.layout.groups[name].sparsity)
    scores = score_names(cube.arrays[name])
    places = [cube.block_index(name, task.settings[0].algorithm, task.settings[0].init,
                               block.kind, block.percent)[2:] for block in task.blocks]
    kinds, percents = sorted({k for k, _ in places}), sorted({p for _, p in places})
    if len(places) != len(kinds) * len(percents) or len({b.runs for b in task.blocks}) != 1:
        raise ValueError(f"the blocks of a task of {name} are not a rectangle")
    runs = _runs(task.blocks[0].runs)
    positions = [cube.block_index(name, s.algorithm, s.init) for s in task.settings]
    algorithms, inits = sorted({a for a, _ in positions}), sorted({i for _, i in positions})
    if len(positions) != len(algorithms) * len(inits):
        raise ValueError(f"the settings of a task of {name} are not a rectangle")
    stacks = {}
    for (a, i), setting, row in zip(positions, task.settings, result.blocks, strict=True):
        for (k, p), block_result in zip(places, row, strict=True):
            for variable, values in block_records(block_result, setting, n_sparsity,
                                                  scores).items():
                if variable not in stacks:
                    stacks[variable] = np.empty((len(algorithms), len(inits), len(kinds),
                                                 len(percents), *values.shape), values.dtype)
                stacks[variable][algorithms.index(a), inits.index(i), kinds.index(k),
                                 percents.index(p)] = values
    for variable, stack in stacks.items():
        arrays[variable].set_orthogonal_selection((algorithms, inits, kinds, percents, runs),
                                                  stack)


class Markers:
    """The client's record of done blocks: the cube's ``done`` and ``scored`` markers and
    constraint counts of each data set, in memory, written to a group on :meth:`write`."""

    def __init__(self, cube):
        self.cube = cube
        self.arrays = {name: {variable: np.zeros(group[variable].shape, group[variable].dtype)
                              for variable in MARKERS if variable in group}
                       for name, group in cube.arrays.items()}
        self.changed = set()

    def take(self, result):
        """Record the blocks of ``result`` as done."""
        task, cube = result.task, self.cube
        name = task.dataset
        arrays = self.arrays[name]
        for index, setting in enumerate(task.settings):
            for block, block_result in zip(task.blocks, result.blocks[index], strict=True):
                a, i, k, p = cube.block_index(name, setting.algorithm, setting.init,
                                              block.kind, block.percent)
                runs = list(block.runs)
                arrays["done"][a, i, k, p, runs] = 1
                if "scored" in arrays:
                    arrays["scored"][a, i, k, p, runs] = carried_scores(setting)
                arrays["n_constraints"][k, p, runs] = block_result.n_constraints
        self.changed.add(name)

    def write(self, root):
        """Write the markers changed since the last call (constraint counts, then ``scored``,
        then ``done``)."""
        for name in sorted(self.changed):
            for variable in ("n_constraints", "scored", "done"):
                if variable in self.arrays[name]:
                    root[name][variable][...] = self.arrays[name][variable]
        self.changed.clear()


def _cpu(function, *args):
    """``(process CPU seconds, result)`` of ``function(*args)``."""
    start = time.process_time()
    out = function(*args)
    return time.process_time() - start, out


def replay_markers(arrivals, cube, flush_seconds, take, save):
    """The client's loop of both designs: ``take(now, sent)`` each arrival (``(virtual time,
    the worker's return, the result's summary)``, in arrival order), record its blocks, and
    every ``flush_seconds`` of virtual time and at the end ``save(markers, now)``. Returns
    the client CPU of each arrival and of the end."""
    markers, last = Markers(cube), [0.0]

    def one(now, sent, result):
        take(sent)
        markers.take(result)
        if now - last[0] > flush_seconds:
            save(markers, now)
            last[0] = now

    costs = [_cpu(one, *arrival)[0] for arrival in arrivals]
    end, _ = _cpu(save, markers, arrivals[-1][0] if arrivals else 0.0)
    return costs, end


class IcechunkDesign:
    """Workers write into forks of one clean Icechunk session; the client merges the forks
    as they arrive and commits every ``flush_seconds`` (virtual), markers included."""

    name = "icechunk"

    def __init__(self, folder, cube):
        import icechunk

        self.cube = cube
        self.repo = icechunk.Repository.create(
            icechunk.local_filesystem_storage(str(folder / "icechunk")))
        session = self.repo.writable_session("main")
        aligned_layout(zarr.open_group(session.store, mode="w"), cube)
        self.base = session.commit("layout")
        self.session = self.repo.writable_session("main")  # clean: the forks' parent
        self.client_seconds_per_task, self.replays = 0.0, 0

    def work(self, result):
        """The worker's side of one task; the client's forking and pickling of the task's
        fork, done when the task is submitted, is averaged into
        :attr:`client_seconds_per_task`."""
        seconds, sent = _cpu(lambda: pickle.dumps(self.session.fork()))
        self.forked = getattr(self, "forked", 0) + 1
        self.client_seconds_per_task += (seconds - self.client_seconds_per_task) / self.forked

        def write(sent):
            fork = pickle.loads(sent)
            write_blocks(zarr.open_group(fork.store, mode="r+"), self.cube, result)
            return pickle.dumps(fork)

        return _cpu(write, sent)

    def replay(self, arrivals, flush_seconds):
        """The client's side (see :func:`replay_markers`), on a branch of its own from the
        layout's snapshot: merge each fork; save = write the markers, commit."""
        self.replays += 1
        branch = f"replay-{self.replays}"
        self.repo.create_branch(branch, self.base)
        session = [self.repo.writable_session(branch)]
        self.commits = 0

        def save(markers, now):
            markers.write(zarr.open_group(session[0].store, mode="r+"))
            if not session[0].has_uncommitted_changes:
                return
            session[0].commit(f"results up to {now:.0f} virtual seconds")
            session[0] = self.repo.writable_session(branch)
            self.commits += 1

        return replay_markers(arrivals, self.cube, flush_seconds,
                              lambda sent: session[0].merge(pickle.loads(sent)), save)

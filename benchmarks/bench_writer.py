"""The client's writing: CPU time and chunk writes of the cube writer over a spec's plan.

    python benchmarks/bench_writer.py [SPEC] [--only SELECTION] [--workers 2] [--hours 2.0]
                                      [--flush-seconds 60]

Replays the plan of a fresh store through :class:`pcskm.runner.writer.CubeWriter` without
computing anything: every task gets a result of the right shapes (values drawn once, on a
grid of a thousand levels, so that they compress about as much as real scores), and the
results arrive in the order that ``--workers`` workers taking the tasks in plan order would
finish them, each task taking its share of work of ``--hours`` hours of compute per worker
(the paper spec took 2 h on 2 workers). The writer's clock is that virtual clock, so its
periodic flushes happen as often as in a real run of that length. Reported: the CPU seconds
of the writing (the client's share of the machine in a real run), the chunks written and read
back, and the chunks of the store (each written once at best).

The default selection is the eight largest data sets of the paper spec after ionosphere (a
tenth of its tasks); ``--only ""`` replays all of it (about ten minutes).
"""

import argparse
import heapq
import tempfile
import time
import types
from collections import Counter
from dataclasses import fields
from pathlib import Path

import numpy as np
from _common import machine

from pcskm.experiments.cells import BlockResult, TaskResult
from pcskm.experiments.spec import load_spec
from pcskm.runner import writer as writer_module
from pcskm.runner.cube import prepare
from pcskm.runner.sizes import chunks_bytes
from pcskm.runner.tasks import parse_only, plan, work
from pcskm.runner.writer import CubeWriter, chunks_of

ONLY = ("dataset=ionosphere|mwm-ttscst|mwm-ttchst|fisheriris|digits048-1|digits048-2|"
        "digits389-1|digits389-2")


def synthetic_result(task, n_features, rng):
    """A :class:`TaskResult` of ``task`` with made-up values of the real shapes and dtypes."""
    blocks = []
    for setting in task.settings:
        per_setting = []
        for block in task.blocks:
            shape = (len(block.runs), len(task.fold_list), setting.n_sparsity)
            values = {}
            for field in fields(BlockResult):
                if field.name == "block":
                    continue
                if field.name in ("n_constraints", "cv_folds_used"):
                    values[field.name] = np.full(shape[:2], 3, np.int64 if field.name ==
                                                 "n_constraints" else np.int8)
                elif field.name == "status":
                    values[field.name] = np.zeros(shape, np.int8)
                elif field.name == "n_iter":
                    values[field.name] = rng.integers(1, 6, shape)
                elif field.name == "weights":
                    values[field.name] = rng.integers(0, 1000, (*shape, n_features)) / 1000
                else:
                    values[field.name] = rng.integers(0, 1000, shape) / 1000
            per_setting.append(BlockResult(block=block, **values))
        blocks.append(per_setting)
    return TaskResult(task=task, blocks=blocks, seconds=0.0)


def finish_order(tasks, units, workers, seconds_per_unit):
    """``(finish time, task)`` of ``tasks`` taken in order by ``workers`` workers."""
    free = [0.0] * workers
    finished = []
    for task, unit in zip(tasks, units, strict=True):
        start = heapq.heappop(free)
        end = start + unit * seconds_per_unit
        heapq.heappush(free, end)
        finished.append((end, len(finished), task))
    return sorted(finished)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default="paper")
    parser.add_argument("--only", default=ONLY)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--flush-seconds", type=float, default=writer_module.FLUSH_SECONDS)
    parser.add_argument("--hours", type=float, default=2.0,
                        help="compute per worker of the whole spec (sets the virtual clock)")
    args = parser.parse_args()
    print(machine())
    spec = load_spec(args.spec)
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        cube, _ = prepare(Path(folder) / "bench.zarr", spec)
        everything = plan(spec, cube).tasks
        tasks = plan(spec, cube, selection=parse_only(args.only)).tasks
        total = sum(work(task, cube) for task in everything)
        seconds_per_unit = args.hours * 3600 * args.workers / total
        units = [work(task, cube) for task in tasks]
        rng = np.random.default_rng(0)
        results = {id(task): synthetic_result(
            task, cube.layout.groups[task.dataset].attrs["n_features"], rng) for task in tasks}
        order = finish_order(tasks, units, args.workers, seconds_per_unit)
        clock = [0.0]  # the writer's clock only (asyncio and Zarr keep the real one)
        writer_module.time = types.SimpleNamespace(monotonic=lambda: clock[0])
        writes, reads = Counter(), Counter()
        original_write, original_chunk = CubeWriter._write, writer_module._Chunk.__init__

        def counted_write(self, positions):
            writes.update(p for p in positions if p in self.chunks and self.chunks[p].dirty)
            original_write(self, positions)

        def counted_chunk(self, group, position, has_done):
            reads[position] += has_done
            original_chunk(self, group, position, has_done)

        CubeWriter._write, writer_module._Chunk.__init__ = counted_write, counted_chunk
        start = time.process_time()
        with CubeWriter(cube, tasks, flush_seconds=args.flush_seconds) as writer:
            for end, _, task in order:
                clock[0] = end
                writer.write(results[id(task)])
        seconds = time.process_time() - start
    chunks = {chunk for task in tasks for chunk in chunks_of(task, cube)}
    mib = chunks_bytes(cube.layout, chunks) / 2**20
    print(f"{len(tasks)} tasks of {len(everything)}, {len({t.dataset for t in tasks})} data sets, "
          f"{order[-1][0] / 60:.1f} virtual minutes on {args.workers} workers")
    print(f"writing: {seconds:.1f} s CPU; {sum(writes.values())} chunk writes, "
          f"{sum(reads.values())} chunk reads, {len(chunks)} chunks in the store")
    print(f"chunks of the selection: {mib:.1f} MiB uncompressed; writing {seconds / mib:.4f} s "
          "per MiB (the constant of the dry run's writer estimate, "
          "pcskm.runner.sizes.WRITE_SECONDS_PER_MIB)")



if __name__ == "__main__":
    main()

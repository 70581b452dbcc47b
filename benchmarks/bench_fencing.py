"""What fencing costs (docs/guide/hpc.md, "A killed client's workers"): a worker's writing of
a task straight into the store's folder and into the run's staging folder, and the client's
moving of the staged files into place.

    python benchmarks/bench_fencing.py [SPEC] [--every 40]

Every ``--every``-th task of the spec's plan gets the benchmark's made-up result
(:func:`bench_writer.synthetic_result`) and is written twice, into two copies of one freshly
prepared store: straight into the folder (the writing before fencing) and as a run's worker
writes it now (:meth:`pcskm.runner.store.backends.folder.Folder.for_workers`), whose staged files
the client moves in (:meth:`~pcskm.runner.store.backends.folder.Folder.absorb`, one receipt at a
time). The two stores' chunk files must be equal byte for byte.
"""

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import zarr
from _common import machine
from bench_writer import synthetic_result

from pcskm.experiments.spec import load_spec
from pcskm.runner.store import prepare, task_target, where, write_task
from pcskm.runner.tasks import plan


def files_of(root):
    return {path.relative_to(root): path.read_bytes() for path in root.rglob("*")
            if path.is_file()}


class Clock:
    """Wall and CPU seconds spent inside ``with clock:`` blocks, summed."""

    def __init__(self):
        self.wall = self.cpu = 0.0

    def __enter__(self):
        self.started = time.perf_counter(), time.process_time()

    def __exit__(self, *exc):
        wall, cpu = self.started
        self.wall += time.perf_counter() - wall
        self.cpu += time.process_time() - cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", nargs="?", default="paper")
    parser.add_argument("--every", type=int, default=40)
    args = parser.parse_args()
    print(machine())
    spec = load_spec(args.spec)
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        folder = Path(folder)
        cube, _ = prepare(folder / "direct.zarr", spec)
        shutil.copytree(folder / "direct.zarr", folder / "fenced.zarr")
        every = plan(spec, cube).tasks
        tasks = every[::args.every]
        results = [synthetic_result(task, cube.layout.groups[task.dataset].attrs["n_features"],
                                    np.random.default_rng(i)) for i, task in enumerate(tasks)]
        targets = [task_target(cube, task) for task in tasks]
        direct, staged, moved, n_files = Clock(), Clock(), Clock(), 0
        for result, target in zip(results, targets, strict=True):
            with direct:
                group = zarr.open_group(str(folder / "direct.zarr"), mode="r+",
                                        path=result.task.dataset)
                write_task(group, result, target)
        with where(folder / "fenced.zarr").writing() as location:
            place = location.for_workers()
            for result, target in zip(results, targets, strict=True):
                with staged, place.writing(result.task.dataset) as group:
                    write_task(group, result, target)
                    written = place.written(group)
                n_files += len(written.chunks)
                with moved:
                    location.absorb([written])
        a, b = files_of(folder / "direct.zarr"), files_of(folder / "fenced.zarr")
        differ = sum(a[name] != b.get(name) for name in a) + len(b.keys() - a.keys())
    n = len(tasks)
    print(f"{spec.name}: {n} tasks (every {args.every}th of {len(every)}), {n_files} chunk "
          f"files staged ({n_files / n:.1f} per task)")
    print(f"worker, per task: straight into the folder {1000 * direct.wall / n:.0f} ms "
          f"({1000 * direct.cpu / n:.0f} ms CPU); into the staging folder "
          f"{1000 * staged.wall / n:.0f} ms ({1000 * staged.cpu / n:.0f} ms CPU)")
    print(f"client, moving the staged files in: {1000 * moved.wall / n:.2f} ms per task "
          f"({1000 * moved.cpu / n:.2f} ms CPU), {1e6 * moved.wall / n_files:.0f} us per file")
    print(f"chunk files: {len(a)} written straight, {len(b)} staged and moved, {differ} differ")


if __name__ == "__main__":
    main()

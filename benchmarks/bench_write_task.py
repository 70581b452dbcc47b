"""A worker's writing of the same tasks by the writer of an earlier commit and by this one:
CPU per task, and whether the chunk files are equal byte for byte.

    python benchmarks/bench_write_task.py BEFORE [SPEC] [--every 40]

``BEFORE`` is a git commit whose ``runner/store/writer.py`` is loaded beside this checkout's
(it must write the same schema). Every ``--every``-th task of the spec's plan gets the
benchmark's made-up result (:func:`bench_writer.synthetic_result`), and both writers write
them, one after the other, into two copies of one freshly prepared store
(docs/guide/hpc.md, "How the workers write").
"""

import argparse
import importlib.util
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import zarr
from _common import REPO, machine
from bench_writer import synthetic_result

from pcskm.experiments.spec import load_spec
from pcskm.runner.store import prepare, task_target
from pcskm.runner.store import writer as current
from pcskm.runner.tasks import plan


def writer_of(commit, folder):
    """The module ``runner/store/writer.py`` of ``commit``, loaded into the store's package."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{commit}:runner/store/writer.py"],
                            check=True, capture_output=True, text=True).stdout
    path = folder / "writer_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("pcskm.runner.store.writer_before", path)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "pcskm.runner.store"
    spec.loader.exec_module(module)
    return module


def files_of(root):
    return {path.relative_to(root): path.read_bytes() for path in root.rglob("*")
            if path.is_file()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("spec", nargs="?", default="paper")
    parser.add_argument("--every", type=int, default=40)
    args = parser.parse_args()
    print(machine())
    spec = load_spec(args.spec)
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        folder = Path(folder)
        before = writer_of(args.before, folder)
        cube, _ = prepare(folder / "before.zarr", spec)
        shutil.copytree(folder / "before.zarr", folder / "after.zarr")
        tasks = plan(spec, cube).tasks[::args.every]
        results = [synthetic_result(task, cube.layout.groups[task.dataset].attrs["n_features"],
                                    np.random.default_rng(i)) for i, task in enumerate(tasks)]
        targets = [task_target(cube, task) for task in tasks]

        def cpu_per_task(module, store):
            start = time.process_time()
            for result, target in zip(results, targets, strict=True):
                group = zarr.open_group(str(store), mode="r+", path=result.task.dataset)
                module.write_task(group, result, target)
            return 1000 * (time.process_time() - start) / len(tasks)

        old = cpu_per_task(before, folder / "before.zarr")
        new = cpu_per_task(current, folder / "after.zarr")
        a, b = files_of(folder / "before.zarr"), files_of(folder / "after.zarr")
        differ = sum(a[name] != b.get(name) for name in a) + len(b.keys() - a.keys())
        print(f"{spec.name}: {len(tasks)} tasks (every {args.every}th of "
              f"{len(plan(spec, cube).tasks)})")
        print(f"writer of {args.before}: {old:.0f} ms CPU per task; this checkout's: {new:.0f} ms")
        print(f"chunk files: {len(a)} before, {len(b)} after, {differ} differ")


if __name__ == "__main__":
    main()

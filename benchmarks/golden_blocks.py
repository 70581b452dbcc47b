"""A golden comparison of ``experiments.cells.evaluate`` on real blocks of the paper spec: a
change that must not change any result is checked bit for bit against the results saved
before it.

Run by hand from the repository root, once on the code before the change and once after:

    python benchmarks/golden_blocks.py --save /tmp/golden.npz
    python benchmarks/golden_blocks.py --compare /tmp/golden.npz

The blocks: data sets digits048-1, ionosphere, mwm-ttscst and brodinova-5-5; every algorithm
and init of ``experiments/specs/paper.toml`` (Seeding with its seeding kinds only, as the
spec runs it); the kinds random, must-link, cannot-link and balanced; 1 %, 5.5 % and 10 %;
runs 0 and 13; all ten folds. They are grouped into tasks as the runner groups them (per
data set and kind, every (algorithm, init) that runs the kind in one task, so that the
settings share each cell's constraint sample). Every array of every ``BlockResult`` is saved
under ``dataset/algorithm/init/kind/percent/field``. ``--compare`` recomputes them and prints
the number of differing bytes of every array that differs (raw bytes, so NaN == NaN and
-0.0 != 0.0), then the totals; it exits with status 1 if any byte, shape or dtype differs.
"""

import argparse
import sys
import time
from dataclasses import fields
from pathlib import Path

import numpy as np
from _common import paper_tasks

from pcskm.experiments import cells
from pcskm.experiments.cells import BlockResult

DATASETS = ("digits048-1", "ionosphere", "mwm-ttscst", "brodinova-5-5")
KINDS = ("random", "must-link", "cannot-link", "balanced")
PERCENTS = (1.0, 5.5, 10.0)
RUNS = (0, 13)
FIELDS = tuple(f.name for f in fields(BlockResult) if f.name != "block")


def evaluate_all():
    """``{key: array}`` of every array of every block of the golden tasks."""
    arrays = {}
    for task in (t for name in DATASETS for t in paper_tasks(name, KINDS, PERCENTS, RUNS)):
        start = time.process_time()
        result = cells.evaluate(task)
        print(f"  {task.dataset} {task.blocks[0].kind}: {task.n_cells} cells, "
              f"{time.process_time() - start:.1f} s CPU", flush=True)
        for setting, per_block in zip(task.settings, result.blocks, strict=True):
            for block_result in per_block:
                block = block_result.block
                prefix = (f"{setting.dataset}/{setting.algorithm}/{setting.init}/"
                          f"{block.kind}/{block.percent:g}")
                for field in FIELDS:
                    arrays[f"{prefix}/{field}"] = getattr(block_result, field)
    return arrays


def differing_bytes(a, b):
    """Bytes that differ between two arrays (all bytes of the larger if shape or dtype
    differ)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return max(a.nbytes, b.nbytes)
    left = np.frombuffer(np.ascontiguousarray(a).tobytes(), np.uint8)
    right = np.frombuffer(np.ascontiguousarray(b).tobytes(), np.uint8)
    return int(np.count_nonzero(left != right))


def compare(path, arrays):
    """Print the differing bytes per array against the file ``path``; True if none."""
    with np.load(path) as saved:
        golden = {key: saved[key] for key in saved.files}
    missing = sorted(set(golden) - set(arrays))
    extra = sorted(set(arrays) - set(golden))
    for key in missing:
        print(f"missing from this run: {key}")
    for key in extra:
        print(f"not in {path}: {key}")
    total_bytes = total_diff = n_diff = 0
    for key in sorted(set(golden) & set(arrays)):
        diff = differing_bytes(golden[key], arrays[key])
        total_bytes += golden[key].nbytes
        total_diff += diff
        if diff:
            n_diff += 1
            print(f"{key}: {diff} of {golden[key].nbytes} bytes differ")
    n_common = len(set(golden) & set(arrays))
    print(f"{total_diff} differing bytes over {n_common} arrays / {total_bytes} bytes "
          f"({n_diff} arrays differ, {len(missing)} missing, {len(extra)} extra)")
    return total_diff == 0 and not missing and not extra


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--save", type=Path, help="write the arrays to this .npz file")
    action.add_argument("--compare", type=Path, help="compare with this .npz file")
    args = parser.parse_args()
    arrays = evaluate_all()
    if args.save:
        np.savez_compressed(args.save, **arrays)
        print(f"saved {len(arrays)} arrays / {sum(a.nbytes for a in arrays.values())} bytes "
              f"to {args.save}")
        return
    sys.exit(0 if compare(args.compare, arrays) else 1)


if __name__ == "__main__":
    main()

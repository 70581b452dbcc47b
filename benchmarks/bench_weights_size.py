"""Bytes on disk of ``weights_per_s`` in computed groups of a store, beside the rest of each
group (docs/reference/cube-schema.md, "Weights per s").

    pcskm run paper --store STORE --only dataset=digits048-1          # a group computed whole
    python benchmarks/bench_weights_size.py STORE digits048-1 [GROUP ...] [--csv FILE]

Per group, twice: the bytes of its files (the data, whatever the file system) and its disk
usage (whole file-system blocks of its files and folders, as ``du -s``; every chunk is a file
under a folder per chunk coordinate, so small chunks cost a block or more each): the group's,
that of ``weights_per_s``, of ``weights`` (the mean over s), of the group without
``weights_per_s``, and the share that ``weights_per_s`` adds to the group without it.
The groups must be computed whole (every block done): a group with missing cells holds fill
values that compress to almost nothing (the blocks the spec does not run, Seeding with a kind
outside its seeding_kinds, are not counted as missing).
"""

import argparse
import sys
from pathlib import Path

import pandas as pd
import zarr

from pcskm.runner.store import NOT_APPLICABLE

MEASURES = ("bytes", "disk")
COLUMNS = ("group", "n_features", "n_sparsity", "measure", "total", "weights_per_s", "weights",
           "without_weights_per_s", "added_share")


def folder_size(path, measure):
    """``bytes``: the sizes of the files under ``path``; ``disk``: the blocks of its files
    and folders (``path`` included), in bytes."""
    entries = [Path(path), *Path(path).rglob("*")]
    if measure == "bytes":
        return sum(entry.stat().st_size for entry in entries if entry.is_file())
    return sum(entry.lstat().st_blocks * 512 for entry in entries)


def group_sizes(store, name):
    """Two rows of :data:`COLUMNS` (bytes, disk) for the computed group ``name`` of
    ``store``."""
    group = zarr.open_group(str(store), mode="r")[name]
    not_run = (group["status"][...] == NOT_APPLICABLE).all(axis=(-2, -1))  # Seeding's kinds
    if not (group["done"][...].astype(bool) | not_run).all():
        raise SystemExit(f"{name}: not every block is done; compute the group whole first")
    rows = []
    for measure in MEASURES:
        total = folder_size(Path(store) / name, measure)
        per_s = folder_size(Path(store) / name / "weights_per_s", measure)
        rows.append((name, group["feature"].shape[0], group["sparsity"].shape[0] - 1,
                     measure, total, per_s, folder_size(Path(store) / name / "weights",
                                                        measure),
                     total - per_s, round(per_s / (total - per_s), 3)))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store")
    parser.add_argument("groups", nargs="+")
    parser.add_argument("--csv", help="also write the table to this file")
    args = parser.parse_args(argv)
    table = pd.DataFrame([row for name in args.groups for row in group_sizes(args.store, name)],
                         columns=COLUMNS)
    print(table.to_string(index=False))
    if args.csv:
        table.to_csv(args.csv, index=False)


if __name__ == "__main__":
    sys.exit(main())

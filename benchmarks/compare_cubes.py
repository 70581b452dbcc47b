"""Two stores of one spec hold the same results: every array of every data set group equal,
NaN for NaN, read chunk by chunk through Dask so that a store larger than memory compares too;
the per-store records (``run_index``, the run that marked each block done, and
``chunk_sha256``, bound to each store's id) are left out.

    python benchmarks/compare_cubes.py A.zarr B.zarr
"""
import sys

import dask.array as da
import zarr

SKIP = {"run_index", "chunk_sha256"}
a, b = (zarr.open_group(p, mode="r") for p in sys.argv[1:3])
assert sorted(n for n, _ in a.groups()) == sorted(n for n, _ in b.groups())
n_arrays = n_values = 0
for name, group in a.groups():
    other = b[name]
    names = sorted(k for k, _ in group.arrays())
    assert names == sorted(k for k, _ in other.arrays()), name
    for key in names:
        if key in SKIP:
            continue
        x, y = da.from_zarr(group[key]), da.from_zarr(other[key])
        assert x.shape == y.shape and x.dtype == y.dtype, (name, key)
        if x.dtype.kind == "f":
            same = ((x == y) | (da.isnan(x) & da.isnan(y))).all()
        else:
            same = (x == y).all()
        assert bool(same.compute(scheduler="threads", num_workers=2)), (name, key)
        n_arrays += 1
        n_values += x.size
print(f"same: {n_arrays} arrays, {n_values} values")

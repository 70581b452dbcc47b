"""The distributed experiment runner: Dask execution, the Zarr results cube, the ``pcskm``
command line.

``open_cube(path)`` opens a cube as an ``xarray.DataTree``; ``run_spec(spec, store, ...)``
fills it. Imported lazily, so that ``pcskm --help`` and ``pcskm datasets`` start fast.
"""

from pcskm._lazy import lazy_exports

_EXPORTS = {
    "STATUS_FLAGS": ".store", "IncompatibleStore": ".store", "open_cube": ".store",
    "RunSummary": ".execute", "run_spec": ".execute",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

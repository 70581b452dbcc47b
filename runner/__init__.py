"""The distributed experiment runner: Dask execution, the Zarr results cube, the ``pcskm``
command line.

``open_cube(path)`` opens a cube as an ``xarray.DataTree``; ``run_spec(spec, store, ...)``
fills it. Imported lazily, so that ``pcskm --help`` and ``pcskm datasets`` start fast.
"""

import importlib

_EXPORTS = {
    "STATUS_FLAGS": "cube", "IncompatibleStore": "cube", "open_cube": "cube",
    "RunSummary": "execute", "run_spec": "execute",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The distributed experiment runner: Dask execution, the Zarr results cube, the ``pcskm``
command line."""

from .cube import STATUS_FLAGS, IncompatibleStore, open_cube
from .execute import RunSummary, run_spec

__all__ = ["STATUS_FLAGS", "IncompatibleStore", "RunSummary", "open_cube", "run_spec"]

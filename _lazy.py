"""Lazy exports: a package's public names are imported from their modules on first use, so
that the ``pcskm`` command starts without loading scikit-learn, Numba or Dask when it does not
need them (``pcskm status`` reads a store's markers in well under a second)."""

import importlib


def lazy_exports(package, exports):
    """``(__getattr__, __dir__)`` for the package named ``package`` whose ``exports`` map each
    public name to the module (relative to the package, e.g. ``".metrics"``) defining it."""

    def __getattr__(name):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name], package), name)

    def __dir__():
        return sorted({*vars(importlib.import_module(package)), *exports})

    return __getattr__, __dir__

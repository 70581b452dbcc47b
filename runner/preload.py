"""Single-module user estimators on every worker: ``pcskm run --preload FILE.py``
(docs/guide/hpc.md, Your own estimator on the workers).

The client imports each file as a module (its folder added to ``sys.path``), so that the spec
can name ``"FILE:ClassName"`` and be checked before any compute, and ships it to every worker
of the cluster, present and future, through a Dask worker plugin (distributed's
``UploadFile``: the worker saves it in its local folder, on its ``sys.path``, and imports
it).
"""

import importlib
import sys
from pathlib import Path

from distributed.diagnostics.plugin import UploadFile


def check_files(paths):
    """The ``paths`` as resolved :class:`Path` objects: existing ``.py`` files whose names are
    module names, with no name twice (raises ``ValueError`` naming the file)."""
    files, names = [], {}
    for path in paths:
        file = Path(path).expanduser().resolve()
        if not file.is_file():
            raise ValueError(f"--preload {path}: no such file")
        if file.suffix != ".py" or not file.stem.isidentifier():
            raise ValueError(f"--preload {path}: expected a Python module file NAME.py (NAME a "
                             "valid module name)")
        if file.stem in names:
            raise ValueError(f"--preload {path}: module name {file.stem!r} is also that of "
                             f"{names[file.stem]}")
        names[file.stem] = path
        files.append(file)
    return files


def import_files(paths):
    """Import each file of ``paths`` as the module named by its stem, its folder added to
    ``sys.path`` (so that a spec naming ``"stem:ClassName"`` can be checked); returns the
    resolved paths. A module that fails to import raises ``ValueError`` with its error."""
    files = check_files(paths)
    for file in files:
        folder = str(file.parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        try:
            importlib.import_module(file.stem)
        except Exception as error:  # the module's own error, whatever it raises
            raise ValueError(f"--preload {file}: the module cannot be imported "
                             f"({type(error).__name__}: {error})") from error
    return files


class PreloadFile(UploadFile):
    """distributed's ``UploadFile`` under a name of its own per file (``UploadFile`` has one
    name, so a second file would replace the first on the workers)."""

    def __init__(self, filepath):
        super().__init__(str(filepath), load=True)
        self.name = f"pcskm-preload-{Path(filepath).name}"


def ship(client, paths):
    """Register one :class:`PreloadFile` per file of ``paths`` with ``client``: every worker
    connected now, and every one that connects later, imports it before any task."""
    for file in check_files(paths):
        client.register_plugin(PreloadFile(file))

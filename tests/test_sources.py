"""Data sets defined in a spec (experiments/sources.py, docs/method/datasets.md §8): each
source against an independent reading of its file, the errors of bad input, the random keys,
the provenance recorded in the cube and its check on a rerun."""

import hashlib
import itertools
import pickle
import re
import shutil
import textwrap
import warnings

import numpy as np
import pytest
import zarr

from pcskm.algorithms import _random_kernels as draws
from pcskm.experiments import Protocol, _datafiles, load, seed_sequence
from pcskm.experiments.sources import DataError, parse_definition
from pcskm.experiments.spec import parse_spec

_module_names = (f"pcskm_test_loader_{i}" for i in itertools.count())

SPEC = """
datasets = {datasets}
algorithms = ["LKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [10]
n_runs = 1
n_folds = 3
"""


def _definition(tmp_path, **table):
    return parse_definition("mine", table, folder=tmp_path)


def _load(tmp_path, **table):
    return load(_definition(tmp_path, **table))


def _write(path, text):
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def _sha256(X, y):
    digest = hashlib.sha256()
    digest.update(np.ascontiguousarray(X, dtype=np.float64).tobytes())
    digest.update(np.ascontiguousarray(y, dtype=np.int64).tobytes())
    return digest.hexdigest()


def _gz_labels(path):
    return np.loadtxt(path, dtype=np.int64)


# --- each source against an independent reading --------------------------------------------

def test_clustbench_set_is_the_suite_file(clustbench_dir, tmp_path):
    data = _load(tmp_path, source="clustbench:wut/x2", clustbench_dir=str(clustbench_dir))
    X = np.loadtxt(clustbench_dir / "wut/x2.data.gz")
    labels = _gz_labels(clustbench_dir / "wut/x2.labels0.gz")
    np.testing.assert_array_equal(data.X, X)
    assert sorted(set(labels)) == [1, 2, 3]  # no noise in this set
    np.testing.assert_array_equal(data.y, labels - 1)
    assert (data.code, data.n_clusters, data.feature_names) == (0, 3, ("x1", "x2"))
    assert data.source.startswith("clustbench:wut/x2 (labels0")
    other = _load(tmp_path, source="clustbench:wut/x2", labels="labels1",
                  clustbench_dir=str(clustbench_dir))
    second = _gz_labels(clustbench_dir / "wut/x2.labels1.gz")  # with noise points (0)
    np.testing.assert_array_equal(other.X, X[second != 0])
    np.testing.assert_array_equal(other.y, second[second != 0] - 1)


def test_clustbench_noise_is_dropped_or_refused(clustbench_dir, tmp_path):
    X = np.loadtxt(clustbench_dir / "graves/zigzag_outliers.data.gz")
    labels = _gz_labels(clustbench_dir / "graves/zigzag_outliers.labels0.gz")
    keep = labels != 0
    data = _load(tmp_path, source="clustbench:graves/zigzag_outliers",
                 clustbench_dir=str(clustbench_dir))
    np.testing.assert_array_equal(data.X, X[keep])
    np.testing.assert_array_equal(data.y, labels[keep] - 1)  # labels 1..k -> 0..k-1
    assert data.n_samples == 250 and "30 noise points dropped" in data.source
    with pytest.raises(DataError, match=r"zigzag_outliers\.labels0\.gz labels 30 points 0"):
        _load(tmp_path, source="clustbench:graves/zigzag_outliers", noise="refuse",
              clustbench_dir=str(clustbench_dir))


def test_clustbench_folder_from_the_environment_and_the_data_folder(clustbench_dir, tmp_path,
                                                                    monkeypatch):
    monkeypatch.setenv("PCSKM_CLUSTBENCH", str(clustbench_dir))
    expected = np.loadtxt(clustbench_dir / "fcps/atom.data.gz")
    np.testing.assert_array_equal(_load(tmp_path, source="clustbench:fcps/atom").X, expected)
    monkeypatch.delenv("PCSKM_CLUSTBENCH")
    clone = tmp_path / "data" / "clustering-data-v1" / "fcps"
    clone.mkdir(parents=True)
    for file in (clustbench_dir / "fcps").glob("atom.*"):
        shutil.copy(file, clone)
    data = load(_definition(tmp_path, source="clustbench:fcps/atom"), tmp_path / "data")
    np.testing.assert_array_equal(data.X, expected)
    assert "clustering-data-v1" in data.source


def test_clustbench_files_are_fetched_and_verified(clustbench_dir, tmp_path, monkeypatch,
                                                   serve):
    """No local copy: the files come from the suite's address (here a local server) into the
    user cache, checked against the committed SHA-256 registry."""
    monkeypatch.delenv("PCSKM_CLUSTBENCH", raising=False)
    monkeypatch.setenv("PCSKM_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(_datafiles, "CLUSTBENCH_URL", serve(clustbench_dir))
    monkeypatch.setattr(_datafiles, "RETRIES", 0)
    definition = parse_definition("x2", {"source": "clustbench:wut/x2"}, tmp_path)
    data = load(definition)
    np.testing.assert_array_equal(data.X, np.loadtxt(clustbench_dir / "wut/x2.data.gz"))
    fetched = tmp_path / "cache" / "pcskm" / "clustbench-v1.1.0" / "wut"
    assert sorted(p.name for p in fetched.iterdir()) == [
        "x2.data.gz", "x2.labels0.gz", "x2.labels1.gz", "x2.txt"]
    with pytest.raises(ValueError, match=r"no set 'x22' in clustering-data-v1 v1\.1\.0 .*did "
                                         r"you mean 'x2'"):
        parse_definition("x2", {"source": "clustbench:wut/x22"}, tmp_path)
    # a server with another x3.data.gz: the download is refused and not kept
    other = tmp_path / "other" / "wut"
    other.mkdir(parents=True)
    for file in (clustbench_dir / "wut").glob("x3.*"):
        shutil.copy(file, other)
    (other / "x3.data.gz").write_bytes((clustbench_dir / "wut/x2.data.gz").read_bytes())
    monkeypatch.setattr(_datafiles, "CLUSTBENCH_URL", serve(other.parent))
    with pytest.raises(_datafiles.ChecksumError, match=r"wut/x3\.data\.gz"):
        load(parse_definition("x3", {"source": "clustbench:wut/x3"}, tmp_path))
    assert not (fetched / "x3.data.gz").exists()


def test_csv_with_a_header_and_a_named_label_column(tmp_path):
    _write(tmp_path / "d.csv", """
        species, a, b
        setosa, 1.5, 2
        virginica, 3, 4.25
        setosa, 5, 6
        versicolor, 7, 8
        """)
    data = _load(tmp_path, path="d.csv", label_column="species")
    np.testing.assert_array_equal(data.X, [[1.5, 2], [3, 4.25], [5, 6], [7, 8]])
    # relabelled by sorted name: setosa 0, versicolor 1, virginica 2
    np.testing.assert_array_equal(data.y, [0, 2, 0, 1])
    assert data.feature_names == ("a", "b") and data.source.endswith("d.csv (CSV)")


def test_csv_without_a_header_labels_last_or_by_index(tmp_path):
    rows = np.array([[10, 1, 7], [2, 3, 9], [4, 5, 7], [6, 8.5, 9]])
    np.savetxt(tmp_path / "d.csv", rows, delimiter=",")
    data = _load(tmp_path, path="d.csv")  # header "auto": the first row is numbers
    np.testing.assert_array_equal(data.X, rows[:, :2])
    np.testing.assert_array_equal(data.y, [0, 1, 0, 1])
    first = _load(tmp_path, path="d.csv", label_column=0, header=False)
    np.testing.assert_array_equal(first.X, rows[:, 1:])
    np.testing.assert_array_equal(first.y, np.unique(rows[:, 0], return_inverse=True)[1])
    assert first.feature_names == ("x1", "x2")


def test_npz(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 3)).astype(np.float32), np.repeat([5, 2, 9], 4)
    np.savez(tmp_path / "d.npz", X=X, y=y)
    data = _load(tmp_path, path="d.npz", uninformative=[2])
    np.testing.assert_array_equal(data.X, X.astype(np.float64))
    np.testing.assert_array_equal(data.y, np.repeat([1, 0, 2], 4))
    assert data.uninformative.tolist() == [False, False, True]


@pytest.mark.parametrize("origin", ["csv", "loader"])
def test_informative_and_uninformative_columns_label_a_set(origin, tmp_path, monkeypatch):
    """A CSV or loader set of 8 features with informative = [0, 1, 2]: the masks hold the
    listed columns; with the 5 others uninformative it is "+3 -5" (the Brodinova sets'
    form), with 2 of them "+3 -2, 3 unknown"; a column in both lists, or out of range, is
    refused."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 8)), np.repeat([1, 2, 3], 4)
    if origin == "csv":
        np.savetxt(tmp_path / "d.csv", np.column_stack([X, y]), delimiter=",")
        table = {"path": "d.csv"}
    else:
        np.savez(tmp_path / "xy.npz", X=X, y=y)
        module = _loader_module(tmp_path, monkeypatch, f"""
            import numpy as np
            def xy():
                data = np.load({str(tmp_path / "xy.npz")!r})
                return data["X"], data["y"]
            """)
        table = {"loader": f"{module}:xy"}
    every = _load(tmp_path, informative=[0, 1, 2], uninformative=[3, 4, 5, 6, 7], **table)
    assert every.informative.tolist() == [True] * 3 + [False] * 5
    assert every.uninformative.tolist() == [False] * 3 + [True] * 5
    assert every.feature_quality == "+3 -5"
    some = _load(tmp_path, informative=[0, 1, 2], uninformative=[6, 7], **table)
    assert some.feature_quality == "+3 -2, 3 unknown"
    assert _load(tmp_path, informative=[4], **table).feature_quality == "+1 -0, 7 unknown"
    with pytest.raises(ValueError, match=r"column\(s\) \[2\] are both informative and "):
        _definition(tmp_path, informative=[0, 2], uninformative=[2, 3], **table)
    with pytest.raises(DataError, match=r"informative column\(s\) \[8\] \(0-based\) out of "):
        _load(tmp_path, informative=[8], **table)


def _loader_module(tmp_path, monkeypatch, body):
    name = next(_module_names)
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_loader_returning_x_y_or_a_dataset(tmp_path, monkeypatch):
    module = _loader_module(tmp_path, monkeypatch, """
        import numpy as np
        from pcskm.experiments import Dataset

        X = np.arange(12.0).reshape(6, 2) ** 2
        def pair():
            return X, [1, 1, 2, 2, 3, 3]
        def dataset():
            return Dataset(name="any", X=X, y=np.array([0, 0, 0, 1, 1, 1]),
                           feature_names=("u", "v"), uninformative=None,
                           description="squares", source="here", code=3)
        """)
    X = np.arange(12.0).reshape(6, 2) ** 2
    pair = _load(tmp_path, loader=f"{module}:pair")
    np.testing.assert_array_equal(pair.X, X)
    np.testing.assert_array_equal(pair.y, [0, 0, 1, 1, 2, 2])
    data = _load(tmp_path, loader=f"{module}:dataset")
    np.testing.assert_array_equal(data.y, [0, 0, 0, 1, 1, 1])
    # the spec's name, code and key, whatever the loader's Dataset says
    assert (data.name, data.code, data.feature_names, data.description) == (
        "mine", 0, ("u", "v"), "squares")


def test_standardise_is_the_population_z_score(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(3, 5, size=(20, 3))
    X[:, 1] = 4.0  # constant: standardised to 0, with a warning
    np.savez(tmp_path / "d.npz", X=X, y=np.arange(20) % 2)
    with pytest.warns(UserWarning, match=r"column\(s\) 2 \(1-based\) are constant"):
        data = _load(tmp_path, path="d.npz", standardise=True)
    for j in (0, 2):
        column = X[:, j]
        mean = sum(column) / len(column)
        sd = (sum((v - mean) ** 2 for v in column) / len(column)) ** 0.5  # ddof = 0
        np.testing.assert_allclose(data.X[:, j], (column - mean) / sd, rtol=1e-12)
    assert (data.X[:, 1] == 0).all() and data.source.endswith("standardised")
    with pytest.warns(UserWarning, match=r"column\(s\) 2 \(1-based\) are constant; they "):
        raw = _load(tmp_path, path="d.npz")  # default: as stored
    np.testing.assert_array_equal(raw.X, X)


def test_n_clusters_other_than_the_classes(tmp_path):
    np.savez(tmp_path / "d.npz", X=np.arange(16.0).reshape(8, 2), y=[0, 1] * 4)
    data = _load(tmp_path, path="d.npz", n_clusters=4)
    assert (data.n_clusters, data.n_classes) == (4, 2)


# --- bad input: one error naming the file, row or column -----------------------------------

@pytest.mark.parametrize("text, message", [
    ("a,b,y\n1,2,0\n3,x,1\n", r"line 3, column 2 \(1-based\) holds 'x', not a number"),
    ("a,b,y\n1,2,0\n3,nan,1\n", r"NaN or inf at line 3, column 2 \(1-based\)"),
    ("1,2,0\n3,4,1\ninf,4,1\n", r"NaN or inf at line 3, column 1 \(1-based\)"),
    ("a,b,y\n1,2,0\n3,4,\n", r"line 3, column 3 \(1-based, the label column\) is empty"),
    ("a,b,y\n1,2,0\n3,4,0\n", r"all 2 points have one label; clustering needs at least 2"),
])
def test_bad_csv_names_the_file_line_and_column(tmp_path, text, message):
    (tmp_path / "bad.csv").write_text(text)
    with pytest.raises(DataError, match=message) as error:
        _load(tmp_path, path="bad.csv")
    assert str(tmp_path / "bad.csv") in str(error.value)


@pytest.mark.parametrize("text, message", [
    ("a,b,y\n1,2,0\n3,4,1,5\n", r"line 3 has 4 fields, the first row \(line 1\) 3"),
    ("a,b,y\n1,2,0\n3,4\n", r"line 3 has 2 fields, the first row \(line 1\) 3"),
    ("", r"cannot be read as CSV: it has no rows"),
    ("a,b,y\n\n1,2,0\n \n3,x,1\n", r"line 5, column 2 \(1-based\) holds 'x'"),
])
def test_a_ragged_or_empty_csv_is_refused_naming_the_line(tmp_path, text, message):
    """A row of another number of fields than the first is named by its line; blank lines
    are skipped and still counted, so a line is the one an editor shows."""
    (tmp_path / "bad.csv").write_text(text)
    with pytest.raises(DataError, match=message):
        _load(tmp_path, path="bad.csv")


def test_a_wide_csv_reads_as_numpy_writes_it(tmp_path):
    """12 rows of 100,000 feature columns (the issue's over-wide file was 12 x 10^6, which
    took minutes): the same matrix as numpy.savetxt wrote, the labels from the last column
    (the benchmark of its speed: benchmarks/bench_wide_csv.py)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 100_000)).round(4)
    y = np.arange(12) % 3
    np.savetxt(tmp_path / "wide.csv", np.column_stack([X, y]), delimiter=",", fmt="%g")
    data = _load(tmp_path, path="wide.csv")
    np.testing.assert_array_equal(data.X, X)
    np.testing.assert_array_equal(data.y, y)


def test_bad_label_column(tmp_path):
    (tmp_path / "d.csv").write_text("a,b,class\n1,2,0\n3,4,1\n")
    with pytest.raises(DataError, match=r"has no column 'klass'; did you mean 'class'"):
        _load(tmp_path, path="d.csv", label_column="klass")
    with pytest.raises(DataError, match=r"label_column 5 is out of range: .*d\.csv has 3 col"):
        _load(tmp_path, path="d.csv", label_column=5)


@pytest.mark.parametrize("arrays, table, message", [
    ({"X": np.ones((4, 2)), "y": [0, 1, 0]}, {}, r"4 rows of data but labels of shape \(3,\)"),
    ({"X": np.ones((4, 2))}, {}, r"has no array y \(it needs X and y"),
    ({"X": np.array([[0.0], [np.inf]]), "y": [0, 1]}, {},
     r"NaN or inf at data row 2, column 1 \(1-based\)"),
    ({"X": np.arange(8.0).reshape(4, 2), "y": [0, 1, 0, 1]}, {"uninformative": [1, 2]},
     r"uninformative column\(s\) \[2\] \(0-based\) out of range: .* has 2 feature columns"),
    ({"X": np.array([[0.0], [0], [1], [1]]), "y": [0, 1, 0, 1]}, {"n_clusters": 3},
     r"n_clusters = 3 but .* has only 2 distinct points"),
])
def test_bad_npz(tmp_path, arrays, table, message):
    np.savez(tmp_path / "d.npz", **arrays)
    with pytest.raises(DataError, match=message) as error:
        _load(tmp_path, path="d.npz", **table)
    assert str(tmp_path / "d.npz") in str(error.value)


def test_constant_column_warns_and_is_kept(tmp_path):
    X = np.column_stack([np.arange(6.0), np.full(6, 2.0)])
    np.savez(tmp_path / "d.npz", X=X, y=[0, 1] * 3)
    with pytest.warns(UserWarning, match=r"d\.npz: column\(s\) 2 \(1-based\) are constant"):
        data = _load(tmp_path, path="d.npz")
    np.testing.assert_array_equal(data.X, X)


def test_missing_file_and_unknown_clustbench_set_at_parse_time(tmp_path, clustbench_dir):
    with pytest.raises(DataError, match=re.escape(f"no file {tmp_path / 'gone.csv'}")):
        _definition(tmp_path, path="gone.csv")
    with pytest.raises(DataError, match=r"no set 'x22' in .*wut .*; did you mean 'x2'"):
        _definition(tmp_path, source="clustbench:wut/x22", clustbench_dir=str(clustbench_dir))
    with pytest.raises(DataError, match=r"no wut/x2\.labels5\.gz \(labels there: labels0, "
                                        r"labels1\)"):
        _definition(tmp_path, source="clustbench:wut/x2", labels="labels5",
                    clustbench_dir=str(clustbench_dir))


def test_bad_loaders(tmp_path, monkeypatch):
    module = _loader_module(tmp_path, monkeypatch, """
        import numpy as np
        def text():
            return "not data"
        """)
    broken = _loader_module(tmp_path, monkeypatch, "import a_module_nobody_has\n")
    with pytest.raises(DataError, match=r"cannot be imported: ModuleNotFoundError: No module "
                                        r"named 'a_module_nobody_has'"):
        _definition(tmp_path, loader=f"{broken}:load")
    with pytest.raises(DataError, match=rf"module {module} has no function 'missing'"):
        _definition(tmp_path, loader=f"{module}:missing")
    with pytest.raises(DataError, match=r"returned str; it must return \(X, y\) or a "):
        _load(tmp_path, loader=f"{module}:text")


@pytest.mark.parametrize("table, message", [
    ({"path": "d.csv", "loader": "m:f"}, "needs exactly one of source, path, loader"),
    ({"path": "d.txt"}, "data.mine.path must name a .csv or .npz file"),
    ({"source": "wut/x2"}, 'data.mine.source must be "clustbench:BATTERY/NAME"'),
    ({"path": "d.csv", "standardize": True}, "unknown key 'standardize' in data.mine; did you "
                                             "mean 'standardise'?"),
    ({"path": "d.csv", "noise": "drop"}, "data.mine.noise applies to a clustbench set"),
    ({"path": "d.npz", "header": True}, "data.mine.header applies to a CSV file"),
    ({"path": "d.csv", "uninformative": [-1]}, "uninformative must be a list of 0-based"),
    ({"path": "d.csv", "n_clusters": 1}, "n_clusters must be an integer >= 2"),
])
def test_bad_tables(tmp_path, table, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _definition(tmp_path, **table)


# --- the spec ------------------------------------------------------------------------------

def _spec_text(tmp_path, datasets, tables=""):
    return SPEC.format(datasets=datasets) + textwrap.dedent(tables)


def test_spec_tables(tmp_path, caplog):
    np.savez(tmp_path / "d.npz", X=np.arange(12.0).reshape(6, 2), y=[0, 1] * 3)
    tables = '[data.mine]\npath = "d.npz"\n'
    spec = parse_spec(_spec_text(tmp_path, '["iris", "mi*"]', tables), folder=tmp_path)
    assert spec.datasets == ("iris", "mine")
    assert spec.data_ref("iris") == "iris" and spec.data_ref("mine") == spec.data[0]
    assert spec.to_dict()["data"] == {"mine": {"path": "d.npz"}}
    # the folder relative paths resolve against is not part of the hash
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(tmp_path / "d.npz", elsewhere)
    moved = parse_spec(_spec_text(tmp_path, '["iris", "mine"]', tables), folder=elsewhere)
    assert moved.hash() == spec.hash() and moved.data != spec.data
    without = parse_spec(_spec_text(tmp_path, '["iris"]'))
    assert without.hash() != spec.hash() and without.data == ()
    # a table the datasets do not list (a trimmed copy of a spec): a warning, and the spec
    # is the one without it (issue 65, item 5)
    with caplog.at_level("WARNING", logger="pcskm"):
        trimmed = parse_spec(_spec_text(tmp_path, '["iris"]', tables), folder=tmp_path)
    assert "[data.mine] defined but not listed in datasets: ignored" in caplog.text
    assert trimmed.data == () and trimmed.hash() == without.hash()
    for text, message in [
        (_spec_text(tmp_path, '["iris"]', '[data.iris]\npath = "d.npz"\n'),
         "'iris' is a registry data set"),
        (_spec_text(tmp_path, '["mine"]', '[data.mine]\npath = "gone.npz"\n'), "no file"),
        *((_spec_text(tmp_path, f'["{name}"]', f'[data."{name}"]\npath = "d.npz"\n'),
           f"[data.{name}]: '{name}' is a name the store uses for its own files (zarr.json, "
           "*.partial); give the data set another name")
          for name in ("zarr.json", "ZARR.JSON", "mine.partial")),
    ]:
        with pytest.raises(ValueError, match=re.escape(message)):
            parse_spec(text, folder=tmp_path)
    # a store's recorded spec is re-read without its files
    assert parse_spec(_spec_text(tmp_path, '["mine"]', '[data.mine]\npath = "gone.npz"\n'),
                      check_external=False).data[0].path == "gone.npz"


def test_a_class_smaller_than_n_folds_is_refused_before_compute():
    from pcskm.runner.store import spec_layout

    spec = parse_spec(SPEC.format(datasets='["iris"]').replace("n_folds = 3", "n_folds = 51"))
    with pytest.raises(DataError, match=r"iris: class 0 .* has 50 points, fewer than the "
                                        r"spec's n_folds = 51"):
        spec_layout(spec)


def test_a_benchmark_set_with_tiny_classes_is_pointed_to_its_subsets_loader(clustbench_dir,
                                                                          monkeypatch):
    """uci/ecoli (classes of 2 points) with 10 folds is refused with the loader of
    docs/method/datasets.md §8.5, and the set that loader reads passes the check; with more
    folds than that loader's class size, the error names without_small_classes instead."""
    from pcskm.experiments.clustbench_subsets import ecoli
    from pcskm.experiments.sources import check_folds
    from pcskm.runner.store import spec_layout

    monkeypatch.setenv("PCSKM_CLUSTBENCH", str(clustbench_dir))
    table = '[data.my-ecoli]\nsource = "clustbench:uci/ecoli"\n'
    spec = parse_spec(SPEC.format(datasets='["my-ecoli"]').replace("n_folds = 3", "n_folds = 10")
                      + table)
    with pytest.raises(DataError) as refused:
        spec_layout(spec)
    hint = 'loader = "pcskm.experiments.clustbench_subsets:ecoli"'
    assert hint in str(refused.value) and "docs/method/datasets.md §8.5" in str(refused.value)
    check_folds(ecoli(), 10)  # the set the hint names has every class of 10 points or more
    more = parse_spec(SPEC.format(datasets='["my-ecoli"]').replace("n_folds = 3", "n_folds = 12")
                      + table)
    with pytest.raises(DataError, match=re.escape('without_small_classes("clustbench:uci/ecoli", '
                                                  "min_size=12)")):
        spec_layout(more)


def test_datasets_list_of_a_battery_gives_each_set_and_whether_it_splits(clustbench_dir,
                                                                       monkeypatch, capsys):
    """``pcskm datasets list clustbench:uci``: one row per set of the battery's folder, with
    n, p, k and the smallest class counted here from the suite's files (labels0, noise
    label 0 dropped), and "yes" where every class has at least n_folds points."""
    import gzip

    from pcskm.runner.cli import main

    monkeypatch.setenv("PCSKM_CLUSTBENCH", str(clustbench_dir))
    assert main(["datasets", "list", "clustbench:uci", "--n-folds", "9"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    files = sorted((clustbench_dir / "uci").glob("*.data.gz"))
    assert sorted(rows) == sorted(f.name[:-len(".data.gz")] for f in files)
    for file in files:
        X = np.loadtxt(file, ndmin=2)
        with gzip.open(str(file).replace(".data.gz", ".labels0.gz"), "rt") as labels:
            y = np.array([int(v) for v in labels.read().split()])
        counts = np.unique(y[y > 0], return_counts=True)[1]
        expected = [str(int((y > 0).sum())), str(X.shape[1]), str(len(counts)),
                    str(counts.min()), "yes" if counts.min() >= 9 else "no"]
        assert rows[file.name[:-len(".data.gz")]] == expected, file.name


# --- random keys ---------------------------------------------------------------------------

def test_keys_of_a_spec_data_set(tmp_path):
    """Key (purpose, 0, name as a big-endian integer, ...): NumPy's SeedSequence takes the
    big integer, and the compiled draws follow it."""
    np.savez(tmp_path / "d.npz", X=np.arange(40.0).reshape(20, 2), y=np.arange(20) % 2)
    name = "my-data.v2"
    data = load(parse_definition(name, {"path": "d.npz"}, tmp_path))
    sub = int.from_bytes(name.encode("utf-8"), "big")
    assert sub == sum(b << (8 * i) for i, b in enumerate(reversed(name.encode())))
    assert (data.code, data.subset) == (0, sub) and sub >= 2**64
    cv = Protocol(data, seed=3, n_folds=4)
    key = (2, 0, sub, 4, 100, 1, 2)
    assert cv.constraint_seed("random", 10, 1, 2).spawn_key == key
    assert cv.seeding_seed("random", 10, 1, 2).spawn_key == (3, *key[1:])
    expected = np.random.SeedSequence(3, spawn_key=key)
    np.testing.assert_array_equal(seed_sequence(3, key).generate_state(8),
                                  expected.generate_state(8))
    state = draws.generator_state(np.random.SeedSequence(3, spawn_key=key))
    np.testing.assert_array_equal([draws.next_uint64(state) for _ in range(4)],
                                  np.random.PCG64(expected).random_raw(4))
    # the folds: from (1, 0, sub) only, so another name gets other folds
    same = Protocol((0, sub), y=data.y, seed=3, n_folds=4)
    np.testing.assert_array_equal(cv.fold_of, same.fold_of)
    other = Protocol((0, int.from_bytes(b"my-data.v3", "big")), y=data.y, seed=3, n_folds=4)
    assert not np.array_equal(cv.fold_of, other.fold_of)


# --- the runner: provenance, the dry run, a mixed study -----------------------------------

@pytest.fixture(scope="module")
def local_client():
    from distributed import Client

    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address=":0") as client:
        yield client


def _csv(path, shift=0.0):
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(c, 0.5, size=(8, 2)) for c in (0, 4, 8)])
    X[0, 0] += shift
    y = np.repeat([1, 2, 3], 8)
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="u,v,label",
               comments="")
    return X, y - 1


def test_mixed_study_records_source_and_digest(tmp_path, clustbench_dir, local_client):
    """iris, a CSV file and a clustbench set in one study (workers receive the definitions
    pickled: one pickled is equal to, and hashes as, the original)."""
    from pcskm.runner import run_spec

    X, y = _csv(tmp_path / "blobs.csv")
    text = _spec_text(tmp_path, '["iris", "blobs", "x2"]', f"""
        [data.blobs]
        path = "blobs.csv"
        label_column = "label"
        description = "three blobs"

        [data.x2]
        source = "clustbench:wut/x2"
        standardise = true
        clustbench_dir = "{clustbench_dir}"
        """)
    spec = parse_spec(text, folder=tmp_path)
    store = tmp_path / "s.zarr"
    for definition in spec.data:
        copy = pickle.loads(pickle.dumps(definition))
        assert copy == definition and hash(copy) == hash(definition)
    summary = run_spec(spec, store, client=local_client, progress=False)
    assert not summary.errors
    root = zarr.open_group(str(store), mode="r")
    blobs = root["blobs"].attrs.asdict()
    assert blobs["data_sha256"] == _sha256(X, y)
    assert blobs["source"] == f"{tmp_path / 'blobs.csv'} (CSV)"
    assert blobs["definition"] == {"name": "blobs", "path": "blobs.csv",
                                   "label_column": "label", "description": "three blobs",
                                   "folder": str(tmp_path.resolve())}
    assert (blobs["code"], blobs["n_samples"], blobs["n_clusters"]) == (0, 24, 3)
    raw = np.loadtxt(clustbench_dir / "wut/x2.data.gz")
    z = (raw - raw.mean(axis=0)) / raw.std(axis=0)
    x2 = root["x2"].attrs.asdict()
    assert x2["data_sha256"] == _sha256(z, _gz_labels(clustbench_dir / "wut/x2.labels0.gz") - 1)
    assert x2["source"].startswith("clustbench:wut/x2") and x2["source"].endswith("standardised")
    assert x2["subset"] == int.from_bytes(b"x2", "big")
    assert "definition" not in root["iris"].attrs
    assert all(int(root[name]["done"][:].sum()) == 1 for name in ("iris", "blobs", "x2"))


def test_edited_file_is_refused_before_computing(tmp_path, local_client):
    from pcskm.runner import IncompatibleStore, run_spec

    _csv(tmp_path / "blobs.csv")
    text = _spec_text(tmp_path, '["blobs", "iris"]', '[data.blobs]\npath = "blobs.csv"\n')
    store = tmp_path / "s.zarr"
    run_spec(parse_spec(text, folder=tmp_path), store, client=local_client, progress=False)
    before = zarr.open_group(str(store), mode="r")["blobs"].attrs["data_sha256"]
    X, y = _csv(tmp_path / "blobs.csv", shift=0.25)  # one value edited
    extended = text.replace('"iris"]', '"iris", "brodinova-5-5"]')
    with pytest.raises(IncompatibleStore) as error:
        run_spec(parse_spec(extended, folder=tmp_path), store, client=local_client,
                 progress=False)
    message = str(error.value)
    assert "the data of blobs differ" in message
    assert before in message and _sha256(X, y) in message
    assert "restore the data" in message
    assert "brodinova-5-5" not in zarr.open_group(str(store), mode="r")  # nothing computed


def test_dry_run_checks_the_data(tmp_path, capsys):
    from pcskm.runner.cli import main

    (tmp_path / "bad.csv").write_text("a,b,y\n1,2,0\n3,4,1\n5,?,0\n")
    spec = tmp_path / "study.toml"
    spec.write_text(_spec_text(tmp_path, '["bad"]', '[data.bad]\npath = "bad.csv"\n'))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["run", str(spec), "--dry-run", "--store", str(tmp_path / "s.zarr")])
    assert code == 2
    assert f"{tmp_path / 'bad.csv'}: line 4, column 2 (1-based) holds '?'" in \
        capsys.readouterr().err
    assert not (tmp_path / "s.zarr").exists()



def test_datasets_list_of_a_spec(tmp_path, capsys):
    from pcskm.runner.cli import main

    X, y = _csv(tmp_path / "blobs.csv")
    spec = tmp_path / "study.toml"
    spec.write_text(_spec_text(tmp_path, '["iris", "blobs"]', '[data.blobs]\npath = "blobs.csv"\n'))
    assert main(["datasets", "list", str(spec)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "n", "p", "k", "source"]
    assert lines[1].split() == ["blobs", "24", "2", "3", f"{tmp_path / 'blobs.csv'}", "(CSV)"]
    assert len(lines) == 2  # the registry's iris is not a table of the spec

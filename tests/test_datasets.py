"""Data sets (spec datasets.md): the paper's files, the generated sets, the data folder."""

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.linalg

from pcskm.experiments import _datafiles, _matfiles
from pcskm.experiments._brodinova import parameters
from pcskm.experiments.datasets import (
    dataset_info,
    fetch,
    format_dataset_table,
    list_datasets,
    load,
    match_datasets,
    verify,
)

# datasets.md §1: name -> (n, p, label values in the file, counts per label)
SPEC_TABLE = {
    "fisheriris": (150, 4, (1, 2, 3), (50, 50, 50)),
    "ionosphere": (351, 34, (1, 2), (225, 126)),
    "mwm-ttscst": (424, 18, (1, 3, 8), (168, 182, 74)),
    "mwm-ttchst": (406, 18, (1, 5, 8), (168, 164, 74)),
    **{f"digits{c}-{s}": (150, 16, (1, 2, 3), (50, 50, 50))
       for c in ("048", "389") for s in range(1, 11)},
}
FILES = {
    "fisheriris": "datasets/real/fisheriris.mat",
    "ionosphere": "datasets/real/ionosphere.mat",
    "mwm-ttscst": "datasets/MWM/TTSCST.mat",
    "mwm-ttchst": "datasets/MWM/TTCHST.mat",
    **{f"digits{c}-{s}": f"datasets/digits{c}/data{s}.mat"
       for c in ("048", "389") for s in range(1, 11)},
}


def _rng(key):
    return np.random.default_rng(np.random.SeedSequence(entropy=0, spawn_key=key))


@pytest.mark.parametrize("name", sorted(SPEC_TABLE))
def test_paper_files_match_the_spec_table(data_dir, name):
    n, p, values, counts = SPEC_TABLE[name]
    dataset = load(name, data_dir)
    raw = scipy.io.loadmat(data_dir / FILES[name])
    assert dataset.X.shape == (n, p) and dataset.X.dtype == np.float64
    assert dataset.y.dtype == np.int64 and dataset.n_clusters == len(values)
    # labels relabelled by sorted value: the file's label v becomes values.index(v)
    labels = raw["x_labs"].ravel()
    np.testing.assert_array_equal(np.unique(labels), values)
    np.testing.assert_array_equal(dataset.y, [values.index(v) for v in labels])
    np.testing.assert_array_equal(np.bincount(dataset.y), counts)
    # no scaling: the values are the file's, as float64
    np.testing.assert_array_equal(dataset.X, raw["x"].astype(np.float64))
    info = dataset_info(name, data_dir)
    assert (info["n"], info["p"], info["k"], info["available"]) == (n, p, len(values), True)
    assert (info["code"], info["subset"]) == (dataset.code, dataset.subset)


def test_codes_follow_the_spec(data_dir):
    codes = {name: (load(name, data_dir).code, load(name, data_dir).subset)
             for name in ("fisheriris", "ionosphere", "digits048-7", "digits389-10",
                          "mwm-ttscst", "mwm-ttchst", "brodinova-5-5", "brodinova-3-7",
                          "digits048-contaminated-3", "iris")}
    assert codes == {"fisheriris": (1, 0), "ionosphere": (2, 0), "digits048-7": (3, 7),
                     "digits389-10": (4, 10), "mwm-ttscst": (5, 0), "mwm-ttchst": (6, 0),
                     "brodinova-5-5": (7, 0), "brodinova-3-7": (8, 0),
                     "digits048-contaminated-3": (3, 3), "iris": (1, 0)}


def test_every_dataset_info_matches_its_data(data_dir):
    names = list_datasets()
    # fisheriris and iris, ionosphere, 20 digits subsets, 2 MWM sets, 8 Brodinova sets,
    # optdigits048, 20 weak-signal sets (datasets.md §4.3), 20 contaminated and 20 shuffled
    assert len(names) == 2 + 1 + 20 + 2 + 8 + 1 + 20 + 20 + 20 \
        and len(set(names)) == len(names)
    for name in names:
        info, dataset = dataset_info(name, data_dir), load(name, data_dir)
        assert (info["n"], info["p"], info["k"]) == (*dataset.X.shape, dataset.n_clusters)
        assert dataset.name == name and len(dataset.feature_names) == dataset.n_features
        assert np.isfinite(dataset.X).all()


def test_iris_is_scikit_learns_load_iris_without_importing_it():
    """The bundled iris.csv read directly gives load_iris()'s values bit for bit, its
    feature names and its classes (relabelled 0, 1, 2 as they already are); loading it in a
    fresh process imports no scikit-learn."""
    from sklearn.datasets import load_iris

    iris, bunch = load("iris"), load_iris()
    assert iris.X.dtype == bunch.data.dtype and iris.X.shape == bunch.data.shape
    assert iris.X.tobytes() == bunch.data.tobytes()
    np.testing.assert_array_equal(iris.y, bunch.target)
    assert iris.feature_names == tuple(bunch.feature_names)
    code = ("import sys; from pcskm.experiments import datasets; datasets.load('iris'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'sklearn'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_iris_equals_fisheriris(data_dir):
    iris, fisher = load("iris"), load("fisheriris", data_dir)
    np.testing.assert_array_equal(iris.X, fisher.X)
    np.testing.assert_array_equal(iris.y, fisher.y)
    assert (iris.code, iris.subset) == (fisher.code, fisher.subset) == (1, 0)
    # the corrected rows 35 and 38 (1-based) of datasets.md §3
    np.testing.assert_array_equal(fisher.X[34], [4.9, 3.1, 1.5, 0.2])
    np.testing.assert_array_equal(fisher.X[37], [4.9, 3.6, 1.4, 0.1])


def test_uint8_digits_are_converted_before_arithmetic(data_dir):
    raw = scipy.io.loadmat(data_dir / "datasets/digits048/data1.mat")["x"]
    assert raw.dtype == np.uint8
    X = load("digits048-1", data_dir).X
    diff = X[0] - X[1]
    np.testing.assert_array_equal(diff, raw[0].astype(int) - raw[1].astype(int))
    assert (diff < 0).any()  # would have wrapped around in uint8
    assert X.sum() == raw.astype(np.int64).sum()


def test_mwm_uninformative_columns(data_dir):
    for name in ("mwm-ttscst", "mwm-ttchst"):
        dataset = load(name, data_dir)
        np.testing.assert_array_equal(np.flatnonzero(dataset.uninformative), np.arange(8, 18))
        # columns 10-18 (1-based) are permutations of column 9 (datasets.md §3)
        for j in range(9, 18):
            np.testing.assert_array_equal(np.sort(dataset.X[:, j]), np.sort(dataset.X[:, 8]))
        assert dataset.feature_quality == "8 unknown, -10"


def _brodinova_by_the_spec(p_info, p_noise, code, G=3):
    """datasets.md §4 step by step, with plain loops where the spec describes entries."""
    n_g = 40
    rng = _rng((4, code))
    r_neg = rng.uniform(-6, -3, size=G)
    r_pos = rng.uniform(3, 6, size=G)
    mu = np.concatenate((r_neg, r_pos))[rng.integers(2 * G)]
    M = np.zeros((p_info, G))
    for j in range(p_info):
        M[j, j % G] = mu
    rho = rng.uniform(0.1, 0.9, size=G)
    sigmas = []
    for g in range(G):
        while True:
            A = rng.uniform(size=(p_info, p_info))
            if np.linalg.matrix_rank(A) == p_info:
                break
        Q = scipy.linalg.qr(A, pivoting=True)[0]
        R = np.empty((p_info, p_info))
        for a in range(p_info):
            for b in range(p_info):
                R[a, b] = 1.0 if a == b else rho[g]
        sigma = Q @ R @ Q.T
        sigmas.append((sigma + sigma.T) / 2)
    blocks = []
    for g in range(G):
        Xg = rng.multivariate_normal(M[:, g], sigmas[g], size=n_g, method="cholesky")
        Ng = rng.standard_normal((n_g, p_noise))
        blocks.append(np.hstack((Xg, Ng)))
    return np.vstack(blocks), np.repeat(np.arange(G), n_g)


# every generated set of datasets.md §4 and §4.1: (name, ds, p_info, p_noise, groups)
BRODINOVA = [("brodinova-5-5", 7, 5, 5, 3), ("brodinova-3-7", 8, 3, 7, 3),
             ("brodinova-5-45", 10, 5, 45, 3), ("brodinova-3-97", 11, 3, 97, 3),
             ("brodinova-10-90", 12, 10, 90, 3), ("brodinova-4-46-k4", 13, 4, 46, 4),
             ("brodinova-6-94-k5", 14, 6, 94, 5), ("brodinova-8-192-k4", 15, 8, 192, 4)]


@pytest.mark.parametrize("name,code,p_info,p_noise,G", BRODINOVA)
def test_brodinova_is_the_spec_generator(name, code, p_info, p_noise, G):
    dataset = load(name)
    X, y = _brodinova_by_the_spec(p_info, p_noise, code, G)
    np.testing.assert_array_equal(dataset.X, X)  # bit-identical
    np.testing.assert_array_equal(dataset.y, y)
    p = p_info + p_noise
    assert dataset.X.shape == (40 * G, p) and (dataset.code, dataset.subset) == (code, 0)
    np.testing.assert_array_equal(dataset.uninformative, np.arange(p) >= p_info)
    np.testing.assert_array_equal(dataset.informative, np.arange(p) < p_info)
    assert dataset.feature_quality == f"+{p_info} -{p_noise}"


@pytest.mark.parametrize("p_info,code", [(5, 7), (3, 8)])
def test_brodinova_parameters_satisfy_the_spec_checks(p_info, code):
    params = parameters(p_info, _rng((4, code)))
    mu = params.mu
    assert 3 <= abs(mu) <= 6
    for g in range(3):
        rho = params.rho[g]
        assert 0.1 <= rho <= 0.9
        sigma = params.covariances[g]
        np.testing.assert_array_equal(sigma, sigma.T)
        expected = np.sort([1 + (p_info - 1) * rho] + [1 - rho] * (p_info - 1))
        np.testing.assert_allclose(np.linalg.eigvalsh(sigma), expected, atol=1e-12)
        np.testing.assert_allclose(np.trace(sigma), p_info, atol=1e-12)
    assert not np.allclose(np.diagonal(params.covariances, axis1=1, axis2=2), 1.0)
    means = params.means.T  # one row per group
    distances = {round(float(np.linalg.norm(means[a] - means[b]) / abs(mu)), 12)
                 for a in range(3) for b in range(a + 1, 3)}
    expected = {2.0, round(np.sqrt(3), 12)} if p_info == 5 else {round(np.sqrt(2), 12)}
    assert distances == expected
    if p_info == 5:
        np.testing.assert_array_equal(means / mu, [[1, 0, 0, 1, 0], [0, 1, 0, 0, 1],
                                                   [0, 0, 1, 0, 0]])


@pytest.mark.parametrize("classes,code", [("048", 3), ("389", 4)])
@pytest.mark.parametrize("sub", [1, 10])
def test_contaminated_digits(data_dir, classes, code, sub):
    clean = load(f"digits{classes}-{sub}", data_dir)
    dirty = load(f"digits{classes}-contaminated-{sub}", data_dir)
    extra = _rng((5, code, sub)).exponential(scale=1.0, size=(150, 4))
    np.testing.assert_array_equal(dirty.X, np.hstack([clean.X, extra]))
    np.testing.assert_array_equal(dirty.y, clean.y)
    assert (dirty.code, dirty.subset) == (clean.code, clean.subset) == (code, sub)
    np.testing.assert_array_equal(np.flatnonzero(dirty.uninformative), [16, 17, 18, 19])
    assert dirty.feature_quality == "16 unknown, -4"


def test_checksums_in_the_code_are_the_published_ones(data_dir):
    published = {}
    for line in (data_dir / "SHA256SUMS").read_text().splitlines():
        digest, path = line.split()
        published[path.removeprefix("./")] = digest
    assert _datafiles.SHA256 == published


# --- reading .mat files ---------------------------------------------------------------------

def _savemat(path, **variables):
    path.parent.mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(path, variables)
    return path


def test_reader_converts_uint8_and_relabels(tmp_path):
    x = np.array([[0, 100], [3, 5], [250, 1], [7, 7]], dtype=np.uint8)
    path = _savemat(tmp_path / "a.mat", x=x, x_labs=np.array([[8], [1], [3], [8]], np.uint8))
    X, y, values = _matfiles.read_labelled_mat(path)
    assert X.dtype == np.float64
    np.testing.assert_array_equal(X, [[0, 100], [3, 5], [250, 1], [7, 7]])
    np.testing.assert_array_equal(y, [2, 0, 1, 2])
    np.testing.assert_array_equal(values, [1, 3, 8])
    assert X[1, 0] - X[1, 1] == -2.0


@pytest.mark.parametrize("variables,message", [
    ({"x": np.ones((3, 2))}, "no variable 'x_labs'"),
    ({"x_labs": np.ones((3, 1))}, "no variable 'x'"),
    ({"x": np.ones((3, 2)), "x_labs": np.ones((4, 1))}, "3 rows but x_labs has 4"),
    ({"x": np.ones((3, 2)), "x_labs": np.ones((3, 2))}, "must be a vector"),
    ({"x": np.ones((2, 3, 2)), "x_labs": np.ones((2, 1))}, "(n, p) matrix"),
    ({"x": np.array([[1.0, np.nan], [0, 0]]), "x_labs": np.ones((2, 1))}, "NaN or Inf"),
    ({"x": np.array([[1.0, np.inf], [0, 0]]), "x_labs": np.ones((2, 1))}, "NaN or Inf"),
    ({"x": np.ones((2, 2)), "x_labs": np.array([[1.5], [2.0]])}, "whole numbers"),
    ({"x": np.array([["a", "b"]]), "x_labs": np.ones((1, 1))}, "must be numeric"),
])
def test_reader_errors(tmp_path, variables, message):
    path = _savemat(tmp_path / "bad.mat", **variables)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _matfiles.read_labelled_mat(path)


# --- the data folder -----------------------------------------------------------------------

def test_missing_files_say_how_to_fix_it(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError) as error:
        load("ionosphere", tmp_path)
    message = str(error.value)
    for part in ("datasets/real/ionosphere.mat", str(tmp_path), "pcskm datasets fetch",
                 "PCSKM_DATA=/path", "--data-dir"):
        assert part in message
    monkeypatch.setenv("PCSKM_DATA", str(tmp_path / "env"))
    with pytest.raises(FileNotFoundError, match="from PCSKM_DATA"):
        load("digits389-2")
    monkeypatch.delenv("PCSKM_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(FileNotFoundError, match="default cache folder"):
        load("mwm-ttchst")
    assert _datafiles.resolve_data_dir()[0] == tmp_path / "cache" / "pcskm"


def test_data_folder_from_the_environment(data_dir, monkeypatch):
    monkeypatch.setenv("PCSKM_DATA", str(data_dir))
    assert load("fisheriris").X.shape == (150, 4)


def test_generated_sets_need_no_files(tmp_path):
    for name in ("iris", "brodinova-5-5", "brodinova-3-7"):
        assert dataset_info(name, tmp_path)["available"]
        assert load(name, tmp_path).X.shape[0] in (150, 120)
    assert not dataset_info("digits048-contaminated-1", tmp_path)["available"]


def test_checksum_mismatch_is_detected_even_after_a_verified_load(data_dir, tmp_path):
    target = tmp_path / "datasets/real/fisheriris.mat"
    target.parent.mkdir(parents=True)
    shutil.copyfile(data_dir / "datasets/real/fisheriris.mat", target)
    assert load("fisheriris", tmp_path).X.shape == (150, 4)
    # a valid .mat file with other numbers: the checksum, not the reader, rejects it
    scipy.io.savemat(target, {"x": np.zeros((150, 4)), "x_labs": np.ones((150, 1))})
    stat = target.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    with pytest.raises(ValueError, match="SHA-256") as error:
        load("fisheriris", tmp_path)
    assert "pcskm datasets fetch" in str(error.value)
    assert verify(tmp_path)["datasets/real/fisheriris.mat"] == "mismatch"
    assert not dataset_info("fisheriris", tmp_path)["available"]


def test_fetch_from_a_local_url_then_verify(data_dir, tmp_path, serve):
    target = tmp_path / "cache"
    url = serve(data_dir)
    report = fetch(["fisheriris", "digits048-*"], target, base_url=url)
    assert len(report) == 11 and set(report.values()) == {"downloaded"}
    status = verify(target)
    assert status["datasets/real/fisheriris.mat"] == "ok"
    assert status["datasets/digits048/data10.mat"] == "ok"
    assert status["datasets/real/ionosphere.mat"] == "missing"
    np.testing.assert_array_equal(load("digits048-contaminated-4", target).X[:, :16],
                                  load("digits048-4", data_dir).X)
    # everything, of which 11 files are already there; no temporary file is left behind
    report = fetch(data_dir=target, base_url=url)
    assert list(report.values()).count("present") == 11 and len(report) == 24
    assert all(s == "ok" for p, s in verify(target).items() if p.startswith("datasets/"))
    assert not [p for p in target.rglob("*") if p.name.endswith(".part")]


def test_fetch_rejects_a_wrong_download(data_dir, tmp_path, serve, monkeypatch):
    monkeypatch.setattr(_datafiles, "RETRIES", 0)  # pooch retries a wrong download too
    source = tmp_path / "source"
    bad = source / "datasets/real/fisheriris.mat"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not the file")
    with pytest.raises(_datafiles.ChecksumError, match="SHA-256") as error:
        fetch(["fisheriris"], tmp_path / "cache", base_url=serve(source))
    assert "datasets/real/fisheriris.mat" in str(error.value)
    folder = tmp_path / "cache/datasets/real"
    assert not list(folder.iterdir())  # neither the file nor a temporary one


def test_fetch_without_network_says_how_to_fix_it(tmp_path, monkeypatch):
    monkeypatch.setattr(_datafiles, "RETRIES", 0)
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}"
    with pytest.raises(FileNotFoundError) as error:
        fetch(["ionosphere"], tmp_path, base_url=url)
    message = str(error.value)
    assert url + "/datasets/real/ionosphere.mat" in message
    assert "PCSKM_DATA=/path" in message and "--data-dir" in message
    assert not list(Path(tmp_path, "datasets/real").iterdir())


def test_dataset_table(data_dir, tmp_path):
    table = format_dataset_table(tmp_path)
    lines = table.splitlines()
    for name in list_datasets():
        assert any(line.split()[0] == name for line in lines)
    row = next(line for line in lines if line.startswith("mwm-ttscst "))
    assert row.split()[1:5] == ["424", "18", "3", "no"]
    assert "pcskm datasets fetch" in table
    row = next(line for line in format_dataset_table(data_dir).splitlines()
               if line.startswith("ionosphere "))
    assert row.split()[1:5] == ["351", "34", "2", "yes"]


def test_names_and_patterns():
    with pytest.raises(ValueError, match="did you mean 'fisheriris'"):
        load("fisheriri")
    assert match_datasets(["digits389-[0-9]*"]) == [f"digits389-{s}" for s in range(1, 11)]
    assert len(match_datasets(["digits048-*", "digits048-3"])) == 30  # clean, Exp, shuffled
    with pytest.raises(ValueError, match="matches no data set"):
        match_datasets(["mnist-*"])

"""User estimators in a spec (docs/reference/estimator-contract.md): the contract checked at
parse time, fits through the runner compared with direct fits and with the built-ins, failed
fits kept as status ``error`` with their message, ``--preload`` on a real LocalCluster and
the provenance of the estimator in the cube."""

import importlib
import logging
import textwrap

import numpy as np
import pytest
import xarray as xr
import zarr
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans

from pcskm import algorithms
from pcskm.experiments import cells
from pcskm.experiments.protocol import Protocol
from pcskm.experiments.spec import parse_spec
from pcskm.runner import IncompatibleStore, run_spec
from pcskm.runner.fit_errors import fit_errors
from pcskm.runner.store import ERROR, STATUS_FLAGS, prepare
from pcskm.runner.summary import status_text

HERE = "test_user_algorithms"  # this module, importable on the workers (tests/ on sys.path)


class WrappedPCKM(ClusterMixin, BaseEstimator):
    """A constrained user estimator: PCKM from the centres it is given."""

    def __init__(self, n_clusters=2, init="dkm++", max_iter=25):
        self.n_clusters, self.init, self.max_iter = n_clusters, init, max_iter

    def fit(self, X, must_link=None, cannot_link=None):
        model = algorithms.PCKMeans(n_clusters=self.n_clusters, init=self.init,
                                    max_iter=self.max_iter)
        self.labels_ = model.fit(X, must_link=must_link, cannot_link=cannot_link).labels_
        return self


class WrappedPCSKM(ClusterMixin, BaseEstimator):
    """A sparse user estimator, one fit per s: PCSKM with ``sparsity``."""

    def __init__(self, n_clusters=2, sparsity=2.0, init="dkm++", max_iter=25):
        self.n_clusters, self.sparsity, self.init, self.max_iter = (n_clusters, sparsity, init,
                                                                    max_iter)

    def _model(self):
        return algorithms.PCSKMeans(n_clusters=self.n_clusters, sparsity=self.sparsity,
                                    init=self.init, max_iter=self.max_iter)

    def fit(self, X, must_link=None, cannot_link=None):
        model = self._model().fit(X, must_link=must_link, cannot_link=cannot_link)
        self.labels_, self.weights_ = model.labels_, model.weights_
        return self


class PathPCSKM(WrappedPCSKM):
    """A sparse user estimator with ``fit_path`` (PCSKM's, whose result has ``labels`` and
    ``weights``)."""

    def fit_path(self, X, sparsities, must_link=None, cannot_link=None):
        return self._model().fit_path(X, sparsities, must_link=must_link,
                                      cannot_link=cannot_link)


class OddPairsFail(WrappedPCKM):
    """Raises on the cells whose constraints' point indices have an odd sum."""

    def fit(self, X, must_link=None, cannot_link=None):
        total = int(must_link.sum() + cannot_link.sum())
        if total % 2:
            raise ValueError(f"odd sum of pair indices: {total}")
        return super().fit(X, must_link, cannot_link)


class ShortLabels(WrappedPCKM):
    """Returns one label too few."""

    def fit(self, X, must_link=None, cannot_link=None):
        super().fit(X, must_link, cannot_link)
        self.labels_ = self.labels_[:-1]
        return self


class OneCluster(ClusterMixin, BaseEstimator):
    def __init__(self, n_clusters=2):
        self.n_clusters = n_clusters

    def fit(self, X):
        self.labels_ = np.zeros(len(X), dtype=int)
        return self


class NoFit(BaseEstimator):
    def __init__(self, n_clusters=2):
        self.n_clusters = n_clusters


class NoConstraintsFit(OneCluster):
    pass


class LooseConstructor:
    def __init__(self, n_clusters=2, **kwargs):
        self.n_clusters = n_clusters

    def fit(self, X):
        return self


class NoClusterCount(BaseEstimator):
    def __init__(self, k=2):
        self.k = k

    def fit(self, X):
        return self


def not_a_class(n_clusters=2):
    return None


def spec_text(variants, algorithms_=None, dataset="iris", extra=""):
    """A small spec: the given ``[variants.NAME]`` tables (name -> TOML lines)."""
    names = algorithms_ or list(variants)
    tables = "\n".join(f"[variants.{name}]\n{body}" for name, body in variants.items())
    return textwrap.dedent(f"""
        name = "user"
        seed = 0
        datasets = ["{dataset}"]
        algorithms = {names!r}
        inits = ["dkm++", "seeding"]
        kinds = ["random"]
        percentages = [1, 5]
        n_runs = 1
        n_folds = 3
        {extra}
        """).replace("'", '"') + tables


def pairwise_f(classes, labels):
    """Pairwise F-score by enumerating every pair (docs/method/protocol.md §8.1)."""
    i, j = np.triu_indices(len(classes), 1)
    same_class, same_cluster = classes[i] == classes[j], labels[i] == labels[j]
    tp = np.sum(same_class & same_cluster)
    precision, recall = tp / same_cluster.sum(), tp / same_class.sum()
    return 2 * precision * recall / (precision + recall)


def group(store, name):
    return xr.open_datatree(str(store), engine="zarr")[name].to_dataset()


# ---- parse time -------------------------------------------------------------------------


@pytest.mark.parametrize("table, message", [
    ('estimator = "no_such_module_for_pcskm:Thing"',
     "module 'no_such_module_for_pcskm' cannot be imported (ModuleNotFoundError: No module "
     "named 'no_such_module_for_pcskm')"),
    (f'estimator = "{HERE}:WrappedPCMK"', "has no attribute 'WrappedPCMK'; did you mean "
                                          "'WrappedPCKM'?"),
    (f'estimator = "{HERE}:not_a_class"', "is a function, not a class"),
    (f'estimator = "{HERE}:NoFit"', "has no fit method"),
    (f'estimator = "{HERE}:LooseConstructor"\nconstraints = "ignore"',
     "takes **kwargs: scikit-learn estimators name every parameter"),
    (f'estimator = "{HERE}:NoClusterCount"\nconstraints = "ignore"', "takes no n_clusters"),
    ('estimator = "sklearn.mixture:GaussianMixture"\nconstraints = "ignore"',
     "it takes n_components: wrap it in a class whose constructor takes n_clusters, passes it "
     "on as n_components"),
    (f'estimator = "{HERE}:WrappedPCKM"\nparams = {{max_iters = 3}}',
     "unknown parameter 'max_iters' in params; did you mean 'max_iter'?"),
    (f'estimator = "{HERE}:WrappedPCKM"\nparams = {{init = "robin"}}',
     "params sets init, which the runner sets for every cell from the spec's inits"),
    ('estimator = "sklearn.cluster:KMeans"',
     "KMeans.fit takes no must_link and no cannot_link keyword"),
    (f'estimator = "{HERE}:NoConstraintsFit"\nconstraints = "never"',
     "constraints must be one of use, ignore; got 'never'"),
    ('estimator = "PCKM"\nconstraints = "ignore"', "constraints applies to user estimators"),
    ('estimator = "PCKMM"', "unknown estimator 'PCKMM'"),
])
def test_the_contract_is_checked_when_the_spec_is_read(table, message):
    with pytest.raises(ValueError, match="variants.MINE") as raised:
        parse_spec(spec_text({"MINE": table}))
    assert message in str(raised.value)


def test_an_import_error_of_the_module_itself_is_shown(tmp_path, monkeypatch):
    (tmp_path / "broken_for_pcskm.py").write_text(
        'raise ImportError("libfoo 2.1 is needed")\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError, match=r"ImportError: libfoo 2\.1 is needed"):
        parse_spec(spec_text({"MINE": 'estimator = "broken_for_pcskm:Thing"'}))


def test_selection_scores_are_refused_for_a_user_estimator():
    text = spec_text({"MINE": f'estimator = "{HERE}:WrappedPCSKM"'}, ["PCSKM", "MINE"],
                     extra='cv_folds = 3\ncv_algorithms = ["PCSKM", "MINE"]')
    with pytest.raises(ValueError, match="selection scores need the built-in engines"):
        parse_spec(text)


def test_specs_without_user_estimators_keep_their_hash():
    """A built-in variant's record has no constraints key: the hash of the spec is that of
    the canonical JSON written out here (as before user estimators existed)."""
    import hashlib
    import json

    spec = parse_spec(spec_text({"PCSKM-paper": 'estimator = "PCSKM"\n'
                                                'params = {weight_update = "paper"}'}))
    content = {k: v for k, v in spec.to_dict().items()
               if k not in ("name", "description", "source_text", "design", "cv_folds",
                            "gap_permutations", "cv_algorithms", "cv_runs", "data")}
    assert content["algorithms"] == [{"name": "PCSKM-paper", "estimator": "PCSKM",
                                      "params": {"weight_update": "paper"}}]
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert spec.hash() == hashlib.sha256(text.encode()).hexdigest()


# ---- fits through the runner ------------------------------------------------------------


@pytest.fixture(scope="module")
def study(client, tmp_path_factory):
    """One store: PCKM, PCSKM and user estimators that should equal them, sklearn's KMeans
    without constraints, and estimators whose fits fail."""
    text = spec_text({
        "WRAP": f'estimator = "{HERE}:WrappedPCKM"',
        "SPARSE": f'estimator = "{HERE}:WrappedPCSKM"',
        "PATH": f'estimator = "{HERE}:PathPCSKM"',
        "KM": 'estimator = "sklearn.cluster:KMeans"\nconstraints = "ignore"',
        "ODD": f'estimator = "{HERE}:OddPairsFail"',
        "SHORT": f'estimator = "{HERE}:ShortLabels"',
        "ONE": f'estimator = "{HERE}:OneCluster"\nconstraints = "ignore"',
    }, ["PCKM", "PCSKM", "WRAP", "SPARSE", "PATH", "KM", "ODD", "SHORT", "ONE"],
        dataset="brodinova-5-5", extra="sparsity_max_values = 4")
    spec = parse_spec(text)
    store = tmp_path_factory.mktemp("user") / "user.zarr"
    summary = run_spec(spec, store, client=client, progress=False)
    assert not summary.errors and summary.complete
    return spec, store, group(store, "brodinova-5-5")


def test_user_estimators_equal_the_builtins_they_wrap(study):
    _, _, ds = study
    for user, builtin in (("WRAP", "PCKM"), ("SPARSE", "PCSKM"), ("PATH", "PCSKM")):
        for name in ("f_score", "satisfied", "weights")[:3 if user != "WRAP" else 2]:
            np.testing.assert_array_equal(ds[name].sel(algorithm=user).values,
                                          ds[name].sel(algorithm=builtin).values,
                                          err_msg=f"{user} {name}")
        # a user fit that returns labels is "converged" (the runner cannot tell max_iter)
        builtin_status = ds.status.sel(algorithm=builtin).values
        np.testing.assert_array_equal(ds.status.sel(algorithm=user).values,
                                      np.where(builtin_status == 2, 1, builtin_status))
    assert np.isnan(ds.weights.sel(algorithm="WRAP").values).all()  # it has no weights_
    assert ds.sizes["sparsity"] >= 3  # the no-s entry and an s grid


def test_a_sparse_user_estimator_equals_a_direct_fit_per_s(study):
    spec, _, ds = study
    data = cells.dataset("brodinova-5-5")
    cv = Protocol(data, seed=0, n_folds=3)
    must_link, cannot_link = cv.constraints("random", 5, 0, 1)
    centres = data.X[algorithms.dkmpp_init(data.X, 3)]
    test = cv.test_index(1)
    grid = spec.sparsity_grid(data.n_features)
    cell = ds.sel(algorithm="SPARSE", init="dkm++", kind="random", percent=5.0, run=0, fold=1)
    weights = []
    for s, f_score in zip(grid, cell.f_score.values[1:], strict=True):
        model = WrappedPCSKM(n_clusters=3, sparsity=s, init=centres).fit(
            data.X, must_link=must_link, cannot_link=cannot_link)
        assert f_score == pytest.approx(pairwise_f(data.y[test], model.labels_[test]),
                                        rel=1e-6)
        weights.append(model.weights_)
    np.testing.assert_allclose(cell.weights.values, np.mean(weights, axis=0), rtol=1e-6)


def test_kmeans_without_constraints_equals_sklearn_fitted_directly(study):
    _, _, ds = study
    data = cells.dataset("brodinova-5-5")
    cv = Protocol(data, seed=0, n_folds=3)
    test = cv.test_index(2)
    for init in ("dkm++", "seeding"):
        if init == "dkm++":
            centres = data.X[algorithms.dkmpp_init(data.X, 3)]
        else:  # Seeding's centres from the cell's constraints and Seeding key
            centres = _seeding_centres(data, cv, *cv.constraints("random", 1, 0, 2))
        seed = int(cv.seeding_seed("random", 1, 0, 2).generate_state(1)[0])
        labels = KMeans(n_clusters=3, init=centres, random_state=seed).fit(data.X).labels_
        f_score = ds.f_score.sel(algorithm="KM", init=init, kind="random", percent=1.0, run=0,
                                 fold=2).values[0]
        assert f_score == pytest.approx(pairwise_f(data.y[test], labels[test]), rel=1e-6)


def _seeding_centres(data, cv, must_link, cannot_link):
    """Seeding's centres of the cell (random, 1 %, run 0, fold 2), from the built-in code."""
    from pcskm.algorithms.constraints import Constraints

    estimator = algorithms.LloydKMeans(n_clusters=3, init="seeding")
    constraints = Constraints.from_pairs(must_link, cannot_link, n_samples=data.n_samples)
    return estimator._initial_state(data.X, constraints, cv.seeding_seed("random", 1, 0, 2))[0]


def test_a_fit_that_raises_is_a_failed_fit_with_its_message(study):
    _, store, ds = study
    data = cells.dataset("brodinova-5-5")
    cv = Protocol(data, seed=0, n_folds=3)
    odd = np.array([[sum(int(p.sum()) for p in cv.constraints("random", percent, 0, fold)) % 2
                     == 1 for fold in range(3)] for percent in (1, 5)])
    assert odd.any() and not odd.all()  # the test needs both kinds of cells
    status = ds.status.sel(algorithm="ODD", kind="random", run=0).values[..., 0]
    for i in range(2):  # both inits
        np.testing.assert_array_equal(status[i] == ERROR, odd)
        np.testing.assert_array_equal(np.isnan(ds.f_score.sel(algorithm="ODD").values[i, 0, :, 0,
                                                                                      :, 0]), odd)
    assert STATUS_FLAGS[ERROR] == "error"
    table = fit_errors(store)
    rows = table[table.algorithm == "ODD"]
    assert rows.error_fits.sum() == 2 * odd.sum()
    p = 0 if odd[0].any() else 1  # the first block with a failed fit
    first = next(f for f in range(3) if odd[p, f])
    total = sum(int(pairs.sum()) for pairs in cv.constraints("random", (1, 5)[p], 0, first))
    assert rows.iloc[0].first_error == f"ValueError: odd sum of pair indices: {total}"
    text = status_text(store)
    assert (f"ODD: {2 * odd.sum()} failed fits (status error) in {len(rows)} blocks; first: "
            f"ValueError: odd sum of pair indices: {total}") in text


def test_labels_of_the_wrong_length_or_cluster_count_are_failed_fits(study):
    _, store, ds = study
    for algorithm in ("SHORT", "ONE"):
        assert (ds.status.sel(algorithm=algorithm).values[..., 0] == ERROR).all()
        assert np.isnan(ds.f_score.sel(algorithm=algorithm).values).all()
    table = fit_errors(store).set_index("algorithm")
    n_samples = cells.dataset("brodinova-5-5").n_samples
    assert (table.loc["SHORT"].first_error == f"InvalidFitResult: labels_ has shape "
                                               f"({n_samples - 1},); expected ({n_samples},), "
                                               "one label per point").all()
    assert (table.loc["ONE"].first_error == "InvalidFitResult: labels_ has 1 distinct "
                                            "clusters; n_clusters is 3").all()


def test_the_store_records_the_user_estimators(study):
    _, store, _ = study
    definitions = zarr.open_group(str(store), mode="r").attrs["algorithm_definitions"]
    import sklearn

    assert definitions["KM"] == {
        "estimator": "sklearn.cluster:KMeans", "params": {}, "constraints": "ignore",
        "sparse": False, "distribution": "scikit-learn", "version": sklearn.__version__}
    assert definitions["SPARSE"]["sparse"] and definitions["PCKM"] == {"estimator": "PCKM",
                                                                      "params": {}}


# ---- provenance -------------------------------------------------------------------------


def test_another_module_version_warns_and_other_params_are_refused(tmp_path, monkeypatch,
                                                                   caplog):
    module = tmp_path / "mine_for_pcskm.py"
    source = textwrap.dedent(f"""
        from {HERE} import WrappedPCKM as Mine  # noqa: F401
        """)
    module.write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    text = spec_text({"MINE": 'estimator = "mine_for_pcskm:Mine"'})
    store = tmp_path / "store.zarr"
    prepare(store, parse_spec(text))
    module.write_text(source + "# version 2\n")
    importlib.reload(importlib.import_module("mine_for_pcskm"))
    caplog.set_level(logging.WARNING, logger="pcskm")
    _, action = prepare(store, parse_spec(text))
    assert action == "opened"
    assert ("algorithm MINE: " in caplog.text and "--recompute-changed" in caplog.text)
    changed = spec_text({"MINE": 'estimator = "mine_for_pcskm:Mine"\nparams = {max_iter = 5}'})
    with pytest.raises(IncompatibleStore, match="algorithm MINE is"):
        prepare(store, parse_spec(changed))


# ---- a single module shipped to the workers ---------------------------------------------


def test_preload_ships_a_single_module_to_worker_processes(tmp_path, monkeypatch):
    from distributed import Client, LocalCluster

    module = tmp_path / "shipped_for_pcskm.py"
    module.write_text(textwrap.dedent(f"""
        from {HERE} import WrappedPCKM


        class Shipped(WrappedPCKM):
            pass
        """))
    text = spec_text({"MINE": 'estimator = "shipped_for_pcskm:Shipped"'}, ["PCKM", "MINE"])
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        # started before the module's folder is on this process's path: the workers lack it
        assert not any(client.run(_importable, "shipped_for_pcskm").values())
        with pytest.raises(ValueError, match="module 'shipped_for_pcskm' cannot be imported"):
            parse_spec(text)
        monkeypatch.syspath_prepend(str(tmp_path))
        spec = parse_spec(text)
        summary = run_spec(spec, tmp_path / "store.zarr", client=client, progress=False,
                           preload=[module])
        assert not summary.errors and summary.complete
        assert all(client.run(_importable, "shipped_for_pcskm").values())
    ds = group(tmp_path / "store.zarr", "iris")
    np.testing.assert_array_equal(ds.f_score.sel(algorithm="MINE").values,
                                  ds.f_score.sel(algorithm="PCKM").values)
    assert not np.isnan(ds.f_score.sel(algorithm="MINE").values[..., 0]).any()


def _importable(name):
    return importlib.util.find_spec(name) is not None


def test_the_store_verifies_and_counts_the_s_grid_of_a_sparse_user_estimator(study):
    from pcskm.runner.store import verify
    from pcskm.runner.summary import counts

    spec, store, ds = study
    assert verify(store).ok
    n_grid = len(spec.sparsity_grid(cells.dataset("brodinova-5-5").n_features))
    rows = {row[1]: row for row in counts(store)}
    assert rows["SPARSE"][5] == rows["SPARSE"][3] * n_grid  # fits = cells done x grid
    assert rows["WRAP"][5] == rows["WRAP"][3]


# In the slow suite: a forced rerun of the study: about 10 s (21 s on a slow VM). The
# default suite writes and counts the failed fits of the first run.
@pytest.mark.slow
def test_a_forced_rerun_writes_the_same_failed_fits_and_messages_and_counts_them(study,
                                                                               client):
    spec, store, ds = study
    before = fit_errors(store)
    summary = run_spec(spec, store, client=client, progress=False, force=True,
                       selection={"algorithm": ["ODD"]})
    assert summary.complete
    again = group(store, "brodinova-5-5")
    failed = int((again.status.sel(algorithm="ODD") == ERROR).sum())  # the cube's flag code
    assert summary.n_failed_fits == failed > 0  # as the run's last line says
    assert f"fits, {failed} of them failed)" in summary.describe()
    for name in ("status", "f_score", "fit_error"):
        np.testing.assert_array_equal(again[name].sel(algorithm="ODD").values,
                                      ds[name].sel(algorithm="ODD").values)
    assert fit_errors(store).equals(before)


# In the slow suite: two dry runs, the second timing a fresh worker's start with the module:
# about 15 s (27 s on a slow VM). The default suite refuses and takes --preload in every
# other command that reads a spec (tests/test_check.py).
@pytest.mark.slow
def test_the_command_line_imports_a_preload_file_before_reading_the_spec(tmp_path):
    from cubes import pcskm

    module = tmp_path / "modules" / "cli_shipped_for_pcskm.py"
    module.parent.mkdir()
    module.write_text("from sklearn.cluster import KMeans as Plain  # noqa: F401\n")
    spec = tmp_path / "spec.toml"  # 10 folds: the dry run's calibration times folds 1 to 3
    spec.write_text(spec_text({"MINE": 'estimator = "cli_shipped_for_pcskm:Plain"\n'
                                       'constraints = "ignore"'}).replace("n_folds = 3",
                                                                          "n_folds = 10"))
    refused = pcskm("run", spec, "--store", tmp_path / "s.zarr", "--dry-run", cwd=tmp_path)
    assert refused.returncode == 2 and "cannot be imported" in refused.stderr
    done = pcskm("run", spec, "--store", tmp_path / "s.zarr", "--dry-run",
                 "--calibration-seconds", "1", "--preload", module, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "cells: 40 in the spec" in done.stdout

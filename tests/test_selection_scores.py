"""The per-s selection scores the runner stores (docs/method/selection.md,
docs/reference/cube-schema.md): equal to the public selection functions on the same cell,
the folds of a dense cell, an old store extended, bad spec values refused, and the same
scores whatever the number of workers."""

import shutil
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr
import zarr
from cubes import results_data
from reference.constraints import must_link_components
from test_selection import path_centres, plain_cv

from pcskm.algorithms import (
    PCSKMeans,
    SparseKMeans,
    _sparse,
    constraint_cv_scores,
    gap_statistic,
    pair_auc_scores,
    seeding_init,
)
from pcskm.algorithms._sparse import FitCache
from pcskm.algorithms.constraints import Constraints
from pcskm.experiments import cells, selection_scores
from pcskm.experiments.protocol import Protocol
from pcskm.experiments.report import open_store, selection
from pcskm.experiments.report.document import _cv_runs_note
from pcskm.experiments.report.fits import fit_table
from pcskm.experiments.selection_scores import CellScores
from pcskm.experiments.spec import parse_spec
from pcskm.runner import IncompatibleStore, run_spec
from pcskm.runner.store import CubeView, prepare, record_metadata, verify
from pcskm.runner.store.places import RECORD, read_record, record_values
from pcskm.runner.summary import counts
from pcskm.runner.tasks import parse_only, settings

OFF = """
name = "scored"
seed = 0
datasets = ["iris"]
algorithms = ["LKM", "SKM", "PCSKM"]
inits = ["dkm++", "seeding"]
kinds = ["random", "must-link"]
percentages = [1, 10]
n_runs = 1
n_folds = 10
"""
CV_FOLDS, PERMUTATIONS = 8, 3
ON = OFF + f"cv_folds = {CV_FOLDS}\ngap_permutations = {PERMUTATIONS}\n"
SCORES = ("cv_score", "cv_folds_used", "gap", "gap_sd", "auc_score", "auc_se")
AUC_SCORES = ("auc_score", "auc_se")
ALL_BITS = 1 | 2 | 4  # cv, gap, pair AUC
KIND_CODES = {"must-link": 2, "random": 4}  # docs/method/protocol.md §2


@pytest.fixture(scope="module")
def scored(client, tmp_path_factory):
    """The spec with the scores computed into a new store on two workers."""
    store = tmp_path_factory.mktemp("scored") / "scored.zarr"
    summary = run_spec(parse_spec(ON), store, client=client, progress=False)
    assert not summary.errors and summary.complete
    return store


def iris_group(store):
    return results_data(xr.open_zarr(store, group="iris", mask_and_scale=False)).load()


def groups_by_search(n, must_link, cannot_link):
    """Groups of §2.1 counted from plain must-link components (a depth-first walk): the
    components that hold a must-link, and the distinct pairs of components joined by a
    cannot-link."""
    component = must_link_components(must_link, n)
    joined = {frozenset((component[a], component[b])) for a, b in cannot_link}
    return len({component[a] for a, _ in must_link}) + len(joined)


CELLS = [  # (algorithm, init, kind, percent, run, fold)
    ("PCSKM", "dkm++", "random", 1.0, 0, 3),
    ("PCSKM", "seeding", "random", 10.0, 0, 7),
    ("PCSKM", "dkm++", "must-link", 10.0, 0, 2),
    ("SKM", "dkm++", "must-link", 1.0, 0, 5),
    ("SKM", "seeding", "random", 1.0, 0, 0),
]


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: "-".join(map(str, c)))
def test_stored_scores_equal_the_public_selection_functions(scored, cell):
    """Each stored score is the public function's (fitted through the estimators, not the
    runner's engines) on the cell's path, with the seeds of the documented keys: folds from
    (8, ds, sub, kind, pct10, run, fold), permutation b from (9, ds, sub, b); the stored
    number of folds is cv_folds, or the number of groups when fewer. The pair AUC and its
    standard error are ``pair_auc_scores``'s on the same folds; NaN in a must-link cell
    (one kind of pair), which ``pair_auc_scores`` refuses."""
    algorithm, init, kind, percent, run, fold = cell
    data = cells.dataset("iris")
    must_link, cannot_link = Protocol(data, seed=0).constraints(kind, percent, run, fold)
    key = (data.code, data.subset, KIND_CODES[kind], round(10 * percent), run, fold)
    estimator_class = PCSKMeans if algorithm == "PCSKM" else SparseKMeans
    estimator = estimator_class(
        data.n_clusters, init=init, max_iter=25,
        random_state=np.random.SeedSequence(0, spawn_key=(3, *key)))
    grid = parse_spec(ON).sparsity_grid(data.n_features)
    path = estimator.fit_path(data.X, grid, must_link=must_link, cannot_link=cannot_link)
    n_folds = min(CV_FOLDS, groups_by_search(data.n_samples, must_link, cannot_link))
    cv = constraint_cv_scores(estimator, data.X, path, must_link=must_link,
                              cannot_link=cannot_link, n_folds=n_folds,
                              random_state=np.random.SeedSequence(0, spawn_key=(8, *key)))
    gap = gap_statistic(estimator, data.X, path, n_permutations=PERMUTATIONS,
                        random_state=np.random.SeedSequence(0, spawn_key=(9, *key[:2])))
    stored = iris_group(scored).sel(algorithm=algorithm, init=init, kind=kind, percent=percent,
                                    run=run, fold=fold)
    assert int(stored.cv_folds_used) == n_folds
    expected_scores = {"cv_score": cv.score, "gap": gap.gap, "gap_sd": gap.gap_sd}
    if kind == "must-link":
        with pytest.raises(ValueError, match="needs both"):
            pair_auc_scores(estimator, data.X, path, must_link=must_link,
                            cannot_link=cannot_link, n_folds=n_folds)
        assert all(np.isnan(stored[name]).all() for name in AUC_SCORES)
    else:
        auc = pair_auc_scores(estimator, data.X, path, must_link=must_link,
                              cannot_link=cannot_link, n_folds=n_folds,
                              random_state=np.random.SeedSequence(0, spawn_key=(8, *key)))
        np.testing.assert_array_equal(auc.fold, cv.fold)
        assert np.isfinite(auc.score).any() and np.isfinite(auc.score_se).any()
        expected_scores.update(auc_score=auc.score, auc_se=auc.score_se)
    for name, expected in expected_scores.items():
        assert np.isnan(stored[name].values[0])  # the no-s entry
        np.testing.assert_array_equal(stored[name].values[1:], expected.astype(np.float32),
                                      err_msg=name)
    assert stored.scored.item() == ALL_BITS  # every kind of score


@pytest.mark.parametrize(("algorithm", "percent", "fold"),
                         [("PCSKM", 1.0, 6), ("SKM", 10.0, 7)])
def test_stored_seeding_cv_fits_each_fold_from_its_training_must_links(scored, algorithm,
                                                                       percent, fold):
    """docs/method/selection.md §2.2 in the runner: a Seeding cell's stored cv score is the
    mean over folds of the held-out F-measure of fits, per fold and s, started from Seeding
    on the fold's training must-links with the cell's Seeding key (computed here with
    ``seeding_init`` and ``fit``). In this cell a held-out must-link changes the Seeding
    centres, so fold fits from the cell's own centres (the leak) score differently."""
    kind, run = "random", 0
    data = cells.dataset("iris")
    must_link, cannot_link = Protocol(data, seed=0).constraints(kind, percent, run, fold)
    key = (data.code, data.subset, KIND_CODES[kind], round(10 * percent), run, fold)
    seeding_key = np.random.SeedSequence(0, spawn_key=(3, *key))
    estimator_class = PCSKMeans if algorithm == "PCSKM" else SparseKMeans
    grid = parse_spec(ON).sparsity_grid(data.n_features)
    stored = iris_group(scored).sel(algorithm=algorithm, init="seeding", kind=kind,
                                    percent=percent, run=run, fold=fold)
    n_folds = int(stored.cv_folds_used)
    path = estimator_class(data.n_clusters, init="seeding", max_iter=25,
                           random_state=seeding_key).fit_path(
        data.X, grid, must_link=must_link, cannot_link=cannot_link)
    folds = constraint_cv_scores(PCSKMeans(data.n_clusters), data.X, path,
                                 must_link=must_link, cannot_link=cannot_link, n_folds=n_folds,
                                 random_state=np.random.SeedSequence(0, spawn_key=(8, *key))
                                 ).fold  # the folds only

    def training_seeding(train_must_link, train_cannot_link):
        return seeding_init(data.X, data.n_clusters, train_must_link, train_cannot_link,
                            random_state=seeding_key)[0]

    expected = plain_cv(estimator_class, data.X, grid, training_seeding, must_link,
                        cannot_link, folds, max_iter=25).mean(axis=0)
    np.testing.assert_allclose(stored.cv_score.values[1:], expected, rtol=1e-6)
    leaky = plain_cv(estimator_class, data.X, grid, path_centres(path), must_link,
                     cannot_link, folds, max_iter=25).mean(axis=0)
    assert not np.allclose(leaky, expected, rtol=1e-6)


@pytest.mark.parametrize("algorithm", ["SKM", "PCSKM"])
def test_every_seeding_gap_equals_the_public_gap_statistic(scored, algorithm):
    """The null fits of a task's Seeding cells share the paths of the first clusterings
    they reach again (``NullDataSets``): every Seeding cell's stored gap is still
    ``gap_statistic``'s on the cell's own path, with its own centres, bit for bit."""
    data = cells.dataset("iris")
    spec = parse_spec(ON)
    grid = spec.sparsity_grid(data.n_features)
    estimator_class = PCSKMeans if algorithm == "PCSKM" else SparseKMeans
    group = iris_group(scored).sel(algorithm=algorithm, init="seeding", run=0)
    n_checked = 0
    for kind in spec.seeding_kinds:
        for percent in spec.percentages:
            for fold in range(spec.n_folds):
                must_link, cannot_link = Protocol(data, seed=0).constraints(
                    kind, percent, 0, fold)
                key = (data.code, data.subset, KIND_CODES[kind], round(10 * percent), 0, fold)
                estimator = estimator_class(
                    data.n_clusters, init="seeding", max_iter=25,
                    random_state=np.random.SeedSequence(0, spawn_key=(3, *key)))
                path = estimator.fit_path(data.X, grid, must_link=must_link,
                                          cannot_link=cannot_link)
                gap = gap_statistic(estimator, data.X, path, n_permutations=PERMUTATIONS,
                                    random_state=np.random.SeedSequence(0, spawn_key=(9, *key[:2])))
                stored = group.sel(kind=kind, percent=percent, fold=fold)
                where = f"{kind} {percent} % fold {fold}"
                np.testing.assert_array_equal(stored.gap.values[1:], gap.gap.astype(np.float32),
                                              err_msg=where)
                np.testing.assert_array_equal(stored.gap_sd.values[1:],
                                              gap.gap_sd.astype(np.float32), err_msg=where)
                n_checked += int(stored.done)
    assert n_checked == len(spec.seeding_kinds) * len(spec.percentages) * spec.n_folds >= 20


def test_null_fits_of_a_tasks_seeding_cells_share_their_paths(monkeypatch):
    """In a task of Seeding cells, null fits reach first clusterings that earlier ones
    reached, and copy their paths: fewer paths are computed than null fits are made."""
    made = []

    class Recorded(selection_scores.NullDataSets):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

    paths = []
    original_path = FitCache.path
    monkeypatch.setattr(selection_scores, "NullDataSets", Recorded)
    monkeypatch.setattr(FitCache, "path", lambda cache, *args: paths.append(cache) or
                        original_path(cache, *args))
    computed = []
    original_from = _sparse.sparse_path_from
    monkeypatch.setattr(_sparse, "sparse_path_from", lambda *args: computed.append(args[0]) or
                        original_from(*args))
    spec = parse_spec(ON)
    view = CubeView.planned(Path("never-created.zarr"), spec)
    seeding = tuple(s for s in settings(spec, view) if s.init == "seeding")
    cells.evaluate(cells.Task(seeding, tuple(cells.Block(kind, percent, (0,))
                                             for kind in spec.kinds
                                             for percent in spec.percentages)))
    null_caches = set(map(id, made[0]._caches))
    null_fits = sum(id(cache) in null_caches for cache in paths)
    null_sets = {id(data_set) for data_set in made[0]._sets}
    null_paths = sum(id(X) in null_sets for X in computed)
    assert null_fits >= 40 * PERMUTATIONS and null_paths < null_fits / 2


def test_selection_fits_count_the_fold_fits_of_seeding():
    """Setting.selection_fits (the dry run's count): K fold fits per cell where the
    clustering or Seeding uses the constraints, B null fits per cell with Seeding; SKM from
    DKM++ refits nothing (its folds are scored on its path, its nulls shared)."""
    def setting(estimator, init):
        return cells.Setting(dataset="iris", data_dir=None, seed=0, n_folds=10,
                             algorithm=estimator, estimator=estimator, params=(), init=init,
                             max_iter=25, sparsities=(1.1, 1.3), cv_folds=3,
                             gap_permutations=4)

    assert setting("SKM", "dkm++").selection_fits(0) == 0
    assert setting("SKM", "seeding").selection_fits(0) == 3 + 4
    assert setting("PCSKM", "dkm++").selection_fits(0) == 3
    assert setting("PCSKM", "seeding").selection_fits(0) == 3 + 4


def test_scores_only_where_they_apply(scored):
    """LKM gets no score; SKM and PCSKM get both at every done cell; cv_folds_used is the
    groups' count, capped at cv_folds, in every cell (dense cells use fewer folds)."""
    ds = iris_group(scored)
    lkm = ds.sel(algorithm="LKM")
    assert all(np.isnan(lkm[name]).all() for name in ("cv_score", "gap", "gap_sd", *AUC_SCORES))
    assert (lkm.cv_folds_used == -1).all() and (lkm.scored == 0).all()
    sparse = ds.sel(algorithm=["SKM", "PCSKM"])
    assert (sparse.scored.where(sparse.done == 1, ALL_BITS) == ALL_BITS).all()
    for name in AUC_SCORES:  # none in a must-link cell (one kind of pair)
        assert sparse[name].sel(kind="must-link").isnull().all()
    random = sparse.sel(kind="random")  # an AUC only where a fold fit scored, with its SE
    assert random.auc_se.notnull().any() and random.auc_score.notnull().any()
    assert not (random.auc_score.notnull() & random.cv_score.isnull()).any()
    assert not (random.auc_se.notnull() & random.auc_score.isnull()).any()
    data = cells.dataset("iris")
    cv, used = Protocol(data, seed=0), set()
    for kind in ("random", "must-link"):
        for percent in (1.0, 10.0):
            for fold in range(10):
                groups = groups_by_search(data.n_samples, *cv.constraints(kind, percent, 0, fold))
                expected = min(CV_FOLDS, groups) if groups >= 2 else 0
                stored = sparse.cv_folds_used.sel(init="dkm++", kind=kind, percent=percent,
                                                  run=0, fold=fold)
                assert (stored == expected).all(), (kind, percent, fold)
                used.add(expected)
    assert CV_FOLDS in used and len(used) > 1  # some dense cells have fewer groups


def test_cell_with_fewer_than_two_groups_gets_no_folds():
    one_component = Constraints.from_pairs([[0, 1], [1, 2], [2, 3]], n_samples=6)
    assert CellScores(one_component, lambda: np.random.SeedSequence(0)).folds(5) == (0, None)
    two_groups = Constraints.from_pairs([[0, 1]], [[1, 4]], n_samples=6)
    n_folds, split = CellScores(two_groups, lambda: np.random.SeedSequence(0)).folds(5)
    assert n_folds == 2 and sorted(split.fold.tolist()) == [0, 1]


def test_scores_do_not_depend_on_the_number_of_workers(scored, tmp_path):
    """One worker, PCSKM first in tasks of its own and then the rest (other tasks, other
    order, the per-process null fits made by other settings), gives the same store bit for
    bit as two workers."""
    from distributed import Client, LocalCluster

    store = tmp_path / "one.zarr"
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0") as cluster, \
            Client(cluster) as one:
        first = run_spec(parse_spec(ON), store, client=one, progress=False,
                         selection=parse_only("algorithm=PCSKM"))
        assert first.n_cells == 60
        run_spec(parse_spec(ON), store, client=one, progress=False)
    xr.testing.assert_identical(iris_group(store), iris_group(scored))


def test_old_store_is_extended_and_its_done_cells_get_the_scores(scored, client, tmp_path):
    """A store written before the scores existed (no score variables, no keys in its
    protocol) is extended in place: the variables are added, its done cells of SKM and PCSKM
    are computed again to carry the scores (and only those), its values are unchanged, and
    the result is the store computed with the scores from the start."""
    store = tmp_path / "old.zarr"
    run_spec(parse_spec(OFF), store, client=client, progress=False)
    root = zarr.open_group(str(store), mode="r+")
    protocol = root.attrs["protocol"]
    assert {protocol.pop(key) for key in ("cv_folds", "gap_permutations")} == {0}
    assert protocol.pop("cv_algorithms") == []
    root.attrs.update({"protocol": protocol})  # as the code before the scores wrote it,
    root.attrs.put({**{k: v for k, v in root.attrs.asdict().items()
                       if k != "metadata_sha256"},  # and so before the metadata digests
                    "schema_version": 2})  # and the chunk digests (schema version 2)
    with warnings.catch_warnings():  # consolidated metadata is not in the Zarr 3 spec
        warnings.simplefilter("ignore", UserWarning)
        zarr.consolidate_metadata(str(store))
    # the record of chunk digests aside: the extension records the new arrays' chunks too
    before = iris_group(store)
    assert not set(SCORES) & set(before.data_vars)

    extend_and_compare(store, before, list(before.data_vars), scored, client)
    assert xr.open_zarr(store, group="iris").cv_score.notnull().any()


def extend_and_compare(store, before, kept, scored, client):
    """Extend ``store`` with the spec ON: SKM and PCSKM computed again (60 cells each), not
    LKM; the variables ``kept`` hold the values they held in ``before``, the whole group is
    that of ``scored`` (computed with ON from the start), and a second run has nothing to do."""
    _, action = prepare(store, parse_spec(ON))
    assert action == "extended"
    assert verify(store).ok  # the new variables hold no done block's scores yet
    missing = {algorithm: cells_missing for _, algorithm, _, _, cells_missing, _ in counts(store)}
    assert missing == {"LKM": 0, "SKM": 60, "PCSKM": 60}
    summary = run_spec(parse_spec(ON), store, client=client, progress=False)
    assert summary.n_cells == 120  # SKM and PCSKM again, not LKM
    after = iris_group(store)
    xr.testing.assert_identical(after[kept], before[kept])
    xr.testing.assert_identical(after, iris_group(scored))
    assert run_spec(parse_spec(ON), store, client=client, progress=False) is None


def as_before_the_pair_auc(store):
    """Make the store at ``store`` as the code before the pair AUC wrote it: no auc_score
    and auc_se (their arrays and their chunks' digests), no bit 4 in the scored markers, no
    cv_auc in the protocol, and the metadata digest of what is left."""
    root = zarr.open_group(str(store), mode="r+")
    group = root["iris"]
    for name in AUC_SCORES:
        shutil.rmtree(store / "iris" / name)
    record = read_record(group[RECORD])
    for entry in record.values():
        for name in AUC_SCORES:
            del entry[name]
    group[RECORD][...] = record_values(record, group[RECORD].shape)
    group["scored"][...] = group["scored"][...] & 3
    protocol = root.attrs["protocol"]
    assert protocol.pop("cv_auc") is True
    root.attrs.update({"protocol": protocol})
    record_metadata(store)


def test_a_cv_store_made_before_the_pair_auc_is_extended_with_it(scored, client, tmp_path):
    """A store with CV scores made before the pair AUC is sound and reports without the auc
    selection; a spec with cv_folds extends it: auc_score and auc_se are added, the done
    blocks of cv_algorithms (SKM and PCSKM), whose markers lack the AUC's bit, are computed
    again, every variable of the store keeps its values, and the new ones are those of the
    store computed with the AUC from the start."""
    store = tmp_path / "before-auc.zarr"
    shutil.copytree(scored, store)
    as_before_the_pair_auc(store)
    before = iris_group(store)
    assert not set(AUC_SCORES) & set(before.data_vars)
    assert verify(store).ok
    assert all(n == 0 for *_, n, _ in counts(store))  # complete without the AUC
    table = fit_table(open_store(store), "iris")
    assert "auc" not in selection.available(table.data_vars) and table.computed.any()

    kept = [name for name in before.data_vars if name not in ("scored", RECORD)]
    extend_and_compare(store, before, kept, scored, client)
    assert zarr.open_group(str(store), mode="r").attrs["protocol"]["cv_auc"] is True
    assert iris_group(store).auc_score.notnull().any()


def test_a_damaged_score_chunk_is_found_and_its_cells_computed_again(scored, client,
                                                                      tmp_path):
    """A score variable's chunk under done blocks that carry the score is checked like every
    other chunk: its loss is damage, and the next run recomputes those blocks, identically."""
    store = tmp_path / "damaged.zarr"
    shutil.copytree(scored, store)
    # the chunk of (random, 1 %): kind and percent at position 0, one chunk along the others
    (store / "iris" / "gap" / "c" / "0" / "0" / "0" / "0" / "0" / "0" / "0").unlink()
    found = verify(store)
    assert [(d.array, d.kind) for d in found.damage] == [("gap", "missing")]
    summary = run_spec(parse_spec(ON), store, client=client, progress=False)
    assert summary.n_cells == 60  # every block of the chunk: 3 algorithms x 2 inits x 10 folds
    assert verify(store).ok
    xr.testing.assert_identical(iris_group(store), iris_group(scored))


@pytest.mark.parametrize(("keys", "message"), [
    ("cv_folds = 1", r"cv_folds must be 0 \(off\) or an integer >= 2 \(constraint folds\); "
                     "got 1"),
    ("cv_folds = -2", "cv_folds must be 0 .* got -2"),
    ("cv_folds = 2.5", "cv_folds must be 0 .* got 2.5"),
    ("cv_folds = true", "cv_folds must be 0 .* got True"),
    ("gap_permutations = -1", r"gap_permutations must be 0 \(off\) or an integer >= 1 "
                              r"\(permuted data sets\); got -1"),
    ('gap_permutations = "10"', "gap_permutations must be 0 .* got '10'"),
    ('cv_algorithms = ["PCSKM"]', "cv_algorithms is set but cv_folds is 0"),
    ('cv_folds = 3\ncv_algorithms = ["LKM"]', "cv_algorithms lists LKM, which fit no s grid; "
                                              "the spec's SKM and PCSKM algorithms are SKM, "
                                              "PCSKM"),
    ("cv_runs = 1", "cv_runs is set but cv_folds is 0"),
    ("cv_folds = 3\ncv_runs = 2", r"cv_runs must be an integer from 1 to n_runs \(1\): the "
                                  "runs that get CV scores; got 2"),
    ("cv_folds = 3\ncv_runs = 0", "cv_runs must be an integer from 1 .* got 0"),
    ('cv_folds = 3\ncv_algorithms = ["PCSKN"]', "unknown algorithm 'PCSKN' in cv_algorithms; "
                                                "did you mean 'PCSKM'"),
    ("cv_folds_ = 3", "unknown key 'cv_folds_' in the spec; did you mean 'cv_folds'"),
])
def test_bad_spec_values_are_refused(keys, message):
    with pytest.raises(ValueError, match=message):
        parse_spec(OFF + keys)


def test_scores_need_a_sparse_algorithm_and_keep_the_hash_off():
    with pytest.raises(ValueError, match="score the s grid of SKM and PCSKM, and the spec "
                                         "runs neither"):
        parse_spec(OFF.replace('["LKM", "SKM", "PCSKM"]', '["LKM"]') + "gap_permutations = 5")
    off = parse_spec(OFF)
    assert parse_spec(OFF + "cv_folds = 0\ngap_permutations = 0").hash() == off.hash()
    assert parse_spec(ON).hash() != off.hash()
    assert parse_spec(ON).cv_algorithms == ("SKM", "PCSKM")


@pytest.mark.parametrize(("keys", "message"), [
    ("", r"cv_folds is 8 in .* but 0 in this spec \(a store keeps the selection scores"),
    ("cv_folds = 5\ngap_permutations = 3", "cv_folds is 8 in .* but 5 in this spec"),
    ("cv_folds = 8\ngap_permutations = 4", "gap_permutations is 3 in .* but 4 in this spec"),
    ('cv_folds = 8\ngap_permutations = 3\ncv_algorithms = ["PCSKM"]',
     "SKM has CV scores in .* but is not in this spec's cv_algorithms"),
    ("cv_folds = 8\ngap_permutations = 3\ncv_runs = 1", "cv_runs is None in .* but 1 in this spec"),
])
def test_a_store_keeps_its_scores(scored, tmp_path, keys, message):
    """A spec that turns the scores off or changes their settings is refused, and the store
    is left as it was."""
    store = tmp_path / "copy.zarr"
    shutil.copytree(scored, store)
    with pytest.raises(IncompatibleStore, match=message):
        prepare(store, parse_spec(OFF + keys))
    xr.testing.assert_identical(iris_group(store), iris_group(scored))


def test_cv_runs_limit_the_cv_scores_to_the_first_runs(scored, client, tmp_path):
    """With ``cv_runs = 1`` of 2 runs, run 0 carries the CV scores of a spec without the
    limit (the draws are the cell's) and run 1 none (cv_folds_used -1), while the gap is in
    both; the report's ``cv`` selection then covers run 0 only, for every algorithm."""
    text = ON.replace("n_runs = 1", "n_runs = 2") + "cv_runs = 1\n"
    assert parse_spec(text).hash() != parse_spec(ON.replace("n_runs = 1", "n_runs = 2")).hash()
    store = tmp_path / "first-run.zarr"
    summary = run_spec(parse_spec(text), store, client=client, progress=False)
    assert not summary.errors and summary.complete
    ds, full = iris_group(store), iris_group(scored)
    for name in SCORES:
        xr.testing.assert_identical(ds[name].sel(run=[0]), full[name])
    later = ds.sel(run=1)
    assert np.isnan(later.cv_score).all() and (later.cv_folds_used == -1).all()
    sparse = later.sel(algorithm=["SKM", "PCSKM"])
    fitted = sparse.isel(sparsity=slice(1, None))
    xr.testing.assert_equal(fitted.gap.notnull(), fitted.f_score.notnull())  # all but failures
    assert fitted.gap.notnull().any()
    # each done block carries every score the spec gives it
    assert (sparse.scored.where(sparse.done == 1, ALL_BITS) == ALL_BITS).all() \
        and (sparse.done == 1).any()
    assert all(later[name].isnull().all() for name in AUC_SCORES)  # with the CV scores only

    opened = open_store(store)
    assert "in runs 0 to 0 only" in _cv_runs_note("cv", SimpleNamespace(store=opened))
    assert _cv_runs_note("cv", SimpleNamespace(store=open_store(scored))) == ""
    table = fit_table(opened, "iris")
    assert table.cv_run.values.tolist() == [True, False]
    chosen = selection.summaries(selection.select(table, ["cv", "auc", "honest"]))
    cells_per_run = 2 * 2 * 10  # kinds x percentages x folds, for one init
    n_cells = chosen.n_cells.sel(init="dkm++").sum(["kind", "percent"])
    n_expected = chosen.n_expected.sel(init="dkm++").sum(["kind", "percent"])
    assert (n_cells.sel(selection="cv") == cells_per_run).all()
    assert (n_expected.sel(selection="cv") == cells_per_run).all()  # complete: run 0 only
    for name in ("auc", "cv"):  # auc rests on the CV fold fits: the same runs
        assert (n_cells.sel(selection=name) == cells_per_run).all()
        assert (n_expected.sel(selection=name) == cells_per_run).all()
    assert "under auc" in _cv_runs_note("auc", SimpleNamespace(store=opened))
    assert (n_cells.sel(selection="honest") == 2 * cells_per_run).all()
    assert (n_expected.sel(selection="honest") == 2 * cells_per_run).all()

"""The two experiment variants: the shuffled digits, uninformative features at the pixels' own
scale (datasets.md §5.1), and the unpaired design, a constraint sample and Seeding draw per
algorithm and init (protocol.md §2, §6), against literal implementations of those sections."""

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import zarr
from scipy import stats
from test_cells import check_cell_records, public_fit, setting

from pcskm import algorithms
from pcskm.experiments import cells
from pcskm.experiments.cells import Block, Setting, Task
from pcskm.experiments.datasets import dataset_info, load
from pcskm.experiments.protocol import Protocol
from pcskm.experiments.spec import load_spec, parse_spec
from pcskm.runner import IncompatibleStore, calibrate
from pcskm.runner.store import CubeView, open_root, prepare
from pcskm.runner.tasks import plan

DIGITS = [("048", 3), ("389", 4)]
INIT_CODES = {"dkm++": 1, "seeding": 2, "robin": 3, "maximin": 4}  # protocol.md §2
TINY = """
name = "tiny"
datasets = ["iris"]
algorithms = ["PCKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [1]
n_runs = 1
"""


def _rng(key):
    return np.random.default_rng(np.random.SeedSequence(entropy=0, spawn_key=key))


def _pixel_and_added(data_dir, contamination):
    """(clean, derived) of every digits subset."""
    return [(load(f"digits{classes}-{sub}", data_dir),
             load(f"digits{classes}-{contamination}-{sub}", data_dir))
            for classes, _ in DIGITS for sub in range(1, 11)]


# --- the shuffled digits (datasets.md §5.1) -------------------------------------------------

@pytest.mark.parametrize("classes,code", DIGITS)
@pytest.mark.parametrize("sub", [1, 10])
def test_shuffled_digits_follow_the_literal_recipe(data_dir, classes, code, sub):
    """Four distinct pixel columns drawn from key (7, ds, sub), then one row permutation per
    column, in that order; the clean subset's labels, code and subset."""
    clean = load(f"digits{classes}-{sub}", data_dir)
    shuffled = load(f"digits{classes}-shuffled-{sub}", data_dir)
    rng = _rng((7, code, sub))
    sources = rng.choice(16, 4, replace=False)
    assert len(set(sources.tolist())) == 4
    expected = np.empty((150, 4))
    for j, column in enumerate(sources):
        order = rng.permutation(150)
        for i in range(150):
            expected[i, j] = clean.X[order[i], column]
    np.testing.assert_array_equal(shuffled.X, np.hstack([clean.X, expected]))
    np.testing.assert_array_equal(shuffled.y, clean.y)
    assert (shuffled.code, shuffled.subset) == (clean.code, clean.subset) == (code, sub)
    np.testing.assert_array_equal(np.flatnonzero(shuffled.uninformative), [16, 17, 18, 19])
    assert shuffled.feature_quality == "16 unknown, -4"
    assert shuffled.feature_names[16:] == tuple(f"shuffled x{c + 1}" for c in sources)
    for j, column in enumerate(sources):  # the same values: the same marginal distribution
        np.testing.assert_array_equal(np.sort(shuffled.X[:, 16 + j]), np.sort(clean.X[:, column]))


def test_added_columns_scale(data_dir):
    """datasets.md §5: every Exp(1) column has a standard deviation of 0.73 to 1.30 and every
    pixel column 10.1 to 42.1; a shuffled column has exactly its source's."""
    exp_sd = np.array([dirty.X[:, 16:].std(axis=0) for _, dirty in
                       _pixel_and_added(data_dir, "contaminated")])
    pairs = _pixel_and_added(data_dir, "shuffled")
    pixel_sd = np.array([clean.X.std(axis=0) for clean, _ in pairs])
    assert (round(exp_sd.min(), 2), round(exp_sd.max(), 2)) == (0.73, 1.30)
    assert (round(pixel_sd.min(), 1), round(pixel_sd.max(), 1)) == (10.1, 42.1)
    for clean, shuffled in pairs:
        for j in range(16, 20):
            source = clean.feature_names.index(shuffled.feature_names[j].split()[-1])
            assert shuffled.X[:, j].std() == pytest.approx(clean.X[:, source].std(), rel=1e-12)


def test_exp_columns_move_the_maximin_centres_of_one_subset(data_dir):
    """deviations.md D16: of the 20 subsets, only digits048-4 gets other Maximin(D) centres
    with the Exp(1) columns."""
    moved = [dirty.name for clean, dirty in _pixel_and_added(data_dir, "contaminated")
             if list(algorithms.maximin_init(clean.X, 3))
             != list(algorithms.maximin_init(dirty.X, 3))]
    assert moved == ["digits048-contaminated-4"]


def test_shuffled_columns_carry_no_class_information(data_dir):
    """The 80 shuffled columns' one-way ANOVA p-values against the class are those of
    independent columns (uniform), while their source pixels are strongly class-related (a
    shuffle within each class would keep the sources' p-values)."""
    shuffled_p, source_p = [], []
    for clean, shuffled in _pixel_and_added(data_dir, "shuffled"):
        for j in range(16, 20):
            source = clean.feature_names.index(shuffled.feature_names[j].split()[-1])
            for column, found in ((shuffled.X[:, j], shuffled_p), (clean.X[:, source], source_p)):
                found.append(stats.f_oneway(*(column[clean.y == g] for g in range(3))).pvalue)
    assert stats.kstest(shuffled_p, "uniform").pvalue > 0.01
    assert np.median(source_p) < 1e-6


def test_shuffled_digits_share_folds_samples_and_files_with_the_clean_subset(data_dir):
    for name, clean_name in (("digits048-shuffled-2", "digits048-2"),
                             ("digits389-shuffled-7", "digits389-7")):
        a, b = Protocol(load(name, data_dir)), Protocol(load(clean_name, data_dir))
        np.testing.assert_array_equal(a.fold_of, b.fold_of)
        for cell in (("random", 4, 3, 2), ("must-link", 10, 0, 9)):
            for left, right in zip(a.constraints(*cell), b.constraints(*cell), strict=True):
                np.testing.assert_array_equal(left, right)
            assert a.seeding_seed(*cell).spawn_key == b.seeding_seed(*cell).spawn_key
        assert dataset_info(name, data_dir)["files"] == dataset_info(clean_name,
                                                                     data_dir)["files"]


def test_shuffled_digits_are_selectable_in_a_spec():
    spec = parse_spec(TINY.replace('["iris"]', '["digits389-shuffled-*"]'))
    assert spec.datasets == tuple(f"digits389-shuffled-{s}" for s in range(1, 11))
    bundled = load_spec("contamination")
    families = ("digits048-{}", "digits389-{}", "digits048-contaminated-{}",
                "digits389-contaminated-{}", "digits048-shuffled-{}", "digits389-shuffled-{}")
    assert bundled.datasets == tuple(f.format(s) for f in families for s in range(1, 11))
    assert bundled.design == "paired" and bundled.kinds == ("random",)


# --- the unpaired design (protocol.md §2, §6) -----------------------------------------------

def _literal_random_sample(y, fold_of, key, percent):
    """protocol.md §4-§5 for the random kind from the explicit ``key``, pool by double loop."""
    train = [i for i in range(len(y)) if fold_of[i] != key[6]]
    must, cannot = [], []
    for ia, a in enumerate(train):
        for b in train[ia + 1:]:
            (must if y[a] == y[b] else cannot).append((a, b))
    t0 = int(np.sum(fold_of != 0))
    m = (t0 * (t0 - 1) // 2 * round(percent * 10) + 500) // 1000
    m += m % 2
    pooled = must + cannot
    rng = _rng(key)
    chosen = [pooled[i] for i in rng.choice(len(pooled), m, replace=False)]
    chosen = [chosen[i] for i in rng.permutation(m)]
    linked = set(must)
    ml = np.array([p for p in chosen if p in linked], dtype=np.int64).reshape(-1, 2)
    cl = np.array([p for p in chosen if p not in linked], dtype=np.int64).reshape(-1, 2)
    return ml, cl


def _labels():
    return np.repeat([0, 1, 2], [12, 15, 9])


def test_unpaired_keys_extend_the_cell_key_by_init_and_algorithm_name():
    unpaired = Protocol((9, 2), _labels(), design="unpaired")
    # hand-worked: random = 4, 5 % = 50, Seeding = 2, "PCSKM" = 80 67 83 75 77
    cell = ("random", 5, 3, 2, "PCSKM", "seeding")
    assert unpaired.constraint_seed(*cell).spawn_key == (2, 9, 2, 4, 50, 3, 2, 2,
                                                         80, 67, 83, 75, 77)
    assert unpaired.seeding_seed(*cell).spawn_key == (3, 9, 2, 4, 50, 3, 2, 2,
                                                      80, 67, 83, 75, 77)
    assert unpaired.constraint_seed(*cell).entropy == 0
    keys = {unpaired.constraint_seed("random", 5, 3, 2, algorithm, init).spawn_key
            for algorithm in ("LKM", "SKM", "PCKM", "MPCKM", "PCSKM", "PCSKM-paper")
            for init in INIT_CODES}
    assert len(keys) == 24 and all(len(key) > 7 for key in keys)
    paired = Protocol((9, 2), _labels())
    assert paired.constraint_seed(*cell).spawn_key == (2, 9, 2, 4, 50, 3, 2)
    assert paired.constraint_seed(*cell[:4]).spawn_key == (2, 9, 2, 4, 50, 3, 2)


@pytest.mark.parametrize("algorithm,init", [("PCKM", "dkm++"), ("PCKM", "seeding"),
                                            ("PCSKM-paper", "maximin")])
def test_unpaired_samples_equal_the_literal_sampling(algorithm, init):
    y = _labels()
    unpaired = Protocol((9, 2), y, design="unpaired")
    key = (2, 9, 2, 4, 75, 1, 4, INIT_CODES[init], *algorithm.encode())
    expected = _literal_random_sample(y, unpaired.fold_of, key, 7.5)
    got = unpaired.constraints("random", 7.5, 1, 4, algorithm, init)
    for left, right in zip(got, expected, strict=True):
        np.testing.assert_array_equal(left, right)
    paired = Protocol((9, 2), y).constraints("random", 7.5, 1, 4, algorithm, init)
    assert sum(map(len, got)) == sum(map(len, paired))
    assert not all(np.array_equal(a, b) for a, b in zip(got, paired, strict=True))


def test_paired_samples_ignore_algorithm_and_init_and_follow_the_seven_part_key():
    y = _labels()
    paired = Protocol((9, 2), y)
    expected = _literal_random_sample(y, paired.fold_of, (2, 9, 2, 4, 75, 1, 4), 7.5)
    for extra in ((), ("PCKM", "dkm++"), ("MPCKM", "seeding")):
        for left, right in zip(paired.constraints("random", 7.5, 1, 4, *extra), expected,
                               strict=True):
            np.testing.assert_array_equal(left, right)


def test_unpaired_draws_are_the_same_in_another_process():
    """No key part comes from ``hash()`` (salted per process for strings)."""
    code = ("import hashlib, numpy as np\n"
            "from pcskm.experiments.protocol import Protocol\n"
            "p = Protocol((9, 2), np.repeat([0, 1, 2], [12, 15, 9]), design='unpaired')\n"
            "ml, cl = p.constraints('random', 10, 4, 8, 'PCSKM-paper', 'robin')\n"
            "s = p.seeding_seed('random', 10, 4, 8, 'PCSKM-paper', 'robin')\n"
            "print(hashlib.sha256(ml.tobytes() + cl.tobytes()).hexdigest(),"
            " np.random.default_rng(s).integers(1 << 30))\n")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, env={**os.environ, "PYTHONHASHSEED": "random"}
                            ).stdout.split()
    here = Protocol((9, 2), _labels(), design="unpaired")
    ml, cl = here.constraints("random", 10, 4, 8, "PCSKM-paper", "robin")
    seed = here.seeding_seed("random", 10, 4, 8, "PCSKM-paper", "robin")
    assert output == [hashlib.sha256(ml.tobytes() + cl.tobytes()).hexdigest(),
                      str(np.random.default_rng(seed).integers(1 << 30))]


def test_bad_designs_and_missing_draw_parts_are_refused():
    with pytest.raises(ValueError, match="design must be one of paired, unpaired"):
        Protocol((9, 2), _labels(), design="independent")
    unpaired = Protocol((9, 2), _labels(), design="unpaired")
    with pytest.raises(ValueError, match="draws per algorithm and init: give both"):
        unpaired.constraints("random", 1, 0, 0)
    with pytest.raises(ValueError, match="unknown init 'kmeans'"):
        unpaired.seeding_seed("random", 1, 0, 0, "PCKM", "kmeans")
    with pytest.raises(ValueError, match="non-empty name"):
        unpaired.constraints("random", 1, 0, 0, "", "dkm++")


# settings of one task: Seeding with two estimators, a deterministic init with constraints
# and a shared fit (LKM with DKM++, fitted once, scored against each cell's constraints)
TASK_SETTINGS = (("PCKM", "seeding", (), "PCKM"), ("PCSKM", "seeding", (), "PCSKM"),
                 ("MPCKM", "dkm++", (), "MPCKM"), ("LKM", "dkm++", (), "LKM"))
FOLDS = (0, 3)
BLOCKS = (Block("random", 5.5, (1,)), Block("cannot-link", 1.0, (0,)))


def _evaluate(design):
    settings = tuple(dataclasses.replace(setting("iris", *entry), design=design)
                     for entry in TASK_SETTINGS)
    return cells.evaluate(Task(settings, BLOCKS, folds=FOLDS))


def test_unpaired_cells_use_their_own_sample_and_seeding():
    """Every setting of an unpaired task equals the public estimators fitted with the
    (algorithm, init)'s own sample and Seeding key."""
    data = cells.dataset("iris")
    cv = Protocol(data, design="unpaired")
    result = _evaluate("unpaired")
    for (estimator, init, params, name), per_block in zip(TASK_SETTINGS, result.blocks,
                                                          strict=True):
        for block, got in zip(BLOCKS, per_block, strict=True):
            for f, fold in enumerate(FOLDS):
                cell = (block.kind, block.percent, block.runs[0], fold, name, init)
                test = np.flatnonzero(cv.fold_of == fold)
                check_cell_records(got, f, public_fit(estimator, init, params, data, cv, cell),
                                   *cv.constraints(*cell), data.y[test], test)


def test_paired_cells_share_the_seven_part_sample():
    """The paired design unchanged: every setting is scored against the one sample of the
    literal key (2, ds, sub, kind, pct10, run, fold); the unpaired design changes the
    constrained fits but not LKM's (it uses nothing random)."""
    data = cells.dataset("iris")
    cv = Protocol(data)
    paired, unpaired = _evaluate("paired"), _evaluate("unpaired")
    for (estimator, init, params, _), per_block in zip(TASK_SETTINGS, paired.blocks,
                                                       strict=True):
        got = per_block[0]  # random, 5.5 %, run 1
        for f, fold in enumerate(FOLDS):
            sample = _literal_random_sample(data.y, cv.fold_of, (2, 1, 0, 4, 55, 1, fold), 5.5)
            test = np.flatnonzero(cv.fold_of == fold)
            check_cell_records(got, f, public_fit(estimator, init, params, data, cv,
                                                  ("random", 5.5, 1, fold)),
                               *sample, data.y[test], test)
    lkm = [name for *_, name in TASK_SETTINGS].index("LKM")
    np.testing.assert_array_equal(paired.blocks[lkm][0].f_score, unpaired.blocks[lkm][0].f_score)
    assert any(not np.array_equal(paired.blocks[i][0].satisfied, unpaired.blocks[i][0].satisfied)
               for i in range(len(TASK_SETTINGS)))


def test_settings_carry_the_spec_design_and_a_task_refuses_mixed_designs(tmp_path):
    spec = parse_spec(TINY + 'design = "unpaired"\n')
    variant = spec.algorithms[0]
    assert Setting.from_spec(spec, "iris", variant, "dkm++", (1.1,)).design == "unpaired"
    tasks = plan(spec, CubeView.planned(tmp_path / "s.zarr", spec)).tasks
    assert {s.design for task in tasks for s in task.settings} == {"unpaired"}
    with pytest.raises(ValueError, match="number of folds and design"):
        Task((setting("iris", "LKM", "dkm++"),
              dataclasses.replace(setting("iris", "PCKM", "dkm++"), design="unpaired")),
             (Block("random", 1.0, (0,)),))


def test_dry_run_estimate_counts_every_sample_of_a_task_and_its_shared_fits(monkeypatch,
                                                                               tmp_path):
    """With probes that cost (settings + 100 if the run gets CV scores) s per constraint
    sample and 0.5 s per LKM/SKM fit of a fixed init: every task's estimate is the hand count
    of its samples, run by run, plus its fits once, in both designs."""
    def probe(settings, kind, percents, run, warm):
        cv = any(setting.has_cv(run) for setting in settings)
        return calibrate._Cost(per_sample=len(settings) + 100.0 * cv,
                               per_task=0.5 * sum(s.shares_fits for s in settings))

    monkeypatch.setattr(calibrate, "_probe", probe)
    text = (TINY.replace('["PCKM"]', '["LKM", "PCKM", "PCSKM"]').replace("n_runs = 1", "n_runs = 3")
            + 'cv_folds = 2\ncv_runs = 2\nsparsity_max_values = 2\n')
    for design in ("paired", "unpaired"):
        spec = parse_spec(text + f'design = "{design}"\n')
        view = CubeView.planned(tmp_path / f"{design}.zarr", spec)
        tasks = plan(spec, view).tasks
        assert sum(task.n_samples for task in tasks) == 3 * 10  # runs x folds
        # and a task of runs with and without CV scores (two groups, its fits counted once)
        whole = Task(tuple(s for task in tasks for s in task.settings),
                     (Block("random", 1.0, (0, 1, 2)),))
        assert any(s.shares_fits for s in whole.settings)
        tasks = [*tasks, whole]
        expected = []
        for task in tasks:
            settings = task.settings
            samples = sum(len(settings) + 100.0 * any(s.has_cv(run) for s in settings)
                          for block in task.blocks for run in block.runs
                          for _ in task.fold_list)
            expected.append(samples + 0.5 * sum(s.shares_fits for s in settings))
        assert any(s.has_cv(0) for task in tasks for s in task.settings)
        found = calibrate.estimate(tasks, view, spec)
        assert found.task_seconds == pytest.approx(expected)
        assert found.core_seconds == pytest.approx(sum(expected))


# --- the spec key and the store -------------------------------------------------------------

def test_the_paired_subset_is_the_unpaired_grid_in_the_paired_design():
    unpaired, paired = load_spec("unpaired").to_dict(), load_spec("paired-subset").to_dict()
    assert paired.pop("design") == "paired" and unpaired.pop("design") == "unpaired"
    for key in ("name", "description", "source_text"):
        del paired[key], unpaired[key]
    assert paired == unpaired


def test_design_key_defaults_to_paired_and_keeps_older_hashes():
    base = parse_spec(TINY)
    assert base.design == "paired"
    assert parse_spec(TINY + 'design = "paired"\n').hash() == base.hash()
    added_since = ("design", "cv_folds", "gap_permutations", "cv_algorithms", "cv_runs",
                   "data")
    content = {k: v for k, v in base.to_dict().items()
               if k not in ("name", "description", "source_text", *added_since)}
    older = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert base.hash() == hashlib.sha256(older.encode()).hexdigest()
    assert parse_spec(TINY + 'design = "unpaired"\n').hash() != base.hash()
    with pytest.raises(ValueError, match="unknown design 'unpared' in design; did you mean "
                                         "'unpaired'"):
        parse_spec(TINY + 'design = "unpared"\n')
    bundled = load_spec("unpaired")
    assert bundled.design == "unpaired" and bundled.kinds == ("random", "must-link",
                                                              "cannot-link")
    assert bundled.datasets == tuple(["fisheriris", "ionosphere"]
                                     + [f"digits{c}-{s}" for c in ("048", "389")
                                        for s in range(1, 11)]
                                     + ["mwm-ttscst", "mwm-ttchst"])


def test_a_store_records_its_design_and_refuses_another(tmp_path):
    paired, unpaired = parse_spec(TINY), parse_spec(TINY + 'design = "unpaired"\n')
    for made, other, path in ((paired, unpaired, tmp_path / "p.zarr"),
                              (unpaired, paired, tmp_path / "u.zarr")):
        prepare(path, made)
        assert open_root(path).attrs["protocol"]["design"] == made.design
        with pytest.raises(IncompatibleStore,
                           match=f"design is '{made.design}' in {path} but '{other.design}' "
                                 "in this spec"):
            prepare(path, other)
        assert prepare(path, made)[1] == "opened"


def test_a_store_made_before_the_design_key_is_paired(tmp_path):
    path = tmp_path / "old.zarr"
    prepare(path, parse_spec(TINY))
    root = open_root(path, "r+")
    attrs = root.attrs.asdict()
    del attrs["protocol"]["design"]  # as written before the key existed,
    del attrs["metadata_sha256"]  # and so before the metadata digests
    root.attrs.put({**attrs, "schema_version": 2})  # and the chunk digests
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        zarr.consolidate_metadata(str(path))
    assert "design" not in open_root(path).attrs["protocol"]
    with pytest.raises(IncompatibleStore, match="design is 'paired'"):
        prepare(path, parse_spec(TINY + 'design = "unpaired"\n'))
    assert prepare(path, parse_spec(TINY))[1] == "opened"
    assert open_root(path).attrs["protocol"]["design"] == "paired"


def test_the_report_has_a_family_for_each_shuffled_digits_set():
    from pcskm.experiments.report import families

    for prefix, label in (("digits048", "digits 0-4-8 shuffled"),
                          ("digits389", "digits 3-8-9 shuffled")):
        for subset in range(1, 11):
            assert families.family_of(f"{prefix}-shuffled-{subset}").label == label
    assert all(f not in families.PAPER_STUDY for f in families.SHUFFLED)

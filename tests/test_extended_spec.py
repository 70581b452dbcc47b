"""The extended study's spec (experiments/specs/extended.toml, docs/results/extended/README.md):
at least 16 data sets, none counted twice, each loading with the n, p and k of the committed
design table; the generated sets' informative features separate the classes and their
uninformative ones do not; the pre-registration block parses. Loads only, no clustering.

The design tables docs/results/extended/design_datasets.csv and design.csv are what
:func:`design_tables` computes; after a change of the spec, rewrite them with
``python -c "from tests.test_extended_spec import write_design; write_design()"``.
"""

import csv
import gzip
import hashlib
import itertools
import math
import re
import tomllib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import scipy.spatial
import scipy.stats

from pcskm.experiments import _brodinova, load, load_spec, sparsity_grid
from pcskm.experiments._seeds import DATA_SEED
from pcskm.experiments.datasets import PER_CLASS

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "experiments" / "specs" / "extended.toml"
DESIGN = ROOT / "docs" / "results" / "extended"
README = DESIGN / "README.md"
PRIMARY_OTHERS = ("LKM", "SKM", "PCKM", "MPCKM")
# Analysis 1's settings: (Seeding, random) and 3 deterministic inits x 3 kinds
N_SETTINGS = 1 + 3 * 3
# the six generated sets with 45 or more uninformative features
HIGH_DIMENSIONAL_NOISE = 45
# the ANOVA checks of the generated sets: each informative column below INFORMATIVE_P, no
# uninformative one significant at NOISE_LEVEL after Bonferroni
INFORMATIVE_P, NOISE_LEVEL = 1e-10, 1e-3
STATLOG_N, OPTDIGITS_N = 2310, 1797  # the sets before their 50 points per class
BRODINOVA_NAME = re.compile(r"brodinova-(\d+)-(\d+)(?:-k(\d+))?$")
# the independent unit each data set belongs to (docs/results/extended/README.md, Data sets)
UNITS = {"fisheriris": "paper: Fisher's iris", "ionosphere": "paper: UCI ionosphere",
         "digits389-1": "paper: UCI pen-based digits",
         "mwm-ttscst": "paper: Morris Water Maze", "optdigits048": "scikit-learn"}


@pytest.fixture(scope="module")
def spec():
    return load_spec(SPEC)


@pytest.fixture(scope="module")
def loaded(spec, data_dir, clustbench_dir):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PCSKM_CLUSTBENCH", str(clustbench_dir))
        return {name: load(spec.data_ref(name), data_dir) for name in spec.datasets}


def preregistration():
    """The spec's ``[preregistration]`` table as written (TOML)."""
    return tomllib.loads(SPEC.read_text())["preregistration"]


def unit(name):
    if name.startswith("uci-"):
        return "clustbench uci battery"
    return "generated" if BRODINOVA_NAME.match(name) else UNITS[name]


def signed_rank_null(n):
    """The exact null distribution of the signed-rank statistic T+ for n untied non-zero
    differences, by counting subsets of the ranks 1..n (dynamic programming)."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1
    for rank in range(1, n + 1):
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    return counts / 2.0 ** n


def largest_significant_rank_sum(n, level):
    """The largest rank sum against x (min(T+, T-)) whose exact two-sided p is <= level."""
    cdf = np.cumsum(signed_rank_null(n))
    return max(t for t in range(len(cdf)) if min(1.0, 2 * cdf[t]) <= level)


def fingerprint(X):
    """SHA-256 of X rounded to 6 decimals (-0 made 0). The generated sets are drawn through
    LAPACK's QR and Cholesky (experiments/_brodinova.py), whose last bits depend on the
    CPU's BLAS kernels: the raw bytes of the project's AMD and Intel VMs differ. A difference
    of about 1e-14 moves a value across a 6th decimal with a chance of about 1e-8."""
    return hashlib.sha256(np.ascontiguousarray(np.round(X, 6) + 0.0).tobytes()).hexdigest()


def design_tables(spec, loaded):
    """The rows of design_datasets.csv (one per data set) and of design.csv."""
    rows = []
    for name in spec.datasets:
        data = loaded[name]
        n, p = data.X.shape
        informative = "" if data.informative is None else int(data.informative.sum())
        uninformative = "" if data.uninformative is None else int(data.uninformative.sum())
        rows.append({
            "dataset": name, "unit": unit(name), "n": n, "p": p, "k": data.n_clusters,
            "smallest_class": int(np.bincount(data.y).min()), "informative": informative,
            "uninformative": uninformative,
            "s_values": len(sparsity_grid(p, spec.sparsity_start, spec.sparsity_step,
                                          spec.sparsity_max_values)),
            "x_sha256": fingerprint(data.X),
        })
    n_sets = len(rows)
    m = len(PRIMARY_OTHERS)
    paper = load_spec("paper")
    alpha = preregistration()["alpha"]
    design = {
        "n_datasets": n_sets,
        "n_generated": sum(r["unit"] == "generated" for r in rows),
        "n_generated_high_dimensional": sum(
            r["unit"] == "generated" and r["uninformative"] >= HIGH_DIMENSIONAL_NOISE
            for r in rows),
        "n_real": sum(r["unit"] != "generated" for r in rows),
        "n_percentages": len(spec.percentages),
        "n_settings_analysis1": N_SETTINGS,
        "n_primary_tests": m,
        "smallest_exact_two_sided_p": 2 / 2 ** n_sets,
        "holm_first_step_level": alpha / m,
        "largest_rank_sum_against_at_holm_first_step": largest_significant_rank_sum(
            n_sets, alpha / m),
        "largest_rank_sum_against_at_holm_last_step": largest_significant_rank_sum(
            n_sets, alpha),
        "total_rank_sum": n_sets * (n_sets + 1) // 2,
        # the exact test drops zero differences: with one tie among the data sets the same
        # steps need these rank sums of n - 1 differences
        "largest_rank_sum_against_at_holm_first_step_one_tie": largest_significant_rank_sum(
            n_sets - 1, alpha / m),
        "largest_rank_sum_against_at_holm_last_step_one_tie": largest_significant_rank_sum(
            n_sets - 1, alpha),
        "total_rank_sum_one_tie": (n_sets - 1) * n_sets // 2,
        "high_dimensional_min_uninformative": HIGH_DIMENSIONAL_NOISE,
        "bootstrap_interval_level": 0.95,
        "alpha": alpha,
        "points_per_class_of_subsamples": PER_CLASS,
        "statlog_n_in_battery": STATLOG_N,
        "optdigits_n_in_scikit_learn": OPTDIGITS_N,
        "generated_points_per_group": _brodinova.N_PER_GROUP,
        "informative_f_test_p_below": INFORMATIVE_P,
        "noise_f_test_bonferroni_level": NOISE_LEVEL,
        "paper_n_runs": paper.n_runs,
        "paper_n_percentages": len(paper.percentages),
    }
    return rows, [{"quantity": key, "value": value} for key, value in design.items()]


def read_csv(path):
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def write_design():
    """Rewrite the two design tables from the spec and the data as loaded."""
    spec = load_spec(SPEC)
    rows, design = design_tables(spec, {n: load(spec.data_ref(n)) for n in spec.datasets})
    for path, table in ((DESIGN / "design_datasets.csv", rows), (DESIGN / "design.csv", design)):
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(table[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(table)


def test_the_spec_runs_the_papers_protocol(spec):
    assert len(spec.datasets) >= 16 and len(set(spec.datasets)) == len(spec.datasets)
    assert {a.name for a in spec.algorithms} == {"LKM", "SKM", "PCKM", "MPCKM", "PCSKM"}
    assert set(spec.inits) == {"dkm++", "seeding", "robin", "maximin"}
    assert set(spec.kinds) == {"random", "must-link", "cannot-link"}
    assert list(spec.percentages) == [1 + 1.5 * i for i in range(7)]
    assert spec.n_folds == 10 and spec.max_iter == 25
    # cv for SKM and PCSKM in every run (the primary rule), the gap for its tie-break
    assert spec.cv_folds >= 2 and set(spec.cv_algorithms) == {"SKM", "PCSKM"}
    assert spec.cv_runs in (None, spec.n_runs) and spec.gap_permutations >= 1


def test_the_preregistration_block_parses(spec):
    table = preregistration()
    assert spec.preregistration is not None and spec.preregistration.rule == table["rule"]
    assert (table["rule"], table["focus"], table["level"], table["alpha"]) == (
        "cv", "PCSKM", "dataset", 0.05)
    text = table["hypotheses"]
    for other in PRIMARY_OTHERS:
        assert f"{other}" in text
    assert "exact Wilcoxon" in text and "Holm" in text and "unthresholded" in text


def test_the_readme_states_the_preregistered_hypotheses_first():
    text = README.read_text()
    hypotheses = " ".join(preregistration()["hypotheses"].split())
    quoted = " ".join(" ".join(line.lstrip("> ") for line in text.splitlines()
                               if line.startswith(">")).split())
    assert hypotheses in quoted
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[0] == "## Pre-registered hypotheses"


def test_each_data_set_loads_with_the_design_tables_n_p_k(spec, loaded):
    rows, design = design_tables(spec, loaded)
    committed = read_csv(DESIGN / "design_datasets.csv")
    assert [{key: str(value) for key, value in row.items()} for row in rows] == committed
    assert [{key: str(value) for key, value in row.items()} for row in design] == read_csv(
        DESIGN / "design.csv")
    # every class has at least n_folds points (the run refuses it otherwise)
    assert min(int(row["smallest_class"]) for row in committed) >= spec.n_folds


def shared_rows(X, Y, tolerance=5e-7):
    """The distinct rows of X (to 6 decimals) within ``tolerance`` of a row of Y in every
    column: the same points to 6 decimals by default; KEEL's files round to 3 decimals, which
    a tolerance of 6e-4 covers."""
    distance, _ = scipy.spatial.cKDTree(Y).query(X, p=np.inf, distance_upper_bound=2 * tolerance)
    return {tuple(r) for r in np.round(X[distance <= tolerance], 6)}


def test_no_data_set_is_counted_twice(spec, loaded):
    digests = {hashlib.sha256(np.ascontiguousarray(d.X).tobytes()).hexdigest()
               for d in loaded.values()}
    assert len(digests) == len(loaded) >= 16
    # nor do two sets of the same width share a point (as one set read from two sources does)
    for a, b in itertools.combinations(spec.datasets, 2):
        if loaded[a].X.shape[1] == loaded[b].X.shape[1]:
            assert not shared_rows(loaded[a].X, loaded[b].X), (a, b)
    # one unit per family of the paper: the digits subsets share their source, and TT-SC-ST
    # and TT-CH-ST their TT and ST segments, each file min-max scaled over its own points (so
    # their rows differ)
    assert sum(name.startswith("digits") for name in spec.datasets) == 1
    assert sum(name.startswith("mwm-") for name in spec.datasets) == 1
    assert not {"iris", "uci-ionosphere"} & set(spec.datasets)


def test_the_shared_points_check_finds_one_set_read_from_two_sources(data_dir, clustbench_dir):
    from sklearn.datasets import load_breast_cancer, load_wine

    from pcskm.experiments.sources import load_definition, parse_definition

    def battery(name):
        table = {"source": f"clustbench:uci/{name}", "clustbench_dir": str(clustbench_dir)}
        return load_definition(parse_definition(name, table)).X

    paper = load("ionosphere", data_dir).X
    assert len(shared_rows(paper, battery("ionosphere"))) == len({tuple(r) for r in paper})
    assert len(shared_rows(battery("wdbc"), load_breast_cancer().data)) == 569
    assert len(shared_rows(battery("wine"), load_wine().data)) == 178


def _raw_clustbench(folder, name):
    with gzip.open(folder / "uci" / f"{name}.data.gz", "rt") as handle:
        X = np.loadtxt(handle)
    with gzip.open(folder / "uci" / f"{name}.labels0.gz", "rt") as handle:
        labels = np.loadtxt(handle, dtype=np.int64)
    return X, labels


@pytest.mark.parametrize("name", ["ecoli", "glass", "sonar", "statlog", "wdbc", "wine",
                                  "yeast"])
def test_uci_sets_are_the_battery_without_classes_below_the_folds(spec, loaded, clustbench_dir,
                                                                  name):
    X, labels = _raw_clustbench(clustbench_dir, name)
    keep = np.isin(labels, [c for c in np.unique(labels)
                            if c != 0 and (labels == c).sum() >= spec.n_folds])
    X, labels = X[keep], labels[keep]
    data = loaded[f"uci-{name}"]
    if name in ("statlog", "yeast"):  # 50 points per class (yeast: at most 50)
        if name == "statlog":
            assert len(labels) == STATLOG_N
        battery = Counter(zip(map(tuple, X), labels, strict=True))
        drawn = Counter(zip(map(tuple, data.X), np.unique(labels)[data.y], strict=True))
        assert not drawn - battery  # every point drawn is a point of the battery
        assert np.bincount(data.y).tolist() == [min(PER_CLASS, int((labels == c).sum()))
                                                for c in np.unique(labels)]
        return
    np.testing.assert_array_equal(data.X, X)
    # relabelled by sorted value to 0..k-1, the order of the classes kept
    for new, old in enumerate(np.unique(labels)):
        np.testing.assert_array_equal(data.y == new, labels == old)
    assert data.n_clusters == len(np.unique(labels))


def test_subsamples_are_50_per_class_drawn_from_their_keys(loaded):
    from sklearn.datasets import load_digits

    from pcskm.experiments.clustbench_subsets import statlog_50

    digits = load_digits()
    assert len(digits.target) == OPTDIGITS_N
    data = loaded["optdigits048"]
    X, target = digits.data[np.isin(digits.target, [0, 4, 8])], digits.target[
        np.isin(digits.target, [0, 4, 8])]
    rng = np.random.default_rng(np.random.SeedSequence(DATA_SEED, spawn_key=(4, 9)))
    rows = sorted(i for c in (0, 4, 8) for i in rng.choice(
        np.flatnonzero(target == c), 50, replace=False))
    np.testing.assert_array_equal(data.X, X[rows])
    np.testing.assert_array_equal(data.y, target[rows] // 4)  # 0, 4, 8 -> 0, 1, 2
    # the statlog draw repeats
    first, again = statlog_50(), statlog_50()
    np.testing.assert_array_equal(first.X, again.X)
    np.testing.assert_array_equal(first.X, loaded["uci-statlog"].X)


def test_yeast_keeps_at_most_50_per_class_drawn_from_its_key(loaded, clustbench_dir):
    """uci-yeast: the battery's classes of 10 points or more, each class of more than 50
    points reduced to 50 drawn with the key (4, 0, sub) of the spec-defined set (sub: the
    name's UTF-8 bytes), class after class; the smaller classes whole."""
    X, labels = _raw_clustbench(clustbench_dir, "yeast")
    kept = [c for c in np.unique(labels) if c != 0 and (labels == c).sum() >= 10]
    sub = int.from_bytes(b"uci-yeast", "big")
    rng = np.random.default_rng(np.random.SeedSequence(DATA_SEED, spawn_key=(4, 0, sub)))
    rows = []
    for c in kept:
        members = np.flatnonzero(labels == c)
        rows.extend(members if len(members) <= 50 else rng.choice(members, 50, replace=False))
    rows = np.sort(rows)
    data = loaded["uci-yeast"]
    np.testing.assert_array_equal(data.X, X[rows])
    np.testing.assert_array_equal(np.array(kept)[data.y], labels[rows])
    assert len(rows) == 379


def test_every_fold_has_enough_pairs_of_each_kind(spec, loaded):
    """Must-link (cannot-link) at the largest percentage draws m = that share of fold 0's
    pairs, rounded and made even (docs/method/protocol.md §4), from a fold's must-link
    (cannot-link) pairs: every fold's pool must hold them, else the run stops. With k equal
    classes the must-link pairs are about 1/k of all pairs: ten classes cannot run at 10 %."""
    share = max(spec.percentages) / 100
    for name, data in loaded.items():
        counts = np.bincount(data.y)
        # a stratified fold takes floor or ceil of n_c / n_folds points of each class
        largest = (counts - counts // spec.n_folds).sum()
        m = share * largest * (largest - 1) / 2 + 2  # above any rounded, even m
        smallest = counts - -(-counts // spec.n_folds)
        pairs = smallest.sum() * (smallest.sum() - 1) / 2
        must = (smallest * (smallest - 1) / 2).sum()
        assert must >= m and pairs - must >= m, name
    ten = np.full(10, 45)  # ten classes of 45 training points: 9900 of 101025 pairs
    assert (ten * (ten - 1) / 2).sum() < share * ten.sum() * (ten.sum() - 1) / 2


def _anova_f(x, y):
    """The one-way ANOVA F statistic of column x across the classes y, by its formula."""
    groups = [x[y == g] for g in np.unique(y)]
    k, n = len(groups), len(x)
    between = sum(len(g) * (g.mean() - x.mean()) ** 2 for g in groups) / (k - 1)
    within = sum(((g - g.mean()) ** 2).sum() for g in groups) / (n - k)
    return between / within


def generated(spec):
    return [name for name in spec.datasets if BRODINOVA_NAME.match(name)]


def test_generated_sets_have_their_stated_features_and_groups(spec, loaded):
    names = generated(spec)
    assert len(names) >= 6
    for name in names:
        p_info, p_noise, k = BRODINOVA_NAME.match(name).groups()
        p_info, p_noise, k = int(p_info), int(p_noise), int(k or 3)
        data = loaded[name]
        assert data.X.shape == (40 * k, p_info + p_noise) and data.n_clusters == k
        np.testing.assert_array_equal(np.flatnonzero(data.informative), np.arange(p_info))
        np.testing.assert_array_equal(np.flatnonzero(data.uninformative),
                                      np.arange(p_info, p_info + p_noise))
        assert np.bincount(data.y).tolist() == [40] * k
    high = [n for n in names if loaded[n].uninformative.sum() >= HIGH_DIMENSIONAL_NOISE]
    assert len(high) >= 3


def test_informative_features_separate_the_classes_and_noise_does_not(spec, loaded):
    for name in generated(spec):
        data = loaded[name]
        X, y = data.X, data.y
        n, k = len(y), data.n_clusters
        F = np.array([_anova_f(X[:, j], y) for j in range(X.shape[1])])
        np.testing.assert_allclose(
            F, [scipy.stats.f_oneway(*(X[y == g, j] for g in range(k))).statistic
                for j in range(X.shape[1])], rtol=1e-10)
        informative, noise = F[data.informative], F[data.uninformative]
        # each informative column: p below 1e-10 under the null of equal class means
        assert informative.min() > scipy.stats.f.isf(INFORMATIVE_P, k - 1, n - k), name
        # the noise columns: no column significant at 0.001 after Bonferroni, and their F
        # values distributed as F(k - 1, n - k) (Kolmogorov-Smirnov)
        assert noise.max() < scipy.stats.f.isf(NOISE_LEVEL / len(noise), k - 1, n - k), name
        assert scipy.stats.kstest(noise, scipy.stats.f(k - 1, n - k).cdf).pvalue > 1e-3, name


def test_generated_draws_are_deterministic_from_their_keys(spec, loaded):
    for name in generated(spec):
        data = loaded[name]
        p_info = int(data.informative.sum())
        rng = np.random.default_rng(np.random.SeedSequence(DATA_SEED, spawn_key=(4, data.code)))
        X, y = _brodinova.simulate(p_info, int(data.uninformative.sum()), rng, data.n_clusters)
        np.testing.assert_array_equal(load(name).X, X)
        np.testing.assert_array_equal(y, data.y)
    codes = [loaded[name].code for name in generated(spec)]
    assert len(set(codes)) == len(codes)  # each an independent draw: its own key


def test_the_design_numbers():
    # 2 / 2^n and Holm's first step, and the null distribution against scipy's exact one
    for n in (6, 20):
        null = signed_rank_null(n)
        assert math.isclose(null.sum(), 1.0) and math.isclose(null[0], 2.0 ** -n)
        d = np.arange(1, n + 1, dtype=float)
        signs = np.ones(n)
        signs[:3] = -1  # T- = 1 + 2 + 3 = 6
        p = scipy.stats.wilcoxon(d * signs, method="exact").pvalue
        assert math.isclose(p, 2 * null[:7].sum())
    assert largest_significant_rank_sum(6, 0.05) == 0  # 2/64 = 0.031

"""Issue 12 (items 1, 2, 6): the analyses at the cases and at the data-set level with effect
sizes, intervals and Holm's adjustment, each statistic against an independent computation
written here; failed fits visible in the figure data, the figures and failures.csv; the paper's
six data sets alone in Figure 1; log axes for weights spanning decades."""

import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import xarray as xr
from test_report import EMPTY, _families, make_group, set_grid, write_cube

from pcskm.experiments.report import (
    families,
    inference,
    open_store,
    performance,
    statistics,
    weights,
    write_report,
)
from pcskm.experiments.report.aggregate import collect

ALGORITHMS = ("LKM", "SKM", "PCKM", "MPCKM", "PCSKM")
INITS = ("seeding", "dkm++", "robin", "maximin")
KINDS = ("random", "must-link", "cannot-link")
SIX = statistics.SIX

# ---------------------------------------------------------------- independent computations


def brute_null(n):
    """P0(T+ <= t) by listing all 2^n sign patterns of the ranks 1..n."""
    sums = [sum(r for r, positive in zip(range(1, n + 1), signs, strict=True) if positive)
            for signs in itertools.product((False, True), repeat=n)]
    counts = np.bincount(sums, minlength=n * (n + 1) // 2 + 1)
    return np.cumsum(counts) / 2 ** n


def brute_hodges_lehmann(d, confidence=0.95):
    """The textbook interval: Walsh averages by a double loop, the order statistic k from the
    enumerated null distribution."""
    walsh = sorted((d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d)))
    below = brute_null(len(d))
    k = max((t + 1 for t in range(len(below)) if below[t] <= (1 - confidence) / 2), default=1)
    return np.median(walsh), walsh[k - 1], walsh[len(walsh) - k], 1 - 2 * below[k - 1]


def holm_by_definition(p):
    """The Holm-adjusted p of each hypothesis: the smallest level at which the step-down
    procedure (reject p(j) while p(j) <= alpha / (m - j + 1)) rejects it."""
    p = np.asarray(p, dtype=float)
    present = [i for i in range(len(p)) if not np.isnan(p[i])]
    m = len(present)

    def rejected(alpha):
        out = set()
        for j, i in enumerate(sorted(present, key=lambda i: p[i])):
            if p[i] > alpha / (m - j):
                break
            out.add(i)
        return out

    candidates = sorted({min(1.0, (m - j) * p[i]) for j, i in
                         enumerate(sorted(present, key=lambda i: p[i]))} | {1.0})
    return [np.nan if np.isnan(p[i]) else next(a for a in candidates if i in rejected(a))
            for i in range(len(p))]


def bootstrap_loop(values, clusters, seed_key, n_resamples=10_000):
    """The clustered percentile bootstrap as a plain loop: per resample, draw as many
    clusters (in sorted label order) as there are, keep all their values, take the mean."""
    rng = np.random.default_rng(np.random.SeedSequence(entropy=0, spawn_key=seed_key))
    labels = sorted(set(clusters))
    members = {label: [v for v, c in zip(values, clusters, strict=True) if c == label]
               for label in labels}
    means = []
    for _ in range(n_resamples):
        sample = []
        for c in rng.integers(0, len(labels), size=len(labels)):
            sample += members[labels[c]]
        means.append(sum(sample) / len(sample))
    return np.percentile(means, [2.5, 97.5])


# ---------------------------------------------------------------- the building blocks


def test_rank_biserial_hand_worked():
    # d = (1, -2, 3, 0, 4): zero dropped, ranks 1..4, R+ = 8, R- = 2 (Kerby: f - u = .8 - .2)
    assert inference.rank_sums([1, -2, 3, 0, 4]) == (8, 2)
    assert inference.rank_biserial([1, -2, 3, 0, 4]) == pytest.approx(0.6)
    assert inference.rank_biserial([-1, -2]) == -1 and np.isnan(inference.rank_biserial([0]))


@pytest.mark.parametrize("n", [3, 5, 6, 9])
def test_hodges_lehmann_against_brute_force(n):
    d = np.random.default_rng(n).normal(0.1, 1, n)
    assert inference.hodges_lehmann(d) == pytest.approx(brute_hodges_lehmann(d), rel=1e-12)
    np.testing.assert_allclose(np.cumsum(inference.signed_rank_null(n)), brute_null(n),
                               rtol=1e-12)


def test_hodges_lehmann_attained_level_with_six_data_sets():
    # n = 6: P0(T+ = 0) = 1/64 <= 0.025 < P0(T+ <= 1) = 2/64: k = 1, the range of d, at
    # 1 - 2/64 = 96.875 %; n = 5: even k = 1 gives only 1 - 2/32 = 93.75 %.
    d = [0.3, -0.1, 0.2, 0.5, 0.05, 0.15]
    _estimate, low, high, attained = inference.hodges_lehmann(d)
    assert (low, high, attained) == (-0.1, 0.5, 1 - 2 / 64)
    assert inference.hodges_lehmann(d[:5])[3] == 1 - 2 / 32


def test_cluster_bootstrap_matches_a_plain_loop():
    rng = np.random.default_rng(3)
    clusters = [name for name, size in zip("fbdaec", (3, 1, 4, 2, 2, 5), strict=True)
                for _ in range(size)]
    values = rng.normal(size=len(clusters))
    mean, low, high = inference.cluster_bootstrap(
        values, np.array(clusters), np.random.default_rng(np.random.SeedSequence(
            entropy=0, spawn_key=(6, 2, 1))))
    assert mean == pytest.approx(values.mean())
    np.testing.assert_allclose((low, high), bootstrap_loop(values, clusters, (6, 2, 1)),
                               rtol=1e-12)


def test_holm_against_its_definition():
    p = [0.01, 0.04, np.nan, 0.03, 0.005, 0.2, 0.04]
    np.testing.assert_allclose(inference.holm(p), holm_by_definition(p), rtol=1e-12)
    assert inference.holm([0.3, 0.6]).tolist() == [0.6, 0.6]  # monotone: max(0.6, 0.6)


# ---------------------------------------------------------------- the analyses


def planted_values(seed=1, effect=0.05):
    """V per (family, algorithm, init, kind) for every case of both analyses: noise, PCSKM
    better by ``effect``, cannot-link better than must-link."""
    rng = np.random.default_rng(seed)
    values = {}
    for family, algorithm, init, kind in itertools.product(SIX, ALGORITHMS, INITS, KINDS):
        values[(family, algorithm, init, kind)] = (
            0.6 + rng.normal(0, 0.02) + (effect if algorithm == "PCSKM" else 0)
            + (0.01 if kind == "cannot-link" else 0))
    return values


def as_case_values(values):
    """``(V, complete)`` DataArrays of one selection (family, algorithm, init, kind)."""
    coords = {"family": list(SIX), "algorithm": list(ALGORITHMS), "init": list(INITS),
              "kind": list(KINDS)}
    v = xr.DataArray(np.full([len(c) for c in coords.values()], np.nan), coords=coords,
                     dims=list(coords))
    for (family, algorithm, init, kind), value in values.items():
        v.loc[{"family": family, "algorithm": algorithm, "init": init, "kind": kind}] = value
    return v, xr.ones_like(v, dtype=bool)


def x_y(values, test):
    """The case vectors of a test, in case order, as (x, y, family) lists."""
    if test.startswith("PCSKM vs "):
        other = test.split(" vs ")[1]
        keys = [(f, i, k) for i, k in statistics.ANALYSIS1_SETTINGS for f in SIX]
        return ([values[(f, "PCSKM", i, k)] for f, i, k in keys],
                [values[(f, other, i, k)] for f, i, k in keys], [f for f, _i, _k in keys])
    x_kind, y_kind = test.split(" vs ")
    keys = [(f, a, i) for i in statistics.DETERMINISTIC for a in statistics.ANALYSIS2_ALGORITHMS
            for f in SIX]
    return ([values[(f, a, i, x_kind)] for f, a, i in keys],
            [values[(f, a, i, y_kind)] for f, a, i in keys], [f for f, _a, _i in keys])


def test_dataset_level_is_the_exact_test_of_the_six_dataset_means():
    values = planted_values()
    tests, cases = statistics.analyses(_families(values))
    assert sorted(tests.level.unique()) == ["cases", "datasets"] and len(tests) == 14
    for row in tests[tests.level == "datasets"].itertuples():
        x, y, fam = x_y(values, row.test)
        frame = pd.DataFrame({"x": x, "y": y, "family": fam}).groupby("family", sort=False)
        mx, my = frame.x.mean().to_numpy(), frame.y.mean().to_numpy()
        expected = scipy.stats.wilcoxon(mx, my, method="exact")
        assert (row.n, row.n_units, row.n_cases) == (6, 6, len(x))
        assert row.p_value == pytest.approx(expected.pvalue, rel=1e-12)
        assert row.statistic == expected.statistic and row.method == "exact"
        assert (row.wins, row.losses, row.ties) == (
            (mx > my).sum(), (mx < my).sum(), (mx == my).sum())
        assert row.mean_diff == pytest.approx(np.mean(mx - my), rel=1e-12)
        d = mx - my
        assert (row.hl_estimate, row.hl_low, row.hl_high, row.hl_confidence) == pytest.approx(
            brute_hodges_lehmann(d[d != 0]), rel=1e-12)
        d = mx - my
        ranks = scipy.stats.rankdata(np.abs(d))
        assert row.rank_biserial == pytest.approx(
            (ranks[d > 0].sum() - ranks[d < 0].sum()) / ranks.sum())
    # PCSKM better in every data set: the only as extreme sign pattern is all negative,
    # p = 2 / 2^6; at the cases level the same test gives far smaller p.
    pcskm = tests[(tests.test == "PCSKM vs LKM")].set_index("level")
    assert pcskm.loc["datasets", "p_value"] == pytest.approx(2 / 64)
    assert pcskm.loc["cases", "p_value"] < 1e-6
    assert set(cases.state) == {"used"}


def test_hodges_lehmann_drops_the_zero_differences_the_test_drops():
    """One convention in one row: with a zero difference among seven, the estimate and its
    interval are those of the six non-zero differences, the ones the signed-rank test ranks
    (brute force over the six; the seven would give another estimate)."""
    x = np.array([0.71, 0.64, 0.80, 0.55, 0.90, 0.62, 0.70])
    y = np.array([0.70, 0.60, 0.81, 0.50, 0.80, 0.62, 0.66])
    d = x - y
    row = statistics.wilcoxon(x, y, method="exact")
    assert row["n_nonzero"] == 6
    expected = brute_hodges_lehmann(d[d != 0])
    assert (row["hl_estimate"], row["hl_low"], row["hl_high"], row["hl_confidence"]) == \
        pytest.approx(expected, rel=1e-12)
    assert brute_hodges_lehmann(d)[0] != pytest.approx(expected[0])


def test_cases_level_statistics_and_holm_over_seven_tests():
    values = planted_values(seed=2, effect=0.01)
    tests, _ = statistics.analyses(_families(values))
    for _level, rows in tests.groupby("level"):
        assert list(rows.holm_m) == [7] * 7
        np.testing.assert_allclose(rows.p_holm, holm_by_definition(rows.p_value), rtol=1e-12)
    for row in tests[tests.level == "cases"].itertuples():
        x, y, fam = x_y(values, row.test)
        d = np.subtract(x, y)
        expected = scipy.stats.wilcoxon(x, y, zero_method="wilcox", correction=False,
                                        method="auto")
        assert row.p_value == pytest.approx(expected.pvalue, rel=1e-9) and row.n == len(d)
        d = d[d != 0]  # the estimate and interval go with the test: zeros dropped
        walsh = [(d[i] + d[j]) / 2 for i in range(len(d)) for j in range(i, len(d))]
        assert row.hl_estimate == pytest.approx(np.median(walsh), rel=1e-12)
        # the interval inverts the exact test: just outside it the exact p is <= 5 %
        # (= 1 - attained), just inside it is > 5 %
        ordered = np.unique(walsh)
        for end, outward in ((row.hl_low, -1), (row.hl_high, 1)):
            at = np.searchsorted(ordered, end)
            outside = (ordered[at] + ordered[at + outward]) / 2
            inside = (ordered[at] + ordered[at - outward]) / 2
            p_out = scipy.stats.wilcoxon(d - outside, method="exact").pvalue
            assert p_out == pytest.approx(1 - row.hl_confidence, rel=1e-9)
            assert p_out <= 0.05 < scipy.stats.wilcoxon(d - inside, method="exact").pvalue
        number = (statistics.ANALYSIS1_OTHERS.index(row.y) + 1 if row.analysis == 1 else
                  [f"{a} vs {b}" for a, b in statistics.ANALYSIS2_PAIRS].index(row.test) + 1)
        low, high = bootstrap_loop(d, fam, (6, row.analysis, number))
        assert (row.boot_low, row.boot_high) == pytest.approx((low, high), rel=1e-12)


def test_any_selection_and_a_dataset_without_values():
    """analyse_selection takes the case values of a selection the report does not know;
    a data set whose x is NaN everywhere drops out of the data-set level (n = 5)."""
    values = planted_values(seed=3)
    for init, kind in itertools.product(INITS, KINDS):
        values[("TT-CH-ST", "PCSKM", init, kind)] = np.nan
    v, complete = as_case_values(values)
    tests, cases = statistics.analyse_selection("gap-statistic", v, complete)
    row = tests[(tests.test == "PCSKM vs SKM")].set_index("level")
    assert (row.loc["cases", "n"], row.loc["cases", "dropped_nan"]) == (50, 10)
    assert (row.loc["datasets", "n"], row.loc["datasets", "n_units"]) == (5, 6)
    x, y, fam = x_y(values, "PCSKM vs SKM")
    frame = pd.DataFrame({"x": x, "y": y, "family": fam}).dropna().groupby("family",
                                                                          sort=False)
    expected = scipy.stats.wilcoxon(frame.x.mean(), frame.y.mean(), method="exact")
    assert row.loc["datasets", "p_value"] == pytest.approx(expected.pvalue, rel=1e-12)
    assert set(tests.selection) == set(cases.selection) == {"gap-statistic"}
    cases["dataset"] = cases.family
    table = statistics.breakdown(cases)
    part = table[(table.test == "PCSKM vs SKM")].set_index("dataset")
    assert list(part.n_cases) == [10] * 6 and part.loc["TT-CH-ST", "n_used"] == 0
    np.testing.assert_allclose(part.mean_diff.drop("TT-CH-ST"),
                               (frame.x.mean() - frame.y.mean()).loc[list(SIX[:5])],
                               rtol=1e-12)


# ---------------------------------------------------------------- failures in the figures


@pytest.fixture(scope="module")
def failing_cube(tmp_path_factory):
    """iris (fisheriris) and brodinova-5-5 where PCSKM failed every fit at 1 % (a gap) and
    PCKM failed one of its four cells at 10 % (a failed share of 25 %), in both data sets."""
    groups = {}
    for name in ("iris", "brodinova-5-5"):
        ds = make_group(f=0.6, n_features=3, uninformative=[False, False, True])
        at = {"init": "dkm++", "kind": "random"}
        set_grid(ds, "f_score", "PCSKM", np.full((2, 2, 3), np.nan), percent=1.0, **at)
        set_grid(ds, "status", "PCSKM", np.full((2, 2, 3), EMPTY), percent=1.0, **at)
        cell = {"algorithm": "PCKM", **at, "percent": 10.0, "run": 1, "fold": 0,
                "sparsity": np.nan}
        ds["f_score"].loc[cell] = np.nan
        ds["status"].loc[cell] = EMPTY
        groups[name] = ds
    folder = tmp_path_factory.mktemp("failing")
    store = write_cube(folder / "cube.zarr", groups)
    return store, write_report(store, folder / "out")


def test_failures_in_the_figure_data_and_the_failure_table(failing_cube):
    store, report = failing_cube
    out = report.parent
    plotted = pd.read_csv(out / "figure1_performance_paper.csv").set_index(
        ["algorithm", "percent"])
    assert set(plotted.dataset) == {"iris (= fisheriris)"}  # Figure 1: the paper's six only
    assert plotted.loc[("PCSKM", 1.0), ["failed_fraction", "marker"]].tolist() == [1.0, "x"]
    assert np.isnan(plotted.loc[("PCSKM", 1.0), "f_mean"])
    assert plotted.loc[("PCKM", 10.0), ["failed_fraction", "marker"]].tolist() == [
        0.25, "half"]
    assert plotted.loc[("LKM", 10.0), ["failed_fraction", "marker"]].tolist() == [0, "filled"]
    extra = pd.read_csv(out / "figure1_performance_extra_paper.csv")
    assert set(extra.dataset) == {"Brodinova 5+5"}
    table = pd.read_csv(out / "failures.csv").set_index(["dataset", "algorithm", "percent"])
    pcskm = table.loc[("iris (= fisheriris)", "PCSKM", 1.0)]
    # 4 cells x 3 s, every one failed
    assert (pcskm.cells, pcskm.fits, pcskm.failed_fits, pcskm.cells_all_failed) == (
        4, 12, 12, 4)
    assert pcskm.failed_fraction_paper == pcskm.failed_fraction_honest == 1
    pckm = table.loc[("Brodinova 5+5", "PCKM", 10.0)]
    assert (pckm.fits, pckm.failed_fits, pckm.failed_fit_rate, pckm.cells_all_failed) == (
        4, 1, 0.25, 1)
    quiet = table.drop([("iris (= fisheriris)", "PCSKM", 1.0), ("Brodinova 5+5", "PCSKM", 1.0),
                        ("iris (= fisheriris)", "PCKM", 10.0), ("Brodinova 5+5", "PCKM", 10.0)])
    assert (quiet.failed_fits == 0).all()
    text = report.read_text()
    assert "paper: iris (= fisheriris) / PCSKM / dkm++ / random: 1" in text
    assert "| Brodinova 5+5 | PCKM | 8 | 1 | 0.125 | dkm++ / random / 10 % | 0.25 | 1 |" in text
    totals = pd.read_csv(out / "failures_summary.csv").set_index(["dataset", "algorithm"])
    assert totals.loc[("all data sets", "PCSKM"), ["fits", "failed_fits", "failed_share"]
                      ].tolist() == [48, 24, 0.5]  # 2 data sets x 8 cells x 3 s; 1 % failed
    assert totals.loc[("all data sets", "PCKM"), ["fits", "failed_fits", "cells_all_failed"]
                      ].tolist() == [16, 2, 2]
    gaps = pd.read_csv(out / "failure_gaps.csv")
    assert set(gaps.algorithm) == {"PCSKM"} and set(gaps.percentages.astype(str)) == {"1"}
    assert set(gaps.selection) >= {"paper", "honest"}


def test_failed_points_are_drawn(failing_cube, tmp_path):
    store, _ = failing_cube
    results = collect(open_store(store))
    _stem, title, rows = performance.FIGURES[0]
    fig = performance.figure(results, "paper", title, rows, tmp_path / "f.png")
    (ax,) = fig.axes
    pcskm = performance.COLOURS["PCSKM"]
    gaps = [line for line in ax.lines if line.get_marker() == "x"]
    assert len(gaps) == 1 and gaps[0].get_color() == pcskm
    assert list(gaps[0].get_xdata()) == [1.0] and list(gaps[0].get_ydata()) == [0.0]
    assert gaps[0].get_transform() == ax.get_xaxis_transform()  # on the x axis
    half = [line for line in ax.lines if line.get_fillstyle() == "bottom"]
    assert len(half) == 1 and list(half[0].get_xdata()) == [10.0]
    assert [t.get_text() for t in ax.texts] == ["25%"]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert performance.MARK_LABELS["x"] in legend and performance.MARK_LABELS["half"] in legend


# ---------------------------------------------------------------- figures readable when embedded


def test_figure1_keeps_the_papers_six_and_the_others_get_their_own(failing_cube):
    store, _ = failing_cube
    results = collect(open_store(store))
    specs = {stem: datasets for stem, _title, _rows, datasets
             in performance.figure_specs(results)}
    assert specs["figure1_performance"] == tuple(f.label for f in families.PAPER_SIX)
    assert "Brodinova 5+5" in specs["figure1_performance_extra"]
    assert not set(specs["figure1_performance_extra"]) & set(specs["figure1_performance"])


def test_weight_panels_spanning_decades_get_a_log_axis(tmp_path):
    ds = make_group(n_features=3, uninformative=[False, False, True])
    for algorithm, w in (("SKM", [0.7, 0.3, 1e-4]), ("PCSKM", [0.6, 0.4, 2e-4]),
                         ("MPCKM", [1.0, 0.8, 0.5])):
        ds["weights"].loc[{"algorithm": algorithm}] = w
    store = open_store(write_cube(tmp_path / "cube.zarr", {"brodinova-5-5": ds}))
    results = collect(store)
    stem, title, family_list, inits = weights.FIGURES[0]
    fig = weights.figure(results, title, family_list, inits, tmp_path / "w.png")
    plotted = weights.plotted_table(results)
    assert len(fig.axes) == 3  # DKM++ x (SKM, PCSKM, MPCKM)
    for ax in fig.axes:
        algorithm = ax.get_title().split(": ")[1].split(", ")[0]
        # SKM and PCSKM share one axis: their weights together span 0.7 / 1e-4 > 100
        shared = ("SKM", "PCSKM") if algorithm != "MPCKM" else (algorithm,)
        values = plotted[plotted.algorithm.isin(shared)].mean_weight
        span = values[values > 0].max() / values[values > 0].min()
        assert ax.get_yscale() == ("log" if span > 100 else "linear"), algorithm
        low, high = ax.get_ylim()
        assert low <= values[values > 0].min() and values.max() <= high
        assert set(plotted[plotted.algorithm == algorithm].y_scale) == {ax.get_yscale()}
    assert {ax.get_yscale() for ax in fig.axes} == {"log", "linear"}

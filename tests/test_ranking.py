"""Issue 44: the Friedman test with Iman and Davenport's F, the pairwise exact Wilcoxon tests
with Holm's correction, the CD diagram's cliques and figure (experiments/report/ranking.py),
each against an independent computation: scipy, statsmodels' repeated-measures ANOVA, Demšar's
(2006) worked example, autorank 1.3 and scikit-posthocs 0.17, and hand-worked cases."""

import contextlib
import io
import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from matplotlib.figure import Figure

from pcskm.experiments.report import plotting, ranking

# Demšar (2006), Table 6: AUC of C4.5 (m = 0) and C4.5 with m and/or cf tuned, 14 data sets,
# as printed (three decimals). The paper ranks voting's two 0.975 as 2 (C4.5+cf) and 3
# (C4.5+m+cf), so their values differed in a further decimal: 0.9751 says which is higher.
DEMSAR_NAMES = ["C4.5", "C4.5+m", "C4.5+cf", "C4.5+m+cf"]
DEMSAR_TABLE6 = pd.DataFrame(
    [[0.763, 0.768, 0.771, 0.798], [0.599, 0.591, 0.590, 0.569],
     [0.954, 0.971, 0.968, 0.967], [0.628, 0.661, 0.654, 0.657],
     [0.882, 0.888, 0.886, 0.898], [0.936, 0.931, 0.916, 0.931],
     [0.661, 0.668, 0.609, 0.685], [0.583, 0.583, 0.563, 0.625],
     [0.775, 0.838, 0.866, 0.875], [1.000, 1.000, 1.000, 1.000],
     [0.940, 0.962, 0.965, 0.962], [0.619, 0.666, 0.614, 0.669],
     [0.972, 0.981, 0.9751, 0.975], [0.957, 0.978, 0.946, 0.970]],
    index=["adult (sample)", "breast cancer", "breast cancer wisconsin", "cmc", "ionosphere",
           "iris", "liver disorders", "lung cancer", "lymphography", "mushroom",
           "primary tumor", "rheum", "voting", "wine"],
    columns=DEMSAR_NAMES)


def shifted(seed, n=15, shifts=(0.0, 0.3, 0.6, 0.9, 1.2), ties=False):
    """n data sets x len(shifts) algorithms: a data-set effect, the algorithm's shift and
    noise; ``ties``: rounded to halves, so that values tie within data sets."""
    rng = np.random.default_rng(seed)
    values = (rng.normal(size=(n, 1)) + np.asarray(shifts)
              + rng.normal(scale=0.8, size=(n, len(shifts))))
    if ties:
        values = np.round(2 * values) / 2
    return pd.DataFrame(values, columns=[f"A{j}" for j in range(len(shifts))])


def brute_ranks(values):
    """1 + the number of strictly higher values + (the number of equal others) / 2."""
    v = np.asarray(values, dtype=float)
    return np.array([[1 + (row > x).sum() + ((row == x).sum() - 1) / 2 for x in row]
                     for row in v])


# ------------------------------------------------------------------------- ranks, Friedman


def test_ranks_are_the_textbook_average_ranks():
    values = np.array([[3.0, 1.0, 2.0, 2.0], [0.5, 0.5, 0.5, 0.9], [1.0, 2.0, 3.0, 4.0]])
    per_dataset, mean = ranking.ranks(values)
    np.testing.assert_allclose(per_dataset.to_numpy(), brute_ranks(values))
    np.testing.assert_allclose(mean.to_numpy(), brute_ranks(values).mean(axis=0))
    assert list(mean.index) == ["0", "1", "2", "3"]
    np.testing.assert_allclose(per_dataset.sum(axis=1), 4 * 5 / 2)  # k (k + 1) / 2 a row


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize(("seed", "n", "k"), [(0, 6, 3), (1, 14, 4), (2, 30, 7)])
def test_friedman_matches_scipy(seed, n, k, ties):
    values = shifted(seed, n, np.linspace(0, 1, k), ties=ties)
    if ties:
        assert (brute_ranks(values) % 1).any()  # the rounding made ties
    result = ranking.friedman(values)
    reference = scipy.stats.friedmanchisquare(*values.to_numpy().T)
    assert result["chi2"] == pytest.approx(reference.statistic, rel=1e-12)
    assert result["p_chi2"] == pytest.approx(reference.pvalue, rel=1e-9)
    assert (result["n_datasets"], result["n_algorithms"]) == (n, k)
    assert (result["df1"], result["df2"]) == (k - 1, (k - 1) * (n - 1))
    if not ties:
        assert result["tie_correction"] == 1.0
        assert result["chi2_untied"] == pytest.approx(result["chi2"], rel=1e-12)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize(("seed", "n", "k"), [(3, 8, 3), (4, 20, 5)])
def test_iman_davenport_f_is_the_anova_of_the_ranks(seed, n, k, ties):
    """F_F of the tie-corrected chi2 is the F of the repeated-measures (two-way) analysis of
    variance of the within-data-set ranks (Conover 1999, §5.8), here statsmodels' AnovaRM."""
    from statsmodels.stats.anova import AnovaRM

    values = shifted(seed, n, np.linspace(0, 1, k), ties=ties)
    long = pd.DataFrame({"rank": brute_ranks(values).ravel(),
                         "dataset": np.repeat(np.arange(n), k),
                         "algorithm": np.tile(np.arange(k), n)})
    anova = AnovaRM(long, "rank", "dataset", within=["algorithm"]).fit().anova_table
    result = ranking.friedman(values)
    assert result["F"] == pytest.approx(anova["F Value"].iloc[0], rel=1e-9)
    assert result["p_F"] == pytest.approx(anova["Pr > F"].iloc[0], rel=1e-7)
    assert (result["df1"], result["df2"]) == (anova["Num DF"].iloc[0], anova["Den DF"].iloc[0])


def test_demsar_worked_example():
    """Demšar (2006), §3.2.2 on Table 6: mean ranks 3.143, 2.000, 2.893, 1.964,
    chi2_F = 9.28 and F_F = 3.69 (his formulas, untied) on 3 and 39 degrees of freedom;
    Nemenyi's CD = 1.25 at alpha = 0.05 and 1.12 at 0.10 (q = 2.569 and 2.291)."""
    per_dataset, mean = ranking.ranks(DEMSAR_TABLE6)
    assert per_dataset.loc["voting"].tolist() == [4, 1, 2, 3]  # as the paper ranks them
    assert per_dataset.loc["mushroom"].tolist() == [2.5] * 4
    assert mean.round(3).tolist() == [3.143, 2.000, 2.893, 1.964]
    result = ranking.friedman(DEMSAR_TABLE6)
    assert round(result["chi2_untied"], 2) == 9.28
    assert round(result["F_untied"], 2) == 3.69
    assert (result["df1"], result["df2"]) == (3, 39)
    assert result["F_untied"] > scipy.stats.f.ppf(0.95, 3, 39) == pytest.approx(2.85, abs=5e-3)
    # the ties of iris, lung cancer, mushroom and primary tumor: sum (t^3 - t) = 6+6+60+6
    assert result["tie_correction"] == pytest.approx(1 - 78 / (14 * 4 * 15))
    assert result["chi2"] == pytest.approx(result["chi2_untied"] / (1 - 78 / 840))
    assert round(result["chi2"], 2) == 10.23  # 9.2786 / (1 - 78 / 840), by hand
    assert round(ranking.nemenyi_cd(14, 4, 0.05), 2) == 1.25
    assert round(ranking.nemenyi_cd(14, 4, 0.10), 2) == 1.12


def test_demsar_figure_groups():
    """Demšar's Figure 1(a) (Nemenyi at p = 0.10): C4.5 is worse than C4.5+m and C4.5+m+cf,
    C4.5+cf joins either group; his CD fed to the clique rule draws these two bars. The
    pairwise Wilcoxon-Holm tests draw the same two at 0.10 and one bar at 0.05, where
    Nemenyi's CD = 1.25 exceeds the largest difference of mean ranks (1.179)."""
    _per_dataset, mean = ranking.ranks(DEMSAR_TABLE6)
    figure_1a = [("C4.5+m+cf", "C4.5+m", "C4.5+cf"), ("C4.5+cf", "C4.5")]
    assert ranking.cliques(mean, nemenyi_different(mean, 1.12)) == figure_1a
    one_bar = [(*figure_1a[0], "C4.5")]
    assert ranking.cliques(mean, nemenyi_different(mean, 1.25)) == one_bar
    pairs = ranking.pairwise(DEMSAR_TABLE6)
    assert ranking.cliques(mean, ranking.different(pairs, 0.10)) == figure_1a
    assert ranking.cliques(mean, ranking.different(pairs, 0.05)) == one_bar


@pytest.mark.parametrize(("n", "bars"), [(6, [("A0", "A1", "A2", "A3", "A4")]), (9, [])])
def test_few_data_sets_cannot_separate(n, bars):
    """Five algorithms in the same order on every data set: each exact two-sided p is
    2 / 2^n, and Holm over the 10 pairs makes each 10 * 2 / 2^n: 0.3125 with six data sets
    (one bar joins all), 0.039 with nine (every pair differs at 0.05, no bar)."""
    values = np.tile(np.arange(5.0)[::-1], (n, 1)) + np.arange(n)[:, None]
    values = pd.DataFrame(values, columns=[f"A{j}" for j in range(5)])
    pairs = ranking.pairwise(values)
    np.testing.assert_allclose(pairs.p_value, 2 / 2 ** n)
    np.testing.assert_allclose(pairs.p_holm, 10 * 2 / 2 ** n)
    _per_dataset, mean = ranking.ranks(values)
    assert ranking.cliques(mean, ranking.different(pairs)) == bars


def test_friedman_extremes():
    same_order = np.tile([1.0, 2.0, 3.0], (5, 1)) + np.arange(5)[:, None]
    result = ranking.friedman(same_order)  # every data set ranks alike: chi2 = N (k - 1)
    assert result["chi2"] == pytest.approx(10.0)
    assert result["F"] == np.inf and result["p_F"] == 0.0
    all_tied = ranking.friedman(np.ones((4, 3)))
    assert np.isnan(all_tied["chi2"]) and np.isnan(all_tied["F"])
    assert all_tied["chi2_untied"] == 0.0


# ------------------------------------------------------------------------------ pairwise


def test_pairwise_tests_every_pair_exactly_with_holm():
    values = shifted(5, n=12)
    values["copy"] = values["A0"]  # a pair with every difference zero: no test
    pairs = ranking.pairwise(values)
    _per_dataset, mean = ranking.ranks(values)
    k = values.shape[1]
    assert len(pairs) == k * (k - 1) // 2
    assert {frozenset(p) for p in zip(pairs.a, pairs.b, strict=True)} == {
        frozenset(p) for p in itertools.combinations(values.columns, 2)}
    assert (pairs.mean_rank_a <= pairs.mean_rank_b).all()
    no_test = pairs[[{a, b} == {"A0", "copy"} for a, b in zip(pairs.a, pairs.b, strict=True)]]
    assert len(no_test) == 1 and np.isnan(no_test.p_value.iloc[0])
    assert (pairs.holm_m == k * (k - 1) // 2 - 1).all()
    tested = pairs.dropna(subset=["p_value"])
    for row in tested.itertuples():
        d = values[row.a].to_numpy() - values[row.b].to_numpy()
        assert (row.wins, row.losses, row.ties) == ((d > 0).sum(), (d < 0).sum(),
                                                    (d == 0).sum())
        reference = scipy.stats.wilcoxon(d[d != 0], method="exact")
        assert row.p_value == pytest.approx(reference.pvalue, rel=1e-12)
        assert row.mean_rank_a == mean[row.a] and row.mean_rank_b == mean[row.b]
    # Holm by hand: sorted p times m, m - 1, ..., made monotone, capped at 1
    p = tested.p_value.to_numpy()
    order = np.argsort(p)
    m = len(p)
    expected = np.empty(m)
    expected[order] = np.minimum(1, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    np.testing.assert_allclose(tested.p_holm, expected, rtol=1e-12)


@pytest.mark.parametrize("seed", [6, 7, 8])
def test_pairwise_matches_scikit_posthocs(seed):
    """scikit-posthocs' posthoc_wilcoxon (exact, Holm by statsmodels' multipletests)."""
    import scikit_posthocs

    values = shifted(seed, n=16)
    long = values.melt(var_name="algorithm", value_name="value")
    reference = scikit_posthocs.posthoc_wilcoxon(long, val_col="value", group_col="algorithm",
                                                 method="exact", p_adjust="holm")
    for row in ranking.pairwise(values).itertuples():
        assert row.p_holm == pytest.approx(reference.loc[row.a, row.b], rel=1e-12)


# ------------------------------------------------------------------------------- cliques


def test_cliques_hand_worked():
    """Five algorithms ranked A < B < C < D < E; A differs from D and E, B from E, C from E.
    From A the run stops before D: A B C; from B before E: B C D; from C the run C D is inside
    B C D; from D: D E."""
    mean = pd.Series({"C": 3.0, "A": 1.0, "E": 5.0, "B": 2.0, "D": 4.0})
    differing = [("A", "D"), ("E", "A"), ("B", "E"), ("C", "E")]
    assert ranking.cliques(mean, differing) == [("A", "B", "C"), ("B", "C", "D"), ("D", "E")]
    assert ranking.cliques(mean, []) == [("A", "B", "C", "D", "E")]
    assert ranking.cliques(mean, itertools.combinations("ABCDE", 2)) == []
    # only neighbours differ: A and C do not, but B lies between them, so no bar joins them
    # (scikit-posthocs' maximal cliques would join A, C and E)
    neighbours = [("A", "B"), ("B", "C"), ("C", "D"), ("D", "E")]
    assert ranking.cliques(mean, neighbours) == []
    # equal mean ranks keep the order of the index
    assert ranking.cliques(pd.Series({"X": 1.0, "Y": 2.0, "Z": 2.0}), [("X", "Z")]) == [
        ("X", "Y"), ("Y", "Z")]
    with pytest.raises(ValueError, match="without a mean rank"):
        ranking.cliques(mean, [("A", "F")])


def nemenyi_different(mean, cd):
    return {frozenset(p) for p in itertools.combinations(mean.index, 2)
            if abs(mean[p[0]] - mean[p[1]]) > cd}


@pytest.mark.parametrize(("seed", "alpha"), [(10, 0.05), (11, 0.05), (12, 0.10), (13, 0.05)])
def test_mean_ranks_and_groups_match_autorank(seed, alpha):
    """autorank's Friedman-Nemenyi analysis: its mean ranks, Friedman p and CD, and its CD
    diagram's groups (get_sorted_rank_groups) from the same rule fed Nemenyi's pairs."""
    from autorank import autorank
    from autorank._util import get_sorted_rank_groups

    values = shifted(seed, n=12, shifts=(0.0, 0.2, 0.5, 0.6, 1.0, 1.1))
    with contextlib.redirect_stdout(io.StringIO()):
        result = autorank(values, alpha=alpha, order="descending",
                          force_mode="nonparametric")
    assert result.omnibus == "friedman" and result.posthoc == "nemenyi"
    _per_dataset, mean = ranking.ranks(values)
    pd.testing.assert_series_equal(mean, result.rankdf.meanrank.reindex(mean.index),
                                   check_names=False)
    assert ranking.friedman(values)["p_chi2"] == pytest.approx(result.pvalue, rel=1e-9)
    cd = ranking.nemenyi_cd(len(values), values.shape[1], alpha)
    assert cd == pytest.approx(result.cd, rel=1e-3)  # autorank's q: statsmodels' qsturng
    ordered = result._replace(rankdf=result.rankdf.sort_values("meanrank"))
    _sorted, names, groups = get_sorted_rank_groups(ordered, reverse=False)
    expected = [tuple(names[i:j + 1]) for i, j in groups]
    assert ranking.cliques(mean, nemenyi_different(mean, result.cd)) == expected


def scikit_posthocs_bars(mean, pairs, alpha):
    """The member sets of scikit-posthocs' CD-diagram crossbars for the Holm-adjusted p."""
    import scikit_posthocs

    names = list(mean.index)
    matrix = pd.DataFrame(1.0, index=names, columns=names)
    for row in pairs.itertuples():
        matrix.loc[row.a, row.b] = matrix.loc[row.b, row.a] = row.p_holm
    ax = Figure().add_subplot()
    drawn = scikit_posthocs.critical_difference_diagram(mean, matrix, alpha=alpha, ax=ax)
    by_rank = {value: name for name, value in mean.items()}
    return {frozenset(by_rank[x] for x in line.get_xdata())
            for lines in drawn["crossbars"] for line in lines}


def test_cliques_match_scikit_posthocs():
    """scikit-posthocs joins the maximal cliques of the not-different graph, ours the
    maximal runs consecutive in mean rank: every run lies within one of its cliques, each of
    its cliques that is consecutive is one of the runs, and where all are consecutive the two
    agree."""
    agreeing = 0
    for seed in range(20, 32):
        values = shifted(seed, n=14, shifts=(0.0, 0.4, 0.8, 1.2, 1.6, 2.0))
        _per_dataset, mean = ranking.ranks(values)
        assert mean.is_unique  # so that a crossbar's x values name its members
        pairs = ranking.pairwise(values)
        ours = {frozenset(g) for g in ranking.cliques(mean, ranking.different(pairs))}
        theirs = scikit_posthocs_bars(mean, pairs, 0.05)
        order = ranking.rank_order(mean)
        consecutive = {c for c in theirs
                       if max(map(order.index, c)) - min(map(order.index, c)) == len(c) - 1}
        assert all(any(g <= c for c in theirs) for g in ours)
        assert consecutive <= ours
        if consecutive == theirs:
            assert ours == theirs
            agreeing += 1
    assert agreeing >= 6


# -------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("values", "message"), [
    (np.array([[1.0, np.nan], [2.0, 3.0]]), "finite"),
    (np.array([[1.0, np.inf], [2.0, 3.0]]), "finite"),
    (np.ones((1, 3)), "at least 2 data sets"),
    (np.ones((3, 1)), "2 algorithms"),
    (np.ones(4), "2-d"),
    (np.ones((2, 2, 2)), "2-d"),
    (pd.DataFrame(np.ones((3, 2)), columns=["A", "A"]), r"algorithm names .* \['A'\]"),
    (pd.DataFrame(np.ones((3, 2)), index=["x", "y", "x"]), r"data set names .* \['x'\]"),
    (pd.DataFrame({"A": ["a", "b"], "B": [1.0, 2.0]}), "numbers"),
])
def test_bad_input_is_named(values, message):
    for function in (ranking.ranks, ranking.friedman, ranking.pairwise, ranking.cd_diagram):
        with pytest.raises(ValueError, match=message):
            function(values)


# -------------------------------------------------------------------------------- figure


def drawn(fig, gid):
    ax = fig.axes[0]
    return [a for a in ax.lines + ax.texts if a.get_gid() == gid]


def png(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return buffer.getvalue()


@pytest.mark.parametrize(("values", "alpha", "nemenyi"), [
    (DEMSAR_TABLE6, 0.10, True), (shifted(40, n=14, shifts=(0, 0.1, 0.9, 1.0, 1.8, 1.9, 2.6)),
                                  0.05, False)])
def test_cd_diagram_draws_labels_bars_and_axis(values, alpha, nemenyi):
    fig = ranking.cd_diagram(values, alpha, title="A CD diagram", nemenyi=nemenyi)
    _per_dataset, mean = ranking.ranks(values)
    groups = ranking.cliques(mean, ranking.different(ranking.pairwise(values), alpha))
    assert groups  # the cases draw bars
    k = values.shape[1]
    labels = drawn(fig, "algorithm")
    assert sorted(t.get_text() for t in labels) == sorted(f"{a} ({mean[a]:.2f})"
                                                         for a in values.columns)
    ticks = {t.get_text(): t.get_position()[0] for t in drawn(fig, "tick")}
    assert list(ticks) == [str(r) for r in range(1, k + 1)]
    assert ticks["1"] > ticks[str(k)]  # the best rank at the right

    def x_of(rank):  # the axis's own scale, from its numbers
        return ticks[str(k)] + (ticks["1"] - ticks[str(k)]) * (k - rank) / (k - 1)

    marks = sorted(line.get_xdata()[0] for line in drawn(fig, "rank"))
    np.testing.assert_allclose(marks, sorted(x_of(r) for r in mean))
    bars = drawn(fig, "clique")
    assert len(bars) == len(groups)
    for bar, group in zip(bars, groups, strict=True):
        low, high = sorted(bar.get_xdata())
        covered = {a for a in mean.index if low <= x_of(mean[a]) <= high}
        assert covered == set(group)
    assert any("CD (Nemenyi)" in t.get_text() for t in fig.axes[0].texts) == nemenyi
    texts = [t for t in fig.axes[0].texts if t.get_text()]
    boxes = [t.get_window_extent(plotting.renderer(fig)) for t in texts]
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b)
    for box in boxes:
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= fig.bbox.x1 and box.y1 <= fig.bbox.y1


def test_cd_diagram_png_is_reproducible():
    values = shifted(41, n=10)
    assert png(ranking.cd_diagram(values)) == png(ranking.cd_diagram(values))
    assert png(ranking.cd_diagram(values)) != png(ranking.cd_diagram(values, 0.2))


def test_cd_diagram_too_narrow():
    with pytest.raises(ValueError, match="wider figure"):
        ranking.cd_diagram(DEMSAR_TABLE6, width=2.0)

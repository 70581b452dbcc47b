"""Ranks of several algorithms over data sets: the Friedman test with Iman and Davenport's F,
pairwise exact Wilcoxon signed-rank tests with Holm's correction, and the critical-difference
(CD) diagram whose bars join the algorithms no pair of which differs significantly
(docs/method/statistics.md, "Friedman test, mean ranks and the critical-difference diagram").

Every function takes a table of values, rows = data sets, columns = algorithms, higher is
better: a pandas DataFrame (its index and columns name them) or a 2-d array (the columns are
named "0", "1", ...).

* :func:`ranks`: the rank of each algorithm on each data set (1 = best, average ranks for
  ties) and the mean ranks (Demšar 2006, §3.2.2).
* :func:`friedman`: Friedman's chi-square with the tie correction, Iman and Davenport's F and
  their p-values, and Demšar's untied statistics.
* :func:`pairwise`: every pair by the exact two-sided signed-rank test on the data sets
  (docs/method/protocol.md §10.1), Holm-adjusted over the k(k - 1)/2 pairs.
* :func:`cliques`: the maximal runs of algorithms, consecutive in mean rank, with no pair
  significantly different.
* :func:`nemenyi_cd`: Nemenyi's critical difference, drawn for reference only.
* :func:`cd_diagram`: the figure.
"""

import itertools

import numpy as np
import pandas as pd
import scipy.stats
from matplotlib.figure import Figure

from . import inference, plotting
from .statistics import wilcoxon

ALPHA = 0.05
LABEL_SIZE, TICK_SIZE = plotting.LEGEND_SIZE, 8  # points
PAIR_COLUMNS = ["a", "b", "mean_rank_a", "mean_rank_b", "n", "n_nonzero", "wins", "losses",
                "ties", "statistic", "p_value", "p_holm", "holm_m", "median_diff",
                "rank_biserial"]


def table(values):
    """``values`` as a float DataFrame (rows = data sets, columns = algorithms), checked: 2-d,
    at least 2 data sets and 2 algorithms, finite, no name twice."""
    if isinstance(values, pd.DataFrame):
        frame = values
    else:
        array = np.asarray(values)
        if array.ndim != 2:
            raise ValueError(f"values must be 2-d (data sets x algorithms); got shape "
                             f"{array.shape}")
        frame = pd.DataFrame(array, columns=[str(j) for j in range(array.shape[1])])
    n, k = frame.shape
    if n < 2 or k < 2:
        raise ValueError(f"values need at least 2 data sets (rows) and 2 algorithms "
                         f"(columns); got {n} x {k}")
    for axis, names in (("algorithm", frame.columns), ("data set", frame.index)):
        twice = names[names.duplicated()].unique().tolist()
        if twice:
            raise ValueError(f"{axis} names must be unique; repeated: {twice}")
    try:
        frame = frame.astype(np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"values must be numbers: {error}") from None
    bad = ~np.isfinite(frame.to_numpy())
    if bad.any():
        where = [(frame.index[i], frame.columns[j]) for i, j in zip(*np.nonzero(bad),
                                                                    strict=True)]
        raise ValueError(f"values must be finite (no NaN or infinity); (data set, algorithm) "
                         f"not: {where[:5]}{' ...' if len(where) > 5 else ''}")
    return frame


def ranks(values):
    """``(per_dataset, mean)``: the rank of each algorithm on each data set, 1 for the
    highest value, average ranks for ties (a DataFrame shaped as ``values``), and their mean
    over the data sets, R_j = (1/N) sum_i r_ij (a Series indexed by algorithm)."""
    frame = table(values)
    per_dataset = frame.rank(axis=1, ascending=False, method="average")
    return per_dataset, per_dataset.mean(axis=0)


def rank_order(mean_ranks):
    """The algorithms from the best mean rank to the worst (equal ranks: in their order)."""
    return list(pd.Series(mean_ranks).sort_values(kind="stable").index)


def iman_davenport(chi2, n, k):
    """Iman and Davenport's F_F = (N - 1) chi2 / (N (k - 1) - chi2) and its p-value from the
    F distribution with k - 1 and (k - 1)(N - 1) degrees of freedom (Demšar 2006, §3.2.2);
    (inf, 0) when every data set ranks the algorithms alike (chi2 = N (k - 1))."""
    if np.isnan(chi2):
        return np.nan, np.nan
    denominator = n * (k - 1) - chi2
    if denominator <= 0:
        return np.inf, 0.0
    f = (n - 1) * chi2 / denominator
    return float(f), float(scipy.stats.f.sf(f, k - 1, (k - 1) * (n - 1)))


def friedman(values):
    """Friedman's test of equal mean ranks over N data sets and k algorithms.

    With R_j the mean ranks (:func:`ranks`), Demšar's (2006, eq. in §3.2.2) statistic is
    chi2_F = 12 N / (k (k + 1)) [sum_j R_j^2 - k (k + 1)^2 / 4]; ``chi2`` divides it by the
    tie correction C = 1 - sum (t^3 - t) / (N k (k^2 - 1)), t over the groups of tied values
    within a data set (as ``scipy.stats.friedmanchisquare``), and ``p_chi2`` is its upper tail
    on k - 1 degrees of freedom. ``F`` is Iman and Davenport's statistic (:func:`iman_davenport`)
    of the tie-corrected chi2: the F of the two-way analysis of variance of the ranks
    (Conover 1999, §5.8, T2). Without ties C = 1 and both are Demšar's; ``chi2_untied`` and
    ``F_untied`` are Demšar's formulas without the correction, the numbers published examples
    compute from the mean ranks. chi2 is NaN when every data set ties every algorithm."""
    per_dataset, mean = ranks(values)
    n, k = per_dataset.shape
    chi2_untied = 12 * n / (k * (k + 1)) * (np.sum(mean.to_numpy() ** 2) - k * (k + 1) ** 2 / 4)
    tie_sizes = np.concatenate([np.unique(row, return_counts=True)[1]
                                for row in per_dataset.to_numpy()])
    correction = 1 - np.sum(tie_sizes ** 3 - tie_sizes) / (n * k * (k * k - 1))
    chi2 = chi2_untied / correction if correction > 0 else np.nan
    p_chi2 = float(scipy.stats.chi2.sf(chi2, k - 1)) if correction > 0 else np.nan
    f, p_f = iman_davenport(chi2, n, k)
    f_untied, p_f_untied = iman_davenport(chi2_untied, n, k)
    return {"n_datasets": n, "n_algorithms": k, "chi2": float(chi2), "p_chi2": p_chi2,
            "F": f, "p_F": p_f, "df1": k - 1, "df2": (k - 1) * (n - 1),
            "tie_correction": float(correction), "chi2_untied": float(chi2_untied),
            "F_untied": f_untied, "p_F_untied": p_f_untied}


def pairwise(values):
    """Every pair of algorithms (a, b), a the better in mean rank, one row each (columns
    :data:`PAIR_COLUMNS`): the exact two-sided Wilcoxon signed-rank test of the data sets'
    a - b (``statistics.wilcoxon`` with ``method="exact"``: zero differences dropped,
    docs/method/protocol.md §10.1), wins = data sets with a > b, and ``p_holm``, Holm's
    adjustment over the k (k - 1) / 2 pairs that have a test (``holm_m`` of them; a pair whose
    differences are all zero has none, p NaN)."""
    frame = table(values)
    _per_dataset, mean = ranks(frame)
    rows = []
    for a, b in itertools.combinations(rank_order(mean), 2):
        test = wilcoxon(frame[a].to_numpy(), frame[b].to_numpy(), method="exact")
        rows.append({"a": a, "b": b, "mean_rank_a": float(mean[a]),
                     "mean_rank_b": float(mean[b]),
                     **{c: test[c] for c in PAIR_COLUMNS if c in test}})
    pairs = pd.DataFrame(rows)
    pairs["p_holm"] = inference.holm(pairs.p_value.to_numpy())
    pairs["holm_m"] = int(pairs.p_value.notna().sum())
    return pairs[PAIR_COLUMNS]


def different(pairs, alpha=ALPHA):
    """The pairs of :func:`pairwise` that differ significantly, p_holm < ``alpha``, as a set
    of frozensets {a, b}."""
    return {frozenset((a, b)) for a, b, p in zip(pairs.a, pairs.b, pairs.p_holm, strict=True)
            if p < alpha}


def cliques(mean_ranks, differing):
    """The groups the CD diagram joins with a bar: with the algorithms in mean-rank order
    (:func:`rank_order`), the maximal runs of two or more consecutive algorithms of which no
    pair is in ``differing`` (pairs {a, b}), none contained in another; a tuple each, in rank
    order, sorted by their first member's rank. For each start i the run reaches the last j
    with no differing pair among the i-th to j-th; a run is kept when it reaches further than
    the run of the start before it (as autorank's ``get_sorted_rank_groups`` does with
    Nemenyi's CD)."""
    order = rank_order(mean_ranks)
    differing = {frozenset(pair) for pair in differing}
    unknown = set().union(*differing) - set(order) if differing else set()
    if unknown:
        raise ValueError(f"differing pairs name algorithms without a mean rank: "
                         f"{sorted(map(str, unknown))}")
    groups, reached = [], 0
    for i in range(len(order)):
        j = i
        while j + 1 < len(order) and not any(frozenset((order[m], order[j + 1])) in differing
                                             for m in range(i, j + 1)):
            j += 1
        if j > max(i, reached):
            groups.append(tuple(order[i:j + 1]))
        reached = max(reached, j)
    return groups


def nemenyi_cd(n, k, alpha=ALPHA):
    """Nemenyi's critical difference of mean ranks, CD = q_alpha sqrt(k (k + 1) / (6 N)),
    q_alpha the 1 - alpha quantile of the studentized range of k means with infinite degrees
    of freedom divided by sqrt(2) (Demšar 2006, §3.2.2; 2.569 for k = 4 at alpha = 0.05)."""
    q = scipy.stats.studentized_range.ppf(1 - alpha, k, np.inf) / np.sqrt(2)
    return float(q * np.sqrt(k * (k + 1) / (6 * n)))


def _bar_levels(spans, gap):
    """The row of each (low, high) span, the first row where it is ``gap`` or more from
    every span already there."""
    rows, levels = [], []
    for low, high in spans:
        for level, taken in enumerate(rows):
            if all(low > other_high + gap or high < other_low - gap
                   for other_low, other_high in taken):
                taken.append((low, high))
                levels.append(level)
                break
        else:
            rows.append([(low, high)])
            levels.append(len(rows) - 1)
    return levels


def cd_diagram(values, alpha=ALPHA, *, title="", note=None, nemenyi=False, width=6.5):
    """The critical-difference diagram of ``values`` in Demšar's (2006, §3.2.4) style: a
    rank axis from k at the left to 1 (the best) at the right, each algorithm's mean rank
    marked on it and joined by an elbow line to its label ("name (rank)"; the worse half on
    the left, the better half on the right), and a thick bar under the axis for each group
    of :func:`cliques` with the significant pairs of :func:`pairwise` at ``alpha``. With
    ``nemenyi``, Nemenyi's CD (:func:`nemenyi_cd`) is drawn above the axis for reference; the
    bars do not use it. ``note`` (default: what the bars mean) is printed under the diagram.
    A Figure ``width`` inches wide without a layout engine, drawn in inches (its one Axes
    spans the figure); the labels carry gid "algorithm", the bars "clique", the mean-rank
    marks "rank" and the axis's numbers "tick"."""
    frame = table(values)
    _per_dataset, mean = ranks(frame)
    pairs = pairwise(frame)
    groups = cliques(mean, different(pairs, alpha))
    n, k = frame.shape
    order = rank_order(mean)
    if note is None:
        m = int(pairs.holm_m.iloc[0])
        note = (f"Mean ranks over {n} data sets (1 = best, at the right). A bar joins "
                f"algorithms no two of which differ significantly: exact two-sided Wilcoxon "
                f"signed-rank tests, Holm-adjusted over the {m} pair{'s' * (m != 1)}, "
                f"alpha = {alpha:g}.")
        if nemenyi:
            note += " CD: Nemenyi's critical difference, for reference; the bars do not use it."
    texts = {name: f"{name} ({mean[name]:.2f})" for name in order}
    better, worse = order[:k // 2], order[k // 2:][::-1]  # outermost first on each side
    pad, elbow = 0.1, 0.15  # inches: figure edge to label, label to the end of its elbow
    left = pad + elbow + max(plotting.text_width(texts[a], LABEL_SIZE) for a in worse)
    right = pad + elbow + max((plotting.text_width(texts[a], LABEL_SIZE) for a in better),
                              default=0.0)
    span = width - left - right
    if span < 1.0:
        raise ValueError(f"width {width} in leaves {span:.2f} in for the rank axis; the "
                         f"labels need a wider figure")

    def x_of(rank):  # rank k at the left end of the axis, 1 at the right
        return left + span * (k - rank) / (k - 1)

    row = plotting.LINE * LABEL_SIZE + 0.06  # inches between label rows
    title = plotting.wrap(title, plotting.TITLE_SIZE, width - 0.3) if title else ""
    note = plotting.wrap(note, plotting.NOTE_SIZE, width - 0.3) if note else ""
    y = 0.1 + (title.count("\n") + 1) * plotting.TITLE_SIZE * plotting.LINE if title else 0.1
    cd = nemenyi_cd(n, k, alpha) if nemenyi else None
    y_cd = y + 0.15
    axis_y = y + (0.45 if nemenyi else 0.0) + 0.3  # room for the CD and the tick labels
    side = 0.06  # inches a bar reaches past its outer members
    spans = [(x_of(mean[g[-1]]) - side, x_of(mean[g[0]]) + side) for g in groups]
    levels = _bar_levels(spans, 0.05)
    bar_step = 0.1
    bars_bottom = axis_y + 0.12 + bar_step * (max(levels) + 1 if levels else 0)
    first_label = bars_bottom + 0.12
    labels_bottom = first_label + row * (max(len(better), len(worse)) - 1)
    note_height = (note.count("\n") + 1) * plotting.NOTE_SIZE * plotting.LINE if note else 0
    height = labels_bottom + 0.2 + (note_height + 0.1 if note else 0.0)

    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)  # y in inches from the top
    line = {"color": "black", "linewidth": 0.8, "solid_capstyle": "butt"}
    if title:
        ax.text(width / 2, 0.08, title, ha="center", va="top", fontsize=plotting.TITLE_SIZE)
    ax.plot([x_of(k), x_of(1)], [axis_y, axis_y], **line)
    for tick in np.arange(1, k + 0.25, 0.5):
        length = 0.1 if tick == int(tick) else 0.05
        ax.plot([x_of(tick)] * 2, [axis_y - length, axis_y], **line)
        if tick == int(tick):
            ax.text(x_of(tick), axis_y - 0.12, f"{int(tick)}", ha="center", va="bottom",
                    fontsize=TICK_SIZE, gid="tick")
    if cd is not None:
        start, end = x_of(k), x_of(k) + span * cd / (k - 1)
        ax.plot([start, end], [y_cd, y_cd], **line)
        for x in (start, end):
            ax.plot([x, x], [y_cd - 0.05, y_cd + 0.05], **line)
        ax.text(end + 0.06, y_cd, f"CD (Nemenyi) = {cd:.2f}", ha="left", va="center",
                fontsize=TICK_SIZE)
    for (low, high), level in zip(spans, levels, strict=True):
        y_bar = axis_y + 0.12 + bar_step * level
        ax.plot([low, high], [y_bar, y_bar], color="black", linewidth=3.0,
                solid_capstyle="butt", gid="clique")
    for names, end, ha in ((worse, left - elbow, "left"), (better, width - right + elbow,
                                                            "right")):
        for i, name in enumerate(names):
            x, y_label = x_of(mean[name]), first_label + row * i
            ax.plot([x, x, end], [axis_y, y_label, y_label], **{**line, "color": "0.3"},
                    zorder=1)
            ax.plot([x], [axis_y], marker="o", markersize=3, color="black", zorder=3,
                    gid="rank")
            ax.text(end - 0.05 if ha == "left" else end + 0.05, y_label, texts[name],
                    ha="right" if ha == "left" else "left", va="center",
                    fontsize=LABEL_SIZE, gid="algorithm")
    if note:
        ax.text(width / 2, height - 0.08, note, ha="center", va="bottom",
                fontsize=plotting.NOTE_SIZE, color="0.25", multialignment="left")
    return fig

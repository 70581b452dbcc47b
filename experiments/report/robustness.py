"""How much each verdict of the primary tests rests on a few data sets and on the test chosen
(docs/method/statistics.md, "Fragility of the primary tests"): ``robustness.csv``.

The primary family is the pre-registered one (:func:`preregistered.family`); without a
preregistration, the focus against each other algorithm under the primary selection
(:func:`decisions.primary_selection`) at the data-set level, Holm over those tests. Per test:

* Leave k out (k = 1, 2): every set of k data sets (all of them while there are at most
  :data:`MAX_SUBSETS`; beyond, :data:`MAX_SUBSETS` sets drawn from the generator of key
  (16, k), master seed 0) is left out of every test of the family at once; each test is
  recomputed on what is left (:func:`statistics.signed_rank_test`, vectorised over the
  subsets where its exact distribution applies), Holm over the family
  (:func:`inference.holm`), the verdict by :func:`preregistered.verdict`. Reported: the
  largest Holm p over the subsets and how many give another verdict than all the data sets.
* The sign test (``scipy.stats.binomtest`` of the wins among the non-tied units, two-sided),
  Holm over the family like the signed-rank tests, with its verdict by the same rule (its
  direction: the side with more wins).
* Whether the Hodges-Lehmann interval of the test (:func:`statistics.wilcoxon`) straddles
  the ROPE: a bound of [-rope, rope] lies strictly inside it.

A verdict is fragile (:func:`fragile`) when leaving one data set out changes it at all, or
leaving two out changes it in at least :data:`FRAGILE_SHARE` of the subsets. The sign test
and the ROPE are shown beside it, not folded into it (the docs say why).

:mod:`.folder_robustness` writes the table of a committed report folder from its values.
"""

import itertools
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import scipy.stats

from .._seeds import generator
from . import inference, preregistered, statistics

MAX_SUBSETS = 5000
SAMPLE_SEED, SAMPLE_KEY = 0, 16
FRAGILE_SHARE = 0.05
FILE = "robustness.csv"
COLUMNS = ["hypothesis", "comparison", "x", "y", "selection", "level", "n_datasets", "n",
           "p_value", "holm_p", "verdict", "loo_max_holm_p", "loo_flips", "loo_subsets",
           "lto_max_holm_p", "lto_flips", "lto_subsets", "lto_method", "sign_wins",
           "sign_losses", "sign_p", "sign_holm_p", "sign_verdict", "hl_estimate", "hl_low",
           "hl_high", "rope", "hl_straddles_rope", "fragile"]


def units(cases, selection, level):
    """The units of each primary test (``cases``: the case rows of
    :func:`statistics.analyses`; Analysis 1 under ``selection``): one row per used data set
    (its mean x and y, level "dataset") or per used case (level "case"), with its family,
    test, x and y."""
    if cases.empty:
        return pd.DataFrame(columns=["family", "x", "y", "test"])
    part = cases[(cases.selection == selection) & (cases.analysis == 1)]
    frames = []
    for test, pairs in part.groupby("test", sort=False):
        if level == "dataset":
            found = statistics.per_dataset(pairs)
            found = found[found.n_used > 0]
            frame = pd.DataFrame({"family": found.family, "x": found.mean_x,
                                  "y": found.mean_y})
        else:
            used = pairs[pairs.state == "used"]
            frame = pd.DataFrame({"family": used.family, "x": used.x, "y": used.y})
        frames.append(frame.assign(test=test))
    return (pd.concat(frames, ignore_index=True) if frames
            else pd.DataFrame(columns=["family", "x", "y", "test"]))


def subsets(n, k):
    """``(kept, method)``: a boolean (subsets x n) mask of the data sets kept when k of n are
    left out, every set of k while there are at most :data:`MAX_SUBSETS` ("exhaustive"),
    else :data:`MAX_SUBSETS` sets drawn uniformly (each without repetition within it) from
    the generator of key (16, k) ("sampled")."""
    if n <= k:
        return np.zeros((0, n), dtype=bool), "none"
    if math.comb(n, k) <= MAX_SUBSETS:
        out = np.array(list(itertools.combinations(range(n), k)), dtype=np.int64)
        method = "exhaustive"
    else:
        rng = generator(SAMPLE_SEED, (SAMPLE_KEY, k))
        out = np.argsort(rng.random((MAX_SUBSETS, n)), axis=1)[:, :k]
        method = "sampled"
    kept = np.ones((len(out), n), dtype=bool)
    np.put_along_axis(kept, out, False, axis=1)
    return kept, method


def _looped(d, kept, method):
    p, sign = np.full(len(kept), np.nan), np.zeros(len(kept))
    for row, keep in enumerate(kept):
        p[row] = statistics.signed_rank_test(d[keep], method)[1]
        r_plus, r_minus = inference.rank_sums(d[keep])
        sign[row] = np.sign(r_plus - r_minus)
    return p, sign


def signed_rank(d, kept, method):
    """``(p, sign)`` of :func:`statistics.signed_rank_test` on ``d[kept[i]]`` for every row
    i of ``kept``; sign: +1 when the positive rank sum is the larger, -1 the negative, 0
    neither. With the exact method and no tied |d|, vectorised: a unit's rank among the
    kept ones is the number of kept non-zero units with |d| up to its own, and the two-sided
    p is 2 min(P(T+ <= t), P(T+ >= t)) of :func:`inference.signed_rank_null`, as scipy's."""
    nonzero = d != 0
    magnitude = np.abs(d[nonzero])
    if method != "exact" or len(np.unique(magnitude)) < len(magnitude):
        return _looped(d, kept, method)
    order = np.argsort(magnitude)
    ranked = kept[:, nonzero][:, order]
    ranks = np.cumsum(ranked, axis=1) * ranked
    r_plus = (ranks * (d[nonzero] > 0)[order]).sum(axis=1)
    count = ranked.sum(axis=1)
    r_minus = count * (count + 1) // 2 - r_plus
    p = np.full(len(kept), np.nan)
    for n in np.unique(count[count > 0]):
        null = inference.signed_rank_null(int(n))
        below, above = np.cumsum(null), np.cumsum(null[::-1])[::-1]
        at = count == n
        p[at] = np.minimum(1.0, 2 * np.minimum(below[r_plus[at]], above[r_plus[at]]))
    return p, np.sign(r_plus - r_minus).astype(np.float64)


def _verdict(x, y, n, p_holm, sign, alpha):
    direction = x if sign > 0 else y if sign < 0 else "none"
    return preregistered.verdict(SimpleNamespace(x=x, n=n, p_holm=p_holm,
                                                 direction=direction), alpha)


def leave_out(tests, k, alpha, method):
    """Per test of ``tests`` (test -> (x label, y label, family array, x, y)): the largest
    Holm p and the number of subsets whose verdict differs from all the data sets' when k
    data sets are left out of every test at once; and the subsets' count and method."""
    names = list(dict.fromkeys(f for *_labels, fam, _x, _y in tests.values() for f in fam))
    kept_sets, how = subsets(len(names), k)
    index = {name: i for i, name in enumerate(names)}
    p, sign, n = [], [], []
    full = np.ones((1, len(names)), dtype=bool)
    for _x_label, _y_label, fam, x, y in tests.values():
        at = np.array([index[f] for f in fam], dtype=np.int64)
        kept = np.vstack([full, kept_sets])[:, at]
        found = signed_rank(x - y, kept, method)
        p.append(found[0])
        sign.append(found[1])
        n.append(kept.sum(axis=1))
    p, sign, n = np.array(p), np.array(sign), np.array(n)  # tests x (1 + subsets)
    holm = np.column_stack([inference.holm(p[:, j]) for j in range(p.shape[1])])
    rows = {}
    for i, (name, (x_label, y_label, *_values)) in enumerate(tests.items()):
        verdicts = [_verdict(x_label, y_label, n[i, j], holm[i, j], sign[i, j], alpha)
                    for j in range(p.shape[1])]
        flips = sum(v != verdicts[0] for v in verdicts[1:])
        rows[name] = {"max_holm_p": float(np.nanmax(holm[i, 1:])) if holm.shape[1] > 1
                      and not np.isnan(holm[i, 1:]).all() else np.nan,
                      "flips": int(flips), "subsets": len(kept_sets), "method": how}
    return rows


def sign_test(x, y):
    """``(wins, losses, p)``: the two-sided sign test (``scipy.stats.binomtest``) of the wins
    of x among the units where x and y differ; p NaN without such a unit."""
    wins, losses = int((x > y).sum()), int((x < y).sum())
    if wins + losses == 0:
        return wins, losses, np.nan
    return wins, losses, float(scipy.stats.binomtest(wins, wins + losses).pvalue)


def straddles(low, high, rope):
    """Whether the interval [low, high] holds a bound of [-rope, rope] strictly inside."""
    return bool(low < rope < high or low < -rope < high)


def fragile(row):
    """The rule of docs/method/statistics.md: a verdict is fragile when leaving one data set
    out changes it at all, or leaving two out changes it in at least :data:`FRAGILE_SHARE`
    of the subsets."""
    share = row["lto_flips"] / row["lto_subsets"] if row["lto_subsets"] else 0.0
    return bool(row["loo_flips"] > 0 or share >= FRAGILE_SHARE)


def table(found, selection, level, alpha, rope):
    """``robustness.csv`` of the primary family whose units are ``found`` (:func:`units`; its
    tests in the family's order), at ``alpha``, with the ROPE half-width ``rope``."""
    method = statistics.LEVELS[preregistered.LEVELS[level]]
    tests = {}
    for test, part in found.groupby("test", sort=False):
        x_label, y_label = test.split(" vs ", 1)
        tests[test] = (x_label, y_label, part.family.to_numpy(),
                       part.x.to_numpy(dtype=np.float64), part.y.to_numpy(dtype=np.float64))
    if not tests:
        return pd.DataFrame(columns=COLUMNS)
    full = {name: statistics.wilcoxon(x, y, method=method)
            for name, (*_labels, _fam, x, y) in tests.items()}
    holm = inference.holm(np.array([r["p_value"] for r in full.values()]))
    signs = {name: sign_test(x, y) for name, (*_labels, _fam, x, y) in tests.items()}
    sign_holm = inference.holm(np.array([s[2] for s in signs.values()]))
    drops = {k: leave_out(tests, k, alpha, method) for k in (1, 2)}
    rows = []
    for i, (name, (x_label, y_label, fam, _x, _y)) in enumerate(tests.items()):
        result, (wins, losses, sign_p) = full[name], signs[name]
        loo, lto = drops[1][name], drops[2][name]
        direction = {"x": 1, "y": -1}.get(result["direction"], 0)
        row = {"hypothesis": f"H{i + 1}", "comparison": name, "x": x_label, "y": y_label,
               "selection": selection, "level": level, "n_datasets": len(set(fam)),
               "n": result["n"], "p_value": result["p_value"], "holm_p": holm[i],
               "verdict": _verdict(x_label, y_label, result["n"], holm[i], direction, alpha),
               "loo_max_holm_p": loo["max_holm_p"], "loo_flips": loo["flips"],
               "loo_subsets": loo["subsets"], "lto_max_holm_p": lto["max_holm_p"],
               "lto_flips": lto["flips"], "lto_subsets": lto["subsets"],
               "lto_method": lto["method"], "sign_wins": wins, "sign_losses": losses,
               "sign_p": sign_p, "sign_holm_p": sign_holm[i],
               "sign_verdict": _verdict(x_label, y_label, wins + losses, sign_holm[i],
                                        np.sign(wins - losses), alpha),
               "hl_estimate": result["hl_estimate"], "hl_low": result["hl_low"],
               "hl_high": result["hl_high"], "rope": rope,
               "hl_straddles_rope": straddles(result["hl_low"], result["hl_high"], rope)}
        row["fragile"] = fragile(row)
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)


def headline_note(row):
    """The headline's words on one row of :func:`table`: fragile or not, with the changed
    verdicts behind it, and what the sign test and the ROPE say where they differ from the
    verdict."""
    changed = (f"leaving one data set out changes it in {row.loo_flips} of {row.loo_subsets}, "
               f"two in {row.lto_flips} of {row.lto_subsets}"
               + (" drawn" if row.lto_method == "sampled" else "")
               + f"; largest Holm p {row.lto_max_holm_p:.2g}")
    words = [f"{'**fragile**' if row.fragile else 'not fragile'} ({changed})"]
    if row.sign_verdict != row.verdict:
        words.append(f"sign test: {row.sign_verdict} (Holm {row.sign_holm_p:.2g})")
    if row.hl_straddles_rope:
        words.append(f"HL interval straddles the ROPE ±{row.rope:g}")
    return "; ".join(words)

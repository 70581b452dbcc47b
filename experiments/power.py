"""The number of data sets a confirmatory study needs: the power of its data-set-level tests,
simulated from a pilot study's differences (docs/method/power.md).

A pilot gives, for each data set (row) and hypothesis (column), the difference d = F(focus) -
F(other) of the primary analysis. A simulated study of ``n_datasets`` data sets draws whole rows
with replacement from the pilot after each column is centred on its Hodges-Lehmann estimate
(the location the signed-rank test is about; the mean of skewed differences is not) and shifted
to the effect assumed true: the rows keep the pilot's spread, skew and the correlation between
hypotheses, and the smallest effect of interest replaces the pilot's own estimate. On each
simulated study:

* the two-sided signed-rank test of each column (``statistics.signed_rank_test``, as the
  report; exact, or with the normal approximation where drawn rows tie), Holm's adjustment
  over the columns (the pre-registered family), rejection at ``alpha``;
* the Bayesian signed-rank test with a ROPE (``bayesian.signed_rank_test``) and its verdict at
  the decision threshold.

The power of a hypothesis is the fraction of simulated studies whose test rejects it in the
direction of the effect; the Bayesian rates are the fractions of each verdict. The effect is
one number for every hypothesis or one per hypothesis; ``OBSERVED`` takes each column's own
Hodges-Lehmann estimate, so the pilot is drawn as it is (the power at the observed effects).
"""

import argparse
import numbers
from pathlib import Path
from typing import NamedTuple

import numpy as np

from pcskm.experiments._seeds import generator
from pcskm.experiments.report import bayesian, inference, statistics

ALPHA = 0.05
TARGET = 0.8
N_SIMULATIONS = 1000
# posterior draws per Bayesian test in a simulation: a verdict's probability then has a Monte
# Carlo standard error <= 0.5 / sqrt(4000) = 0.008 (the report uses bayesian.N_SAMPLES)
N_POSTERIOR = 4000
POWER_KEY = 14  # docs/method/protocol.md §2
TESTS = ("PCSKM vs LKM", "PCSKM vs SKM", "PCSKM vs PCKM", "PCSKM vs MPCKM")
OBSERVED = "observed"  # the effect of each hypothesis: its pilot's Hodges-Lehmann estimate


class Power(NamedTuple):
    """Rates over the simulated studies, one value per hypothesis (column of the pilot)."""

    n_datasets: int
    effect: np.ndarray  # one per hypothesis
    holm_power: np.ndarray  # Holm-adjusted signed-rank p < alpha, in the effect's direction
    unadjusted_power: np.ndarray  # unadjusted p < alpha, in the effect's direction
    better: np.ndarray  # Bayesian verdict "better" (focus better)
    equivalent: np.ndarray  # Bayesian verdict "practically equivalent"
    worse: np.ndarray  # Bayesian verdict "worse"


def _pilot(pilot):
    pilot = np.asarray(pilot, dtype=np.float64)
    if pilot.ndim == 1:
        pilot = pilot[:, None]
    if pilot.ndim != 2 or pilot.shape[0] < 2 or pilot.shape[1] < 1:
        raise ValueError("the pilot must be a (data sets, hypotheses) array with at least 2 "
                         f"data sets; got shape {pilot.shape}")
    if not np.isfinite(pilot).all():
        raise ValueError("the pilot's differences must be finite (no NaN or infinity)")
    return pilot


def _positive_integer(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def centres(pilot):
    """The Hodges-Lehmann estimate (the median of the Walsh averages) of each column."""
    return np.array([np.median(inference.walsh_averages(column)) for column in _pilot(pilot).T])


def effects(pilot, effect):
    """``effect`` as one number per column of the pilot: a number for every column, one per
    column, or :data:`OBSERVED` (each column's own :func:`centres`)."""
    pilot = _pilot(pilot)
    if isinstance(effect, str):
        if effect != OBSERVED:
            raise ValueError(f"effect must be a number, one per hypothesis or {OBSERVED!r}; "
                             f"got {effect!r}")
        return centres(pilot)
    found = np.broadcast_to(np.asarray(effect, dtype=np.float64), pilot.shape[1:]).copy() \
        if np.ndim(effect) <= 1 and np.size(effect) in (1, pilot.shape[1]) else None
    if found is None or not np.isfinite(found).all():
        raise ValueError(f"effect must be finite, one number or one per hypothesis "
                         f"({pilot.shape[1]}); got {effect!r}")
    return found


def shifted_pilot(pilot, effect):
    """The pilot with each column centred on its Hodges-Lehmann estimate (the median of its
    Walsh averages) and shifted to its ``effect`` (:func:`effects`)."""
    pilot = _pilot(pilot)
    return pilot - centres(pilot) + effects(pilot, effect)


def _method(d):
    """The signed-rank test's p-value: exact for at most 50 untied non-zero differences,
    else the normal approximation with the tie correction (scipy's permutation test, which
    ``method="auto"`` picks for tied samples, would take seconds per test)."""
    nonzero = np.abs(d[d != 0])
    return "exact" if len(nonzero) <= 50 and len(np.unique(nonzero)) == len(nonzero) \
        else "approx"


def _draw(shifted, n_datasets, rng):
    return shifted[rng.integers(len(shifted), size=n_datasets)]


def simulated_differences(pilot, effect, n_datasets, *, rng):
    """One simulated study: ``n_datasets`` rows drawn with replacement from
    ``shifted_pilot(pilot, effect)``."""
    return _draw(shifted_pilot(pilot, effect), _positive_integer(n_datasets, "n_datasets"), rng)


def power(pilot, effect, n_datasets, *, rng, alpha=ALPHA, rope=bayesian.ROPE,
          prior=bayesian.PRIOR_STRENGTH, threshold=bayesian.THRESHOLD,
          n_simulations=N_SIMULATIONS, n_posterior=N_POSTERIOR, bayesian_for=None):
    """The rates of ``Power`` over ``n_simulations`` studies of ``n_datasets`` data sets
    whose true difference is ``effect`` (:func:`effects`; module docstring).
    ``bayesian_for``: the indices of the hypotheses whose Bayesian test runs (default all;
    the others' Bayesian rates are NaN), the test being most of the time."""
    shifted = shifted_pilot(pilot, effect)
    effect = effects(pilot, effect)
    n_datasets = _positive_integer(n_datasets, "n_datasets")
    n_simulations = _positive_integer(n_simulations, "n_simulations")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1); got {alpha!r}")
    n_hypotheses = shifted.shape[1]
    holm_rejected = np.zeros(n_hypotheses)
    rejected = np.zeros(n_hypotheses)
    verdicts = {verdict: np.zeros(n_hypotheses) for verdict in bayesian.VERDICTS}
    tested = np.zeros(n_hypotheses, dtype=bool)
    tested[list(range(n_hypotheses)) if bayesian_for is None else list(bayesian_for)] = True
    for verdict in verdicts.values():
        verdict[~tested] = np.nan
    for _ in range(n_simulations):
        d = _draw(shifted, n_datasets, rng)
        p_values = np.empty(n_hypotheses)
        right_way = np.empty(n_hypotheses, dtype=bool)
        for h in range(n_hypotheses):
            p_value = statistics.signed_rank_test(d[:, h], _method(d[:, h]))[1]
            p_values[h] = 1.0 if np.isnan(p_value) else p_value
            r_plus, r_minus = inference.rank_sums(d[:, h])
            right_way[h] = r_plus > r_minus if effect[h] >= 0 else r_minus > r_plus
            if tested[h]:
                shares = bayesian.signed_rank_test(d[:, h], np.zeros(len(d)), rope, prior,
                                                   n_posterior, rng=rng)
                verdicts[bayesian.decision(*shares, threshold=threshold)][h] += 1
        rejected += (p_values < alpha) & right_way
        holm_rejected += (inference.holm(p_values) < alpha) & right_way
    return Power(int(n_datasets), effect, holm_rejected / n_simulations,
                 rejected / n_simulations, verdicts["better"] / n_simulations,
                 verdicts["practically equivalent"] / n_simulations,
                 verdicts["worse"] / n_simulations)


def required_datasets(rates, target=TARGET):
    """The smallest n_datasets of ``rates`` (``Power`` tuples for one effect, any order)
    from which on every larger n of the grid each hypothesis's Holm power is at least
    ``target``; None when the grid's largest n does not reach it."""
    needed = None
    for rate in sorted(rates, key=lambda r: r.n_datasets, reverse=True):
        if not np.all(rate.holm_power >= target):
            break
        needed = rate.n_datasets
    return needed


def pilot_differences(table, selection, tests):
    """The (data sets, hypotheses) pilot array from a report's ``wilcoxon_datasets.csv``
    table (a DataFrame): the column ``mean_diff`` of analysis 1 under ``selection`` for each
    test of ``tests``, the data sets in the table's order. Refused when a test lacks a data
    set another test has."""
    rows = table[(table["selection"] == selection) & (table["analysis"] == 1)]
    wide = rows.pivot(index="dataset", columns="test", values="mean_diff")
    missing = [test for test in tests if test not in wide.columns]
    if missing:
        raise ValueError(f"the pilot has no rows for {missing} under selection {selection!r}")
    wide = wide[list(tests)]
    if wide.isna().any().any():
        raise ValueError("the pilot's tests do not cover the same data sets: "
                         f"{sorted(wide.index[wide.isna().any(axis=1)])}")
    order = list(dict.fromkeys(rows["dataset"]))
    return wide.loc[order].to_numpy()


def power_table(pilot, tests, effect_list, n_datasets, *, seed=0, **options):
    """One row per effect, number of data sets and test: the rates of ``power``, effect i
    and number of data sets j simulated from the generator of key (POWER_KEY, i, j); the
    column ``effect`` holds the test's own effect (:data:`OBSERVED`: its estimate)."""
    rows = []
    for i, effect in enumerate(effect_list):
        for j, n in enumerate(n_datasets):
            rates = power(pilot, effect, n, rng=generator(seed, (POWER_KEY, i, j)), **options)
            for h, test in enumerate(tests):
                rows.append({"effect": rates.effect[h], "n_datasets": n, "test": test,
                             "holm_power": rates.holm_power[h],
                             "unadjusted_power": rates.unadjusted_power[h],
                             "better": rates.better[h], "equivalent": rates.equivalent[h],
                             "worse": rates.worse[h]})
    return rows


def _effect(text):
    return text if text == OBSERVED else float(text)


def main(argv=None):
    """``python -m pcskm.experiments.power PILOT.csv --out power.csv`` (docs/method/power.md §6)."""
    parser = argparse.ArgumentParser(prog="python -m pcskm.experiments.power",
                                     description=main.__doc__)
    parser.add_argument("pilot", type=Path, help="a report's wilcoxon_datasets.csv")
    parser.add_argument("--selection", default="cv", help="the primary selection of s")
    parser.add_argument("--tests", nargs="+", default=list(TESTS))
    parser.add_argument("--effects", nargs="+", type=_effect, default=[0.0, 0.02],
                        help=f"true effects: numbers, or {OBSERVED!r} (each test's own "
                             "estimate)")
    parser.add_argument("--rope", type=float, default=bayesian.ROPE,
                        help="the Bayesian test's ROPE half-width")
    parser.add_argument("--bayesian-tests", nargs="*", default=None,
                        help="the tests whose Bayesian test runs (default: every test)")
    parser.add_argument("--datasets", nargs="+", type=int, default=[20, 30, 40, 50, 60, 80])
    parser.add_argument("--simulations", type=int, default=N_SIMULATIONS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    import pandas as pd

    pilot = pilot_differences(pd.read_csv(args.pilot), args.selection, args.tests)
    rows = power_table(pilot, args.tests, args.effects, args.datasets, seed=args.seed,
                       n_simulations=args.simulations, rope=args.rope,
                       bayesian_for=None if args.bayesian_tests is None else
                       [args.tests.index(test) for test in args.bayesian_tests])
    pd.DataFrame(rows).to_csv(args.out, index=False)


if __name__ == "__main__":
    main()

"""The pre-registered tests of the confirmatory study on other sets of data sets, from its
committed reports alone (docs/results/confirmatory/README.md, "Deviations from the
pre-registration" and "The protocol question").

A report's ``baseline_values.csv.gz`` holds, per (data set, selection, algorithm, init, kind,
percent), the mean F under each rule for failed fits at full precision: the values every test
of the report reads. :func:`load` reads them back into the families' Dataset of a store
(:func:`baseline.read`), and :func:`decide` runs the report's own code on them:
``statistics.analyses`` under the pre-registered rule for failed fits, ``preregistered.family``
(Holm over the focus's tests, the verdict at alpha) and ``decisions.signed_rank_rows`` (the
Bayesian signed-rank test with the report's seeded draws), then the pre-registration's rule
(:func:`verdict`). :func:`check` recomputes the committed ``preregistered_tests.csv`` and the
primary rows of ``bayesian_tests.csv`` and refuses to go on unless every value agrees at the
precision the CSV holds.

The sets of data sets are :func:`subset`'s: some data sets left out, and pairs counted once by
averaging their two values (each algorithm's case values, so each data set value is the mean of
the pair's). The tables, each row one hypothesis under one variant::

    python -m pcskm.experiments.reanalysis [docs/results/confirmatory]

writes ``deviations.csv`` (inclusion criterion 4 applied to the two pairs of one collection),
``unseen_sets.csv`` (the sets no earlier study had analysed, both protocols),
``protocols.csv`` (both protocols under the pre-registered and the label-using selections),
``rope_sensitivity.csv`` (the Bayesian verdicts at ROPE 0.005, 0.01 and 0.02, with the shares
of the Walsh averages of the differences in each region), ``reference_arm.csv`` (the reference
arm's unadjusted test with its Bayesian test) and
``itt_datasets_<protocol>.csv`` (each data set's values under the pre-registered selection and
rule for failed fits, in the columns of ``wilcoxon_datasets.csv``: a pilot of
``pcskm.experiments.power``).
"""

import sys
import tomllib
import types
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from pcskm.experiments._seeds import generator
from pcskm.experiments.report import baseline, bayesian, decisions, preregistered, statistics
from pcskm.experiments.report.csv_files import write_csv
from pcskm.experiments.report.failure_rules import RULES
from pcskm.experiments.spec import Preregistration, preregistration_record

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "experiments" / "specs" / "confirmatory.toml"
PROTOCOLS = {"standardised": "-std", "raw": ""}  # the report folder -> the suffix of the
# two registry sets (fisheriris, optdigits048) in that protocol's spec
# inclusion criterion 4 (docs/method/real-datasets.md): two files of one collection each, the
# one the criterion's order keeps first (of KEEL's two-class files of one collection the one
# with the most points, 1599 against 1482; the uci battery before KEEL's balanced files)
PAIRS = (("keel-winequality-red-4", "keel-winequality-white-3-9_vs_5"),
         ("uci-wdbc", "keel-wisconsin"))
# the real sets of the extended study (docs/results/extended), analysed with raw features
# before the protocol of the confirmatory study was chosen; ionosphere also in the paper's
SEEN = ("fisheriris", "optdigits048", "uci-ecoli", "uci-glass", "uci-sonar", "uci-statlog",
        "uci-wdbc", "uci-wine", "uci-yeast")
SEEN_ALSO = ("uci-ionosphere",)
ROPES = (0.005, 0.01, 0.02)
LABEL_USING = ("paper", "oracle")
SENSITIVITY = ("unthresholded", "auc")
# the committed CSVs carry 10 significant digits (csv_files.FLOAT_FORMAT)
TOLERANCE = 1e-9
COLUMNS = ["n", "wins", "losses", "ties", "mean_diff", "boot_low", "boot_high", "hl_estimate",
           "hl_low", "hl_high", "p_value", "p_holm", "wilcoxon", "p_better", "p_rope",
           "p_worse", "bayesian", "verdict"]


def preregistration(spec=SPEC):
    """The :class:`Preregistration` of the confirmatory spec (the same in its three specs)."""
    table = tomllib.loads(Path(spec).read_text())["preregistration"]
    return Preregistration(**preregistration_record(table))


def load(folder):
    """The families' Dataset of a report folder's ``baseline_values.csv.gz``, its inits in
    the spec's order (that of the store)."""
    values = baseline.read(folder).values
    order = [i for i in ("dkm++", "seeding", "robin", "maximin") if i in values.init.values]
    return values.reindex(init=order)


def name(dataset, protocol):
    """A data set's name in a protocol's spec (the registry sets renamed ``-std``)."""
    suffix = PROTOCOLS[protocol]
    return f"{dataset}{suffix}" if dataset in ("fisheriris", "optdigits048") else dataset


def subset(values, drop=(), average=()):
    """``values`` without the families ``drop`` and with each pair of ``average`` replaced
    by one family ("a + b") whose values are the mean of the two (a case is complete when
    both are)."""
    gone = set(drop) | {f for pair in average for f in pair}
    kept = values.sel(family=[f for f in values.family.values if f not in gone])
    merged = []
    for pair in average:
        both = values.sel(family=list(pair))
        one = both.mean("family", skipna=False).assign(complete=both.complete.all("family"),
                                         n_expected=both.n_expected.min("family"))
        merged.append(one.expand_dims(family=[" + ".join(pair)]))
    return xr.concat([kept, *merged], dim="family") if merged else kept


def verdict(row, threshold):
    """The pre-registration's verdict of one hypothesis: the Holm-adjusted Wilcoxon test
    decides better or worse, the Bayesian signed-rank test equivalence only."""
    if row["wilcoxon"] in ("better", "worse"):
        return f"PCSKM {row['wilcoxon']} than {row['y']}"
    if row["p_rope"] >= threshold:
        return "practically equivalent"
    return "undecided"


def decide(values, prereg, selection=None):
    """One row per hypothesis (the focus against each other algorithm) on ``values`` under
    ``selection`` (default: the pre-registered rule): the report's exact test with Holm over
    the four, its bootstrap and Hodges-Lehmann columns, the Bayesian signed-rank test and
    the pre-registered verdict (:func:`verdict`)."""
    selection = selection or prereg.rule
    results = types.SimpleNamespace(families=values.sel(selection=[selection]),
                                    family_labels={str(f): str(f) for f in values.family.values})
    plan = statistics.study_plan(results, prereg.focus)
    tests, cases = statistics.analyses(results, plan, prereg.failures)
    family = preregistered.family(tests, selection, prereg.focus, prereg.level, prereg.alpha)
    bayes = pd.DataFrame(decisions.signed_rank_rows(cases, plan, prereg.failures, prereg,
                                                    prereg.alpha))
    table = family.merge(bayes[["test", "wilcoxon", "p_better", "p_rope", "p_worse",
                                "decision"]], on="test")
    table = table.rename(columns={"decision": "bayesian"})
    table["verdict"] = [verdict(row, prereg.threshold) for _i, row in table.iterrows()]
    return table[["selection", "test", "y", *COLUMNS]]


def datasets_table(values, prereg):
    """Each data set's values under the pre-registered selection and rule for failed fits,
    per test: the columns of a report's ``wilcoxon_datasets.csv``."""
    results = types.SimpleNamespace(families=values.sel(selection=[prereg.rule]),
                                    family_labels={str(f): str(f) for f in values.family.values})
    plan = statistics.study_plan(results, prereg.focus)
    _tests, cases = statistics.analyses(results, plan, prereg.failures, tests=False)
    return statistics.breakdown(cases)


def check(folder, values, prereg):
    """Refuse (ValueError) values whose recomputed primary tests differ from the folder's
    committed ``preregistered_tests.csv`` or ``bayesian_tests.csv`` (primary rows)."""
    mine = decide(values, prereg)
    committed = pd.read_csv(Path(folder) / "preregistered_tests.csv")
    bayes = pd.read_csv(Path(folder) / "bayesian_tests.csv")
    bayes = bayes[bayes.primary]
    pairs = [(column, committed[column]) for column in
             ("n", "wins", "losses", "ties", "mean_diff", "boot_low", "boot_high",
              "hl_estimate", "hl_low", "hl_high", "p_value", "p_holm")]
    pairs += [(column, bayes[column].to_numpy()) for column in ("p_better", "p_rope",
                                                                "p_worse")]
    for column, expected in pairs:
        got, expected = mine[column].to_numpy(float), np.asarray(expected, float)
        if not np.allclose(got, expected, rtol=TOLERANCE, atol=1e-12):
            raise ValueError(f"{folder}: {column} recomputed {got} differs from the committed "
                             f"{expected}")
    if list(mine.bayesian) != list(bayes.decision):
        raise ValueError(f"{folder}: the Bayesian decisions differ from bayesian_tests.csv")
    return mine


def _rows(table, **labels):
    return table.assign(**labels)[[*labels, *table.columns]]


def deviation_variants(protocol):
    """(variant, description, drop, average) of criterion 4 applied to :data:`PAIRS`: as
    run, each pair averaged, and each combination of one member of each pair kept (the
    first: the members the criterion's order keeps)."""
    pairs = [tuple(name(d, protocol) for d in pair) for pair in PAIRS]
    variants = [("as run", "all 42 sets, each counted as a unit", (), ()),
                ("pairs averaged", "each pair one unit, the mean of its two values", (),
                 tuple(pairs))]
    for first in pairs[0]:
        for second in pairs[1]:
            dropped = tuple(d for pair in pairs for d in pair if d not in (first, second))
            written = (first, second) == (pairs[0][0], pairs[1][0])
            variants.append((f"keep {first}, {second}",
                             f"one member of each pair kept: {first} and {second}"
                             + (" (the members criterion 4's order keeps)" if written else ""),
                             dropped, ()))
    return variants


def deviations(values, prereg, protocol):
    frames = []
    for variant, description, drop, average in deviation_variants(protocol):
        table = decide(subset(values, drop, average), prereg)
        frames.append(_rows(table, protocol=protocol, variant=variant,
                            description=description, n_sets=int(table.n.max())))
    return pd.concat(frames, ignore_index=True)


def unseen(values, prereg, protocol):
    """The pre-registered tests on the sets no earlier study analysed: without
    :data:`SEEN` (the sets of the extended study but ionosphere), and without ionosphere
    too."""
    frames = []
    for variant, left_out in (("without the 9", SEEN), ("without the 10", SEEN + SEEN_ALSO)):
        drop = [name(d, protocol) for d in left_out]
        table = decide(subset(values, drop), prereg)
        frames.append(_rows(table, protocol=protocol, variant=variant,
                            left_out=" ".join(drop), n_sets=int(table.n.max())))
    return pd.concat(frames, ignore_index=True)


def protocols(values, prereg, protocol):
    """The tests on the 42 sets under the pre-registered selection, the post-hoc
    sensitivity selections the README cites and the label-using ones."""
    frames = [_rows(decide(values, prereg, selection), protocol=protocol)
              for selection in (prereg.rule, *SENSITIVITY, *LABEL_USING)]
    return pd.concat(frames, ignore_index=True)


def walsh_shares(d, rope):
    """(above, within, below): the shares of the pairs (i, j) of the differences ``d``, every
    ordered pair and i = j included, whose Walsh average (d_i + d_j) / 2 lies above, within or
    below the ROPE [-rope, rope]: the Bayesian signed-rank test's theta with equal weights,
    toward which its posterior concentrates as the number of data sets grows."""
    walsh = (d[:, None] + d[None, :]) / 2
    return (float(np.mean(walsh > rope)), float(np.mean(np.abs(walsh) <= rope)),
            float(np.mean(walsh < -rope)))


def rope_sensitivity(values, prereg, protocol):
    """The tests on the 42 sets with the Bayesian test at each ROPE of :data:`ROPES`, and
    the :func:`walsh_shares` of each test's data-set differences."""
    differences = datasets_table(values, prereg)
    frames = []
    for rope in ROPES:
        table = decide(values, replace(prereg, rope=rope), prereg.rule)
        shares = [walsh_shares(differences[differences.test == test].mean_diff.to_numpy(),
                               rope) for test in table.test]
        table[["walsh_above", "walsh_within", "walsh_below"]] = shares
        frames.append(_rows(table, protocol=protocol, rope=rope))
    return pd.concat(frames, ignore_index=True)


def reference_arm(values, prereg, protocol):
    """The reference arm on the 42 sets (``preregistered.reference_arm``: the focus at its
    unthresholded s against itself under the pre-registered rule, unadjusted) with the
    Bayesian signed-rank test of the same data-set values, its draws from the generator of key
    (10, 5, rule) (the four primary tests take 1 to 4)."""
    results = types.SimpleNamespace(families=values,
                                    family_labels={str(f): str(f) for f in values.family.values})
    plan = statistics.study_plan(results, prereg.focus)
    row = preregistered.reference_arm(results, plan, prereg).iloc[0]
    _tests, cases = statistics.analyses(results, plan, prereg.failures, tests=False)
    first = cases[(cases.test == cases.test.iloc[0]) & (cases.state == "used")]
    wide = first.pivot_table(index=["family", "init", "kind"], columns="selection", values="x")
    means = wide.groupby("family", sort=False).mean()
    rng = generator(decisions.BAYES_SEED, (decisions.BAYES_KEY, len(plan.others) + 1,
                                           RULES.index(prereg.failures) + 1))
    shares = bayesian.signed_rank_test(means[preregistered.REFERENCE].to_numpy(),
                                       means[prereg.rule].to_numpy(), prereg.rope, prereg.prior,
                                       rng=rng)
    frame = pd.DataFrame([row[["test", "n", "wins", "losses", "ties", "mean_diff", "boot_low",
                               "boot_high", "hl_estimate", "hl_low", "hl_high", "p_value",
                               "verdict"]]])
    frame[["p_better", "p_rope", "p_worse"]] = [shares]
    frame["bayesian"] = bayesian.decision(*shares, threshold=prereg.threshold)
    return _rows(frame, protocol=protocol)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    folder = Path(argv[0]) if argv else ROOT / "docs" / "results" / "confirmatory"
    prereg = preregistration()
    tables = {"deviations": [], "unseen_sets": [], "protocols": [], "rope_sensitivity": [],
              "reference_arm": []}
    for protocol in PROTOCOLS:
        values = load(folder / protocol)
        check(folder / protocol, values, prereg)
        tables["deviations"].append(deviations(values, prereg, protocol))
        tables["unseen_sets"].append(unseen(values, prereg, protocol))
        tables["protocols"].append(protocols(values, prereg, protocol))
        tables["rope_sensitivity"].append(rope_sensitivity(values, prereg, protocol))
        tables["reference_arm"].append(reference_arm(values, prereg, protocol))
        write_csv(datasets_table(values, prereg), folder / f"itt_datasets_{protocol}.csv")
    for stem, frames in tables.items():
        write_csv(pd.concat(frames, ignore_index=True), folder / f"{stem}.csv")


if __name__ == "__main__":
    main()

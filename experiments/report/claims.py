"""The claims table (docs/guide/paper-study.md, "The claims table"): every claim the paper makes
about its experiments, read from the data file :data:`PAPER_CLAIMS` (one row per claim: where
the paper makes it, what is measured, the test, the side it favours, the paper's own value),
judged by one verdict rule under each best-s selection of the cube, the primary selection's
verdict first.

:func:`read_claims` reads and checks the file; :func:`evidence` gathers what the claims read
from the report's results (the case values V, the mean F per point, the Wilcoxon tests at both
levels, the mean feature weights, Table 1); :func:`evaluate` judges every claim under every
selection and checks that no verdict contradicts another (:func:`check_consistent`);
:func:`recompute` judges the claims again from a committed report's tables.
"""

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from . import families, inference, performance, statistics
from .constraint_table import PRINTED
from .fits import quiet
from .selection import ORDER, SELECTIONS

VERDICTS = ("reproduced", "not reproduced", "contradicted", "not testable")
REPRODUCED, NOT_REPRODUCED, CONTRADICTED, NOT_TESTABLE = VERDICTS

# The verdict rule's parameters (docs/guide/paper-study.md, "The verdict rule").
ALPHA = 0.05  # the paper's significance level
LEVEL = "datasets"  # the level of the Wilcoxon tests a verdict reads (or "cases")
# the primary selection when the spec pre-registers none: the first of these in the cube
DEFAULT_PRIMARY = ("cv", "honest")
# The thresholds of the descriptive claims (each claim's ``measure`` states its own).
TIE_F = 0.02  # two mean F-scores closer than this are "equal" / "on par"
SMALL_F = 0.05  # a difference in mean F up to this is "relatively small" / "close"
SEPARATED = 0.95  # share of weight panels separated: "all"
UNSEPARATED = 0.05  # ... "none"
DRIFT = 0.10  # total-variation distance of the weights over percentages
EVERY_POINT = 0.75  # share of points, at the worst percentage

SIX = statistics.SIX
BRODINOVA = tuple(f.label for f in families.BRODINOVA)
DIGITS = ("digits 0-4-8", "digits 3-8-9")
NOT_DIGITS = tuple(label for label in SIX if label not in DIGITS)
WEIGHT_SETS = tuple(f.label for f in families.WEIGHT_FAMILIES)
CONTAMINATED = tuple(f.label for f in families.CONTAMINATED)
ALGORITHMS = performance.PAPER_ALGORITHMS
SEMI_SUPERVISED = ("PCKM", "MPCKM", "PCSKM")
DETERMINISTIC = statistics.DETERMINISTIC
INITS = ("seeding", *DETERMINISTIC)
KINDS = statistics.KINDS
SETTINGS = statistics.ANALYSIS1_SETTINGS  # Figure 1 and its appendix: the (init, kind) rows

PAPER_CLAIMS = Path(__file__).with_name("paper_claims.csv")
# the kinds of claim, each with its part of the verdict rule
DIFFERENCE, NO_DIFFERENCE, BEST_ON_AVERAGE = "difference", "no difference", "best on average"
TABLE_VALUE, DESCRIPTIVE = "table value", "descriptive"
CLAIM_KINDS = (DIFFERENCE, NO_DIFFERENCE, BEST_ON_AVERAGE, TABLE_VALUE, DESCRIPTIVE)
COLUMNS = ("id", "section", "claim", "kind", "test", "favoured", "requires", "scope",
           "measure", "paper_value")
REQUIRED = ("id", "section", "claim", "kind", "test", "scope", "measure")
# the Wilcoxon tests of statistics.analyses a claim can name (Analysis 1 and 2)
WILCOXON_TESTS = (*(statistics.PAPER.test_name(other) for other in statistics.ANALYSIS1_OTHERS),
                  *(f"{x} vs {y}" for x, y in statistics.ANALYSIS2_PAIRS))


@dataclass(frozen=True)
class Finding:
    """One claim under one selection: ``value`` (a number or a short numeric summary), the
    ``verdict`` (a word of :data:`VERDICTS`), a ``note`` (where, on how much of the data, or
    why not testable) and, for the Wilcoxon claims, the ``p`` the verdict reads."""

    value: str
    verdict: str
    note: str = ""
    p: float = np.nan

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")


@dataclass(frozen=True)
class Claim:
    """A claim of the paper, one row of :data:`PAPER_CLAIMS`: ``id``, where the paper makes it
    (``section``), the ``claim`` in short words, its ``kind`` (:data:`CLAIM_KINDS`), the
    ``test`` (a Wilcoxon test of :data:`WILCOXON_TESTS`, ``table1`` or a measure of
    :data:`MEASURES`), the side it ``favoured``, the claims it ``requires`` (ids), what it
    covers (``scope``), the ``measure`` in words and the ``paper_value``."""

    id: str
    section: str
    claim: str
    kind: str
    test: str
    favoured: str
    requires: tuple
    scope: str
    measure: str
    paper_value: str


@dataclass(frozen=True)
class Evidence:
    """What the claims read: the cube's ``selections``; ``table1`` (constraint_table.table);
    ``tests`` (statistics.analyses: every selection, both levels); ``values``, V per
    (selection, family, algorithm, init, kind), and ``points``, the mean F per (selection,
    family, algorithm, init, kind, percent), NaN where not complete (None: nothing computed);
    ``weights``: per family label, the mean weights over every s, as the paper's Figure 2
    shows them, whatever s the report's weight figures are drawn at (algorithm, init, kind,
    percent, feature) with the ``uninformative`` coordinate; ``panels``: the tables of
    :func:`_panels`, which every selection reads alike, computed once; ``cases``: the grids
    of :func:`_cases`, which several claims of a selection read alike, computed once;
    ``grids``: per (data, selection), the array each grid of :func:`_grid` is read from."""

    selections: tuple
    table1: pd.DataFrame
    tests: pd.DataFrame
    values: xr.DataArray | None
    points: xr.DataArray | None
    weights: dict
    panels: dict = field(default_factory=dict, compare=False, repr=False)
    cases: dict = field(default_factory=dict, compare=False, repr=False)
    grids: dict = field(default_factory=dict, compare=False, repr=False)


def evidence(results, table1, tests):
    """The :class:`Evidence` of the report's ``results`` (aggregate.Results), its Table 1 and
    its Wilcoxon tests."""
    if results.families is None:
        return Evidence(SELECTIONS, table1, tests, None, None, {})
    values, complete = performance.case_values(results)
    data = results.families
    return Evidence(
        selections=tuple(str(s) for s in data.selection.values), table1=table1, tests=tests,
        values=values.where(complete), points=data.f_mean.where(data.complete),
        weights={label: w["mean"] for label, w in results.family_weights_over_s.items()})


# ---------------------------------------------------------------- descriptive rules


def at_least(x, threshold):
    """reproduced if ``x >= threshold``, else not reproduced."""
    return REPRODUCED if x >= threshold else NOT_REPRODUCED


def at_most(x, threshold):
    """reproduced if ``x <= threshold``, else not reproduced."""
    return REPRODUCED if x <= threshold else NOT_REPRODUCED


def everywhere(holds):
    """A claim about every unit: reproduced if it ``holds`` at every unit."""
    return REPRODUCED if np.asarray(holds, dtype=bool).all() else NOT_REPRODUCED


def majority(holds):
    """A claim about most units: reproduced if it ``holds`` at more than half of them."""
    return REPRODUCED if np.asarray(holds, dtype=bool).mean() > 0.5 else NOT_REPRODUCED


# ---------------------------------------------------------------- measures


def separated(weights):
    """Per panel (every dim but ``feature``): whether every known uninformative feature
    weighs less than every other feature (1.0 or 0.0); NaN where the panel has no value."""
    bad = weights.uninformative
    with quiet():
        top_uninformative = weights.where(bad).max("feature")
        least_other = weights.where(~bad).min("feature")
    return (top_uninformative < least_other).where(weights.notnull().all("feature"))


def heavier_uninformative(weights):
    """Per panel: whether the mean weight of the known uninformative features exceeds the
    mean weight of the others (1.0 or 0.0); NaN where the panel has no value."""
    bad = weights.uninformative
    with quiet():
        heavier = weights.where(bad).mean("feature") > weights.where(~bad).mean("feature")
    return heavier.where(weights.notnull().all("feature"))


def percent_drift(weights):
    """Per panel group (every dim but ``percent`` and ``feature``): the largest
    total-variation distance, 1/2 sum_j |a_j - b_j|, between the weights normalised to sum 1
    at two percentages; NaN with fewer than two percentages computed."""
    with quiet():
        share = weights / weights.sum("feature", skipna=False)
        other = share.rename(percent="other_percent")
        distance = 0.5 * abs(share - other).sum("feature", skipna=False)
        largest = distance.max(["percent", "other_percent"])
    n_percents = share.notnull().all("feature").sum("percent")
    return largest.where(n_percents >= 2)


# ---------------------------------------------------------------- reading the evidence


def _grid(evidence, selection, data="values", **labels):
    """``evidence``'s ``data`` (values or points) of ``selection`` on exactly the ``labels``
    asked for (dims in that order, then any other, e.g. percent); NaN where the cube has no
    value. The selection's array is kept in ``evidence.grids``, padded with NaN for every
    label asked for so far that the cube lacks, so that each grid is one ``sel``."""
    coords = {dim: list(v) for dim, v in labels.items()}
    source = getattr(evidence, data)
    if source is None or selection not in source.selection.values:
        return xr.DataArray(np.full([len(v) for v in coords.values()], np.nan),
                            coords=coords, dims=list(coords))
    key = (data, selection)
    part = evidence.grids.get(key)
    if part is None:
        part = source.sel(selection=selection, drop=True)
    lacking = {dim: [v for v in dict.fromkeys(values) if v not in part.indexes[dim]]
               for dim, values in coords.items()}
    if any(lacking.values()):
        part = part.reindex({dim: [*part.indexes[dim], *lacking[dim]] for dim in lacking})
    evidence.grids[key] = part
    return part.sel(coords).transpose(*coords, ...)


def _cases(evidence, selection, datasets, algorithms, settings=SETTINGS, data="values"):
    """``values`` (or ``points``) per (family, setting, algorithm[, percent]) on the
    (init, kind) ``settings``; a setting is labelled ``init/kind``."""
    key = (selection, tuple(datasets), tuple(algorithms), tuple(settings), data)
    if key not in evidence.cases:
        evidence.cases[key] = _read_cases(evidence, selection, datasets, algorithms, settings,
                                          data)
    return evidence.cases[key]


def _read_cases(evidence, selection, datasets, algorithms, settings, data):
    inits = list(dict.fromkeys(i for i, _k in settings))
    kinds = list(dict.fromkeys(k for _i, k in settings))
    grid = _grid(evidence, selection, data, family=datasets, algorithm=algorithms,
                 init=inits, kind=kinds)
    at = {"init": xr.DataArray([i for i, _k in settings], dims="setting"),
          "kind": xr.DataArray([k for _i, k in settings], dims="setting")}
    cases = grid.sel(at).drop_vars(["init", "kind"]).assign_coords(
        setting=[f"{i}/{k}" for i, k in settings])
    return cases.transpose("family", "setting", ...)


def _test(tests, selection, name):
    """The rows (cases, datasets) of one test of ``selection``; None where absent."""
    if tests is None or tests.empty:
        return None, None
    rows = tests[(tests.selection == selection) & (tests.test == name)].set_index("level")
    return tuple(rows.loc[level] if level in rows.index else None
                 for level in ("cases", "datasets"))


def _coverage(present, what="cases"):
    """"on k of n <what>" when some units are missing, else ""."""
    k, n = int(present.sum()), int(present.size)
    return "" if k == n else f"on {k} of {n} {what} (the others not computed)"


def _argmax(data):
    """The labels (dim -> label) of the largest value of ``data``, NaN ignored."""
    flat = data.stack(unit=data.dims).dropna("unit")
    largest = flat.isel(unit=int(flat.argmax("unit")))
    return {dim: largest[dim].item() for dim in data.dims}


def _where(data):
    """The labels of the largest value of ``data``, joined by ", "."""
    return ", ".join(map(str, _argmax(data).values()))


def _join(*notes):
    return "; ".join(note for note in notes if note)


def _p(p):
    return "n/a" if np.isnan(p) else f"{p:.2g}"


def _share(holds):
    holds = np.asarray(holds, dtype=bool)
    return f"{holds.mean():.2f} ({int(holds.sum())} of {holds.size})"


def _signed(values):
    return ", ".join("n/a" if np.isnan(v) else f"{v:+.3f}" for v in np.ravel(values))


def _not_testable(reason):
    return Finding("n/a", NOT_TESTABLE, reason)


def _margin(cases, algorithm="PCSKM"):
    """V of ``algorithm`` minus the best V of the others, per case with every algorithm."""
    present = cases.notnull().all("algorithm")
    best_other = cases.drop_sel(algorithm=algorithm).max("algorithm")
    return (cases.sel(algorithm=algorithm) - best_other).where(present), present


def _penalty(evidence, selection, datasets, algorithms=SEMI_SUPERVISED, inits=DETERMINISTIC):
    """V(random) - V(must-link) per (family, algorithm, init): what must-link only costs."""
    grid = _grid(evidence, selection, family=datasets, algorithm=algorithms,
                 init=inits, kind=["random", "must-link"])
    return grid.sel(kind="random") - grid.sel(kind="must-link")


def _init_effect(evidence, selection, algorithms):
    """Per algorithm: the mean over the six data sets of the range (max - min) of V over the
    four inits at kind random; and the mean over data sets and deterministic inits of the
    range of V over the three kinds. Ranges need two values; ``present`` flags the values
    read (a flat array)."""
    by_init = _grid(evidence, selection, algorithm=algorithms, family=SIX, init=INITS,
                    kind=["random"]).squeeze("kind", drop=True)
    by_kind = _grid(evidence, selection, algorithm=algorithms, family=SIX,
                    init=DETERMINISTIC, kind=KINDS)
    with quiet():
        init_range = (by_init.max("init") - by_init.min("init")).where(
            by_init.notnull().sum("init") >= 2).mean("family")
        kind_range = (by_kind.max("kind") - by_kind.min("kind")).where(
            by_kind.notnull().sum("kind") >= 2).mean(["family", "init"])
    present = np.concatenate([by_init.notnull().values.ravel(),
                              by_kind.notnull().values.ravel()])
    return init_range, kind_range, present


# ---------------------------------------------------------------- the claims


def _table1_row(label):
    def judge(evidence, _selection):
        table = evidence.table1
        rows = table if table.empty else table[table.dataset == label]
        if rows.empty:
            return _not_testable(f"Table 1 has no row {label}")
        row = rows.iloc[0]
        if not row.get("actual_from"):  # the data could not be read: nothing was checked
            return _not_testable(f"actual fold 0: {row.actual_fold0}")
        return Finding(row.nominal, REPRODUCED if row.nominal_matches else NOT_REPRODUCED,
                       f"actual fold 0: {row.actual_fold0}")
    return judge


def _order_invariance(_evidence, _selection):
    return _not_testable("every cell processes the points in one order (the data file's); "
                         "the cube holds no run with another order")


def _synthetic_equal(evidence, selection):
    cases = _cases(evidence, selection, BRODINOVA, ALGORITHMS)
    present = cases.notnull().all("algorithm")
    if not present.any():
        return _not_testable("no Brodinova case with all five algorithms in the cube")
    spread = (cases.max("algorithm") - cases.min("algorithm")).where(present)
    worst = cases.sel(_argmax(spread))
    high, low = str(worst.idxmax("algorithm").item()), str(worst.idxmin("algorithm").item())
    largest = float(spread.max())
    where = (f"largest at {_where(spread)}: {high} {float(worst.sel(algorithm=high)):.3f}, "
             f"{low} {float(worst.sel(algorithm=low)):.3f}" if largest > 0
             else "the five algorithms are equal in every case")
    return Finding(f"{largest:.3f}", at_most(largest, TIE_F),
                   _join(where, _coverage(present)))


def _pcskm_most(evidence, selection):
    margin, present = _margin(_cases(evidence, selection, SIX, ALGORITHMS))
    if not present.any():
        return _not_testable("no case of the six data sets with all five algorithms")
    m = margin.values[present.values]
    return Finding(_share(m >= 0), majority(m >= 0), _coverage(present))


def _pcskm_close(evidence, selection):
    margin, present = _margin(_cases(evidence, selection, SIX, ALGORITHMS))
    if not present.any():
        return _not_testable("no case of the six data sets with all five algorithms")
    gap = -margin
    largest = max(float(gap.max()), 0.0)
    where = f"largest at {_where(gap)}" if largest > 0 else "PCSKM is never worse"
    return Finding(f"{largest:.3f}", at_most(largest, SMALL_F),
                   _join(where, _coverage(present)))


def _clear_advantage(evidence, selection):
    datasets = ("ionosphere", "digits 0-4-8")
    margin, present = _margin(_cases(evidence, selection, datasets, ALGORITHMS))
    if not present.any():
        return _not_testable("no case of ionosphere or digits 0-4-8 with all five algorithms")
    m = margin.values[present.values]
    counts = ", ".join(
        f"{d} {int((margin.sel(family=d) > TIE_F).sum())}/{int(present.sel(family=d).sum())}"
        for d in datasets)
    return Finding(f"{counts}; smallest margin {float(margin.min()):+.3f}",
                   everywhere(m > TIE_F), _coverage(present))


def _seeding_helps_mpckm(evidence, selection):
    datasets = ("fisheriris", "digits 3-8-9", "TT-SC-ST")
    grid = _grid(evidence, selection, family=datasets, algorithm=["MPCKM"],
                 init=["seeding", "dkm++"], kind=["random"]).squeeze(["algorithm", "kind"])
    gain = grid.sel(init="seeding") - grid.sel(init="dkm++")
    present = gain.notnull()
    if not present.any():
        return _not_testable("MPCKM with Seeding and DKM++ (random) not in the cube for "
                             "fisheriris, digits 3-8-9 or TT-SC-ST")
    g = gain.values[present.values]
    return Finding(_signed(gain.values), everywhere(g > 0),
                   _coverage(present, "data sets"))


def _must_link_hurts(evidence, selection):
    penalty = _penalty(evidence, selection, NOT_DIGITS).mean("init", skipna=False)
    present = penalty.notnull()
    if not present.any():
        return _not_testable("must-link and random not both in the cube for ionosphere, "
                             "fisheriris, TT-SC-ST or TT-CH-ST")
    p = penalty.values[present.values]
    return Finding(f"{_share(p > 0)}; smallest {p.min():+.3f}", everywhere(p > 0),
                   _coverage(present, "(data set, algorithm) pairs"))


def _must_link_digits(evidence, selection):
    penalty = _penalty(evidence, selection, SIX).mean(["algorithm", "init"], skipna=False)
    digits, others = penalty.sel(family=list(DIGITS)), penalty.sel(family=list(NOT_DIGITS))
    present = digits.notnull()
    if not present.any():
        return _not_testable("must-link and random not both in the cube for the digits")
    d, others = digits.values[present.values], others.values[others.notnull().values]
    value = f"digits {_signed(digits.values)}" + (
        f"; others {others.min():+.3f} to {others.max():+.3f}" if others.size else "")
    return Finding(value, everywhere(d <= TIE_F),
                   _coverage(present, "digits sets"))


def _init_against_kind(algorithms, init_less):
    """A claim on the init effect minus the kind effect of each of ``algorithms``: below 0
    (``init_less``) or not below 0."""
    def judge(evidence, selection):
        init_range, kind_range, present = _init_effect(evidence, selection, algorithms)
        if init_range.isnull().any() or kind_range.isnull().any():
            return _not_testable("two inits (kind random) and two kinds (a deterministic "
                                 f"init) are needed for {', '.join(algorithms)}")
        lead = (init_range - kind_range).values  # < 0: the init matters less than the kind
        holds = lead < 0 if init_less else lead >= 0
        value = ", ".join(f"{a} {float(init_range.sel(algorithm=a)):.3f}/"
                          f"{float(kind_range.sel(algorithm=a)):.3f}" for a in algorithms)
        return Finding(value, everywhere(holds), _coverage(present, "case values"))
    return judge


def _pcskm_robust_to_init(evidence, selection):
    init_range, _kind_range, present = _init_effect(evidence, selection, ALGORITHMS)
    if init_range.isnull().any():
        return _not_testable("two inits with kind random are needed for every algorithm")
    mine = float(init_range.sel(algorithm="PCSKM"))
    others = init_range.drop_sel(algorithm="PCSKM")
    value = ", ".join(f"{a} {float(init_range.sel(algorithm=a)):.3f}" for a in ALGORITHMS)
    return Finding(value, everywhere(mine < others),
                   _coverage(present, "case values"))


def _conclusions_by_init(evidence, selection):
    """Per deterministic init: the share of its cases (six data sets x three kinds) where
    PCSKM is best, and the share of (data set, algorithm) pairs outside the digits where
    must-link only costs F."""
    best, hurt = {}, {}
    for init in DETERMINISTIC:
        margin, present = _margin(_cases(evidence, selection, SIX, ALGORITHMS,
                                         settings=[(init, k) for k in KINDS]))
        if present.any():
            best[init] = float((margin.values[present.values] >= 0).mean())
        penalty = _penalty(evidence, selection, NOT_DIGITS, inits=[init])
        if penalty.notnull().any():
            hurt[init] = float((penalty.values[penalty.notnull().values] > 0).mean())
    return best, hurt


def _similar_conclusions(evidence, selection):
    best, hurt = _conclusions_by_init(evidence, selection)
    holds, parts = [], []
    for name, shares in (("PCSKM best", best), ("must-link hurts", hurt)):
        if "dkm++" not in shares or len(shares) < 2:
            continue
        reference = shares["dkm++"] > 0.5
        differ = [s for init, s in shares.items() if (s > 0.5) != reference]
        holds.append(not differ)
        parts.append(f"{name} " + "/".join(f"{shares[i]:.2f}" if i in shares else "n/a"
                                           for i in DETERMINISTIC))
    if not holds:
        return _not_testable("DKM++ and ROBIN(D) or Maximin(D) are needed")
    return Finding("; ".join(parts), everywhere(holds))


def _every_number(evidence, selection):
    points = _cases(evidence, selection, SIX, ["PCSKM", "PCKM", "MPCKM"], data="points")
    present = points.notnull().all("algorithm")
    if not present.any():
        return _not_testable("no point of the six data sets with PCSKM, PCKM and MPCKM")
    best_other = points.sel(algorithm=["PCKM", "MPCKM"]).max("algorithm")
    holds = (points.sel(algorithm="PCSKM") >= best_other - TIE_F) & present
    units = ["family", "setting"]
    counted = present.sum(units)
    share = (holds.sum(units) / counted).where(counted > 0)
    lowest = float(share.min())
    return Finding(
        f"lowest {lowest:.2f} (at {float(share.idxmin()):g} %); all points "
        f"{float(holds.sum() / present.sum()):.2f}",
        at_least(lowest, EVERY_POINT), _coverage(present, "points"))


def _best_on_average(evidence, selection):
    cases = _cases(evidence, selection, SIX, ALGORITHMS)
    present = cases.notnull().all("algorithm")
    if not present.any():
        return _not_testable("no case of the six data sets with all five algorithms")
    means = cases.where(present).mean(["family", "setting"])
    runner_up = means.drop_sel(algorithm="PCSKM")
    second = str(runner_up.idxmax("algorithm").item())
    margin = float(means.sel(algorithm="PCSKM") - runner_up.max())
    return Finding(f"{margin:+.3f} (PCSKM {float(means.sel(algorithm='PCSKM')):.3f}, {second} "
                   f"{float(runner_up.max()):.3f})", everywhere([margin > 0]),
                   _coverage(present))


def _mpckm_seeding_on_par(evidence, selection):
    datasets = ("fisheriris", "digits 3-8-9", "TT-SC-ST", "TT-CH-ST")
    grid = _grid(evidence, selection, family=datasets, algorithm=["MPCKM", "PCSKM"],
                 init=["seeding"], kind=["random"]).squeeze(["init", "kind"])
    lead = grid.sel(algorithm="MPCKM") - grid.sel(algorithm="PCSKM")
    present = lead.notnull()
    if not present.any():
        return _not_testable("MPCKM and PCSKM with Seeding not in the cube for fisheriris, "
                             "digits 3-8-9, TT-SC-ST or TT-CH-ST")
    d = lead.values[present.values]
    return Finding(_signed(lead.values), everywhere(d >= -TIE_F),
                   _coverage(present, "data sets"))


def _seeding_mostly_helps_mpckm(evidence, selection):
    grid = _grid(evidence, selection, family=SIX, algorithm=["MPCKM"], init=INITS,
                 kind=["random"]).squeeze(["algorithm", "kind"])
    gain = grid.sel(init="seeding", drop=True) - grid.sel(init=list(DETERMINISTIC))
    present = gain.notnull()
    if not present.any():
        return _not_testable("MPCKM with Seeding and a deterministic init not in the cube")
    g = gain.values[present.values]
    return Finding(_share(g > 0), majority(g > 0),
                   _coverage(present, "(data set, init) pairs"))


def _pcskm_copes_with_must_link(evidence, selection):
    penalty = _penalty(evidence, selection, SIX)
    present = penalty.notnull().all("algorithm")
    if not present.any():
        return _not_testable("must-link and random not both in the cube for PCKM, MPCKM and "
                             "PCSKM")
    mean = penalty.where(present).mean(["family", "init"])
    mine, others = float(mean.sel(algorithm="PCSKM")), mean.sel(algorithm=["PCKM", "MPCKM"])
    value = ", ".join(f"{a} {float(mean.sel(algorithm=a)):+.3f}" for a in SEMI_SUPERVISED)
    return Finding(value, everywhere(mine < 0.5 * others),
                   _coverage(present, "(data set, init) pairs"))


def _close_to_mpckm(evidence, selection):
    cases = _cases(evidence, selection, ("TT-SC-ST", "TT-CH-ST"), ["MPCKM", "PCSKM"])
    lead = cases.sel(algorithm="MPCKM") - cases.sel(algorithm="PCSKM")
    present = lead.notnull()
    if not present.any():
        return _not_testable("MPCKM and PCSKM not in the cube for TT-SC-ST or TT-CH-ST")
    largest = float(lead.max())
    return Finding(f"{largest:+.3f}", at_most(largest, SMALL_F),
                   _join(f"largest at {_where(lead)}", _coverage(present)))


def _panels(evidence, datasets, algorithm, measure):
    """``measure`` of ``algorithm``'s weights per panel of ``datasets`` (the paper's inits
    and kinds), as a table (family, init, kind, [percent,] value) of the computed panels
    (the weights are the same under every selection: kept in ``evidence.panels``)."""
    key = (tuple(datasets), algorithm, measure)
    if key not in evidence.panels:
        evidence.panels[key] = _panel_table(evidence, datasets, algorithm, measure)
    return evidence.panels[key]


def _panel_table(evidence, datasets, algorithm, measure):
    frames = []
    for label in datasets:
        weights = evidence.weights.get(label)
        if weights is None or algorithm not in weights.algorithm.values:
            continue
        weights = weights.sel(algorithm=algorithm, drop=True)
        weights = weights.sel(init=[i for i in weights.init.values if i in INITS],
                              kind=[k for k in weights.kind.values if k in KINDS])
        frame = measure(weights).rename("value").to_dataframe().reset_index()
        frames.append(frame.dropna(subset="value").assign(family=label))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _panel_share(datasets, algorithm, measure, rule):
    """A claim on the share of the panels where ``measure`` holds: ``rule`` maps the share
    per init (a Series) to a verdict."""
    def judge(evidence, _selection):
        table = _panels(evidence, datasets, algorithm, measure)
        if table.empty:
            return _not_testable(f"no {algorithm} weights of {', '.join(datasets)} in the cube")
        per_init = table.groupby("init").value.mean()
        absent = [d for d in datasets if d not in set(table.family)]
        return Finding(f"{_share(table.value == 1)}; per init {per_init.min():.2f} to "
                       f"{per_init.max():.2f}", rule(per_init),
                       f"no panel of {', '.join(absent)}" if absent else "")
    return judge


def _constraints_do_not_move_weights(evidence, _selection):
    table = _panels(evidence, WEIGHT_SETS, "PCSKM", percent_drift)
    if table.empty:
        return _not_testable("no PCSKM weights at two percentages of a Brodinova or MWM set")
    row = table.loc[table.value.idxmax()]
    return Finding(f"{row.value:.3f}", at_most(row.value, DRIFT),
                   f"largest at {row.family}, {row.init}, {row.kind}")


def _every_s(_evidence, _selection):
    return _not_testable("the cube keeps each cell's weights averaged over the s grid, not "
                         "per s (docs/method/protocol.md §11)")


def _all_panels(share):
    return at_least(share.min(), SEPARATED)


def _no_panel(share):
    return at_most(share.max(), UNSEPARATED)


# the measures a descriptive or best-on-average claim names in its ``test``
MEASURES = {
    "methods-order": _order_invariance,
    "synthetic-equal": _synthetic_equal,
    "pcskm-most": _pcskm_most,
    "pcskm-close": _pcskm_close,
    "must-link-hurts": _must_link_hurts,
    "must-link-digits": _must_link_digits,
    "robin-maximin-similar": _similar_conclusions,
    "weights-every-s": _every_s,
    "weights-skm": _panel_share(WEIGHT_SETS, "SKM", separated, _all_panels),
    "weights-pcskm": _panel_share(WEIGHT_SETS, "PCSKM", separated, _all_panels),
    "weights-pcskm-constraints": _constraints_do_not_move_weights,
    "weights-mpckm": _panel_share(WEIGHT_SETS, "MPCKM", separated, _no_panel),
    "weights-pcskm-contaminated": _panel_share(CONTAMINATED, "PCSKM", separated, _all_panels),
    "weights-mpckm-contaminated": _panel_share(CONTAMINATED, "MPCKM", heavier_uninformative,
                                               _all_panels),
    "clear-advantage": _clear_advantage,
    "seeding-helps-mpckm": _seeding_helps_mpckm,
    "init-less-than-kind": _init_against_kind(("PCKM", "PCSKM"), init_less=True),
    "init-mpckm-exception": _init_against_kind(("MPCKM",), init_less=False),
    "pcskm-robust-to-init": _pcskm_robust_to_init,
    "every-number": _every_number,
    "best-on-average": _best_on_average,
    "mpckm-seeding-on-par": _mpckm_seeding_on_par,
    "seeding-mostly-helps-mpckm": _seeding_mostly_helps_mpckm,
    "pcskm-copes-with-must-link": _pcskm_copes_with_must_link,
    "close-to-mpckm-mwm": _close_to_mpckm,
}


# ---------------------------------------------------------------- the claims file


def read_claims(path=PAPER_CLAIMS):
    """The claims of the CSV file at ``path`` (columns :data:`COLUMNS`, docs/guide/
    paper-study.md, "The claims file"), in its order; a malformed row raises one ValueError
    naming the file, the line, the claim and the column."""
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [column for column in COLUMNS if column not in table]
    if missing:
        raise ValueError(f"{path}: no column {', '.join(map(repr, missing))}")
    ids = list(table.id)
    claims = []
    for line, row in enumerate(table.itertuples(index=False), start=2):
        claims.append(_claim(row, f"{path}, line {line} (claim {row.id!r})", ids))
    return tuple(claims)


def _claim(row, where, ids):
    """The :class:`Claim` of one row of the claims file, checked."""
    def bad(column, problem):
        return ValueError(f"{where}, column {column!r}: {problem}")

    for column in REQUIRED:
        if not getattr(row, column).strip():
            raise bad(column, "is empty")
    if ids.count(row.id) > 1:
        raise bad("id", "appears more than once")
    if row.kind not in CLAIM_KINDS:
        raise bad("kind", f"{row.kind!r} is not one of {CLAIM_KINDS}")
    if row.kind in (DIFFERENCE, NO_DIFFERENCE) and row.test not in WILCOXON_TESTS:
        raise bad("test", f"{row.test!r} is not a Wilcoxon test of the report "
                          f"{WILCOXON_TESTS}")
    if row.kind in (BEST_ON_AVERAGE, DESCRIPTIVE) and row.test not in MEASURES:
        raise bad("test", f"{row.test!r} is not a measure of claims.MEASURES")
    if row.kind == TABLE_VALUE and (row.test != "table1" or row.scope not in PRINTED):
        raise bad("scope", f"a table value names test 'table1' and a Table 1 row of "
                           f"{tuple(PRINTED)}, not {row.test!r}, {row.scope!r}")
    if row.kind == DIFFERENCE:
        sides = row.test.split(" vs ")
        if row.favoured not in sides:
            raise bad("favoured", f"{row.favoured!r} is not a side of {row.test!r}")
    elif row.kind == NO_DIFFERENCE and row.favoured:
        raise bad("favoured", "a claim of no difference favours no side")
    requires = tuple(r for r in row.requires.split(";") if r)
    for other in requires:
        if other not in ids or other == row.id:
            raise bad("requires", f"{other!r} is not another claim of the file")
    if requires and row.kind != BEST_ON_AVERAGE:
        raise bad("requires", f"only a {BEST_ON_AVERAGE!r} claim rests on other claims")
    return Claim(row.id, row.section, row.claim, row.kind, row.test, row.favoured, requires,
                 row.scope, row.measure, row.paper_value)


# ---------------------------------------------------------------- the verdict rule


def _rows(tests, selection, name, level):
    """The row of one Wilcoxon test of ``selection`` at ``level``; None where absent."""
    if tests is None or tests.empty:
        return None
    rows = tests[(tests.selection == selection) & (tests.test == name) & (tests.level == level)]
    return rows.iloc[0] if len(rows) else None


def _complete(row):
    return row is not None and row.n > 0 and row.not_computed == 0


def family_p(claims, tests, selection, level):
    """Holm-adjusted p per Wilcoxon test of the ``difference`` claims of ``selection`` at
    ``level``: the claims table's family (docs/guide/paper-study.md, "The verdict rule");
    a test not computed on all of its cases is left out of the family."""
    names = list(dict.fromkeys(c.test for c in claims if c.kind == DIFFERENCE))
    rows = [_rows(tests, selection, name, level) for name in names]
    p = [row.p_value if _complete(row) else np.nan for row in rows]
    return dict(zip(names, inference.holm(p), strict=True)), int(np.sum(~np.isnan(p)))


def _wilcoxon(claim, evidence, selection, level, alpha, family):
    """The verdict of a claim of a (no) difference from the same test at ``level``."""
    row = _rows(evidence.tests, selection, claim.test, level)
    if row is None or row.n == 0:
        return _not_testable(f"no {claim.test} test at the {level} level")
    if row.not_computed > 0:
        computed = row.n_cases - row.not_computed
        return _not_testable(f"{computed} of {row.n_cases} cases computed (a p-value on fewer "
                             f"cases answers another question)")
    cases = _rows(evidence.tests, selection, claim.test, "cases")
    context = (f"cases: p = {_p(cases.p_holm)} (Holm over the report's {cases.holm_m} tests), "
               f"favours {cases.direction}" if cases is not None and level != "cases" else "")
    dropped = f"{row.dropped_nan} cases dropped (V = NaN)" if row.dropped_nan else ""
    if row.n_nonzero == 0:
        verdict = NOT_REPRODUCED if claim.kind == DIFFERENCE else REPRODUCED
        return Finding("n/a", verdict, _join("every difference is 0", dropped))
    if claim.kind == NO_DIFFERENCE:
        p = row.p_value
        verdict = CONTRADICTED if p < alpha else REPRODUCED
        return Finding(f"p = {_p(p)}, favours {row.direction}", verdict, _join(
            f"not adjusted; n = {row.n} at the {level} level", context, dropped), p)
    p, m = family[0][claim.test], family[1]
    verdict = (NOT_REPRODUCED if not p < alpha
               else REPRODUCED if row.direction == claim.favoured else CONTRADICTED)
    return Finding(f"p = {_p(p)}, favours {row.direction}", verdict, _join(
        f"Holm over the {m} difference claims; n = {row.n} at the {level} level", context,
        dropped), p)


def judge(claim, evidence, selection, level=LEVEL, alpha=ALPHA, family=None):
    """The :class:`Finding` of ``claim`` under ``selection``, before its requirements
    (:func:`require`); ``family``: :func:`family_p` of the selection and level."""
    if claim.kind in (DIFFERENCE, NO_DIFFERENCE):
        return _wilcoxon(claim, evidence, selection, level, alpha, family)
    if claim.kind == TABLE_VALUE:
        return _table1_row(claim.scope)(evidence, selection)
    return MEASURES[claim.test](evidence, selection)


def require(claims, findings):
    """``findings`` (id -> Finding of one selection) with each claim that rests on others
    (``requires``) judged on them too: contradicted if one is contradicted; else not
    reproduced if its own measure or one of them is not reproduced; else not testable if one
    is not testable; else its own verdict."""
    out = dict(findings)
    for claim in claims:
        if not claim.requires:
            continue
        own = findings[claim.id]
        verdicts = {findings[other].verdict for other in claim.requires}
        verdict = (own.verdict if own.verdict == NOT_TESTABLE
                   else CONTRADICTED if CONTRADICTED in verdicts
                   else NOT_REPRODUCED if NOT_REPRODUCED in {own.verdict, *verdicts}
                   else NOT_TESTABLE if NOT_TESTABLE in verdicts else own.verdict)
        out[claim.id] = Finding(own.value, verdict, own.note, own.p)
    return out


def check_consistent(table, claims):
    """Raise ValueError if a verdict of the claims ``table`` contradicts another row's: a claim
    reproduced while a claim it requires is not, or a claim of no difference reproduced while
    a claim of a difference on the same test is, under one selection."""
    rows = table.set_index("id")
    columns = [c for c in table if c.startswith("verdict_")]
    problems = []
    for claim, column in itertools.product(claims, columns):
        verdict = rows.at[claim.id, column]
        for other in claim.requires:
            if verdict == REPRODUCED and rows.at[other, column] != REPRODUCED:
                problems.append(f"{claim.id} is reproduced but {other} is "
                                f"{rows.at[other, column]} ({column})")
        if claim.kind == NO_DIFFERENCE and verdict == REPRODUCED:
            problems += [f"{claim.id} (no difference) and {other.id} (a difference) are both "
                         f"reproduced ({column})" for other in claims
                         if other.kind == DIFFERENCE and other.test == claim.test
                         and rows.at[other.id, column] == REPRODUCED]
    if problems:
        raise ValueError("the claims table contradicts itself: " + "; ".join(problems))


def primary_selection(selections, primary=None):
    """The selection whose verdicts lead: ``primary`` (the spec's pre-registered rule) if
    given, else the first of :data:`DEFAULT_PRIMARY` in ``selections``."""
    if primary is not None:
        if primary not in selections:
            raise ValueError(f"the primary selection {primary!r} is not in the cube "
                             f"({', '.join(selections)})")
        return primary
    return next((s for s in DEFAULT_PRIMARY if s in selections), selections[0])


def _notes(findings):
    """One note for the row: the selections' notes, named when they differ."""
    notes = {name: f.note for name, f in findings.items()}
    if len(set(notes.values())) == 1:
        return next(iter(notes.values()))
    return "; ".join(f"{name}: {note}" for name, note in notes.items() if note)


def _table(claims, findings, primary):
    """The claims table from ``findings`` (selection -> id -> Finding), checked."""
    rows = []
    for claim in claims:
        row = {"id": claim.id, "section": claim.section, "claim": claim.claim,
               "kind": claim.kind, "scope": claim.scope, "measure": claim.measure,
               "requires": ";".join(claim.requires), "paper_value": claim.paper_value,
               "primary": primary,
               "verdict": findings[primary][claim.id].verdict}
        for name, found in findings.items():
            finding = found[claim.id]
            row |= {f"value_{name}": finding.value, f"p_{name}": finding.p,
                    f"verdict_{name}": finding.verdict}
        rows.append(row | {"note": _notes({s: f[claim.id] for s, f in findings.items()})})
    table = pd.DataFrame(rows)
    check_consistent(table, claims)
    return table


def evaluate(evidence, claims=None, primary=None, level=LEVEL, alpha=ALPHA):
    """The claims table: one row per claim (id, section, claim, kind, scope, measure,
    requires, paper_value), the ``primary`` selection and its ``verdict``, then per selection
    ``value_<s>``, ``p_<s>`` and ``verdict_<s>``, then the ``note``; every verdict by the
    rule of docs/guide/paper-study.md, "The verdict rule", at ``level`` and ``alpha``."""
    claims = CLAIMS if claims is None else claims
    primary = primary_selection(evidence.selections, primary)
    findings = {}
    for selection in evidence.selections:
        family = family_p(claims, evidence.tests, selection, level)
        findings[selection] = require(claims, {
            c.id: judge(c, evidence, selection, level, alpha, family) for c in claims})
    return _table(claims, findings, primary)


def table(results, table1, tests, primary=None, level=LEVEL, alpha=ALPHA):
    """The claims table of the report's ``results`` (see :func:`evaluate`)."""
    return evaluate(evidence(results, table1, tests), primary=primary, level=level,
                    alpha=alpha)


def write_section(doc, table, level=LEVEL, alpha=ALPHA):
    """The claims section of report.md (after its heading) into ``doc`` (markdown.Document):
    the rule at ``level`` and ``alpha``, the paper-style and honest selections' values, every
    selection's verdicts, the measures."""
    doc.paragraph(
        "Every claim the paper makes about its experiments, the paper's own value, the number "
        "that tests it and, for each best-s selection, our number and a verdict: "
        + ", ".join(VERDICTS) + " (docs/guide/paper-study.md, \"The verdict rule\"). A "
        f"claimed difference is reproduced only if the same Wilcoxon test at the {level} level "
        f"is significant at {alpha} after Holm over the table's difference claims, in the "
        "claimed direction; \"best on average\" also needs the tests behind it. The primary "
        f"selection's verdict leads (`verdict`, under `{table.primary.iloc[0]}`); the rule of "
        "each claim is listed below the tables. A claim judged on part of its data says so in "
        "the note; one with none of its data in the cube is \"not testable\".")
    untestable = table.filter(like="verdict").eq(NOT_TESTABLE).all(axis=1)
    if untestable.any():
        doc.paragraph(f"Not testable on this cube under any selection (the reason of each: "
                      f"`claims.csv`, column `note`): {', '.join(table.id[untestable])}.")
    table = table[~untestable]
    shown = table[["id", "claim", "paper_value", "verdict",
                   *(f"{what}_{name}" for name in ("paper", "honest")
                     for what in ("value", "p", "verdict") if f"{what}_{name}" in table),
                   "note"]]
    doc.paragraph("Below: the paper-style and honest selections; the verdicts under every "
                  "selection follow, and every number is in `claims.csv`.")
    doc.table(shown.astype(object).where(shown.notna(), ""))
    verdicts = table[["id", *(f"verdict_{name}" for name in ORDER
                              if f"verdict_{name}" in table)]]
    doc.table(verdicts.rename(columns=lambda c: c.removeprefix("verdict_")))
    doc.paragraph("**Measures and rules**")
    doc.bullets([f"`{row.id}` ({row.section}, {row.kind}): {row.measure}"
                 for row in table.itertuples()])


# ---------------------------------------------------------------- from a committed report

# a committed verdict under the verdict rule; the tables written before it had a
# "borderline" tier, now "not reproduced" (a descriptive claim's measure and its threshold
# for "reproduced" are unchanged)
_FORMER = {**{verdict: verdict for verdict in VERDICTS}, "borderline": NOT_REPRODUCED}


def recompute(directory, primary=None, level=LEVEL, alpha=ALPHA, claims=None):
    """The claims table of the committed report in ``directory`` by the verdict rule, from its
    ``wilcoxon_tests.csv`` (every Wilcoxon claim, judged again) and its former
    ``claims.csv`` (every other claim's value and note; a former "borderline" is now "not
    reproduced", docs/guide/paper-study.md, "The verdict rule")."""
    directory = Path(directory)
    claims = CLAIMS if claims is None else claims
    tests = pd.read_csv(directory / "wilcoxon_tests.csv")
    former = pd.read_csv(directory / "claims.csv", dtype=str,
                         keep_default_na=False).set_index("id")
    selections = tuple(c.removeprefix("verdict_") for c in former if c.startswith("verdict_"))
    evidence = Evidence(selections, pd.DataFrame(), tests, None, None, {})
    primary = primary_selection(selections, primary)
    findings = {}
    for selection in selections:
        family = family_p(claims, tests, selection, level)
        found = {}
        for claim in claims:
            if claim.kind in (DIFFERENCE, NO_DIFFERENCE):
                found[claim.id] = judge(claim, evidence, selection, level, alpha, family)
            else:
                row = former.loc[claim.id]
                found[claim.id] = Finding(row[f"value_{selection}"],
                                          _FORMER[row[f"verdict_{selection}"]], row.note)
        findings[selection] = require(claims, found)
    return _table(claims, findings, primary)


CLAIMS = read_claims()

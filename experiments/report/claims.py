"""The claims table (docs/guide/paper-study.md, "The claims table"): every claim the paper makes
about its experiments, the number that tests it, the rule that maps that number to a verdict of
:data:`VERDICTS`, and our number and verdict under each best-s selection of the cube.

A claim is a :class:`Claim` whose ``judge(evidence, selection)`` returns a :class:`Finding`;
:data:`CLAIMS` lists them all, in the paper's order. :func:`evidence` gathers what they read
from the report's results (the case values V, the mean F per point, the Wilcoxon tests at both
levels, the mean feature weights, Table 1); :func:`evaluate` judges every claim under every
selection of an :class:`Evidence`. A claim none of whose data is in the cube is "not testable",
with the reason in the ``note``; one judged on part of its data says so in the ``note``.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from . import families, performance, statistics
from .constraint_table import PRINTED
from .fits import quiet
from .selection import SELECTIONS

VERDICTS = ("reproduced", "not reproduced", "borderline", "not testable")
REPRODUCED, NOT_REPRODUCED, BORDERLINE, NOT_TESTABLE = VERDICTS

# The thresholds of the rules (docs/guide/paper-study.md, "The claims table").
ALPHA = 0.05  # the paper's significance level
BORDERLINE_P = 0.10  # p in [ALPHA, BORDERLINE_P): borderline
TIE_F = 0.02  # two mean F-scores closer than this are "equal" / "on par"
SMALL_F = 0.05  # a difference in mean F up to this is "relatively small" / "close"
SEPARATED, SEPARATED_BORDERLINE = 0.95, 0.80  # share of weight panels separated: "all"
UNSEPARATED, UNSEPARATED_BORDERLINE = 0.05, 0.20  # ... "none"
DRIFT, DRIFT_BORDERLINE = 0.10, 0.20  # total-variation distance of the weights over percentages
EVERY_POINT, EVERY_POINT_BORDERLINE = 0.75, 0.50  # share of points, at the worst percentage
NEAR_HALF = 0.10  # a share within this of 1/2 is a near tie between "most" and "not most"

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


@dataclass(frozen=True)
class Finding:
    """One claim under one selection: ``value`` (a number or a short numeric summary), the
    ``verdict`` (a word of :data:`VERDICTS`), a ``note`` (where, on how much of the data, or
    why not testable) and, for the Wilcoxon claims, the data-set-level p."""

    value: str
    verdict: str
    note: str = ""
    p_datasets: float = np.nan

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")


@dataclass(frozen=True)
class Claim:
    """A claim of the paper: ``id``, where the paper makes it (``section``), the ``claim`` in
    short words, the ``measure`` (the number and the rule that maps it to a verdict) and
    ``judge(evidence, selection) -> Finding``."""

    id: str
    section: str
    claim: str
    measure: str
    judge: Callable


@dataclass(frozen=True)
class Evidence:
    """What the claims read: the cube's ``selections``; ``table1`` (constraint_table.table);
    ``tests`` (statistics.analyses: every selection, both levels); ``values``, V per
    (selection, family, algorithm, init, kind), and ``points``, the mean F per (selection,
    family, algorithm, init, kind, percent), NaN where not complete (None: nothing computed);
    ``weights``: per family label, the mean weights (algorithm, init, kind, percent, feature)
    with the ``uninformative`` coordinate."""

    selections: tuple
    table1: pd.DataFrame
    tests: pd.DataFrame
    values: xr.DataArray | None
    points: xr.DataArray | None
    weights: dict


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
        weights={label: w["mean"] for label, w in results.family_weights.items()})


# ---------------------------------------------------------------- rules


def at_least(x, full, partial):
    """reproduced if ``x >= full``, borderline if ``x >= partial``, else not reproduced."""
    return REPRODUCED if x >= full else BORDERLINE if x >= partial else NOT_REPRODUCED


def at_most(x, full, partial):
    """reproduced if ``x <= full``, borderline if ``x <= partial``, else not reproduced."""
    return REPRODUCED if x <= full else BORDERLINE if x <= partial else NOT_REPRODUCED


def everywhere(holds, nearly):
    """A claim about every unit: reproduced if it ``holds`` at every unit, borderline if it
    holds ``nearly`` (within the claim's tolerance) at every unit, else not reproduced."""
    holds = np.asarray(holds, dtype=bool)
    nearly = np.asarray(nearly, dtype=bool) | holds
    return REPRODUCED if holds.all() else BORDERLINE if nearly.all() else NOT_REPRODUCED


def majority(holds, nearly):
    """A claim about most units: reproduced if it ``holds`` at more than half of them,
    borderline if it holds ``nearly`` at more than half, else not reproduced."""
    holds = np.asarray(holds, dtype=bool)
    nearly = np.asarray(nearly, dtype=bool) | holds
    return (REPRODUCED if holds.mean() > 0.5 else BORDERLINE if nearly.mean() > 0.5
            else NOT_REPRODUCED)


def _untestable(cases, p_column):
    """The Finding of a test not computed on all of the paper's cases, else None."""
    if cases is None or cases.n == 0:
        return Finding("n/a", NOT_TESTABLE, "no case of the test is computed")
    if cases.not_computed > 0:
        computed = cases.n_cases - cases.not_computed
        return Finding("n/a", NOT_TESTABLE, (
            f"{computed} of {cases.n_cases} cases computed (a p-value on fewer cases answers "
            f"another question); on them p = {_p(cases[p_column])}, favours "
            f"{cases.direction}"))
    return None


def _dropped(cases):
    return (f"{cases.dropped_nan} cases dropped (V = NaN)" if cases.dropped_nan else "")


def difference_verdict(cases, datasets, favoured):
    """A claim "x and y differ, in ``favoured``'s favour" from a test's rows at the cases and
    at the data-set level (rows of statistics.analyses, or None). Value: the case-level
    Holm-adjusted p. reproduced if it is below ALPHA in ``favoured``'s favour and the data
    sets favour the same side; borderline if it is below ALPHA but the data sets favour the
    other side (or none), or if it is in [ALPHA, BORDERLINE_P) in ``favoured``'s favour; not
    reproduced otherwise (a larger p, or the cases favour the other side)."""
    missing = _untestable(cases, "p_holm")
    if missing:
        return missing
    p_sets = datasets.p_value if datasets is not None else np.nan
    if cases.n_nonzero == 0:
        return Finding("n/a", NOT_REPRODUCED, "every difference is 0", p_sets)
    p, notes = cases.p_holm, [_dropped(cases)]
    if cases.direction != favoured:
        verdict = NOT_REPRODUCED
        notes.append(f"the cases favour {cases.direction}")
    elif p < ALPHA:
        sets_agree = datasets is not None and datasets.direction == favoured
        verdict = REPRODUCED if sets_agree else BORDERLINE
        if not sets_agree:
            notes.append("the data sets favour "
                         f"{datasets.direction if datasets is not None else 'nothing'}")
    else:
        verdict = BORDERLINE if p < BORDERLINE_P else NOT_REPRODUCED
    return Finding(_p(p), verdict, _join(*notes), p_sets)


def no_difference_verdict(cases, datasets):
    """A claim "x and y do not differ" from a test's rows at both levels. Value: the
    case-level p without adjustment (Holm would make "no difference" easier to reach).
    reproduced if it is at least BORDERLINE_P (or every difference is 0) and the data sets'
    p is at least ALPHA; borderline if it is in [ALPHA, BORDERLINE_P), or if the data sets'
    p is below ALPHA; not reproduced if it is below ALPHA."""
    missing = _untestable(cases, "p_value")
    if missing:
        return missing
    p_sets = datasets.p_value if datasets is not None else np.nan
    notes = [_dropped(cases)]
    if cases.n_nonzero == 0:
        return Finding("n/a", REPRODUCED, _join("every difference is 0", *notes), p_sets)
    p = cases.p_value
    if p < ALPHA:
        verdict = NOT_REPRODUCED
        notes.append(f"the cases favour {cases.direction}")
    elif p < BORDERLINE_P:
        verdict = BORDERLINE
    elif p_sets < ALPHA:
        verdict = BORDERLINE
        notes.append(f"the data sets favour {datasets.direction}")
    else:
        verdict = REPRODUCED
    return Finding(_p(p), verdict, _join(*notes), p_sets)


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


def _grid(data, selection, **labels):
    """``data`` (values or points) of ``selection`` on exactly the ``labels`` asked for
    (dims in that order, then any other, e.g. percent); NaN where the cube has no value."""
    coords = {dim: list(v) for dim, v in labels.items()}
    if data is None or selection not in data.selection.values:
        return xr.DataArray(np.full([len(v) for v in coords.values()], np.nan),
                            coords=coords, dims=list(coords))
    part = data.sel(selection=selection, drop=True).reindex(coords)
    return part.transpose(*coords, ...)


def _cases(evidence, selection, datasets, algorithms, settings=SETTINGS, data="values"):
    """``values`` (or ``points``) per (family, setting, algorithm[, percent]) on the
    (init, kind) ``settings``; a setting is labelled ``init/kind``."""
    inits = list(dict.fromkeys(i for i, _k in settings))
    kinds = list(dict.fromkeys(k for _i, k in settings))
    grid = _grid(getattr(evidence, data), selection, family=datasets, algorithm=algorithms,
                 init=inits, kind=kinds)
    cases = xr.concat([grid.sel(init=i, kind=k, drop=True) for i, k in settings],
                      dim=pd.Index([f"{i}/{k}" for i, k in settings], name="setting"))
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
    grid = _grid(evidence.values, selection, family=datasets, algorithm=algorithms,
                 init=inits, kind=["random", "must-link"])
    return grid.sel(kind="random") - grid.sel(kind="must-link")


def _init_effect(evidence, selection, algorithms):
    """Per algorithm: the mean over the six data sets of the range (max - min) of V over the
    four inits at kind random; and the mean over data sets and deterministic inits of the
    range of V over the three kinds. Ranges need two values; ``present`` flags the values
    read (a flat array)."""
    by_init = _grid(evidence.values, selection, algorithm=algorithms, family=SIX, init=INITS,
                    kind=["random"]).squeeze("kind", drop=True)
    by_kind = _grid(evidence.values, selection, algorithm=algorithms, family=SIX,
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
    return Finding(f"{largest:.3f}", at_most(largest, TIE_F, 2 * TIE_F),
                   _join(where, _coverage(present)))


def _pcskm_most(evidence, selection):
    margin, present = _margin(_cases(evidence, selection, SIX, ALGORITHMS))
    if not present.any():
        return _not_testable("no case of the six data sets with all five algorithms")
    m = margin.values[present.values]
    return Finding(_share(m >= 0), majority(m >= 0, m >= -TIE_F), _coverage(present))


def _pcskm_close(evidence, selection):
    margin, present = _margin(_cases(evidence, selection, SIX, ALGORITHMS))
    if not present.any():
        return _not_testable("no case of the six data sets with all five algorithms")
    gap = -margin
    largest = max(float(gap.max()), 0.0)
    where = f"largest at {_where(gap)}" if largest > 0 else "PCSKM is never worse"
    return Finding(f"{largest:.3f}", at_most(largest, SMALL_F, 2 * SMALL_F),
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
                   everywhere(m > TIE_F, m > 0), _coverage(present))


def _seeding_helps_mpckm(evidence, selection):
    datasets = ("fisheriris", "digits 3-8-9", "TT-SC-ST")
    grid = _grid(evidence.values, selection, family=datasets, algorithm=["MPCKM"],
                 init=["seeding", "dkm++"], kind=["random"]).squeeze(["algorithm", "kind"])
    gain = grid.sel(init="seeding") - grid.sel(init="dkm++")
    present = gain.notnull()
    if not present.any():
        return _not_testable("MPCKM with Seeding and DKM++ (random) not in the cube for "
                             "fisheriris, digits 3-8-9 or TT-SC-ST")
    g = gain.values[present.values]
    return Finding(_signed(gain.values), everywhere(g > 0, g > -TIE_F),
                   _coverage(present, "data sets"))


def _must_link_hurts(evidence, selection):
    penalty = _penalty(evidence, selection, NOT_DIGITS).mean("init", skipna=False)
    present = penalty.notnull()
    if not present.any():
        return _not_testable("must-link and random not both in the cube for ionosphere, "
                             "fisheriris, TT-SC-ST or TT-CH-ST")
    p = penalty.values[present.values]
    return Finding(f"{_share(p > 0)}; smallest {p.min():+.3f}", everywhere(p > 0, p > -TIE_F),
                   _coverage(present, "(data set, algorithm) pairs"))


def _must_link_digits(evidence, selection):
    penalty = _penalty(evidence, selection, SIX).mean(["algorithm", "init"], skipna=False)
    digits, others = penalty.sel(family=list(DIGITS)), penalty.sel(family=list(NOT_DIGITS))
    present = digits.notnull()
    if not present.any():
        return _not_testable("must-link and random not both in the cube for the digits")
    d, others = digits.values[present.values], others.values[others.notnull().values]
    below_others = d < others.min() if others.size else np.zeros(d.shape, dtype=bool)
    value = f"digits {_signed(digits.values)}" + (
        f"; others {others.min():+.3f} to {others.max():+.3f}" if others.size else "")
    return Finding(value, everywhere(d <= TIE_F, below_others),
                   _coverage(present, "digits sets"))


def _init_against_kind(algorithms, init_less):
    """A claim on the init effect minus the kind effect of each of ``algorithms``: below 0
    (``init_less``) or not below 0; borderline within TIE_F."""
    def judge(evidence, selection):
        init_range, kind_range, present = _init_effect(evidence, selection, algorithms)
        if init_range.isnull().any() or kind_range.isnull().any():
            return _not_testable("two inits (kind random) and two kinds (a deterministic "
                                 f"init) are needed for {', '.join(algorithms)}")
        lead = (init_range - kind_range).values  # < 0: the init matters less than the kind
        holds, nearly = (lead < 0, lead < TIE_F) if init_less else (lead >= 0, lead >= -TIE_F)
        value = ", ".join(f"{a} {float(init_range.sel(algorithm=a)):.3f}/"
                          f"{float(kind_range.sel(algorithm=a)):.3f}" for a in algorithms)
        return Finding(value, everywhere(holds, nearly), _coverage(present, "case values"))
    return judge


def _pcskm_robust_to_init(evidence, selection):
    init_range, _kind_range, present = _init_effect(evidence, selection, ALGORITHMS)
    if init_range.isnull().any():
        return _not_testable("two inits with kind random are needed for every algorithm")
    mine = float(init_range.sel(algorithm="PCSKM"))
    others = init_range.drop_sel(algorithm="PCSKM")
    value = ", ".join(f"{a} {float(init_range.sel(algorithm=a)):.3f}" for a in ALGORITHMS)
    return Finding(value, everywhere(mine < others, mine < others + TIE_F),
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
    holds, nearly, parts = [], [], []
    for name, shares in (("PCSKM best", best), ("must-link hurts", hurt)):
        if "dkm++" not in shares or len(shares) < 2:
            continue
        reference = shares["dkm++"] > 0.5
        differ = [s for init, s in shares.items() if (s > 0.5) != reference]
        holds.append(not differ)
        nearly.append(all(abs(s - 0.5) <= NEAR_HALF for s in differ))
        parts.append(f"{name} " + "/".join(f"{shares[i]:.2f}" if i in shares else "n/a"
                                           for i in DETERMINISTIC))
    if not holds:
        return _not_testable("DKM++ and ROBIN(D) or Maximin(D) are needed")
    return Finding("; ".join(parts), everywhere(holds, nearly))


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
        at_least(lowest, EVERY_POINT, EVERY_POINT_BORDERLINE), _coverage(present, "points"))


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
                   f"{float(runner_up.max()):.3f})", everywhere([margin > 0], [margin > -TIE_F]),
                   _coverage(present))


def _mpckm_seeding_on_par(evidence, selection):
    datasets = ("fisheriris", "digits 3-8-9", "TT-SC-ST", "TT-CH-ST")
    grid = _grid(evidence.values, selection, family=datasets, algorithm=["MPCKM", "PCSKM"],
                 init=["seeding"], kind=["random"]).squeeze(["init", "kind"])
    lead = grid.sel(algorithm="MPCKM") - grid.sel(algorithm="PCSKM")
    present = lead.notnull()
    if not present.any():
        return _not_testable("MPCKM and PCSKM with Seeding not in the cube for fisheriris, "
                             "digits 3-8-9, TT-SC-ST or TT-CH-ST")
    d = lead.values[present.values]
    return Finding(_signed(lead.values), everywhere(d >= -TIE_F, d >= -2 * TIE_F),
                   _coverage(present, "data sets"))


def _seeding_mostly_helps_mpckm(evidence, selection):
    grid = _grid(evidence.values, selection, family=SIX, algorithm=["MPCKM"], init=INITS,
                 kind=["random"]).squeeze(["algorithm", "kind"])
    gain = grid.sel(init="seeding", drop=True) - grid.sel(init=list(DETERMINISTIC))
    present = gain.notnull()
    if not present.any():
        return _not_testable("MPCKM with Seeding and a deterministic init not in the cube")
    g = gain.values[present.values]
    return Finding(_share(g > 0), majority(g > 0, g > -TIE_F),
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
    return Finding(value, everywhere(mine < 0.5 * others, mine < others),
                   _coverage(present, "(data set, init) pairs"))


def _close_to_mpckm(evidence, selection):
    cases = _cases(evidence, selection, ("TT-SC-ST", "TT-CH-ST"), ["MPCKM", "PCSKM"])
    lead = cases.sel(algorithm="MPCKM") - cases.sel(algorithm="PCSKM")
    present = lead.notnull()
    if not present.any():
        return _not_testable("MPCKM and PCSKM not in the cube for TT-SC-ST or TT-CH-ST")
    largest = float(lead.max())
    return Finding(f"{largest:+.3f}", at_most(largest, SMALL_F, 2 * SMALL_F),
                   _join(f"largest at {_where(lead)}", _coverage(present)))


def _panels(evidence, datasets, algorithm, measure):
    """``measure`` of ``algorithm``'s weights per panel of ``datasets`` (the paper's inits
    and kinds), as a table (family, init, kind, [percent,] value) of the computed panels."""
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
    return Finding(f"{row.value:.3f}", at_most(row.value, DRIFT, DRIFT_BORDERLINE),
                   f"largest at {row.family}, {row.init}, {row.kind}")


def _every_s(_evidence, _selection):
    return _not_testable("the cube keeps each cell's weights averaged over the s grid, not "
                         "per s (docs/method/protocol.md §11)")


def _statistical(test, favoured):
    def judge(evidence, selection):
        cases, datasets = _test(evidence.tests, selection, test)
        if favoured is None:
            return no_difference_verdict(cases, datasets)
        return difference_verdict(cases, datasets, favoured)
    return judge


_DIFFERENCE_RULE = (
    "case-level Wilcoxon signed-rank p (Holm over the 7 tests), {n} cases (docs/method/"
    "protocol.md §10); reproduced if p < 0.05 in {x}'s favour and the data-set-level test "
    "(p_datasets, §10.1) favours {x} too; borderline if p < 0.05 but the data sets favour the "
    "other side, or p in [0.05, 0.1) in {x}'s favour; not reproduced otherwise; not testable "
    "unless every case is computed")
_WEIGHT_SETS_LABEL = "Brodinova 5+5, 3+7, TT-SC-ST, TT-CH-ST"
_SEPARATION = ("share of the weight panels ({sets} x the paper's inits x kinds x percentages; "
               "mean weights over every s, runs and folds, the same for every selection) in "
               "which every known uninformative feature weighs less than every other feature")


def _separation_claim(claim_id, section, claim, sets_label, sets, algorithm, separates=True):
    """A weight claim judged by separation: the share of ``algorithm``'s panels of ``sets``
    that separate, against the thresholds for a claim that it separates (or not)."""
    if separates:
        rule = (f"; reproduced if the share is >= {SEPARATED} for every init, borderline if >= "
                f"{SEPARATED_BORDERLINE} for every init, not reproduced otherwise")

        def judge(share):
            return at_least(share.min(), SEPARATED, SEPARATED_BORDERLINE)
    else:
        rule = (f"; reproduced if the share is <= {UNSEPARATED} for every init, borderline if "
                f"<= {UNSEPARATED_BORDERLINE} for every init, not reproduced otherwise")

        def judge(share):
            return at_most(share.max(), UNSEPARATED, UNSEPARATED_BORDERLINE)
    return Claim(claim_id, section, claim, _SEPARATION.format(sets=sets_label) + rule,
                 _panel_share(sets, algorithm, separated, judge))
_TABLE1 = {
    "fisheriris": "table1-fisheriris", "ionosphere": "table1-ionosphere",
    "digits 0-4-8 and 3-8-9": "table1-digits",
    "Morris Water Maze TT-SC-ST": "table1-tt-sc-st",
    "Morris Water Maze TT-CH-ST": "table1-tt-ch-st", "Brodinova (2 sets)": "table1-brodinova",
}
_PAPER_P = {"LKM": "1e-10", "SKM": "1e-10", "PCKM": "1e-10", "MPCKM": "0.001"}

_CASES = "the 60 cases (six data sets x the 10 (init, kind) settings of Figure 1 and its appendix)"
_PENALTY = "penalty = V(random) - V(must-link)"


def _a1(other):
    shown = "KM (LKM)" if other == "LKM" else other
    extra = ("; also the Discussion: the constraints improve PCSKM over its unsupervised "
             "version" if other == "SKM" else "")
    return Claim(f"a1-{other.lower()}", "Results, Analysis 1",
                 f"PCSKM performs better than {shown} (Wilcoxon, p < {_PAPER_P[other]}){extra}",
                 _DIFFERENCE_RULE.format(x="PCSKM", n=60),
                 _statistical(f"PCSKM vs {other}", "PCSKM"))


CLAIMS = (
    Claim("methods-order", "Methods, end",
          "PCSKM depends on the order in which points are processed, but this does not "
          "affect the reported performance",
          "F of the same cells under two processing orders of the points", _order_invariance),
    *(Claim(_TABLE1[label], "Table 1",
            f"{label}: {printed[0]} points; CV10 labels, CV10 constraints, [1 %, 10 %] = "
            f"{printed[1]}, {printed[2]}, [{printed[3][0]}, {printed[3][1]}]",
            "our nominal counts (L = 0.9 N, docs/method/protocol.md §4.1), the same for every "
            "selection; reproduced if they are the printed ones", _table1_row(label))
      for label, printed in PRINTED.items()),
    Claim("synthetic-equal", "Results, first experiment",
          "all algorithms perform equally well on the synthetic (Brodinova) data, so Figure 1 "
          "leaves them out",
          "largest range (max - min) of V over the five algorithms in one case (a Brodinova "
          f"set x a Figure 1 setting); reproduced if <= {TIE_F}, borderline if <= "
          f"{2 * TIE_F}, not reproduced otherwise", _synthetic_equal),
    Claim("pcskm-most", "Results, first experiment; Figure 1",
          "PCSKM performs better than the other algorithms in most cases",
          f"share of {_CASES} in which PCSKM's V is the largest of the five algorithms (ties "
          "count); reproduced if > 1/2; borderline if > 1/2 only when the cases where PCSKM "
          f"is within {TIE_F} of the best count too; not reproduced otherwise", _pcskm_most),
    Claim("pcskm-close", "Results, first experiment; Figure 1 caption",
          "where PCSKM is worse, its difference to the best algorithm is relatively small "
          "(its performance surpasses or is close to the others')",
          f"largest (best V - PCSKM's V) over {_CASES}; reproduced if <= {SMALL_F}, "
          f"borderline if <= {2 * SMALL_F}, not reproduced otherwise", _pcskm_close),
    Claim("must-link-hurts", "Results, first experiment; Figure 1 caption; Discussion",
          "must-link-only constraints lower the performance of every semi-supervised algorithm "
          "(outside the digits)",
          f"{_PENALTY}, mean over DKM++, ROBIN(D), Maximin(D), per (data set, algorithm) of "
          "ionosphere, fisheriris, TT-SC-ST, TT-CH-ST x PCKM, MPCKM, PCSKM; value: the share of "
          "pairs with a penalty > 0 and the smallest penalty; reproduced if every penalty > 0, "
          f"borderline if every penalty > -{TIE_F}, not reproduced otherwise",
          _must_link_hurts),
    Claim("must-link-digits", "Results, first experiment; Figure 1 caption; Discussion",
          "... except on the digits data sets (0-4-8 and 3-8-9)",
          f"{_PENALTY} of each digits set, mean over PCKM, MPCKM, PCSKM and the deterministic "
          "inits, beside the range of the other four data sets' penalties; reproduced if both "
          f"digits penalties are <= {TIE_F} (no negative effect); borderline if not, but both "
          "are below every other data set's penalty; not reproduced otherwise",
          _must_link_digits),
    Claim("robin-maximin-similar", "Results, first experiment; appendix figures",
          "ROBIN and Maximin initialisation lead to conclusions similar to DKM++'s",
          "per deterministic init (DKM++/ROBIN(D)/Maximin(D)): the share of its 18 cases where "
          "PCSKM is best, and the share of its 12 (data set outside the digits, "
          "semi-supervised algorithm) pairs where must-link only costs F; a conclusion holds "
          "for an init when its share is > 1/2; reproduced if ROBIN(D) and Maximin(D) reach "
          "DKM++'s conclusion on both; borderline if those that differ have shares within "
          f"{NEAR_HALF} of 1/2; not reproduced otherwise", _similar_conclusions),
    *(_a1(other) for other in statistics.ANALYSIS1_OTHERS),
    Claim("a2-must-link-cannot-link", "Results, Analysis 2",
          "cannot-link-only constraints perform better than must-link-only (p < 0.01)",
          _DIFFERENCE_RULE.format(x="cannot-link", n=72),
          _statistical("must-link vs cannot-link", "cannot-link")),
    Claim("a2-must-link-random", "Results, Analysis 2",
          "both kinds (random) perform better than must-link only (p < 0.001)",
          _DIFFERENCE_RULE.format(x="random", n=72),
          _statistical("must-link vs random", "random")),
    Claim("a2-cannot-link-random", "Results, Analysis 2",
          "no difference between cannot-link only and both kinds (random) (p > 0.1)",
          "case-level Wilcoxon signed-rank p, not adjusted (Holm would make 'no difference' "
          "easier to reach), 72 cases; reproduced if p >= 0.1 (or every difference is 0) and "
          "the data-set-level p (p_datasets) >= 0.05; borderline if p in [0.05, 0.1), or if "
          "p_datasets < 0.05; not reproduced if p < 0.05; not testable unless every case is "
          "computed", _statistical("cannot-link vs random", None)),
    Claim("weights-every-s", "Results, second experiment; Figure 2",
          "SKM and PCSKM identify the known uninformative features regardless of the choice "
          "of s", "the weights at each s of the grid", _every_s),
    _separation_claim("weights-skm", "Results, second experiment; Figure 2 and appendix",
                      "SKM identifies the known uninformative features in all cases (mean "
                      "weights over s), for every init", _WEIGHT_SETS_LABEL, WEIGHT_SETS, "SKM"),
    _separation_claim("weights-pcskm",
                      "Results, second experiment; Figure 2 and appendix; Discussion",
                      "PCSKM identifies the known uninformative features in all cases (mean "
                      "weights over s), for every init", _WEIGHT_SETS_LABEL, WEIGHT_SETS,
                      "PCSKM"),
    Claim("weights-pcskm-constraints", "Results, second experiment; Figure 2; Discussion",
          "PCSKM's feature selection is not affected by the number of constraints",
          "largest total-variation distance, 1/2 sum |a - b|, between PCSKM's mean weights "
          "normalised to sum 1 at two percentages of one (Brodinova or MWM set, init, kind); "
          f"reproduced if <= {DRIFT}, borderline if <= {DRIFT_BORDERLINE}, not reproduced "
          "otherwise", _constraints_do_not_move_weights),
    _separation_claim("weights-mpckm",
                      "Results, second experiment; Figure 2 and appendix; Discussion",
                      "MPCKM's weights do not indicate feature quality: it uses the "
                      "uninformative features in all cases", _WEIGHT_SETS_LABEL, WEIGHT_SETS,
                      "MPCKM", separates=False),
    _separation_claim("weights-pcskm-contaminated", "Results, second experiment; appendix",
                      "PCSKM gives weight 0 to the 4 uninformative features added to the digits",
                      "the two contaminated digits sets", CONTAMINATED, "PCSKM"),
    Claim("weights-mpckm-contaminated", "Results, second experiment; appendix",
          "MPCKM: in both contaminated digits sets the added features have on average higher "
          "weights than the original ones, for every init",
          "share of the MPCKM weight panels of the contaminated digits (paper's inits x kinds x "
          "percentages) in which the mean weight of the added features exceeds that of the "
          f"original ones; reproduced if >= {SEPARATED} for every init, borderline if >= "
          f"{SEPARATED_BORDERLINE} for every init, not reproduced otherwise",
          _panel_share(CONTAMINATED, "MPCKM", heavier_uninformative,
                       lambda s: at_least(s.min(), SEPARATED, SEPARATED_BORDERLINE))),
    Claim("clear-advantage", "Figure 1 caption",
          "on ionosphere and digits 0-4-8 PCSKM has a clear advantage over the other methods",
          "per case (10 settings per data set), margin = PCSKM's V - the best other V; value: "
          f"the cases with a margin > {TIE_F} per data set and the smallest margin; reproduced "
          f"if every margin > {TIE_F}, borderline if every margin > 0, not reproduced otherwise",
          _clear_advantage),
    Claim("seeding-helps-mpckm", "Figure 1 caption",
          "on fisheriris, digits 3-8-9 and TT-SC-ST, Seeding gives MPCKM an advantage over "
          "DKM++", "V(MPCKM, Seeding, random) - V(MPCKM, DKM++, random) per data set; "
          f"reproduced if all > 0, borderline if all > -{TIE_F}, not reproduced otherwise",
          _seeding_helps_mpckm),
    Claim("init-less-than-kind", "Figure 1 caption; Discussion",
          "the constraint kind affects performance greatly, the initialisation method less "
          "(PCKM, PCSKM)",
          "per algorithm, init effect = mean over the six data sets of the range of V over the "
          "four inits (kind random), kind effect = mean over data sets and deterministic inits "
          "of the range of V over the three kinds; value: init/kind effect of PCKM and PCSKM; "
          "reproduced if the init effect is below the kind effect for both, borderline if "
          f"below it + {TIE_F} for both, not reproduced otherwise",
          _init_against_kind(("PCKM", "PCSKM"), init_less=True)),
    Claim("init-mpckm-exception", "Figure 1 caption; Discussion",
          "... except for MPCKM, on which the initialisation method has a large effect",
          "init and kind effect of MPCKM (as in init-less-than-kind); reproduced if the init "
          f"effect is not below the kind effect, borderline if above it - {TIE_F}, not "
          "reproduced otherwise", _init_against_kind(("MPCKM",), init_less=False)),
    Claim("pcskm-robust-to-init", "Figure 1 caption; Discussion",
          "PCSKM is in general more robust to the initial conditions",
          "init effect (as in init-less-than-kind) of each algorithm; reproduced if PCSKM's is "
          f"the smallest, borderline if it is within {TIE_F} of every other's, not reproduced "
          "otherwise", _pcskm_robust_to_init),
    Claim("every-number", "Discussion",
          "PCSKM performs almost as well as the other semi-supervised algorithms, in many cases "
          "better, whatever the init, constraint kind or number of constraints",
          "per percentage, the share of points (six data sets x Figure 1 settings) where "
          f"PCSKM's mean F is at least the best of PCKM and MPCKM minus {TIE_F}; value: the "
          f"lowest share over the percentages; reproduced if >= {EVERY_POINT}, borderline if "
          f">= {EVERY_POINT_BORDERLINE}, not reproduced otherwise", _every_number),
    Claim("best-on-average", "Discussion",
          "based on the tests, PCSKM has on average the best overall performance",
          f"mean V over {_CASES} per algorithm; margin = PCSKM's - the best other's; "
          f"reproduced if > 0, borderline if > -{TIE_F}, not reproduced otherwise",
          _best_on_average),
    Claim("mpckm-seeding-on-par", "Discussion",
          "with Seeding, MPCKM performs best or on par with PCSKM, except on ionosphere and "
          "digits 0-4-8",
          "V(MPCKM) - V(PCSKM) at (Seeding, random) on fisheriris, digits 3-8-9, TT-SC-ST, "
          f"TT-CH-ST; reproduced if all >= -{TIE_F}, borderline if all >= -{2 * TIE_F}, not "
          "reproduced otherwise", _mpckm_seeding_on_par),
    Claim("seeding-mostly-helps-mpckm", "Discussion",
          "Seeding has mostly a positive effect on MPCKM",
          "V(MPCKM, Seeding) - V(MPCKM, init) at kind random for the six data sets x the "
          "deterministic inits; reproduced if > 0 in more than half of the pairs, borderline "
          f"if > -{TIE_F} in more than half, not reproduced otherwise",
          _seeding_mostly_helps_mpckm),
    Claim("pcskm-copes-with-must-link", "Discussion",
          "PCSKM copes with must-link constraints much better than MPCKM and PCKM",
          f"{_PENALTY} per algorithm, mean over the six data sets and the deterministic inits; "
          "reproduced if PCSKM's is below half of PCKM's and of MPCKM's, borderline if below "
          "both, not reproduced otherwise", _pcskm_copes_with_must_link),
    Claim("close-to-mpckm-mwm", "Discussion",
          "on the Morris Water Maze sets (features engineered for MPCKM) PCSKM keeps a "
          "performance close to MPCKM's",
          "largest V(MPCKM) - V(PCSKM) over the 20 cases of TT-SC-ST and TT-CH-ST; reproduced "
          f"if <= {SMALL_F}, borderline if <= {2 * SMALL_F}, not reproduced otherwise",
          _close_to_mpckm),
)


def _notes(findings):
    """One note for the row: the selections' notes, named when they differ."""
    notes = {name: f.note for name, f in findings.items()}
    if len(set(notes.values())) == 1:
        return next(iter(notes.values()))
    return "; ".join(f"{name}: {note}" for name, note in notes.items() if note)


def evaluate(evidence, claims=CLAIMS):
    """The claims table: one row per claim (id, section, claim, measure), then per selection
    ``value_<s>``, ``p_datasets_<s>`` and ``verdict_<s>``, then the ``note``."""
    rows = []
    for claim in claims:
        findings = {s: claim.judge(evidence, s) for s in evidence.selections}
        row = {"id": claim.id, "section": claim.section, "claim": claim.claim,
               "measure": claim.measure}
        for name, finding in findings.items():
            row |= {f"value_{name}": finding.value, f"p_datasets_{name}": finding.p_datasets,
                    f"verdict_{name}": finding.verdict}
        rows.append(row | {"note": _notes(findings)})
    return pd.DataFrame(rows)


def table(results, table1, tests):
    """The claims table of the report's ``results`` (see :func:`evaluate`)."""
    return evaluate(evidence(results, table1, tests))

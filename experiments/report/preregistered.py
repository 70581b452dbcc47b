"""The pre-registered analysis of a store (docs/reference/spec-toml.md, "[preregistration]"):
the primary tests, the focus against each other algorithm under the primary selection of s at
the pre-registered level, with Holm's adjustment over all of them together (one family), and
the same tests under every other selection as sensitivity analyses.

The tests are the rows of Analysis 1 of :func:`statistics.analyses` (exact signed-rank test on
the data-set means at level "dataset", the paper's test on the cases at level "case"; the
Hodges-Lehmann estimate and interval, the rank-biserial correlation and the data-set bootstrap
interval of the mean difference); only Holm's family differs: the primary tests alone, whatever
else the plan tests (the paper's Analysis 2).

The store records the preregistration it was computed under (root attribute
``preregistration``, written by ``runner.store``); :func:`stored` reads it and says when the
spec text the store records states another one (a post-hoc change).
"""

import tomllib
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from ..spec import Preregistration, preregistration_record
from . import inference, statistics
from .failure_rules import AVAILABLE

# the pre-registered level -> the level of statistics.LEVELS
LEVELS = {"dataset": "datasets", "case": "cases"}
COLUMNS = ["selection", "analysis", "test", "x", "y", "level", "n", "n_units", "not_computed",
           "dropped_nan", "wins", "losses", "ties", "statistic", "p_value", "p_holm",
           "holm_m", "direction", "verdict", "mean_diff", "boot_low", "boot_high",
           "hl_estimate", "hl_low", "hl_high", "hl_confidence", "rank_biserial"]


@dataclass(frozen=True)
class Stored(Preregistration):
    """A store's preregistration (the fields of :class:`~pcskm.experiments.spec.
    Preregistration`); ``post_hoc``: why it is not the one recorded before the results, or
    ""."""

    post_hoc: str = ""


def _table(spec_toml):
    try:
        table = tomllib.loads(spec_toml or "").get("preregistration")
    except tomllib.TOMLDecodeError:
        return None
    return preregistration_record(table) if isinstance(table, dict) else None


def stored(attrs):
    """The :class:`Stored` preregistration of a store's root ``attrs``, or None: the recorded
    ``preregistration`` attribute, checked against the ``[preregistration]`` of the recorded
    spec text (``spec_toml``); both normalised by ``preregistration_record``, so a record made
    before a key existed reads as its default."""
    recorded, stated = attrs.get("preregistration"), _table(attrs.get("spec_toml"))
    if recorded is None and stated is None:
        return None
    post_hoc = ""
    if recorded is None:
        recorded = stated
        post_hoc = ("the store's spec states a [preregistration] that the store did not record "
                    "when its cells were computed")
    else:
        recorded = preregistration_record(recorded)
        changed = [k for k in recorded if stated is not None and stated.get(k) != recorded[k]]
        if changed:
            post_hoc = (f"the store's spec text states another preregistration "
                        f"({', '.join(changed)} changed) than the one recorded with its cells; "
                        "the recorded one is used")
    keys = [f.name for f in fields(Preregistration)]
    return Stored(**{k: recorded[k] for k in keys if k in recorded}, post_hoc=post_hoc)


def states(attrs, key):
    """Whether the store's spec text (``spec_toml``) states ``key`` in its
    ``[preregistration]``: the record a store keeps has every key, with its default where the
    spec was silent (a spec written before a key existed did not state it). Without a spec
    text, whether the recorded preregistration has it."""
    try:
        table = tomllib.loads(attrs.get("spec_toml") or "").get("preregistration")
    except tomllib.TOMLDecodeError:
        table = None
    if isinstance(table, dict):
        return key in table
    return key in (attrs.get("preregistration") or {})


def verdict(row, alpha):
    """"<x> better" or "<x> worse" when the Holm-adjusted p is below ``alpha`` (on the side of
    the larger signed-rank sum), "no difference" otherwise, "not computed" without a unit."""
    if row.n == 0:
        return "not computed"
    if not row.p_holm < alpha:
        return "no difference"
    return f"{row.x} {'better' if row.direction == row.x else 'worse'}"


def family(tests, selection, focus, level, alpha):
    """The tests of ``focus`` against each other algorithm under ``selection`` at the
    pre-registered ``level`` ("dataset" or "case"), Holm-adjusted over these tests together,
    with their verdict at ``alpha``. Empty when the selection is not in ``tests``."""
    if tests.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = tests[(tests.selection == selection) & (tests.analysis == 1)
                 & (tests.level == LEVELS[level]) & (tests.x == focus)].copy()
    rows["p_holm"] = inference.holm(rows.p_value.to_numpy(dtype=np.float64))
    rows["holm_m"] = int(rows.p_value.notna().sum())
    rows["verdict"] = [verdict(row, alpha) for row in rows.itertuples()]
    return rows[COLUMNS].reset_index(drop=True)


def plan_tests(results, plan, preregistration, tests=None):
    """The tests of ``plan`` (:func:`statistics.analyses`) with the failed fits under the
    pre-registered rule (``failures``): ``tests``, the report's own tests (computed under
    the rule "available"), when that is the rule and they are given."""
    if tests is not None and preregistration.failures == AVAILABLE:
        return tests
    return statistics.analyses(results, plan, preregistration.failures)[0]


def analyses(tests, preregistration, selections):
    """``(primary, sensitivity)``: :func:`family` under the pre-registered rule, and under
    each other of ``selections`` (stacked, in that order)."""
    p = preregistration
    primary = family(tests, p.rule, p.focus, p.level, p.alpha)
    others = [family(tests, name, p.focus, p.level, p.alpha) for name in selections
              if name != p.rule]
    others = [frame for frame in others if not frame.empty]
    sensitivity = (pd.concat(others, ignore_index=True) if others
                   else pd.DataFrame(columns=COLUMNS))
    return primary, sensitivity


REFERENCE = "unthresholded"


def reference_arm(results, plan, preregistration):
    """The reference arm (docs/method/selection.md §6): the focus of ``plan`` under
    "unthresholded" against itself under the pre-registered rule, at the pre-registered
    level and with the pre-registered rule for failed fits, with its verdict at ``alpha`` on
    the unadjusted p (it is not in the primary family). Empty when the cube lacks either
    selection or the rule is "unthresholded"."""
    p = preregistration
    if p.rule == REFERENCE:
        return pd.DataFrame(columns=COLUMNS)
    rows = statistics.selection_test(results, plan, REFERENCE, p.rule, p.failures)
    rows = rows[rows.level == LEVELS[p.level]].copy()
    rows["verdict"] = [verdict(row, p.alpha) for row in rows.itertuples()]
    return rows.reindex(columns=COLUMNS).reset_index(drop=True)

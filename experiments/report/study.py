"""What of the report applies to a study (docs/guide/quick-study.md, "A study that is not the
paper's"): the focus algorithm that Analysis 1 compares with every other one, its plan
(:class:`statistics.Plan`), and whether the paper-only parts, Table 1 and the claims, apply.

* The focus is ``pcskm report --focus``, else the spec's ``[report] focus``
  (docs/reference/spec-toml.md, ``[report]``), read from the spec text the store records
  (``spec_toml``); without either, PCSKM when the cube has it; else there is no focus and the
  report says so instead of picking an algorithm.
* Table 1 applies when the cube holds one of its data sets (stand-ins included: iris for
  fisheriris); the claims when Analysis 1 is the paper's (PCSKM on the paper's data sets).
"""

import tomllib
from dataclasses import dataclass

from ..spec import did_you_mean
from ..table1 import ROWS
from . import statistics
from .constraint_table import STAND_INS
from .performance import algorithms

DEFAULT_FOCUS = "PCSKM"
SPEC_KEY = "`[report] focus` (docs/reference/spec-toml.md)"


@dataclass(frozen=True)
class Study:
    """``focus`` and its ``plan`` (None, with ``focus_note`` saying why, when there is no
    focus); ``table1``: Table 1 applies, else ``table1_note`` says why; ``claims``: the
    claims apply, else ``claims_note`` says why."""

    focus: str | None
    plan: statistics.Plan | None
    focus_note: str
    table1: bool
    table1_note: str
    claims: bool
    claims_note: str


def spec_focus(attrs):
    """The ``[report] focus`` of the spec recorded in the store's root ``attrs``, or None."""
    try:
        table = tomllib.loads(attrs.get("spec_toml", "")).get("report", {})
    except tomllib.TOMLDecodeError:
        return None
    return table.get("focus") if isinstance(table, dict) else None


def check_focus(store, focus):
    """Refuse a ``focus`` asked for (``pcskm report --focus``) that is not an algorithm of the
    open ``store``, naming its algorithms."""
    found = list(dict.fromkeys(str(a) for name in store.names
                               for a in store.group(name).algorithm.values))
    if focus not in found:
        hint = did_you_mean(focus, found, 0.5)
        raise ValueError(f"--focus {focus!r} is not an algorithm of {store.path}{hint} (its "
                         f"algorithms: {', '.join(found)})")


def _focus(results, asked=None):
    """``(focus, note)``: the focus algorithm of the cube (``asked``, else the spec's), or
    None and why not."""
    if results.families is None:
        return None, "nothing is computed"
    found = algorithms(results)
    asked = asked if asked is not None else spec_focus(results.store.attrs)
    if asked is not None:
        if asked in found:
            return asked, ""
        return None, (f"the spec's {SPEC_KEY} {asked!r} is not an algorithm of the cube "
                      f"({', '.join(found)})")
    if DEFAULT_FOCUS in found:
        return DEFAULT_FOCUS, ""
    return None, (f"the cube has no {DEFAULT_FOCUS} and the spec names no focus algorithm "
                  f"with {SPEC_KEY}; set it to compare one algorithm with the others")


def _table1_groups():
    return {name for _label, members in ROWS
            for name in (*members, *STAND_INS.get(members[0], ()))}


def study(results, focus=None):
    """The :class:`Study` of the report's ``results``, with ``focus`` if given (else the
    spec's ``[report] focus``, else PCSKM)."""
    focus, focus_note = _focus(results, focus)
    plan = statistics.study_plan(results, focus) if focus is not None else None
    table1 = bool(_table1_groups() & set(results.store.names))
    claims = plan is not None and plan.paper
    if claims:
        claims_note = ""
    elif plan is None:
        claims_note = f"the paper's claims are about {DEFAULT_FOCUS}, and {focus_note}"
    else:
        claims_note = (f"the paper's claims are about {DEFAULT_FOCUS} against LKM, SKM, PCKM "
                       f"and MPCKM on the paper's data sets; this study compares {plan.focus} "
                       f"with {', '.join(plan.others) or 'no other algorithm'} on "
                       f"{', '.join(plan.datasets)}")
    return Study(
        focus=focus, plan=plan, focus_note=focus_note, table1=table1,
        table1_note="" if table1 else "the cube holds none of its data sets (the paper's)",
        claims=claims, claims_note=claims_note)

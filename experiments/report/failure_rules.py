"""How a failed fit (F = NaN at the selected s, docs/method/protocol.md §8.2) enters the tests
(docs/method/statistics.md, "Failed fits"). Three rules, applied to every cell of a selection
before anything is averaged:

* ``available``: each algorithm's mean over its own cells that did not fail (the rule of the
  studies written before the rules had names; the report's tables and figures of means).
* ``itt`` (intention to treat): a failed cell counts, with the value stated in advance
  (``failure_value``): a number, or the F of a named algorithm in the same cell (default LKM:
  what a user falls back on when a constrained fit fails). Where that algorithm has no value
  either, the cell is left out.
* ``complete-case``: the cells where every algorithm the cell expects has a value; a cell
  where any of them failed is left out for all of them.

:func:`rule_values` gives, per selection, the mean over (run, fold) per percentage (what the
case values average, :func:`performance.case_values`) and the mean over the percentages per
(run, fold) (the runs x folds of the per-data-set Bayesian correlated t-test).
"""

import numbers

import numpy as np
import xarray as xr

from .fits import quiet
from .selection import CELL, by_selection

AVAILABLE, ITT, COMPLETE_CASE = "available", "itt", "complete-case"
RULES = (AVAILABLE, ITT, COMPLETE_CASE)
DIM = "failures"


def cell_values(f, computed, expected, failure_value):
    """F per cell under each rule, stacked along ``failures`` (:data:`RULES`); NaN where a
    cell is left out. ``f``: F at the selected s with dims (algorithm, ..., run, fold);
    ``computed`` and ``expected``: the cells' masks; ``failure_value``: a number or an
    algorithm's name (module docstring)."""
    available = f.where(computed)
    failed = computed & f.isnull()
    if isinstance(failure_value, numbers.Real):
        fill = float(failure_value)
    elif failure_value in f.algorithm.values:
        fill = available.sel(algorithm=failure_value, drop=True)
    else:
        fill = np.nan
    itt = available.where(~failed, fill)
    has_value = (computed & f.notnull()) | ~expected
    complete_case = available.where(has_value.all("algorithm"))
    return xr.concat([available, itt, complete_case],
                     dim=xr.DataArray(list(RULES), dims=DIM, name=DIM))


def rule_values(selected, failure_value):
    """``f_rules`` (failures, selection, algorithm, init, kind, percent): the mean over
    (run, fold) of F under each rule; ``f_run_fold`` (failures, selection, algorithm, init,
    kind, run, fold): the mean over the percentages. ``selected``: the per-cell selections of
    one data set (:func:`selection.select`); ``fixed-loo``, chosen across data sets later,
    is not among them."""
    values = cell_values(*by_selection(selected), failure_value)
    with quiet():
        return xr.Dataset({"f_rules": values.mean(CELL),
                           "f_run_fold": values.mean("percent")}).transpose("selection", ...)

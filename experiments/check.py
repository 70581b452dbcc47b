"""Recomputing listed cells and comparing them with the values recorded for them.

A table (e.g. a report's ``cells_sample.csv``) lists cells by (dataset, algorithm, init,
kind, percent, run, fold) and s entry (``sparsity``, empty for the algorithms without s) with
the values recorded for them: f_score, precision, recall, satisfied, n_iter, status (its
name), n_constraints. Each cell is recomputed alone, from the spec and the data files, with
the same code path as the runner (:func:`pcskm.experiments.cells.evaluate` on a one-cell task).
The cube stores floats as float32, so floats compare with a relative tolerance of 1e-6; the
integers compare exactly as numbers (``8.0`` in a column that a NaN made float is 8), the fill
value -1 of ``n_iter`` and ``n_constraints`` as the NaN xarray decodes it to (a failed fit of
a user estimator records no iterations; docs/reference/cube-schema.md), and the status by its
name. A failed fit thus agrees with its recomputation when both failed with the same status:
its scores are NaN on both sides.

A data set whose files are missing is not refused with the whole table: :func:`available`
sets its cells aside with the reason, and the others are checked (the cells of generated
sets need no file). Where a table records the code that computed a cell (column ``code``,
the report's sample; :mod:`pcskm.runner.store.provenance`), :func:`code_notes` names it
beside the spec's current code when they differ, the first suspect of a difference after a
module was edited.
"""

import numpy as np
import pandas as pd

from pcskm.algorithms._result import FIT_STATUS_NAMES

from . import cells
from ._datafiles import DataNotFoundError
from .cells import Block, Setting, Task

CELL_COLUMNS = ("dataset", "algorithm", "init", "kind", "percent", "run", "fold")
FLOATS = ("f_score", "precision", "recall", "satisfied")
INTEGERS = ("n_iter", "n_constraints")
EXACT = (*INTEGERS, "status")
RTOL = 1e-6
CODE = ("code", "code_description")  # optional: the code that computed the cell
FILL = -1  # the fill value of the cube's integer variables, read back as NaN


def read_table(path):
    """The table at ``path`` with its columns checked (ValueError naming what is missing)."""
    table = pd.read_csv(path)
    missing = [c for c in (*CELL_COLUMNS, "sparsity", *FLOATS, *EXACT) if c not in table]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    return table


def available(spec, table, data_dir=None):
    """``(rows, skipped)``: the rows of ``table`` whose data set loads, and per data set
    that does not (its files missing), ``(cells, reason)``."""
    skipped = {}
    for name in table.dataset.unique():
        if name not in spec.datasets:
            continue  # refused by recompute, naming the cell
        try:
            cells.dataset(spec.data_ref(name), data_dir)
        except DataNotFoundError as error:
            rows = table[table.dataset == name]
            skipped[name] = (len(rows.drop_duplicates(list(CELL_COLUMNS))),
                             str(error).splitlines()[0])
    return table[~table.dataset.isin(list(skipped))], skipped


def code_notes(spec, wrong):
    """For each algorithm of the differing rows ``wrong`` that a table records other code
    for than ``spec``'s current definition: one line with the recorded code and the
    current one (digest and words)."""
    from pcskm.runner.store.layout import algorithm_definition
    from pcskm.runner.store.provenance import SHORT, definition_digest, describe

    if "code" not in wrong:
        return []
    variants = {variant.name: variant for variant in spec.algorithms}
    lines = []
    for name, rows in wrong.groupby("algorithm", sort=False):
        definition = algorithm_definition(variants[name])
        current = definition_digest(definition)
        recorded = rows.code.fillna("").astype(str)
        for code, same in rows.groupby(recorded, sort=False):
            if code == current:
                continue
            words = (same.code_description.dropna().astype(str).iloc[0]
                     if "code_description" in same and same.code_description.notna().any()
                     else "")
            was = (f"code {code[:SHORT]}" + (f" ({words})" if words else "")
                   if code else "unknown code (computed before pcskm recorded it)")
            lines.append(f"{name}: {len(same)} of the differing values were computed by {was}; "
                         f"the spec's current code is {current[:SHORT]} "
                         f"({describe(definition)})")
    return lines


def _setting(spec, row, data_dir):
    variants = {variant.name: variant for variant in spec.algorithms}
    if row.dataset not in spec.datasets or row.algorithm not in variants \
            or row.init not in spec.inits:
        cell = ", ".join(f"{key}={value}" for key, value in row.items())
        raise ValueError(f"cell ({cell}) is not in spec {spec.name}")
    _check_grid(spec, row)
    n_features = cells.dataset(spec.data_ref(row.dataset), data_dir).n_features
    return Setting.from_spec(spec, row.dataset, variants[row.algorithm], row.init,
                             spec.sparsity_grid(n_features), data_dir)


def _check_grid(spec, row):
    """Refuse (ValueError naming the value and the spec's range) a cell whose kind,
    percentage, run or fold the spec does not run: the runner would never have computed it,
    and a one-cell task would draw a sample the spec does not hold."""
    seeding = row.init == cells.SEEDING
    kinds = spec.seeding_kinds if seeding else spec.kinds
    if row.kind not in kinds:
        raise ValueError(f"kind {row.kind} is not a kind of spec {spec.name} for init "
                         f"{row.init} ({'seeding_kinds' if seeding else 'kinds'}: "
                         f"{', '.join(kinds)})")
    percent = float(row.percent)
    if not np.isclose(spec.percentages, percent, rtol=0, atol=1e-9).any():
        raise ValueError(f"percent {row.percent} is not a percentage of spec {spec.name} "
                         f"({', '.join(f'{p:g}' for p in spec.percentages)})")
    for name, count in (("run", spec.n_runs), ("fold", spec.n_folds)):
        value = float(row[name])
        if not value.is_integer() or not 0 <= value < count:
            raise ValueError(f"{name} {row[name]} is not a {name} of spec {spec.name} (its "
                             f"{name}s are 0 to {count - 1})")


def recompute(spec, table, data_dir=None):
    """``table`` with the recomputed values beside the recorded ones (columns
    ``<name>_recomputed``) and a boolean column ``agrees``."""
    out = table.copy()
    for name in (*FLOATS, *EXACT):
        out[f"{name}_recomputed"] = np.nan if name in FLOATS else None
    for key, rows in table.groupby(list(CELL_COLUMNS), sort=False):
        cell = pd.Series(key, index=CELL_COLUMNS)
        setting = _setting(spec, cell, data_dir)
        block = Block(cell.kind, float(cell.percent), (int(cell.run),))
        result = cells.evaluate(Task((setting,), (block,), folds=(int(cell.fold),)))
        fitted = result.blocks[0][0]
        for index, s in zip(rows.index, rows.sparsity, strict=True):
            entry = _entry(setting, s)
            for name in FLOATS:
                out.at[index, f"{name}_recomputed"] = getattr(fitted, name)[0, 0, entry]
            out.at[index, "n_iter_recomputed"] = int(fitted.n_iter[0, 0, entry])
            out.at[index, "status_recomputed"] = FIT_STATUS_NAMES[fitted.status[0, 0, entry]]
            out.at[index, "n_constraints_recomputed"] = int(fitted.n_constraints[0, 0])
    agrees = np.ones(len(out), dtype=bool)
    for name in FLOATS:
        recorded, again = out[name].to_numpy(float), out[f"{name}_recomputed"].to_numpy(float)
        agrees &= np.isclose(recorded, again, rtol=RTOL, atol=0.0, equal_nan=True)
    for name in INTEGERS:
        agrees &= _same_integers(_numbers(out[name], name),
                                 _numbers(out[f"{name}_recomputed"], name))
    agrees &= out["status"].astype(str).to_numpy() == out["status_recomputed"].astype(str)
    out["agrees"] = agrees
    return out


def _numbers(values, name):
    """The integers of column ``name`` as floats, the fill value -1 and an empty entry as
    NaN (ValueError naming the column for an entry that is not a number)."""
    try:
        numbers = pd.to_numeric(values).to_numpy(float)
    except (ValueError, TypeError) as error:
        raise ValueError(f"column {name}: not a number ({error})") from None
    return np.where(numbers == FILL, np.nan, numbers)


def _same_integers(recorded, again):
    """Entry by entry: equal numbers, or NaN on both sides."""
    return (recorded == again) | (np.isnan(recorded) & np.isnan(again))


def _entry(setting, sparsity):
    """The index of s value ``sparsity`` in the fit's s entries (0 for no s)."""
    if not setting.is_sparse:
        if not np.isnan(sparsity):
            raise ValueError(f"{setting.algorithm} has no s; got s = {sparsity}")
        return 0
    matches = np.flatnonzero(np.isclose(setting.sparsities, sparsity, rtol=0, atol=1e-9))
    if len(matches) != 1:
        raise ValueError(f"s = {sparsity} is not in the s grid of {setting.algorithm} on "
                         f"{setting.dataset} ({', '.join(f'{s:g}' for s in setting.sparsities)})")
    return int(matches[0])

"""``pcskm status``: how much of a cube is computed, per data set and algorithm, and for each
selection (``--only``) that was run into it.

Only the attributes, the label coordinates, the ``done`` markers and the runs that marked
them (``run_index``) are read (not the fit variables), so that reading even a paper-sized
store takes well under a second. Cells and fits are counted as everywhere else
(docs/reference/cube-schema.md, Counts): a cell is one (data set, algorithm, init, kind,
percent, run, fold) entry the store's spec runs, Seeding only with its seeding kinds, and
every cell done, whatever spec wrote it; a fit is one per cell and s (every s of the data
set's grid for SKM and PCSKM), a fit shared by several cells counted in each. A done cell
without the selection scores its algorithm gets in the store (``scored`` markers) is
missing: the next run computes it again.
"""

from dataclasses import dataclass

import numpy as np

from pcskm.experiments.estimators import is_import_path
from pcskm.experiments.spec import parse_spec

from .fit_errors import error_lines
from .store import (
    applicable,
    complete_blocks,
    dataset_groups,
    definition_is_sparse,
    open_root,
    wanted_scores,
    where,
)
from .store.provenance import code_lines, read_run_index
from .tasks import matches, parse_only

CELLS_AND_FITS = ("cells = (data set, algorithm, init, kind, percent, run, fold) entries the "
                  "spec runs; fits = one per cell and s (SKM, PCSKM: every s of the data "
                  "set's grid), a fit shared by several cells counted in each")


@dataclass
class _Group:
    """What status needs of one data set's group."""

    name: str
    algorithms: tuple
    inits: tuple
    kinds: tuple
    percents: np.ndarray
    n_folds: int
    n_sparsity: int  # the s grid's length
    done: np.ndarray  # (algorithm, init, kind, percent, run)
    run_index: np.ndarray  # the run that marked each block done (store.provenance)


def _labels(array):
    return tuple(str(v) for v in array[:])


@dataclass
class _Store:
    attrs: dict
    spec: object  # the store's current spec (ExperimentSpec), for what it runs
    definitions: dict  # algorithm name -> its algorithm_definitions entry
    groups: list  # of _Group


def _complete(name, group, attrs, found):
    """The group's done blocks that carry the selection scores their algorithm gets, less
    those a repair would clear (``found``: a verification, or None)."""
    done = group["done"][:] if found is None else found.done_after_repair(name)
    scored = group["scored"][:] if "scored" in group else None
    wanted = wanted_scores(attrs.get("protocol", {}), attrs["algorithm_definitions"],
                           _labels(group["algorithm"]))
    return complete_blocks(done, scored, wanted)


def _read(path, found):
    root = open_root(path)
    attrs = root.attrs.asdict()
    groups = [
        _Group(name=name, algorithms=_labels(group["algorithm"]), inits=_labels(group["init"]),
               kinds=_labels(group["kind"]), percents=group["percent"][:],
               n_folds=group["fold"].shape[0], n_sparsity=group["sparsity"].shape[0] - 1,
               done=_complete(name, group, attrs, found), run_index=read_run_index(group))
        for name, group in dataset_groups(root)]
    return _Store(attrs=attrs,
                  spec=parse_spec(attrs["spec_toml"], default_name=attrs.get("spec_name", ""),
                                  check_external=False),
                  definitions=attrs["algorithm_definitions"],
                  groups=groups)


def _rows(store, selection):
    """Rows ``(dataset, algorithm, cells, done, missing, fits)`` within ``selection``."""
    rows = []
    for group in store.groups:
        if not matches(selection, "dataset", group.name):
            continue
        selected = np.array([matches(selection, "percent", p) for p in group.percents])
        n_runs = group.done.shape[-1]
        for a, algorithm in enumerate(group.algorithms):
            if not matches(selection, "algorithm", algorithm):
                continue
            cells = done = 0
            for i, init in enumerate(group.inits):
                for k, kind in enumerate(group.kinds):
                    if not (matches(selection, "init", init) and matches(selection, "kind", kind)):
                        continue
                    n_done = int(group.done[a, i, k][selected].sum())
                    done += n_done
                    cells += (int(selected.sum()) * n_runs
                              if applicable(store.spec, init, kind) else n_done)
            sparse = definition_is_sparse(store.definitions.get(algorithm, {}))
            cells, done = cells * group.n_folds, done * group.n_folds
            rows.append((group.name, algorithm, cells, done, cells - done,
                         done * (group.n_sparsity if sparse else 1)))
    return rows


def counts(path, found=None, selection=None):
    """Rows ``(dataset, algorithm, cells, done, missing, fits)`` of the store at ``path``
    within ``selection`` (a parsed ``--only``; None: all), fits of the done cells. With
    ``found`` (a :class:`pcskm.runner.store.integrity.Verification`), the cells of damaged chunks
    count as missing."""
    return _rows(_read(path, found), selection or {})


def _totals(rows):
    return tuple(sum(row[i] for row in rows) for i in range(2, 6))


def version_lines(path):
    """The runs recorded in a store on object storage, one line each (its tag, the time of
    its record, the cells it wrote, the snapshot id); none for a folder, which keeps no
    versions (docs/guide/hpc.md, "The store on object storage")."""
    runs = where(path).runs()
    if not runs:
        return []
    lines = [f"Runs (versions: pcskm.runner.open_cube({str(path)!r}, run=TAG)):"]
    for tag, written, record, snapshot in runs:
        if written is None:
            lines.append(f"  {tag}  unreadable: {record['unreadable']} (commit {snapshot})")
            continue
        killed = " (killed)" if record.get("killed") else ""
        lines.append(f"  {tag}  {written.isoformat(timespec='seconds')}  "
                     f"{record.get('cells', '?')} cells{killed}  spec {record.get('spec')}  "
                     f"commit {snapshot}")
    return lines


def _code_lines(store):
    """The code of the done cells of each user estimator, and of any algorithm whose done
    cells were computed by code other than its current definition
    (:func:`pcskm.runner.store.provenance.code_lines`)."""
    users = {name for name, definition in store.definitions.items()
             if is_import_path(definition.get("estimator", ""))}
    lines = code_lines([(g.algorithms, g.done, g.run_index, g.n_folds) for g in store.groups],
                       store.attrs, users)
    if not lines:
        return []
    return ["Code of the done cells (as each run recorded it; pcskm run --recompute-changed "
            "computes again those of other than the current code):", *lines]


def status_text(path, found=None):
    """The ``pcskm status`` text (``found``: see :func:`counts`)."""
    path = where(path).pinned()  # one snapshot of a repository for every line
    store = _read(path, found)
    header = ("dataset", "algorithm", "cells", "done", "missing", "fits")
    rows = _rows(store, {})
    total = ("total", "", *_totals(rows))
    table = [header, *[tuple(map(str, row)) for row in rows], tuple(map(str, total))]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = [f"store {path}: spec {store.attrs.get('spec_name')} "
             f"(hash {str(store.attrs.get('spec_hash'))[:12]})", CELLS_AND_FITS + "."]
    prereg = store.attrs.get("preregistration")
    if prereg:
        lines.insert(1, f"pre-registered (recorded with the cells): rule {prereg['rule']}, "
                        f"focus {prereg['focus']}, level {prereg['level']}, alpha "
                        f"{prereg['alpha']:g}; hypotheses and tests: pcskm report, section 0")
    for i, row in enumerate(table):
        lines.append("  ".join(cell.ljust(w) if j < 2 else cell.rjust(w)
                               for j, (cell, w) in enumerate(zip(row, widths, strict=True))))
        if i == 0 or i == len(table) - 2:
            lines.append("  ".join("-" * w for w in widths))
    selections = list(dict.fromkeys(run["selection"] for run in store.attrs.get("runs", [])
                                    if run.get("selection")))
    for text in selections:
        cells, done, missing, _ = _totals(_rows(store, parse_only(text)))
        lines.append(f"selection --only {text} (run into this store): {cells} cells, "
                     f"{done} done, {missing} missing")
    if selections:
        lines.append(f"whole spec: {total[2]} cells, {total[3]} done, {total[4]} missing")
    lines.extend(_code_lines(store))
    lines.extend(version_lines(path))
    errors = error_lines(path)
    if errors:
        lines.append("Failed fits of user estimators (status error; every message: "
                     "pcskm.runner.fit_errors.fit_errors(store)):")
        lines.extend(f"  {line}" for line in errors)
    lines.append("Failed fits (F = NaN) are counted by pcskm report (coverage.csv).")
    return "\n".join(lines)

"""What the cube holds: computed, missing and failed cells per data set, algorithm, init and
kind, and how the cube's grid differs from the paper's (docs/method/protocol.md §1)."""

import pandas as pd

from . import families

CELL = ("percent", "run", "fold")
PAPER_ALGORITHMS = ("LKM", "SKM", "PCKM", "MPCKM", "PCSKM")
PAPER_INITS = ("seeding", "dkm++", "robin", "maximin")
PAPER_KINDS = ("random", "must-link", "cannot-link")
PAPER_PERCENTAGES = tuple(p / 2 for p in range(2, 21))  # 1, 1.5, ..., 10
PAPER_RUNS, PAPER_FOLDS = 25, 10


def table(name, fits):
    """One row per (algorithm, init, kind) of data set ``name``: cells expected, computed and
    missing, fits computed and failed (a sparse algorithm has one fit per s), and the
    percentages with missing cells."""
    expected, computed = fits.expected, fits.computed
    missing = expected & ~computed
    n_fits = (fits.applies & computed).sum(("sparsity", *CELL))
    n_failed = fits.failed.sum(("sparsity", *CELL))
    pct_missing = missing.any(("run", "fold"))
    frame = pd.DataFrame({
        "cells": expected.sum(CELL).to_series(),
        "computed": computed.sum(CELL).to_series(),
        "missing": missing.sum(CELL).to_series(),
        "fits": n_fits.to_series(),
        "failed_fits": n_failed.to_series(),
    })
    frame["missing_percentages"] = [
        " ".join(f"{p:g}" for p in pct_missing.percent.values[
            pct_missing.sel(algorithm=a, init=i, kind=k).values])
        for a, i, k in frame.index
    ]
    frame = frame.reset_index()
    frame.insert(0, "dataset", name)
    frame[["algorithm", "init", "kind"]] = frame[["algorithm", "init", "kind"]].astype(str)
    return frame[frame.cells > 0].reset_index(drop=True)


def samples(name, fits):
    """One row per kind of data set ``name``: its (kind, percent, run, fold) combinations with
    an expected cell, and those with a computed one."""
    expected = fits.expected.any(("algorithm", "init"))
    computed = fits.computed.any(("algorithm", "init"))
    frame = pd.DataFrame({"samples": expected.sum(CELL).to_series(),
                          "computed_samples": computed.sum(CELL).to_series()}).reset_index()
    frame.insert(0, "dataset", name)
    frame["kind"] = frame["kind"].astype(str)
    return frame[frame.samples > 0].reset_index(drop=True)


# The counts of docs/reference/cube-schema.md ("Counts"), defined once for the report and the
# prose around it: (name, definition).
COUNTS = (
    ("cells", "(data set, algorithm, init, kind, percent, run, fold) entries the spec runs"),
    ("computed_cells", "cells computed"),
    ("samples", "(data set, kind, percent, run, fold) combinations: one fold split and one "
                "constraint draw each, shared by the algorithms and inits of the paired "
                "design (docs/method/protocol.md §6)"),
    ("computed_samples", "samples with a computed cell"),
    ("fits", "(cell, s) entries computed: one per cell for LKM, PCKM and MPCKM, one per s "
             "of the grid for SKM and PCSKM; a fit shared by several cells counted in each"),
    ("failed_fits", "fits with status {failures} (F = NaN)"),
)


def flag_list(flags):
    """"a, b or c": the statuses ``flags`` in a sentence."""
    flags = list(flags)
    return " or ".join([", ".join(flags[:-1]), flags[-1]] if len(flags) > 1 else flags)


def counts(coverage_table, samples_table, failure_flags=("empty_cluster", "degenerate_weights")):
    """The totals of :data:`COUNTS` over the cube: ``count``, ``value``, ``definition`` (the
    failed fits' with the store's ``failure_flags``, :attr:`fits.Store.failure_flags`)."""
    totals = {**coverage_table[["cells", "computed", "fits", "failed_fits"]].sum().rename(
        {"computed": "computed_cells"}).to_dict(),
        **samples_table[["samples", "computed_samples"]].sum().to_dict()}
    return pd.DataFrame([{"count": name, "value": int(totals[name]),
                          "definition": text.format(failures=flag_list(failure_flags))}
                         for name, text in COUNTS])


def grid_differences(store, results):
    """Sentences naming how the cube's grid differs from the paper's study (a data set of
    the user's own is a family of its own, :func:`families.family_of`)."""
    notes = []
    absent = [f.label for f in families.PAPER_STUDY if f.label not in results.family_members]
    if absent:
        notes.append("data sets not in the cube: " + ", ".join(absent))
    for label, members in results.family_members.items():
        family = families.family_of(members[0])
        if members[0] in family.members and len(members) < family.n_members:
            notes.append(f"{label}: {len(members)} of {family.n_members} subsets in the cube "
                         f"({', '.join(members)}); its values average these only")
        if members[0] not in family.members:
            notes.append(f"{label}: {', '.join(members)} stands in for {label} (same data, "
                         "same folds and constraint samples)")
    coords = {"algorithm": set(), "init": set(), "kind": set(), "percent": set(), "run": set(),
              "fold": set()}
    for name in store.names:
        group = store.group(name)
        for dim in coords:
            coords[dim].update(group[dim].values.tolist())
    for dim, paper in (("algorithm", PAPER_ALGORITHMS), ("init", PAPER_INITS),
                       ("kind", PAPER_KINDS)):
        lacking = [v for v in paper if v not in coords[dim]]
        extra = sorted(str(v) for v in coords[dim] - set(paper))
        if lacking:
            notes.append(f"{dim}s not in the cube: {', '.join(lacking)}")
        if extra:
            notes.append(f"{dim}s beyond the paper's figures: {', '.join(extra)}")
    percents = sorted(coords["percent"])
    if percents != list(PAPER_PERCENTAGES):
        notes.append("percentages: " + ", ".join(f"{p:g}" for p in percents)
                     + f" ({len(percents)} values; the paper: 1 to 10 in steps of 0.5, 19 values)")
    if len(coords["run"]) != PAPER_RUNS:
        notes.append(f"runs: {len(coords['run'])} (the paper: {PAPER_RUNS})")
    if len(coords["fold"]) != PAPER_FOLDS:
        notes.append(f"folds: {len(coords['fold'])} (the paper: {PAPER_FOLDS})")
    return notes

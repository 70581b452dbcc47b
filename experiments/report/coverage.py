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


def grid_differences(store, results):
    """Sentences naming how the cube's grid differs from the paper's study."""
    notes = []
    absent = [f.label for f in families.PAPER_STUDY if f.label not in results.family_members]
    if absent:
        notes.append("data sets not in the cube: " + ", ".join(absent))
    for label, members in results.family_members.items():
        family = next(f for f in families.ALL if f.label == label)
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

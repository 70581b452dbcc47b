"""The paper's Table 1 (docs/method/protocol.md §4.1): the printed numbers, our nominal computation,
the actual counts of the protocol (fold 0) and the counts found in the cube."""

import pandas as pd

from .._datafiles import ChecksumError, DataNotFoundError
from ..datasets import dataset_info, load
from ..protocol import Protocol
from ..table1 import ROWS, actual, nominal

# The paper's printed table (datastats): points, CV10 labels, CV10 constraints, [1 %, 10 %].
PRINTED = {
    "fisheriris": (150, 135, 9045, (90, 905)),
    "ionosphere": (351, 316, 49738, (497, 4974)),
    "digits 0-4-8 and 3-8-9": (150, 135, 9045, (90, 905)),
    "Morris Water Maze TT-SC-ST": (424, 382, 72618, (726, 7262)),
    "Morris Water Maze TT-CH-ST": (406, 365, 66576, (666, 6658)),
    "Brodinova (2 sets)": (120, 108, 5778, (58, 578)),
}
STAND_INS = {"fisheriris": ("iris",)}


def _actual(members, seed, n_folds):
    """(t, P1, (m at 1 %, m at 10 %)) and the data set it comes from (the row's first member,
    else its stand-in), or None and the reason the data could not be loaded."""
    reasons = []
    for name in (members[0], *STAND_INS.get(members[0], ())):
        try:
            data = load(name)
        except (DataNotFoundError, ChecksumError, OSError) as error:
            reasons.append(f"{name}: {type(error).__name__}")
            continue
        return actual(Protocol(data, seed=seed, n_folds=n_folds)), name
    return None, "; ".join(reasons)


def _cube_counts(label, members, used):
    """The cube's constraint counts m at 1 % and 10 % (kind random if present) for the
    row's data sets in the cube."""
    if used.empty:
        return ""
    names = [*members, *STAND_INS.get(members[0], ())]
    rows = used[used.dataset.isin(names) & used.percent.isin([1.0, 10.0])
                & (used.m != "not computed")]
    if rows.empty:
        return ""
    values = rows.groupby("percent").m.agg(lambda m: "/".join(sorted(set(m))))
    return "[" + ", ".join(f"{p:g}%: {values[p]}" for p in values.index) + "]"


def table(store, constraints_used):
    """Rows of Table 1: printed, nominal (ours), actual (fold 0 of our folds) and in the cube;
    ``nominal_matches`` says whether our nominal numbers are the printed ones."""
    protocol = store.attrs.get("protocol") or {}
    seed, n_folds = int(protocol.get("seed", 0)), int(protocol.get("n_folds", 10))
    rows = []
    for label, members in ROWS:
        points = dataset_info(members[0])["n"]
        labels, pool, used = nominal(points)
        printed = PRINTED[label]
        actual, source = _actual(members, seed, n_folds)
        rows.append({
            "dataset": label, "points": points,
            "printed": f"{printed[1]}, {printed[2]}, [{printed[3][0]}, {printed[3][1]}]",
            "nominal": f"{labels}, {pool}, [{used[0]}, {used[1]}]",
            "nominal_matches": (points, labels, pool, used) == printed,
            "actual_fold0": (f"{actual[0]}, {actual[1]}, [{actual[2][0]}, {actual[2][1]}]"
                             if actual else f"data not available ({source})"),
            "actual_from": source if actual else "",
            "in_cube": _cube_counts(label, members, constraints_used),
        })
    return pd.DataFrame(rows)

"""The paper's Table 1 ("Data set constraints", docs/method/protocol.md §4.1), nominal and actual.

Nominal (the paper's printed numbers, authors' ``CVstatsPer.m``): L = 0.9 N kept fractional,
pool = (L^2 - L) / 2, used = pool pct / 100, each rounded half away from zero; computed here in
exact rational arithmetic. Actual: what the protocol uses, from fold 0's training size t:
P1 = t (t - 1) / 2 and the even counts of ``Protocol.count``.
"""

from fractions import Fraction

from .datasets import load
from .protocol import Protocol

# The rows of the paper's table and the data sets behind each.
ROWS = (
    ("fisheriris", ("fisheriris",)),
    ("ionosphere", ("ionosphere",)),
    ("digits 0-4-8 and 3-8-9", tuple(f"digits{c}-{s}" for c in ("048", "389")
                                     for s in range(1, 11))),
    ("Morris Water Maze TT-SC-ST", ("mwm-ttscst",)),
    ("Morris Water Maze TT-CH-ST", ("mwm-ttchst",)),
    ("Brodinova (2 sets)", ("brodinova-5-5", "brodinova-3-7")),
)
PERCENTAGES = (1, 10)


def round_half_away(value):
    """Round a Fraction half away from zero (never Python's half-to-even ``round``)."""
    value = Fraction(value)
    magnitude = (abs(value.numerator) * 2 + value.denominator) // (2 * value.denominator)
    return magnitude if value >= 0 else -magnitude


def nominal(n_points, percentages=PERCENTAGES):
    """``(L, pool, used)`` of the paper's table for N points, rounded; ``used`` per
    percentage."""
    labels = Fraction(9, 10) * n_points
    pool = (labels * labels - labels) / 2
    used = tuple(round_half_away(pool * Fraction(str(p)) / 100) for p in percentages)
    return round_half_away(labels), round_half_away(pool), used


def actual(protocol, percentages=PERCENTAGES):
    """``(t, P1, used)`` that the protocol uses (fold 0's training size)."""
    t = len(protocol.train_index(0))
    return t, protocol.pool_size, tuple(protocol.count(p) for p in percentages)


def table1(data_dir=None, seed=0):
    """The rows of the paper's Table 1 with the nominal and the actual numbers, as dicts
    (``dataset``, ``members``, ``points``, ``nominal_labels``, ``nominal_pool``,
    ``nominal_used``, ``actual_labels``, ``actual_pool``, ``actual_used``); ``*_used`` are
    the counts at 1 % and 10 %."""
    rows = []
    for label, members in ROWS:
        values = set()
        for name in members:
            dataset = load(name, data_dir)
            values.add((dataset.n_samples, *actual(Protocol(dataset, seed=seed))))
        if len(values) != 1:  # cannot happen with 10 folds: digits 50 per class, Brodinova 40
            raise ValueError(f"the data sets of the row {label!r} differ: {sorted(values)}")
        n_points, t, pool, used = values.pop()
        nominal_labels, nominal_pool, nominal_used = nominal(n_points)
        rows.append({
            "dataset": label, "members": members, "points": n_points,
            "nominal_labels": nominal_labels, "nominal_pool": nominal_pool,
            "nominal_used": nominal_used,
            "actual_labels": t, "actual_pool": pool, "actual_used": used,
        })
    return rows


def format_table1(rows):
    """A plain-text rendering of ``table1()``."""
    header = ("data set", "points", "nominal L", "nominal pool", "nominal [1%, 10%]",
              "actual t", "actual P1", "actual [1%, 10%]")
    lines = [header]
    for row in rows:
        lines.append((
            row["dataset"], str(row["points"]), str(row["nominal_labels"]),
            str(row["nominal_pool"]), "[{}, {}]".format(*row["nominal_used"]),
            str(row["actual_labels"]), str(row["actual_pool"]),
            "[{}, {}]".format(*row["actual_used"]),
        ))
    widths = [max(len(line[j]) for line in lines) for j in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )

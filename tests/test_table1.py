"""The paper's Table 1 (protocol.md §4.1): nominal numbers as printed, actual ones from the
protocol's folds."""

from fractions import Fraction

import pytest

from pcskm.experiments.table1 import format_table1, nominal, round_half_away, table1

# The paper's table (datastats): points -> CV10 labels, CV10 constraints, [1 %, 10 %]
PRINTED = {
    150: (135, 9045, (90, 905)),
    351: (316, 49738, (497, 4974)),
    424: (382, 72618, (726, 7262)),
    406: (365, 66576, (666, 6658)),
    120: (108, 5778, (58, 578)),
}
# protocol.md §4.1: the actual (t, P1, [1 %, 10 %]) each fold-0 size can give
ACTUAL = {
    "fisheriris": {(135, 9045, (90, 906))},
    "digits 0-4-8 and 3-8-9": {(135, 9045, (90, 906))},
    "ionosphere": {(317, 50086, (502, 5010)), (316, 49770, (498, 4978)),
                   (315, 49455, (496, 4946))},
    "Morris Water Maze TT-SC-ST": {(383, 73153, (732, 7316)), (382, 72771, (728, 7278)),
                                   (381, 72390, (724, 7240)), (380, 72010, (720, 7202))},
    "Morris Water Maze TT-CH-ST": {(367, 67161, (672, 6716)), (366, 66795, (668, 6680)),
                                   (365, 66430, (664, 6644)), (364, 66066, (662, 6608))},
    "Brodinova (2 sets)": {(108, 5778, (58, 578))},
}


@pytest.mark.parametrize("points", sorted(PRINTED))
def test_nominal_numbers_are_the_printed_ones(points):
    assert nominal(points) == PRINTED[points]


def test_round_half_away_from_zero():
    assert [round_half_away(Fraction(v)) for v in ("0.5", "1.5", "2.5", "-2.5", "904.5",
                                                   "90.45", "2.4999")] == [1, 2, 3, -3, 905,
                                                                           90, 2]


@pytest.mark.parametrize("seed", [0, 3])
def test_table_rows(data_dir, seed):
    rows = table1(data_dir, seed=seed)
    assert [row["dataset"] for row in rows] == list(ACTUAL)[:1] + ["ionosphere"] + [
        "digits 0-4-8 and 3-8-9", "Morris Water Maze TT-SC-ST", "Morris Water Maze TT-CH-ST",
        "Brodinova (2 sets)"]
    for row in rows:
        printed = PRINTED[row["points"]]
        assert (row["nominal_labels"], row["nominal_pool"], row["nominal_used"]) == printed
        actual = (row["actual_labels"], row["actual_pool"], row["actual_used"])
        assert actual in ACTUAL[row["dataset"]], row
    assert len(rows[2]["members"]) == 20 and len(rows[-1]["members"]) == 2
    text = format_table1(rows)
    assert "[90, 905]" in text and "[90, 906]" in text and "72618" in text

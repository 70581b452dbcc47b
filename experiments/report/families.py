"""The data sets as the paper reports them (docs/method/protocol.md §9-§11): a *family* is one
column of a figure or one data set of a Wilcoxon case, made of one or more cube groups (the ten
digits subsets of "digits 0-4-8" are averaged after every per-subset step). A cube group that
belongs to none of the paper's families (a data set of the user's own) is a family of its own,
labelled with its name (:func:`reported`)."""

from dataclasses import dataclass

N_SUBSETS = 10


@dataclass(frozen=True)
class Family:
    """A reported data set: its label and the cube groups it averages (``members``);
    ``stand_ins`` replace the members when none of them is in the cube (iris stands for
    fisheriris, docs/method/protocol.md §12)."""

    label: str
    members: tuple
    stand_ins: tuple = ()

    def present(self, names):
        """The members (or stand-ins) that are groups of the cube, and the label to show."""
        found = tuple(name for name in self.members if name in names)
        if found or not self.stand_ins:
            return found, self.label
        found = tuple(name for name in self.stand_ins if name in names)
        return found, (f"{' '.join(found)} (= {self.label})" if found else self.label)

    @property
    def n_members(self):
        return len(self.members)


def _subsets(prefix):
    return tuple(f"{prefix}-{i}" for i in range(1, N_SUBSETS + 1))


# The six real data sets of Figure 1 and of both Wilcoxon analyses, in the paper's order.
PAPER_SIX = (
    Family("ionosphere", ("ionosphere",)),
    Family("fisheriris", ("fisheriris",), stand_ins=("iris",)),
    Family("digits 0-4-8", _subsets("digits048")),
    Family("digits 3-8-9", _subsets("digits389")),
    Family("TT-SC-ST", ("mwm-ttscst",)),
    Family("TT-CH-ST", ("mwm-ttchst",)),
)
BRODINOVA = (
    Family("Brodinova 5+5", ("brodinova-5-5",)),
    Family("Brodinova 3+7", ("brodinova-3-7",)),
)
CONTAMINATED = (
    Family("digits 0-4-8 contaminated", _subsets("digits048-contaminated")),
    Family("digits 3-8-9 contaminated", _subsets("digits389-contaminated")),
)
# The data sets of the paper's study.
PAPER_STUDY = (*PAPER_SIX, *BRODINOVA, *CONTAMINATED)
# Not in the paper: the digits with four shuffled pixel columns appended
# (docs/method/datasets.md §5.1).
SHUFFLED = (
    Family("digits 0-4-8 shuffled", _subsets("digits048-shuffled")),
    Family("digits 3-8-9 shuffled", _subsets("digits389-shuffled")),
)
ALL = (*PAPER_STUDY, *SHUFFLED)
# Figure 2 (main and appendix A/B): the synthetic and Morris Water Maze sets.
WEIGHT_FAMILIES = (*BRODINOVA, PAPER_SIX[4], PAPER_SIX[5])


# The label of a row pooled over every data set of a table (failures, ties).
ALL_DATASETS = "all data sets"


def family_of(name):
    """The family a cube group belongs to: one of :data:`ALL`, else a family of its own
    labelled ``name``."""
    for family in ALL:
        if name in family.members or name in family.stand_ins:
            return family
    return Family(name, (name,))


def reported(names):
    """The reported data sets of a cube whose groups are ``names``: the families of
    :data:`ALL` with a member (or stand-in) among them, in the paper's order, then every
    other group as a family of its own, in the cube's order."""
    known = [family for family in ALL if family.present(names)[0]]
    return (*known, *(Family(name, (name,)) for name in names
                      if not any(name in f.members or name in f.stand_ins for f in known)))


def paper_labels(results, study=PAPER_SIX):
    """The labels of the families of ``study`` (default: the paper's six) in the cube."""
    labels = {family.label for family in study}
    return [label for label in results.family_members if label in labels]


def count(data, name, family, **where):
    """The count ``name`` (``n_cells``: computed, ``n_expected``: in the spec) of the family
    aggregates ``data`` (``Results.families``) summed at ``where`` (e.g. ``selection``,
    ``init``, ``kind``, ``algorithm``); 0 when the cube has no such family or label."""
    if data is None or family not in data.family.values:
        return 0
    try:
        return int(data[name].sel(family=family, **where).sum())
    except KeyError:
        return 0

"""``python -m pcskm.experiments.report.folder_robustness FOLDER``: ``robustness.csv`` of a
committed report folder whose store is not at hand (docs/method/statistics.md, "Fragility of
the primary tests"), from the values the folder's tests read (``baseline_values.csv.gz``,
:func:`baseline.read`), with the report's own functions: the pre-registered tests are
recomputed from those values and must be the folder's ``preregistered_tests.csv`` (every
column, to 1e-9) before :func:`robustness.table` is written.
"""

import argparse
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from ..spec import Preregistration, preregistration_record
from . import baseline, preregistered, robustness, statistics
from .csv_files import write_csv


def _prereg(folder, spec):
    """The :class:`Preregistration` of ``spec`` (default: the spec named by the folder's
    record, experiments/specs/<name>.toml)."""
    if spec is None:
        name = baseline.read(folder).record.get("spec_name")
        spec = Path(__file__).parents[1] / "specs" / f"{name}.toml"
    stated = tomllib.loads(Path(spec).read_text()).get("preregistration")
    if not isinstance(stated, dict):
        raise ValueError(f"{spec} states no [preregistration]")
    return Preregistration(**preregistration_record(stated))


def folder_results(folder):
    """A stand-in for the report's ``Results`` from a report folder's baseline files: the
    family values (:func:`baseline.read`), their labels and selections; what the tests
    read."""
    read = baseline.read(folder)
    labels = [str(f) for f in read.values.family.values]
    return SimpleNamespace(families=read.values, family_labels={label: label for label in labels},
                           selections=tuple(map(str, read.values.selection.values)))


def from_folder(folder, spec=None):
    """``robustness.csv`` of a committed report folder: the pre-registered tests recomputed
    from its ``baseline_values.csv.gz`` with the report's own functions, checked against its
    ``preregistered_tests.csv`` (ValueError naming the first column that differs), then
    :func:`table`."""
    folder = Path(folder)
    prereg = _prereg(folder, spec)
    results = folder_results(folder)
    plan = statistics.study_plan(results, prereg.focus)
    tests, cases = statistics.analyses(results, plan, prereg.failures)
    primary = preregistered.family(tests, prereg.rule, prereg.focus, prereg.level,
                                   prereg.alpha)
    committed = pd.read_csv(folder / "preregistered_tests.csv")
    for column in committed.columns:
        mine, theirs = primary[column], committed[column]
        same = (np.allclose(mine.astype(float), theirs.astype(float), rtol=1e-9, atol=0,
                            equal_nan=True) if pd.api.types.is_numeric_dtype(theirs)
                else (mine.astype(str) == theirs.astype(str)).all())
        if not same:
            raise ValueError(f"{folder}: the primary tests recomputed from {baseline.VALUES_FILE}"
                             f" differ from preregistered_tests.csv in column {column!r}")
    return robustness.table(robustness.units(cases, prereg.rule, prereg.level), prereg.rule,
                            prereg.level, prereg.alpha, prereg.rope)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m pcskm.experiments.report.folder_robustness",
        description="Write robustness.csv of a committed report folder from its baseline "
                    "values (the primary tests recomputed and checked first).")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--spec", type=Path, default=None,
                        help="the spec whose [preregistration] the folder's tests used "
                             "(default: experiments/specs/<the folder's spec_name>.toml)")
    args = parser.parse_args(argv)
    try:
        found = from_folder(args.folder, args.spec)
    except ValueError as error:
        sys.exit(f"error: {error}")
    write_csv(found, args.folder / robustness.FILE)
    print(found.to_string(index=False))


if __name__ == "__main__":
    main()

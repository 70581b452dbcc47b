"""A report whose focus has no used case says so in its summary, with the failures that
caused it (issue 47, point 2)."""

import re

from pcskm.experiments import load_spec


def test_a_focus_without_used_case_says_why_before_the_headline(own_study):
    """The focus FAILS fails every fit: each (data set, init, kind, percent) of the spec has
    all its n_runs x n_folds fits failed, and the summary names them before the n/a
    headline."""
    folder, report = own_study
    spec = load_spec(folder / "own.toml")
    summary = (report / "report.md").read_text().split("**Contents**")[0]
    note = re.search(r"\*\*No comparison\*\*: (.*)", summary)
    assert note is not None, summary
    assert summary.index("**No comparison**") < summary.index("**Headline**")
    n_fits = spec.n_runs * spec.n_folds
    n_cases = len(spec.datasets) * len(spec.inits) * len(spec.kinds)
    assert f"({n_cases} with V = NaN; section 5)" in note.group(1)
    assert "100% of its fits failed in all" in note.group(1)
    for dataset in spec.datasets:
        for percent in spec.percentages:
            assert re.search(rf"{dataset}[^/;]* / dkm\+\+ / random / {percent:g} %: {n_fits} "
                             rf"of {n_fits} fits failed", note.group(1))  # "iris (= ...)"


def test_a_focus_with_used_cases_gets_no_such_note(smoke_report):
    _, path = smoke_report
    assert "**No comparison**" not in path.read_text()

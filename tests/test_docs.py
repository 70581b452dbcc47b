"""What a user reads: every Python block of the README and of the documentation runs, every
link to a file of the repository resolves, and nothing points outside the repository."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
GENERATED = ("_build", "generated")
PAGES = [REPO / "README.md"] + sorted(
    page for page in (REPO / "docs").rglob("*.md")
    if not set(page.relative_to(REPO / "docs").parts) & set(GENERATED)
)
FENCE = re.compile(r"^(```+|:::+)[^\n]*\n.*?^\1[ \t]*$", re.S | re.M)
PYTHON = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
# A page marked so is a worked example in a folder of its own: its blocks run in order, files
# saved, commands run (:func:`test_worked_example_pages_run`).
WORKED = "% Every block of this page runs in the tests"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _name(page):
    return str(page.relative_to(REPO))


def python_blocks(page):
    return PYTHON.findall(page.read_text())


@pytest.fixture(scope="module")
def quick_cube_folder(smoke_report, tmp_path_factory):
    """A working folder whose ``results/quick.zarr`` is a computed cube: the smoke cube
    (iris and brodinova-5-5, DKM++ and Seeding, kind random, 1 % and 10 %), which holds
    every coordinate the documentation's examples select."""
    folder = tmp_path_factory.mktemp("docs-examples")
    (folder / "results").mkdir()
    (folder / "results" / "quick.zarr").symlink_to(smoke_report[0], target_is_directory=True)
    return folder


def worked_example(page):
    return page.read_text().startswith(WORKED)


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p) and not
                                  worked_example(p)], ids=_name)
def test_python_blocks_run(page, quick_cube_folder, monkeypatch):
    """The blocks of a page run in order in one namespace, as a reader would paste them."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.chdir(quick_cube_folder)
    namespace = {"__name__": "__docs__"}
    for number, block in enumerate(python_blocks(page), start=1):
        try:
            exec(compile(block, f"{_name(page)} block {number}", "exec"), namespace)
        except Exception as error:
            raise AssertionError(f"{_name(page)}, Python block {number} fails: {error!r}\n"
                                 f"{block}") from error
    plt.close("all")


def _links(page):
    text = FENCE.sub("", page.read_text())
    text = re.sub(r"`[^`\n]*`", "", text)
    return [target for target in LINK.findall(text)
            if not re.match(r"^[a-z]+:|^#|^<", target)]


LINKED = [p for p in [*PAGES, *sorted((REPO / "docs" / "results").rglob("README.md"))]
          if _links(p)]


@pytest.mark.parametrize("page", LINKED, ids=_name)
def test_links_inside_the_repository_resolve(page):
    broken = []
    for target in _links(page):
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.exists():
            broken.append(target)
        elif not path.is_relative_to(REPO):
            broken.append(f"{target} (outside the repository)")
    assert not broken, f"{_name(page)} links to files that do not exist: {broken}"


def test_nothing_a_user_reads_points_outside_the_repository():
    """Code, docs and README cite the project's own docs/, never a folder beside it."""
    pattern = re.compile(r"shared/spec|\.\./shared|shared/pcskm-data|shared/paper")
    folders = ["algorithms", "experiments", "runner", "docs"]
    files = [REPO / "README.md", REPO / "__init__.py", REPO / "pyproject.toml"]
    for folder in folders:
        files += [f for f in (REPO / folder).rglob("*")
                  if f.is_file() and f.suffix in {".py", ".md", ".toml", ".csv", ".txt"}
                  and not set(f.relative_to(REPO).parts) & set(GENERATED)]
    offending = [f"{f.relative_to(REPO)}:{n}" for f in files
                 for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1)
                 if pattern.search(line)]
    assert not offending, f"these lines point outside the repository: {offending}"


def test_the_site_builds_without_warnings(tmp_path):
    """The Sphinx site (user guide, method reference, API from the docstrings) builds with
    every warning an error: a broken cross-reference or a link to a missing file fails."""
    out = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp_path / "doctrees"), str(REPO / "docs"), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "html" / "method" / "deviations.html").is_file()
    assert (tmp_path / "html" / "reference" / "generated" / "pcskm.PCSKMeans.html").is_file()


TOML = re.compile(r"^```toml[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
SPECS = [(page, number, block) for page in PAGES if not worked_example(page)
         for number, block in enumerate(TOML.findall(page.read_text()), start=1)
         if re.search(r"^name\s*=", block, re.M)]


@pytest.mark.parametrize("page, number, block", SPECS,
                         ids=[f"{_name(p)}-{n}" for p, n, _ in SPECS])
def test_spec_examples_are_valid_specs(page, number, block):
    from pcskm.experiments import parse_spec

    spec = parse_spec(block, source=f"{_name(page)} TOML block {number}")
    assert spec.datasets and spec.algorithms


BLOCK = re.compile(r"^```([a-z]*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
SAVED = re.compile(r"\A# file: (\S+)\n")


# The own-method guide runs a whole study of its own (about 50 s): in the slow suite.
SLOW_PAGES = {"own-method-and-data.md"}


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.slow)
                                  if Path(p).name in SLOW_PAGES else p
                                  for p in PAGES if worked_example(p)], ids=_name)
def test_worked_example_pages_run(page, tmp_path, monkeypatch):
    """A worked example runs as a reader follows it, in an empty folder: a block whose first
    line is ``# file: NAME`` is saved as NAME, the other Python blocks run in one namespace,
    and every ``pcskm ...`` line of a bash block runs and exits 0 (its output is printed).
    A report it writes compares: its headline has no n/a test."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # a reader's `python` starts in the folder
    namespace = {"__name__": "__docs__"}
    for number, (language, block) in enumerate(BLOCK.findall(page.read_text()), start=1):
        where = f"{_name(page)}, block {number} ({language})"
        saved = SAVED.match(block)
        if saved:
            (tmp_path / saved.group(1)).write_text(block)
        elif language == "python":
            try:
                exec(compile(block, where, "exec"), namespace)
            except Exception as error:
                raise AssertionError(f"{where} fails: {error!r}\n{block}") from error
        elif language == "bash":
            for line in block.splitlines():
                command = line.split("#")[0].strip()
                if not command.startswith("pcskm "):
                    continue
                out = subprocess.run(
                    [sys.executable, "-m", "pcskm.runner.cli", *shlex.split(command)[1:]],
                    capture_output=True, text=True, timeout=600)
                print(f"$ {command}\n{out.stdout}{out.stderr}")
                assert out.returncode == 0, f"{where}: {command} exits {out.returncode}\n" \
                                            f"{out.stdout}{out.stderr}"
    plt.close("all")
    for report in tmp_path.glob("results/*-report/report.md"):  # the comparisons it promises
        summary = report.read_text().split("**Contents**")[0]
        assert "**Headline**" in summary and "n/a (p n/a" not in summary, \
            f"{_name(page)}: the report compares nothing\n{summary}"


ESTIMATORS = ["LloydKMeans", "SparseKMeans", "PCKMeans", "MPCKMeans", "PCSKMeans"]


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_public_estimator_has_examples_that_run(name):
    """The Examples section of each public estimator's docstring (numpydoc) runs as a doctest:
    an example that raises or prints another value than the one written fails."""
    import doctest

    from numpydoc.docscrape import ClassDoc

    import pcskm

    cls = getattr(pcskm, name)
    examples = "\n".join(ClassDoc(cls, config={"show_class_members": False})["Examples"])
    test = doctest.DocTestParser().get_doctest(examples, {}, name, None, 0)
    assert test.examples, f"{name} has no Examples section"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    report = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_estimator_docstrings_document_every_parameter_and_attribute(name):
    """numpydoc renders "name : type" followed by an indented description; every constructor
    parameter and every fitted attribute has a description, and the docs pages the docstring
    cites are Sphinx links, not plain text."""
    import inspect

    from numpydoc.docscrape import ClassDoc

    import pcskm

    cls = getattr(pcskm, name)
    if name in ("LloydKMeans", "SparseKMeans"):  # "the same parameters as" their parent
        cls = cls.__mro__[1]
    doc = ClassDoc(cls, config={"show_class_members": False})
    described = {p.name: p for p in doc["Parameters"]}
    assert set(described) == set(inspect.signature(cls).parameters)
    assert all(p.desc for p in doc["Parameters"]), [p.name for p in doc["Parameters"]
                                                    if not p.desc]
    attributes = doc["Attributes"]
    assert all(a.type and a.desc for a in attributes), [a.name for a in attributes]
    X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0]])
    fitted = cls(n_clusters=2, init=X[[0, 2]]).fit(X)
    assert {a.name for a in attributes} == {key for key in vars(fitted)
                                            if key.endswith("_") and not key.startswith("_")}
    assert not re.search(r"(?<!`)docs/method/\w+\.md", inspect.getdoc(cls))


def _documented_statuses():
    """``{name: meaning}`` of the status table of docs/reference/cube-schema.md."""
    text = (REPO / "docs/reference/cube-schema.md").read_text().split("### Status codes")[1]
    rows = re.findall(r"^\| (\d+) \| `(\w+)` \| (.+) \|$", text, re.M)
    return {name: meaning for _, name, meaning in rows}


def test_the_cube_recipes_count_every_status(smoke_report, tmp_path, monkeypatch):
    """cube.md's recipes on a cube whose ``status`` holds every code of the store's flags
    (each entry the code of its flat index modulo their number): the failed fits they count,
    the fits they pool and the entries they keep are a plain count over the codes, with the
    failed and fitted statuses read from the schema's table (the recipe once counted codes 3
    and 4 only, and missed error)."""
    import shutil

    import zarr

    from pcskm.runner import STATUS_FLAGS

    documented = _documented_statuses()
    assert list(documented) == list(STATUS_FLAGS)  # every code of the store, documented
    failure = {name for name, meaning in documented.items() if meaning.startswith("failed")}
    with_fit = {name for name, meaning in documented.items() if meaning.startswith("the fit")}
    assert "error" in failure and len(with_fit) == 2

    store = tmp_path / "results" / "quick.zarr"
    shutil.copytree(smoke_report[0], store)
    raw = {}
    for name in ("iris", "brodinova-5-5"):
        status = zarr.open_group(store / name, mode="r+")["status"]
        assert status.attrs["flag_meanings"] == " ".join(STATUS_FLAGS)
        codes = np.arange(status.size) % len(STATUS_FLAGS)
        status[...] = codes.reshape(status.shape).astype(status.dtype)
        raw[name] = status[...]

    def count(values, names):
        """Per leading index (algorithm, init, kind, percent), the entries of ``values``
        whose flag is in ``names``: a plain loop."""
        out = np.zeros(values.shape[:4], int)
        for index in np.ndindex(values.shape):
            out[index[:4]] += STATUS_FLAGS[values[index]] in names
        return out

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    for number, block in enumerate(python_blocks(REPO / "docs/guide/cube.md"), start=1):
        exec(compile(block, f"docs/guide/cube.md block {number}", "exec"), namespace)
    plt.close("all")
    dims = ["algorithm", "init", "kind", "percent"]
    np.testing.assert_array_equal(namespace["failed"].transpose(*dims).values,
                                  count(raw["iris"], failure))
    assert int(namespace["failed"].sum()) > 0
    n_ok = namespace["n_ok"].sum(["run", "fold"]).transpose(*dims).values
    np.testing.assert_array_equal(n_ok, count(raw["brodinova-5-5"], with_fit))
    kept = count(raw["brodinova-5-5"], set(STATUS_FLAGS) - {"not_applicable"})
    assert len(namespace["frame"]) == kept.sum()  # the smoke cube's one kind: random


def test_the_cli_references_global_usage_is_the_parsers():
    """docs/reference/cli.md's global usage names every subcommand of ``pcskm`` (it once left
    out ``compile``)."""
    from pcskm.runner.cli import build_parser

    text = (REPO / "docs/reference/cli.md").read_text().split("## Global options")[1]
    usage = re.search(r"^```text\n(usage: pcskm .*?)^```", text, re.S | re.M).group(1)
    assert usage.split() == build_parser().format_usage().split()


def test_the_readmes_test_suite_figures_are_those_of_its_timing_file():
    """The README's time, test count, commit and date of the test suite are those of
    docs/results/speed/test_suite.txt (a figure as of its date, which later tests do not make
    stale)."""
    timing = (REPO / "docs/results/speed/test_suite.txt").read_text()
    commit, date = re.search(r"# at commit (\w+), (\d{4}-\d\d-\d\d)T", timing).groups()
    failed, passed, minutes, seconds = re.search(
        r"^(?:(\d+) failed, )?(\d+) passed, .* in [\d.]+s \(0:(\d\d):(\d\d)\)$", timing,
        re.M).groups()
    readme = " ".join((REPO / "README.md").read_text().split())
    counts = f"{int(passed):,} tests passed" + (f", {failed} failed," if failed else ";")
    assert (f"took {int(minutes)} min {int(seconds)} s on such a VM at commit {commit} "
            f"({date}: {counts}") in readme


def test_the_landing_pages_finding_is_the_preregistered_tests():
    """docs/index.md's verdicts, counts and Holm p values are those of the primary protocol's
    preregistered_tests.csv (H1 to H4: PCSKM against LKM, SKM, PCKM and MPCKM)."""
    import pandas as pd

    tests = pd.read_csv(REPO / "docs/results/confirmatory/standardised/preregistered_tests.csv")
    assert list(tests.y) == ["LKM", "SKM", "PCKM", "MPCKM"] and set(tests.n) == {42}

    def clause(number, row):
        wins = f"better on {row.wins} of {row.n} data sets" if number == 1 else \
            f"{row.wins} of {row.n}"
        return f"{row.y} (H{number}: {wins}, Holm p {row.p_holm:.2g})"

    def listed(clauses):
        return clauses[0] if len(clauses) == 1 else \
            f"{', '.join(clauses[:-1])} and {clauses[-1]}"

    clauses = {verdict: [clause(number, row) for number, row in
                         enumerate(tests.itertuples(), start=1) if row.verdict == verdict]
               for verdict in ("PCSKM better", "no difference")}
    assert sum(map(len, clauses.values())) == len(tests)
    page = " ".join((REPO / "docs/index.md").read_text().split())
    assert "(42 real data sets" in page
    assert (f"found PCSKM better than {listed(clauses['PCSKM better'])}, and no difference "
            f"shown with {listed(clauses['no difference'])}.") in page

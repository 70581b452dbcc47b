"""Every number in the committed results' prose is read from a committed table: each paragraph
of a results README (and each paragraph of the project README that cites one) names the CSV or
JSON files (or the spec's TOML file) it quotes, and every number it states must be a value of
one of them, at the precision written. A number quoted from nowhere, or mistyped, fails the test."""

import csv
import json
import math
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
CITED = re.compile(r"((?:[\w.-]+/)*[\w-][\w.-]*\.(?:csv|json|toml))\b")
CODE = re.compile(r"`[^`]*`|\]\([^)]*\)|https?://\S+")
# a number standing on its own: not inside a word, name, version or time (D13, digits 0-4-8,
# 5+5, §10.1, 3.11.7, 00:55)
NUMBER = re.compile(r"(?<![\w§.+/:-])([-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[-−]?\d+)?)"
                    r"(\s?%)?(?![\w+/:]|-\d|\.\d)")
# a number in a table's field, alone or inside text ("LKM 0.946, MPCKM 0.789")
IN_FIELD = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def paragraphs(path):
    """The paragraphs of a Markdown file as ``(text, introduction)``, code blocks and
    headings left out: a table's rows one by one, each with the paragraph just above the
    table (whose citations cover a row that cites nothing itself); ``introduction`` is ""
    for a paragraph."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    above = ""
    for block in re.split(r"\n\s*\n", text):
        if block.lstrip().startswith("|"):
            yield from ((row, above) for row in block.splitlines()
                        if not set(row) <= set("|-: "))
        elif not block.lstrip().startswith("#"):
            above = block
            yield block, ""


def stated_numbers(paragraph):
    """The numbers a paragraph states (thousands separators removed), as ``(text, value,
    decimals)``, ``text`` with its % sign if any: integers below 10 and numbers in code spans
    and links are left out (counts of things, section numbers)."""
    plain = CODE.sub(" ", paragraph)
    found = []
    for match in NUMBER.finditer(plain):
        text = match.group(1).replace(",", "").replace("−", "-")
        value = float(text)
        mantissa = text.split("e")[0]
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        if "e" not in text and decimals == 0 and abs(value) < 10:
            continue
        found.append((match.group(0).strip(), value, decimals))
    return found


def table_values(path):
    """Every number in a CSV (each field) or a JSON or TOML file (each leaf)."""
    values = set()

    def add(item):
        try:
            number = float(item)
        except (TypeError, ValueError):
            return
        if math.isfinite(number):
            values.add(number)

    def walk(node):
        if isinstance(node, dict):
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)
        elif not isinstance(node, bool):
            add(node)

    if path.suffix == ".json":
        walk(json.loads(path.read_text()))
    elif path.suffix == ".toml":
        walk(tomllib.loads(path.read_text()))
    else:
        with path.open(newline="") as handle:
            for row in csv.reader(handle):
                for field in row:
                    for number in IN_FIELD.findall(field):
                        add(number)
    return values


def matches(stated, values):
    """True when some value, rounded as the number is written (or times 100), equals it;
    scientific notation compares the written significant digits."""
    text, number, decimals = stated
    # a fraction written in % or as a number ("41 % of the weight"), or a value that is
    # itself a percentage (a spec's or table's `percent`)
    candidates = list(values) + [v * 100 for v in values]
    if "e" in text:
        digits = len(text.split("e")[0].replace("-", "").replace(".", "").lstrip("0"))
        return any(v != 0 and float(f"{abs(v):.{digits - 1}e}") == abs(number)
                   for v in candidates)
    return any(round(abs(v), decimals) == abs(number) for v in candidates)


def documents():
    readmes = sorted(RESULTS.glob("*/README.md"))
    return [(path, path.parent, True) for path in readmes] + [(ROOT / "README.md", None, False)]


def citations(text):
    return CITED.findall(CODE.sub(lambda m: m.group(0).strip("`"), text))


def checked_paragraphs():
    for path, folder, every in documents():
        for paragraph, introduction in paragraphs(path):
            cited = citations(paragraph) or citations(introduction)
            if cited or every:
                yield path, folder, paragraph, cited


def resolve(name, folder):
    """A cited file: a path relative to the README's folder or to the project (``..`` allowed),
    else a file of that name in a results folder (the README's own first)."""
    if "/" in name:
        candidates = [(base / name).resolve() for base in (folder or ROOT, ROOT)]
    else:
        candidates = ([folder / name] if folder else []) + sorted(RESULTS.glob(f"*/{name}"))
    return next((path for path in candidates if path.is_file()), None)


def test_every_stated_number_is_in_a_cited_table():
    problems = []
    cache = {}
    for path, folder, paragraph, cited in checked_paragraphs():
        numbers = stated_numbers(paragraph)
        if not numbers:
            continue
        where = f"{path.relative_to(ROOT)}: {paragraph.strip()[:70]!r}"
        if not cited:
            problems.append(f"{where}: states {[n[0] for n in numbers]} but cites no table")
            continue
        values = set()
        for name in cited:
            found = resolve(name, folder)
            if found is None:
                problems.append(f"{where}: cites {name}, which is not committed")
                continue
            if found not in cache:
                cache[found] = table_values(found)
            values |= cache[found]
        problems += [f"{where}: {stated[0]} is in none of {cited}"
                     for stated in numbers if not matches(stated, values)]
    assert not problems, "\n".join(problems)


# a claim's verdict quoted in prose: `claim-id` (selection): verdict
QUOTED_VERDICT = re.compile(r"`([a-z0-9-]+)` \(([\w-]+)\): (not reproduced|reproduced|"
                            r"contradicted|not testable)")


def quoted_verdicts(text):
    """The claim verdicts a text quotes, as (id, selection, verdict)."""
    return QUOTED_VERDICT.findall(" ".join(text.split()))


def test_every_quoted_verdict_is_the_committed_one():
    """A verdict quoted in a results README (`id` (selection): verdict) is the one of the
    claims.csv beside it."""
    problems, quoted = [], 0
    for readme in sorted(RESULTS.glob("*/README.md")):
        found = quoted_verdicts(readme.read_text())
        if not found:
            continue
        with (readme.parent / "claims.csv").open() as f:
            rows = {row["id"]: row for row in csv.DictReader(f)}
        for claim_id, selection, verdict in found:
            quoted += 1
            committed = rows.get(claim_id, {}).get(f"verdict_{selection}")
            if committed != verdict:
                problems.append(f"{readme.relative_to(ROOT)}: {claim_id} ({selection}) is "
                                f"quoted {verdict!r}, claims.csv says {committed!r}")
    assert quoted > 0 and not problems, "\n".join(problems)


def test_a_misquoted_verdict_is_found():
    assert quoted_verdicts("`a1-lkm` (cv): not reproduced (p = 0.19); `best-on-average`\n"
                           "(paper): reproduced") == [("a1-lkm", "cv", "not reproduced"),
                                                       ("best-on-average", "paper",
                                                        "reproduced")]


@pytest.mark.parametrize(("text", "expected"), [
    ("p = 0.051 and 58 of 60, 3.4e-11", ["0.051", "58", "60", "3.4e-11"]),
    ("digits 0-4-8, Brodinova 5+5, §10.1, D13, `pcskm run 25`, 3.11.7, 00:55:35", []),
    ("41.2 % of 17,043,000 cells", ["41.2 %", "17,043,000"]),
])
def test_the_numbers_a_paragraph_states(text, expected):
    assert [n[0] for n in stated_numbers(text)] == expected


def test_cited_paths():
    paper, unpaired = RESULTS / "paper", RESULTS / "unpaired"
    text = ("the paired twin (`../paired-subset/runs.csv`) and "
            "[the tests](docs/results/unpaired/wilcoxon_tests.csv), counts.csv")
    cited = citations(text)
    assert cited == ["../paired-subset/runs.csv", "docs/results/unpaired/wilcoxon_tests.csv",
                     "counts.csv"]
    assert resolve(cited[0], paper) == RESULTS / "paired-subset" / "runs.csv"
    assert resolve(cited[1], None) == unpaired / "wilcoxon_tests.csv"
    assert resolve(cited[2], unpaired) == unpaired / "counts.csv"
    assert resolve("../nowhere/runs.csv", paper) is None


def test_a_number_not_in_the_table_is_found(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text('name,value\na,0.05123\nb,58\nc,3.44e-11\nd,0.412\n'
                     'e,"LKM 0.946, MPCKM 0.789"\n')
    values = table_values(table)
    for good in ("p = 0.051", "58 wins", "3.4e-11", "41.2 % of it", "0.41", "LKM 0.946"):
        assert all(matches(n, values) for n in stated_numbers(good)), good
    for bad in ("p = 0.052", "59 wins", "3.5e-11", "41.3 % of it", "LKM 0.947"):
        assert not any(matches(n, values) for n in stated_numbers(bad)), bad
    spec = tmp_path / "spec.toml"
    spec.write_text('n_runs = 25\npercentages = { start = 1, stop = 10, step = 0.5 }\n'
                    'kinds = ["random"]\n')
    values = table_values(spec)
    assert values == {25, 1, 10, 0.5}
    assert all(matches(n, values) for n in stated_numbers("25 runs, 1 % to 10 %"))


def test_table_rows_inherit_the_citations_above(tmp_path):
    page = tmp_path / "README.md"
    page.write_text("# Title\n\nWins of 60 (`a.csv`):\n\n| x | y |\n|---|---|\n"
                    "| 58 | 59 (`b.csv`) |\n\n```text\n12345\n```\n\nPlain 0.5.\n")
    found = list(paragraphs(page))
    intro = "Wins of 60 (`a.csv`):"
    assert found == [(intro, ""), ("| x | y |", intro), ("| 58 | 59 (`b.csv`) |", intro),
                     ("Plain 0.5.\n", "")]
    assert [citations(text) or citations(above) for text, above in found] == [
        ["a.csv"], ["a.csv"], ["b.csv"], []]


def test_the_cv_collapse_table_is_the_diagnostic_stores():
    """docs/method/selection.md §2.6, PCSKM with DKM++ and cannot-links: every row of its
    table, rounded as printed, from docs/results/cv-diagnostic/cv_ties.csv."""
    names = {"TT-SC-ST": "mwm-ttscst", "digits 3-8-9, subset 1": "digits389-1",
             "digits 3-8-9, subset 2": "digits389-2"}
    with open(RESULTS / "cv-diagnostic" / "cv_ties.csv") as handle:
        rows = {(r["dataset"], float(r["pct"])): r for r in csv.DictReader(handle)
                if (r["algorithm"], r["init"], r["kind"]) == ("PCSKM", "dkm++", "cannot-link")}
    text = (ROOT / "docs" / "method" / "selection.md").read_text()
    section = text[text.index("### 2.6 "):]
    printed = [line.split("|")[1:-1] for line in section.splitlines()
               if line.split("|")[1:2] and line.split("|")[1].strip() in names]
    assert len(printed) == len(rows) == 6
    for name, percent, *values in printed:
        row = rows[(names[name.strip()], float(percent))]
        expected = [f"{100 * float(row['tied_share']):.0f} %", f"{float(row['mean_tied']):.1f}",
                    f"{float(row['s_smallest']):.2f}",
                    *(f"{float(row[c]):.3f}" for c in ("F_smallest", "F_gap", "F_largest",
                                                       "F_oracle", "F_s1.1"))]
        assert [v.strip() for v in values] == expected, (name, percent)

"""Judge the claims of committed reports again by the verdict rule, from their tables
(docs/guide/paper-study.md, "Recomputing claims.csv"):

    python -m pcskm.experiments.report.recompute_claims docs/results/paper [...]

rewrites each directory's ``claims.csv`` (:func:`claims.recompute`) and the claims section
of its ``report.md`` (:func:`claims.write_section`)."""

import argparse
import re
from pathlib import Path

from . import claims
from .csv_files import write_csv
from .markdown import Document

# the claims section of report.md: from its heading's line to the next heading of its level
SECTION = re.compile(r"(^## \d+\. Paper vs ours\n\n)(.*?)(?=^## )", re.S | re.M)


def rewrite_section(report, table):
    """``report`` (the text of a report.md) with its claims section written from ``table``."""
    doc = Document()
    claims.write_section(doc, table)
    body = "\n\n".join(doc.blocks) + "\n\n"
    text, n = SECTION.subn(lambda m: m.group(1) + body, report, count=1)
    if n != 1:
        raise ValueError("report.md has no section '## N. Paper vs ours' followed by another")
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directories", nargs="+", type=Path,
                        help="report directories holding wilcoxon_tests.csv and claims.csv")
    parser.add_argument("--primary", help="the primary selection (default: "
                        f"the first of {', '.join(claims.DEFAULT_PRIMARY)} in the report)")
    parser.add_argument("--level", default=claims.LEVEL, choices=("datasets", "cases"))
    parser.add_argument("--alpha", type=float, default=claims.ALPHA)
    args = parser.parse_args(argv)
    tables = {d: claims.recompute(d, args.primary, args.level, args.alpha)
              for d in args.directories}  # every directory judged before any file is written
    reports = {d: rewrite_section((d / "report.md").read_text(), table)
               for d, table in tables.items()}
    for directory, table in tables.items():
        write_csv(table, directory / "claims.csv")
        (directory / "report.md").write_text(reports[directory], encoding="utf-8")
        counts = table.verdict.value_counts().to_dict()
        print(f"{directory / 'claims.csv'}: primary {table.primary.iloc[0]}, {counts}")


if __name__ == "__main__":
    main()

"""Judge the claims of committed reports again by the verdict rule, from their tables
(docs/guide/paper-study.md, "Recomputing claims.csv"):

    python -m pcskm.experiments.report.recompute_claims docs/results/paper [...]

rewrites each directory's ``claims.csv`` (:func:`claims.recompute`)."""

import argparse
from pathlib import Path

from . import claims


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
    for directory, table in tables.items():
        table.to_csv(directory / "claims.csv", index=False)
        counts = table.verdict.value_counts().to_dict()
        print(f"{directory / 'claims.csv'}: primary {table.primary.iloc[0]}, {counts}")


if __name__ == "__main__":
    main()

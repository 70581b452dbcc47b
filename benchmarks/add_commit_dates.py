"""Add the commit date to the ``runs.csv`` of report folders written before runs recorded it.

Run by hand from the repository root:

    python benchmarks/add_commit_dates.py docs/results/*/runs.csv docs/results/*/*/runs.csv

A run records the commit of its code (``commit``); since 941442d it records the commit's date
too (``commit_date``, :func:`pcskm.runner.execute.source_commit`). For a table without that
column, the date is read from this repository's history, the committer date of the recorded
commit in UTC, and the column is put before ``commit``, as the report writes it. A table that
has the column, or a commit this clone does not hold, is left as it is (the second named).
"""

import subprocess
import sys
from datetime import UTC, datetime

import pandas as pd


def commit_date(commit):
    """The committer date of ``commit`` in UTC (ISO 8601), or None if this clone lacks it."""
    found = subprocess.run(["git", "show", "-s", "--format=%cI", commit.split("+")[0]],
                           capture_output=True, text=True)
    if found.returncode or not found.stdout.strip():
        return None
    return datetime.fromisoformat(found.stdout.strip()).astimezone(UTC).isoformat()


def main(paths):
    for path in paths:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
        if "commit_date" in table or "commit" not in table:
            continue
        dates = [commit_date(commit) for commit in table["commit"]]
        if None in dates:
            print(f"{path}: a commit this clone does not hold; left as it is")
            continue
        table.insert(table.columns.get_loc("commit"), "commit_date", dates)
        table.to_csv(path, index=False)
        print(f"{path}: commit_date added")


if __name__ == "__main__":
    main(sys.argv[1:])

"""``pcskm verify`` of an earlier commit and of a later one on the same store, timed in turns
(old, new, new, old), and what they print compared (it must be the same).

    python benchmarks/verify_speed.py BEFORE AFTER --store STORE [--order old,new,new,old]

``BEFORE`` and ``AFTER`` are git commits, exported and imported as ``pcskm`` from a temporary
folder (:func:`report_speed.export`); each command is timed with ``/usr/bin/time -v``
(:func:`report_speed.timed`); the load average is printed before and after each turn.
"""

import argparse
import tempfile
from pathlib import Path

from _common import load, print_header
from report_speed import export, timed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", help="the git commit of the old verification")
    parser.add_argument("after", help="the git commit of the new verification")
    parser.add_argument("--store", required=True, help="the store (only read)")
    parser.add_argument("--order", default="old,new,new,old")
    args = parser.parse_args()
    print_header()
    printed, times = {}, {"old": [], "new": []}
    with tempfile.TemporaryDirectory(prefix="verify-speed-") as tmp, \
            open(Path(tmp) / "log", "w") as log:
        paths = {"old": export(args.before, Path(tmp) / "old"),
                 "new": export(args.after, Path(tmp) / "new")}
        for which in args.order.split(","):
            wall, peak, out, cpu = timed(["verify", args.store], paths[which], log)
            printed.setdefault(which, out)
            times[which].append(wall)
            commit = args.before if which == "old" else args.after
            print(f"pcskm verify by {commit}: {wall:.1f} s wall, {cpu:.1f} s CPU, peak "
                  f"{peak:.0f} MiB (load average {load()})")
    for which, walls in times.items():
        print(f"{which}: {min(walls):.1f}-{max(walls):.1f} s")
    same = printed["old"] == printed["new"]
    print("what they print: " + ("the same" if same else
                                 f"differs\n--- old\n{printed['old']}--- new\n{printed['new']}"))
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()

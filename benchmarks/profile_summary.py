"""Where a worker's time goes, from a py-spy raw profile taken with ``--native``: the share
of samples inside Numba-compiled code and the frames with the most self time.

Run by hand from the repository root:

    py-spy record --native -r 50 -f raw -o worker.txt -- python benchmarks/bench_worker.py
    python benchmarks/profile_summary.py worker.txt [--under measure] [--top 15]

Only the samples whose stack passes through a frame of the function ``--under`` count (the
timed part of bench_worker.py, not its start-up and warm-up). py-spy cannot name the machine
code Numba generates: such a frame is an address with no module, ``0x7f... (?)``. A sample
whose stack holds one is inside a compiled kernel (including the Numba runtime it calls);
its self time is shown as ``[numba] <the Python line that called the kernel>``. Other
frames are shown by function and file (Python) or symbol and library (native code, e.g.
NumPy's), without line numbers.
"""

import argparse
import collections
import re

JIT_FRAME = re.compile(r"^0x[0-9a-f]+ \(\?\)$")
LINE_NUMBER = re.compile(r":\d+\)$")


def samples(path, under):
    """``(frames, count)`` of every stack of the raw profile that passes through ``under``."""
    prefix = f"{under} ("
    with open(path) as lines:
        for line in lines:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            if any(frame.startswith(prefix) for frame in frames):
                yield frames, int(count)


def self_frame(frames):
    """The label of the frame a sample's self time belongs to."""
    jit = next((i for i, frame in enumerate(frames) if JIT_FRAME.match(frame)), None)
    if jit is None:
        return LINE_NUMBER.sub(")", frames[-1])
    caller = next((frame for frame in reversed(frames[:jit]) if ".py:" in frame), "?")
    return f"[numba] {caller}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", help="py-spy raw output (record -f raw --native)")
    parser.add_argument("--under", default="measure")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    total = compiled = 0
    by_frame = collections.Counter()
    for frames, count in samples(args.profile, args.under):
        total += count
        label = self_frame(frames)
        compiled += count if label.startswith("[numba]") else 0
        by_frame[label] += count
    if not total:
        raise SystemExit(f"no sample passes through {args.under!r}")
    print(f"{total} samples under {args.under}; {compiled} ({100 * compiled / total:.1f} %) "
          "inside Numba-compiled code")
    print(f"{'samples':>8} {'share':>6}  frame (self time)")
    for label, count in by_frame.most_common(args.top):
        print(f"{count:8d} {100 * count / total:5.1f}%  {label}")


if __name__ == "__main__":
    main()

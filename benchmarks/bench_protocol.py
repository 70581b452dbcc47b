"""Time of the protocol's per-cell work on the largest data sets: building a fold's constraint
pool, and drawing one constraint sample (pool cached) per kind at 1 % and 10 %.

Run by hand from the repository root:

    python benchmarks/bench_protocol.py [--repeat 500]

Data come from the data folder of the CLI. The sample time is the
median over ``--repeat`` different runs of the same (kind, percentage, fold).
"""

import argparse
import time

import numpy as np

from pcskm.experiments import KINDS, Protocol, load, resolve_data_dir


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=500)
    args = parser.parse_args()
    data_dir = resolve_data_dir()[0]
    print(f"numpy {np.__version__}")
    for name in ("mwm-ttscst", "mwm-ttchst", "ionosphere"):
        protocol = Protocol(load(name, data_dir))
        start = time.perf_counter()
        ml, cl = protocol.pool(0)
        pool_ms = (time.perf_counter() - start) * 1e3
        print(f"{name}: pool of fold 0 ({len(ml) + len(cl)} pairs) {pool_ms:.1f} ms")
        for percent in (1, 10):
            for kind in KINDS:
                times = []
                for run in range(args.repeat):
                    start = time.perf_counter()
                    protocol.constraints(kind, percent, run, 0)
                    times.append(time.perf_counter() - start)
                print(f"  {kind:<11} {percent:>2}% (m = {protocol.count(percent)}): "
                      f"median {np.median(times) * 1e6:.0f} us")


if __name__ == "__main__":
    main()

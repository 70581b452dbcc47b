"""Drawing the report's feature-weight panels of wide data sets (issue 48): the bars of one
figure as collections (``experiments/report/weights._bars``) against one ``Axes.bar`` artist
per bar, the drawing they replaced.

    python benchmarks/bench_weight_bars.py [--features 500] [--panels 48] [--percents 4]

Draws ``panels`` panels of ``percents`` groups of ``features`` bars (the weak-signal report's
Figure 2 has 20 sets x 3 algorithms x 4 inits, half of them of 500 features) and saves each
figure as PNG; prints the CPU time of both. Run by hand; the first line names the machine.
"""

import argparse
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
from _common import machine  # noqa: E402

from pcskm.experiments.report import weights  # noqa: E402


def panel(n_features, n_percents, rng):
    values = rng.gamma(0.5, size=(n_percents, n_features))
    values[:, n_features // 2:] = 0.0  # thresholded features: no bar on a log axis
    return xr.DataArray(values, dims=("percent", "feature"),
                        coords={"percent": np.arange(1, n_percents + 1),
                                "feature": np.arange(n_features),
                                "feature_name": ("feature", np.arange(1, n_features + 1)),
                                "uninformative": ("feature", np.arange(n_features) >= 20)})


def one_artist_per_bar(ax, data, colour, width):
    """The replaced drawing: ``Axes.bar``, an artist per bar, then what _bars does besides."""
    def bars(ax, x, heights, color, alpha=1.0):
        ax.bar(x, heights, width=weights.BAR_WIDTH, color=color, alpha=alpha, linewidth=0,
               snap=False)
    original = weights._bar_collection
    weights._bar_collection = bars
    try:
        weights._bars(ax, data, colour, width)
    finally:
        weights._bar_collection = original


def draw(function, panels, path):
    start = time.process_time()
    fig, axes = plt.subplots(len(panels), 1, figsize=(14, 1.4 * len(panels)))
    for ax, data in zip(np.atleast_1d(axes), panels, strict=True):
        function(ax, data, "tab:blue", 14.0)
        ax.set_yscale("log")
    fig.savefig(path, dpi=60)
    plt.close(fig)
    return time.process_time() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=int, default=500)
    parser.add_argument("--panels", type=int, default=48)
    parser.add_argument("--percents", type=int, default=4)
    args = parser.parse_args()
    print(machine())
    rng = np.random.default_rng(0)
    panels = [panel(args.features, args.percents, rng) for _ in range(args.panels)]
    print(f"{args.panels} panels of {args.percents} x {args.features} bars")
    with tempfile.TemporaryDirectory() as folder:
        new = draw(weights._bars, panels, Path(folder) / "collections.png")
        old = draw(one_artist_per_bar, panels, Path(folder) / "bars.png")
    print(f"collections: {new:.1f} s CPU; one Axes.bar artist per bar: {old:.1f} s CPU "
          f"({old / new:.1f} times)")


if __name__ == "__main__":
    main()

"""pcskm: semi-supervised sparse K-Means (PCSKM) and the algorithms it is compared with.

The estimators, initialisations and scores of :mod:`pcskm.algorithms` are importable from
here (``from pcskm import PCSKMeans``). The experiments (data sets, protocol, specs, report)
are in :mod:`pcskm.experiments`; the distributed runner and the results cube in
:mod:`pcskm.runner`. Names are imported on first use (:mod:`pcskm._lazy`).
"""

from importlib import metadata as _metadata

from ._lazy import lazy_exports

_EXPORTS = dict.fromkeys(
    [
        "ClusteringFailedWarning",
        "Constraints",
        "LloydKMeans",
        "MPCKMeans",
        "PCKMeans",
        "PCSKMeans",
        "PairwiseFScore",
        "SparseKMeans",
        "SparsityPath",
        "constraints_from_labels",
        "dkmpp_init",
        "maximin_init",
        "pairwise_f_score",
        "robin_init",
        "seeding_init",
        "solve_delta",
    ],
    ".algorithms",
)

try:
    __version__ = _metadata.version("pcskm")
except _metadata.PackageNotFoundError:  # a source tree that is not installed
    __version__ = "0+unknown"

__all__ = ["__version__", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

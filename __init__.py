"""pcskm: semi-supervised sparse K-Means (PCSKM) and the algorithms it is compared with.

The estimators, initialisations and scores of :mod:`pcskm.algorithms` are importable from
here (``from pcskm import PCSKMeans``). The experiments (data sets, protocol, specs, report)
are in :mod:`pcskm.experiments`; the distributed runner and the results cube in
:mod:`pcskm.runner`.
"""

from importlib import metadata as _metadata

from .algorithms import (
    ClusteringFailedWarning,
    Constraints,
    LloydKMeans,
    MPCKMeans,
    PCKMeans,
    PCSKMeans,
    SparseKMeans,
    SparsityPath,
    constraints_from_labels,
    dkmpp_init,
    maximin_init,
    pairwise_f_score,
    robin_init,
    seeding_init,
    solve_delta,
)

try:
    __version__ = _metadata.version("pcskm")
except _metadata.PackageNotFoundError:  # a source tree that is not installed
    __version__ = "0+unknown"

__all__ = [
    "ClusteringFailedWarning",
    "Constraints",
    "LloydKMeans",
    "MPCKMeans",
    "PCKMeans",
    "PCSKMeans",
    "SparseKMeans",
    "SparsityPath",
    "__version__",
    "constraints_from_labels",
    "dkmpp_init",
    "maximin_init",
    "pairwise_f_score",
    "robin_init",
    "seeding_init",
    "solve_delta",
]

"""Semi-supervised sparse K-Means (PCSKM) and the algorithms it is compared with.

Estimators (scikit-learn API): :class:`LloydKMeans`, :class:`PCKMeans`, :class:`MPCKMeans`,
:class:`SparseKMeans`, :class:`PCSKMeans`. Initialisations: :func:`dkmpp_init`,
:func:`robin_init`, :func:`maximin_init`, :func:`seeding_init`. Constraints:
:class:`Constraints`, :func:`constraints_from_labels`. Scoring: :func:`pairwise_f_score`.
"""

from ._base import ClusteringFailedWarning
from ._sparse import solve_delta
from .constraints import Constraints, constraints_from_labels
from .initialisation import dkmpp_init, maximin_init, robin_init, seeding_init
from .metrics import pairwise_f_score
from .mpckmeans import MPCKMeans
from .pckmeans import LloydKMeans, PCKMeans
from .sparse_kmeans import PCSKMeans, SparseKMeans, SparsityPath

__all__ = [
    "ClusteringFailedWarning",
    "Constraints",
    "LloydKMeans",
    "MPCKMeans",
    "PCKMeans",
    "PCSKMeans",
    "SparseKMeans",
    "SparsityPath",
    "constraints_from_labels",
    "dkmpp_init",
    "maximin_init",
    "pairwise_f_score",
    "robin_init",
    "seeding_init",
    "solve_delta",
]

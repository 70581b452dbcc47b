"""Semi-supervised sparse K-Means (PCSKM) and the algorithms it is compared with.

Estimators (scikit-learn API): :class:`LloydKMeans`, :class:`PCKMeans`, :class:`MPCKMeans`,
:class:`SparseKMeans`, :class:`PCSKMeans`. Initialisations: :func:`dkmpp_init`,
:func:`robin_init`, :func:`maximin_init`, :func:`seeding_init`. Constraints:
:class:`Constraints`, :func:`constraints_from_labels`. Scoring: :func:`pairwise_f_score`.
Choosing s: :func:`constraint_cv_scores`, :func:`pair_auc_scores`, :func:`gap_statistic`,
:func:`select_by_satisfaction`, :func:`best_sparsity_index`, :func:`one_standard_error_index`.
"""

from pcskm._lazy import lazy_exports

_EXPORTS = {
    "ClusteringFailedWarning": "._base",
    "solve_delta": "._sparse",
    "Constraints": ".constraints",
    "constraints_from_labels": ".constraints",
    "dkmpp_init": ".initialisation",
    "maximin_init": ".initialisation",
    "robin_init": ".initialisation",
    "seeding_init": ".initialisation",
    "pairwise_f_score": ".metrics",
    "PairwiseFScore": ".metrics",
    "ConstraintCVResult": ".selection",
    "GapStatisticResult": ".selection",
    "PairAUCResult": ".selection",
    "SatisfactionResult": ".selection",
    "best_sparsity_index": ".selection",
    "constraint_cv_scores": ".selection",
    "gap_statistic": ".selection",
    "one_standard_error_index": ".selection",
    "pair_auc_scores": ".selection",
    "select_by_satisfaction": ".selection",
    "MPCKMeans": ".mpckmeans",
    "LloydKMeans": ".pckmeans",
    "PCKMeans": ".pckmeans",
    "PCSKMeans": ".sparse_kmeans",
    "SparseKMeans": ".sparse_kmeans",
    "SparsityPath": ".sparse_kmeans",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

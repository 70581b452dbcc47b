"""Status codes and the result every engine returns (docs/method/algorithms.md §1.2, §5)."""

from typing import NamedTuple

import numpy as np

from ._validation import check_choice

CONVERGED = 0
MAX_ITER = 1
EMPTY_CLUSTER = 2
DEGENERATE_WEIGHTS = 3

STATUS_NAMES = ("converged", "max_iter", "empty_cluster", "degenerate_weights")
FAILED = frozenset({EMPTY_CLUSTER, DEGENERATE_WEIGHTS})
# The runner's code for a fit of a user estimator that raised or returned unusable labels
# (docs/reference/estimator-contract.md); no engine returns it.
ERROR = 4
FIT_STATUS_NAMES = (*STATUS_NAMES, "error")
FIT_FAILED = FAILED | {ERROR}

EMPTY_CLUSTER_POLICIES = {"fail": 0, "zero": 1, "relocate": 2}


def empty_cluster_code(empty_cluster):
    """The integer code the kernels use for an ``empty_cluster`` policy name (§1.3)."""
    return EMPTY_CLUSTER_POLICIES[
        check_choice(empty_cluster, "empty_cluster", EMPTY_CLUSTER_POLICIES)
    ]


class EngineResult(NamedTuple):
    """What an engine returns for one fit.

    ``status`` is one of the integer codes above; a failed fit (``status in FAILED``) keeps
    its labels for debugging and has ``weights`` full of NaN.
    """

    labels: np.ndarray
    centers: np.ndarray
    weights: np.ndarray
    n_iter: int
    status: int
    objective: float
    n_empty_events: int = 0

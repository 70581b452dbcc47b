"""The cross-validation and constraint protocol (docs/method/protocol.md §2-§5, §7).

One ``Protocol`` per data set (subset) and master seed: its stratified folds, the constraint
pool of each fold, the constraint count per percentage and the constraint sample and Seeding
seed of every cell (kind, percentage, run, fold), shared by every algorithm and init of the
cell in the paired design and drawn per algorithm and init in the unpaired one (§6).
"""

import functools
import math
import numbers

import numpy as np

from pcskm.algorithms import _random_kernels as draws
from pcskm.algorithms._jit import kernel
from pcskm.algorithms._validation import plain
from pcskm.algorithms.constraints import constraints_from_labels

from ._seeds import generator, seed_sequence
from .datasets import Dataset

__all__ = [
    "DESIGNS", "INIT_CODES", "KINDS", "KIND_CODES", "Protocol", "kind_code", "pct10",
    "seed_sequence", "sparsity_grid", "unpaired_key",
]

KINDS = ("balanced", "must-link", "cannot-link", "random")
KIND_CODES = {"balanced": 1, "must-link": 2, "cannot-link": 3, "random": 4}
INIT_CODES = {"dkm++": 1, "seeding": 2, "robin": 3, "maximin": 4}
# docs/method/protocol.md §6: one sample per cell shared by every algorithm and init (D13), or
# the authors' fresh sample per algorithm and init.
DESIGNS = ("paired", "unpaired")
_TOLERANCE = 1e-10  # MATLAB colon tolerance (docs/method/protocol.md §7)


def kind_code(kind):
    """The key code of a constraint kind: 1 balanced, 2 must-link, 3 cannot-link, 4 random
    (a name or the code itself)."""
    if isinstance(kind, str) and kind in KIND_CODES:
        return KIND_CODES[kind]
    if isinstance(kind, numbers.Integral) and not isinstance(kind, bool) and kind in range(1, 5):
        return int(kind)
    raise ValueError(f"unknown constraint kind {plain(kind)!r}; expected one of {', '.join(KINDS)}")


def unpaired_key(algorithm, init):
    """The key parts that give ``algorithm`` (its name in the spec and the cube) with ``init``
    its own draws in the unpaired design (docs/method/protocol.md §2): the init's code, then
    the name's UTF-8 bytes; ``("PCKM", "seeding")`` gives (2, 80, 67, 75, 77)."""
    if init not in INIT_CODES:
        raise ValueError(f"unknown init {plain(init)!r}; expected one of {', '.join(INIT_CODES)}")
    if not isinstance(algorithm, str) or not algorithm:
        raise ValueError(f"algorithm must be a non-empty name; got {plain(algorithm)!r}")
    return (INIT_CODES[init], *algorithm.encode("utf-8"))


def pct10(percent):
    """Ten times a percentage as an exact integer (1.5 -> 15); reject a percentage that is not
    a multiple of 0.1 or not in (0, 100]."""
    if isinstance(percent, bool) or not isinstance(percent, numbers.Real):
        raise ValueError(f"percentage must be a number; got {plain(percent)!r}")
    scaled = float(percent) * 10.0
    if not math.isfinite(scaled):
        raise ValueError(f"percentage must be finite; got {plain(percent)!r}")
    tenths = int(round(scaled))
    if abs(scaled - tenths) > 1e-9 * max(1.0, abs(scaled)):
        raise ValueError(f"percentage {plain(percent)!r} is not a multiple of 0.1")
    if not 0 < tenths <= 1000:
        raise ValueError(f"percentage must lie in (0, 100]; got {plain(percent)!r}")
    return tenths


def sparsity_grid(n_features, start=1.1, step=0.2, max_values=30):
    """The s grid ``start : step : sqrt(p)`` with MATLAB colon semantics
    (docs/method/protocol.md §7); above ``max_values`` values the step becomes 1, 2, 3, ...
    until at most ``max_values`` remain."""
    if isinstance(n_features, bool) or not isinstance(n_features, numbers.Integral):
        raise ValueError(f"n_features must be an integer; got {plain(n_features)!r}")
    if not step > 0:
        raise ValueError(f"the s step must be positive; got {plain(step)!r}")
    if isinstance(max_values, bool) or not isinstance(max_values, numbers.Integral) \
            or max_values < 1:
        raise ValueError(
            f"max_values must be a positive integer; got {plain(max_values)!r}")
    upper = math.sqrt(n_features)

    def count(step):
        return math.floor((upper - start) / step + _TOLERANCE) + 1

    if count(step) < 1:
        raise ValueError(
            f"the s grid from {start} to sqrt({n_features}) = {upper:.6g} is empty"
        )
    coarse = 1
    while count(step) > max_values:
        step = coarse
        coarse += 1
    return start + step * np.arange(count(step), dtype=np.float64)


def _check_index(value, name, upper=None):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer; got {plain(value)!r}")
    if upper is not None and value >= upper:
        raise ValueError(f"{name} must be below {upper}; got {value}")
    return int(value)


class Protocol:
    """Folds, pools, counts and constraint samples of one data set (subset).

    ``dataset`` is a ``Dataset`` or a ``(code, subset)`` pair (the spec's ``ds``, ``sub``); a
    contaminated or shuffled digits set carries its clean subset's pair and so shares its
    folds and samples. ``y`` defaults to ``dataset.y``; ``seed`` is the master seed.
    ``design`` is "paired" (one constraint sample and Seeding draw per cell, D13) or
    "unpaired" (one per cell, algorithm and init: the sample methods then need both,
    docs/method/protocol.md §6).
    """

    def __init__(self, dataset, y=None, seed=0, n_folds=10, design="paired"):
        if isinstance(dataset, Dataset):
            if y is not None and not np.array_equal(np.asarray(y), dataset.y):
                raise ValueError(f"y differs from the labels of data set {dataset.name!r}")
            y, (code, subset) = dataset.y, (dataset.code, dataset.subset)
        else:
            try:
                code, subset = dataset
            except (TypeError, ValueError):
                raise ValueError(
                    f"dataset must be a Dataset or a (code, subset) pair; got {dataset!r}"
                ) from None
            if y is None:
                raise ValueError("y (the labels) is required when dataset is a (code, subset)")
        self.code = _check_index(code, "data set code")
        self.subset = _check_index(subset, "subset")
        self.seed = _check_index(seed, "seed")
        y = np.asarray(y)
        if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"y must be a 1-D integer array; got {y.dtype} of shape {y.shape}")
        self.y = y
        if isinstance(n_folds, bool) or not isinstance(n_folds, numbers.Integral) \
                or n_folds < 2:
            raise ValueError(f"n_folds must be an integer >= 2; got {plain(n_folds)!r}")
        self.n_folds = int(n_folds)
        if design not in DESIGNS:
            raise ValueError(f"design must be one of {', '.join(DESIGNS)}; got {plain(design)!r}")
        self.design = design
        self.fold_of = self._folds()
        self._pools = {}

    def _folds(self):
        """Stratified folds: crossvalind('Kfold', y, K) per class in ascending label order
        (docs/method/protocol.md §3), one generator from key (1, ds, sub)."""
        rng = generator(self.seed, (1, self.code, self.subset))
        K = self.n_folds
        fold_of = np.empty(len(self.y), dtype=np.int64)
        for label in np.unique(self.y):
            members = np.flatnonzero(self.y == label)
            n_g = len(members)
            t = np.arange(1, n_g + 1)
            q = (K * t + n_g - 1) // n_g - 1  # ceil(K t / n_g) - 1
            fold_labels = rng.permutation(K)
            order = rng.permutation(n_g)
            fold_of[members[order]] = fold_labels[q]
        return fold_of

    def _check_fold(self, fold):
        return _check_index(fold, "fold", self.n_folds)

    def train_index(self, fold):
        """T_f: the rows not in fold ``fold``, ascending."""
        return np.flatnonzero(self.fold_of != self._check_fold(fold))

    def test_index(self, fold):
        """The rows of fold ``fold``, ascending."""
        return np.flatnonzero(self.fold_of == self._check_fold(fold))

    @functools.cached_property
    def pool_size(self):
        """P1 = t(t-1)/2 with t = ``|T_0|`` (the authors' fold 1)."""
        t = int(np.count_nonzero(self.fold_of != 0))
        return t * (t - 1) // 2

    def count(self, percent):
        """m for a percentage (docs/method/protocol.md §4): round half away from zero of
        P1 pct / 100 in integers, made even; the same for every fold, run and kind."""
        m = (self.pool_size * pct10(percent) + 500) // 1000
        return m + (m % 2)

    def pool(self, fold):
        """``(ML_f, CL_f)``: the training pairs (a < b, lexicographic) with equal and with
        different labels (cached per fold)."""
        fold = self._check_fold(fold)
        if fold not in self._pools:
            self._pools[fold] = constraints_from_labels(self.y, self.train_index(fold))
        return self._pools[fold]

    def draw_key(self, algorithm=None, init=None):
        """The key parts after (..., run, fold) that select the draws of ``algorithm`` with
        ``init`` (docs/method/protocol.md §2, §6): none in the paired design, where every
        algorithm and init shares the cell's draws (both may be given and are ignored);
        :func:`unpaired_key` in the unpaired design, which needs both."""
        if self.design == "paired":
            return ()
        if algorithm is None or init is None:
            raise ValueError("the unpaired design draws per algorithm and init: give both "
                             f"(got algorithm={plain(algorithm)!r}, init={plain(init)!r})")
        return unpaired_key(algorithm, init)

    def _key(self, kind, percent, run, fold, algorithm, init):
        return (self.code, self.subset, kind_code(kind), pct10(percent), _check_index(run, "run"),
                self._check_fold(fold), *self.draw_key(algorithm, init))

    def constraints(self, kind, percent, run, fold, algorithm=None, init=None):
        """``(must_link, cannot_link)`` of the cell: (m, 2) int64 arrays of 0-based rows
        sampled as in docs/method/protocol.md §5 from key (2, ds, sub, kind, pct10, run, fold)
        (unpaired design: followed by :meth:`draw_key`), each in the order of the final
        permutation. The draws are those of NumPy's ``default_rng`` from
        :meth:`constraint_seed`, computed in compiled code
        (:mod:`pcskm.algorithms._random_kernels`)."""
        key = self._key(kind, percent, run, fold, algorithm, init)
        code, m = key[2], self.count(percent)
        must_link, cannot_link = self.pool(fold)
        n_ml, n_cl = len(must_link), len(cannot_link)
        needs = {1: (m // 2, m // 2), 2: (m, 0), 3: (0, m), 4: (0, 0)}[code]
        if needs[0] > n_ml or needs[1] > n_cl or (code == 4 and m > n_ml + n_cl):
            raise ValueError(
                f"{KINDS[code - 1]} at {percent}% needs {m} pairs but fold {fold} has only "
                f"{n_ml} must-link and {n_cl} cannot-link pairs"
            )
        return _sample_pairs(draws.entropy_words(self.seed, (2, *key)), code, m, must_link,
                             cannot_link)

    def seeding_seed(self, kind, percent, run, fold, algorithm=None, init=None):
        """The SeedSequence of the cell's Seeding draws: key (3, ds, sub, kind, pct10, run,
        fold) (unpaired design: followed by :meth:`draw_key`)."""
        return seed_sequence(self.seed,
                             (3, *self._key(kind, percent, run, fold, algorithm, init)))

    def constraint_seed(self, kind, percent, run, fold, algorithm=None, init=None):
        """The SeedSequence of the cell's constraint sample: key (2, ds, sub, kind, pct10,
        run, fold) (unpaired design: followed by :meth:`draw_key`)."""
        return seed_sequence(self.seed,
                             (2, *self._key(kind, percent, run, fold, algorithm, init)))

    def cv_fold_seed(self, kind, percent, run, fold, algorithm=None, init=None):
        """The SeedSequence of the constraint folds of the cell's cross-validation
        (docs/method/selection.md §2.1): key (8, ds, sub, kind, pct10, run, fold) (unpaired
        design: followed by :meth:`draw_key`)."""
        return seed_sequence(self.seed,
                             (8, *self._key(kind, percent, run, fold, algorithm, init)))

    def permutation_seed(self):
        """The SeedSequence whose key, extended by ``(b,)``, draws null data set b of the
        data set's gap statistic (docs/method/selection.md §3.2, §5): key (9, ds, sub), so
        that permutation b has key (9, ds, sub, b) and is the same for every cell."""
        return seed_sequence(self.seed, (9, self.code, self.subset))


@kernel
def _sample_pairs(entropy, code, m, must_link, cannot_link):
    """The constraint sample of §5 from the generator of the entropy words (``code``: 1
    balanced, 2 must-link, 3 cannot-link, 4 random): the chosen indices into U = ML_f followed
    by CL_f, permuted, then split into the must-link and cannot-link pairs in that order."""
    state = draws.pcg64(entropy, draws.POOL_SIZE)
    n_ml, n_cl = must_link.shape[0], cannot_link.shape[0]
    if code == 1:
        chosen = np.concatenate((draws.choice(state, n_ml, m // 2),
                                 n_ml + draws.choice(state, n_cl, m // 2)))
    elif code == 2:
        chosen = draws.choice(state, n_ml, m)
    elif code == 3:
        chosen = n_ml + draws.choice(state, n_cl, m)
    else:
        chosen = draws.choice(state, n_ml + n_cl, m)
    chosen = chosen[draws.permutation(state, m)]
    n_chosen_ml = np.count_nonzero(chosen < n_ml)
    ml = np.empty((n_chosen_ml, 2), dtype=np.int64)
    cl = np.empty((m - n_chosen_ml, 2), dtype=np.int64)
    i_ml = i_cl = 0
    for index in chosen:
        if index < n_ml:
            ml[i_ml] = must_link[index]
            i_ml += 1
        else:
            cl[i_cl] = cannot_link[index - n_ml]
            i_cl += 1
    return ml, cl

"""Random-number keys (docs/method/protocol.md §2, deviation D9)."""

import numbers

import numpy as np

from pcskm.algorithms._validation import plain

# The data sets are fixed objects: the Brodinova sets and the contaminated digits are drawn
# with this master seed whatever the experiment's seed (D15/D16 "fixed seeds").
DATA_SEED = 0


def seed_sequence(master_seed, key):
    """``SeedSequence(entropy=master_seed, spawn_key=key)``; ``key`` is a tuple of
    non-negative integers (never derived from ``hash()`` or strings)."""
    if isinstance(master_seed, bool) or not isinstance(master_seed, numbers.Integral):
        raise ValueError("master_seed must be a non-negative integer; got "
                         f"{plain(master_seed)!r}")
    if master_seed < 0:
        raise ValueError(f"master_seed must be a non-negative integer; got {master_seed}")
    key = tuple(key)
    for part in key:
        if isinstance(part, bool) or not isinstance(part, numbers.Integral) or part < 0:
            raise ValueError(f"key parts must be non-negative integers; got {plain(key)!r}")
    return np.random.SeedSequence(entropy=int(master_seed), spawn_key=tuple(int(k) for k in key))


def generator(master_seed, key):
    """A fresh ``numpy.random.Generator`` for ``key``."""
    return np.random.default_rng(seed_sequence(master_seed, key))

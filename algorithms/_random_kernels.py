"""The protocol's random draws in compiled code, bit for bit those of NumPy
(docs/method/protocol.md §2, §5).

A draw of the protocol is defined by NumPy's ``default_rng(SeedSequence(entropy=seed,
spawn_key=key))``: the PCG64 generator seeded by a SeedSequence, then ``Generator.choice``
without replacement and ``Generator.permutation``. Building those objects costs more than the
draws of a cell, so these kernels compute the same numbers from the key's 32-bit words, with
the algorithms of NumPy's ``numpy.random`` (version 1.19 and later):

* SeedSequence: the entropy words (the master seed's, padded with zeros to the pool size,
  then the key's) hashed into a pool of four 32-bit words, and the generator's state hashed
  out of the pool (O'Neill's seed_seq design with Kaplan's mixing);
* PCG64: a 128-bit LCG with the XSL-RR output (O'Neill 2014), seeded as PCG's
  ``srandom_r``; 32-bit draws take the two halves of a 64-bit output, low half first;
* bounded integers in [0, n]: Lemire's multiply-and-reject method (``choice``) or the
  masked rejection of ``random_interval`` (``permutation``);
* ``choice(n, m, replace=False)``: Floyd's algorithm then a Fisher-Yates shuffle of the m
  values, or, when n > 10000 and m > n // 50, the last m places of a Fisher-Yates shuffle
  stopped after m steps;
* ``permuted(X, axis=0)`` of a 2-D array: a Fisher-Yates shuffle of each column in turn,
  by masked rejection.

Each is compared with NumPy itself in ``tests/test_random_kernels.py``.
"""

import numpy as np

from pcskm.algorithms._jit import kernel

# Numba keeps integer arithmetic unsigned only between unsigned operands: every constant
# is a uint64 (the 32-bit words of SeedSequence are held in uint64 and masked)
_M32 = np.uint64(0xFFFFFFFF)
_U1, _U16, _U32, _U58, _U63, _U64 = (np.uint64(v) for v in (1, 16, 32, 58, 63, 64))
# SeedSequence: NumPy's default pool of 4 words; the hash constants and multipliers of the
# pool (A) and of the generated state (B), and the two multipliers of the mixing function
POOL_SIZE = 4
_INIT_A, _MULT_A, _INIT_B, _MULT_B, _MIX_MULT_L, _MIX_MULT_R = (
    np.uint64(v) for v in (0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED, 0xCA01F9DD, 0x4973F715))
# PCG's default 128-bit multiplier, high and low words
_PCG_MULT_HIGH, _PCG_MULT_LOW = np.uint64(2549297995355413924), np.uint64(4865540595714422341)
# the generator's state: the LCG state and increment (high, low words), then the kept half
# of the last 64-bit output (flag, value)
_STATE_HIGH, _STATE_LOW, _INC_HIGH, _INC_LOW, _HAS_HALF, _HALF = range(6)


def _words(value):
    """An entropy value as SeedSequence reads it, in little-endian 32-bit words: a
    non-negative int (0 is one word), an array of uint32 words, or a sequence of such values
    one after the other."""
    if isinstance(value, np.ndarray) and value.dtype == np.uint32:
        return [int(word) for word in value]
    if isinstance(value, (int, np.integer)):
        value = int(value)
        words = [value & 0xFFFFFFFF]
        value >>= 32
        while value:
            words.append(value & 0xFFFFFFFF)
            value >>= 32
        return words
    return [word for part in value for word in _words(part)]


def entropy_words(entropy, key, pool_size=POOL_SIZE):
    """The words ``SeedSequence(entropy, spawn_key=key, pool_size=pool_size)`` hashes into
    its pool: the entropy's words, padded with zeros to the pool size if a key is given, then
    the key's. The values are those a SeedSequence accepts (validated by the caller)."""
    words = _words(entropy)
    if key:
        words += [0] * (pool_size - len(words))
        words += _words(key)
    return np.array(words, dtype=np.uint64)


def generator_state(seed, extra_key=()):
    """The state of ``default_rng(SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key,
    *extra_key), pool_size=seed.pool_size))`` for a SeedSequence ``seed``."""
    return pcg64(entropy_words(seed.entropy, (*seed.spawn_key, *extra_key), seed.pool_size),
                 seed.pool_size)


@kernel
def _hash(value, hash_const, multiplier):
    """One hash of SeedSequence: ``(hashed value, next hash constant)``, 32-bit words."""
    value ^= hash_const
    hash_const = (hash_const * multiplier) & _M32
    value = (value * hash_const) & _M32
    return value ^ (value >> _U16), hash_const


@kernel
def _mix(x, y):
    result = (_MIX_MULT_L * x - _MIX_MULT_R * y) & _M32
    return result ^ (result >> _U16)


@kernel
def _seed_pool(entropy, pool_size):
    """SeedSequence's pool of ``pool_size`` words from the entropy words (``mix_entropy``)."""
    pool = np.zeros(pool_size, dtype=np.uint64)
    hash_const = _INIT_A
    for i in range(pool_size):
        word = entropy[i] if i < entropy.shape[0] else np.uint64(0)
        hashed, hash_const = _hash(word, hash_const, _MULT_A)
        pool[i] = hashed
    for source in range(pool_size):
        for target in range(pool_size):
            if source != target:
                hashed, hash_const = _hash(pool[source], hash_const, _MULT_A)
                pool[target] = _mix(pool[target], hashed)
    for source in range(pool_size, entropy.shape[0]):
        for target in range(pool_size):
            hashed, hash_const = _hash(entropy[source], hash_const, _MULT_A)
            pool[target] = _mix(pool[target], hashed)
    return pool


@kernel
def generate_state(entropy, n_words, pool_size):
    """``SeedSequence.generate_state(n_words, np.uint32)`` (as uint64 values)."""
    pool = _seed_pool(entropy, pool_size)
    state = np.empty(n_words, dtype=np.uint64)
    hash_const = _INIT_B
    for i in range(n_words):
        hashed, hash_const = _hash(pool[i % pool_size], hash_const, _MULT_B)
        state[i] = hashed
    return state


@kernel
def _mul_high(a, b):
    """The high 64 bits of the 128-bit product of two 64-bit words."""
    a_low, a_high = a & _M32, a >> _U32
    b_low, b_high = b & _M32, b >> _U32
    low_low = a_low * b_low
    low_high = a_low * b_high
    high_low = a_high * b_low
    middle = (low_low >> _U32) + (low_high & _M32) + (high_low & _M32)
    return a_high * b_high + (low_high >> _U32) + (high_low >> _U32) + (middle >> _U32)


@kernel
def _add(state, high, low):
    """state += (high, low) (mod 2^128)."""
    summed = state[_STATE_LOW] + low
    state[_STATE_HIGH] += high + (_U1 if summed < low else np.uint64(0))
    state[_STATE_LOW] = summed


@kernel
def _step(state):
    """One LCG step: state = state * multiplier + increment (mod 2^128)."""
    high, low = state[_STATE_HIGH], state[_STATE_LOW]
    state[_STATE_HIGH] = (_mul_high(low, _PCG_MULT_LOW) + low * _PCG_MULT_HIGH
                          + high * _PCG_MULT_LOW)
    state[_STATE_LOW] = low * _PCG_MULT_LOW
    _add(state, state[_INC_HIGH], state[_INC_LOW])


@kernel
def pcg64(entropy, pool_size):
    """The state of ``PCG64(SeedSequence)`` for the entropy words: seeded from the first four
    64-bit words of the sequence (state, then increment, high word first)."""
    words = generate_state(entropy, 8, pool_size)
    seed_high = words[0] | (words[1] << _U32)
    seed_low = words[2] | (words[3] << _U32)
    sequence_high = words[4] | (words[5] << _U32)
    sequence_low = words[6] | (words[7] << _U32)
    state = np.zeros(6, dtype=np.uint64)
    state[_INC_HIGH] = (sequence_high << _U1) | (sequence_low >> _U63)
    state[_INC_LOW] = (sequence_low << _U1) | _U1
    _step(state)
    _add(state, seed_high, seed_low)
    _step(state)
    return state


@kernel
def next_uint64(state):
    """The next 64-bit output: step, then XSL-RR of the new state."""
    _step(state)
    xored = state[_STATE_HIGH] ^ state[_STATE_LOW]
    rotation = state[_STATE_HIGH] >> _U58
    return (xored >> rotation) | (xored << ((_U64 - rotation) & _U63))


@kernel
def next_uint32(state):
    """The next 32-bit output: the low half of a new 64-bit output, then its high half."""
    if state[_HAS_HALF]:
        state[_HAS_HALF] = 0
        return state[_HALF]
    value = next_uint64(state)
    state[_HAS_HALF] = 1
    state[_HALF] = value >> _U32
    return value & _M32


@kernel
def bounded_lemire(state, upper):
    """A uniform integer in [0, upper] by Lemire's method (``upper`` < 2^32 - 1; 0 draws
    nothing)."""
    if upper == 0:
        return 0
    excluded = np.uint64(upper) + _U1
    product = next_uint32(state) * excluded
    leftover = product & _M32
    if leftover < excluded:
        threshold = (_M32 - np.uint64(upper)) % excluded
        while leftover < threshold:
            product = next_uint32(state) * excluded
            leftover = product & _M32
    return np.int64(product >> _U32)


@kernel
def bounded_masked(state, upper):
    """A uniform integer in [0, upper] by masked rejection (``upper`` < 2^32; 0 draws
    nothing)."""
    if upper == 0:
        return 0
    mask = np.uint64(upper)
    for shift in (1, 2, 4, 8, 16):
        mask |= mask >> np.uint64(shift)
    value = next_uint32(state) & mask
    while value > np.uint64(upper):
        value = next_uint32(state) & mask
    return np.int64(value)


@kernel
def _shuffle_lemire(state, values, first):
    """Fisher-Yates steps from the last place of ``values`` down to place ``first``, each
    swapping it with a place drawn by Lemire's method (NumPy's ``_shuffle_int``)."""
    for i in range(values.shape[0] - 1, first - 1, -1):
        j = bounded_lemire(state, i)
        values[i], values[j] = values[j], values[i]


@kernel
def choice(state, n, m):
    """``Generator.choice(n, m, replace=False)``: m distinct integers of [0, n)."""
    if n > 10000 and m > n // 50:
        order = np.arange(n)
        _shuffle_lemire(state, order, max(n - m, 1))
        return order[n - m:].copy()
    chosen = np.empty(m, dtype=np.int64)
    taken = np.zeros(n, dtype=np.bool_)
    for j in range(n - m, n):
        value = bounded_lemire(state, j)
        if taken[value]:
            value = j
        taken[value] = True
        chosen[j - n + m] = value
    _shuffle_lemire(state, chosen, 1)
    return chosen


@kernel
def _shuffle_masked(state, values):
    """Fisher-Yates steps from the last place of ``values`` down to place 1, each swapping
    it with a place drawn by masked rejection (NumPy's ``_shuffle_raw``)."""
    for i in range(values.shape[0] - 1, 0, -1):
        j = bounded_masked(state, i)
        values[i], values[j] = values[j], values[i]


@kernel
def permutation(state, n):
    """``Generator.permutation(n)``: a Fisher-Yates shuffle of 0..n-1."""
    order = np.arange(n)
    _shuffle_masked(state, order)
    return order


@kernel
def permuted(state, X):
    """``Generator.permuted(X, axis=0)`` of a 2-D array: a copy whose columns are shuffled
    one after the other, each as ``permutation`` shuffles."""
    out = np.empty(X.shape, dtype=X.dtype)
    out[:] = X
    for column in range(X.shape[1]):
        _shuffle_masked(state, out[:, column])
    return out

"""The compiled random draws against NumPy's own SeedSequence, PCG64 and Generator
(docs/method/protocol.md §2, §5)."""

import numpy as np
import pytest

from pcskm.algorithms import _random_kernels as draws

KEYS = [(), (0,), (2, 1, 0, 4, 10, 0, 0), (3, 4, 10, 3, 25, 24, 9, 2, 80, 67, 75, 77),
        (2**32 - 1, 2**32, 5), (2**40 + 3,), (2**70, 1, 2**64 - 1)]
SEEDS = [0, 1, 7, 2**32, 2**33 + 5, 2**130 + 11]


def _sequence(seed, key):
    return np.random.SeedSequence(entropy=seed, spawn_key=key)


def _state(seed, key):
    return draws.pcg64(draws.entropy_words(seed, key), draws.POOL_SIZE)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("key", KEYS)
def test_seed_sequence_state(seed, key):
    words = draws.entropy_words(seed, key)
    for n_words in (1, 4, 8, 11):
        expected = _sequence(seed, key).generate_state(n_words, np.uint32)
        np.testing.assert_array_equal(draws.generate_state(words, n_words, draws.POOL_SIZE),
                                      expected.astype(np.uint64))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("key", KEYS)
def test_pcg64_seeding_and_outputs(seed, key):
    bit_generator = np.random.PCG64(_sequence(seed, key))
    expected = bit_generator.state["state"]
    state = _state(seed, key)
    assert (int(state[0]) << 64) | int(state[1]) == expected["state"]
    assert (int(state[2]) << 64) | int(state[3]) == expected["inc"]
    outputs = [draws.next_uint64(state) for _ in range(50)]
    np.testing.assert_array_equal(np.array(outputs, dtype=np.uint64),
                                  bit_generator.random_raw(50))


@pytest.mark.parametrize("upper", [1, 2, 3, 6, 7, 100, 1000, 65535, 2**31 + 7, 2**32 - 2])
def test_lemire_bounded_integers(upper):
    """Generator.integers over [0, upper] with int64 draws one Lemire number per value."""
    key = (5, upper % 1000)
    expected = np.random.default_rng(_sequence(3, key)).integers(0, upper + 1, size=200)
    state = _state(3, key)
    np.testing.assert_array_equal([draws.bounded_lemire(state, upper) for _ in range(200)],
                                  expected)


@pytest.mark.parametrize("n, m", [
    (0, 0), (1, 1), (5, 0), (5, 5), (9045, 90), (9045, 906), (10000, 201), (10000, 10000),
    (10001, 200), (10001, 201), (10001, 10001), (12345, 246), (12345, 247), (50000, 999),
    (50000, 1001), (50000, 25000), (80000, 7277),
])
def test_choice_then_permutation(n, m):
    """Both branches of choice (Floyd's algorithm, n <= 10000 or m <= n // 50; the tail
    shuffle), its edges, and a permutation after it from the same stream."""
    key = (2, n, m)
    rng = np.random.default_rng(_sequence(0, key))
    expected_choice = rng.choice(n, m, replace=False)
    expected_permutation = rng.permutation(m)
    state = _state(0, key)
    chosen = draws.choice(state, n, m)
    np.testing.assert_array_equal(chosen, expected_choice)
    assert chosen.dtype == np.int64
    np.testing.assert_array_equal(draws.permutation(state, m), expected_permutation)


def test_draws_in_a_row_share_the_stream():
    """Two choices and a permutation in a row (the balanced kind), with odd numbers of 32-bit
    draws in between, so that the kept half of a 64-bit output carries over."""
    for index in range(30):
        key = (2, 1, 0, 1, 10 + index)
        n_ml, n_cl, half = 3000 + 17 * index, 20000 + 101 * index, 11 + 13 * index
        rng = np.random.default_rng(_sequence(0, key))
        expected = [rng.choice(n_ml, half, replace=False),
                    rng.choice(n_cl, half, replace=False), rng.permutation(2 * half)]
        state = _state(0, key)
        got = [draws.choice(state, n_ml, half), draws.choice(state, n_cl, half),
               draws.permutation(state, 2 * half)]
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 17, 1000, 4097])
def test_permutation(n):
    key = (9, n)
    expected = np.random.default_rng(_sequence(4, key)).permutation(n)
    np.testing.assert_array_equal(draws.permutation(_state(4, key), n), expected)


@pytest.mark.parametrize("entropy", [0, 2**64 + 5, [1, 2, 3], [2**40, [7, 2**33]],
                                     np.array([5, 4_000_000_000], dtype=np.uint32)])
@pytest.mark.parametrize("pool_size", [4, 5, 8])
@pytest.mark.parametrize("key", [(), (9, 1, 0), (2**33,)])
def test_generator_state_of_any_seed_sequence(entropy, pool_size, key):
    """Every entropy a SeedSequence takes (an int, nested sequences, uint32 words), other pool
    sizes, with and without a key, extended by a further key part or not."""
    seed = np.random.SeedSequence(entropy, spawn_key=key, pool_size=pool_size)
    for extra in ((), (0,), (24,)):
        child = np.random.SeedSequence(entropy, spawn_key=(*key, *extra), pool_size=pool_size)
        state = draws.generator_state(seed, extra)
        np.testing.assert_array_equal([draws.next_uint64(state) for _ in range(5)],
                                      np.random.PCG64(child).random_raw(5))


@pytest.mark.parametrize("shape", [(0, 3), (1, 4), (2, 1), (7, 3), (150, 16), (351, 34),
                                   (70_000, 2)])
@pytest.mark.parametrize("layout", ["C", "F", "reversed"])
def test_permuted(shape, layout):
    """Generator.permuted(X, axis=0): every column shuffled, in column order, from one stream
    that stops where NumPy's does (the kept 32-bit half included)."""
    X = np.random.default_rng(1).normal(size=shape)
    X = {"C": X, "F": np.asfortranarray(X), "reversed": X[::-1, ::-1]}[layout]
    seed = np.random.SeedSequence(3, spawn_key=(9, shape[0]))
    rng = np.random.default_rng(seed)
    expected = rng.permuted(X, axis=0)
    state = draws.generator_state(seed)
    got = draws.permuted(state, X)
    np.testing.assert_array_equal(got, expected)
    assert got.flags.c_contiguous
    kept = rng.bit_generator.state
    assert (bool(state[draws._HAS_HALF]), int(state[draws._HALF])) == (
        bool(kept["has_uint32"]), kept["uinteger"])
    assert draws.next_uint64(state) == rng.bit_generator.random_raw()

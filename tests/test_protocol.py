"""The cross-validation and constraint protocol (spec protocol.md §2-§5, §7)."""

import hashlib
import math
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import pytest

from pcskm.experiments.datasets import load
from pcskm.experiments.protocol import KINDS, Protocol, pct10, seed_sequence, sparsity_grid

REAL = ("fisheriris", "ionosphere", "digits048-1", "digits389-10", "mwm-ttscst",
        "mwm-ttchst", "brodinova-5-5", "brodinova-3-7")
# protocol.md §3: fold sizes
FOLD_SIZES = {"fisheriris": (15, 15), "digits048-1": (15, 15), "digits389-10": (15, 15),
              "brodinova-5-5": (12, 12), "brodinova-3-7": (12, 12), "ionosphere": (34, 36),
              "mwm-ttscst": (41, 44), "mwm-ttchst": (39, 42)}


@pytest.fixture(scope="module")
def protocols(data_dir):
    return {name: Protocol(load(name, data_dir)) for name in REAL}


def _rng(key, seed=0):
    return np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=key))


def _crossvalind(y, code, subset, seed=0, K=10):
    """protocol.md §3 taken literally: per class in ascending order, q_t = ceil(K t / n_g) - 1,
    pq = permutation(K), ri = permutation(n_g), fold[h[ri[t-1]]] = pq[q_t]."""
    rng = _rng((1, code, subset), seed)
    fold = [None] * len(y)
    for g in sorted(set(y.tolist())):
        h = [i for i in range(len(y)) if y[i] == g]
        n_g = len(h)
        q = [math.ceil(K * t / n_g) - 1 for t in range(1, n_g + 1)]
        pq = rng.permutation(K)
        ri = rng.permutation(n_g)
        for t in range(1, n_g + 1):
            fold[h[ri[t - 1]]] = pq[q[t - 1]]
    return np.array(fold)


def _sample(y, fold_of, code, subset, kind, percent, run, fold, seed=0, draw_key=()):
    """protocol.md §4-§5 with a plain double loop for the pool and NumPy's Generator
    (``draw_key``: the unpaired design's key parts after the fold)."""
    train = [i for i in range(len(y)) if fold_of[i] != fold]
    ML, CL = [], []
    for ia, a in enumerate(train):
        for b in train[ia + 1:]:
            (ML if y[a] == y[b] else CL).append((a, b, 1 if y[a] == y[b] else 0))
    t0 = sum(1 for f in fold_of if f != 0)
    P1 = t0 * (t0 - 1) // 2
    m = int((Decimal(P1) * Decimal(str(percent)) / 100).quantize(0, ROUND_HALF_UP))
    m += m % 2
    kind_code = KINDS.index(kind) + 1
    rng = _rng((2, code, subset, kind_code, round(percent * 10), run, fold, *draw_key),
               seed)
    if kind == "balanced":
        iML = rng.choice(len(ML), m // 2, replace=False)
        iCL = rng.choice(len(CL), m // 2, replace=False)
        chosen = [ML[i] for i in iML] + [CL[i] for i in iCL]
    elif kind == "must-link":
        chosen = [ML[i] for i in rng.choice(len(ML), m, replace=False)]
    elif kind == "cannot-link":
        chosen = [CL[i] for i in rng.choice(len(CL), m, replace=False)]
    else:
        U = ML + CL
        chosen = [U[i] for i in rng.choice(len(U), m, replace=False)]
    perm = rng.permutation(m)
    chosen = [chosen[i] for i in perm]
    ml = np.array([(a, b) for a, b, link in chosen if link], dtype=np.int64).reshape(-1, 2)
    cl = np.array([(a, b) for a, b, link in chosen if not link], dtype=np.int64).reshape(-1, 2)
    return ml, cl


@pytest.mark.parametrize("name", REAL)
def test_folds_are_a_stratified_partition(protocols, name):
    protocol = protocols[name]
    y, fold_of = protocol.y, protocol.fold_of
    assert fold_of.shape == y.shape and set(fold_of.tolist()) == set(range(10))
    sizes = np.bincount(fold_of, minlength=10)
    low, high = FOLD_SIZES[name]
    assert sizes.min() >= low and sizes.max() <= high and sizes.sum() == len(y)
    for label in np.unique(y):
        per_fold = np.bincount(fold_of[y == label], minlength=10)
        assert per_fold.max() - per_fold.min() <= 1
    for fold in range(10):
        train, test = protocol.train_index(fold), protocol.test_index(fold)
        assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(len(y)))
        assert np.all(fold_of[test] == fold) and np.all(np.diff(train) > 0)


@pytest.mark.parametrize("name", REAL)
@pytest.mark.parametrize("seed", [0, 7])
def test_folds_equal_a_literal_crossvalind(data_dir, name, seed):
    dataset = load(name, data_dir)
    protocol = Protocol(dataset, seed=seed)
    expected = _crossvalind(dataset.y, dataset.code, dataset.subset, seed)
    np.testing.assert_array_equal(protocol.fold_of, expected)


def test_crossvalind_handles_small_classes():
    y = np.array([0] * 3 + [1] * 12 + [2] * 25)
    protocol = Protocol((9, 2), y, seed=3)
    np.testing.assert_array_equal(protocol.fold_of, _crossvalind(y, 9, 2, seed=3))
    # n_g = 12: two folds get 2 members (protocol.md §3's example)
    assert sorted(np.bincount(protocol.fold_of[y == 1], minlength=10)) == [1] * 8 + [2] * 2


@pytest.mark.parametrize("name", ["fisheriris", "ionosphere", "digits048-1"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cell", [(1, 0, 0), (10, 3, 7), (5.5, 24, 9)])
def test_constraints_equal_the_literal_sampling(protocols, name, kind, cell):
    """The compiled draws against NumPy's Generator: fisheriris's pools (9,045 pairs) take
    Floyd's branch of choice, ionosphere's (about 50,000) the tail shuffle as well."""
    percent, run, fold = cell
    protocol = protocols[name]
    ml, cl = protocol.constraints(kind, percent, run, fold)
    expected_ml, expected_cl = _sample(protocol.y, protocol.fold_of, protocol.code,
                                       protocol.subset, kind, percent, run, fold)
    np.testing.assert_array_equal(ml, expected_ml)
    np.testing.assert_array_equal(cl, expected_cl)
    assert ml.dtype == cl.dtype == np.int64


@pytest.mark.parametrize("kind", KINDS)
def test_unpaired_constraints_equal_the_literal_sampling(data_dir, kind):
    dataset = load("ionosphere", data_dir)
    protocol = Protocol(dataset, seed=5, design="unpaired")
    ml, cl = protocol.constraints(kind, 2.5, 4, 3, "PCKM", "seeding")
    expected = _sample(protocol.y, protocol.fold_of, protocol.code, protocol.subset, kind, 2.5,
                       4, 3, seed=5, draw_key=(2, 80, 67, 75, 77))
    np.testing.assert_array_equal(ml, expected[0])
    np.testing.assert_array_equal(cl, expected[1])


@pytest.mark.parametrize("name", ["ionosphere", "mwm-ttscst", "digits389-10"])
@pytest.mark.parametrize("kind", KINDS)
def test_constraints_respect_fold_type_and_count(protocols, name, kind):
    protocol = protocols[name]
    y = protocol.y
    for percent, run, fold in [(1, 0, 0), (10, 5, 3), (7.5, 1, 9)]:
        ml, cl = protocol.constraints(kind, percent, run, fold)
        m = protocol.count(percent)
        assert len(ml) + len(cl) == m and m % 2 == 0
        expected = {"balanced": (m // 2, m // 2), "must-link": (m, 0), "cannot-link": (0, m)}
        if kind in expected:
            assert (len(ml), len(cl)) == expected[kind]
        else:
            assert 0 < len(ml) < m  # a random mix
        pairs = np.concatenate([ml, cl])
        assert np.all(pairs[:, 0] < pairs[:, 1])
        assert not np.isin(pairs, protocol.test_index(fold)).any()
        assert np.all(y[ml[:, 0]] == y[ml[:, 1]]) and np.all(y[cl[:, 0]] != y[cl[:, 1]])
        assert len(np.unique(pairs, axis=0)) == m  # no duplicates (D12)


def test_pool_is_every_training_pair(protocols):
    protocol = protocols["mwm-ttchst"]
    for fold in (0, 4):
        t = len(protocol.train_index(fold))
        ml, cl = protocol.pool(fold)
        assert len(ml) + len(cl) == t * (t - 1) // 2
        keys = np.concatenate([ml, cl]) @ np.array([1000, 1])
        assert np.all(np.diff(ml @ np.array([1000, 1])) > 0)  # lexicographic
        assert len(np.unique(keys)) == len(keys)


def test_count_matches_the_spec(protocols):
    # protocol.md §4: fisheriris P1 = 9045; 1 % -> 90.45 -> 90; 10 % -> 904.5 -> 905 -> 906
    protocol = protocols["fisheriris"]
    assert protocol.pool_size == 9045
    assert protocol.count(1) == 90 and protocol.count(10) == 906
    for name, protocol in protocols.items():
        t = int(np.count_nonzero(protocol.fold_of != 0))
        for tenths in range(10, 101, 5):
            exact = Decimal(t * (t - 1) // 2) * Decimal(tenths) / 1000
            m = int(exact.quantize(0, ROUND_HALF_UP))
            assert protocol.count(tenths / 10) == m + m % 2, (name, tenths)


def test_runs_folds_kinds_and_seeds_give_different_samples():
    protocol = Protocol(load("brodinova-5-5"))
    base = np.concatenate(protocol.constraints("random", 5, 0, 0))
    for other in [("random", 5, 1, 0), ("random", 5, 0, 1), ("balanced", 5, 0, 0),
                  ("random", 5.5, 0, 0)]:
        sample = np.concatenate(protocol.constraints(*other))
        assert sample.shape != base.shape or not np.array_equal(sample, base)
    again = np.concatenate(protocol.constraints("random", 5, 0, 0))
    np.testing.assert_array_equal(again, base)
    other_seed = Protocol(load("brodinova-5-5"), seed=1)
    assert not np.array_equal(other_seed.fold_of, protocol.fold_of)


def test_same_cell_in_another_process():
    script = (
        "import sys, hashlib, numpy as np\n"
        "from experiments import Protocol, load\n"
        "p = Protocol(load('brodinova-3-7'), seed=0)\n"
        "ml, cl = p.constraints('random', 3.5, 17, 6)\n"
        "print(hashlib.sha256(ml.tobytes() + cl.tobytes() + p.fold_of.tobytes()).hexdigest())\n"
    )
    repo = Path(__file__).resolve().parents[1]
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True, cwd=repo).stdout.strip()
    protocol = Protocol(load("brodinova-3-7"), seed=0)
    ml, cl = protocol.constraints("random", 3.5, 17, 6)
    digest = hashlib.sha256(ml.tobytes() + cl.tobytes() + protocol.fold_of.tobytes())
    assert output == digest.hexdigest()


def test_iris_and_contaminated_digits_share_folds_and_samples(data_dir):
    pairs = [("iris", "fisheriris"), ("digits048-contaminated-2", "digits048-2")]
    for first, second in pairs:
        a, b = Protocol(load(first, data_dir)), Protocol(load(second, data_dir))
        np.testing.assert_array_equal(a.fold_of, b.fold_of)
        for left, right in zip(a.constraints("random", 4, 3, 2), b.constraints("random", 4, 3, 2),
                               strict=True):
            np.testing.assert_array_equal(left, right)


def test_seeding_seed_key(protocols):
    sequence = protocols["digits389-10"].seeding_seed("cannot-link", 2.5, 4, 8)
    assert sequence.entropy == 0 and sequence.spawn_key == (3, 4, 10, 3, 25, 4, 8)
    same = np.random.default_rng(sequence).integers(1 << 30, size=4)
    expected = _rng((3, 4, 10, 3, 25, 4, 8)).integers(1 << 30, size=4)
    np.testing.assert_array_equal(same, expected)
    assert seed_sequence(5, (2, 1)).spawn_key == (2, 1)


@pytest.mark.parametrize("p,n_s,last", [(4, 5, 1.9), (10, 11, 3.1), (16, 15, 3.9), (18, 16, 4.1),
                                        (20, 17, 4.3), (34, 24, 5.7)])
def test_sparsity_grid_table(p, n_s, last):
    grid = sparsity_grid(p)
    assert len(grid) == n_s
    np.testing.assert_allclose(grid, 1.1 + 0.2 * np.arange(n_s))
    assert grid[0] == 1.1 and abs(grid[-1] - last) < 1e-12 and grid[-1] <= math.sqrt(p)


@pytest.mark.parametrize("p", [50, 51, 64, 200, 1000])
def test_sparsity_grid_step_fallback(p):
    # count the values 1.1 + step i <= sqrt(p) exactly in decimals; first step with <= 30
    bound = Decimal(p).sqrt()
    for step in [Decimal("0.2"), *map(Decimal, range(1, 100))]:
        values = []
        while Decimal("1.1") + step * len(values) <= bound:
            values.append(Decimal("1.1") + step * len(values))
        if len(values) <= 30:
            break
    np.testing.assert_allclose(sparsity_grid(p), [float(v) for v in values])
    if p == 51:
        assert len(values) == 7 and values[-1] == Decimal("7.1")  # protocol.md §7


def test_bad_input():
    y = np.repeat(np.arange(10), 2)  # 10 classes of 2: few must-link pairs
    protocol = Protocol((9, 0), y, seed=0)
    assert len(protocol.pool(0)[0]) < protocol.count(10)
    with pytest.raises(ValueError, match=f"needs {protocol.count(10)} pairs"):
        protocol.constraints("must-link", 10, 0, 0)
    for percent in (1.05, 0, -1, 100.5, "5", True, float("nan")):
        with pytest.raises(ValueError, match="percentage"):
            pct10(percent)
    assert [pct10(v) for v in (1, 1.5, 5.5, 1.1, 10)] == [10, 15, 55, 11, 100]
    with pytest.raises(ValueError, match="unknown constraint kind 'both'"):
        protocol.constraints("both", 1, 0, 0)
    with pytest.raises(ValueError, match="fold must be below 10"):
        protocol.constraints("random", 1, 0, 10)
    with pytest.raises(ValueError, match="run must be a non-negative integer"):
        protocol.constraints("random", 1, -1, 0)
    with pytest.raises(ValueError, match="y .the labels. is required"):
        Protocol((1, 0))
    with pytest.raises(ValueError, match="key parts must be non-negative"):
        seed_sequence(0, (1, -2))
    with pytest.raises(ValueError, match="s grid .* is empty"):
        sparsity_grid(1)
    with pytest.raises(ValueError, match="step must be positive"):
        sparsity_grid(10, step=0)

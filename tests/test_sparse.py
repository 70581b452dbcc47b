"""Sparse engine (spec ``algorithms.md`` §4): scores, clipping, exact Delta, the weight loop
and the s-path, against the spec's worked examples, a bisection and the plain reference."""

from collections import Counter

import numpy as np
import pytest
from reference.pckm import class_pairs, random_problem
from reference.pckm import pckm as reference_pckm
from reference.sparse import sparse_kmeans as reference_sparse

from pcskm.algorithms._pckm import pckm_engine, pckm_fit
from pcskm.algorithms._result import STATUS_NAMES, empty_cluster_code
from pcskm.algorithms._sparse import (
    SCORE_MEMO,
    FitCache,
    feature_scores,
    satisfies_all,
    solve_delta,
    sparse_engine,
    sparse_weights,
)
from pcskm.algorithms.constraints import Constraints

N_PROBLEMS = 80

SCORE_X = np.array([[0, 0], [1, 2], [2, 1], [8, 1], [9, 3], [10, 2]], dtype=float)
SCORE_LABELS = np.array([0, 0, 0, 1, 1, 1])


def test_scores_example():
    """§4.3: TSS = (100, 5.5), WCSS = (4, 4), ML = (36, 0), CL = (99, 8)."""
    none = Constraints.empty(6)
    ml = Constraints.from_pairs([[2, 3]], None, n_samples=6)
    both = Constraints.from_pairs([[2, 3]], [[4, 5]], n_samples=6)
    np.testing.assert_allclose(feature_scores(SCORE_X, SCORE_LABELS, 2, none), [96, 1.5])
    # "code" ignores constraints; "paper" subtracts the violated ones.
    np.testing.assert_allclose(feature_scores(SCORE_X, SCORE_LABELS, 2, both), [96, 1.5])
    np.testing.assert_allclose(
        feature_scores(SCORE_X, SCORE_LABELS, 2, ml, weight_update="paper"), [60, 1.5]
    )
    degenerate = feature_scores(SCORE_X, SCORE_LABELS, 2, both, weight_update="paper")
    np.testing.assert_allclose(degenerate, [-39, -6.5])
    with pytest.raises(ValueError, match="degenerate"):
        sparse_weights(degenerate, 1.2)


def test_singleton_cluster_adds_zero_wcss():
    """D3: a one-point cluster adds 0 to every WCSS_j."""
    X = np.array([[0.0, 5.0], [2.0, 1.0], [4.0, 3.0]])
    scores = feature_scores(X, [0, 0, 1], 2, Constraints.empty(3))
    tss = ((X - X.mean(0)) ** 2).sum(0)
    wcss = ((X[:2] - X[:2].mean(0)) ** 2).sum(0)
    np.testing.assert_allclose(scores, tss - wcss, rtol=1e-15)


def test_clipping_example():
    """§4.4: gamma = (4, -2, 3, 1), s = 1.3 -> Delta = 2.332566, w = (0.928388, 0, 0.371612, 0)."""
    assert solve_delta([4, -2, 3, 1], 1.3) == pytest.approx(2.332566, abs=1e-6)
    np.testing.assert_allclose(
        sparse_weights([4, -2, 3, 1], 1.3), [0.928388, 0, 0.371612, 0], atol=1e-6
    )


def test_delta_example():
    """§4.5: g = (10, 6, 3, 1, 0); s = 1.5 -> Delta = 1.366779; s = 1.9 -> Delta = 0."""
    g = [10, 6, 3, 1, 0]
    assert solve_delta(g, 1.5) == pytest.approx(1.366779, abs=1e-6)
    w = sparse_weights(g, 1.5)
    np.testing.assert_allclose(w, [0.869136, 0.466442, 0.164422, 0, 0], atol=1e-6)
    assert w.sum() == pytest.approx(1.5, abs=1e-12)
    assert solve_delta(g, 1.9) == 0.0
    np.testing.assert_allclose(
        sparse_weights(g, 1.9), [0.827606, 0.496564, 0.248282, 0.082761, 0], atol=1e-6
    )


def test_delta_limit_case():
    """§4.5 LIMIT: s^2 <= t exactly tied maxima -> w = 1/sqrt(t) on them."""
    g = [3.0, 1.0, 3.0, 0.0]
    assert solve_delta(g, 1.2) == 3.0
    np.testing.assert_allclose(sparse_weights(g, 1.2), [2 ** -0.5, 0, 2 ** -0.5, 0])


def bisection(g, s):
    """sparcl-style bisection of §4.5 "Test requirement"; returns (Delta, weights)."""
    g = np.asarray(g, dtype=float)
    lo, hi = 0.0, g.max()

    def ratio(delta):
        u = np.maximum(g - delta, 0)
        return u, (u.sum() / np.sqrt((u ** 2).sum()) if u.any() else 0.0)

    if ratio(0.0)[1] <= s:
        return 0.0, g / np.sqrt((g ** 2).sum())
    while hi - lo >= 1e-12 * g.max():
        mid = (lo + hi) / 2
        u, r = ratio(mid)
        if not u.any() or r < s:
            hi = mid
        else:
            lo = mid
    u, _ = ratio(lo)
    return (lo + hi) / 2, u / np.sqrt((u ** 2).sum())


def test_exact_delta_matches_bisection():
    """§4.5 test requirement on random scores with zeros, exact ties and near-ties."""
    rng = np.random.default_rng(45)
    checked_sum = 0
    for trial in range(2000):
        p = int(rng.integers(1, 21))
        kind = trial % 4
        if kind == 0:
            g = rng.exponential(size=p)
        elif kind == 1:
            g = rng.integers(0, 4, size=p).astype(float)  # zeros and exact ties
        elif kind == 2:
            g = rng.exponential(size=p) * (rng.random(p) < 0.5)
        else:
            g = rng.exponential(size=p)
            g[rng.integers(p)] = g.max() * (1 - 1e-6)  # near-tie of the top two
        if not (g > 0).any():
            continue
        s = 1 + rng.random() * max(np.sqrt(p), 1.01)
        delta = solve_delta(g, s)
        w = sparse_weights(g, s)
        want_delta, want_w = bisection(g, s)
        where = f"trial {trial}: g={g.tolist()}, s={s}"
        assert abs(delta - want_delta) <= 1e-4 * g.max(), where
        np.testing.assert_allclose(w, want_w, rtol=0, atol=1e-4, err_msg=where)
        assert np.linalg.norm(w) == pytest.approx(1.0, abs=1e-12)
        n_tied = int((g == g.max()).sum())
        if delta > 0 and s * s > n_tied:
            assert abs(w.sum() - s) <= 1e-9, where
            checked_sum += 1
    assert checked_sum > 500


def engine(X, C0, s, ml=None, cl=None, **kwargs):
    constraints = Constraints.from_pairs(ml, cl, n_samples=len(X))
    return sparse_engine(np.asarray(X, float), C0, constraints, np.atleast_1d(s), **kwargs)


def random_sparsity(rng, p):
    return 1 + (np.sqrt(p) - 1) * rng.uniform(0.01, 1.0)


def repeats_early(history, max_iter):
    """Whether the labels of some weight iteration r < max_iter equal those of an earlier
    one (the run is periodic from there on)."""
    return any(history[r] in history[:r] for r in range(min(len(history), max_iter - 1)))


@pytest.mark.parametrize("empty_cluster", ["fail", "zero", "relocate"])
@pytest.mark.parametrize(
    "constrained, weight_update",
    [(False, "code"), (True, "code"), (True, "paper")],
    ids=["SKM", "PCSKM-code", "PCSKM-paper"],
)
def test_matches_plain_reference(constrained, weight_update, empty_cluster):
    """Identical labels, n_iter, status and inner passes; centres and weights to 1e-10."""
    rng = np.random.default_rng([12, constrained, len(weight_update), len(empty_cluster)])
    seen = Counter()
    for trial in range(N_PROBLEMS):
        X, C0, ml, cl, inner_max_iter = random_problem(
            rng, constrained=constrained, min_features=2
        )
        s = random_sparsity(rng, X.shape[1])
        max_iter = int(rng.choice([1, 2, 25, 25]))
        kwargs = dict(weight_update=weight_update, max_iter=max_iter,
                      inner_max_iter=inner_max_iter, empty_cluster=empty_cluster)
        got = engine(X, C0, s, ml, cl, **kwargs)
        want = reference_sparse(X, C0, s, ml, cl, **kwargs)
        where = f"trial {trial}"
        assert STATUS_NAMES[got.status[0]] == want["status"], where
        assert got.n_iter[0] == want["n_iter"], where
        np.testing.assert_array_equal(got.labels[0], want["labels"], err_msg=where)
        inner = got.inner_n_iter[0]
        assert inner[: len(want["inner_n_iter"])].tolist() == want["inner_n_iter"], where
        assert not inner[len(want["inner_n_iter"]):].any(), where
        assert got.n_empty_events[0] == want["n_empty"], where
        for name, value in [("weights", got.weights[0]), ("centers", got.centers[0]),
                            ("weighted_centers", got.weighted_centers[0])]:
            np.testing.assert_allclose(value, want[name], rtol=0, atol=1e-10,
                                       err_msg=f"{where}: {name}")
        np.testing.assert_allclose(got.objective[0], want["objective"], rtol=1e-12,
                                   err_msg=where)
        seen[want["status"]] += 1
        seen["empty events"] += want["n_empty"] > 0
        seen["periodic"] += repeats_early(want["label_history"], max_iter)
    # the engine copies the iterations of a periodic run (_sparse.py); the reference does not
    assert seen["converged"] > 0 and seen["max_iter"] > 0 and seen["periodic"] > 0
    assert seen["empty_cluster" if empty_cluster == "fail" else "empty events"] > 0
    if weight_update == "paper":
        assert seen["degenerate_weights"] > 0


def test_path_equals_single_fits():
    """Steps 1-2 shared over the grid change nothing: each s equals its own run."""
    rng = np.random.default_rng(7)
    for trial in range(40):
        X, C0, ml, cl, _ = random_problem(rng, constrained=trial % 2 == 0, min_features=2)
        grid = np.sort([random_sparsity(rng, X.shape[1]) for _ in range(5)])
        update = "paper" if trial % 4 == 0 else "code"
        path = engine(X, C0, grid, ml, cl, weight_update=update, empty_cluster="zero")
        for i, s in enumerate(grid):
            single = engine(X, C0, s, ml, cl, weight_update=update, empty_cluster="zero")
            for name in path._fields:
                np.testing.assert_array_equal(getattr(path, name)[i], getattr(single, name)[0],
                                              err_msg=f"trial {trial}, s={s}: {name}")


@pytest.mark.parametrize("weight_update", ["code", "paper"])
def test_path_scores_memo_against_plain_reference(weight_update):
    """Every s of a path equals the plain reference run alone, on paths that score more
    distinct labelings than the path's memo of feature scores holds (its ring of
    SCORE_MEMO - 1 rows wraps) and that meet a labeling of another s again (the memo serves
    it across s)."""
    rng = np.random.default_rng([23, len(weight_update)])
    n_wrapped = n_shared = 0
    for trial in range(30):
        X, C0, ml, cl, inner_max_iter = random_problem(rng, min_features=2)
        grid = np.sort([random_sparsity(rng, X.shape[1]) for _ in range(6)])
        kwargs = dict(weight_update=weight_update, inner_max_iter=inner_max_iter,
                      empty_cluster="zero")
        path = engine(X, C0, grid, ml, cl, **kwargs)
        scored = set()  # labelings of iterations r >= 2 that take a ring row (not row 0's)
        for i, s in enumerate(grid):
            want = reference_sparse(X, C0, s, ml, cl, **kwargs)
            where = f"trial {trial}, s={s}"
            assert path.n_iter[i] == want["n_iter"], where
            assert STATUS_NAMES[path.status[i]] == want["status"], where
            np.testing.assert_array_equal(path.labels[i], want["labels"], err_msg=where)
            np.testing.assert_allclose(path.weights[i], want["weights"], rtol=0, atol=1e-10,
                                       err_msg=where)
            history = set(want["label_history"][1:]) - set(want["label_history"][:1])
            n_shared += bool(scored & history)
            scored |= history
        n_wrapped += len(scored) >= SCORE_MEMO
    assert n_wrapped > 0 and n_shared > 0


@pytest.mark.parametrize("empty_cluster", ["fail", "zero", "relocate"])
def test_path_cache_changes_nothing(empty_cluster):
    """Paths from several initial centres and both score variants through one FitCache
    equal the paths computed alone, field for field, bit for bit; the cache is used."""
    rng = np.random.default_rng([21, len(empty_cluster)])
    policy = empty_cluster_code(empty_cluster)
    n_paths = n_computed = n_patched = 0
    for trial in range(60):
        X, C0, ml, cl, inner_max_iter = random_problem(rng, min_features=2)
        constraints = Constraints.from_pairs(ml, cl, n_samples=len(X))
        grid = np.sort([random_sparsity(rng, X.shape[1]) for _ in range(4)])
        # the final centres of the first clustering from C0 reach the same labels in fewer
        # passes; a jittered C0 often reaches them too
        first = pckm_fit(X, C0.copy(), *constraints.kernel_arrays, inner_max_iter, policy)
        starts = [C0, first[1], C0 + rng.normal(scale=1e-3, size=C0.shape),
                  X[rng.choice(len(X), size=len(C0), replace=False)]]
        cache = FitCache(constraints)
        passes = {}  # first clustering -> the pass counts and event counts reaching it
        for start in starts:
            for update in ("code", "paper"):
                kwargs = dict(weight_update=update, inner_max_iter=inner_max_iter,
                              empty_cluster=empty_cluster)
                got = sparse_engine(X, start, constraints, grid, cache=cache, **kwargs)
                want = sparse_engine(X, start, constraints, grid, **kwargs)
                for name in want._fields:
                    np.testing.assert_array_equal(getattr(got, name), getattr(want, name),
                                                  err_msg=f"trial {trial}: {name}")
                n_paths += 1
            labels, centers, n_passes, status, _, n_empty = pckm_fit(
                X, np.array(start, float), *constraints.kernel_arrays, inner_max_iter, policy)
            passes.setdefault((labels.tobytes(), centers.tobytes(), status), set()).add(
                (n_passes, n_empty))
        n_computed += len(cache._paths)
        n_patched += sum(len(counts) > 1 for counts in passes.values())
    # paths were reused, and some by a start whose first clustering took other passes
    assert n_computed < 0.8 * n_paths and n_patched > 0


def test_satisfies_all_is_no_constraint_violated():
    """``satisfies_all`` against the definition: every must-link pair in one cluster and every
    cannot-link pair in two."""
    rng = np.random.default_rng(29)
    n_true = n_false = 0
    for _ in range(300):
        n = int(rng.integers(2, 12))
        pairs = rng.choice(n, size=(int(rng.integers(0, 6)), 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        is_must_link = rng.random(len(pairs)) < 0.5
        labels = rng.integers(0, int(rng.integers(1, 4)), size=n)
        want = all((labels[a] == labels[b]) == must for (a, b), must
                   in zip(pairs, is_must_link, strict=True))
        assert satisfies_all(labels, np.ascontiguousarray(pairs, dtype=np.int64),
                             is_must_link) == want
        n_true += want
        n_false += not want
    assert n_true > 30 and n_false > 30


@pytest.mark.parametrize("first_update", ["code", "paper"])
def test_clean_runs_of_the_other_score_variant_are_copied_bit_for_bit(first_update):
    """A path of one score variant after the other's through one FitCache (which then copies
    the other's runs that met no violated constraint, §4.3) has the bits of the path computed
    alone, on blobs with constraints from their classes, where runs of both kinds happen:
    copied ones, and ones where the two variants differ."""
    rng = np.random.default_rng([31, first_update == "paper"])
    second_update = "paper" if first_update == "code" else "code"
    n_copied = n_differ = 0
    for trial in range(40):
        k = int(rng.integers(2, 4))
        p = int(rng.integers(2, 7))
        classes = rng.integers(0, k, size=int(rng.integers(12, 40)))
        X = rng.normal(size=(len(classes), p))
        X[:, :2] += rng.uniform(1.0, 4.0) * classes[:, None]  # two informative features
        # constraints from the classes, which a clustering close to them mostly satisfies
        ml, cl = class_pairs(rng, len(X), 30, classes)
        constraints = Constraints.from_pairs(ml, cl, n_samples=len(X))
        grid = np.sort([random_sparsity(rng, p) for _ in range(5)])
        C0 = X[rng.choice(len(X), size=k, replace=False)]
        cache = FitCache(constraints)
        first = sparse_engine(X, C0, constraints, grid, cache=cache,
                              weight_update=first_update)
        got = sparse_engine(X, C0, constraints, grid, cache=cache, weight_update=second_update)
        want = sparse_engine(X, C0, constraints, grid, weight_update=second_update)
        for name in want._fields:
            a, b = getattr(got, name), getattr(want, name)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), f"trial {trial}: {name}"
        clean = next(iter(cache._paths.values()))[1][0]  # the first variant's clean runs
        n_copied += int(clean.sum())
        n_differ += sum(not np.array_equal(first.labels[i], want.labels[i])
                        or not np.array_equal(first.weights[i], want.weights[i], equal_nan=True)
                        for i in range(len(grid)))
    assert n_copied > 40 and n_differ > 10


def test_a_bounded_path_cache_keeps_its_latest_entries_and_changes_nothing():
    """A FitCache of at most two entries keeps the two clusterings and paths used last,
    drops the older ones, and a start whose path was dropped gets it computed again: every
    path equals the one computed alone."""
    rng = np.random.default_rng(23)
    n_evicted = 0
    for trial in range(20):
        X, C0, ml, cl, inner_max_iter = random_problem(rng, min_features=2)
        constraints = Constraints.from_pairs(ml, cl, n_samples=len(X))
        grid = np.sort([random_sparsity(rng, X.shape[1]) for _ in range(3)])
        starts = [X[rng.choice(len(X), size=len(C0), replace=False)] for _ in range(4)]
        cache = FitCache(constraints, max_entries=2)
        for start in [*starts, starts[0], starts[3]]:
            got = sparse_engine(X, start, constraints, grid, cache=cache,
                                inner_max_iter=inner_max_iter)
            want = sparse_engine(X, start, constraints, grid, inner_max_iter=inner_max_iter)
            for name in want._fields:
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name),
                                              err_msg=f"trial {trial}: {name}")
            assert len(cache._firsts) <= 2 and len(cache._paths) <= 2
        kept = [np.frombuffer(key[0]).reshape(C0.shape) for key in cache._firsts]
        np.testing.assert_array_equal(kept, [starts[0], starts[3]])
        n_evicted += len({start.tobytes() for start in starts}) > 2
    assert n_evicted == 20


@pytest.mark.parametrize("pckm_first", [True, False])
@pytest.mark.parametrize("empty_cluster", ["fail", "zero", "relocate"])
def test_pckm_fit_is_the_first_clustering_of_the_cell(empty_cluster, pckm_first):
    """A PCKM fit through the cell's FitCache, before or after a PCSKM path from the same
    centres, equals the plain reference PCKM and the engine alone in every field; with the
    same pass limit the two share one clustering, with another they do not."""
    rng = np.random.default_rng([22, len(empty_cluster), pckm_first])
    n_shared = 0
    for trial in range(40):
        X, C0, ml, cl, inner_max_iter = random_problem(rng, min_features=2)
        constraints = Constraints.from_pairs(ml, cl, n_samples=len(X))
        grid = np.array([random_sparsity(rng, X.shape[1])])
        path_options = dict(inner_max_iter=inner_max_iter, empty_cluster=empty_cluster)
        for pckm_max_iter in (inner_max_iter, inner_max_iter + 1):
            pckm_options = dict(max_iter=pckm_max_iter, empty_cluster=empty_cluster)
            cache = FitCache(constraints)
            if pckm_first:
                got = pckm_engine(X, C0, constraints, cache=cache, **pckm_options)
            path = sparse_engine(X, C0, constraints, grid, cache=cache, **path_options)
            if not pckm_first:
                got = pckm_engine(X, C0, constraints, cache=cache, **pckm_options)
            path_alone = sparse_engine(X, C0, constraints, grid, **path_options)
            for name in path._fields:
                np.testing.assert_array_equal(getattr(path, name), getattr(path_alone, name))
            want = pckm_engine(X, C0, constraints, **pckm_options)
            for name in want._fields:
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name),
                                              err_msg=f"trial {trial}: {name}")
            reference = reference_pckm(X, C0, ml, cl, max_iter=pckm_max_iter,
                                       empty_cluster=empty_cluster)
            np.testing.assert_array_equal(got.labels, reference["labels"])
            assert got.n_iter == reference["n_iter"]
            shared = len(cache._firsts) == 1
            assert shared == (pckm_max_iter == inner_max_iter)
            n_shared += shared
    assert n_shared == 40


def test_fit_cache_serves_only_its_constraints():
    """SKM's and LKM's engine constraints are an empty list, not the cell's: nothing is
    cached for them."""
    rng = np.random.default_rng(5)
    X, C0, ml, cl, _ = random_problem(rng, min_features=2)
    constraints = Constraints.from_pairs(ml, cl, n_samples=len(X))
    cache = FitCache(constraints)
    empty = Constraints.empty(len(X))
    got = sparse_engine(X, C0, empty, np.array([1.2]), cache=cache)
    want = sparse_engine(X, C0, empty, np.array([1.2]))
    got_lkm = pckm_engine(X, C0, empty, cache=cache)
    assert len(cache._paths) == 0 and len(cache._firsts) == 0
    np.testing.assert_array_equal(got.labels, want.labels)
    np.testing.assert_array_equal(got_lkm.labels, pckm_engine(X, C0, empty).labels)


def test_tied_top_features_take_the_limit_weights():
    """§4.5 LIMIT in the loop: two identical informative columns tie exactly; with
    s = 1.2 < sqrt(2) both get 1/sqrt(2) and every other feature 0."""
    rng = np.random.default_rng(10)
    truth = np.repeat([0, 1], 20)
    signal = rng.normal(size=40) + 8.0 * truth
    X = np.column_stack([signal, rng.normal(size=40), signal, rng.normal(size=40)])
    got = engine(X, X[[0, 20]], 1.2)
    want = reference_sparse(X, X[[0, 20]], 1.2)
    assert STATUS_NAMES[got.status[0]] == want["status"] == "converged"
    np.testing.assert_allclose(got.weights[0], [2 ** -0.5, 0, 2 ** -0.5, 0], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(got.labels[0], truth)
    np.testing.assert_allclose(want["weights"], got.weights[0], rtol=0, atol=1e-15)

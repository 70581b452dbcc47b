"""The constraint list, its per-point partner lists and constraints_from_labels, against
plain constructions written here from the spec (algorithms.md §0, protocol.md §4)."""

import re

import numpy as np
import pytest
from reference.constraints import consistent_cannot_links, must_link_components

from pcskm.algorithms import Constraints, constraints_from_labels


def plain_partner_lists(must_link, cannot_link, n):
    """For each point, the (partner, constraint index) pairs in list order (ML, then CL)."""
    listing = [(min(a, b), max(a, b)) for a, b in must_link] + [
        (min(a, b), max(a, b)) for a, b in cannot_link
    ]
    lists = [[] for _ in range(n)]
    for c, (a, b) in enumerate(listing):
        lists[a].append((b, c))
        lists[b].append((a, c))
    return listing, lists


@pytest.mark.parametrize("seed", range(30))
def test_partner_lists_match_plain_construction(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    all_pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]
    chosen = rng.permutation(len(all_pairs))[: int(rng.integers(0, len(all_pairs) + 1))]
    pairs = np.array([all_pairs[i] for i in chosen], dtype=np.int64).reshape(-1, 2)
    pairs = np.where(rng.random((len(pairs), 1)) < 0.5, pairs, pairs[:, ::-1])  # either order
    n_ml = int(rng.integers(0, len(pairs) + 1))
    must_link = pairs[:n_ml]
    cannot_link = consistent_cannot_links(must_link, pairs[n_ml:], n)

    constraints = Constraints.from_pairs(must_link, cannot_link, n_samples=n)

    listing, lists = plain_partner_lists(must_link.tolist(), cannot_link.tolist(), n)
    assert constraints.pairs.tolist() == [list(p) for p in listing]
    assert constraints.is_must_link.tolist() == [True] * n_ml + [False] * len(cannot_link)
    for i in range(n):
        span = slice(constraints.indptr[i], constraints.indptr[i + 1])
        got = list(
            zip(constraints.partner[span].tolist(), constraints.link[span].tolist(), strict=True)
        )
        assert got == lists[i]
    for c, (a, b) in enumerate(constraints.pairs.tolist()):  # entries: the inverse of link
        at_a, at_b = constraints.entries[c].tolist()
        assert constraints.indptr[a] <= at_a < constraints.indptr[a + 1]
        assert constraints.indptr[b] <= at_b < constraints.indptr[b + 1]
        assert constraints.partner[at_a] == b and constraints.partner[at_b] == a
        assert constraints.link[at_a] == constraints.link[at_b] == c


def test_violated_and_satisfied_fraction_by_hand():
    constraints = Constraints.from_pairs([[0, 1], [2, 3]], [[0, 2], [1, 3]], n_samples=4)
    labels = np.array([0, 0, 0, 1])
    # ML (0,1) kept, ML (2,3) broken, CL (0,2) broken, CL (1,3) kept
    assert constraints.violated(labels).tolist() == [False, True, True, False]
    assert constraints.satisfied_fraction(labels) == 0.5
    partly_assigned = np.array([0, -1, 0, 1])
    assert constraints.violated(partly_assigned).tolist() == [False, True, True, False]
    assert np.isnan(Constraints.empty(4).satisfied_fraction(labels))


@pytest.mark.parametrize("seed", range(3))
def test_satisfied_fractions_of_many_labelings_pair_by_pair(seed):
    """One compiled call for S labelings equals counting each row's kept pairs by hand."""
    rng = np.random.default_rng(seed)
    n = 30
    pairs = np.array([(a, b) for a in range(n) for b in range(a + 1, n)])
    chosen = pairs[rng.choice(len(pairs), 60, replace=False)]
    y = rng.integers(0, 3, n)  # consistent: no contradiction, chained or not
    must_link = [p for p in chosen if y[p[0]] == y[p[1]]]
    cannot_link = [p for p in chosen if y[p[0]] != y[p[1]]]
    constraints = Constraints.from_pairs(must_link, cannot_link, n_samples=n)
    rows = rng.integers(0, 4, (7, n))
    expected = [(sum(row[a] == row[b] for a, b in must_link)
                 + sum(row[a] != row[b] for a, b in cannot_link)) / len(chosen) for row in rows]
    assert constraints.satisfied_fractions(rows).tolist() == expected
    assert constraints.satisfied_fractions(rows[3:4]).tolist() == expected[3:4]
    assert np.isnan(Constraints.empty(n).satisfied_fractions(rows)).all()


@pytest.mark.parametrize(
    ("must_link", "cannot_link", "message"),
    [
        ([[0, 1], [1, 0]], None, "must_link contains the pair \\(0, 1\\) more than once"),
        (None, [[2, 3], [3, 2]], "cannot_link contains the pair \\(2, 3\\) more than once"),
        ([[0, 4]], [[4, 0]], "both must-link and cannot-link"),
        ([[0, 5]], None, "must_link row 0 has an index out of range for 5 samples"),
        (None, [[1, 2], [-1, 2]], "cannot_link row 1 has a negative index"),
        ([[3, 3]], None, "pairs a point with itself"),
        ([[0.0, 1.0]], None, "must be an integer array"),
        ([0, 1], None, "must have shape \\(m, 2\\)"),
    ],
)
def test_bad_constraints_are_named(must_link, cannot_link, message):
    with pytest.raises(ValueError, match=message):
        Constraints.from_pairs(must_link, cannot_link, n_samples=5)


def test_a_transitive_contradiction_is_refused_naming_the_pair_and_the_chain():
    """a ML b, b ML c, a CL c: refused like a direct contradiction (issue 13)."""
    with pytest.raises(ValueError, match=re.escape(
            "the pair (0, 2) is cannot-link but the must-link chain 0 - 1 - 2 puts both in "
            "one cluster")):
        Constraints.from_pairs([[0, 1], [1, 2]], [[0, 2]], n_samples=4)
    # A longer chain, given in scrambled order and orientation, with a consistent
    # cannot-link listed first: the chain from 4 to 6 is 4 - 1 - 5 - 6.
    with pytest.raises(ValueError, match=re.escape(
            "the pair (4, 6) is cannot-link but the must-link chain 4 - 1 - 5 - 6")):
        Constraints.from_pairs([[6, 5], [1, 4], [2, 3], [5, 1]], [[0, 4], [6, 4]],
                               n_samples=7)


@pytest.mark.parametrize("seed", range(20))
def test_refused_exactly_when_the_must_links_join_a_cannot_link_pair(seed):
    """Against plain must-link components: refused iff some cannot-link pair lies in one
    component; the message names the first such pair and a chain of given must-links."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 30))
    all_pairs = np.array([(a, b) for a in range(n) for b in range(a + 1, n)])
    pairs = all_pairs[rng.permutation(len(all_pairs))[: int(rng.integers(1, 2 * n))]]
    n_ml = int(rng.integers(0, len(pairs) + 1))
    must_link, cannot_link = pairs[:n_ml], pairs[n_ml:]
    component = must_link_components(must_link, n)
    joined = [(a, b) for a, b in cannot_link.tolist() if component[a] == component[b]]
    if not joined:
        constraints = Constraints.from_pairs(must_link, cannot_link, n_samples=n)
        groups = np.array(component)
        sizes = np.bincount(groups, minlength=n)
        assert constraints.n_neighbourhoods == int((sizes >= 2).sum())
        in_one = sizes[groups] >= 2
        assert (constraints.neighbourhood[~in_one] == -1).all()
        # numbered by smallest point: the same partition, in the same order
        numbers = constraints.neighbourhood[in_one]
        assert (np.unique(groups[in_one], return_inverse=True)[1] == numbers).all()
        return
    with pytest.raises(ValueError, match="is cannot-link but the must-link chain") as error:
        Constraints.from_pairs(must_link, cannot_link, n_samples=n)
    found = re.search(r"the pair \((\d+), (\d+)\) .* chain ([\d -]+) puts", str(error.value))
    assert (int(found[1]), int(found[2])) == joined[0]
    chain = [int(v) for v in found[3].split(" - ")]
    given = {tuple(sorted(p)) for p in must_link.tolist()}
    assert chain[0] == joined[0][0] and chain[-1] == joined[0][1]
    assert all(tuple(sorted(step)) in given for step in zip(chain, chain[1:], strict=False))


@pytest.mark.parametrize("seed", range(10))
def test_constraints_from_labels_is_the_pool(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, size=25)
    index = np.sort(rng.choice(25, size=15, replace=False))
    must_link, cannot_link = constraints_from_labels(labels, index)
    expected_ml, expected_cl = [], []
    for a in index:
        for b in index:
            if a < b:
                (expected_ml if labels[a] == labels[b] else expected_cl).append([a, b])
    assert must_link.tolist() == expected_ml
    assert cannot_link.tolist() == expected_cl

"""Pairwise constraints: validation, the per-point partner lists the engines walk, the
must-link neighbourhoods, and helpers to build constraints from labels
(docs/method/algorithms.md §0).

The constraint list is the must-link pairs in the order given, followed by the cannot-link
pairs in the order given; every pair is stored as ``(a, b)`` with ``a < b``. The partner list
of point i is the sublist of constraints that contain i, in list order. A list is refused when
a cannot-link pair is also must-linked, directly or through a chain of must-links.
"""

from dataclasses import dataclass

import numpy as np

from ._jit import kernel


def _as_pairs(pairs, name):
    """``pairs`` as a C-contiguous (m, 2) int64 array, or ``ValueError`` naming ``name``; the
    indices themselves are checked in compiled code (:func:`_checked_lists`)."""
    if pairs is None:
        return np.empty((0, 2), dtype=np.int64)
    pairs = np.asarray(pairs)
    if pairs.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    if not (np.issubdtype(pairs.dtype, np.integer)):
        raise ValueError(
            f"{name} must be an integer array of row indices; got dtype {pairs.dtype}"
        )
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ValueError(f"{name} must have shape (m, 2); got {pairs.shape}")
    return np.ascontiguousarray(pairs, dtype=np.int64)


def _raise_bad_row(name, pairs, bad, n_samples):
    """The ``ValueError`` for the first bad row of ``pairs`` that :func:`_ordered_pairs`
    found (``bad``), if any."""
    if bad[0] >= 0:
        row = int(bad[0])
        raise ValueError(f"{name} row {row} has a negative index: {pairs[row].tolist()}")
    if bad[1] >= 0:
        row = int(bad[1])
        raise ValueError(
            f"{name} row {row} has an index out of range for {n_samples} samples: "
            f"{pairs[row].tolist()}"
        )
    if bad[2] >= 0:
        row = int(bad[2])
        raise ValueError(f"{name} row {row} pairs a point with itself: {pairs[row].tolist()}")


@kernel
def _ordered_pairs(pairs, n_samples):
    """Rows as ``(min, max)``, and the first row (or -1) with a negative index, with an index
    >= ``n_samples``, and pairing a point with itself."""
    m = pairs.shape[0]
    ordered = np.empty((m, 2), dtype=np.int64)
    bad = np.full(3, -1, dtype=np.int64)
    for c in range(m):
        low = min(pairs[c, 0], pairs[c, 1])
        high = max(pairs[c, 0], pairs[c, 1])
        ordered[c, 0] = low
        ordered[c, 1] = high
        if low < 0 and bad[0] < 0:
            bad[0] = c
        if high >= n_samples and bad[1] < 0:
            bad[1] = c
        if low == high and bad[2] < 0:
            bad[2] = c
    return ordered, bad


@kernel
def _partner_lists(pairs, n_samples):
    """Per-point partner lists in CSR form, by a counting sort (O(n + m), list order kept).

    Also finds a repeated pair: returns ``(indptr, partner, link, entries, duplicate)`` where
    ``entries[c]`` holds the positions of constraint c in the lists of its two points (``link``
    is its inverse) and ``duplicate`` the list positions of the first repeated pair found, or
    (-1, -1).
    Indices are unsigned (checked >= 0 before), so Numba skips the negative-index wraparound.
    """
    m = pairs.shape[0]
    indptr = np.zeros(n_samples + 1, dtype=np.int64)
    for c in range(m):
        indptr[np.uint64(pairs[c, 0] + 1)] += 1
        indptr[np.uint64(pairs[c, 1] + 1)] += 1
    for i in range(n_samples):
        indptr[i + 1] += indptr[i]
    fill = indptr[:-1].copy()
    partner = np.empty(2 * m, dtype=np.int64)
    link = np.empty(2 * m, dtype=np.int64)
    entries = np.empty((m, 2), dtype=np.int64)
    for c in range(m):
        a, b = np.uint64(pairs[c, 0]), np.uint64(pairs[c, 1])
        at = np.uint64(fill[a])
        partner[at] = b
        link[at] = c
        entries[c, 0] = at
        fill[a] += 1
        at = np.uint64(fill[b])
        partner[at] = a
        link[at] = c
        entries[c, 1] = at
        fill[b] += 1
    duplicate = np.full(2, -1, dtype=np.int64)
    seen_from = np.full(n_samples, -1, dtype=np.int64)  # the point whose list last saw j
    seen_link = np.empty(n_samples, dtype=np.int64)
    for i in range(n_samples):
        for e in range(np.uint64(indptr[i]), np.uint64(indptr[i + 1])):
            j = np.uint64(partner[e])
            if seen_from[j] == i:
                duplicate[0] = seen_link[j]
                duplicate[1] = link[e]
                return indptr, partner, link, entries, duplicate
            seen_from[j] = i
            seen_link[j] = link[e]
    return indptr, partner, link, entries, duplicate


@kernel
def _neighbourhoods(n_samples, pairs, n_must_link):
    """Neighbourhood number of every point (-1 outside any), the neighbourhood count, and
    the first cannot-link row of ``pairs`` whose points share a neighbourhood (-1 if none);
    the first ``n_must_link`` rows of ``pairs`` are the must-links, the rest cannot-links.

    Neighbourhoods are the connected components of the must-link graph with >= 2 points,
    numbered by their smallest point index (docs/method/initialisations.md §4, step 1).
    Union-find whose root is the smallest member; indices unsigned, as in
    :func:`_partner_lists`.
    """
    parent = np.arange(n_samples)
    for e in range(n_must_link):
        a, b = np.uint64(pairs[e, 0]), np.uint64(pairs[e, 1])
        while parent[a] != a:  # path halving keeps parent[i] <= i
            parent[a] = parent[parent[a]]
            a = np.uint64(parent[a])
        while parent[b] != b:
            parent[b] = parent[parent[b]]
            b = np.uint64(parent[b])
        if a < b:
            parent[b] = a
        elif b < a:
            parent[a] = b
    size = np.zeros(n_samples, dtype=np.int64)
    for i in range(n_samples):  # parent[i] <= i: its root is already resolved
        parent[i] = parent[np.uint64(parent[i])]
        size[np.uint64(parent[i])] += 1
    number = np.full(n_samples, -1, dtype=np.int64)
    count = 0
    for i in range(n_samples):
        if parent[i] == i and size[i] >= 2:
            number[i] = count
            count += 1
    for i in range(n_samples):
        number[i] = number[np.uint64(parent[i])]
    for e in range(n_must_link, pairs.shape[0]):
        group = number[np.uint64(pairs[e, 0])]
        if group >= 0 and group == number[np.uint64(pairs[e, 1])]:
            return number, count, e
    return number, count, -1


@kernel
def _checked_lists(must_link, cannot_link, n_samples):
    """The arrays of :class:`Constraints` from its two lists in one compiled call: returns
    ``(pairs, is_must_link, indptr, partner, link, entries, neighbourhood, n_neighbourhoods,
    bad, duplicate, joined)``, where ``bad`` holds the :func:`_ordered_pairs` findings of each list
    (row 0 must-link, row 1 cannot-link), ``duplicate`` those of :func:`_partner_lists` and
    ``joined`` the contradicting cannot-link row of :func:`_neighbourhoods`. The later steps
    run only on rows that passed the earlier ones (an index out of range stops at ``bad``,
    a repeated pair at ``duplicate``); what they did not compute is left empty."""
    must, bad_must = _ordered_pairs(must_link, n_samples)
    cannot, bad_cannot = _ordered_pairs(cannot_link, n_samples)
    bad = np.empty((2, 3), dtype=np.int64)
    bad[0] = bad_must
    bad[1] = bad_cannot
    pairs = np.concatenate((must, cannot))
    is_must_link = np.arange(pairs.shape[0]) < must.shape[0]
    none = np.empty(0, dtype=np.int64)
    no_entries = np.empty((0, 2), dtype=np.int64)
    duplicate = np.full(2, -1, dtype=np.int64)
    if bad.max() >= 0:
        return pairs, is_must_link, none, none, none, no_entries, none, 0, bad, duplicate, -1
    indptr, partner, link, entries, duplicate = _partner_lists(pairs, n_samples)
    if duplicate[0] >= 0:
        return pairs, is_must_link, indptr, partner, link, entries, none, 0, bad, duplicate, -1
    neighbourhood, count, joined = _neighbourhoods(n_samples, pairs, must.shape[0])
    return (pairs, is_must_link, indptr, partner, link, entries, neighbourhood, count, bad,
            duplicate, joined)


def _must_link_chain(indptr, partner, link, is_must_link, start, end):
    """The shortest chain of must-link pairs from ``start`` to ``end`` (a list of points), by
    a breadth-first walk of the partner lists; ``end`` must be in ``start``'s must-link
    component (only called to explain an error)."""
    previous = {start: start}
    frontier = [start]
    while end not in previous:
        reached = []
        for i in frontier:
            for e in range(indptr[i], indptr[i + 1]):
                j = int(partner[e])
                if is_must_link[link[e]] and j not in previous:
                    previous[j] = i
                    reached.append(j)
        frontier = reached
    chain = [end]
    while chain[-1] != start:
        chain.append(previous[chain[-1]])
    return chain[::-1]


@kernel
def _satisfied_rows(label_rows, pairs, is_must_link):
    """Satisfied count / m per row: the count is exact in float64, so this is the same
    number as the mean of the 0/1 satisfied flags. The labels are read transposed, so that
    each constraint compares its two points under every row side by side (a satisfied flag
    is "same label" for a must-link, its negation for a cannot-link)."""
    n_rows, n = label_rows.shape
    by_point = np.empty((n, n_rows), dtype=label_rows.dtype)
    for r in range(n_rows):
        for i in range(n):
            by_point[i, r] = label_rows[r, i]
    satisfied = np.zeros(n_rows, dtype=np.int64)
    m = pairs.shape[0]
    for c in range(m):
        a, b = pairs[c, 0], pairs[c, 1]
        cannot_link = 0 if is_must_link[c] else 1
        for r in range(n_rows):
            satisfied[r] += (by_point[a, r] == by_point[b, r]) ^ cannot_link
    out = np.empty(n_rows)
    for r in range(n_rows):
        out[r] = satisfied[r] / m
    return out


@dataclass(frozen=True, eq=False)
class Constraints:
    """A validated constraint list over ``n_samples`` points.

    Attributes
    ----------
    pairs : (m, 2) int64, each row ``a < b``; must-link rows first, then cannot-link rows.
    is_must_link : (m,) bool.
    indptr, partner, link : the per-point partner lists in CSR form: the partners of
        point i are ``partner[indptr[i]:indptr[i + 1]]`` in list order, and ``link`` holds the
        index (into ``pairs``) of the constraint behind each entry.
    entries : (m, 2) int64, the inverse of ``link``: the positions of constraint c in the
        lists of its points a and b (what the engines write a constraint's costs to).
    neighbourhood : (n_samples,) int64, the must-link neighbourhood of each point (the
        components of the must-link graph with >= 2 points, numbered by their smallest point;
        -1 outside any); ``n_neighbourhoods`` of them (docs/method/initialisations.md §4).
    """

    n_samples: int
    pairs: np.ndarray
    is_must_link: np.ndarray
    indptr: np.ndarray
    partner: np.ndarray
    link: np.ndarray
    entries: np.ndarray
    neighbourhood: np.ndarray
    n_neighbourhoods: int

    @classmethod
    def from_pairs(cls, must_link=None, cannot_link=None, *, n_samples):
        """Validate must-link and cannot-link (m, 2) arrays of 0-based row indices.

        Refuses an index out of range, a pair of a point with itself, a repeated pair, and a
        cannot-link pair whose points are must-linked, directly or through a chain of
        must-links (found by union-find over the must-links, near-linear in n + m).
        """
        must_link = _as_pairs(must_link, "must_link")
        cannot_link = _as_pairs(cannot_link, "cannot_link")
        (pairs, is_ml, indptr, partner, link, entries, neighbourhood, n_neighbourhoods, bad,
         duplicate, joined) = _checked_lists(must_link, cannot_link, n_samples)
        _raise_bad_row("must_link", must_link, bad[0], n_samples)
        _raise_bad_row("cannot_link", cannot_link, bad[1], n_samples)
        if duplicate[0] >= 0:
            first, second = duplicate
            a, b = pairs[first]
            if is_ml[first] != is_ml[second]:
                raise ValueError(f"the pair ({a}, {b}) is both must-link and cannot-link")
            kind = "must_link" if is_ml[first] else "cannot_link"
            raise ValueError(f"{kind} contains the pair ({a}, {b}) more than once")
        if joined >= 0:
            a, b = (int(v) for v in pairs[joined])
            chain = _must_link_chain(indptr, partner, link, is_ml, a, b)
            raise ValueError(
                f"the pair ({a}, {b}) is cannot-link but the must-link chain "
                f"{' - '.join(map(str, chain))} puts both in one cluster"
            )
        return cls(int(n_samples), pairs, is_ml, indptr, partner, link, entries, neighbourhood,
                   int(n_neighbourhoods))

    @classmethod
    def empty(cls, n_samples):
        return cls.from_pairs(None, None, n_samples=n_samples)

    @property
    def kernel_arrays(self):
        """``(pairs, is_must_link, indptr, partner, entries)``: what the engines' kernels
        take."""
        return self.pairs, self.is_must_link, self.indptr, self.partner, self.entries

    @property
    def must_link(self):
        return self.pairs[self.is_must_link]

    @property
    def cannot_link(self):
        return self.pairs[~self.is_must_link]

    def __len__(self):
        return len(self.pairs)

    def violated(self, labels):
        """Boolean mask of the violated constraints under ``labels`` (-1 = unassigned)."""
        la, lb = labels[self.pairs[:, 0]], labels[self.pairs[:, 1]]
        assigned = (la >= 0) & (lb >= 0)
        return assigned & np.where(self.is_must_link, la != lb, la == lb)

    def satisfied_fraction(self, labels):
        """Fraction of constraints satisfied by ``labels`` (NaN for an empty list)."""
        if len(self) == 0:
            return np.nan
        la, lb = labels[self.pairs[:, 0]], labels[self.pairs[:, 1]]
        return float(np.mean(np.where(self.is_must_link, la == lb, la != lb)))

    def satisfied_fractions(self, label_rows):
        """:meth:`satisfied_fraction` of every row of ``label_rows`` (S, n_samples) in one
        compiled call: an (S,) array (all NaN for an empty list)."""
        label_rows = np.ascontiguousarray(label_rows, dtype=np.int64)
        if label_rows.ndim != 2 or label_rows.shape[1] != self.n_samples:
            raise ValueError(f"label_rows must have shape (S, {self.n_samples}); "
                             f"got {label_rows.shape}")
        if len(self) == 0:
            return np.full(label_rows.shape[0], np.nan)
        return _satisfied_rows(label_rows, self.pairs, self.is_must_link)


def constraints_from_labels(labels, index=None):
    """All pairs over the rows ``index`` (default: all rows), split by label agreement.

    Returns ``(must_link, cannot_link)``: (m, 2) int64 arrays of pairs ``(a, b)`` with
    ``a < b`` in lexicographic order (the constraint pool of ``protocol.md`` §4).
    """
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be 1-D; got shape {labels.shape}")
    index = (
        np.arange(len(labels), dtype=np.int64)
        if index is None
        else np.unique(np.asarray(index, dtype=np.int64))
    )
    if len(index) and (index[0] < 0 or index[-1] >= len(labels)):
        raise ValueError(f"index out of range for {len(labels)} labels")
    first, second = np.triu_indices(len(index), k=1)
    a, b = index[first], index[second]
    same = labels[a] == labels[b]
    pairs = np.stack([a, b], axis=1)
    return pairs[same], pairs[~same]

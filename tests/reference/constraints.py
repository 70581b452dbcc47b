"""Plain must-link components (a depth-first walk, no union-find), for checking the package's
refusal of contradictory constraints and for making random test constraints consistent."""

import numpy as np


def must_link_components(must_link, n):
    """The must-link component of every point, numbered by the smallest point of each."""
    adjacent = [[] for _ in range(n)]
    for a, b in [] if must_link is None else np.asarray(must_link).tolist():
        adjacent[a].append(b)
        adjacent[b].append(a)
    component = [-1] * n
    for start in range(n):
        if component[start] >= 0:
            continue
        component[start] = start
        stack = [start]
        while stack:
            for v in adjacent[stack.pop()]:
                if component[v] < 0:
                    component[v] = start
                    stack.append(v)
    return component


def consistent_cannot_links(must_link, cannot_link, n):
    """The cannot-link pairs (in order) whose points the must-links do not join."""
    component = must_link_components(must_link, n)
    cannot_link = np.asarray(cannot_link, dtype=np.int64).reshape(-1, 2)
    keep = [component[a] != component[b] for a, b in cannot_link.tolist()]
    return cannot_link[np.array(keep, dtype=bool)]

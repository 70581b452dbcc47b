"""Which code computed the cells of each algorithm of the report (docs/reference/cube-schema.md,
Code provenance): the counts ``pcskm status`` shows
(:func:`pcskm.runner.store.provenance.code_counts`), read from the report's snapshot of the
store. One line per algorithm for the reading guide; a headline line for each algorithm whose
cells come from more than one code, so that a table mixing versions says so at the top.
"""

import numpy as np

from pcskm.runner.store.provenance import (
    RUN_INDEX,
    SHORT,
    UNKNOWN,
    code_counts,
    code_words,
    codes_of,
)

from .fits import complete


def counts(store):
    """``{algorithm: {digest: [cells, {run}]}}`` of the complete cells of ``store`` (an open
    :class:`.fits.Store`), digest "" for unknown code."""
    groups = []
    for name in store.names:
        ds = store.group(name)
        done = complete(store, ds)
        run_index = (ds[RUN_INDEX].load().transpose(*done.dims).values if RUN_INDEX in ds
                     else np.full(done.shape, UNKNOWN, np.int16))
        groups.append((tuple(str(a) for a in ds.algorithm.values), done.values, run_index,
                       ds.sizes["fold"]))
    return code_counts(groups, store.attrs)


def _part(code, cells, runs, words, current):
    if not code:
        return f"{cells:,} cells of unknown code (computed before pcskm recorded it)"
    numbers = ", ".join(str(n + 1) for n in sorted(runs))
    mark = ", the current definition" if code == current else ""
    return (f"{cells:,} cells by {words.get(code, 'code')} (digest {code[:SHORT]}; "
            f"run{'s' if len(runs) > 1 else ''} {numbers}{mark})")


def lines(store, found=None):
    """Per algorithm, the code that computed its cells: one code, or "cells from N versions"
    with the cells of each (``found``: :func:`counts`, else read now)."""
    found = counts(store) if found is None else found
    words = code_words(store.attrs)
    current = codes_of(store.attrs.get("algorithm_definitions", {}))
    out = []
    for name, by_code in found.items():
        parts = [_part(code, cells, runs, words, current.get(name))
                 for code, (cells, runs) in sorted(by_code.items(), key=lambda i: -i[1][0])]
        if len(parts) == 1:
            out.append(f"{name}: one code, {parts[0]}")
        else:
            out.append(f"{name}: **cells from {len(parts)} versions**: {'; '.join(parts)}")
    return out


def headline(store, found=None):
    """The summary's warning: the algorithms whose cells come from more than one code (empty
    when every algorithm's cells come from one)."""
    found = counts(store) if found is None else found
    mixed = [line for line, by_code in zip(lines(store, found), found.values(), strict=True)
             if len(by_code) > 1]
    if not mixed:
        return []
    return ["**Mixed code**: the cells of an algorithm below were computed by more than one "
            "version of its code, and its tables mix them (`pcskm run --recompute-changed` "
            "computes the cells of other than the current code again; section \"Store, runs "
            "and reading guide\"):", "\n".join(f"- {line}" for line in mixed)]

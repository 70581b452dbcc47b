"""Which code computed each cell (docs/reference/cube-schema.md, Code provenance): every run
records each algorithm's definition in its record (field ``code``: what
``algorithm_definitions`` records, estimator, params and, for a user estimator, its module's
version or source SHA-256), and each group's :data:`RUN_INDEX` array says which run marked
each block done (its place in the root's ``runs``). A cell's code is its run's definition of
its algorithm, compared by digest (:func:`definition_digest`); -1, a run without ``code`` or
a store without the array is unknown (computed before pcskm recorded it).
"""

import numpy as np

from .digests import digest
from .schema import DONE_DIMS, RUNNING

RUN_INDEX = "run_index"  # per group, dims DONE_DIMS: the run that marked each block done
RUN_INDEX_DIMS = DONE_DIMS
UNKNOWN = -1
RUN_INDEX_ATTRS = {
    "long_name": "the run that marked this (algorithm, init, kind, percent, run) done: its "
                 "place in the root attribute runs (0: the first); -1: unknown",
    "comment": "written with the done markers; the run's record holds the code of each "
               "algorithm (field code), docs/reference/cube-schema.md"}
SHORT = 12  # hex digits of a digest shown


def definition_digest(definition):
    """SHA-256 of an ``algorithm_definitions`` entry (canonical JSON): what a run records
    as an algorithm's code."""
    return digest(definition)


def codes_of(definitions):
    """``{algorithm: digest}`` of ``definitions`` (``{algorithm: definition}``)."""
    return {name: definition_digest(definition) for name, definition in definitions.items()}


def run_definitions(attrs):
    """The definitions each run of a store records (field ``code``), by its place in
    ``runs`` (root attributes ``attrs``): ``{algorithm: definition}``, empty for a run
    recorded before runs had them; the run in progress (or killed, not yet recorded) at the
    place after the last record."""
    records = [*attrs.get("runs", []), *([attrs[RUNNING]] if RUNNING in attrs else [])]
    return [record.get("code") or {} for record in records]


def run_codes(attrs):
    """:func:`run_definitions` as digests: ``{algorithm: digest}`` per run."""
    return [codes_of(code) for code in run_definitions(attrs)]


def describe(definition):
    """A definition in words: the distribution and version of a user estimator's module,
    or its source's SHA-256 (short), or the estimator and params."""
    if definition.get("version", "unknown") != "unknown":
        return f"{definition.get('distribution')} {definition['version']}"
    if definition.get("source_sha256"):
        return f"module SHA-256 {definition['source_sha256'][:SHORT]}"
    return f"{definition.get('estimator')} with params {definition.get('params')}"


def read_run_index(group):
    """A group's :data:`RUN_INDEX` (all unknown in a store made before it)."""
    if RUN_INDEX in group:
        return group[RUN_INDEX][...]
    return np.full(group["done"].shape, UNKNOWN, np.int16)


def block_codes(run_index, codes, algorithms):
    """Per block of ``run_index`` (algorithm, init, kind, percent, run), the digest of the
    code that computed it (``codes``: :func:`run_codes`; ``algorithms``: the group's
    algorithm labels), "" where unknown."""
    out = np.full(run_index.shape, "", dtype=object)
    for a, name in enumerate(algorithms):
        for number, code in enumerate(codes):
            if name in code:
                out[a][run_index[a] == number] = code[name]
    return out


def changed_blocks(done, run_index, codes, algorithms, current):
    """The blocks marked in ``done`` whose known code differs from ``current`` (``{algorithm:
    digest}``; an algorithm it lacks is not compared): what ``pcskm run --recompute-changed``
    recomputes."""
    known = block_codes(run_index, codes, algorithms)
    wanted = np.array([current.get(name, "") for name in algorithms], dtype=object)
    wanted = wanted.reshape(-1, *([1] * (done.ndim - 1)))
    return done & (known != "") & (wanted != "") & (known != wanted)


def code_words(attrs):
    """``{digest: words}`` (:func:`describe`) of every definition the runs and the root
    attributes ``attrs`` record."""
    return {definition_digest(d): describe(d)
            for code in [*run_definitions(attrs), attrs.get("algorithm_definitions", {})]
            for d in code.values()}


def code_counts(groups, attrs):
    """Per algorithm, the done cells each code computed and the runs (numbered from 0) that
    computed them: ``{algorithm: {digest: [cells, {run}]}}``, digest "" for unknown code
    (root attributes ``attrs``: ``runs``). ``groups``: ``(algorithm labels, complete blocks,
    run_index, n_folds)`` per data set."""
    codes = run_codes(attrs)
    counts = {}
    for algorithms, done, run_index, n_folds in groups:
        for a, name in enumerate(algorithms):
            numbers, blocks = np.unique(run_index[a][done[a]], return_counts=True)
            for number, n_blocks in zip(numbers.tolist(), blocks.tolist(), strict=True):
                code = codes[number].get(name, "") if 0 <= number < len(codes) else ""
                entry = counts.setdefault(name, {}).setdefault(code, [0, set()])
                entry[0] += n_blocks * n_folds
                entry[1].add(number)
    return counts


def code_lines(groups, attrs, users):
    """``pcskm status`` lines: per algorithm, the done cells each code computed
    (:func:`describe`, the runs numbered from 1), for every user estimator (``users``) and
    every algorithm whose done cells hold a code other than its current definition (root
    attributes ``attrs``: ``runs`` and ``algorithm_definitions``). ``groups``: see
    :func:`code_counts`."""
    current = codes_of(attrs.get("algorithm_definitions", {}))
    words = code_words(attrs)
    lines = []
    for name, by_code in code_counts(groups, attrs).items():
        others = {code for code in by_code if code and code != current.get(name)}
        if name not in users and not others:
            continue
        parts = []
        for code, (cells, numbers) in sorted(by_code.items(), key=lambda item: -item[1][0]):
            if not code:
                parts.append(f"{cells} cells of unknown code")
                continue
            runs = ", ".join(str(n + 1) for n in sorted(numbers))
            mark = ", current" if code == current.get(name) else ""
            parts.append(f"{cells} cells by {words[code]} (run{'s' if len(numbers) > 1 else ''}"
                         f" {runs}{mark})")
        lines.append(f"  {name}: {'; '.join(parts)}")
    return lines

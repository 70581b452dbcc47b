"""Another report's values beside a store's (``pcskm report STORE --baseline FOLDER``;
docs/guide/quick-study.md, "Comparing with committed results").

Every report writes what a later report needs to compare with it without its cube:

* ``baseline_values.csv.gz``: the family aggregates the report's tests read
  (``Results.families``): per (data set, selection, algorithm, init, kind, percent) the mean
  F (§9), its standard deviation, the counts of computed, expected and failed cells, and the
  mean F under each rule for failed fits (:mod:`.failure_rules`), at full precision;
* ``baseline_run_fold.csv.gz``: per (data set, algorithm, init, kind, run, fold) the mean
  over the percentages of F under each rule, at the primary selection (the per-data-set
  Bayesian t-test's values, :func:`decisions.dataset_t_table`);
* ``baseline_protocol.json``: what must match for the values to be compared: the spec's
  settings that fix the results (the store's ``protocol``: seed, folds, design, s grid, ...),
  the failure value, and per data set its data digest (SHA-256), grid (inits, kinds,
  percentages, runs, folds) and a digest of its constraint counts per (kind, percent). The
  folds and constraint samples are drawn from the seed, the data and these settings
  (docs/method/protocol.md §2), so equal settings and data give equal folds and constraints;
  and, under ``files``, the SHA-256 of the two value files (:func:`file_digests`).

:func:`read` refuses a folder whose value file does not have its recorded digest, or whose
record has none, naming the file, and a file that cannot be read (truncated, not JSON, not
CSV) in one line naming it: values edited after the report are never compared.
:func:`record_digests` adds the digests to the record of a folder written before reports
carried them, without writing anything else.

:func:`join` puts the baseline's algorithms that the store has not computed beside the
store's, so that every test of the report runs on the joined values. Under the rule
``available`` the joined values are the values a cube holding both would give. The rules
``itt`` and ``complete-case`` pair the algorithms cell by cell, which aggregates cannot: a
joined value under them is kept where it is exact (no failed or missing cell that the rule
pairs across the two sources) and is otherwise NaN, a case the tests leave out.
"""

import hashlib
import json
import numbers
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from .. import spec
from . import families, preregistered
from .failure_rules import AVAILABLE, COMPLETE_CASE, DIM, ITT, RULES

PROTOCOL_FILE = "baseline_protocol.json"
VALUES_FILE = "baseline_values.csv.gz"
RUN_FOLD_FILE = "baseline_run_fold.csv.gz"
VALUE_FILES = (VALUES_FILE, RUN_FOLD_FILE)
FORMAT = 1
KEYS = ["dataset", "selection", "algorithm", "init", "kind", "percent"]
COUNTS = ["n_subsets", "n_cells", "n_expected", "n_failed"]
VARIABLES = ["f_mean", "f_std", *COUNTS, "complete"]
RULE_COLUMNS = {rule: "f_" + rule.replace("-", "_") for rule in RULES}
RUN_FOLD_KEYS = ["dataset", "algorithm", "init", "kind", "run", "fold"]
# settings that name algorithms, which differ between the two by design
NOT_COMPARED = ("cv_algorithms",)
LABELS = {key: str for key in ("dataset", "selection", "algorithm", "init", "kind")}
FULL_PRECISION = "%.17g"  # a float64 read back is the same number
GZIP = {"method": "gzip", "mtime": 0}  # the same values, the same file


class BaselineMismatch(ValueError):
    """The store and the baseline were not computed with the same protocol."""


def _failure_value(attrs):
    prereg = preregistered.stored(attrs)
    return (prereg.failure_value if prereg is not None
            else spec.PREREGISTRATION_DEFAULTS["failure_value"])


def _family_of(names):
    """Data set name -> the label of its family (:func:`families.reported`)."""
    return {name: family.label for family in families.reported(names)
            for name in family.present(names)[0]}


def _constraint_digests(counts):
    """Per (kind, percent), ``"<kind> <percent>"``: the SHA-256 (16 hex digits) of the
    constraint counts m of its (run, fold) cells, where every cell is computed."""
    digests = {}
    for kind in counts.kind.values:
        for percent in counts.percent.values:
            m = counts.sel(kind=kind, percent=percent).values
            if np.isfinite(m).all() and (m >= 0).all():
                m = np.ascontiguousarray(m, dtype=np.int64)
                key = f"{kind} {float(percent):g}"
                digests[key] = hashlib.sha256(m.tobytes()).hexdigest()[:16]
    return digests


def store_record(store):
    """What the open ``store`` (:func:`fits.open_store`) says of its protocol (module
    docstring)."""
    attrs, family_of, datasets = store.attrs, _family_of(store.names), {}
    for name in store.names:
        group = store.group(name)
        datasets[name] = {
            "family": family_of[name],
            "data_sha256": (attrs.get("data_sha256") or {}).get(name)
            or group.attrs.get("data_sha256"),
            "inits": [str(v) for v in group.init.values],
            "kinds": [str(v) for v in group.kind.values],
            "percents": [float(v) for v in group.percent.values],
            "n_runs": int(group.sizes["run"]), "n_folds": int(group.sizes["fold"]),
            "constraints": _constraint_digests(group.n_constraints.load()),
        }
    return {"format": FORMAT, "spec_name": attrs.get("spec_name"),
            "spec_hash": attrs.get("spec_hash"), "protocol": attrs.get("protocol") or {},
            "failure_value": _failure_value(attrs), "datasets": datasets,
            "versions": attrs.get("versions") or {},
            "commits": sorted({str(run.get("commit")) for run in attrs.get("runs") or []
                               if run.get("commit")})}


def _long_values(data):
    """``Results.families`` as one row per (data set, selection, algorithm, init, kind,
    percent), the rules' means as columns."""
    frame = data[VARIABLES].to_dataframe().reset_index()
    rules = data.f_rules.to_dataset(DIM).rename(RULE_COLUMNS).to_dataframe().reset_index()
    keys = ["family", *KEYS[1:]]
    frame = frame.merge(rules, on=keys, how="left").rename(columns={"family": "dataset"})
    frame = frame[frame.n_expected > 0][[*KEYS, *VARIABLES, *RULE_COLUMNS.values()]]
    # the selections last: the rows of a non-sparse algorithm repeat, and compress
    return frame.sort_values([*KEYS[:1], *KEYS[2:], "selection"], kind="stable")


def _wide_run_fold(run_fold, primary):
    """``Results.run_fold`` under the ``primary`` selection as one row per (data set,
    algorithm, init, kind, run, fold), the rules as columns."""
    frames = [values.sel(selection=primary, drop=True).to_dataset(DIM).rename(RULE_COLUMNS)
              .to_dataframe().reset_index().assign(dataset=label)
              for label, values in run_fold.items() if primary in values.selection.values]
    columns = [*RUN_FOLD_KEYS, *RULE_COLUMNS.values()]
    if not frames:
        return pd.DataFrame(columns=columns)
    frame = pd.concat(frames, ignore_index=True)[columns]
    return frame[frame[list(RULE_COLUMNS.values())].notna().any(axis=1)]


def write(results, primary, out, written):
    """Write the three baseline files of ``results`` into ``out`` (``primary``: the primary
    selection, :func:`decisions.primary_selection`); append their paths to ``written``."""
    if results.families is None:
        return
    record = {**store_record(results.store), "primary_selection": primary,
              "selections": list(results.selections),
              "algorithms": [str(a) for a in results.families.algorithm.values]}
    if results.baseline is not None:
        record["joined"] = results.baseline.described()
    paths = (out / VALUES_FILE, out / RUN_FOLD_FILE, out / PROTOCOL_FILE)
    _long_values(results.families).to_csv(paths[0], index=False, float_format=FULL_PRECISION,
                                            compression=GZIP)
    _wide_run_fold(results.run_fold, primary).to_csv(
        paths[1], index=False, float_format=FULL_PRECISION, compression=GZIP)
    _write_record(out, {**record, "files": file_digests(out)})
    written.extend(paths)


def _write_record(folder, record):
    (folder / PROTOCOL_FILE).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


def file_digests(folder):
    """File name -> SHA-256 (hex) of the two value files of the report folder ``folder``."""
    return {name: hashlib.sha256((Path(folder) / name).read_bytes()).hexdigest()
            for name in VALUE_FILES}


def record_digests(folder):
    """Add the SHA-256 of its value files (:func:`file_digests`) to the
    ``baseline_protocol.json`` of the report folder ``folder``, written before reports carried
    them; nothing else of the record changes."""
    folder = Path(folder)
    _write_record(folder, {**_record(folder), "files": file_digests(folder)})


def _record(folder):
    """The parsed ``baseline_protocol.json`` of ``folder``; ValueError naming the file when
    it is not a JSON object."""
    path = folder / PROTOCOL_FILE
    try:
        record = json.loads(path.read_text())
    except (ValueError, OSError) as error:  # JSONDecodeError and UnicodeDecodeError too
        raise ValueError(f"--baseline: {path} cannot be read ({type(error).__name__}: "
                         f"{error}); write the report folder again with pcskm report") from None
    if not isinstance(record, dict):
        raise ValueError(f"--baseline: {path} is not a baseline record (a JSON "
                         f"{type(record).__name__}, not an object); write the report folder "
                         "again with pcskm report")
    return record


def _check_digests(folder, record):
    """Refuse (ValueError naming the file) a value file of ``folder`` whose SHA-256 is not
    the one ``record`` holds for it, or a record that holds none."""
    recorded = record.get("files")
    if not isinstance(recorded, dict):
        raise ValueError(f"--baseline: {folder / PROTOCOL_FILE} records no SHA-256 of the "
                         "value files (a report folder written before reports carried them): "
                         "write it again with pcskm report, or, if its files are as that "
                         "report wrote them, add the digests with "
                         "pcskm.experiments.report.baseline.record_digests")
    for name, digest in file_digests(folder).items():
        if recorded.get(name) != digest:
            raise ValueError(f"--baseline: {folder / name} is not the file its report wrote "
                             f"(SHA-256 {digest[:12]}, recorded {str(recorded.get(name))[:12]} "
                             f"in {PROTOCOL_FILE}): edited or damaged; its values are not used")


def _csv(path):
    """The table of the value file ``path``; ValueError naming it when it cannot be read."""
    try:
        return pd.read_csv(path, dtype=LABELS)
    except (ValueError, OSError, EOFError, zlib.error) as error:  # ParserError is a ValueError
        raise ValueError(f"--baseline: {path} cannot be read ({type(error).__name__}: "
                         f"{error})") from None


def _rules(wide):
    """The rules' columns of ``wide`` stacked along ``failures``."""
    return xr.concat([wide[RULE_COLUMNS[rule]] for rule in RULES],
                     dim=xr.DataArray(list(RULES), dims=DIM, name=DIM))


def _typed(data):
    """``data`` with its counts as integers and ``complete`` as booleans."""
    return data.assign({name: data[name].astype(np.int64) for name in COUNTS}
                       | {"complete": data.complete.astype(bool)})


@dataclass
class Baseline:
    """A report folder's baseline files, read: its ``record`` (``baseline_protocol.json``),
    ``values`` (a Dataset like ``Results.families``) and ``run_fold`` (data set label ->
    (failures, algorithm, init, kind, run, fold) under the record's primary selection)."""

    folder: Path
    record: dict
    values: xr.Dataset
    run_fold: dict


def read(folder):
    """The :class:`Baseline` of the report folder ``folder``; ValueError naming what is
    missing, a file that cannot be read or one that is not as its report wrote it."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"--baseline {folder}: no such folder (give a report folder, e.g. "
                         "docs/results/extended)")
    absent = [name for name in (PROTOCOL_FILE, VALUES_FILE, RUN_FOLD_FILE)
              if not (folder / name).is_file()]
    if absent:
        raise ValueError(f"--baseline {folder} has no {', '.join(absent)}: not a report "
                         "folder, or one written before reports carried them (write it again "
                         "with pcskm report from its store)")
    record = _record(folder)
    _check_digests(folder, record)
    frame = _csv(folder / VALUES_FILE)
    values = (frame.rename(columns={"dataset": "family"})
              .set_index(["family", *KEYS[1:]]).to_xarray())
    rules = _rules(values)
    order = [a for a in record.get("algorithms", []) if a in values.algorithm.values]
    values = values[VARIABLES].assign(f_rules=rules).reindex(algorithm=order)
    values = _typed(values.fillna({name: 0 for name in COUNTS} | {"complete": False}))
    run_fold = {}
    table = _csv(folder / RUN_FOLD_FILE)
    for label, part in table.groupby("dataset", sort=False):
        wide = part.drop(columns="dataset").set_index(RUN_FOLD_KEYS[1:]).to_xarray()
        run_fold[label] = _rules(wide)
    return Baseline(folder=folder, record=record, values=values, run_fold=run_fold)


def _listed(values):
    return ", ".join(map(str, values))


FEW = 4  # the names a refusal lists before it counts the rest


def _few(values):
    """The first :data:`FEW` of ``values``, then how many more: a refusal stays one short
    line however many data sets the baseline holds."""
    values = [str(v) for v in values]
    rest = len(values) - FEW
    return _listed(values[:FEW]) + (f" and {rest} more" if rest > 0 else "")


def differences(store, base):
    """What differs between the protocol records ``store`` and ``base``
    (:func:`store_record`), one phrase each; empty when they match."""
    found = []
    left, right = store.get("protocol", {}), base.get("protocol", {})
    for key in sorted((set(left) | set(right)) - set(NOT_COMPARED)):
        if left.get(key) != right.get(key):
            found.append(f"{key} {left.get(key)!r} in the store, {right.get(key)!r} in the "
                         "baseline")
    if store.get("failure_value") != base.get("failure_value"):
        found.append(f"failure_value {store.get('failure_value')!r} in the store, "
                     f"{base.get('failure_value')!r} in the baseline")
    ours, theirs = store["datasets"], base["datasets"]
    absent = [name for name in ours if name not in theirs]
    if absent:
        found.append(f"data set{'s' if len(absent) > 1 else ''} {_few(absent)} not in the "
                     f"baseline (its {len(theirs)} data sets: {_few(theirs)})")
    for name, mine in ours.items():
        other = theirs.get(name)
        if other is None:
            continue
        if mine["data_sha256"] != other["data_sha256"]:
            found.append(f"the data of {name} differ (SHA-256 {str(mine['data_sha256'])[:12]} "
                         f"in the store, {str(other['data_sha256'])[:12]} in the baseline)")
        for key in ("n_runs", "n_folds", "percents"):
            if mine[key] != other[key]:
                found.append(f"{name}: {key} {mine[key]} in the store, {other[key]} in the "
                             "baseline")
        for key in ("inits", "kinds"):
            extra = [v for v in mine[key] if v not in other[key]]
            if extra:
                found.append(f"{name}: {key} {_listed(extra)} not in the baseline")
        changed = [block for block, digest in mine["constraints"].items()
                   if other["constraints"].get(block, digest) != digest]
        if changed:
            found.append(f"{name}: the constraint counts differ at {_few(changed)} %")
    for label in dict.fromkeys(d["family"] for d in ours.values()):
        mine = sorted(n for n, d in ours.items() if d["family"] == label)
        other = sorted(n for n, d in theirs.items() if d.get("family") == label)
        if mine != other and set(mine) <= set(theirs):
            found.append(f"data set {label} averages {_few(mine)} in the store, "
                         f"{_few(other)} in the baseline")
    return found


def check(store, baseline):
    """Refuse (:class:`BaselineMismatch`) a ``baseline`` whose protocol is not the open
    ``store``'s, naming every difference, and (ValueError) one that adds no algorithm."""
    _taken(store, baseline)
    found = differences(store_record(store), baseline.record)
    if found:
        raise BaselineMismatch(
            f"--baseline {baseline.folder} was not computed with the protocol of "
            f"{store.path}: {'; '.join(found)}. Its values cannot be compared with the store's")


@dataclass
class Joined:
    """What :func:`join` did: the ``folder``, the algorithms ``taken`` from it and those of
    the store (``kept``), the baseline's spec, its primary selection, the code that computed
    it, and how many joined values of the rules itt and complete-case were left out
    (``dropped``: rule -> count)."""

    folder: Path
    taken: tuple
    kept: tuple
    spec_name: str
    primary: str
    commits: tuple
    dropped: dict

    def described(self):
        return {"folder": str(self.folder), "taken": list(self.taken), "kept": list(self.kept),
                "spec_name": self.spec_name, "primary_selection": self.primary,
                "commits": list(self.commits)}


def computed_algorithms(store):
    """The algorithms of the open ``store`` with a computed cell (a block marked done) in
    some data set, in the store's order."""
    found = {}
    for name in store.names:
        done = store.group(name).done.load()
        per_algorithm = done.sum([d for d in done.dims if d != "algorithm"])
        found |= {str(a): True for a in per_algorithm.algorithm.values
                  if per_algorithm.sel(algorithm=a) > 0}
    return list(found)


def _taken(store, baseline):
    """The algorithms of ``baseline`` that the store has not computed; ValueError when there
    is none."""
    kept = computed_algorithms(store)
    taken = [str(a) for a in baseline.values.algorithm.values if str(a) not in kept]
    if not taken:
        raise ValueError(f"--baseline {baseline.folder} adds no algorithm: every one of its "
                         f"algorithms ({_listed(baseline.values.algorithm.values)}) is "
                         f"computed in {store.path}")
    return kept, taken


def _exact(data, taken, failure_value):
    """Where the joined means under itt and complete-case are exact (module docstring),
    rule -> mask over (family, selection, algorithm, init, kind, percent). A slice of an
    algorithm is clean when every expected cell is computed and none failed: there every rule
    gives its available value. complete-case pairs all algorithms: exact where all are
    clean. itt fills a failed cell with ``failure_value``'s F in that cell: exact for a
    number, for an algorithm whose fill came from the same source, or where it is clean."""
    clean = (data.n_failed == 0) & (data.n_cells == data.n_expected)
    source = xr.DataArray([str(a) in taken for a in data.algorithm.values], dims="algorithm",
                          coords={"algorithm": data.algorithm})
    if isinstance(failure_value, numbers.Real) or failure_value not in data.algorithm.values:
        same = xr.ones_like(source)
    else:
        same = source == bool(source.sel(algorithm=failure_value))
    return {ITT: clean | same, COMPLETE_CASE: clean.all("algorithm") & xr.ones_like(clean)}


def _with_exact_rules(rules, exact):
    """``rules`` (dim failures) with itt and complete-case NaN where not ``exact``; where
    complete-case is exact it is the available value."""
    return xr.concat([rules.sel({DIM: AVAILABLE}),
                      rules.sel({DIM: ITT}).where(exact[ITT]),
                      rules.sel({DIM: AVAILABLE}).where(exact[COMPLETE_CASE])],
                     dim=rules[DIM])


def _join_run_fold(results, baseline, taken, exact, primary):
    for label, values in list(results.run_fold.items()):
        order = [str(a) for a in values.algorithm.values]
        kept = values.sel(algorithm=[a for a in order if a not in taken])
        theirs = baseline.run_fold.get(label)
        if theirs is not None and primary in kept.selection.values:
            theirs = theirs.sel(algorithm=[a for a in theirs.algorithm.values if a in taken])
            kept = xr.concat([kept, theirs.expand_dims(selection=[primary])
                              .transpose(*values.dims)], dim="algorithm", join="outer")
        order += [a for a in taken if a not in order]
        kept = kept.reindex({dim: values[dim].values for dim in values.dims
                             if dim != "algorithm"} | {"algorithm": order})
        at = {"family": label, "selection": kept.selection, "algorithm": kept.algorithm}
        held = {rule: mask.sel(at).all("percent") for rule, mask in exact.items()}
        results.run_fold[label] = _with_exact_rules(kept, held).transpose(*values.dims)


def join(results, baseline):
    """Put the algorithms of ``baseline`` (:func:`read`, checked with :func:`check`) that the
    store of ``results`` has not computed beside the store's, in ``results.families`` and
    ``results.run_fold``, so that every test of the report runs on both; returns
    :class:`Joined`, also in ``results.baseline``. ValueError when the baseline adds no
    algorithm."""
    data = results.families
    kept, taken = _taken(results.store, baseline)
    order = [str(a) for a in data.algorithm.values]
    order += [a for a in taken if a not in order]
    fill = ({name: np.nan for name in data.data_vars} | {name: 0 for name in COUNTS}
            | {"complete": False})
    # the store's coordinates, in its order (a data set, selection or setting the baseline
    # lacks: nothing computed)
    at = {dim: data[dim].values for dim in data.dims if dim != "algorithm"}
    theirs = baseline.values.sel(algorithm=taken).reindex(at, fill_value=fill)
    mine = data.sel(algorithm=[a for a in order if a in data.algorithm.values
                               and a not in taken])
    joined = xr.concat([mine, theirs], dim="algorithm", join="outer", fill_value=fill)
    joined = joined.reindex(at | {"algorithm": order}, fill_value=fill)
    joined = _typed(joined)
    failure_value = baseline.record.get("failure_value")
    exact = _exact(joined, taken, failure_value)
    rules = joined.f_rules
    joined["f_rules"] = _with_exact_rules(rules, exact).transpose(*rules.dims)
    dropped = {rule: int((rules.sel({DIM: rule}).notnull()
                          & joined.f_rules.sel({DIM: rule}).isnull()).sum())
               for rule in (ITT, COMPLETE_CASE)}
    primary = baseline.record.get("primary_selection", "")
    results.families = joined.transpose(*data.dims)[list(data.data_vars)]
    _join_run_fold(results, baseline, taken, exact, primary)
    results.baseline = Joined(
        folder=baseline.folder, taken=tuple(taken), kept=tuple(kept),
        spec_name=str(baseline.record.get("spec_name")), primary=primary,
        commits=tuple(baseline.record.get("commits") or ()), dropped=dropped)
    return results.baseline


def paragraph(joined, primary):
    """The report's lines on a joined baseline (``primary``: the report's primary
    selection)."""
    lines = [
        f"**Compared with a baseline**: {_listed(joined.taken)} from `{joined.folder}` (spec "
        f"{joined.spec_name}; code: commit {_listed(joined.commits) or 'unknown'}), beside "
        f"{_listed(joined.kept)} of this store (`pcskm report --baseline`). The protocol "
        "matches: the settings that fix the results, the data digests, every data set's "
        "grid and its constraint counts. Every test of the report runs on the joined values; "
        "the tables of cells, failures, selections and weights describe this store alone."]
    dropped = {rule: n for rule, n in joined.dropped.items() if n}
    if dropped:
        lines.append(
            "Under the rules for failed fits that pair algorithms cell by cell (itt, "
            "complete-case; docs/method/statistics.md, \"Failed fits\"), a joined mean is "
            "exact only where no failed or missing cell is paired across the two sources; "
            "left out (n/a) elsewhere: "
            + ", ".join(f"{n} of {rule}" for rule, n in dropped.items()) + " means.")
    if joined.primary != primary:
        lines.append(f"The baseline's per-(run, fold) values are under its primary selection "
                     f"{joined.primary}, not {primary}: the per-data-set t-tests (section 9) "
                     f"compare {_listed(joined.kept)} alone.")
    return lines


def summary(joined):
    """The summary's line on a joined baseline (None: none)."""
    return [] if joined is None else paragraph(joined, joined.primary)[:1]

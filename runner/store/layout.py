"""The layout of a store: its groups' coordinates and the settings that fix its results, for a
spec (:func:`spec_layout`) or as a store holds them (:func:`layout_of`), and the merging of
two (:func:`merge_layouts`), which refuses what would compute a cell differently.
"""

import hashlib
import json
import logging
from dataclasses import dataclass, field

import numpy as np

from pcskm.experiments import cells, estimators
from pcskm.experiments.protocol import pct10
from pcskm.experiments.sources import check_folds, definition_json
from pcskm.experiments.spec import ADDED_DEFAULTS

from .errors import IncompatibleStore
from .provenance import describe
from .schema import (
    AUC_SETTING,
    CHUNKED_BY,
    SCHEMA_VERSION,
    SCORE_SETTINGS,
    WEIGHTS_PER_S,
    auc_setting,
    layout_datasets,
    not_in_layout,
)

log = logging.getLogger("pcskm")

# Spec fields a store may grow along; every other field of the spec (seed, n_folds,
# max_iter, the s grid rule) fixes the results and must match the store's.
EXTENDABLE = ("datasets", "algorithms", "inits", "kinds", "seeding_kinds", "percentages",
              "n_runs", "data")  # data: a data set's definition; its digest is checked instead
FREE = ("name", "description", "source_text")
# What algorithm_definitions records of a user estimator's origin: a change warns, the rest
# of a definition must match the store's.
PROVENANCE_KEYS = ("distribution", "version", "source_sha256")


def definition_is_sparse(definition):
    """Whether an algorithm of ``algorithm_definitions`` fits the s grid (SKM, PCSKM, a user
    estimator with ``sparsity``)."""
    return definition.get("sparse", definition.get("estimator") in cells.SPARSE)


def has_user_algorithms(definitions):
    """Whether ``algorithm_definitions`` hold a user estimator (the store then has the
    ``fit_error`` variable)."""
    return any(estimators.is_import_path(d.get("estimator", "")) for d in definitions.values())


def algorithm_definition(variant):
    """What the cube records of a spec's algorithm: estimator and params, and for a user
    estimator its constraints mode, whether it fits the s grid and its provenance
    (:func:`pcskm.experiments.estimators.provenance`)."""
    definition = {"estimator": variant.estimator, "params": variant.params}
    if variant.is_user:
        definition.update(constraints=variant.constraints,
                          sparse=estimators.is_sparse(variant.estimator),
                          **estimators.provenance(variant.estimator))
    return json_copy(definition)


def json_copy(value):
    """``value`` as it reads back from JSON (tuples as lists, keys as strings)."""
    return json.loads(json.dumps(value))


@dataclass(frozen=True)
class GroupLayout:
    """The coordinates and attributes of one data set's group."""

    dataset: str
    algorithms: tuple
    inits: tuple
    kinds: tuple
    percents: tuple
    n_runs: int
    n_folds: int
    sparsity: tuple  # the data set's s grid (the coordinate is NaN followed by these)
    feature_names: tuple
    uninformative: tuple | None
    attrs: dict = field(compare=False, hash=False)

    @property
    def sparsity_coord(self):
        return np.array((np.nan, *self.sparsity))

    def fit_shape(self):
        return (len(self.algorithms), len(self.inits), len(self.kinds), len(self.percents),
                self.n_runs, self.n_folds, 1 + len(self.sparsity))

    def coords(self):
        return {
            "algorithm": np.array(self.algorithms, dtype=str),
            "init": np.array(self.inits, dtype=str),
            "kind": np.array(self.kinds, dtype=str),
            "percent": np.array(self.percents, dtype=np.float64),
            "run": np.arange(self.n_runs, dtype=np.int64),
            "fold": np.arange(self.n_folds, dtype=np.int64),
            "sparsity": self.sparsity_coord,
            "feature": np.arange(len(self.feature_names), dtype=np.int64),
        }


@dataclass(frozen=True)
class Layout:
    groups: dict  # dataset name -> GroupLayout
    fixed: dict  # the spec fields that fix the results
    algorithms: dict  # variant name -> {"estimator", "params"}
    # the groups have weights_per_s: every new store; a store made before keeps its layout
    weights_per_s: bool = True
    # how its chunks are cut (schema.CHUNKED_BY): a new store the current version's; a store
    # made before keeps its own, also when extended
    schema_version: int = SCHEMA_VERSION


def _union(preferred, others):
    return tuple(preferred) + tuple(v for v in others if v not in preferred)


def spec_layout(spec, data_dir=None):
    """The layout of ``spec``'s cube (loads every data set of the spec)."""
    kinds = _union(spec.kinds, spec.seeding_kinds)
    groups = {}
    for name in spec.datasets:
        ref = spec.data_ref(name)
        data = cells.dataset(ref, data_dir)
        check_folds(data, spec.n_folds)
        sha = _data_sha256(data)
        attrs = {
            "dataset": name, "code": data.code, "subset": data.subset,
            "n_samples": data.n_samples, "n_features": data.n_features,
            "n_clusters": data.n_clusters, "description": data.description,
            "source": data.source, "data_sha256": sha,
            "feature_quality": data.feature_quality or "unknown",
        }
        if not isinstance(ref, str):  # a [data.NAME] table of the spec
            attrs["definition"] = definition_json(ref)
        uninformative = None if data.uninformative is None else tuple(
            bool(v) for v in data.uninformative)
        groups[name] = GroupLayout(
            dataset=name, algorithms=tuple(v.name for v in spec.algorithms),
            inits=tuple(spec.inits), kinds=kinds, percents=tuple(spec.percentages),
            n_runs=spec.n_runs, n_folds=spec.n_folds,
            sparsity=tuple(float(s) for s in spec.sparsity_grid(data.n_features)),
            feature_names=tuple(data.feature_names), uninformative=uninformative,
            attrs=attrs,
        )
    spec_dict = spec.to_dict()
    fixed = json_copy({k: v for k, v in spec_dict.items() if k not in EXTENDABLE + FREE})
    fixed[AUC_SETTING] = auc_setting(fixed)
    variants = {v.name: algorithm_definition(v) for v in spec.algorithms}
    return Layout(groups=groups, fixed=fixed, algorithms=variants)


def _data_sha256(data):
    digest = hashlib.sha256()
    digest.update(np.ascontiguousarray(data.X, dtype=np.float64).tobytes())
    digest.update(np.ascontiguousarray(data.y, dtype=np.int64).tobytes())
    return digest.hexdigest()


def _rounded(values):
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


def merge_layouts(old, new, store="the store", check_scores=True,
                  advice="Use another --store for this spec, or the settings the store was "
                         "made with."):
    """The layout covering both; raise :class:`IncompatibleStore` naming every difference
    that changes results (seed, folds, max_iter, s grid, algorithm parameters, data) and,
    with ``check_scores``, the selection-score settings that one store cannot hold together; the
    message ends with ``advice``."""
    problems = []
    for key in sorted((set(old.fixed) | set(new.fixed)) - set(SCORE_SETTINGS)):
        if old.fixed.get(key) != new.fixed.get(key):
            problems.append(f"{key} is {old.fixed.get(key)!r} in {store} but "
                            f"{new.fixed.get(key)!r} in this spec")
    scores = _merge_scores(old, new, store, problems) if check_scores else {}
    for name in sorted(set(old.algorithms) & set(new.algorithms)):
        before, now = (_without_provenance(layout.algorithms[name]) for layout in (old, new))
        if before != now:
            problems.append(f"algorithm {name} is {before} in {store} but {now} in this spec")
        elif old.algorithms[name] != new.algorithms[name]:
            _warn_provenance(name, old.algorithms[name], new.algorithms[name], store)
    groups = dict(old.groups)
    for name, group in new.groups.items():
        if name not in old.groups:
            groups[name] = group
            continue
        before = old.groups[name]
        if before.attrs.get("data_sha256") != group.attrs.get("data_sha256"):
            problems.append(f"the data of {name} differ from the data in {store}: SHA-256 "
                            f"{before.attrs.get('data_sha256')} there, "
                            f"{group.attrs['data_sha256']} as loaded now ({group.attrs['source']})"
                            f". The file was edited or another version was read: restore the "
                            f"data the store was computed from, or give the changed data set "
                            f"another name (or use another --store)")
        if len(before.sparsity) != len(group.sparsity) or not np.allclose(
                before.sparsity, group.sparsity, rtol=0, atol=1e-12):
            problems.append(f"the s grid of {name} is {_rounded(before.sparsity)} in {store} "
                            f"but {_rounded(group.sparsity)} in this spec")
        if before.n_folds != group.n_folds:
            problems.append(f"{name} has {before.n_folds} folds in {store}, {group.n_folds} "
                            "in this spec")
        if before.feature_names != group.feature_names:
            problems.append(f"the features of {name} differ from those in {store}")
        if problems:
            continue
        percents = sorted(set(before.percents) | set(group.percents), key=pct10)
        groups[name] = GroupLayout(
            dataset=name,
            algorithms=_union(before.algorithms, group.algorithms),  # old order, new appended
            inits=_union(before.inits, group.inits),
            kinds=_union(before.kinds, group.kinds),
            percents=tuple(percents),
            n_runs=max(before.n_runs, group.n_runs),
            n_folds=group.n_folds,
            sparsity=before.sparsity,
            feature_names=before.feature_names,
            uninformative=before.uninformative,
            attrs=before.attrs,
        )
    if problems:
        raise IncompatibleStore(
            f"{store} holds results that this spec would compute differently:\n  - "
            + "\n  - ".join(problems)
            + "\n" + advice
        )
    return Layout(groups=groups, fixed={**old.fixed, **scores},
                  algorithms={**old.algorithms, **new.algorithms},
                  weights_per_s=old.weights_per_s, schema_version=old.schema_version)


def _without_provenance(definition):
    return {k: v for k, v in definition.items() if k not in PROVENANCE_KEYS}


def _warn_provenance(name, before, now, store):
    """Warn that user estimator ``name`` comes from another version than the store's
    definition, and say how to recompute the cells of other code."""
    log.warning("algorithm %s: %s records %s, this run uses %s; the done cells are kept, "
                "each with the code of the run that computed it (pcskm status lists them). "
                "To compute the cells of other code again, rerun with --recompute-changed",
                name, store, describe(before), describe(now))


def _merge_scores(old, new, store, problems):
    """The selection-score settings covering both (appending to ``problems``): a store
    without a kind of score takes the spec's; a store with it keeps it, and the spec must
    have the same number of folds or permutations, and the same ``cv_runs`` for CV;
    ``cv_algorithms`` grows, but an algorithm of the spec that has CV scores in the store
    must keep them. The pair AUC (``cv_auc``) comes with the CV scores: a store with CV
    scores made before it gets it from a spec with CV scores."""
    merged = {AUC_SETTING: bool(old.fixed.get(AUC_SETTING) or new.fixed.get(AUC_SETTING))}
    for key in ("cv_folds", "gap_permutations"):
        before, wanted = old.fixed.get(key, 0), new.fixed.get(key, 0)
        merged[key] = before or wanted
        if before and wanted != before:
            problems.append(f"{key} is {before!r} in {store} but {wanted!r} in this spec (a "
                            "store keeps the selection scores it has, with their settings)")
    before, wanted = old.fixed.get("cv_runs"), new.fixed.get("cv_runs")
    merged["cv_runs"] = before if old.fixed.get("cv_folds", 0) else wanted
    if old.fixed.get("cv_folds", 0) and new.fixed.get("cv_folds", 0) and wanted != before:
        problems.append(f"cv_runs is {before!r} in {store} but {wanted!r} in this spec (a "
                        "store keeps the selection scores it has, with their settings)")
    before, wanted = old.fixed.get("cv_algorithms", []), new.fixed.get("cv_algorithms", [])
    dropped = [name for name in before if name in new.algorithms and name not in wanted]
    if dropped and new.fixed.get("cv_folds", 0):
        problems.append(f"{', '.join(dropped)} {'has' if len(dropped) == 1 else 'have'} CV "
                        f"scores in {store} but {'is' if len(dropped) == 1 else 'are'} not in "
                        "this spec's cv_algorithms")
    merged["cv_algorithms"] = [*before, *(name for name in wanted if name not in before)]
    return merged


def dataset_groups(root):
    """``(name, group)`` of each data set's group of the store whose root group ``root`` is
    open: those of its layout (:func:`.schema.layout_datasets`), never a group written by
    hand."""
    datasets = layout_datasets(root.attrs.asdict())
    return [(name, group) for name, group in root.groups()
            if datasets is None or name in datasets]


def foreign_nodes(root):
    """The paths of the nodes of the store whose root group ``root`` is open (without its
    consolidated metadata, so that every node is listed) that its layout does not name
    (:func:`.schema.not_in_layout`): an array or a group written by hand."""
    return not_in_layout((node for node, _ in root.members(max_depth=None)),
                         layout_datasets(root.attrs.asdict()))


def layout_of(root, path):
    """The layout of the store at ``path``, whose root group ``root`` is open."""
    attrs = root.attrs.asdict()
    version = attrs.get("schema_version")
    if version not in CHUNKED_BY:
        raise IncompatibleStore(
            f"{path} is not a pcskm cube of schema version "
            f"{' or '.join(map(str, CHUNKED_BY))} (found {version!r}); a newer pcskm wrote "
            "it, or it is not a cube"
        )
    groups, weights_per_s = {}, True
    for name, group in dataset_groups(root):
        weights_per_s &= WEIGHTS_PER_S in group
        gattrs = group.attrs.asdict()
        uninformative = (tuple(bool(v) for v in group["uninformative"][:])
                         if "uninformative" in group else None)
        groups[name] = GroupLayout(
            dataset=name,
            algorithms=tuple(str(v) for v in group["algorithm"][:]),
            inits=tuple(str(v) for v in group["init"][:]),
            kinds=tuple(str(v) for v in group["kind"][:]),
            percents=tuple(float(v) for v in group["percent"][:]),
            n_runs=int(group["run"].shape[0]),
            n_folds=int(group["fold"].shape[0]),
            sparsity=tuple(float(v) for v in group["sparsity"][1:]),
            feature_names=tuple(gattrs.pop("feature_names")),
            uninformative=uninformative,
            attrs=gattrs,
        )
    # a store written before a spec key existed was made with the key's implied value; one
    # written before the pair AUC has CV scores without it
    implied = {k: v for k, v in ADDED_DEFAULTS.items() if k not in EXTENDABLE}
    return Layout(groups=groups, fixed={**implied, AUC_SETTING: False, **attrs["protocol"]},
                  algorithms=attrs["algorithm_definitions"], weights_per_s=weights_per_s,
                  schema_version=version)


def positions(old, new):
    """The position in ``new`` of each value of ``old``; -1 where ``new`` lacks it."""
    lookup = {value: i for i, value in enumerate(new)}
    return np.array([lookup.get(value, -1) for value in old], dtype=np.int64)


def label_positions(group, among):
    """Per label dimension (algorithm, init, kind, percent), the position in the group
    layout ``among`` of each label of the group layout ``group``; -1 where ``among`` lacks
    it."""
    return {
        "algorithm": positions(group.algorithms, among.algorithms),
        "init": positions(group.inits, among.inits),
        "kind": positions(group.kinds, among.kinds),
        "percent": positions([pct10(p) for p in group.percents],
                             [pct10(p) for p in among.percents]),
    }


def done_shape(layout):
    """The shape of a group's ``done`` (and ``scored``) markers: (algorithm, init, kind,
    percent, run)."""
    return layout.fit_shape()[:5]

"""One pass over the cube: per data set, the selections (written to the sidecar store), their
aggregates, the best-s summaries, the tie and choice counts, the weight means, the coverage,
the failed fits and a sample of cells; then the fixed-loo selection, which needs every data
set (:mod:`.fixed_s`), and the families.

The cube is read one data set at a time in each of up to one forked child per core
(:func:`forking.forked_map`), so memory stays bounded by that many of the largest groups.
"""

import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr
import zarr

from pcskm import forking
from pcskm.runner.store import SELECTIONS_TITLE, WEIGHTS_PER_S

from .. import spec
from . import (
    cell_sample,
    coverage,
    failure_rules,
    failures,
    families,
    fixed_s,
    preregistered,
    selection,
    ties,
    weights,
)
from .fits import CELL_DIMS, LABEL_DIMS, fit_table, quiet, table_variables

SIDECAR_SUFFIX = "-selections.zarr"
CELL = ("run", "fold")


def sidecar_path(store_path):
    """Where the selections are stored: ``<store stem>-selections.zarr`` beside the cube."""
    store_path = Path(store_path)
    return store_path.with_name(store_path.stem + SIDECAR_SUFFIX)


@dataclass
class Results:
    """Everything the report shows, computed from the cube."""

    store: object
    sidecar: Path
    by_dataset: dict = field(default_factory=dict)  # name -> summaries (selection, ...)
    # name -> failure_rules.rule_values (failures, selection, ...)
    by_rule: dict = field(default_factory=dict)
    # family label -> F under each failure rule per (failures, selection, algorithm, init,
    # kind, run, fold), the mean over the percentages (the per-data-set Bayesian t-test's)
    run_fold: dict = field(default_factory=dict)
    best_s: dict = field(default_factory=dict)  # name -> Dataset of best-s summaries
    weight_means: dict = field(default_factory=dict)  # name -> weights.means() Dataset
    # name -> weights.means() over every s, of the data sets the claims read
    # (CLAIMED_WEIGHTS; weight_means' own where it is that)
    weight_means_over_s: dict = field(default_factory=dict)
    coverage: list = field(default_factory=list)  # DataFrames, one per data set
    samples: list = field(default_factory=list)  # DataFrames (coverage.samples), one per set
    failures: list = field(default_factory=list)  # DataFrames, one per data set
    constraints_used: list = field(default_factory=list)
    families: xr.Dataset | None = None  # (family, selection, algorithm, init, kind, percent)
    family_labels: dict = field(default_factory=dict)  # family label -> label to show
    family_members: dict = field(default_factory=dict)  # family label -> members present
    family_weights: dict = field(default_factory=dict)  # family label -> weight means
    family_weights_over_s: dict = field(default_factory=dict)  # the claims', over every s
    cell_sample: list = field(default_factory=list)  # DataFrames, one per data set
    selections: tuple = ()  # the selections of the cube, in selection.ORDER
    # the selection whose s the weight figures show (weights.MEAN_OVER_S: a store without
    # weights_per_s)
    weights_at: str = ""
    per_s: dict = field(default_factory=dict)  # name -> selection.per_s_summary
    n_features: dict = field(default_factory=dict)  # name -> p
    fixed_s: pd.DataFrame | None = None  # fixed_s.choose_fixed's table of candidates
    ties: list = field(default_factory=list)  # DataFrames (ties.tie_counts), one per data set
    choices: list = field(default_factory=list)  # DataFrames (ties.choice_counts)
    thresholds: list = field(default_factory=list)  # DataFrames (ties.threshold_counts)
    baseline: object = None  # baseline.Joined: another report's algorithms joined in

    def cell_sample_table(self):
        return (pd.concat(self.cell_sample, ignore_index=True) if self.cell_sample
                else pd.DataFrame(columns=cell_sample.COLUMNS))

    def coverage_table(self):
        return pd.concat(self.coverage, ignore_index=True) if self.coverage else pd.DataFrame()


def _best_s_summary(selected, fits):
    """Per (algorithm, init, kind, percent) of the sparse algorithms: the paper-style s and
    the honest selection's mean s, most frequent s and its share of the cells."""
    sparse = fits.sparse.values
    chosen = selected.sel(algorithm=selected.algorithm[sparse])
    grid = fits.sparsity.where(fits.sparsity.notnull(), drop=True).rename(sparsity="s")
    counts = (chosen.honest_s == grid).sum(CELL)
    n_selected = chosen.honest_s.notnull().sum(CELL)
    with quiet():
        return xr.Dataset({
            "paper_s": chosen.paper_s,
            "honest_s_mean": chosen.honest_s.mean(CELL),
            "honest_s_mode": counts.idxmax("s").where(n_selected > 0),
            "honest_s_mode_share": (counts.max("s") / n_selected).where(n_selected > 0),
            "honest_n": n_selected,
        })


def _constraints_used(name, fits):
    """The constraint counts m of the cube per (kind, percent): the distinct values over runs
    and folds (docs/method/protocol.md §4: one per data set and percentage)."""
    rows = []
    counts = fits.n_constraints
    for kind in counts.kind.values:
        for percent in counts.percent.values:
            values = counts.sel(kind=kind, percent=percent).values.ravel()
            values = np.unique(values[np.isfinite(values) & (values >= 0)]).astype(int)
            rows.append({"dataset": name, "kind": str(kind), "percent": float(percent),
                         "m": " ".join(map(str, values)) if len(values) else "not computed"})
    return pd.DataFrame(rows)


def _encoded(data):
    """Labels as variable-length strings, Zarr v3's string type."""
    return data.assign_coords({dim: np.array(data[dim].values.tolist(),
                                             dtype=np.dtypes.StringDType())
                               for dim in LABEL_DIMS if dim in data.dims})


def _write_selected(path, name, selected):
    encoded = _encoded(selected.assign({  # F as f_score in the cube
        var: selected[var].astype(np.float32) for var in selected.data_vars
        if var.endswith("_f")}))
    encoded.attrs = {
        "title": f"best-s selections of {name} (docs/method/protocol.md §9, "
                 "docs/guide/choosing-s.md), written by pcskm report",
        **{f"{rule.variable}_s": rule.title for rule in selection.REGISTRY
           if f"{rule.variable}_s" in selected},
        "<selection>_s": "the selected s: per (algorithm, init, kind, percent) for paper, per "
                         "(algorithm, init, kind, percent, run, fold) for the others; NaN "
                         "for non-sparse algorithms and where nothing was selected",
        "<selection>_f": "F-score at the selected s (NaN: failed, not computed or not "
                         "covered)",
        "<selection>_covered": "per algorithm: its cells carry the selection's score (a "
                               "sparse algorithm outside the spec's cv_algorithms does not)",
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        # one chunk per variable (the cells of one data set, a few MB), as it is read whole:
        # Zarr's default splits it into several, each a file to write
        encoded.to_zarr(str(path), group=name, mode="w", zarr_format=3, consolidated=False,
                        encoding={var: {"chunks": encoded[var].shape}
                                  for var in encoded.data_vars})


def _write_fixed(path, name, s):
    """Add the fixed-loo s per algorithm to data set ``name``'s group of the selections
    store; its F in a cell is the cube's f_score at that s."""
    data = _encoded(xr.Dataset({"fixed_loo_s": s}))
    data.fixed_loo_s.attrs = {"long_name": selection.SELECTION_TITLES[selection.FIXED],
                              "comment": "F: the cube's f_score at this s (non-sparse "
                                         "algorithms: their only fit); NaN: no fixed s"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        data.to_zarr(str(path), group=name, mode="a", zarr_format=3, consolidated=False)


def cube_selections(store):
    """The selections every data set group of ``store`` has the variables for, in
    ``selection.ORDER`` (``fixed-loo`` included)."""
    shared = set.intersection(*(table_variables(store.group(name).data_vars)
                                for name in store.names))
    return selection.available(shared)


# the data sets whose mean weights over every s the paper's weight claims read
# (claims.WEIGHT_SETS, claims.CONTAMINATED)
CLAIMED_WEIGHTS = (*families.WEIGHT_FAMILIES, *families.CONTAMINATED)

# (store, sidecar, selections, failure value, weights rule) of the running collect, which
# its forked children read (forking.forked_map passes them only the data set's name)
_collecting = None


def _one_dataset(name):
    """What :func:`collect` keeps of the data set ``name``, its selections written to the
    sidecar (``_collecting``)."""
    store, sidecar, selections, failure_value, rule = _collecting
    fits = fit_table(store, name)
    selected = selection.select(fits, selections)
    _write_selected(sidecar, name, selected)
    chosen = ties.chosen_cells(fits, selected)
    one = {
        "by_dataset": selection.summaries(selected),
        "by_rule": failure_rules.rule_values(selected, failure_value),
        "per_s": selection.per_s_summary(fits),
        "n_features": int(fits.attrs["n_features"]),
        "ties": ties.tie_counts(name, fits),
        "choices": ties.choice_counts(name, fits, chosen),
        "thresholds": ties.threshold_counts(name, fits, chosen),
        "coverage": coverage.table(name, fits),
        "samples": coverage.samples(name, fits),
        "failures": failures.table(name, fits),
        "constraints_used": _constraints_used(name, fits),
        "cell_sample": cell_sample.draw(store, name, fits),
    }
    if fits.sparse.any():
        one["best_s"] = _best_s_summary(selected, fits)
    if "uninformative" in fits.coords:
        one["weight_means"] = weights.means(store, name, fits, selected, rule)
        if one["weight_means"].attrs["weights_at"] == weights.MEAN_OVER_S:
            one["weight_means_over_s"] = one["weight_means"]
        elif any(family.present([name])[0] for family in CLAIMED_WEIGHTS):
            one["weight_means_over_s"] = weights.means(store, name, fits)
    return one


def collect(store, sidecar=None, weights_selection=None):
    """Compute :class:`Results` for an open store (see :func:`fits.open_store`); the
    selections are written to ``sidecar`` (default :func:`sidecar_path`). The weights are
    those at the s chosen by ``weights_selection`` (default: the store's pre-registered rule,
    else :func:`weights.default_selection`; ValueError, before anything is computed, for one the
    cube does not have or ``fixed-loo``, which is chosen across data sets)."""
    results = Results(store=store, sidecar=Path(sidecar) if sidecar is not None
                      else sidecar_path(store.path))
    if results.sidecar.exists():  # rewritten whole: no group of an older cube survives
        shutil.rmtree(results.sidecar)
    results.selections = cube_selections(store)
    prereg = preregistered.stored(store.attrs)
    rule = (weights_selection or (prereg.rule if prereg is not None else None)
            or weights.default_selection(results.selections))
    failure_value = (prereg.failure_value if prereg is not None
                     else spec.PREREGISTRATION_DEFAULTS["failure_value"])
    if rule not in results.selections or rule == selection.FIXED:
        raise ValueError(f"the weights cannot be drawn at the s of selection {rule!r}: the "
                         "cube's per-data-set selections are "
                         + ", ".join(n for n in results.selections if n != selection.FIXED))
    per_s = all(WEIGHTS_PER_S in store.group(name).data_vars for name in store.names)
    results.weights_at = rule if per_s else weights.MEAN_OVER_S
    global _collecting
    zarr.open_group(str(results.sidecar), mode="a", zarr_format=3)  # before the children
    _collecting = (store, results.sidecar, results.selections, failure_value, rule)
    try:
        # a store on object storage is read here: its client's threads do not survive a fork
        found = forking.forked_map(_one_dataset, store.names,
                                   workers=None if isinstance(store.path, Path) else 1)
    finally:
        _collecting = None
    for name, one in zip(store.names, found, strict=True):
        for key in ("by_dataset", "by_rule", "per_s", "n_features", "best_s", "weight_means",
                    "weight_means_over_s"):
            if key in one:
                getattr(results, key)[name] = one[key]
        for key in ("ties", "choices", "thresholds", "coverage", "samples", "failures",
                    "constraints_used", "cell_sample"):
            getattr(results, key).append(one[key])
    _family_members(results)
    _add_fixed(results)
    _finish_sidecar(results.sidecar, store)
    _combine_families(results)
    return results


def _family_members(results):
    """The reported data sets of the cube (:func:`families.reported`): their labels and
    members present."""
    for family in families.reported(results.store.names):
        members, label = family.present(results.store.names)
        if members:
            results.family_labels[family.label] = label
            results.family_members[family.label] = members


def _add_fixed(results):
    """The fixed-loo selection (:mod:`.fixed_s`) of every data set: its aggregates join the
    others', its s the selections store, its counts the choices."""
    chosen, results.fixed_s = fixed_s.choose_fixed(results.per_s, results.n_features,
                                                   results.family_members)
    for label, members in results.family_members.items():
        for name in members:
            s = chosen[label].reindex(algorithm=results.per_s[name].algorithm)
            summary = fixed_s.fixed_summary(results.per_s[name], s)
            combined = xr.concat([results.by_dataset[name], summary.expand_dims(
                selection=[selection.FIXED])], dim="selection")
            results.by_dataset[name] = combined.sel(selection=[
                n for n in selection.ORDER if n in combined.selection.values])
            results.choices.append(ties.fixed_choice_counts(name, summary, s))
            _write_fixed(results.sidecar, name, s)


def _finish_sidecar(path, store):
    root = zarr.open_group(str(path), mode="r+")
    root.attrs.update({
        "title": f"{SELECTIONS_TITLE} (docs/method/protocol.md §9.1 paper-style, §9.2 "
                 "honest; the others: docs/guide/choosing-s.md)",
        "cube": str(store.path.resolve()),
        "cube_spec_hash": store.attrs.get("spec_hash"),
        "dims": " ".join(CELL_DIMS),
    })
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        zarr.consolidate_metadata(str(path))


def _mean_over_subsets(per_member):
    """The mean over a family's members (its subsets; one member: itself)."""
    with quiet():
        return xr.concat(per_member, dim="subset", join="outer").mean("subset")


def _combine_families(results):
    combined = []
    for family in families.reported(results.store.names):
        members = results.family_members.get(family.label)
        if not members:
            continue
        per_member = [results.by_dataset[name] for name in members]
        by_rule = _mean_over_subsets([results.by_rule[name] for name in members])
        results.run_fold[family.label] = by_rule.f_run_fold
        combined.append(selection.combine(per_member).assign(f_rules=by_rule.f_rules)
                        .expand_dims(family=[family.label]))
        if all(name in results.weight_means for name in members):
            results.family_weights[family.label] = weights.combine(
                [results.weight_means[name] for name in members])
        if all(name in results.weight_means_over_s for name in members):
            results.family_weights_over_s[family.label] = weights.combine(
                [results.weight_means_over_s[name] for name in members])
    if combined:
        results.families = xr.concat(
            combined, dim="family", join="outer",
            fill_value={name: 0 for name in (*selection.COUNTS, "n_subsets")}
            | {"complete": False})

"""One pass over the cube: per data set, the selections (written to the sidecar store), their
aggregates, the best-s summaries, the weight means, the coverage, the failed fits and a sample
of cells; then the families.

The cube is read one data set at a time, so memory stays bounded by the largest group.
"""

import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr
import zarr

from . import cell_sample, coverage, failures, families, selection, weights
from .fits import CELL_DIMS, LABEL_DIMS, fit_table, quiet

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
    best_s: dict = field(default_factory=dict)  # name -> Dataset of best-s summaries
    weight_means: dict = field(default_factory=dict)  # name -> weights.means() Dataset
    coverage: list = field(default_factory=list)  # DataFrames, one per data set
    failures: list = field(default_factory=list)  # DataFrames, one per data set
    constraints_used: list = field(default_factory=list)
    families: xr.Dataset | None = None  # (family, selection, algorithm, init, kind, percent)
    family_labels: dict = field(default_factory=dict)  # family label -> label to show
    family_members: dict = field(default_factory=dict)  # family label -> members present
    family_weights: dict = field(default_factory=dict)  # family label -> weight means
    cell_sample: list = field(default_factory=list)  # DataFrames, one per data set

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


def _write_selected(path, name, selected):
    encoded = selected.assign({var: selected[var].astype(np.float32)
                               for var in ("paper_f", "honest_f")})  # as f_score in the cube
    encoded = encoded.assign_coords({  # variable-length strings: Zarr v3's string type
        dim: np.array(encoded[dim].values.tolist(), dtype=np.dtypes.StringDType())
        for dim in LABEL_DIMS})
    encoded.attrs = {
        "title": f"best-s selections of {name} (docs/method/protocol.md §9), "
                 "written by pcskm report",
        "paper_s": "paper-style s per (algorithm, init, kind, percent): largest mean test F "
                   "over runs x folds, ties -> smallest s; NaN for non-sparse algorithms",
        "honest_s": "honest s per (algorithm, init, kind, percent, run, fold): most sampled "
                    "training constraints satisfied, failed fits excluded, ties -> smallest s",
        "paper_f / honest_f": "F-score at the selected s (NaN: failed or not computed)",
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        encoded.to_zarr(str(path), group=name, mode="w", zarr_format=3, consolidated=False)


def collect(store, sidecar=None):
    """Compute :class:`Results` for an open store (see :func:`fits.open_store`); the
    selections are written to ``sidecar`` (default :func:`sidecar_path`)."""
    results = Results(store=store, sidecar=Path(sidecar) if sidecar is not None
                      else sidecar_path(store.path))
    if results.sidecar.exists():  # rewritten whole: no group of an older cube survives
        shutil.rmtree(results.sidecar)
    for name in store.names:
        fits = fit_table(store, name)
        selected = selection.select(fits)
        _write_selected(results.sidecar, name, selected)
        results.by_dataset[name] = selection.summaries(selected)
        if fits.sparse.any():
            results.best_s[name] = _best_s_summary(selected, fits)
        results.coverage.append(coverage.table(name, fits))
        results.failures.append(failures.table(name, fits))
        results.constraints_used.append(_constraints_used(name, fits))
        results.cell_sample.append(cell_sample.draw(store, name, fits))
        if "uninformative" in fits.coords:
            results.weight_means[name] = weights.means(store, name, fits)
        del fits, selected
    _finish_sidecar(results.sidecar, store)
    _combine_families(results)
    return results


def _finish_sidecar(path, store):
    root = zarr.open_group(str(path), mode="r+")
    root.attrs.update({
        "title": "pcskm best-s selections (docs/method/protocol.md §9.1 paper-style, §9.2 honest)",
        "cube": str(Path(store.path).resolve()),
        "cube_spec_hash": store.attrs.get("spec_hash"),
        "dims": " ".join(CELL_DIMS),
    })
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        zarr.consolidate_metadata(str(path))


def _combine_families(results):
    combined = []
    for family in families.ALL:
        members, label = family.present(results.store.names)
        if not members:
            continue
        results.family_labels[family.label] = label
        results.family_members[family.label] = members
        n_members = family.n_members if members[0] in family.members else len(members)
        per_member = [results.by_dataset[name] for name in members]
        combined.append(selection.combine(per_member, n_members).expand_dims(
            family=[family.label]))
        if all(name in results.weight_means for name in members):
            results.family_weights[family.label] = weights.combine(
                [results.weight_means[name] for name in members], n_members)
    if combined:
        results.families = xr.concat(
            combined, dim="family", join="outer",
            fill_value={name: 0 for name in (*selection.COUNTS, "n_subsets")}
            | {"complete": False})

"""Every selection of s side by side in the report (docs/guide/choosing-s.md, "In the
report"): each selection against a plain loop over a hand-built cube with ties, failed fits,
missing and unscored cells; fixed-loo against a plain loop over six data sets; the tie and
choice counts; Analysis 1 under every selection; the selections figure's data; a cube without
the selection scores (the smoke cube, a hand-built old cube) and one computed with them."""

import itertools
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr
from test_report import ALGORITHMS, EMPTY, _families, make_group, write_cube

from pcskm.experiments.report import (
    claims,
    comparison,
    fits,
    open_store,
    selection,
    selection_figure,
    statistics,
    ties,
    weights,
    write_report,
)
from pcskm.experiments.report.aggregate import collect
from pcskm.experiments.report.performance import long_table

SPARSE = ("SKM", "PCSKM")
GRID5 = (1.1, 1.3, 1.5, 1.7, 1.9)
CV_BIT, GAP_BIT = 1, 2
# PCSKM gets both scores, SKM only the gap (cv_algorithms = PCSKM), the others none
WANTED = {"LKM": 0, "SKM": GAP_BIT, "PCKM": 0, "MPCKM": 0, "PCSKM": CV_BIT | GAP_BIT}
PROTOCOL = {"seed": 0, "n_folds": 10, "cv_folds": 3, "gap_permutations": 2,
            "cv_algorithms": ["PCSKM"]}
PER_CELL = ("honest", "satisfied-median", "satisfied-largest", "cv", "cv-smallest",
            "cv-median", "cv-largest", "gap", "gap-1sd", "unthresholded", "oracle")
# the selections of a cube with weights_per_s but no selection scores (the smoke cube)
UNSCORED = (*selection.SELECTIONS, "unthresholded")


def with_protocol(path, protocol):
    """Give the cube at ``path`` (written by ``write_cube``) the root ``protocol`` of a
    store with selection scores."""
    root = zarr.open_group(str(path), mode="r+")
    root.attrs["protocol"] = protocol
    with warnings.catch_warnings():  # zarr: consolidated metadata is not in the v3 spec
        warnings.simplefilter("ignore", UserWarning)
        zarr.consolidate_metadata(str(path))
    return path


def scored_group(seed=7):
    """iris with random F, satisfaction, CV scores and gaps drawn from few values (many ties),
    weights per s with zeros (some cells with none unthresholded), 15 % failed fits (NaN
    everywhere, as the runner writes them), one cell failed at every s, one PCSKM block not
    done and one PCSKM block done without its CV score."""
    rng = np.random.default_rng(seed)
    ds = make_group(inits=("dkm++", "seeding"), percents=(1.0, 10.0), n_runs=2, n_folds=3,
                    grid=GRID5, n_features=4)
    shape = ds.f_score.shape
    applies = ds.f_score.notnull().values
    failed = applies & (rng.random(shape) < 0.15) & ~np.isnan(ds.sparsity.values)
    failed[4, 0, 0, 0, 0, 0, 1:] = True  # PCSKM, dkm++, random, 1 %, r0 f0: every s failed

    def draw(values):
        return np.where(applies & ~failed, values, np.nan).astype(np.float32)

    ds["f_score"][:] = draw(rng.choice([0.4, 0.5, 0.6, 0.7, 0.8], shape))
    ds["satisfied"][:] = draw(rng.choice([0.8, 0.9, 1.0], shape, p=[0.2, 0.3, 0.5]))
    sparse = np.isin(ALGORITHMS, SPARSE)[:, None, None, None, None, None, None]
    ds["status"][:] = np.where(failed, EMPTY, ds.status.values)
    ds["gap"] = (fits.FIT_DIMS, np.where(sparse, draw(rng.choice([0.1, 0.2, 0.3, 0.4], shape)),
                                         np.nan).astype(np.float32))
    ds["gap_sd"] = (fits.FIT_DIMS, np.where(sparse, draw(rng.uniform(0, 0.25, shape)),
                                            np.nan).astype(np.float32))
    pcskm = np.array(ALGORITHMS)[:, None, None, None, None, None, None] == "PCSKM"
    ds["cv_score"] = (fits.FIT_DIMS, np.where(pcskm, draw(rng.choice([0.5, 0.7, 1.0], shape)),
                                              np.nan).astype(np.float32))
    ds["scored"] = (fits.FIT_DIMS[:5], np.broadcast_to(
        np.array([WANTED[a] for a in ALGORITHMS], np.uint8)[:, None, None, None, None],
        shape[:5]).copy())
    # per-s weights: LKM and PCKM ones, MPCKM positive, SKM and PCSKM with zeros whose
    # number falls along s (a cell may keep one to its largest s); their mean over s
    weights = rng.choice([0.0, 0.2, 0.5, 0.9], (*shape, 4), p=[0.3, 0.2, 0.3, 0.2])
    weights[..., -1, :] = np.where(rng.random(shape[:-1] + (4,)) < 0.3, 0.0, 0.4)
    weights[np.isin(ALGORITHMS, ("LKM", "PCKM"))] = 1.0
    weights[3] = rng.uniform(0.5, 2.0, weights[3].shape)
    weights[~(applies & ~failed)] = np.nan
    ds["weights_per_s"] = ((*fits.FIT_DIMS, "feature"), weights.astype(np.float32))
    ds["weights"][:] = nanmean(weights, axis=6).astype(np.float32)
    ds["done"].loc[{"algorithm": "PCSKM", "init": "seeding", "percent": 10.0, "run": 1}] = 0
    ds["scored"].loc[{"algorithm": "PCSKM", "init": "dkm++", "percent": 1.0, "run": 1}] = GAP_BIT
    return ds


@pytest.fixture(scope="module")
def scored_cube(tmp_path_factory):
    ds = scored_group()
    path = tmp_path_factory.mktemp("scored") / "cube.zarr"
    with_protocol(write_cube(path, {"iris": ds}), PROTOCOL)
    return path, ds


# ---------------------------------------------------------------- plain loops


def nanmean(values, axis):
    """NumPy's nanmean, NaN for an all-NaN slice without a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=axis)


def pick(candidates, ties):
    """(s, position) of the largest score among ``candidates`` ((s, score, position) with a
    score), ties by the rule; (NaN, None) without candidates."""
    if not candidates:
        return np.nan, None
    top = max(score for _s, score, _at in candidates)
    tied = sorted((s, at) for s, score, at in candidates if score == top)
    return tied[{"smallest": 0, "largest": -1, "median": (len(tied) - 1) // 2}[ties]]


def pick_by_gap(candidates, gap_of):
    """cv's rule (docs/method/selection.md §2.5): the largest score; among the tied s those
    with the largest gap (``gap_of(position)``, NaN: none), all of them if none has one;
    then the lower median."""
    if not candidates:
        return np.nan, None
    top = max(score for _s, score, _at in candidates)
    tied = sorted((s, at) for s, score, at in candidates if score == top)
    gaps = [gap_of(at) for _s, at in tied]
    known = [g for g in gaps if not np.isnan(g)]
    if known:
        tied = [pair for pair, g in zip(tied, gaps, strict=True) if g == max(known)]
    return tied[(len(tied) - 1) // 2]


def loop_selections(ds):
    """Every selection of the group ``ds`` by plain loops over its arrays: per selection,
    (s, F) per (algorithm, init, kind, percent, run, fold) and whether the cell counts as
    computed under it."""
    sparsity = ds.sparsity.values
    f, sat = ds.f_score.values.astype(float), ds.satisfied.values.astype(float)
    gap, sd = ds.gap.values.astype(float), ds.gap_sd.values.astype(float)
    weights = ds.weights_per_s.values
    cv, status = ds.cv_score.values.astype(float), ds.status.values
    done, scored = ds.done.values, ds.scored.values
    shape = f.shape[:6]
    out = {name: (np.full(shape, np.nan), np.full(shape, np.nan), np.zeros(shape, bool))
           for name in ("paper", *PER_CELL)}
    for a, algorithm in enumerate(ALGORITHMS):
        entries = ([e for e in range(len(sparsity)) if not np.isnan(sparsity[e])]
                   if algorithm in SPARSE else [0])
        for i, k, p in itertools.product(*map(range, shape[1:4])):
            cells = list(itertools.product(range(shape[4]), range(shape[5])))
            computed = {(r, c): bool(done[a, i, k, p, r])
                        and (scored[a, i, k, p, r] & WANTED[algorithm]) == WANTED[algorithm]
                        for r, c in cells}
            means = []
            for e in entries:
                values = [f[a, i, k, p, r, c, e] for r, c in cells
                          if computed[(r, c)] and not np.isnan(f[a, i, k, p, r, c, e])]
                if values:
                    means.append((sparsity[e], np.mean(values), e))
            paper_s, paper_e = pick(means, "smallest")
            for r, c in cells:
                at = (a, i, k, p, r, c)
                ok = [e for e in entries if status[at][e] != EMPTY] if computed[(r, c)] else []

                def scores(values, ok=ok, at=at):
                    return [(sparsity[e], values[at][e], e) for e in ok
                            if not np.isnan(values[at][e])]

                if algorithm not in SPARSE:
                    chosen = {name: (np.nan, 0) for name in out}
                else:
                    best_gap, best_e = pick(scores(gap), "smallest")
                    within = [(s, 1.0 if gap[at][e] >= gap[at][best_e] - sd[at][e]
                               or gap[at][e] == gap[at][best_e] else 0.0, e)
                              for s, _g, e in scores(gap)]
                    unthresholded = [e for e in ok if (weights[at][e] != 0).all()]
                    chosen = {"paper": (paper_s, paper_e),
                              "unthresholded": ((sparsity[unthresholded[0]], unthresholded[0])
                                                if unthresholded else
                                                (sparsity[ok[-1]], ok[-1]) if ok
                                                else (np.nan, None)),
                              "honest": pick(scores(sat), "smallest"),
                              "satisfied-median": pick(scores(sat), "median"),
                              "satisfied-largest": pick(scores(sat), "largest"),
                              "cv": pick_by_gap(scores(cv), lambda e, at=at: gap[at][e]),
                              "cv-smallest": pick(scores(cv), "smallest"),
                              "cv-median": pick(scores(cv), "median"),
                              "cv-largest": pick(scores(cv), "largest"),
                              "gap": (best_gap, best_e),
                              "gap-1sd": pick(within, "smallest"),
                              "oracle": pick(scores(f), "smallest")}
                for name, (s, e) in chosen.items():
                    covered = not name.startswith("cv") or algorithm != "SKM"
                    out[name][0][at] = s
                    out[name][1][at] = f[at][e] if e is not None and computed[(r, c)] \
                        else np.nan
                    out[name][2][at] = computed[(r, c)] and covered
    return out


# ---------------------------------------------------------------- every selection


def test_every_selection_matches_a_plain_loop(scored_cube):
    path, ds = scored_cube
    table = fits.fit_table(open_store(path), "iris")
    chosen = selection.select(table)
    assert selection.selected_names(chosen) == ("paper", *PER_CELL)
    expected = loop_selections(ds)
    summary = selection.summaries(chosen)
    for name, (s, f, computed) in expected.items():
        variable = selection.BY_NAME[name].variable
        got_s = chosen[f"{variable}_s"].broadcast_like(chosen.computed).values
        where = computed | (name == "paper")  # paper's s is per setting
        np.testing.assert_allclose(np.where(where, got_s, np.nan), np.where(where, s, np.nan),
                                   err_msg=name)
        np.testing.assert_allclose(chosen[f"{variable}_f"].values[computed], f[computed],
                                   rtol=1e-6, err_msg=name)
        mean = nanmean(np.where(computed, f, np.nan), axis=(4, 5))
        got = summary.sel(selection=name)
        np.testing.assert_allclose(got.f_mean.values, mean, rtol=1e-6, err_msg=name)
        np.testing.assert_array_equal(got.n_cells.values, computed.sum(axis=(4, 5)))
        np.testing.assert_array_equal(got.n_failed.values,
                                      (computed & np.isnan(f)).sum(axis=(4, 5)))
    # the unscored block and the block not done are not computed; SKM has no cv value
    pcskm = summary.sel(selection="honest", algorithm="PCSKM", kind="random")
    assert int(pcskm.n_cells.sel(init="dkm++", percent=1.0)) == 3
    assert int(pcskm.n_cells.sel(init="seeding", percent=10.0)) == 3
    assert int(summary.sel(selection="cv", algorithm="SKM").n_cells.sum()) == 0
    assert int(summary.sel(selection="gap", algorithm="SKM").n_cells.sum()) == 24
    # the rules differ on this cube: the tie rule and the score decide; no per-cell
    # selection beats the oracle in a cell
    honest, largest = (expected[n][0][4] for n in ("honest", "satisfied-largest"))
    assert (largest > honest).any() and (largest >= honest)[~np.isnan(honest)].all()
    oracle = expected["oracle"][1]
    for name in PER_CELL:
        f = expected[name][1]
        both = ~np.isnan(f) & ~np.isnan(oracle)
        assert (oracle[both] >= f[both]).all(), name
    assert (expected["oracle"][1][4] > expected["honest"][1][4]).any()
    # every selection but auc: the cube is one made before the pair AUC
    assert collect(open_store(path)).selections == tuple(n for n in selection.ORDER
                                                         if n != "auc")


def test_tie_and_choice_counts_match_a_plain_loop(scored_cube):
    path, ds = scored_cube
    table = fits.fit_table(open_store(path), "iris")
    counted = ties.tie_counts("iris", table).set_index(
        ["score", "algorithm", "init", "kind", "percent"])
    expected = loop_selections(ds)
    sparsity = ds.sparsity.values
    for score, (a, algorithm) in itertools.product(("satisfied", "cv_score", "gap"),
                                                   [(1, "SKM"), (4, "PCSKM")]):
        values = ds[score].values.astype(float)
        for (i, init), p in itertools.product(enumerate(("dkm++", "seeding")), range(2)):
            cells = tied = tied_s = scored_s = 0
            for r, c in itertools.product(range(2), range(3)):
                if not expected["honest"][2][a, i, 0, p, r, c]:
                    continue
                row = [v for v in values[a, i, 0, p, r, c, 1:] if not np.isnan(v)]
                if not row:
                    continue
                cells += 1
                n_top = row.count(max(row))
                tied += n_top > 1
                tied_s += n_top
                scored_s += len(row)
            key = (score, algorithm, init, "random", [1.0, 10.0][p])
            if score == "cv_score" and algorithm == "SKM":
                assert counted.loc[key, "cells"] == 0  # no CV score outside cv_algorithms
                continue
            assert tuple(counted.loc[key, ["cells", "tied_cells", "tied_s", "scored_s"]]) == (
                cells, tied, tied_s, scored_s), key
    chosen = selection.select(table)
    choices = ties.choice_counts("iris", table, ties.chosen_cells(table, chosen)).set_index(
        ["algorithm", "selection", "s"]).cells
    for name, (s, _f, computed) in expected.items():
        for a, algorithm in ((1, "SKM"), (4, "PCSKM")):
            for value in sparsity[1:]:
                n = int((np.isclose(s[a], value) & computed[a]).sum())
                assert choices.loc[(algorithm, name, value)] == n, (name, algorithm, value)


def test_threshold_counts_match_a_plain_loop(scored_cube):
    """How often each selection's s thresholds: per sparse algorithm and selection, the
    computed cells with a selected s, and those whose weights at that s hold more exact 0s
    than the cell's fit with the fewest that did not fail."""
    path, ds = scored_cube
    table = fits.fit_table(open_store(path), "iris")
    counted = ties.threshold_counts(
        "iris", table, ties.chosen_cells(table, selection.select(table))).set_index(
        ["algorithm", "selection", "kind"])
    weights, sparsity = ds.weights_per_s.values, ds.sparsity.values
    expected = loop_selections(ds)
    assert set(counted.index.get_level_values("selection")) == set(expected)
    some = 0
    for name, (s, _f, computed) in expected.items():
        for a, algorithm in ((1, "SKM"), (4, "PCSKM")):
            cells = thresholding = 0
            for at in zip(*np.nonzero(computed[a] & ~np.isnan(s[a])), strict=True):
                e = int(np.flatnonzero(sparsity == s[a][at])[0])
                fewest = min(((weights[a][at][u] == 0).sum() for u in range(1, len(sparsity))
                              if ds.status.values[a][at][u] != EMPTY), default=None)
                cells += 1  # a cell whose every fit failed thresholds nothing
                thresholding += fewest is not None and (weights[a][at][e] == 0).sum() > fewest
            assert tuple(counted.loc[(algorithm, name, "random"),
                                     ["cells", "thresholding_cells"]]) == (
                cells, thresholding), (name, algorithm)
            some += 0 < thresholding < cells
    assert some > 5  # the counts are not all or nothing


# ---------------------------------------------------------------- auc

AUC_BIT = 4
AUC_KINDS = ("random", "must-link")
AUC_PROTOCOL = {"seed": 0, "n_folds": 10, "cv_folds": 3, "gap_permutations": 2,
                "cv_algorithms": ["SKM", "PCSKM"], "cv_auc": True}


def auc_group(seed=11):
    """iris with kinds random and must-link: cv score, gap, pair AUC and its standard error
    for SKM and PCSKM drawn from few values (ties at the best AUC, NaN and zero standard
    errors), the AUC NaN in every must-link cell (one kind of pair, as the runner stores it)
    and in one random cell, 15 % failed fits, and one PCSKM block done with the CV scores
    but without the AUC's bit (not computed)."""
    rng = np.random.default_rng(seed)
    ds = make_group(kinds=AUC_KINDS, percents=(1.0, 10.0), n_runs=2, n_folds=3, grid=GRID5)
    shape = ds.f_score.shape
    applies = ds.f_score.notnull().values
    failed = applies & (rng.random(shape) < 0.15) & ~np.isnan(ds.sparsity.values)

    def draw(values, sparse_only=True):
        keep = applies & ~failed
        if sparse_only:
            keep &= np.isin(ALGORITHMS, SPARSE)[:, None, None, None, None, None, None]
        return np.where(keep, values, np.nan).astype(np.float32)

    ds["status"][:] = np.where(failed, EMPTY, ds.status.values)
    ds["f_score"][:] = draw(rng.choice([0.4, 0.5, 0.6, 0.7, 0.8], shape), sparse_only=False)
    ds["cv_score"] = (fits.FIT_DIMS, draw(rng.choice([0.5, 0.7, 1.0], shape)))
    ds["gap"] = (fits.FIT_DIMS, draw(rng.choice([0.1, 0.2, 0.3], shape)))
    ds["gap_sd"] = (fits.FIT_DIMS, draw(rng.uniform(0, 0.25, shape)))
    auc = draw(rng.choice([0.6, 0.7, 0.75, 0.8], shape))
    se = draw(rng.choice([np.nan, 0.0, 0.03, 0.06, 0.12], shape))
    auc[:, :, 1], se[:, :, 1] = np.nan, np.nan  # must-link: no AUC
    auc[4, 0, 0, 1, 0, 2], se[4, 0, 0, 1, 0, 2] = np.nan, np.nan  # a random cell without one
    ds["auc_score"], ds["auc_se"] = (fits.FIT_DIMS, auc), (fits.FIT_DIMS, se)
    wanted = np.where(np.isin(ALGORITHMS, SPARSE), CV_BIT | GAP_BIT | AUC_BIT, 0)
    ds["scored"] = (fits.FIT_DIMS[:5], np.broadcast_to(
        wanted.astype(np.uint8)[:, None, None, None, None], shape[:5]).copy())
    ds["scored"].loc[{"algorithm": "PCSKM", "kind": "random", "percent": 10.0, "run": 1}] = \
        CV_BIT | GAP_BIT
    return ds


def one_standard_error(candidates):
    """The choice of docs/method/selection.md §7.2 among ``candidates`` ((s, auc, se,
    position), every auc a number): the best auc at the largest s tied there, then the
    largest s whose auc is at least the best minus that s's se (NaN: 0)."""
    best = max(auc for _s, auc, _se, _e in candidates)
    _s, _auc, margin, _e = max(c for c in candidates if c[1] == best)
    margin = 0.0 if np.isnan(margin) else margin
    s, _auc, _se, e = max(c for c in candidates if c[1] >= best - margin)
    return s, e


def test_auc_selection_matches_a_plain_loop_and_falls_back_on_cv(tmp_path):
    """The report's auc choice per cell equals a loop over the stored scores with the
    one-standard-error rule written here; a cell without an AUC at any s (every must-link
    cell, one random cell) takes cv's choice (largest cv score, ties -> largest gap, then
    lower median); a block without the AUC's bit is not computed, under any selection."""
    ds = auc_group()
    path = with_protocol(write_cube(tmp_path / "cube.zarr", {"iris": ds}), AUC_PROTOCOL)
    table = fits.fit_table(open_store(path), "iris")
    assert "auc" in selection.available(table.data_vars)
    chosen = selection.select(table, ["cv", "auc"])
    got_s = chosen.auc_s.transpose(*fits.FIT_DIMS[:6]).values
    got_cv = chosen.cv_s.transpose(*fits.FIT_DIMS[:6]).values
    sparsity, f = ds.sparsity.values, ds.f_score.values.astype(float)
    auc, se = ds.auc_score.values.astype(float), ds.auc_se.values.astype(float)
    cv, gap = ds.cv_score.values.astype(float), ds.gap.values.astype(float)
    status, done, scored = ds.status.values, ds.done.values, ds.scored.values
    fell_back = differs = 0
    for at in itertools.product(*map(range, f.shape[:6])):
        a, i, k, p, r, c = at
        if ALGORITHMS[a] not in SPARSE:
            assert got_s[at] != got_s[at]  # NaN: the only fit, s = NaN
            continue
        computed = bool(done[a, i, k, p, r]) and scored[a, i, k, p, r] == 7
        assert bool(table.computed.values[at]) == computed
        if not computed:
            continue
        ok = [e for e in range(1, len(sparsity)) if status[at][e] != EMPTY]
        with_auc = [(sparsity[e], auc[at][e], se[at][e], e) for e in ok
                    if not np.isnan(auc[at][e])]
        by_cv = pick_by_gap([(sparsity[e], cv[at][e], e) for e in ok if not np.isnan(cv[at][e])],
                            lambda e, at=at: gap[at][e])
        expected_s, _e = one_standard_error(with_auc) if with_auc else by_cv
        assert got_s[at] == pytest.approx(expected_s, nan_ok=True), at
        assert chosen.auc_f.transpose(*fits.FIT_DIMS[:6]).values[at] == pytest.approx(
            f[at][_e] if _e is not None else np.nan, nan_ok=True), at
        if not with_auc:
            fell_back += 1
            assert got_s[at] == pytest.approx(got_cv[at], nan_ok=True)
        differs += got_s[at] != got_cv[at]
    # every must-link cell (2 algorithms, 2 percentages, 2 runs, 3 folds) and the random one
    assert fell_back == 2 * 2 * 2 * 3 + 1
    assert differs > 10  # auc is not cv where the cell has an AUC
    covered = chosen.auc_covered.broadcast_like(chosen.cv_covered)
    xr.testing.assert_equal(covered, chosen.cv_covered)


def test_auc_tie_counts_match_a_plain_loop(tmp_path):
    """The ties of the best pair AUC: per sparse algorithm and setting, the computed cells
    with an AUC at some usable s, those where two or more s share the best, and every s
    tied; the must-link cells (no AUC) are not counted."""
    ds = auc_group()
    path = with_protocol(write_cube(tmp_path / "cube.zarr", {"iris": ds}), AUC_PROTOCOL)
    table = fits.fit_table(open_store(path), "iris")
    counted = ties.tie_counts("iris", table)
    counted = counted[counted.score == "auc_score"].set_index(
        ["algorithm", "init", "kind", "percent"])
    assert set(counted.selection) == {"auc"}
    auc, status = ds.auc_score.values.astype(float), ds.status.values
    done, scored = ds.done.values, ds.scored.values
    tied_somewhere = 0
    for (a, algorithm), k, p in itertools.product(((1, "SKM"), (4, "PCSKM")), range(2),
                                                  range(2)):
        cells = tied = all_tied = 0
        for r, c in itertools.product(range(2), range(3)):
            if not (done[a, 0, k, p, r] and scored[a, 0, k, p, r] == 7):
                continue
            row = [auc[a, 0, k, p, r, c, e] for e in range(1, auc.shape[-1])
                   if status[a, 0, k, p, r, c, e] != EMPTY
                   and not np.isnan(auc[a, 0, k, p, r, c, e])]
            if not row:
                continue
            cells += 1
            n_top = row.count(max(row))
            tied += n_top > 1
            all_tied += n_top == len(row) > 1
        key = (algorithm, "dkm++", AUC_KINDS[k], [1.0, 10.0][p])
        assert tuple(counted.loc[key, ["cells", "tied_cells", "all_tied_cells"]]) == (
            cells, tied, all_tied), key
        tied_somewhere += tied
        if AUC_KINDS[k] == "must-link":
            assert cells == 0
    assert tied_somewhere > 0


# ---------------------------------------------------------------- fixed-loo

# (cube group, p): five of the paper's six (digits as two subsets) and one outside them
FIXED_GROUPS = (("ionosphere", 34), ("iris", 4), ("digits048-1", 16), ("digits048-2", 16),
                ("mwm-ttscst", 8), ("mwm-ttchst", 8), ("brodinova-5-5", 10))
FAMILY = {"ionosphere": "ionosphere", "iris": "fisheriris", "digits048-1": "digits 0-4-8",
          "digits048-2": "digits 0-4-8", "mwm-ttscst": "TT-SC-ST", "mwm-ttchst": "TT-CH-ST",
          "brodinova-5-5": "Brodinova 5+5"}
POOL = ("ionosphere", "fisheriris", "digits 0-4-8", "TT-SC-ST", "TT-CH-ST")


def s_grid(p):
    return tuple(np.round(np.arange(1.1, np.sqrt(p) + 1e-9, 0.2), 10))


@pytest.fixture(scope="module")
def fixed_cube(tmp_path_factory):
    """Random F per fit with failed fits; one PCSKM setting of ionosphere missing a run."""
    rng = np.random.default_rng(11)
    groups = {}
    for name, p in FIXED_GROUPS:
        ds = make_group(inits=("dkm++", "seeding"), percents=(1.0, 10.0), n_runs=2, n_folds=2,
                        grid=s_grid(p), n_features=p)
        applies = ds.f_score.notnull().values
        failed = applies & (rng.random(ds.f_score.shape) < 0.1)
        ds["f_score"][:] = np.where(applies & ~failed, rng.uniform(0.3, 0.9, ds.f_score.shape),
                                    np.nan).astype(np.float32)
        ds["status"][:] = np.where(failed, EMPTY, ds.status.values)
        groups[name] = ds
    groups["ionosphere"]["done"].loc[{"algorithm": "PCSKM", "init": "seeding",
                                      "percent": 1.0, "run": 0}] = 0
    path = write_cube(tmp_path_factory.mktemp("fixed") / "cube.zarr", groups)
    return path, groups


def setting_means(ds, algorithm):
    """{s: [Fbar per (init, kind, percent)]} of one algorithm: nanmean over the done
    (run, fold) cells with a value."""
    out = {}
    a = ALGORITHMS.index(algorithm)
    for e, s in enumerate(ds.sparsity.values):
        if np.isnan(s):
            continue
        means = []
        for i, k, p in itertools.product(*map(range, ds.f_score.shape[1:4])):
            values = [ds.f_score.values[a, i, k, p, r, c, e]
                      for r in range(ds.sizes["run"]) if ds.done.values[a, i, k, p, r]
                      for c in range(ds.sizes["fold"])]
            values = [v for v in values if not np.isnan(v)]
            means.append(np.mean(values) if values else np.nan)
        out[round(float(s), 10)] = means
    return out


def loop_fixed(groups, algorithm):
    """The fixed s of every family by a plain loop (docs/guide/choosing-s.md)."""
    members = {}
    for name, _p in FIXED_GROUPS:
        members.setdefault(FAMILY[name], []).append(name)
    p_of = dict(FIXED_GROUPS)
    family_f = {}
    for family, names in members.items():
        per_member = [setting_means(groups[n], algorithm) for n in names]
        family_f[family] = {s: np.nanmean(np.nanmean([m[s] for m in per_member], axis=0))
                            for s in per_member[0]}
    chosen = {}
    for family, names in members.items():
        root = np.sqrt(p_of[names[0]])
        best = None
        for s in sorted(family_f[family]):
            scores = []
            for other in (o for o in POOL if o != family):
                other_root = np.sqrt(p_of[members[other][0]])
                grid = sorted(family_f[other])
                target = s * other_root / root
                nearest = min(grid, key=lambda g, t=target: (abs(g - t), g))
                scores.append(family_f[other][nearest])
            score = np.mean(scores)
            if not np.isnan(score) and (best is None or score > best[1]):
                best = (s, score)
        chosen[family] = best
    return chosen, members


def test_fixed_loo_matches_a_plain_loop(fixed_cube):
    path, groups = fixed_cube
    results = collect(open_store(path))
    table = results.fixed_s[results.fixed_s.chosen].set_index(["dataset", "algorithm"])
    for algorithm in SPARSE:
        chosen, members = loop_fixed(groups, algorithm)
        for family, (s, score) in chosen.items():
            row = table.loc[(family, algorithm)]
            assert row.s == pytest.approx(s) and row.mean_f_training == pytest.approx(score)
            assert row.n_training == (5 if family not in POOL else 4)
            for name in members[family]:
                ds = groups[name]
                a = ALGORITHMS.index(algorithm)
                e = int(np.flatnonzero(np.isclose(ds.sparsity.values, s))[0])
                f = np.where(ds.done.values[a, ..., None], ds.f_score.values[a, ..., e], np.nan)
                got = results.by_dataset[name].sel(selection="fixed-loo", algorithm=algorithm)
                np.testing.assert_allclose(
                    got.f_mean.transpose("init", "kind", "percent").values,
                    nanmean(f, axis=(3, 4)), rtol=1e-6)
    # the non-sparse algorithms: their only fit, as under every selection
    lkm = results.by_dataset["iris"].sel(algorithm="LKM")
    np.testing.assert_allclose(lkm.f_mean.sel(selection="fixed-loo"),
                               lkm.f_mean.sel(selection="paper"))
    stored = xr.open_datatree(str(results.sidecar), engine="zarr")["iris"].to_dataset()
    assert float(stored.fixed_loo_s.sel(algorithm="PCSKM")) == pytest.approx(
        table.loc[("fisheriris", "PCSKM"), "s"])


def test_fixed_loo_without_another_data_set_has_no_value(tmp_path):
    """iris alone of the paper's six: no fixed s for it (not computed, not failed);
    Brodinova is chosen for on iris."""
    path = write_cube(tmp_path / "cube.zarr", {"iris": make_group(f=0.6),
                                               "brodinova-5-5": make_group(f=0.7)})
    results = collect(open_store(path))
    iris = results.by_dataset["iris"].sel(selection="fixed-loo")
    assert int(iris.n_cells.sel(algorithm="PCSKM").sum()) == 0
    assert int(iris.n_failed.sel(algorithm="PCSKM").sum()) == 0
    assert int(iris.n_cells.sel(algorithm="LKM").sum()) > 0
    brodinova = results.fixed_s[results.fixed_s.chosen].set_index("algorithm")
    assert set(brodinova.dataset) == {"Brodinova 5+5"}
    assert brodinova.loc["PCSKM", "training"] == "fisheriris"


# ---------------------------------------------------------------- Analysis 1, figure


@pytest.mark.parametrize("p_holm, direction, verdict", [
    (0.01, "PCSKM", comparison.BETTER), (0.01, "LKM", comparison.WORSE),
    (0.2, "PCSKM", comparison.SAME), (np.nan, "none", comparison.SAME)])
def test_verdict_rule(p_holm, direction, verdict):
    row = SimpleNamespace(n=10, p_holm=p_holm, direction=direction)
    assert comparison.verdict(row) == verdict
    assert comparison.verdict(SimpleNamespace(n=0, p_holm=np.nan, direction="none")) == \
        comparison.NONE


def test_analysis1_under_every_selection():
    """Two planted selections: PCSKM better by 0.05 on every case, and PCSKM worse by 0.05
    than LKM only; the verdicts follow, at the cases level, per test and selection."""
    rng = np.random.default_rng(2)
    values = {}
    for family, algorithm, init, kind in itertools.product(
            statistics.SIX, ALGORITHMS, ("seeding", *statistics.DETERMINISTIC),
            statistics.KINDS):
        values[(family, algorithm, init, kind)] = 0.6 + rng.normal(0, 0.01)
    better = {key: v + (0.05 if key[1] == "PCSKM" else 0) for key, v in values.items()}
    worse = {key: v + (0.05 if key[1] == "LKM" else 0) for key, v in values.items()}
    frames = [statistics.analyse_selection(name, *_case_values(planted))[0]
              for name, planted in (("oracle", better), ("honest", worse))]
    table = comparison.analysis1_tests(pd.concat(frames, ignore_index=True))
    assert list(table.selection.unique()) == ["honest", "oracle"]  # selection.ORDER
    assert len(table) == 2 * 4 * 2
    cases = table[table.level == "cases"].set_index(["selection", "test"]).verdict
    assert set(cases.loc["oracle"]) == {comparison.BETTER}
    assert cases.loc[("honest", "PCSKM vs LKM")] == comparison.WORSE
    wide = comparison.verdict_table(table).set_index("selection")
    assert wide.loc["oracle", "vs SKM"].startswith("better (p ")
    assert wide.loc["honest", "used (cases; data sets)"] == "60 of 60; 6 of 6"


def test_selections_that_read_the_same_are_one_row():
    """Case values the same under two selections (as every selection is for algorithms
    without s): one row of the verdict table, named by both; different values keep their
    rows, in the selections' order."""
    rng = np.random.default_rng(3)
    values = {key: 0.6 + rng.normal(0, 0.01) for key in itertools.product(
        statistics.SIX, ALGORITHMS, ("seeding", *statistics.DETERMINISTIC), statistics.KINDS)}
    better = {key: v + (0.05 if key[1] == "PCSKM" else 0) for key, v in values.items()}
    same = comparison.analysis1_tests(pd.concat(
        [statistics.analyse_selection(name, *_case_values(better))[0]
         for name in ("oracle", "honest")], ignore_index=True))
    assert comparison.verdict_table(same).selection.tolist() == ["honest, oracle"]
    frame = pd.DataFrame({"selection": ["paper", "honest", "oracle"], "v": [1, 2, 1]})
    merged = comparison.merged_selections(frame)
    assert merged.to_dict("list") == {"selection": ["paper, oracle", "honest"], "v": [1, 2]}


def _case_values(values):
    results = _families(values)
    v = results.families.f_mean.mean("percent").sel(selection="paper", drop=True)
    return v, v.notnull()


def test_figure_data_per_selection(tmp_path):
    """The selections figure's values: per data set, selection and algorithm, the mean over
    the Analysis-1 settings complete for every algorithm of the mean F over percentages,
    against a loop over the rows of performance.csv; the PCSKM dots sit at those values."""
    rng = np.random.default_rng(5)
    groups = {}
    for name in ("iris", "ionosphere"):
        ds = make_group(inits=("seeding", "dkm++"), kinds=("random", "must-link"))
        ds["f_score"][:] = np.where(ds.f_score.notnull(),
                                    rng.uniform(0.4, 0.9, ds.f_score.shape),
                                    np.nan).astype(np.float32)
        groups[name] = ds
    groups["iris"]["done"].loc[{"algorithm": "MPCKM", "init": "dkm++", "kind": "must-link",
                                "run": 0}] = 0
    results = collect(open_store(write_cube(tmp_path / "cube.zarr", groups)))
    plotted = comparison.dataset_values(results)
    performance = long_table(results)  # performance.csv
    assert set(plotted.selection) == set(selection.SELECTIONS)
    for (dataset, name), rows in performance.groupby(["dataset", "selection"]):
        v = rows.groupby(["init", "kind", "algorithm"]).f_mean.mean()
        complete = rows.groupby(["init", "kind", "algorithm"]).complete.all()
        settings = [(i, k) for i, k in (("seeding", "random"), ("dkm++", "random"),
                                        ("dkm++", "must-link"))
                    if all(complete[(i, k, a)] for a in ALGORITHMS)]
        assert len(settings) == (2 if dataset.startswith("iris") else 3)  # MPCKM missing
        for algorithm in ALGORITHMS:
            row = plotted[(plotted.dataset == dataset) & (plotted.selection == name)
                          & (plotted.algorithm == algorithm)]
            expected = np.mean([v[(i, k, algorithm)] for i, k in settings])
            assert row.value.iloc[0] == pytest.approx(expected, rel=1e-9)
            assert row.n_settings.iloc[0] == len(settings)
    values = plotted
    fig = selection_figure.figure(values, tmp_path / "f.png")
    shown = [s for s in selection.ORDER if s in selection.SELECTIONS]
    labels = [[t.get_text() for t in ax.get_yticklabels()] for ax in fig.axes]
    assert labels == [[selection_figure.label(s) for s in shown], [""] * len(shown)]
    for ax, family in zip(fig.axes, ("ionosphere", "fisheriris"), strict=True):
        big = [line for line in ax.lines if line.get_markersize() == 7]  # PCSKM
        drawn = {shown[len(shown) - 1 - int(y)]: x for line in big
                 for x, y in zip(line.get_xdata(), line.get_ydata(), strict=True)}
        pcskm = values[(values.algorithm == "PCSKM") & (values.family == family)]
        assert drawn == pytest.approx(dict(zip(pcskm.selection, pcskm.value, strict=True)))


# ---------------------------------------------------------------- weights at the selected s


@pytest.mark.parametrize("chunks, n_blocks", [
    (None, 1),
    ((5, 1, 1, 1, 2, 3, 6, 4), 4),  # one per (init, percent), as a run's store cuts (kind, percent)
    ((2, 2, 1, 2, 2, 3, 6, 4), 3),  # algorithms cut in three: LKM SKM | PCKM MPCKM | PCSKM
])
@pytest.mark.parametrize("rule", ["paper", "cv", "gap", "unthresholded"])
def test_weights_at_the_selected_s_match_a_plain_loop(tmp_path, rule, chunks, n_blocks):
    """Figure 2's weights: per (algorithm, init, kind, percent), the mean over the cells a
    selection covers of the weights at the s it chose there (cells whose fit there failed
    left out; MPCKM: its only fit), against a plain loop; LKM and PCKM (weights 1) are not
    weighted algorithms. The same when the store cuts the weights into chunks (read one
    chunk at a time), and so are the counts of zero weights per fit."""
    ds = scored_group().assign_coords(uninformative=("feature", [False, False, True, True]))
    if chunks is not None:
        ds.weights_per_s.encoding["chunks"] = chunks
    path = with_protocol(write_cube(tmp_path / "cube.zarr", {"iris": ds}), PROTOCOL)
    store = open_store(path)
    blocks = list(fits.chunk_blocks(store.group("iris").weights_per_s))
    assert len(blocks) == n_blocks
    table = fits.fit_table(store, "iris")
    zeros = np.where(np.isin(ALGORITHMS, SPARSE)[:, None, None, None, None, None, None],
                     (ds.weights_per_s.values == 0).sum(axis=-1), 0)
    np.testing.assert_array_equal(table.n_zero_weights.transpose(*fits.FIT_DIMS).values, zeros)
    chosen = selection.select(table)
    got = weights.means(store, "iris", table, chosen, rule)
    assert got.attrs["weights_at"] == rule
    assert list(got.algorithm.values) == ["SKM", "MPCKM", "PCSKM"]
    expected = loop_selections(ds)
    s, _f, counted = expected[rule]
    per_s, sparsity = ds.weights_per_s.values, ds.sparsity.values
    for algorithm in ("SKM", "MPCKM", "PCSKM"):
        a = ALGORITHMS.index(algorithm)
        for i, k, p in itertools.product(range(2), range(1), range(2)):
            picked = []
            for r, c in itertools.product(range(2), range(3)):
                if not counted[a, i, k, p, r, c]:
                    continue
                e = 0 if algorithm == "MPCKM" else np.flatnonzero(sparsity == s[a, i, k, p,
                                                                                 r, c])
                row = per_s[a, i, k, p, r, c, int(np.ravel(e)[0])] if np.size(e) else None
                if row is not None and not np.isnan(row).any():
                    picked.append(row)
            where = {"init": i, "kind": k, "percent": p}
            n = int(got.n_fits.sel(algorithm=algorithm).isel(where))
            assert n == len(picked), (algorithm, i, p)
            if picked:
                np.testing.assert_allclose(got.total.sel(algorithm=algorithm).isel(where) / n,
                                           np.mean(picked, axis=0), rtol=1e-6)
    if rule == "cv":  # SKM carries no CV score in this cube
        assert int(got.n_fits.sel(algorithm="SKM").sum()) == 0


def test_weights_of_a_store_without_weights_per_s_are_the_mean_over_s(tmp_path):
    """A store made before weights_per_s: the weights are the mean over s, said so in the
    captions, whatever selection is asked for; a selection the cube lacks is refused."""
    ds = scored_group().drop_vars("weights_per_s").assign_coords(
        uninformative=("feature", [False, False, True, True]))
    path = with_protocol(write_cube(tmp_path / "cube.zarr", {"iris": ds}), PROTOCOL)
    results = collect(open_store(path), sidecar=tmp_path / "s.zarr")
    assert "unthresholded" not in results.selections
    assert results.weights_at == weights.MEAN_OVER_S
    assert "this store keeps no weights per s" in weights.weights_at(results.weights_at)
    with pytest.raises(ValueError, match="'unthresholded'"):
        collect(open_store(path), sidecar=tmp_path / "s.zarr", weights_selection="unthresholded")


def test_the_claims_read_the_weights_over_every_s_whatever_s_the_figures_show(tmp_path):
    """The paper's weight claims are about the mean weights over every s (its Figure 2): the
    claims read, per (algorithm, init, kind, percent), the mean over every fit of every s
    (failed fits and blocks not done left out), against a plain loop over weights_per_s,
    while the figures' weights are at the s of the weights rule (here cv). A data set whose
    weights no claim reads (iris) gets none over every s."""
    ds = scored_group().assign_coords(uninformative=("feature", [False, False, True, True]))
    path = with_protocol(write_cube(tmp_path / "cube.zarr", {"iris": ds, "brodinova-5-5": ds}),
                         PROTOCOL)
    results = collect(open_store(path), sidecar=tmp_path / "s.zarr")
    assert results.weights_at == "cv"
    assert len(results.family_weights) == 2
    label = "Brodinova 5+5"
    assert claims.evidence(results, None, None).weights.keys() == {label}
    read = claims.evidence(results, None, None).weights[label]
    shown = results.family_weights[label]["mean"]
    per_s, done, scored = ds.weights_per_s.values, ds.done.values, ds.scored.values
    differs = False
    for algorithm in ("SKM", "MPCKM", "PCSKM"):
        a = ALGORITHMS.index(algorithm)
        for i, k, p in itertools.product(range(2), range(1), range(2)):
            rows = [row for r in range(2) if done[a, i, k, p, r]
                    and scored[a, i, k, p, r] & WANTED[algorithm] == WANTED[algorithm]
                    for row in per_s[a, i, k, p, r].reshape(-1, 4) if not np.isnan(row).any()]
            where = {"algorithm": algorithm, "init": i, "kind": k, "percent": p}
            got = read.sel(algorithm=algorithm).isel(
                {d: v for d, v in where.items() if d != "algorithm"}).values
            np.testing.assert_allclose(got, np.mean(rows, axis=0), rtol=1e-6)
            figure = shown.sel(algorithm=algorithm).isel(
                {d: v for d, v in where.items() if d != "algorithm"}).values
            differs |= not np.allclose(got, figure, equal_nan=True)
    assert differs  # the figures' weights at cv's s are not these


# ---------------------------------------------------------------- cubes with and without scores


def test_a_cube_without_the_scores_reports_the_others(smoke_report):
    """The smoke cube (no cv_folds, no gap_permutations): every selection that needs only
    f_score and satisfied, none of the others, and no error."""
    store, report = smoke_report
    protocol = zarr.open_group(str(store), mode="r").attrs["protocol"]
    assert not protocol.get("cv_folds") and not protocol.get("gap_permutations"), \
        "this test needs a smoke spec that stores no selection scores"
    out = report.parent
    performance = pd.read_csv(out / "performance.csv")
    assert set(performance.selection) == set(UNSCORED)
    assert set(pd.read_csv(out / "selection_ties.csv").score) == {"satisfied"}
    claims = pd.read_csv(out / "claims.csv")
    assert {f"verdict_{name}" for name in UNSCORED} <= set(claims.columns)
    assert "verdict_cv" not in claims.columns
    text = report.read_text()
    assert "## 3. Choosing s" in text and "Not in this cube: cv, auc, gap, gap-1sd." in text
    assert "**oracle** (upper bound)" in text and "**paper** (optimistic)" in text
    tests = pd.read_csv(out / "selections_analysis1.csv")
    assert set(tests.selection) == set(UNSCORED)


def test_a_cube_written_before_the_selection_scores(tmp_path):
    """A hand-built cube as the runner wrote it before the scores (no scored markers, no
    score keys in its protocol) reports, with the selections that need no scores. Every
    main selection's grid has its CSV; the grid is drawn for the primary selection (paper,
    without cv) by default, for every main selection with ``grids="all"``, and the CSVs
    are the same either way."""
    path = write_cube(tmp_path / "old.zarr", {"iris": make_group(f=0.6)})
    assert "cv_folds" not in zarr.open_group(str(path), mode="r").attrs["protocol"]
    out, every = tmp_path / "out", tmp_path / "every"
    report = write_report(path, out)
    assert collect(open_store(path)).selections == selection.SELECTIONS
    text = report.read_text()
    assert "## 3. Choosing s" in text and "Not in this cube: unthresholded." in text
    assert "drawn for the primary selection, paper" in text and "--grids all" in text
    write_report(path, every, grids="all")
    main = [name for name in selection.SELECTIONS if selection.BY_NAME[name].main]
    assert "paper" in main and len(main) > 1
    for name in selection.SELECTIONS:
        stem = f"figure1_performance_{name}"
        assert (out / f"{stem}.png").exists() == (name == "paper"), name
        assert (every / f"{stem}.png").exists() == (name in main), name
        assert (out / f"{stem}.csv").exists() == (name in main), name
        if name in main:
            grid = pd.read_csv(out / f"{stem}.csv")
            assert set(grid.selection) == {name}
            assert (out / f"{stem}.csv").read_bytes() == (every / f"{stem}.csv").read_bytes()
    with pytest.raises(ValueError, match="grids must be one of primary, all"):
        write_report(path, tmp_path / "never", grids="some")
    assert not (tmp_path / "never").exists()


SCORED_SPEC = """
name = "scored-report"
seed = 0
datasets = ["iris"]
algorithms = ["LKM", "SKM", "PCSKM"]
inits = ["dkm++"]
kinds = ["random"]
percentages = [10]
n_runs = 1
n_folds = 10
cv_folds = 3
gap_permutations = 2
"""


def test_a_cube_computed_with_the_scores(tmp_path):
    """The runner's scores end to end: every selection in the report, the stored cv-smallest
    and gap choices equal the first largest score of the raw arrays, and cv's the largest
    gap among the s tied on the cv score (then the lower median)."""
    from distributed import Client

    from pcskm.experiments.spec import parse_spec
    from pcskm.runner import run_spec

    store = tmp_path / "scored.zarr"
    with Client(processes=False, n_workers=1, threads_per_worker=1,
                dashboard_address=":0") as client:
        run_spec(parse_spec(SCORED_SPEC), store, client=client, progress=False)
    report = write_report(store, tmp_path / "out")
    performance = pd.read_csv(tmp_path / "out" / "performance.csv")
    assert set(performance.selection) == set(selection.ORDER)
    assert set(pd.read_csv(tmp_path / "out" / "selection_ties.csv").score) == {
        "satisfied", "cv_score", "auc_score", "gap"}
    thresholds = pd.read_csv(tmp_path / "out" / "selection_thresholds.csv")
    assert set(thresholds.selection) == set(selection.ORDER) - {"fixed-loo"}
    assert "Not in this cube" not in report.read_text()
    raw = zarr.open_group(str(store), mode="r")["iris"]
    sidecar = xr.open_datatree(str(store.with_name("scored-selections.zarr")),
                               engine="zarr")["iris"].to_dataset()
    sparsity, status = raw["sparsity"][:], raw["status"][:]
    gaps = raw["gap"][:]
    for score, variable in (("cv_score", "cv_smallest_s"), ("gap", "gap_s"), ("cv_score", "cv_s")):
        values = raw[score][:]
        for a, algorithm in enumerate(str(x) for x in raw["algorithm"][:]):
            if algorithm == "LKM":
                continue
            for fold in range(10):
                row = values[a, 0, 0, 0, 0, fold]
                usable = [e for e in range(1, len(sparsity))
                          if status[a, 0, 0, 0, 0, fold, e] in (1, 2) and not np.isnan(row[e])]
                best = max(usable, key=lambda e, row=row: (row[e], -e))
                if variable == "cv_s":
                    best = pick_by_gap([(sparsity[e], row[e], e) for e in usable],
                                       lambda e, a=a, fold=fold: gaps[a, 0, 0, 0, 0, fold, e])[1]
                got = float(sidecar[variable].sel(algorithm=algorithm, init="dkm++",
                                                  kind="random", percent=10.0, run=0,
                                                  fold=fold))
                assert got == pytest.approx(sparsity[best]), (score, algorithm, fold)
    # auc: the one-standard-error choice on the stored AUC, cv's where a cell has none
    auc, se = raw["auc_score"][:], raw["auc_se"][:]
    with_auc = 0
    for a, algorithm in enumerate(str(x) for x in raw["algorithm"][:]):
        for fold in range(10):
            at = (a, 0, 0, 0, 0, fold)
            got = float(sidecar["auc_s"].sel(algorithm=algorithm, init="dkm++", kind="random",
                                             percent=10.0, run=0, fold=fold))
            usable = [e for e in range(1, len(sparsity))
                      if status[at][e] in (1, 2) and not np.isnan(auc[at][e])]
            if algorithm == "LKM":
                assert np.isnan(got)
            elif usable:
                with_auc += 1
                expected = one_standard_error([(sparsity[e], float(auc[at][e]),
                                                float(se[at][e]), e) for e in usable])[0]
                assert got == pytest.approx(expected), (algorithm, fold)
            else:
                assert got == float(sidecar["cv_s"].sel(algorithm=algorithm, init="dkm++",
                                                        kind="random", percent=10.0, run=0,
                                                        fold=fold))
    assert with_auc > 10


def test_tie_summary_pools_each_data_set_then_all():
    rows = [("iris", "PCSKM", "satisfied", 4, 3, 1, 10, 12),
            ("iris", "PCSKM", "satisfied", 6, 6, 6, 30, 30),
            ("TT-SC-ST", "PCSKM", "satisfied", 10, 1, 0, 2, 160),
            ("TT-SC-ST", "SKM", "gap", 10, 10, 0, 100, 160)]
    tied = pd.DataFrame(rows, columns=["dataset", "algorithm", "score", *ties.COUNTS])
    table = ties.summary(tied).set_index(["dataset", "algorithm", "score"])
    iris = table.loc[("iris", "PCSKM", "satisfied")]
    assert (iris.cells, iris.tied_share, iris.all_tied_share) == (10, 0.9, 0.7)
    assert (iris.mean_tied_s, iris.mean_scored_s) == (4.0, 4.2)
    pooled = table.loc[(ties.ALL_DATASETS, "PCSKM", "satisfied")]
    assert (pooled.cells, pooled.tied_share, pooled.mean_tied_s) == (20, 10 / 20, 42 / 20)
    assert table.loc[(ties.ALL_DATASETS, "SKM", "gap"), "tied_share"] == 1
    assert len(table) == 5


def test_cv_sensitivity_puts_cvs_tie_share_beside_f_under_its_tie_rules():
    """docs/method/selection.md §2.5: per data set (shown by its label) and algorithm with a
    cv score, cv's tie share and mean tied s, then the mean F over inits, kinds and
    percentages under cv, its tie rules and the oracle; "all data sets" averages the data
    sets' means. Hand-made aggregates: F = 0.1 x selection + 0.01 x init + data-set offset."""
    rows = [("TT-SC-ST", "PCSKM", "cv_score", 10, 9, 0, 150, 160),
            ("TT-SC-ST", "PCSKM", "satisfied", 10, 1, 0, 2, 160),
            ("digits 3-8-9", "PCSKM", "cv_score", 20, 5, 0, 40, 160)]
    tied = pd.DataFrame(rows, columns=["dataset", "algorithm", "score", *ties.COUNTS])
    pooled = ties.summary(tied)
    rules = ["cv", "cv-smallest", "cv-median", "cv-largest", "oracle", "honest"]
    f = (0.1 * np.arange(len(rules))[None, :, None, None, None, None]
         + 0.01 * np.arange(2)[None, None, None, :, None, None]
         + np.array([0.0, 0.5])[:, None, None, None, None, None]
         + np.zeros((2, len(rules), 1, 2, 1, 2)))
    families = xr.Dataset(
        {"f_mean": (("family", "selection", "algorithm", "init", "kind", "percent"), f)},
        coords={"family": ["mwm-ttscst", "digits389"], "selection": rules,
                "algorithm": ["PCSKM"], "init": ["dkm++", "seeding"],
                "kind": ["cannot-link"], "percent": [3.0, 10.0]})
    labels = {"mwm-ttscst": "TT-SC-ST", "digits389": "digits 3-8-9"}
    table = ties.cv_sensitivity(pooled, families, labels).set_index(["dataset", "algorithm"])
    assert list(table.columns) == ["tied_share", "mean_tied_s", "cv", "cv-smallest",
                                   "cv-median", "cv-largest", "oracle"]
    tt = table.loc[("TT-SC-ST", "PCSKM")]
    assert (tt.tied_share, tt.mean_tied_s) == (0.9, 15.0)
    np.testing.assert_allclose(tt[["cv", "cv-smallest", "cv-median", "cv-largest", "oracle"]],
                               [0.005, 0.105, 0.205, 0.305, 0.405])
    digits = table.loc[("digits 3-8-9", "PCSKM")]
    assert (digits.tied_share, digits.mean_tied_s) == (0.25, 2.0)
    np.testing.assert_allclose(digits.cv, 0.505)
    everything = table.loc[(ties.ALL_DATASETS, "PCSKM")]
    assert (everything.tied_share, everything.mean_tied_s) == (14 / 30, 190 / 30)
    np.testing.assert_allclose(everything.cv, 0.255)
    assert len(table) == 3
    without_cv = ties.summary(tied[tied.score != "cv_score"])
    assert ties.cv_sensitivity(without_cv, families, labels).empty

"""Writing the report: every table as CSV, the figures as PNG, and report.md."""

import contextlib
import functools
import logging
import time
import tomllib

import numpy as np
import pandas as pd

from pcskm import forking

from . import (
    added_features,
    baseline,
    best_s,
    cell_sample,
    claims,
    code_versions,
    comparison,
    constraint_table,
    coverage,
    decisions,
    failure_rules,
    failures,
    families,
    inference,
    performance,
    plotting,
    preregistered,
    robustness,
    selection_figure,
    statistics,
    study,
    ties,
    weights,
)
from .csv_files import write_csv
from .markdown import Document, anchor
from .markdown import table as table_markdown
from .selection import BY_NAME, ORDER, SELECTION_TITLES

MAX_MISSING_LINES = 40

log = logging.getLogger("pcskm")


def _csv(frame, out, name, written):
    path = out / name
    write_csv(frame, path)
    written.append(path)
    return path


def _spec_description(attrs):
    try:
        return tomllib.loads(attrs.get("spec_toml", "")).get("description", "").strip()
    except tomllib.TOMLDecodeError:
        return ""


def _duration(seconds):
    if seconds < 120:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _run_lines(runs):
    """One line per ``pcskm run`` recorded in the store (runner.execute.run_entry)."""
    lines = []
    for number, run in enumerate(runs, 1):
        if run.get("killed"):
            lines.append(
                f"run {number} (killed; recorded by the next run): started "
                f"{run.get('started')}, {run.get('cells', 0):,} cells written; machine: "
                f"{run.get('client_machine')}; command: `{run.get('command')}`")
            continue
        state = ("interrupted" if run.get("interrupted") else
                 f"{run.get('errors')} failed tasks" if run.get("errors") else "complete")
        lines.append(
            f"run {number} ({state}): {run.get('started')} to {run.get('finished')}, "
            f"**{_duration(run.get('wall_seconds', 0))} wall** "
            f"({_duration(run.get('compute_wall_seconds', 0))} from the first task to the "
            f"last write), {run.get('cells', 0):,} cells and {run.get('fits', 0):,} fits in "
            f"{run.get('tasks', 0):,} tasks on {run.get('where')} with up to "
            f"{run.get('max_workers')} workers; machine: {run.get('client_machine')}; "
            f"pcskm {run.get('pcskm')} (commit {run.get('commit') or 'unknown'}"
            + (f" of {run['commit_date']}" if run.get("commit_date") else "") + "); "
            f"command: `{run.get('command')}`")
    return lines


# runs.csv's first columns: when the run began and the commit (with its own date) it ran
RUN_FIRST = ["run_id", "spec", "started", "commit_date", "commit", "diff_sha256", "finished",
             "wall_seconds"]
RUN_ALWAYS = ("commit_date", "diff_sha256")  # also for runs recorded before these existed


def runs_table(runs):
    """``runs.csv``: one row per run record (runner.execute.run_entry), :data:`RUN_FIRST`
    first (the commit's own date beside the run's start), then the record's other keys in
    its order."""
    table = pd.DataFrame(runs)
    for key in RUN_ALWAYS:
        if key not in table:
            table[key] = None
    first = [key for key in RUN_FIRST if key in table]
    return table[first + [key for key in table.columns if key not in first]]


# What the two designs of docs/method/protocol.md §6 share between the settings of a cell.
DESIGNS = {
    "paired": "every algorithm and init of a (data set, kind, percent, run, fold) uses the "
              "same constraint sample and Seeding draw",
    "unpaired": "every algorithm and init draws its own constraint sample and Seeding, as "
                "the authors' script did",
}


def _header(doc, results, found, out, written):
    store, attrs = results.store, results.store.attrs
    doc.heading("Store, runs and reading guide")
    versions = attrs.get("versions") or {}
    runs = attrs.get("runs") or []
    if runs:
        total = sum(run.get("wall_seconds", 0) for run in runs)
        doc.paragraph(f"Computed in {len(runs)} run(s), {_duration(total)} of wall time in all:")
        doc.bullets(_run_lines(runs))
        _csv(runs_table(runs), out, "runs.csv", written)
        doc.paragraph("The same records, one row per run: `runs.csv`.")
    design = (attrs.get("protocol") or {}).get("design", "paired")
    doc.bullets([
        f"store: `{store.path.name}`",
        f"spec: {attrs.get('spec_name', '?')} (hash {str(attrs.get('spec_hash', '?'))[:12]}; "
        f"{len(attrs.get('spec_hashes') or [])} spec(s) wrote into this store)",
        f"design: {design} ({DESIGNS[design]}; docs/method/protocol.md §6)",
        "versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()),
        f"best-s selections stored in `{results.sidecar.name}` beside the store (Zarr, one "
        "group per data set: `<selection>_s` and `<selection>_f` per selection, "
        "`fixed_loo_s`, computed, expected; section 3)",
    ])
    code = code_versions.lines(store)
    if code:
        doc.paragraph("The code that computed each algorithm's cells (as each run recorded "
                      "it; docs/reference/cube-schema.md, Code provenance):")
        doc.bullets(code)
    description = _spec_description(attrs)
    if description:
        doc.paragraph("Spec description: " + description.replace("\n", " "))
    doc.paragraph(
        "Reading guide. Section numbers (§) refer to pcskm's protocol, "
        "docs/method/protocol.md. A *missing* cell is not computed yet: it is never averaged, "
        f"only counted. A *failed* fit (status {_failures_named(results)}) has F = "
        "NaN: means are nanmean over the computed cells (§9) and the failures are counted. "
        + _subsets_line(results) +
        f"The {len(results.selections)} selections of s of this cube (section 3) are shown "
        "side by side: " + ", ".join(f"**{name}**" for name in results.selections) + "; "
        "**paper** reads the test labels (optimistic) and **oracle** is an upper bound, not a "
        "selection.")
    if found.plan is None or not found.plan.paper:
        doc.paragraph(_focus_line(found))


def _averaged(results):
    """The labels of the cube's data sets averaged over subsets (the paper's digits)."""
    return [results.family_labels[label] for label, members in results.family_members.items()
            if len(members) > 1]


def _subsets(results, how, around=" ("):
    """A note on the data sets of subsets (``how``: "summed", "mean" over the subsets, or
    "per subset"), for a cube that holds one; empty otherwise."""
    if not _averaged(results):
        return ""
    words = how if how == "per subset" else f"{how} over the subsets"
    return f"{around}digits: {words}" + (")" if around == " (" else "")


def _subsets_line(results):
    """The reading guide's sentence on the data sets averaged over subsets (the paper's
    digits families), for a cube that holds such a family; empty otherwise."""
    averaged = _averaged(results)
    if not averaged:
        return ""
    return (f"{', '.join(averaged)}: every step per subset, then the mean over the subsets in "
            "the cube. ")


def _failures_named(results):
    return coverage.flag_list(results.store.failure_flags)


def _focus_line(found):
    """The focus of a study other than the paper's (docs/guide/quick-study.md, "A study that
    is not the paper's")."""
    if found.plan is None:
        return (f"No focus algorithm: {found.focus_note}. The comparisons of one algorithm "
                "with the others (sections 3.4 and 5) are left out.")
    return (f"Focus algorithm: **{found.plan.focus}** (`pcskm report --focus`, else "
            "`[report] focus` of the spec, else PCSKM; docs/reference/spec-toml.md). Analysis 1 "
            f"(sections 3.4 and 5) compares it with {', '.join(found.plan.others)}.")


def _coverage(doc, results, out, written):
    doc.heading("1. What the cube holds")
    notes = coverage.grid_differences(results.store, results)
    if not families.paper_labels(results, families.PAPER_STUDY):
        doc.paragraph("The cube holds none of the paper's data sets: its grid is not compared "
                      "with the paper's.")
    elif notes:
        doc.paragraph("**Differences from the paper's grid (REDUCED GRID where values are "
                      "fewer):**")
        doc.bullets(notes)
    else:
        doc.paragraph("The cube's grid is the paper's.")
    table = results.coverage_table()
    _csv(table, out, "coverage.csv", written)
    if table.empty:
        return None
    totals = coverage.counts(table, pd.concat(results.samples, ignore_index=True),
                             results.store.failure_flags)
    _csv(totals, out, "counts.csv", written)
    doc.paragraph("The counts used throughout (`counts.csv`; docs/reference/cube-schema.md, "
                  "Counts):")
    doc.table(totals.assign(value=totals.value.map("{:,}".format)))
    member_of = {name: results.family_labels[label]
                 for label, members in results.family_members.items() for name in members}
    summary = table.assign(dataset=table.dataset.map(member_of)).groupby(
        ["dataset", "algorithm"], sort=False)[["cells", "computed", "missing", "fits",
                                               "failed_fits"]].sum().reset_index()
    doc.paragraph(f"Cells and fits per data set{_subsets(results, 'summed')} and "
                  "algorithm; per init and kind in `coverage.csv`.")
    doc.table(summary)
    missing = table[table.missing > 0]
    if missing.empty:
        doc.paragraph("Every expected cell is computed.")
        return totals
    lines = [f"{r.dataset} / {r.algorithm} / {r.init} / {r.kind}: {r.missing} of {r.cells} "
             f"cells missing (percentages {r.missing_percentages})"
             for r in missing.itertuples()]
    doc.paragraph(f"**Missing cells** ({int(missing.missing.sum())} in {len(missing)} "
                  "(data set, algorithm, init, kind)); values built on them are marked "
                  "(hollow markers, '*') and left out of the statistics:")
    doc.bullets(lines[:MAX_MISSING_LINES] + (
        [f"... {len(lines) - MAX_MISSING_LINES} more in coverage.csv"]
        if len(lines) > MAX_MISSING_LINES else []))
    return totals


def _failures(doc, results, out, written):
    doc.heading("1.1 Failed fits", level=3)
    table = failures.family_table(results)
    _csv(table, out, "failures.csv", written)
    doc.paragraph(
        f"A fit fails with status {_failures_named(results)} (F = NaN); means leave "
        "it out (§9). Every failure counted is the method's own: a fault of the machine during "
        "a fit (out of memory, a failing disk, a lost worker) leaves its cells missing, never "
        "failed (docs/reference/cube-schema.md, Status codes). `failures.csv` gives, per "
        f"data set{_subsets(results, 'summed')}, "
        "algorithm, init, kind and percentage, the computed cells and fits, the failed fits "
        "and their share (`failed_fit_rate`), the cells with no successful fit at any s "
        "(`cells_all_failed`), and per selection the failed share of the cells behind the "
        "plotted point, at the selected s (`failed_fraction_<selection>`, the same as in the "
        "figures' CSVs). Below: per data set and algorithm with failures, pooled over inits, "
        "kinds and percentages, with the setting of the largest share, then per algorithm "
        "over all data sets (`failures_summary.csv`).")
    if table.empty or not (table.failed_fits > 0).any():
        doc.paragraph("No computed fit failed.")
        return
    summary = failures.summary(table)
    _csv(summary, out, "failures_summary.csv", written)
    doc.table(summary, digits=4)
    gaps = failures.gaps(results.families)
    if gaps.empty:
        doc.paragraph("No plotted point has every cell failed.")
        return
    _csv(gaps, out, "failure_gaps.csv", written)
    doc.paragraph("**Points where every cell failed** (no value: drawn as a gap with an x on "
                  "the x axis; percentages; `failure_gaps.csv`):")
    doc.bullets([f"{g.selection}: {results.family_labels.get(g.family, g.family)} / "
                 f"{g.algorithm} / {g.init} / {g.kind}: {g.percentages}"
                 for g in gaps.itertuples()])


def _table1(doc, results, found, out, written):
    doc.heading("2. Table 1: data set constraints")
    if not found.table1:
        doc.paragraph(f"Does not apply: {found.table1_note}.")
        return None
    used = pd.concat(results.constraints_used, ignore_index=True)
    _csv(used, out, "constraints_in_cube.csv", written)
    table = constraint_table.table(results.store, used)
    _csv(table, out, "table1.csv", written)
    doc.paragraph(
        "Each cell: CV10 labels, CV10 constraints (pool), [used at 1 %, at 10 %]. *printed*: "
        "the paper; *nominal*: L = 0.9 N kept fractional, rounded half away from zero "
        "(docs/method/protocol.md §4.1); *actual fold 0*: our folds' fold-0 training size t, P1 = "
        "t(t-1)/2 and the even counts the experiment uses; *in cube*: the counts m recorded "
        "in the cube (`constraints_in_cube.csv`).")
    doc.table(table)
    return table


# One or two sentences per selection (docs/method/selection.md, docs/method/protocol.md §9,
# docs/guide/choosing-s.md "In the report").
EXPLANATIONS = {
    "paper": "**paper** (optimistic): per (data set, init, kind, percentage) the s with the "
             "best mean test F over runs x folds, ties -> smallest s (§9.1). It reads the "
             "labels of the test folds, which a user does not have, so it is optimistic.",
    "honest": "**honest**: per run and fold the s whose labels satisfy the most of the "
              "cell's sampled training constraints, failed fits excluded, ties -> smallest s "
              "(§9.2; docs/method/selection.md §4).",
    "satisfied-median": "**satisfied-median**: the honest score with ties -> the lower median "
                        "of the tied s (docs/method/selection.md §1, §4).",
    "satisfied-largest": "**satisfied-largest**: the honest score with ties -> the largest "
                         "tied s. With honest and satisfied-median it shows how much the "
                         "honest selection owes to its tie rule.",
    "cv": "**cv**: per run and fold the s with the best constraint cross-validation score, "
          "the mean CVCP F-measure of held-out constraints (docs/method/selection.md §2), "
          "ties -> the largest gap among the tied s, then the lower median (§2.5; the lower "
          "median alone in a cube without the gap).",
    "cv-smallest": "**cv-smallest**: the cv score with ties -> smallest s.",
    "cv-median": "**cv-median**: the cv score with ties -> the lower median of the tied s.",
    "cv-largest": "**cv-largest**: the cv score with ties -> the largest tied s. With "
                  "cv-smallest and cv-median it shows how much cv owes to its tie rule "
                  "(the share of cells where cv ties: section 3.1).",
    "auc": "**auc** (sensitivity): per run and fold the largest s whose held-out pair AUC "
           "of the weighted distance is within one standard error of the best "
           "(docs/method/selection.md §7), on the fold fits of cv. A cell without an AUC, "
           "every cell of kinds must-link and cannot-link (one kind of pair), takes cv's "
           "choice (§7.5).",
    "gap": "**gap**: per run and fold the s with the largest gap statistic "
           "(docs/method/selection.md §3.3, sparcl's choice), ties -> smallest s.",
    "gap-1sd": "**gap-1sd**: per run and fold the smallest s whose gap is within one standard "
               "deviation (`gap_sd`) of the largest (docs/method/selection.md §3.3).",
    "fixed-loo": "**fixed-loo**: one s per algorithm for a whole data set, chosen on the "
                 "other data sets of the paper's six: the s whose relative position s / "
                 "sqrt(p) gives the best mean F there (section 3.2; docs/guide/choosing-s.md).",
    "unthresholded": "**unthresholded** (reference arm): per run and fold the path's first s "
                     "at which no weight is zero, else the largest s (docs/method/selection.md "
                     "§6): the sparse algorithms with nothing thresholded, so that a gain can "
                     "be put down to the constraints and weighting or to sparsity.",
    "oracle": "**oracle** (upper bound): per run and fold the s with the best test F. No "
              "selection of s per cell can do better; it is not a selection a user can make.",
}
# fixed-loo in a cube without the paper's six (fixed_s.choose_fixed pools its own data sets)
OWN_FIXED_LOO = ("**fixed-loo**: one s per algorithm for a whole data set, chosen on the other "
                 "data sets of the cube: the s whose relative position s / sqrt(p) gives the "
                 "best mean F there (section 3.2; docs/guide/choosing-s.md).")
SCORED = ("cv", "auc", "gap", "gap-1sd")  # the tie rules of cv go with cv


def _cv_runs_note(name, results):
    """For ``cv`` and ``auc`` in a store whose spec limits the CV scores to the first runs:
    which."""
    cv_runs = (results.store.attrs.get("protocol") or {}).get("cv_runs")
    if name not in ("cv", "auc") or cv_runs is None:
        return ""
    return (f" The cube has these scores in runs 0 to {cv_runs - 1} only (the spec's "
            f"`cv_runs`): under {name} every algorithm is compared on those runs.")


def _choosing_s(doc, results, plan, tests, by_dataset, out, written):
    doc.heading("3. Choosing s")
    doc.paragraph(
        "SKM and PCSKM are fitted over a grid of s (§7), and the reported F depends on which s "
        "is taken. Every selection below is computed for every sparse algorithm; a "
        "non-sparse algorithm has one fit, which every selection takes. Each is stored in "
        f"`{results.sidecar.name}` and shown side by side in the figures and the analyses:")
    explanations = EXPLANATIONS if families.paper_labels(results) else {
        **EXPLANATIONS, "fixed-loo": OWN_FIXED_LOO}
    doc.bullets([explanations[name] + _cv_runs_note(name, results)
                 for name in results.selections])
    absent = [name for name in SCORED if name not in results.selections]
    if absent == ["auc"]:
        doc.paragraph(
            "Not in this cube: auc. It needs the held-out pair AUC (`auc_score`, `auc_se`), "
            "which a store with cv scores made before it lacks; the next `pcskm run` of its "
            "spec adds it (docs/reference/cube-schema.md).")
    elif absent:
        doc.paragraph(
            f"Not in this cube: {', '.join(absent)}. They need the per-s selection scores, "
            "which a spec stores with `cv_folds` and `gap_permutations` "
            "(docs/reference/spec-toml.md).")
    if "unthresholded" not in results.selections:
        doc.paragraph(
            "Not in this cube: unthresholded. It needs the weights of every s "
            "(`weights_per_s`, docs/reference/cube-schema.md), which a store made before "
            "pcskm kept them lacks.")
    _ties(doc, results, out, written)
    _fixed(doc, results, out, written)
    _paper_and_honest(doc, results, out, written)
    _comparison(doc, results, plan, tests, by_dataset, out, written)


def _in_family_order(frame, results):
    """``frame`` with its ``dataset`` labels in the reported order
    (:func:`families.reported`; stable)."""
    rank = {results.family_labels[label]: i for i, label in enumerate(results.family_members)}
    if frame.empty:
        return frame
    return frame.sort_values("dataset", key=lambda d: d.map(rank), kind="stable")


def _ties(doc, results, out, written):
    doc.heading("3.1 Ties and what each selection picks", level=3)
    member_of = {name: label for label, members in results.family_members.items()
                 for name in members}
    tied = ties.family_ties(results.ties, member_of, results.family_labels)
    _csv(tied, out, "selection_ties.csv", written)
    choices = ties.family_choices(results.choices, member_of, results.family_labels)
    _csv(choices, out, "selection_choices.csv", written)
    doc.paragraph(
        "A per-cell score ties when two or more s share its largest value; the tie rule then "
        f"decides alone. Per data set{_subsets(results, 'summed')}, sparse algorithm and "
        "score, pooled over inits, kinds and percentages: the computed cells with a score, "
        "the share of them that tie, the mean number of tied s and of s with a score per "
        "cell, and the share of cells where every s ties; last, each algorithm and score over "
        "every data set of the cube (this table: `selection_ties_summary.csv`; per setting: "
        "`selection_ties.csv`).")
    pooled = _in_family_order(ties.summary(tied), results)
    _csv(pooled, out, "selection_ties_summary.csv", written)
    doc.table(pooled, digits=3)
    sensitivity = ties.cv_sensitivity(pooled, results.families, results.family_labels)
    if not sensitivity.empty:
        _csv(sensitivity, out, "selection_cv_ties.csv", written)
        doc.paragraph(
            "cv and its tie rule (docs/method/selection.md §2.5): the share of cells where "
            "the cv score ties and the mean number of tied s, then the mean F (over inits, "
            "kinds and percentages) under cv (ties -> the largest gap, then the lower "
            "median), under the cv score with ties -> smallest, lower median and largest s, "
            "and under the oracle (`selection_cv_ties.csv`).")
        doc.table(sensitivity, digits=3)
    _thresholds(doc, results, member_of, out, written)
    doc.paragraph(
        "The s each selection picks most often, with its share of the computed cells (every "
        "s chosen and its count: `selection_choices.csv`).")
    top = ties.most_chosen(choices)
    if top.empty:
        doc.table(top)
        return
    top = top.assign(cell=[f"{r.s:.1f} ({100 * r.share:.0f} %)" for r in top.itertuples()])
    wide = top.pivot(index=["dataset", "algorithm"], columns="selection", values="cell")
    wide = wide[[s for s in ORDER if s in wide.columns]].reset_index()
    wide.columns.name = None
    doc.table(_in_family_order(wide, results).fillna(""))


def _thresholds(doc, results, member_of, out, written):
    """How often each selection's s thresholds a feature (``selection_thresholds.csv``; a
    cube without the per-s weights has no such table)."""
    table = ties.family_thresholds(results.thresholds, member_of, results.family_labels)
    if table.empty:
        return
    _csv(_in_family_order(table, results), out, "selection_thresholds.csv", written)
    pooled = table[table.dataset == families.ALL_DATASETS].groupby(
        ["algorithm", "selection"], sort=False)[["cells", "thresholding_cells"]].sum()
    pooled = (pooled.thresholding_cells / pooled.cells.where(pooled.cells > 0)).rename(
        "thresholding_share").reset_index()
    wide = pooled.pivot(index="algorithm", columns="selection", values="thresholding_share")
    wide = wide[[s for s in ORDER if s in wide.columns]].reset_index()
    wide.columns.name = None
    doc.paragraph(
        "How often each selection makes use of sparsity: the share of the computed cells, "
        "over every data set, whose selected s gives more features a weight of exactly 0 "
        "than the cell's least sparse fit "
        "(per data set and constraint kind: `selection_thresholds.csv`; fixed-loo is not "
        "counted there).")
    doc.table(wide, digits=3)


def _fixed(doc, results, out, written):
    doc.heading("3.2 The fixed s, leave one data set out", level=3)
    table = results.fixed_s if results.fixed_s is not None else pd.DataFrame()
    _csv(table, out, "fixed_s.csv", written)
    if families.paper_labels(results):
        pool = "the paper's six"
        outside = ("A data set outside the six is chosen for on all six; "
                   "one with no other of the six in the cube gets no value. ")
    else:  # fixed_s.choose_fixed: a cube without the six pools all its data sets
        pool = "the cube (it holds none of the paper's six)"
        outside = "A data set with no other in the cube gets no value. "
    doc.paragraph(
        "fixed-loo (docs/guide/choosing-s.md): for each data set and sparse algorithm, every "
        "s of its grid is carried to each other data set of " + pool + " by its relative "
        "position s / sqrt(p) (the nearest grid value there) and scored by the mean over "
        "those data sets of their mean F (over their inits, kinds and percentages); the best "
        "score wins (ties -> smallest s). " + outside + "Every candidate and its "
        "score: `fixed_s.csv`.")
    chosen = table[table.chosen] if not table.empty else table
    doc.table(chosen.drop(columns="chosen") if not chosen.empty else chosen, digits=3)


def _paper_and_honest(doc, results, out, written):
    doc.heading("3.3 Paper-style and honest s", level=3)
    detail = best_s.by_dataset(results)
    _csv(detail, out, "best_s.csv", written)
    doc.paragraph(
        "Paper-style (§9.1) and honest (§9.2) side by side, per data set"
        f"{_subsets(results, 'per subset')} in `best_s.csv`. Below: the range of the "
        "paper-style s, the mean honest s, and how much higher the paper-style mean F is "
        "(mean over percentages).")
    doc.table(best_s.by_family(results, detail), digits=3)


def _comparison(doc, results, plan, tests, by_dataset, out, written):
    doc.heading("3.4 Analysis 1 under every selection", level=3)
    table = comparison.analysis1_tests(tests)
    if plan is None:
        doc.paragraph("Not computed: the study has no focus algorithm (see the reading guide).")
        return
    _csv(table, out, "selections_analysis1.csv", written)
    focus = plan.focus
    if plan.paper:
        doc.paragraph(
            "Analysis 1 (§10: PCSKM against LKM, SKM, PCKM and MPCKM on the 60 cases) under "
            "every selection. Each cell: the verdict at the cases level, then at the data-set "
            "level (§10.1, \"sets\"): better or worse (for PCSKM) when the Holm-adjusted p "
            f"(over the seven tests of the selection and level) is below {claims.ALPHA}, on "
            "the side of the larger signed-rank sum, else no diff. (no difference); n/a: no "
            "case used. With the adjusted p and PCSKM's wins/losses; with six data sets the "
            "data-set level can hardly reach 0.05 (its smallest possible p: section 5), so "
            "read its wins/losses. All numbers: `selections_analysis1.csv`; every test: "
            "section 5.")
    else:
        doc.paragraph(
            f"Analysis 1 (§10: {focus} against {', '.join(plan.others)} on "
            f"{len(plan.settings) * len(plan.datasets)} cases, {_settings(plan)} x "
            f"{len(plan.datasets)} data set(s)) under every selection. Each cell: the verdict "
            "at the cases level, then at the data-set level (§10.1, \"sets\"): better or "
            f"worse (for {focus}) when the Holm-adjusted p (over the {len(plan.others)} "
            f"test(s) of the selection and level) is below {claims.ALPHA}, on the side of the "
            "larger signed-rank sum, else no diff. (no difference); n/a: no case used. With "
            f"the adjusted p and {focus}'s wins/losses. All numbers: "
            "`selections_analysis1.csv`; every test: section 5.")
    doc.table(comparison.verdict_table(table))
    values = comparison.dataset_values(results, plan)
    png = out / "figure_selections.png"
    if not values.empty:
        plotting.draw(png, functools.partial(selection_figure.figure, values, png, focus))
        written.append(png)
        csv = _csv(values, out, "figure_selections.csv", written)
        doc.image(png, "Every selection of s per data set")
        settings = ("((Seeding, random), DKM++/ROBIN(D)/Maximin(D) x random/must-link/"
                    "cannot-link)" if plan.paper else f"({_settings(plan)})")
        among = "the five algorithms" if plan.paper else "the algorithms"
        doc.paragraph(
            "Per data set, the mean of V (the mean F over the percentages) over its Analysis-1 "
            f"settings {settings} where every algorithm is complete: the data-set values of "
            f"the *datasets* level. One row per selection; {focus} large. Below: {focus}'s "
            f"value and its rank among {among}. Plotted values: `{csv.name}`.")
        doc.table(comparison.focus_table(values, focus))
    else:
        doc.paragraph("Selections figure: not computed (no data set has a complete "
                      "Analysis-1 setting).")
    said = set()
    for test, wide in comparison.per_dataset_tables(by_dataset).items():
        doc.paragraph(
            f"**{test}** per data set: mean V({focus}) − V({test.split(' vs ')[1]}) over the "
            f"data set's used cases ({focus}'s wins/losses/ties); '*': some cases not used.")
        _computed_columns(doc, wide, said)


def _computed_columns(doc, wide, said):
    """The table ``wide`` without its data-set columns that are "not computed" in every row,
    named in one line the first time (``said``: the names already named)."""
    empty = [c for c in wide.columns[1:] if (wide[c] == comparison.NONE).all()]
    if len(empty) == len(wide.columns) - 1:
        doc.paragraph("Not computed: no data set has a used case.")
        return
    doc.table(wide.drop(columns=empty))
    new = [c for c in empty if c not in said]
    if new:
        doc.paragraph(f"Left out of this table and the next: {', '.join(new)}, not computed in "
                      "any row (not in the cube).")
        said.update(new)


def _settings(plan):
    """The (init, kind) settings of a plan in words: "DKM++/random, ..."."""
    return f"{len(plan.settings)} setting(s) " + "(" + ", ".join(
        f"{performance.INIT_LABELS.get(i, i)}/{k}" for i, k in plan.settings) + ")"


def _inits_run(results):
    """The inits of the cube's groups."""
    return {str(i) for name in results.store.names for i in results.store.group(name).init.values}


def _performance(doc, results, out, written, grids, primary):
    """Section 4: the performance tables, and the grids of the main selections: all of
    them (``grids="all"``) or the ``primary`` selection's (``grids="primary"``); every
    grid's values go to its CSV either way."""
    doc.heading("4. Performance")
    long = performance.long_table(results)
    _csv(long, out, "performance.csv", written)
    _csv(performance.by_dataset_table(results), out, "performance_by_dataset.csv", written)
    doc.paragraph(
        f"Mean F-score (nanmean over runs x folds, §9{_subsets(results, 'mean', '; ')}) against "
        "the percentage of constraints; band: one standard deviation over runs of the "
        "per-run mean over folds. Columns: " + (
            "the paper's six data sets; the cube's other data sets are in figures of their "
            "own (\"other data sets\")" if families.paper_labels(results) else
            "the data sets of the cube") + ". The panels of each row "
        "share their F axis; a panel of the spec not computed yet says \"not computed\". "
        "Failed cells (F = NaN at the selected s, §11) are marked: a half-filled marker when "
        f"some cells of the point failed (their share written above it from "
        f"{100 * performance.FAILED_LABEL_MIN:.0f} %), an x on the x axis and a gap in the "
        "line when all did; every point's failed share is in the figure's CSV (`failed_fraction`, "
        "`marker`). All values: `performance.csv` (per data set and subset: "
        "`performance_by_dataset.csv`).")
    run = _inits_run(results)
    specs = [spec for spec in performance.figure_specs(results)
             if {init for init, _kind in spec[2]} & run]
    main = [name for name in results.selections if BY_NAME[name].main]
    drawn = main if grids == "all" else [name for name in main if name == primary]
    doc.paragraph(
        "One set of grids per main selection (" + ", ".join(main) + ")"
        + ("" if drawn == main else
           ", drawn for " + (f"the primary selection, {primary}" if drawn
                             else "none of them (the primary selection is not a main one)")
           + "; the others' values are in their grids' CSVs (`pcskm report --grids all` "
           "draws them)") + "; the other selections' values are in `performance.csv` and "
        "in section 3.4.")
    absent = [title for _stem, title, rows, _datasets in performance.figure_specs(results)
              if not {init for init, _kind in rows} & run]
    if absent:
        doc.paragraph(f"Does not apply: {'; '.join(dict.fromkeys(absent))} (the study runs "
                      "none of their inits).")
    for number, selection in enumerate(main, 1):
        doc.heading(f"4.{number} {selection}: {SELECTION_TITLES[selection]}", level=3)
        for stem, title, rows, datasets in specs:
            png = out / f"{stem}_{selection}.png"
            draw = selection in drawn  # a grid not drawn is only checked for values
            if not performance.has_values(results, selection, rows, datasets):
                doc.paragraph(f"{title}: not computed (no cell of its settings "
                              f"{', '.join('/'.join(r) for r in rows)} is computed).")
                continue
            if draw:
                plotting.draw(png, functools.partial(performance.figure, results, selection,
                                                     title, rows, png, datasets=datasets))
                written.append(png)
            shown = long[(long.selection == selection)
                         & long.family.isin(performance.columns(results, datasets))]
            plotted = shown[pd.MultiIndex.from_arrays([shown.init, shown.kind]).isin(rows)]
            csv = _csv(plotted, out, f"{stem}_{selection}.csv", written)
            if draw:
                doc.image(png, f"{title} ({selection})")
                doc.paragraph(f"Plotted values: `{csv.name}`.")
            else:
                doc.paragraph(f"{title}: the grid's values in `{csv.name}`.")
    _added_features(doc, long, f"4.{len(main) + 1}", out, written)
    cases = performance.case_table(results)
    _csv(cases, out, "case_values.csv", written)
    doc.paragraph("V = mean over the percentages of the mean F (the Wilcoxon case value, "
                  "§10); '*': some expected cell missing (the mean of what is there); empty: "
                  "not computed. The main selections below; every selection in "
                  "`case_values.csv`.")
    for selection in main:
        doc.paragraph(f"**{selection}**")
        doc.table(cases[cases.selection == selection].drop(columns="selection")
                  if not cases.empty else cases)


def _added_features(doc, long, number, out, written):
    """The clean digits against the digits with four added uninformative columns."""
    table = added_features.table(long)
    if table.empty:
        return
    doc.heading(f"{number} Added uninformative features", level=3)
    _csv(table, out, "added_features.csv", written)
    doc.paragraph(
        "Each digits subset with four added uninformative columns (*contaminated*: Exp(1) "
        "values, the paper's; *shuffled*: four pixel columns permuted over the rows, at the "
        "pixels' own scale; docs/method/datasets.md §5) against the same subset clean, with "
        "the same folds, constraint samples and Seeding draws. Per selection and algorithm: "
        "the mean F over the (init, kind, percentage) settings computed in both, the mean and "
        "the largest absolute difference (added - clean), and the settings whose mean F "
        "differs at 4 decimals. The main selections below; all in `added_features.csv`.")
    main = [name for name in table.selection.unique() if BY_NAME[name].main]
    doc.table(table[table.selection.isin(main)])


def _number(value, spec):
    return "n/a" if np.isnan(value) else format(value, spec)


def _interval(estimate, low, high):
    return (f"{_number(estimate, '+.4f')} [{_number(low, '+.4f')}, {_number(high, '+.4f')}]"
            if not np.isnan(estimate) else "n/a")


def _test_table(tests):
    """The tests of one selection, both levels, in report.md's compact form."""
    rows = []
    order = pd.Categorical(tests.test, categories=tests.test.unique(), ordered=True)
    for r in tests.assign(order=order).sort_values(["order", "level"]).itertuples():
        rows.append({
            "analysis": r.analysis, "test": r.test, "level": r.level,
            "n": f"{r.n} of {r.n_units}",
            "p (Holm)": f"{_number(r.p_value, '.2g')} ({_number(r.p_holm, '.2g')})",
            "wins/losses/ties": f"{r.wins}/{r.losses}/{r.ties}",
            f"mean x − y [bootstrap {100 * inference.CONFIDENCE:.0f} %]": _interval(
                r.mean_diff, r.boot_low, r.boot_high),
            "HL [interval] level": _interval(r.hl_estimate, r.hl_low, r.hl_high)
            + ("" if np.isnan(r.hl_confidence) else f" {100 * r.hl_confidence:.1f} %"),
            "rank-biserial": _number(r.rank_biserial, "+.2f"),
            "favours": r.direction,
        })
    return pd.DataFrame(rows)


def _breakdown_table(table):
    """Per test (rows) and data set (columns): the mean x - y over the data set's used
    cases and their wins/losses/ties; '*' when some of its cases are not used."""
    cells = [f"{_number(r.mean_diff, '+.3f')} ({r.wins}/{r.losses}/{r.ties})"
             + ("*" if r.n_used < r.n_cases else "") if r.n_used else comparison.NONE
             for r in table.itertuples()]
    frame = table.assign(cell=cells, key=table.analysis.astype(str) + ". " + table.test)
    wide = frame.pivot(index="key", columns="dataset", values="cell")
    return wide.loc[frame.key.unique(), frame.dataset.unique()].reset_index().rename(
        columns={"key": "test"})


def _statistics(doc, plan, tests, cases, by_dataset, out, written):
    doc.heading("5. Wilcoxon signed-rank analyses")
    if plan is None:
        doc.paragraph("Not computed: the study has no focus algorithm (see the reading guide).")
        return
    _csv(tests, out, "wilcoxon_tests.csv", written)
    _csv(cases, out, "wilcoxon_cases.csv", written)
    _csv(by_dataset, out, "wilcoxon_datasets.csv", written)
    analyses = (
        "x = PCSKM, y = the other algorithm, 60 cases ((Seeding, random) and DKM++/ROBIN(D)/"
        "Maximin(D) x random/must-link/cannot-link, x six data sets). Analysis 2: x, y = two "
        "constraint kinds, 72 cases (DKM++/ROBIN(D)/Maximin(D) x PCKM/MPCKM/SKM/PCSKM x six "
        "data sets)." if plan.paper else
        f"x = {plan.focus} (the focus algorithm), y = each other algorithm, "
        f"{len(plan.settings) * len(plan.datasets)} cases ({_settings(plan)} x the "
        f"{len(plan.datasets)} data set(s) of the cube). The paper's Analysis 2 (constraint "
        "kinds of its four semi-supervised algorithms on its six data sets) is not run.")
    doc.paragraph(
        "`scipy.stats.wilcoxon(x, y, zero_method=\"wilcox\", correction=False, "
        "alternative=\"two-sided\", method=\"auto\")` on the case values V (§10). Analysis 1: "
        + analyses + " n: cases used; not_computed: cases with missing cells or absent from "
        "the cube; dropped_nan: computed cases with V = NaN; wins/losses: x > y / x < y; "
        "direction: the side with the larger signed-rank sum. Per case: "
        "`wilcoxon_cases.csv`.")
    doc.paragraph(
        "Every test is shown at two levels (§10.1). *cases*: the paper's test on the cases, "
        + ("which repeat each data set 10 or 12 times (LKM's values, and SKM's under the "
           "paper-style selection, repeat across kinds)" if plan.paper else
           "which repeat each data set once per setting") +
        ", so its p-values treat dependent cases "
        "as independent. *datasets*: one value "
        "per data set, the mean over its used cases, and the exact signed-rank test "
        "(`method=\"exact\"`); with n data sets its smallest two-sided p is 2 / 2^n. Both "
        "levels give the Hodges-Lehmann estimate of x − y with its distribution-free "
        "interval and the confidence level the discrete signed-rank distribution attains "
        f"(nominal {100 * inference.CONFIDENCE:.0f} %), the rank-biserial correlation "
        f"(R+ − R−) / (R+ + R−), and the mean x − y with a {100 * inference.CONFIDENCE:.0f} % "
        "percentile interval "
        f"from {inference.N_RESAMPLES:,} bootstrap resamples of the data sets (whole data "
        "sets drawn with replacement). p (Holm): Holm's adjustment over the "
        + ("family of the seven tests (4 of analysis 1, 3 of analysis 2)" if plan.paper else
           f"family of the {len(plan.others)} test(s)") +
        " of one selection and "
        "level, those with a p-value (`holm_m`). All columns: `wilcoxon_tests.csv`; per data "
        "set: `wilcoxon_datasets.csv`.")
    if tests.empty:
        doc.paragraph("Not computed: no data set of the analyses is in the cube.")
        return
    datasets = tests[(tests.level == "datasets") & (tests.n > 0)]
    if len(datasets):
        n, m = int(datasets.n.max()), int(datasets.holm_m.max())
        doc.paragraph(
            f"Here, with {n} data set{'s' if n > 1 else ''}, no exact two-sided p can be below "
            f"2 / 2^{n} = {2 / 2 ** n:.3g}, and none adjusted by Holm over {m} tests below "
            f"{statistics.smallest_holm_p(n, m):.3g}.")
    for selection in tests.selection.unique():
        doc.paragraph(f"**{selection}** ({SELECTION_TITLES.get(selection, selection)})")
        doc.table(_test_table(tests[tests.selection == selection]))
    doc.heading("5.1 Per data set", level=3)
    doc.paragraph(
        "Mean x − y over each data set's used cases (the data-set values of the *datasets* "
        "level) and the wins/losses/ties of its cases; '*': some of its cases not used (not "
        "computed or V = NaN).")
    said = set()
    for selection in by_dataset.selection.unique():
        doc.paragraph(f"**{selection}**")
        _computed_columns(doc, _breakdown_table(by_dataset[by_dataset.selection == selection]),
                          said)


def _weight_figures(results, out):
    """Draw the weight figures that apply to the cube (:func:`plotting.draw`: in forked
    children, begun before the sections that precede them, whose values they do not need);
    returns, per figure of ``weights.figure_list`` that applies, whether it is drawn."""
    run, held = _inits_run(results), set(results.family_members)
    applying = {}
    for figure in weights.figure_list(results):
        stem, title, family_list, inits, algorithms = figure
        if not (set(inits) & run and {f.label for f in family_list} & held):
            continue
        applying[figure] = weights.has_panels(results, family_list, inits, algorithms)
        if applying[figure]:
            png = out / f"{stem}.png"
            plotting.draw(png, functools.partial(weights.figure, results, title, family_list,
                                                 inits, png, algorithms))
    return applying


def _weights(doc, results, out, written, applying):
    """Section 6; ``applying``: what :func:`_weight_figures` drew."""
    doc.heading("6. Feature weights")
    plotted = weights.plotted_table(results)
    figures = weights.figure_list(results)
    drawn = list(dict.fromkeys(a for figure in figures for a in figure[4]))
    doc.paragraph(
        "Kind random; bars: the mean weight of each feature (column order; the known "
        "uninformative features are the last columns, drawn light) per percentage"
        + (f". {weights.weights_at(results.weights_at, drawn, results.store.is_sparse)}."
           if drawn else "."))
    if figures and figures[0][0] == weights.STUDY_STEM:
        doc.paragraph("The paper's weight figures (Figure 2 and its appendix) draw its "
                      "synthetic, Morris Water Maze and contaminated digits sets; the cube "
                      "holds none of them, so one figure draws its own data sets with known "
                      "uninformative features, every init and weighted algorithm.")
    elif not figures:
        doc.paragraph("No data set of the cube has known uninformative features and weights: "
                      "no weight figure.")
    absent = [figure for figure in figures if figure not in applying]
    if absent:
        doc.paragraph(f"Does not apply: {'; '.join(f[1] for f in absent)} (the study runs none "
                      "of their inits or data sets).")
    for (stem, title, family_list, inits, _algorithms), drawn in applying.items():
        png = out / f"{stem}.png"
        if drawn:
            written.append(png)
            csv = _csv(plotted[plotted.figure == stem] if not plotted.empty else plotted, out,
                       f"{stem}.csv", written)
            doc.image(png, title)
            doc.paragraph(f"Plotted values: `{csv.name}`.")
        else:
            doc.paragraph(f"{title}: not computed (no computed fit of "
                          f"{', '.join(f.label for f in family_list)} with init "
                          f"{', '.join(inits)}).")
    per_setting = weights.share_table(results, ("percent",))
    _csv(per_setting, out, "weight_shares.csv", written)
    summary = weights.share_table(results, ("percent", "init", "kind"))
    _csv(summary, out, "weight_shares_summary.csv", written)
    doc.paragraph(
        "Share of the total (mean) weight on the known uninformative features, and the "
        "fraction of those features whose mean weight is exactly 0 (a mean of 0 means 0 in "
        "every fit averaged), per method and data set, pooled over inits, "
        "kinds and percentages (per init and kind: `weight_shares.csv`).")
    doc.table(summary)


def _claim_rule(prereg):
    """The claims' primary selection, level and alpha: a pre-registered rule's
    (paper-study.md, "The verdict rule"), else the defaults ({})."""
    return {} if prereg is None else {
        "primary": prereg.rule, "alpha": prereg.alpha,
        "level": {"dataset": "datasets", "case": "cases"}[prereg.level]}


def _claim_table(results, found, table1, tests, prereg):
    """``claims.csv``'s table (None where the claims do not apply)."""
    if not found.claims:
        return None
    return claims.table(results, table1, tests, **_claim_rule(prereg))


def _claims(doc, found, table, prereg, out, written):
    doc.heading("7. Paper vs ours")
    if not found.claims:
        doc.paragraph(f"Does not apply: {found.claims_note}.")
        return
    _csv(table, out, "claims.csv", written)
    claims.write_section(doc, table, **{k: v for k, v in _claim_rule(prereg).items()
                                        if k != "primary"})


def _cell_sample(doc, results, out, written):
    doc.heading("8. Checking cells")
    sample = results.cell_sample_table()
    _csv(sample, out, "cells_sample.csv", written)
    n_cells = len(sample[["dataset", *cell_sample.CELL_DIMS]].drop_duplicates())
    doc.paragraph(
        f"`cells_sample.csv` lists {n_cells} cells drawn at random "
        f"({cell_sample.PER_ALGORITHM} per data set and algorithm, seeded) with every value "
        "the cube records for them, one row per s entry. "
        f"`{cell_sample.check_command(results.store.attrs, out)}`, run in this folder, "
        "recomputes each of them from the spec and the data files alone and compares; any "
        "other cell can be checked the same way from a table with the same columns.")


DECISION_SHOWN = ["failures", "test", "n", "wins", "losses", "ties", "mean_diff", "p_holm",
                  "wilcoxon", "p_better", "p_rope", "p_worse", "decision"]
RULE_TITLES = {
    failure_rules.AVAILABLE: "available: each algorithm's mean over its own cells that did "
                             "not fail",
    failure_rules.ITT: "itt (intention to treat): a failed cell counts with the value stated "
                       "in advance ({value})",
    failure_rules.COMPLETE_CASE: "complete-case: only the cells where every algorithm has a "
                                 "value",
}


def _rules_paragraph(chosen):
    value = (f"the F of {chosen.failure_value} in the same cell"
             if isinstance(chosen.failure_value, str) else f"F = {chosen.failure_value:g}")
    return ("Rules for failed fits (docs/method/statistics.md, \"Failed fits\"): "
            + "; ".join(RULE_TITLES[rule].format(value=value) for rule in failure_rules.RULES)
            + ". Bayesian signed-rank test on the data sets' values (the "
            f"values of the exact test): ROPE ±{chosen.rope:g} in mean F, prior strength "
            f"{chosen.prior:g}, decision at probability {chosen.threshold:g}: better, worse, "
            "practically equivalent or undecided. P(x better), P(rope) and P(y better) are "
            "the shares of the posterior draws in which that region is the most probable of "
            "the three (baycomp's `probs`), not the posterior mass of the region. "
            "Wilcoxon: the exact test, Holm over the "
            f"focus's tests of the selection and rule, at alpha {chosen.alpha:g}.")


def _decision_table(table):
    return table[DECISION_SHOWN].rename(columns={"mean_diff": "mean x − y",
                                                  "p_holm": "p (Holm)",
                                                  "p_better": "P(x better)",
                                                  "p_rope": "P(rope)",
                                                  "p_worse": "P(y better)",
                                                  "decision": "Bayesian"})


def _decisions(doc, results, found, prereg, table, out, written):
    """Section 9 (docs/method/statistics.md): the focus against each other algorithm under
    every rule for failed fits with the Bayesian signed-rank test, the per-data-set Bayesian
    correlated t-tests, and Friedman's test with the critical-difference diagram (``table``:
    :func:`decisions.signed_rank_table` of the report's plan)."""
    doc.heading("9. Decisions: failed fits, Bayesian tests and ranks")
    plan, chosen = found.plan, decisions.settings(prereg)
    if plan is None or results.families is None:
        doc.paragraph(f"Not computed: {found.focus_note or 'nothing is computed'}.")
        return
    selection = decisions.primary_selection(results, prereg)
    label = "the pre-registered" if prereg is not None else "the default"
    doc.paragraph(_rules_paragraph(chosen) + f" Selection of s shown: {selection} ({label}; "
                  "every selection in the CSVs).")
    if prereg is None or "failures" not in (results.store.attrs.get("preregistration") or {}):
        doc.paragraph("**Post hoc**: the spec's preregistration states no rule for failed fits "
                      "and no Bayesian test; the analyses of this section were added after "
                      "its results.")
    _csv(table, out, "bayesian_tests.csv", written)
    doc.heading("9.1 Bayesian signed-rank tests over the data sets", level=3)
    doc.table(_decision_table(table[table.selection == selection]))
    doc.paragraph("All selections: `bayesian_tests.csv`.")
    doc.heading("9.2 Per data set: Bayesian correlated t-tests over runs x folds", level=3)
    per_dataset = decisions.dataset_t_table(results, plan, prereg)
    _csv(per_dataset, out, "dataset_t_tests.csv", written)
    shown = per_dataset[per_dataset.primary] if not per_dataset.empty else per_dataset
    if shown.empty:
        doc.paragraph("Not computed.")
    else:
        rho = float(shown.rho.iloc[0])
        doc.paragraph(
            f"Under {selection} with failed fits {chosen.failures}: each data set's mean over "
            "the settings of Analysis 1 and the percentages of F per (run, fold), x − y over "
            f"the cells where both have a value; correlation rho = {rho:g} (1 / n_folds); "
            f"ROPE ±{chosen.rope:g}. Cell: the decision, with P(x better) / P(rope) / "
            "P(y better). Every rule: `dataset_t_tests.csv`.")
        cells = shown.assign(cell=[
            f"{r.decision} ({r.p_better:.2f}/{r.p_rope:.2f}/{r.p_worse:.2f})"
            if r.decision != "not computed" else r.decision for r in shown.itertuples()])
        wide = cells.pivot(index="dataset", columns="test", values="cell")
        wide = wide.loc[shown.dataset.unique(), shown.test.unique()].reset_index()
        wide.columns.name = None
        doc.table(wide)
    doc.heading("9.3 Friedman test, mean ranks and the critical-difference diagram", level=3)
    friedman = decisions.friedman_table(results, plan, prereg)
    _csv(friedman, out, "friedman.csv", written)
    pairs, figure = decisions.cd_pairs_and_figure(results, plan, prereg)
    if figure is None:
        doc.paragraph("Not computed: fewer than two data sets have a value for every "
                      "algorithm under the primary selection and rule.")
        return
    _csv(pairs, out, "cd_pairs.csv", written)
    png = out / "cd_diagram.png"
    plotting.save(figure, png, dpi=110)
    written.append(png)
    doc.paragraph(
        f"Friedman's test (Iman-Davenport F) of equal mean ranks over the algorithms, on the "
        f"data sets where every one has a value; mean ranks (1: the best). Under {selection} "
        f"with failed fits {chosen.failures}; every selection and rule: `friedman.csv`. The "
        "diagram's bars join algorithms that no pairwise exact Wilcoxon test separates after "
        f"Holm over all pairs at alpha {chosen.alpha:g} (`cd_pairs.csv`).")
    doc.table(friedman[friedman.primary].drop(columns=["primary"]))
    doc.image(png, "critical-difference diagram")


def _primary_decisions(doc, results, prereg, table, number):
    """Section 0's table of the primary comparisons under each rule for failed fits, with
    the Bayesian signed-rank test beside the exact test (``table``:
    :func:`decisions.signed_rank_table` of the pre-registered focus's plan)."""
    table = table[table.selection == prereg.rule]
    if table.empty:
        return number
    doc.heading(f"0.{number} Failed fits and Bayesian verdicts", level=3)
    later = not preregistered.states(results.store.attrs, "failures")
    doc.paragraph(
        f"The primary comparisons under each rule for failed fits; the pre-registered rule is "
        f"**{prereg.failures}**"
        + (" (the rule of the analysis above; this preregistration predates the rules and "
           "the Bayesian tests, so the other rules and the Bayesian columns are post hoc)"
           if later else "")
        + ". " + _rules_paragraph(prereg) + " All columns: `bayesian_tests.csv` (section 9).")
    doc.table(_decision_table(table))
    return number + 1


def _primary_plan(results, found, prereg):
    """The Analysis-1 plan of the pre-registered focus: the report's when its focus is it,
    else its own (``pcskm report --focus`` asked for another); None without the focus."""
    if found.plan is not None and found.plan.focus == prereg.focus:
        return found.plan
    if prereg.focus not in performance.algorithms(results):
        return None
    return statistics.study_plan(results, prereg.focus)


def _primary_tests(results, found, tests, plan, prereg):
    """The tests of the pre-registered focus's ``plan`` under the pre-registered rule for
    failed fits: the report's ``tests`` when the plan and the rule are the report's."""
    if plan is None:
        return pd.DataFrame()
    return preregistered.plan_tests(results, plan, prereg,
                                    tests if plan is found.plan else None)


def _with_verdict(table, tests):
    """``_test_table`` of ``tests`` (one analysis and level) with their pre-registered
    verdict."""
    return table.drop(columns=["analysis", "level"]).assign(verdict=tests.verdict.to_numpy())


def _preregistered(doc, results, found, tests, prereg, decided, out, written):
    """Section 0 (docs/reference/spec-toml.md, "[preregistration]"): the primary tests, then
    every other selection as a sensitivity analysis (``decided``: the Bayesian table of the
    report's plan, :func:`decisions.signed_rank_table`). Returns the primary tests."""
    doc.heading("0. Pre-registered analysis")
    if prereg.post_hoc:
        doc.paragraph(f"**POST-HOC CHANGE: {prereg.post_hoc}.** Read the analysis below as "
                      "chosen after the results.")
    plan = _primary_plan(results, found, prereg)
    all_tests = _primary_tests(results, found, tests, plan, prereg)
    primary, sensitivity = preregistered.analyses(all_tests, prereg, results.selections)
    _csv(primary, out, "preregistered_tests.csv", written)
    _csv(sensitivity, out, "sensitivity_tests.csv", written)
    units = "data sets (one value per data set: the mean of V over its cases)" \
        if prereg.level == "dataset" else "cases"
    doc.paragraph(
        "Stated in the spec's `[preregistration]` before any run and recorded in the store "
        "with its cells (a computed store refuses another; docs/reference/spec-toml.md): "
        f"primary selection of s **{prereg.rule}** "
        f"({SELECTION_TITLES.get(prereg.rule, prereg.rule)}); primary comparisons "
        f"**{prereg.focus}** against each other algorithm; unit of the tests: the {units}; "
        f"significance: Holm-adjusted p below {prereg.alpha:g}, Holm over all the primary "
        "tests together (one family). Hypotheses:")
    doc.paragraph("\n".join(f"> {line}" for line in prereg.hypotheses.splitlines()))
    if found.plan is not None and found.plan.focus != prereg.focus:
        doc.paragraph(f"The rest of the report compares {found.plan.focus} (`--focus`); this "
                      f"section keeps the pre-registered focus {prereg.focus}.")
    doc.heading("0.1 Primary tests", level=3)
    if primary.empty or not (primary.n > 0).any():
        doc.paragraph(f"Not computed: no {units.split(' ')[0]} of the primary comparisons "
                      f"has a value under {prereg.rule} in the cube yet.")
        return primary
    method = ("exact signed-rank test (`scipy.stats.wilcoxon(method=\"exact\")`) on the data "
              "sets' values" if prereg.level == "dataset" else
              "signed-rank test on the cases (`method=\"auto\"`, the paper's)")
    doc.paragraph(
        f"x = {prereg.focus}, y = the other algorithm; {method}; p (Holm) over the "
        f"{int(primary.holm_m.max())} primary test(s); the mean x − y with its "
        f"{100 * inference.CONFIDENCE:.0f} % interval from {inference.N_RESAMPLES:,} bootstrap "
        "resamples of the data sets (whole data sets drawn with replacement), the "
        "Hodges-Lehmann estimate with its distribution-free interval and attained level, and "
        "the rank-biserial correlation (section 5 describes each). All columns: "
        "`preregistered_tests.csv`."
        + ("" if prereg.failures == failure_rules.AVAILABLE else
           f" Failed fits count under the pre-registered rule **{prereg.failures}** "
           "(section 0.2 shows the others)."))
    if prereg.level == "dataset":
        n = int(primary.n.max())
        doc.paragraph(f"With {n} data set{'s' if n > 1 else ''}, no exact two-sided p can be "
                      f"below 2 / 2^{n} = {2 / 2 ** n:.3g}.")
    doc.table(_with_verdict(_test_table(primary), primary))
    first = 2
    if plan is not None:
        bayes = (decided if plan is found.plan
                 else decisions.signed_rank_table(results, plan, prereg))
        first = _primary_decisions(doc, results, prereg, bayes, first)
    reference = (preregistered.reference_arm(results, plan, prereg) if plan is not None
                 else pd.DataFrame())
    if not reference.empty:
        _csv(reference, out, "reference_arm_tests.csv", written)
        doc.heading(f"0.{first} Reference arm: nothing thresholded", level=3)
        doc.paragraph(
            f"{prereg.focus} with s chosen by `{preregistered.REFERENCE}` (the path's first s "
            "at which no weight is zero; docs/method/selection.md §6) against "
            f"{prereg.focus} under {prereg.rule}, the same test at the same level, not "
            "adjusted and not in the primary family, so its verdict decides no hypothesis "
            "of the family (read it beside the Bayesian test of the same pair, "
            "`bayesian_tests.csv`, which may call it practically equivalent): a difference "
            f"in favour of {prereg.rule} is what sparsity adds to the constraints and the "
            "weighting. "
            f"{prereg.focus} under `{preregistered.REFERENCE}` against each other algorithm "
            "is its sensitivity section below. All columns: `reference_arm_tests.csv`.")
        doc.table(_with_verdict(_test_table(reference), reference))
        first += 1
    doc.paragraph(
        f"Sections 0.{first} on: the same tests under every other selection of s of the "
        "cube, each with Holm over its own tests: sensitivity analyses that decide "
        "nothing, not the pre-registered result (`paper` and `oracle` read the test labels). "
        f"Among {sensitivity.selection.nunique()} of them a verdict that differs from the "
        "primary one can arise by chance, and no Holm spans them; quote one with its "
        "Bayesian test (`bayesian_tests.csv`). All columns: `sensitivity_tests.csv`.")
    for number, selection in enumerate(sensitivity.selection.unique(), first):
        part = sensitivity[sensitivity.selection == selection]
        doc.heading(f"0.{number} Sensitivity analysis: {selection}", level=3)
        doc.paragraph(SELECTION_TITLES.get(selection, selection))
        doc.table(_with_verdict(_test_table(part), part))
    return primary


def _robustness(doc, results, found, cases, prereg, out, written):
    """Section 10 (docs/method/statistics.md, "Fragility of the primary tests"):
    ``robustness.csv`` of the pre-registered tests, else of the focus against each other
    algorithm under the primary selection at the data-set level (``cases``: the report's case
    rows, under the rule "available"). Returns the table."""
    chosen = decisions.settings(prereg)
    if prereg is not None:
        plan = _primary_plan(results, found, prereg)
        rule, level, rule_for_failures = prereg.rule, prereg.level, prereg.failures
    else:
        plan, level = found.plan, "dataset"
        rule, rule_for_failures = decisions.primary_selection(results, None), \
            failure_rules.AVAILABLE
    doc.heading("10. Fragility of the primary tests")
    if plan is None:
        doc.paragraph("Not computed: no focus comparison.")
        return pd.DataFrame(columns=robustness.COLUMNS)
    if plan is not found.plan or rule_for_failures != failure_rules.AVAILABLE:
        cases = statistics.analyses(results, plan, rule_for_failures, tests=False)[1]
    table = robustness.table(robustness.units(cases, rule, level), rule, level, chosen.alpha,
                             chosen.rope)
    _csv(table, out, robustness.FILE, written)
    family = ("the pre-registered tests (section 0)" if prereg is not None else
              f"{plan.focus} against each other algorithm under {rule} at the data-set level, "
              "Holm over those tests (the Wilcoxon column of section 9)")
    doc.paragraph(
        f"How much each verdict of {family} rests on a few data sets and on the test: the "
        "largest Holm p and the number of verdicts that change when one (LOO) or two (LTO) "
        "data sets are left out of every test at once (every subset up to "
        f"{robustness.MAX_SUBSETS:,}, else {robustness.MAX_SUBSETS:,} drawn), the sign test "
        "with Holm over the same family, and whether the Hodges-Lehmann interval straddles "
        f"the ROPE ±{chosen.rope:g}. Fragile: leaving one data set out changes the verdict, "
        f"or leaving two out changes it in at least {robustness.FRAGILE_SHARE:.0%} of the "
        "subsets (docs/method/statistics.md). All columns: `robustness.csv`.")
    if table.empty:
        return table
    doc.table(pd.DataFrame({
        "test": table.comparison, "verdict": table.verdict,
        "p (Holm)": [_number(v, ".3g") for v in table.holm_p],
        "LOO: max p (Holm), changed": [f"{_number(p, '.3g')}, {f} of {n}" for p, f, n in
                                       zip(table.loo_max_holm_p, table.loo_flips,
                                           table.loo_subsets, strict=True)],
        "LTO: max p (Holm), changed": [f"{_number(p, '.3g')}, {f} of {n} ({m})"
                                       for p, f, n, m in
                                       zip(table.lto_max_holm_p, table.lto_flips,
                                           table.lto_subsets, table.lto_method, strict=True)],
        "sign test: wins/losses, p (Holm), verdict": [
            f"{w}/{lo}, {_number(p, '.3g')}, {v}" for w, lo, p, v in
            zip(table.sign_wins, table.sign_losses, table.sign_holm_p, table.sign_verdict,
                strict=True)],
        "HL interval": [f"[{_number(lo, '+.4f')}, {_number(hi, '+.4f')}]" for lo, hi in
                        zip(table.hl_low, table.hl_high, strict=True)],
        "straddles ROPE": table.hl_straddles_rope.map({True: "yes", False: "no"}),
        "fragile": table.fragile.map({True: "**yes**", False: "no"})}))
    return table


def _fragility_lines(robust):
    """The headline's fragility of each primary test (:func:`robustness.headline_note`)."""
    if robust is None or robust.empty:
        return []
    return ["**Fragility** (section 10; the rule: docs/method/statistics.md):",
            "\n".join(f"- {row.comparison}: {robustness.headline_note(row)}"
                      for row in robust.itertuples())]


def _computed_line(results, totals):
    """What the cube holds in one sentence: data sets, algorithms, cells and failed fits."""
    labels, found = list(results.family_labels.values()), performance.algorithms(results)
    count = dict(zip(totals["count"], totals.value, strict=True)) if totals is not None else {}
    cells = (f"{count['computed_cells']:,} of {count['cells']:,} cells computed, "
             f"{count['failed_fits']:,} of {count['fits']:,} fits failed"
             if count else "nothing computed")
    return (f"**Computed**: {len(labels)} data set(s) ({', '.join(labels)}); {len(found)} "
            f"algorithm(s) ({', '.join(found)}); {cells} (section 1).")


def _headline(results, found, tests, primary, prereg):
    """The headline comparisons: the primary tests, else the focus against each other
    algorithm under the main selections at the data-set level."""
    if prereg is not None:
        if primary is None or primary.empty:
            return [f"**Headline** (pre-registered): not computed yet under {prereg.rule}."]
        rows = [f"{r.test}: {r.verdict} (p {_number(r.p_value, '.2g')}, Holm "
                f"{_number(r.p_holm, '.2g')}; mean x − y "
                f"{_interval(r.mean_diff, r.boot_low, r.boot_high)} data-set bootstrap; HL "
                f"{_number(r.hl_estimate, '+.4f')}; rank-biserial "
                f"{_number(r.rank_biserial, '+.2f')}; {r.wins}/{r.losses}/{r.ties})"
                for r in primary.itertuples()]
        return [f"**Headline: the pre-registered tests** ({prereg.focus} vs each other "
                f"algorithm under {prereg.rule}, {prereg.level} level, Holm over all of them, "
                f"alpha {prereg.alpha:g}; section 0):", "\n".join(f"- {r}" for r in rows)]
    if found.plan is None or tests.empty:
        return [f"**Headline**: no focus comparison ({found.focus_note or 'no test'})."]
    main = [name for name in results.selections if BY_NAME[name].main]
    table = comparison.analysis1_tests(tests)
    table = table[(table.level == "datasets") & table.selection.isin(main)]
    family = tests[(tests.level == "datasets") & tests.selection.isin(main)]  # with holm_m
    n, m = int(table.n.max()) if len(table) else 0, int(family.holm_m.max()) if len(table) else 1
    decides = statistics.smallest_holm_p(n, m) < claims.ALPHA
    cells = ([comparison.cell(row) for row in table.itertuples()] if decides
             else [f"{row.wins}/{row.losses}" for row in table.itertuples()])
    wide = table.assign(cell=cells).pivot(index="test", columns="selection", values="cell")
    wide = wide.loc[table.test.unique(), [s for s in main if s in wide.columns]]
    wide.columns.name = None
    if not decides:
        return [_undecidable(results, found.plan, n, m)] + (
            [f"{found.plan.focus}'s wins/losses of the data sets under the main selections:",
             table_markdown(wide.reset_index())] if n > 1 else [])
    return [f"**Headline**: {found.plan.focus} against each other algorithm at the data-set "
            "level under the main selections: verdict (Holm-adjusted p; wins/losses of the "
            f"data sets); no pre-registered rule (sections 3.4 and 5 for every test).",
            table_markdown(wide.reset_index())]


def _undecidable(results, plan, n, m):
    """The headline of a study whose tests across data sets cannot reach significance: why,
    in one sentence, from the number of data sets ``n`` the tests use and the size ``m`` of
    their Holm family, and what to run instead."""
    labels = results.family_labels  # family label -> the label shown
    read = [labels[label] for label in plan.datasets if label in labels]
    extra = [shown for label, shown in labels.items() if label not in plan.datasets]
    besides = (f"; {', '.join(extra)} {'is' if len(extra) == 1 else 'are'} not among the "
               "paper's six data sets that its Analysis 1 reads" if extra else "")
    need = statistics.values_needed(m, claims.ALPHA)
    return (f"**Headline**: no test across data sets can decide here: {plan.focus}'s "
            f"comparisons use {n} data set{'' if n == 1 else 's'} "
            f"({', '.join(read) or 'none computed'}{besides}), and an exact signed-rank test "
            f"adjusted by Holm over {m} test{'' if m == 1 else 's'} can reach p < "
            f"{claims.ALPHA:g} only with {need} or more (with {n}, its smallest p is "
            f"{statistics.smallest_holm_p(n, m):.3g}); a study with more data sets can "
            "(`pcskm run extended`: 20, docs/results/extended), and section 5 gives every "
            "test.")


def _no_used_case(results, found, tests, most=6):
    """When the focus has no used case under any selection (every comparison n/a): why, in
    the summary's words, with the settings whose every cell failed (a case's value V is the
    mean over its percentages, so one such percentage makes it NaN, §10) and the focus's
    share of failed fits there (``failures.csv``). Empty otherwise."""
    if found.plan is None or tests.empty or (tests.n > 0).any():
        return []
    focus = found.plan.focus
    table = failures.family_table(results)
    table = table[table.algorithm == focus] if not table.empty else table
    n_nan, n_missing = int(tests.dropped_nan.max()), int(tests.not_computed.max())
    why = [f"{n_nan} with V = NaN"] if n_nan else []
    why += [f"{n_missing} not computed"] if n_missing else []
    line = (f"**No comparison**: {focus} has no used case under any selection "
            f"({'; '.join(why) or 'none computed'}; section 5), so every test below is n/a.")
    failed = table[(table.cells > 0) & (table.cells_all_failed == table.cells)] \
        if not table.empty else table
    if failed.empty:
        return [line]
    shares = [f"{r.dataset} / {r.init} / {r.kind} / {r.percent:g} %: {r.failed_fits} of "
              f"{r.fits} fits failed" for r in failed.itertuples()]
    rest = [f"{len(shares) - most} more in `failures.csv`"] if len(shares) > most else []
    total = table.failed_fits.sum() / table.fits.sum()
    return [f"{line} Every cell of {focus} failed at these settings, which makes the value "
            f"of their cases NaN ({total:.0%} of its fits failed in all; section 1.1): "
            f"{'; '.join(shares[:most] + rest)}."]


def _summary(results, found, tests, primary, prereg, totals, contents, robust=None):
    """The one-screen summary at the top of report.md (docs/guide/quick-study.md)."""
    lines = ["## Summary", _computed_line(results, totals),
             *code_versions.headline(results.store),
             *baseline.summary(results.baseline),
             *_no_used_case(results, found, tests),
             *_headline(results, found, tests, primary, prereg), *_fragility_lines(robust),
             "**Contents**:"]
    lines.append("\n".join(f"- [{title}](#{anchor(title)})" + (f": {note}" if note else "")
                           for title, note in contents))
    return lines


class Progress:
    """One line per section of the report on the ``pcskm`` logger (stderr in the command
    line), with the seconds since the report began."""

    def __init__(self):
        self.start = time.perf_counter()

    def __call__(self, what):
        log.info("report: %s (%.0f s)", what, time.perf_counter() - self.start)


def write_document(results, out, focus=None, progress=None, grids="primary"):
    """Write every table, figure and report.md of ``results`` into ``out`` (``focus``: see
    :func:`study.study`; ``grids``: the performance grids drawn, of the primary selection or
    of ``"all"`` main selections, :func:`_performance`); returns the path of report.md. The
    figures are rendered in child processes while the rest is written
    (:func:`plotting.parallel_saves`); ``progress``: a :class:`Progress` begun earlier, else
    one begun now."""
    with plotting.parallel_saves():
        return _write_document(results, out, focus, progress or Progress(), grids)


def _write_document(results, out, focus, progress, grids):
    with contextlib.ExitStack() as background:
        return _write_sections(results, out, focus, progress, grids, background)


def _write_sections(results, out, focus, progress, grids, background):
    """The sections of report.md in order; the Bayesian tests of section 9 and the claims of
    section 7 are computed in forked children (``background``: the ExitStack that ends them)
    while the sections before them are written."""
    written = []
    doc = Document()
    found = study.study(results, focus)
    prereg = preregistered.stored(results.store.attrs)
    doc.heading(f"Report of {results.store.path.name}", level=1)
    summary_at = doc.placeholder()
    weight_figures = _weight_figures(results, out)
    progress("the Wilcoxon analyses")
    tests, cases = statistics.analyses(results, found.plan)
    progress("the tests under every rule for failed fits")
    decided = background.enter_context(forking.Background(lambda: (
        decisions.signed_rank_table(results, found.plan, prereg,
                                    decisions.case_rows(results, found.plan, cases))
        if found.plan is not None else pd.DataFrame(columns=decisions.COLUMNS))))
    primary = (_preregistered(doc, results, found, tests, prereg, decided.result(), out,
                              written)
               if prereg is not None else None)
    progress("coverage, failures and Table 1")
    _header(doc, results, found, out, written)
    primary_selection = decisions.primary_selection(results, prereg)
    if results.baseline is not None:
        for line in baseline.paragraph(results.baseline, primary_selection):
            doc.paragraph(line)
    totals = _coverage(doc, results, out, written)
    _failures(doc, results, out, written)
    table1 = _table1(doc, results, found, out, written)
    judged = background.enter_context(forking.Background(
        lambda: _claim_table(results, found, table1, tests, prereg)))
    progress("3. choosing s")
    by_dataset = statistics.breakdown(cases)
    _choosing_s(doc, results, found.plan, tests, by_dataset, out, written)
    progress("4. performance figures")
    _performance(doc, results, out, written, grids, primary_selection)
    progress("5. Wilcoxon tables")
    _statistics(doc, found.plan, tests, cases, by_dataset, out, written)
    progress("6. feature weights")
    _weights(doc, results, out, written, weight_figures)
    progress("7. the paper's claims")
    _claims(doc, found, judged.result(), prereg, out, written)
    progress("8-9. cell sample and Bayesian tests")
    _cell_sample(doc, results, out, written)
    _decisions(doc, results, found, prereg, decided.result(), out, written)
    progress("10. fragility of the primary tests")
    robust = _robustness(doc, results, found, cases, prereg, out, written)
    baseline.write(results, primary_selection, out, written)
    doc.heading("Files")
    doc.bullets([f"`{path.name}`" for path in written])
    notes = {"2. Table 1: data set constraints": "" if found.table1 else "does not apply",
             "7. Paper vs ours": "" if found.claims else "does not apply",
             "5. Wilcoxon signed-rank analyses": "" if found.plan else "not computed"}
    doc.fill(summary_at, _summary(results, found, tests, primary, prereg, totals,
                                  [(title, notes.get(title, "")) for title in doc.headings()],
                                  robust))
    progress("report.md, waiting for the figures")
    return doc.write(out / "report.md")

"""Feature weights (docs/method/protocol.md §11, paper Figure 2 and appendix): mean weights per
percentage, the bar figures (a log y axis for panels whose weights span more than two
decades), and the share of weight on the known uninformative features.

The weights drawn are those at the s a selection chose in each cell (:func:`default_selection`:
cv when the cube has its scores, else paper; the caller may name another), read from the
cube's ``weights_per_s`` and averaged over the cells whose fit at that s did not fail; a
non-sparse algorithm has its only fit (MPCKM: its metric diagonal). A store made before
``weights_per_s`` keeps only each SKM/PCSKM cell's mean over the s values whose fit did not
fail: there the figures fall back to the mean over *all* s of the grid, runs and folds (the
cell means weighted by their number of non-failed fits, exact pooling) and say so.

The weighted algorithms are those whose stored weights are not all NaN or 1
(:func:`weighted_algorithms`): SKM, PCSKM, MPCKM and any user estimator with weights.
"""

import numpy as np
import pandas as pd
import xarray as xr

from pcskm.runner.store import WEIGHTS_PER_S

from . import families, performance, plotting
from . import selection as selections
from .fits import BLOCK_DIMS, CELL_DIMS, FIT_DIMS, algorithm_chunks, chunk_blocks, quiet

FIGURE_ALGORITHMS = ("SKM", "PCSKM", "MPCKM")  # Figure 2's rows: gray, blue, red
COLOURS = {"SKM": "0.45", "PCSKM": "tab:blue", "MPCKM": "tab:red"}
KIND = "random"
CELL = ("run", "fold")
BAR_WIDTH = 0.85  # of a feature's slot
# (file stem, title, families, inits): docs/method/protocol.md §11
FIGURES = (
    ("figure2_weights", "Figure 2: feature weights (Seeding, DKM++; random constraints)",
     families.WEIGHT_FAMILIES, ("seeding", "dkm++")),
    ("figureA3_weights_robin", "Appendix: feature weights with ROBIN(D) (random constraints)",
     families.WEIGHT_FAMILIES, ("robin",)),
    ("figureA4_weights_maximin",
     "Appendix: feature weights with Maximin(D) (random constraints)",
     families.WEIGHT_FAMILIES, ("maximin",)),
    ("figureA5_weights_contaminated",
     "Appendix: feature weights on the contaminated digits (subset means; random constraints)",
     families.CONTAMINATED, ("seeding", "dkm++", "robin", "maximin")),
)
# A cube with none of the FIGURES' data sets (a study of the user's own) gets one figure of
# its data sets with known uninformative features, every init and weighted algorithm
STUDY_STEM, STUDY_TITLE = "figure_weights", "Feature weights (random constraints)"
INIT_LABELS = {"seeding": "Seeding", "dkm++": "DKM++", "robin": "ROBIN(D)",
               "maximin": "Maximin(D)"}
FEATURE_FONTSIZE = 7  # points, the bars' feature labels
SPARSE_ALGORITHMS = ("SKM", "PCSKM")  # one weight scale per column, shared by their panels
LOG_SPAN = 100  # positive weights spanning more than two decades: a log y axis
MIN_LABELLED_SLOT = 0.125  # inches per bar slot needed to label the bars of every group
MAX_LABELLED_WIDTH = 16.0  # inches: the widest panel sized to label every bar
# A data set with more features than this has image panels (a row per percentage, a column
# per feature): its bars would be under a pixel wide at any width a figure can be read at
IMAGE_FEATURES = 100
IMAGE_WIDTH = 4.6  # inches: an image panel


MEAN_OVER_S = "mean over s"  # what the weights of a store without weights_per_s are


def default_selection(names):
    """The selection Figure 2 draws the weights at, among the cube's selections ``names``:
    cv when the cube has its scores, else paper."""
    return "cv" if "cv" in names else "paper"


def weighted_algorithms(group):
    """The algorithms of the cube group ``group`` whose stored weights (``weights``) are not
    all NaN or 1: those that learn feature weights, read one chunk at a time
    (``fits.chunk_blocks``)."""
    learns = np.zeros(group.sizes["algorithm"], bool)
    for block in chunk_blocks(group.weights):
        values = group.weights.isel(block).transpose("algorithm", ...).values
        learns[block["algorithm"]] |= ~(np.isnan(values) | (values == 1)).reshape(
            len(values), -1).all(axis=1)
    return [str(algorithm) for algorithm, weighted in zip(group.algorithm.values, learns,
                                                          strict=True) if weighted]


def means(store, name, fits, selected=None, rule=None):
    """Weight sums and fit counts of data set ``name`` for the weighted algorithms, per
    (algorithm, init, kind, percent, feature): ``total`` (sum of weights), ``n_fits``; the
    mean is ``total / n_fits``. With ``rule`` (a selection of ``selected``, the
    :func:`.selection.select` Dataset) and a store with ``weights_per_s``, the weights of each
    cell at the s ``rule`` chose there (cells it covers whose fit there did not fail); else
    every non-failed fit of every s. The ``weights_at`` attribute says which: ``rule`` or
    :data:`MEAN_OVER_S`."""
    group = store.group(name)
    keep = weighted_algorithms(group)
    if rule is not None and WEIGHTS_PER_S in group.variables:
        out = _at_selected(group, keep, fits, selected, rule)
    else:
        weights = group.weights.sel(algorithm=keep).astype(np.float64).load()
        count = (fits.applies & fits.computed & ~fits.failed).sel(algorithm=keep).sum(
            "sparsity")
        out = xr.Dataset({
            "total": (weights.fillna(0.0) * count).sum(CELL),
            "n_fits": count.sum(CELL),
        })
        rule = MEAN_OVER_S
    return out.assign_attrs(weights_at=rule).assign_coords(
        uninformative=fits.uninformative,
        feature_name=("feature", list(fits.attrs.get("feature_names", []))
                      or [str(f) for f in fits.feature.values]),
    ).assign_attrs(feature_quality=fits.attrs.get("feature_quality", ""))


def _at_selected(group, keep, fits, selected, rule):
    """``total`` and ``n_fits`` of the weights at the s that ``rule`` chose per cell (see
    :func:`means`), read one chunk of ``weights_per_s`` at a time (``fits.algorithm_chunks``)."""
    variable = selections.BY_NAME[rule].variable
    chosen = selected.sel(algorithm=keep)
    counted = chosen.computed & chosen.get(f"{variable}_covered", True)
    s = chosen[f"{variable}_s"].broadcast_like(counted).transpose(*CELL_DIMS)
    counted = counted.broadcast_like(s).transpose(*CELL_DIMS).values
    per_s = group[WEIGHTS_PER_S].transpose(*FIT_DIMS, "feature")
    entries = selections.chosen_entries(s, group.sparsity,
                                        fits.sparse.sel(algorithm=keep)).transpose(
        *CELL_DIMS).values
    shape = (*s.shape[:4], group.sizes["feature"])
    total, n_fits = np.zeros(shape), np.zeros(shape[:-1], np.int64)
    # in the group's order, which is keep's (weighted_algorithms)
    positions = np.flatnonzero(np.isin(group.algorithm.values, keep))
    for inside, region, weights in algorithm_chunks(per_s, positions):
        at = (inside, *region)
        # float32: the chosen s picked, then widened
        picked = np.take_along_axis(weights, np.clip(entries[at], 0, None)[..., None, None],
                                    axis=-2)[..., 0, :].astype(np.float64)
        ok = counted[at] & (entries[at] >= 0) & ~np.isnan(picked).any(axis=-1)
        total[at] = np.where(ok[..., None], picked, 0.0).sum(axis=(4, 5))
        n_fits[at] = ok.sum(axis=(4, 5))
    coords = {d: s[d] for d in BLOCK_DIMS}
    return xr.Dataset({
        "total": ((*BLOCK_DIMS, "feature"), total),
        "n_fits": (BLOCK_DIMS, n_fits),
    }, coords={**coords, "feature": group.feature})


def combine(per_member):
    """A family's mean weights: per member total / n_fits, then the mean over members (the
    digits subsets in the cube, :func:`pcskm.experiments.report.selection.combine`);
    ``n_fits`` summed."""
    with quiet():
        member_means = [m.total / m.n_fits.where(m.n_fits > 0) for m in per_member]
        stacked = xr.concat(member_means, dim="subset", join="outer")
        out = xr.Dataset({
            "mean": stacked.mean("subset"),
            "n_fits": xr.concat([m.n_fits for m in per_member], dim="subset", join="outer",
                                fill_value=0).sum("subset"),
        })
    first = per_member[0]
    return out.assign_coords(uninformative=first.uninformative,
                             feature_name=first.feature_name).assign_attrs(
        feature_quality=first.attrs.get("feature_quality", ""),
        weights_at=first.attrs["weights_at"])


def pooled(member, dims):
    """Mean weights of one data set pooled over ``dims`` (e.g. percent, init, kind)."""
    with quiet():
        return member.total.sum(dims) / member.n_fits.sum(dims).where(
            member.n_fits.sum(dims) > 0)


def _shares(mean):
    """Share of the summed mean weight on the uninformative features, the fraction of those
    features with mean weight exactly 0, and the mean weight of each feature group."""
    bad = mean.uninformative
    with quiet():
        return xr.Dataset({
            "share_uninformative": mean.where(bad).sum("feature") / mean.sum("feature"),
            "zero_fraction": (mean.where(bad) == 0).sum("feature") / bad.sum(),
            "mean_w_uninformative": mean.where(bad).mean("feature"),
            "mean_w_other": mean.where(~bad).mean("feature"),
        }).where(mean.notnull().all("feature"))


def share_table(results, pool):
    """Rows per family and algorithm (and the dims not in ``pool``) with fits: the weight
    shares of ``_shares`` for the family's mean weights pooled over ``pool`` (members pooled
    first, then averaged over the subsets) and the number of fits pooled."""
    rows = []
    for label, members in results.family_members.items():
        if not all(name in results.weight_means for name in members):
            continue
        with quiet():
            member_means = [pooled(results.weight_means[name], pool) for name in members]
            mean = xr.concat(member_means, dim="subset", join="outer").mean("subset")
        n_fits = xr.concat([results.weight_means[name].n_fits.sum(pool) for name in members],
                           dim="subset", join="outer", fill_value=0).sum("subset")
        first = results.weight_means[members[0]]
        mean = mean.assign_coords(uninformative=first.uninformative)
        frame = _shares(mean).assign(n_fits=n_fits).to_dataframe().reset_index()
        frame = frame[frame.n_fits > 0].drop(
            columns=[c for c in ("uninformative",) if c in frame])
        frame.insert(0, "dataset", results.family_labels[label])
        frame.insert(1, "feature_quality", first.attrs.get("feature_quality", ""))
        rows.append(frame)
    if not rows:
        return pd.DataFrame()
    table = pd.concat(rows, ignore_index=True)
    for column in ("algorithm", "init", "kind"):
        if column in table:
            table[column] = table[column].astype(str)
    return table


def figure_list(results):
    """The weight figures of the report as (stem, title, families, inits, algorithms): the
    paper's :data:`FIGURES` (rows: those of :data:`FIGURE_ALGORITHMS` the cube has) when the
    cube holds one of their data sets; else one figure of the cube's data sets with known
    uninformative features, its inits and its weighted algorithms (``STUDY_STEM``), or
    none."""
    drawn = {f.label for _stem, _title, family_list, _inits in FIGURES for f in family_list}
    if drawn & set(results.family_members):
        present = performance.algorithms(results)
        rows = tuple(a for a in FIGURE_ALGORITHMS if a in present)
        return [(*figure, rows) for figure in FIGURES]
    weighted = [f for f in families.reported(results.store.names)
                if f.label in results.family_weights]
    if not weighted:
        return []
    found = {str(a) for f in weighted for a in results.family_weights[f.label].algorithm.values}
    inits = tuple(str(i) for i in results.families.init.values)
    return [(STUDY_STEM, STUDY_TITLE, tuple(weighted), inits,
             tuple(a for a in performance.algorithms(results) if a in found))]


def weights_at(rule, algorithms=FIGURE_ALGORITHMS, is_sparse=SPARSE_ALGORITHMS.__contains__):
    """What the weights drawn of ``algorithms`` are, for a caption naming only those: the
    sparse algorithms' (``is_sparse``) at the s of selection ``rule``, or
    (:data:`MEAN_OVER_S`) their mean over every s; MPCKM's metric diagonal and the weights
    of any algorithm but SKM and PCSKM on their own y scale."""
    parts = []
    sparse = ", ".join(a for a in algorithms if is_sparse(a))
    if sparse and rule == MEAN_OVER_S:
        parts.append(f"{sparse}: mean over every s of the grid, runs and folds (non-failed "
                     "fits; this store keeps no weights per s)")
    elif sparse:
        parts.append(f"{sparse}: weights at the s the {rule} selection chose in each run and "
                     "fold, mean over runs and folds")
    if "MPCKM" in algorithms:
        parts.append("MPCKM: metric diagonal, own y scale")
    rest = [a for a in algorithms if a not in (*SPARSE_ALGORITHMS, "MPCKM")]
    if rest:
        parts.append(f"{', '.join(rest)}: own y scale")
    return "; ".join(parts)


def plotted_table(results):
    """The plotted values of every weight figure (:func:`figure_list`): one row per (figure,
    family, init, algorithm, percent, feature)."""
    rows = []
    for stem, _title, family_list, inits, algorithms in figure_list(results):
        for family in family_list:
            data = results.family_weights.get(family.label)
            if data is None:
                continue
            for init in inits:
                for algorithm in algorithms:
                    panel = _panel(data, algorithm, init)
                    if panel is None:
                        continue
                    frame = panel.to_dataframe(name="mean_weight").reset_index()
                    frame = frame[["percent", "feature", "feature_name", "uninformative",
                                   "mean_weight"]]
                    frame["y_scale"] = y_axis(axis_panels(data, algorithm, init, inits))[0]
                    frame["weights_at"] = data.attrs["weights_at"]
                    frame.insert(0, "figure", stem)
                    frame.insert(1, "dataset", results.family_labels[family.label])
                    frame.insert(2, "init", init)
                    frame.insert(3, "algorithm", algorithm)
                    rows.append(frame)
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


def axis_panels(data, algorithm, init, inits):
    """The panels of a figure column (the figure's ``inits``) that share the y axis of
    ``(algorithm, init)``: every SKM and PCSKM panel for those two, the panel alone for
    MPCKM (its own scale)."""
    keys = ([(a, i) for i in inits for a in SPARSE_ALGORITHMS]
            if algorithm in SPARSE_ALGORITHMS else [(algorithm, init)])
    return [p for p in (_panel(data, a, i) for a, i in keys) if p is not None]


def y_axis(panels):
    """``(scale, low, high)`` of a y axis showing ``panels``: ``log`` from half the smallest
    positive weight to 1.5 times the largest when the positive weights span more than
    ``LOG_SPAN``, else ``linear`` from 0 to 1.05 times the largest (1 if all are 0)."""
    values = np.concatenate([p.values.ravel() for p in panels])
    positive = values[values > 0]
    if positive.size and positive.max() > LOG_SPAN * positive.min():
        return "log", float(positive.min()) / 2, 1.5 * float(positive.max())
    top = float(np.nanmax(values, initial=0.0))
    return "linear", 0.0, 1.05 * top if top > 0 else 1.0


def _panel(data, algorithm, init):
    """(percent, feature) mean weights of one panel, or None if not computed."""
    try:
        mean = data["mean"].sel(algorithm=algorithm, init=init, kind=KIND)
        n_fits = data["n_fits"].sel(algorithm=algorithm, init=init, kind=KIND)
    except KeyError:
        return None
    if int(n_fits.sum()) == 0:
        return None
    return mean.dropna("percent", how="all")


def colour(algorithm):
    """Figure 2's colours for its three algorithms, the performance figures' for any other."""
    return COLOURS.get(algorithm) or performance.colour(algorithm)


def _layout(results, family_list, inits, algorithms):
    """A weight figure's panels: ``(expected, shown, rows, panels)``, whether the spec has
    each (family, init, algorithm), the families and (init, algorithm) rows shown, and each
    panel's weights (None: not computed)."""
    expected = {(f.label, init, a): families.count(results.families, "n_expected", f.label,
                                                   algorithm=a, init=init, kind=KIND) > 0
                for f in family_list for init in inits for a in algorithms}
    shown = [f for f in family_list
             if any(expected[(f.label, i, a)] for i in inits for a in algorithms)]
    rows = [(init, a) for init in inits for a in algorithms
            if any(expected[(f.label, init, a)] for f in shown)]
    panels = {(f.label, init, a): _panel(results.family_weights[f.label], a, init)
              if f.label in results.family_weights else None
              for f in shown for init, a in rows}
    return expected, shown, rows, panels


def has_panels(results, family_list, inits, algorithms=FIGURE_ALGORITHMS):
    """Whether the weight figure of ``family_list``, ``inits`` and ``algorithms`` has a
    computed panel (:func:`figure` draws it)."""
    return any(panel is not None
               for panel in _layout(results, family_list, inits, algorithms)[3].values())


def figure(results, title, family_list, inits, path, algorithms=FIGURE_ALGORITHMS):
    """Draw one weight figure (rows: init x ``algorithms``; columns: data sets) into
    ``path``; returns the Figure, or None (drawing nothing) when none of its panels is
    computed.

    Only the data sets, inits and algorithms of the spec are drawn; a panel of the spec not
    computed yet says "not computed". The bars carry their features' names (every bar when
    there is room, else as many of the first group's as fit); the percentages label the top
    axis.
    """
    from matplotlib.patches import Rectangle

    expected, shown, rows, panels = _layout(results, family_list, inits, algorithms)
    if all(panel is None for panel in panels.values()):
        return None
    widths = [_panel_width([panels[(f.label, *row)] for row in rows]) for f in shown]
    used = [width is not None for width in widths]
    images = any(_is_image(panel) for panel in panels.values() if panel is not None)
    names = [str(name) for f, u in zip(shown, used, strict=True) if u
             for name in results.family_weights[f.label].feature_name.values]
    labels_height = max(plotting.text_width(name, FEATURE_FONTSIZE) for name in names) + 0.1
    legend = [*algorithms, "known uninformative feature (shaded slot, light bar, grey "
              "label" + ("; grey column of an image" if images else "") + ")"]
    frame = plotting.panel_grid(
        [w or 1.2 for w in widths], [1.35] * len(rows),
        f"{title}\n{weights_at(results.weights_at, algorithms, results.store.is_sparse)}; "
        "log y axis where a panel's weights span more than two decades (a weight of 0 has "
        "no bar)" + (f"; data sets of more than {IMAGE_FEATURES} features as images, one row "
                     "per percentage, the weight as colour on that scale (0: white)"
                     if images else ""), legend,
        left=0.75, top=0.6, bottom=0.9 + labels_height, wgap=0.75, hgap=0.65 + labels_height)
    fig, grid = frame.fig, frame.grid
    for j, family in enumerate(shown):
        label = results.family_labels.get(family.label, family.label)
        if not used[j]:
            ax = fig.add_subplot(grid[:, j])
            ax.set_title(label.replace(" ", "\n", 1), fontsize=9)
            plotting.not_computed(ax, "not\ncomputed")
            continue
        data = results.family_weights[family.label]
        quality = data.attrs.get("feature_quality", "")
        for r, (init, algorithm) in enumerate(rows):
            ax = fig.add_subplot(grid[r, j])
            panel = panels[(family.label, init, algorithm)]
            name = f"{label} ({plotting.quality_text(quality)})" if quality else label
            ax.set_title(f"{name}: {algorithm}, {INIT_LABELS.get(init, init)}", fontsize=9)
            if panel is None:
                plotting.not_computed(ax, "not computed" if expected[(family.label, init,
                                                                      algorithm)]
                                      else "not in the spec")
                continue
            scale, low, high = y_axis(axis_panels(data, algorithm, init, inits))
            what = ("metric a" if algorithm == "MPCKM" else "weight") + (
                " (log)" if scale == "log" else "")
            last = r == len(rows) - 1 or panels[(family.label, *rows[r + 1])] is None
            if _is_image(panel):
                _image(ax, panel, colour(algorithm), (scale, low, high), widths[j], what)
                if last:
                    ax.set_xlabel("features", fontsize=8)
                continue
            _bars(ax, panel, colour(algorithm), widths[j])
            ax.set_yscale(scale)
            ax.set_ylim(low, high)
            if last:
                ax.set_xlabel("features, one group per percentage of constraints (top axis)",
                              fontsize=8)
            ax.set_ylabel(what, fontsize=8)
    handles = [Rectangle((0, 0), 1, 1, color=colour(a)) for a in algorithms]
    handles.append(Rectangle((0, 0), 1, 1, facecolor="0.93", edgecolor="0.6"))
    plotting.finish(frame, handles, legend, path, dpi=120)
    return fig


def _panel_width(panels):
    """Inches for a column of bar panels, from its number of bar slots (features and gaps of
    every percentage): :data:`MIN_LABELLED_SLOT` per slot, so that every bar carries its
    feature's name, when that is at most :data:`MAX_LABELLED_WIDTH`; else about 0.025 in per
    slot (at least 4.6, at most 14) with the names thinned; :data:`IMAGE_WIDTH` for image
    panels (:func:`_is_image`). None when none is computed."""
    drawn = [panel for panel in panels if panel is not None]
    if not drawn:
        return None
    if any(_is_image(panel) for panel in drawn):
        return IMAGE_WIDTH
    slots = max(p.sizes["percent"] * (p.sizes["feature"] + _gap(p.sizes["feature"]))
                + _gap(p.sizes["feature"]) for p in drawn)
    if MIN_LABELLED_SLOT * slots <= MAX_LABELLED_WIDTH:
        return max(4.6, MIN_LABELLED_SLOT * slots)
    return float(np.clip(0.025 * slots, 4.6, 14.0))


def _is_image(panel):
    """Whether ``panel`` is drawn as an image: its data set has more than
    :data:`IMAGE_FEATURES` features."""
    return panel.sizes["feature"] > IMAGE_FEATURES


def _image(ax, panel, colour, y_scale, width, what):
    """The panel as an image (gid ``"weights"``): a row per percentage (labelled on the left),
    a column per feature in column order, each mean weight a colour on the scale the panel's
    bars would have (``y_scale``: :func:`y_axis`; shades of ``colour`` for the informative
    features, of grey for the known uninformative ones; a weight of 0 or none is white),
    with a colour bar; as many features named under it as fit the ``width``-inch panel."""
    from matplotlib.colors import LinearSegmentedColormap, LogNorm, Normalize

    scale, low, high = y_scale
    values = panel.transpose("percent", "feature").values
    bad = np.broadcast_to(panel.uninformative.values, values.shape)
    norm = LogNorm(low, high) if scale == "log" else Normalize(low, high)
    n_percents, n_features = values.shape
    extent = (-0.5, n_features - 0.5, n_percents - 0.5, -0.5)
    shown = None
    for cmap, hidden in (([colour], bad), (["0.3"], ~bad)):
        image = ax.imshow(np.ma.masked_array(values, hidden | ~(values > 0)),
                          cmap=LinearSegmentedColormap.from_list("", ["white", *cmap]),
                          norm=norm, aspect="auto", interpolation="nearest", extent=extent)
        image.set_gid("weights")
        if shown is None:
            shown = image  # the informative features' colours: the colour bar's
    colour_bar = ax.figure.colorbar(shown, cax=ax.inset_axes([1.01, 0.0, 0.02, 1.0]))
    colour_bar.ax.tick_params(labelsize=7)
    colour_bar.set_label(what, fontsize=8)
    step = max(1, int(np.ceil(n_percents / 10)))
    ax.set_yticks(np.arange(n_percents)[::step],
                  [f"{p:g} %" for p in panel.percent.values[::step]], fontsize=8)
    every = int(np.ceil(MIN_LABELLED_SLOT * n_features / width))
    labelled = np.arange(0, n_features, every)
    ax.set_xticks(labelled, [str(name) for name in panel.feature_name.values[labelled]],
                  rotation=90, fontsize=FEATURE_FONTSIZE)
    for label, uninformative in zip(ax.get_xticklabels(), bad[0, labelled], strict=True):
        if uninformative:
            label.set_color("0.45")
    ax.tick_params(axis="x", length=2, pad=1)


def _gap(n_features):
    return max(2, n_features // 4)


def _bar_collection(ax, x, heights, color, alpha=1.0):
    """Bars of width :data:`BAR_WIDTH` centred on ``x``, from 0 to ``heights`` (NaN: no bar), as
    one collection (gid ``"bars"``): a figure of sets with hundreds of features has hundreds
    of thousands of bars, and ``Axes.bar`` makes an artist of each, which took most of such a
    report's time."""
    from matplotlib.collections import PolyCollection

    drawn = ~np.isnan(heights)
    left, top = x[drawn] - BAR_WIDTH / 2, heights[drawn]
    bottom = np.zeros_like(top)
    corners = np.stack([np.column_stack(corner) for corner in
                        ((left, bottom), (left, top), (left + BAR_WIDTH, top),
                         (left + BAR_WIDTH, bottom))], axis=1)
    ax.add_collection(PolyCollection(corners, facecolors=color, alpha=alpha, linewidths=0,
                                     gid="bars"))


def _bars(ax, panel, colour, width):
    """One group of p bars per percentage, features in column order; the slots of the known
    uninformative features are shaded (one span per run of adjacent ones). Every bar is
    labelled with its feature's name when a bar slot of the ``width``-inch panel is wide
    enough for a label, else every few bars of the first group, as many as fit; the top axis
    names the percentages."""
    percents = panel.percent.values
    n_features = panel.sizes["feature"]
    gap = _gap(n_features)
    bad = panel.uninformative.values
    starts = np.arange(len(percents)) * (n_features + gap)
    x = (starts[:, None] + np.arange(n_features)).ravel()
    heights = panel.transpose("percent", "feature").values.ravel()
    shaded = np.tile(bad, len(percents))
    _bar_collection(ax, x[~shaded], heights[~shaded], color=colour)
    _bar_collection(ax, x[shaded], heights[shaded], color=colour, alpha=0.35)
    ax.autoscale_view()
    edges = np.flatnonzero(np.diff(np.concatenate([[0], bad.astype(int), [0]])))
    for start in starts:
        for first, stop in zip(edges[::2], edges[1::2], strict=True):
            ax.axvspan(start + first - 0.5, start + stop - 0.5, color="0.93", linewidth=0,
                       zorder=0)
    slot = width / (len(percents) * (n_features + gap) + gap)
    every = int(np.ceil(MIN_LABELLED_SLOT / slot))  # 1: room for a label under every bar
    labelled = np.arange(len(x)) if every == 1 else np.arange(0, n_features, every)
    names = np.tile([str(name) for name in panel.feature_name.values], len(percents))
    ax.set_xticks(x[labelled], names[labelled], rotation=90, fontsize=FEATURE_FONTSIZE)
    for label, uninformative in zip(ax.get_xticklabels(), shaded[labelled], strict=True):
        if uninformative:
            label.set_color("0.45")
    ax.tick_params(axis="x", length=2, pad=1)
    ax.tick_params(axis="y", labelsize=8)
    ax.set_xlim(-gap, len(percents) * (n_features + gap))
    centres = starts + (n_features - 1) / 2
    step = max(1, int(np.ceil(len(percents) / 10)))
    top = ax.secondary_xaxis("top")
    top.set_xticks(centres[::step], [f"{p:g} %" for p in percents[::step]], fontsize=8)
    top.tick_params(length=0, pad=1)

"""The figures are readable at the size they are shown (issue 33, point 9): F axes padded past
the data, ticks at the study's percentages, labels that neither overlap nor leave the figure,
one colour per algorithm, the algorithms a panel does not draw named on it, the constraint
kinds explained (docs/method/protocol.md §11). Checked on the drawn artists after a draw."""

import functools
import itertools

import matplotlib.colors
import numpy as np
import pytest
from test_report import EMPTY, EVERY_DATASET, drawn_y, make_group, write_cube

from pcskm import forking
from pcskm.experiments.report import open_store, performance, plotting
from pcskm.experiments.report.aggregate import collect

PAPER_PERCENTS = tuple(float(p) for p in np.arange(1.0, 10.01, 0.5))  # 19, as the paper's


def figure_of(tmp_path, groups, selection="paper"):
    """Figure 1's grid of the cube of ``groups`` (data set -> group), drawn."""
    results = collect(open_store(write_cube(tmp_path / "cube.zarr", groups)))
    _stem, title, rows = performance.FIGURES[0]
    fig = performance.figure(results, selection, title, rows, tmp_path / "f.png",
                             datasets=EVERY_DATASET)
    plotting.renderer(fig)
    return fig


def boxes(fig, texts):
    drawn = plotting.renderer(fig)
    return [text.get_window_extent(drawn) for text in texts]


def overlapping(extents):
    """The pairs of boxes whose interiors intersect, by brute force over every pair."""
    return [(a, b) for a, b in itertools.combinations(extents, 2)
            if min(a.x1, b.x1) > max(a.x0, b.x0) and min(a.y1, b.y1) > max(a.y0, b.y0)]


def inside(fig, extent):
    return (extent.x0 >= 0 and extent.y0 >= 0 and extent.x1 <= fig.bbox.x1
            and extent.y1 <= fig.bbox.y1)


def visible_tick_labels(ax):
    return [t for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]


def test_an_all_one_panel_is_drawn_inside_its_axis(tmp_path):
    """Every cell at F = 1 (Brodinova 5+5 in the quick study): the line lies strictly inside
    the y limits, not on the top edge; the ticks stay within [0, 1]."""
    fig = figure_of(tmp_path, {"brodinova-5-5": make_group(f=1.0)})
    for ax in fig.axes:
        low, high = ax.get_ylim()
        values = drawn_y(ax)
        assert low < values.min() and values.max() < high
        assert high - values.max() >= 0.02 - 1e-9  # the margin: 5 % of the range, >= 0.02
        assert all(0 <= t <= 1 for t in ax.get_yticks())


def test_x_ticks_sit_at_the_study_percentages_and_their_labels_fit(tmp_path):
    """The paper's 19 percentages: a tick at each, labels thinned so that none overlaps its
    neighbour, the first labelled, every label inside the figure; 1, 5.5, 10 all labelled."""
    fig = figure_of(tmp_path, {"iris": make_group(percents=PAPER_PERCENTS, f=0.7)})
    for ax in fig.axes:
        assert list(ax.get_xticks()) == list(PAPER_PERCENTS)
        labels = [t for t in ax.get_xticklabels() if t.get_text()]
        # 0.5 apart on 2.9 in over 9.9 units: 0.146 in per tick, "5.5" needs about 0.25 in
        assert [t.get_text() for t in labels] == [str(p) for p in range(1, 11)]
        extents = boxes(fig, labels)
        assert not overlapping(extents)
        assert all(inside(fig, e) for e in boxes(fig, visible_tick_labels(ax)))
    quick = figure_of(tmp_path / "quick", {"iris": make_group(percents=(1.0, 5.5, 10.0))})
    assert [t.get_text() for t in quick.axes[0].get_xticklabels()] == ["1", "5.5", "10"]


def test_thinned_labels_by_hand():
    """Ticks 1 apart over 10 units on 1 inch (0.1 in per tick): a label of about 0.1 in
    plus the 0.08 in gap needs every second tick; on 10 inches every tick is labelled."""
    positions = [float(p) for p in range(1, 11)]
    widest = max(plotting.text_width(f"{p:g}", 8) for p in positions)
    step = int(np.ceil((widest + 0.08) / 0.1))
    thinned = plotting.thinned_labels(positions, (0.5, 10.5), 1.0, 8)
    assert thinned == [f"{p:g}" if i % step == 0 else "" for i, p in enumerate(positions)]
    assert plotting.thinned_labels(positions, (0.5, 10.5), 10.0, 8) == [
        f"{p:g}" for p in positions]


def test_failed_share_labels_do_not_overlap(tmp_path):
    """Four algorithms failing on 3 of 4 cells at the same point and the same F (labels
    "75%" at one spot, as "100%92%12%" was on ionosphere): after the figure is drawn no two
    labels overlap and each lies inside its panel."""
    group = make_group(percents=(1.0, 5.5, 10.0), f=0.6)
    failed = {"percent": 5.5, "run": [0, 1], "fold": [0, 1]}
    for algorithm in ("LKM", "PCKM", "MPCKM", "SKM", "PCSKM"):
        at = {**failed, "algorithm": algorithm}
        values = group.status.loc[at].values.copy()
        f_score = group.f_score.loc[at].values.copy()
        applies = values != 5  # not_applicable stays
        first = np.zeros_like(applies)
        first[..., 0, 0, :] = True  # run 0, fold 0 keeps its values
        hit = applies & ~first
        values[hit], f_score[hit] = EMPTY, np.nan
        group.status.loc[at], group.f_score.loc[at] = values, f_score
    fig = figure_of(tmp_path, {"iris": group})
    for ax in fig.axes:
        labels = [t for t in ax.texts if t.get_text().endswith("%")]
        assert len(labels) == 5, ax.get_title()
        extents = boxes(fig, labels)
        assert not overlapping(extents)
        panel = ax.get_window_extent(plotting.renderer(fig))
        assert all(panel.y0 <= e.y0 and e.y1 <= panel.y1 for e in extents)


def test_colours_one_per_algorithm_the_paper_five_kept():
    """The paper's five keep their colours; PCSKM-paper and a user's estimators get their
    own, distinct from every other (compared as RGBA), the same in every figure of a study."""
    study = ["LKM", "SKM", "PCKM", "MPCKM", "PCSKM", "PCSKM-paper", "COPKM", "MyKMeans"]
    palette = performance.colours(study)
    assert {a: palette[a] for a in performance.COLOURS} == performance.COLOURS
    rgba = [matplotlib.colors.to_rgba(palette[a]) for a in study]
    assert len(set(rgba)) == len(study)
    assert palette["PCSKM-paper"] != palette["PCSKM"]
    many = [f"user{i}" for i in range(len(performance.OTHER_COLOURS))]
    assert len({matplotlib.colors.to_rgba(c) for c in performance.colours(many).values()}) == (
        len(many))


def test_every_algorithm_of_the_legend_has_its_own_colour(tmp_path):
    fig = figure_of(tmp_path, {"iris": make_group()})
    handles = fig.legends[0].legend_handles
    names = [t.get_text() for t in fig.legends[0].get_texts()]
    colours = [matplotlib.colors.to_rgba(h.get_color()) for h, name in zip(
        handles, names, strict=True) if name in performance.PAPER_ALGORITHMS]
    assert len(colours) == len(performance.PAPER_ALGORITHMS) == len(set(colours))


def test_a_panel_names_the_algorithms_it_does_not_draw(tmp_path):
    """SKM and PCSKM with no cell in a panel (as fixed-loo on iris in the quick study, which
    has no other data set to choose their s on): the legend keeps them, the panel's title
    names them and nothing of theirs is drawn."""
    group = make_group(f=0.7)
    group.done.loc[{"algorithm": ["SKM", "PCSKM"]}] = 0
    fig = figure_of(tmp_path, {"iris": group})
    for ax in fig.axes:
        assert ax.get_title().endswith("no value here: SKM, PCSKM")
        drawn = {line.get_color() for line in ax.lines}
        assert performance.COLOURS["SKM"] not in drawn
        assert performance.COLOURS["PCSKM"] not in drawn
    assert {"SKM", "PCSKM"} <= {t.get_text() for t in fig.legends[0].get_texts()}


def test_the_kinds_of_the_row_labels_are_explained_on_the_figure(tmp_path):
    fig = figure_of(tmp_path, {"iris": make_group(kinds=("random", "must-link"))})
    texts = [t.get_text().replace("\n", " ") for t in fig.texts]
    assert any(label.startswith("DKM++, random pairs") for label in texts)
    note = next(t for t in fig.texts if t.get_text().startswith("random pairs:"))
    assert "must-link, cannot-link: constraints of that type only" in note.get_text().replace(
        "\n", " ")
    assert inside(fig, boxes(fig, [note])[0])
    legend = fig.legends[0].get_window_extent(plotting.renderer(fig))
    assert not overlapping([legend, boxes(fig, [note])[0]])


@pytest.mark.parametrize("f", [0.0, 1.0])
def test_f_limits_strictly_contain_values_at_the_ends(f):
    """:func:`performance._f_limits` by hand: values all at 0 or all at 1 get 0.02 on both
    sides."""
    group = make_group(f=f)
    panel = group.assign(f_mean=group.f_score.isel(sparsity=0), f_std=group.f_score.isel(
        sparsity=0) * 0, n_cells=group.done.astype(int))
    assert performance._f_limits([panel]) == pytest.approx((f - 0.02, f + 0.02))


def test_a_studys_weight_figure_labels_every_feature_readably(tmp_path):
    """A user's study with 30 features at 3 percentages: the figure is sized from its
    features so that every bar carries its name at 7 points or more, no two names overlap
    and every label (names, percentages, axes) lies inside the figure."""
    from pcskm.experiments.report import weights

    group = make_group(percents=(1.0, 5.5, 10.0), n_features=30,
                       uninformative=[j >= 26 for j in range(30)], f=0.7)
    names = [f"sensor_reading_{j:02d}" for j in range(30)]
    group.attrs["feature_names"] = names
    group["weights"].values[:] = np.random.default_rng(0).random(group["weights"].shape)
    results = collect(open_store(write_cube(tmp_path / "cube.zarr", {"my-measurements": group})))
    [(stem, title, family_list, inits, algorithms)] = weights.figure_list(results)
    fig = weights.figure(results, title, family_list, inits, tmp_path / "w.png", algorithms)
    for ax in fig.axes:
        if not ax.get_xticklabels():
            continue  # the top axes of the percentages, checked through their parents
        labels = ax.get_xticklabels()
        assert [t.get_text() for t in labels] == names * 3
        assert all(t.get_fontsize() >= 7 for t in labels)
        extents = boxes(fig, labels)
        assert not overlapping(extents)
        texts = [*labels, *ax.get_yticklabels(), ax.title,
                 *(t for child in ax.child_axes for t in child.get_xticklabels())]
        assert all(inside(fig, e) for e in boxes(fig, texts))


@pytest.mark.parametrize(("quality", "text"), [
    ("+5 -5", "5 informative + 5 noise features"),
    ("+3 -2, 3 unknown", "3 informative + 2 noise + 3 unknown features"),
    ("8 unknown, -10", "8 unknown + 10 noise features"),
    ("unknown", "unknown"),
])
def test_feature_quality_in_words(quality, text):
    assert plotting.quality_text(quality) == text


def test_the_selections_figure_draws_an_all_one_data_set_inside_its_axis(tmp_path):
    """Every algorithm at mean F = 1 under every selection (Brodinova 5+5 in the quick
    study): the dots lie strictly inside the x limits, the ticks within [0, 1], and the
    algorithms keep one colour each."""
    import pandas as pd

    from pcskm.experiments.report import selection_figure

    rows = [{"family": family, "dataset": family, "selection": selection,
             "algorithm": algorithm, "value": value, "n_settings": 4}
            for family, value in (("Brodinova 5+5", 1.0), ("iris", 0.8))
            for selection in ("paper", "honest")
            for algorithm in ("LKM", "PCSKM", "PCSKM-paper")]
    fig = selection_figure.figure(pd.DataFrame(rows), tmp_path / "s.png")
    for ax in fig.axes:
        low, high = ax.get_xlim()
        dots = np.concatenate([line.get_xdata() for line in ax.lines if line.get_marker()
                               not in (None, "None", "")])
        assert low < dots.min() and dots.max() < high
        assert all(0 <= t <= 1 for t in ax.get_xticks())
    handles = fig.legends[0].legend_handles
    assert len({matplotlib.colors.to_rgba(h.get_color()) for h in handles}) == 3


def _drawn(path, text):
    """A small figure with ``text`` saved by :func:`plotting.save` to ``path``."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1))
    ax = fig.add_subplot()
    ax.plot([0, 1, 2], [1, 0, 1])
    ax.set_title(text)
    plotting.save(fig, path, dpi=80)


@pytest.mark.skipif(not forking.can_fork(), reason="figures are saved in forked children "
                                                    "on Linux only")
def test_figures_saved_in_children_are_the_figures_saved_here(tmp_path):
    """The same figures saved at once and by forked children (parallel_saves, 2 at a time,
    so that the third waits for a child) have the same pixels (matplotlib's imread of both),
    and each child drew the figure as it was when saved, not as it was changed after."""
    from matplotlib.image import imread

    texts = ["one", "two", "three"]
    for text in texts:
        _drawn(tmp_path / f"here-{text}.png", text)
    with plotting.parallel_saves(workers=2):
        for text in texts:
            _drawn(tmp_path / f"child-{text}.png", text)
    for text in texts:
        here, child = imread(tmp_path / f"here-{text}.png"), imread(tmp_path / f"child-{text}.png")
        assert here.shape == child.shape and np.array_equal(here, child)
    assert not np.array_equal(imread(tmp_path / "here-one.png"), imread(tmp_path / "here-two.png"))


@pytest.mark.skipif(not forking.can_fork(), reason="figures are saved in forked children "
                                                    "on Linux only")
def test_a_figure_a_child_cannot_write_is_named(tmp_path):
    """A child that cannot write its PNG (its folder does not exist) fails, and leaving
    parallel_saves raises RuntimeError naming that file; the other figure is written."""
    with pytest.raises(RuntimeError, match="no-such-folder/lost.png"):
        with plotting.parallel_saves(workers=2):
            _drawn(tmp_path / "no-such-folder" / "lost.png", "lost")
            _drawn(tmp_path / "kept.png", "kept")
    assert (tmp_path / "kept.png").is_file()


def _built(path, text):
    """A figure built and saved (plotting.save) by the caller of plotting.draw."""
    _drawn(path, text)
    return True


@pytest.mark.skipif(not forking.can_fork(), reason="figures are built in forked children "
                                                    "on Linux only")
def test_figures_built_in_children_are_the_figures_built_here(tmp_path):
    """plotting.draw: a figure built and saved by a forked child (parallel_saves) has the
    pixels of the one built here; a child whose figure has nothing to draw fails, named
    when parallel_saves is left, and so does the same figure drawn here at once."""
    from matplotlib.image import imread

    for text in ("one", "two", "three"):
        plotting.draw(tmp_path / f"here-{text}.png",
                      functools.partial(_built, tmp_path / f"here-{text}.png", text))
    with plotting.parallel_saves(workers=2):
        for text in ("one", "two", "three"):
            plotting.draw(tmp_path / f"child-{text}.png",
                          functools.partial(_built, tmp_path / f"child-{text}.png", text))
    for text in ("one", "two", "three"):
        here, child = imread(tmp_path / f"here-{text}.png"), imread(tmp_path / f"child-{text}.png")
        assert here.shape == child.shape and np.array_equal(here, child)
    with pytest.raises(RuntimeError, match="empty.png"):
        with plotting.parallel_saves(workers=2):
            plotting.draw(tmp_path / "empty.png", lambda: None)
    with pytest.raises(RuntimeError, match="empty.png: the figure has nothing to draw"):
        plotting.draw(tmp_path / "empty.png", lambda: None)

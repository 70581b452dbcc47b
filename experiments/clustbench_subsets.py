"""Loaders of clustering benchmark sets without their tiny classes, for the extended study
(docs/method/datasets.md §8.5): ``[data.NAME]`` tables name them as
``loader = "pcskm.experiments.clustbench_subsets:ecoli"``.

Stratified 10-fold cross-validation needs at least 10 points per class (§8.4); uci/ecoli,
uci/glass and uci/yeast have classes of 2 to 9 points. These loaders read the set as a
``source = "clustbench:uci/NAME"`` table does and leave out every class with fewer than
:data:`MIN_CLASS_SIZE` points. :func:`statlog_50` keeps 50 points per class of uci/statlog,
as the paper's digits subsets do, drawn from the key of the spec-defined set ``uci-statlog``;
:func:`yeast_50` keeps at most 50 per class of uci/yeast (its smaller classes whole).
"""

from .datasets import PER_CLASS, Dataset
from .sources import (
    SPEC_CODE,
    load_definition,
    parse_definition,
    per_class_rows,
    without_small_classes_rows,
)

MIN_CLASS_SIZE = 10  # the paper's n_folds (docs/method/protocol.md §3)


def without_small_classes(source, min_size=MIN_CLASS_SIZE):
    """The :class:`Dataset` of the clustbench set ``source`` (``"clustbench:BATTERY/NAME"``)
    without the points of its classes with fewer than ``min_size`` points."""
    name = source.split("/")[-1]
    full = load_definition(parse_definition(name, {"source": source}))
    rows, y, dropped = without_small_classes_rows(full.y, min_size)
    return Dataset(
        name=name, X=full.X[rows], y=y,
        feature_names=full.feature_names, uninformative=None,
        description=f"{full.description}, without the classes of fewer than {min_size} points "
        f"(0-based labels {dropped or 'none'})",
        source=full.source, code=full.code, subset=full.subset,
    )


def ecoli():
    """uci/ecoli without its classes of 5, 2 and 2 points: 327 points, 5 classes."""
    return without_small_classes("clustbench:uci/ecoli")


def glass():
    """uci/glass without its class of 9 points: 205 points, 5 classes."""
    return without_small_classes("clustbench:uci/glass")


def yeast():
    """uci/yeast without its class of 5 points: 1479 points, 9 classes."""
    return without_small_classes("clustbench:uci/yeast")


STATLOG_NAME = "uci-statlog"
YEAST_NAME = "uci-yeast"


def _per_class(full, name, at_most=False):
    """``full`` reduced to :data:`PER_CLASS` points per class (``at_most``: a smaller class
    whole), drawn from the key (4, 0, sub) of the spec-defined set ``name`` (sub its name's
    UTF-8 bytes, docs/method/datasets.md §8.2)."""
    sub = int.from_bytes(name.encode("utf-8"), "big")
    rows = per_class_rows(full.y, PER_CLASS, sub, at_most=at_most)
    count = f"at most {PER_CLASS}" if at_most else f"{PER_CLASS}"
    return Dataset(
        name=name, X=full.X[rows], y=full.y[rows], feature_names=full.feature_names,
        uninformative=None,
        description=f"{full.description}; {count} points per class drawn from the key "
        f"(4, {SPEC_CODE}, {sub})", source=full.source, code=full.code, subset=full.subset,
    )


def statlog_50():
    """uci/statlog (2310 points, 7 classes of 330) reduced to 50 points per class: 350
    points."""
    return _per_class(without_small_classes("clustbench:uci/statlog"), STATLOG_NAME)


def yeast_50():
    """uci/yeast without its class of 5 points (:func:`yeast`), at most 50 points per class:
    379 points, 9 classes (those of 20, 30, 35 and 44 points whole)."""
    return _per_class(yeast(), YEAST_NAME, at_most=True)

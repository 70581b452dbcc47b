"""Development data sets of the label-free rules for s (docs/method/selection.md §7.3).

A rule's details (the one-standard-error margin, the mean over the folds, ...) may be tuned
only on these sets, and no confirmatory study may use them: a spec with a
``[preregistration]`` table refuses them (:func:`pcskm.experiments.spec.parse_spec`). Two
families, each set drawn from its own key with the data sets' master seed, purposes no other
draw of the project uses (docs/method/protocol.md §2), so none of them is a draw of a registry
set: Brodinova sets (docs/method/datasets.md §4) with few informative features among many
uninformative ones, key (11, j), on which thresholding gains little; and weak-signal sets
(docs/method/datasets.md §4.3), key (15, j), whose noise features mislead the unthresholded
fit. A spec lists them by name with a ``[data.NAME]`` table whose ``loader`` is the set's
value in :data:`DEVELOPMENT_SETS`.
"""

from .datasets import _brodinova_builder, _weak_signal_builder
from .sources import SPEC_CODE

DEVELOPMENT_KEY = 11  # first part of the generation key (11, j) of Brodinova development set j
WEAK_DEVELOPMENT_KEY = 15  # first part of the key (15, j) of weak-signal development set j
# name -> (j, informative features, uninformative features, groups)
_SETTINGS = {
    "dev-brodinova-3-47": (1, 3, 47, 3),
    "dev-brodinova-2-98": (2, 2, 98, 3),
    "dev-brodinova-4-60-k4": (3, 4, 60, 4),
    "dev-brodinova-6-24": (4, 6, 24, 3),
    "dev-brodinova-4-8": (5, 4, 8, 3),
}
# name -> (j, informative features, shift, features); 3 groups of 30
_WEAK_SETTINGS = {
    "dev-weak-q20-m08-p200": (1, 20, 0.8, 200),
    "dev-weak-q15-m09-p150": (2, 15, 0.9, 150),
    "dev-weak-q20-m10-p500": (3, 20, 1.0, 500),
    "dev-weak-q10-m12-p200": (4, 10, 1.2, 200),
    "dev-weak-q10-m10-p100": (5, 10, 1.0, 100),
}
# name -> the loader a spec's [data.NAME] table names
DEVELOPMENT_SETS = {name: f"pcskm.experiments.development:{name.replace('-', '_')}"
                    for name in (*_SETTINGS, *_WEAK_SETTINGS)}


def load_development(name):
    """The :class:`~pcskm.experiments.Dataset` of development set ``name``."""
    if name in _WEAK_SETTINGS:
        j, n_informative, shift, n_features = _WEAK_SETTINGS[name]
        return _weak_signal_builder(name, SPEC_CODE, (WEAK_DEVELOPMENT_KEY, j), n_informative,
                                    shift, n_features)(None)
    if name not in _SETTINGS:
        raise ValueError(f"no development set {name!r}; they are {sorted(DEVELOPMENT_SETS)}")
    j, p_info, p_noise, n_groups = _SETTINGS[name]
    return _brodinova_builder(name, SPEC_CODE, p_info, p_noise, n_groups,
                              key=(DEVELOPMENT_KEY, j))(None)


def _loader(name):
    def load():
        return load_development(name)

    load.__name__ = load.__qualname__ = name.replace("-", "_")
    load.__doc__ = f"Development set {name} (loader of a spec's [data.{name}] table)."
    return load


globals().update({loader.rsplit(":", 1)[1]: _loader(name)
                  for name, loader in DEVELOPMENT_SETS.items()})

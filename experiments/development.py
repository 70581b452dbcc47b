"""Development data sets of the label-free rules for s (docs/method/selection.md §7.3).

A rule's details (the one-standard-error margin, the mean over the folds, ...) may be tuned
only on these sets, and no confirmatory study may use them: a spec with a
``[preregistration]`` table refuses them (:func:`pcskm.experiments.spec.parse_spec`). They
are Brodinova sets (docs/method/datasets.md §4) with few informative features among many
uninformative ones, each drawn from its own key (11, j) with the data sets' master seed,
a purpose no other draw of the project uses (docs/method/protocol.md §2), so none of them is
a draw of a registry set. A spec lists them by name with a ``[data.NAME]`` table whose
``loader`` is the set's value in :data:`DEVELOPMENT_SETS`.
"""

from .datasets import _brodinova_builder
from .sources import SPEC_CODE

DEVELOPMENT_KEY = 11  # first part of the generation key (11, j) of development set j
# name -> (j, informative features, uninformative features, groups)
_SETTINGS = {
    "dev-brodinova-3-47": (1, 3, 47, 3),
    "dev-brodinova-2-98": (2, 2, 98, 3),
    "dev-brodinova-4-60-k4": (3, 4, 60, 4),
    "dev-brodinova-6-24": (4, 6, 24, 3),
    "dev-brodinova-4-8": (5, 4, 8, 3),
}
# name -> the loader a spec's [data.NAME] table names
DEVELOPMENT_SETS = {name: f"pcskm.experiments.development:{name.replace('-', '_')}"
                    for name in _SETTINGS}


def load_development(name):
    """The :class:`~pcskm.experiments.Dataset` of development set ``name``."""
    if name not in _SETTINGS:
        raise ValueError(f"no development set {name!r}; they are {sorted(_SETTINGS)}")
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

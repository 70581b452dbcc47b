"""The estimators a spec may name: the five built-in names and import paths of a user's own
clusterers (docs/reference/estimator-contract.md). One place resolves a name to its class and
checks a user class against the contract, for the spec (at parse time, before any compute)
and for the cells (on the workers).

A user estimator is named ``"package.module:ClassName"``. It is a class with scikit-learn's
constructor conventions (keyword parameters, as ``get_params`` reads them from the signature
of ``__init__``), taking ``n_clusters``, whose ``fit`` sets ``labels_``. The runner passes
``random_state``, ``init`` and ``sparsity`` when the constructor takes them, and the cell's
constraints to ``fit`` unless the variant says ``constraints = "ignore"``.
"""

import difflib
import functools
import hashlib
import importlib
import inspect
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from pcskm import algorithms

# Spec estimator names -> estimator classes of the ``algorithms`` package.
ESTIMATOR_CLASSES = {
    "LKM": "LloydKMeans",
    "SKM": "SparseKMeans",
    "PCKM": "PCKMeans",
    "MPCKM": "MPCKMeans",
    "PCSKM": "PCSKMeans",
}
# Estimator parameters the runner sets for every cell (make_estimator, fit), so a variant
# cannot: what sets each one instead.
RUNNER_PARAMETERS = {
    "n_clusters": "the data set's number of classes",
    "init": "the spec's inits",
    "random_state": "the cell's Seeding key, derived from the spec's seed "
                    "(docs/method/protocol.md §2)",
    "sparsity": "the s grid of the spec's sparsity_start, sparsity_step and "
                "sparsity_max_values (docs/method/protocol.md §7; sparsity_max_values = 1 "
                "fits sparsity_start only)",
}
SPARSE = frozenset({"SKM", "PCSKM"})  # fitted over the s grid with fit_path
CONSTRAINT_MODES = ("use", "ignore")  # a user estimator's fit takes the constraints, or not
FIT_PATH = "fit_path"  # optional: the whole s grid in one call (Contract.fit_path)


class EstimatorError(ValueError):
    """A spec names an estimator that cannot be used (one message per problem)."""


def is_import_path(name):
    """Whether ``name`` names a user estimator (``"package.module:ClassName"``)."""
    return name not in ESTIMATOR_CLASSES


def estimator_class(estimator):
    """The estimator class of a spec estimator name (LKM, SKM, PCKM, MPCKM, PCSKM)."""
    return getattr(algorithms, ESTIMATOR_CLASSES[estimator])


def parameter_names(cls):
    """The constructor keywords of ``cls`` as scikit-learn's ``get_params`` reads them (the
    signature of ``__init__``, without ``self``); raises :class:`EstimatorError` for a
    constructor taking ``*args`` or ``**kwargs``."""
    init = cls.__init__
    if init is object.__init__:
        return ()
    parameters = inspect.signature(init).parameters.values()
    loose = [("*" if p.kind == p.VAR_POSITIONAL else "**") + p.name for p in parameters
             if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if loose:
        raise EstimatorError(f"the constructor of {cls.__qualname__} takes {loose[0]}: "
                             "scikit-learn estimators name every parameter as a keyword "
                             "(get_params reads them from the signature)")
    return tuple(p.name for p in parameters if p.name != "self")


def _keywords(function):
    """The keyword names ``function`` accepts; None if it takes ``**kwargs``."""
    parameters = inspect.signature(function).parameters.values()
    if any(p.kind == p.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


@dataclass(frozen=True)
class Contract:
    """What the runner knows of a user estimator class: its constructor ``parameters``, and
    whether it takes ``random_state``, ``init`` (the (k, p) initial centres) and
    ``sparsity`` (fitted over the s grid), and has ``fit_path(X, sparsities, must_link=,
    cannot_link=)``."""

    cls: type
    parameters: tuple

    @property
    def takes_random_state(self):
        return "random_state" in self.parameters

    @property
    def takes_init(self):
        return "init" in self.parameters

    @property
    def sparse(self):
        return "sparsity" in self.parameters

    @property
    def fit_path(self):
        return self.sparse and callable(getattr(self.cls, FIT_PATH, None))


def _import(path):
    """The class at ``path`` (``"package.module:ClassName"``); :class:`EstimatorError` if it
    is not importable, missing or not a class."""
    module_name, colon, attribute = path.partition(":")
    if not colon or not module_name or not attribute:
        raise EstimatorError(
            f"estimator {path!r} is neither a built-in name ({', '.join(ESTIMATOR_CLASSES)}) "
            "nor an import path \"package.module:ClassName\"")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # the module's own error, whatever it raises on import
        raise EstimatorError(
            f"estimator {path!r}: module {module_name!r} cannot be imported "
            f"({type(error).__name__}: {error}). Install its package, or ship a single "
            "module with pcskm run --preload FILE.py") from error
    target = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            names = [n for n in dir(target) if not n.startswith("_")]
            close = difflib.get_close_matches(part, names, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise EstimatorError(f"estimator {path!r}: module {module_name!r} has no "
                                 f"attribute {part!r}{hint}")
        target = getattr(target, part)
    if not inspect.isclass(target):
        raise EstimatorError(f"estimator {path!r} is a {type(target).__name__}, not a class "
                             "(the runner constructs one estimator per fit)")
    return target


@functools.lru_cache(maxsize=64)
def contract(path):
    """The :class:`Contract` of the user estimator at ``path``, once per process; raises
    :class:`EstimatorError` naming the first broken rule that needs no variant (importable,
    a class, a ``fit``, keyword constructor taking ``n_clusters``)."""
    cls = _import(path)
    if not callable(getattr(cls, "fit", None)):
        raise EstimatorError(f"estimator {path!r} has no fit method: the runner calls "
                             "fit(X, must_link=..., cannot_link=...) (or fit(X) with "
                             "constraints = \"ignore\") and reads labels_")
    parameters = parameter_names(cls)
    if "n_clusters" not in parameters:
        count = next((name for name in CLUSTER_COUNTS if name in parameters), None)
        hint = ("" if count is None else
                f"; it takes {count}: wrap it in a class whose constructor takes n_clusters, "
                f"passes it on as {count} and whose fit sets labels_ "
                "(docs/reference/estimator-contract.md, Wrapping an estimator)")
        raise EstimatorError(f"estimator {path!r} takes no n_clusters in its constructor "
                             f"(it takes {', '.join(parameters) or 'nothing'}): the runner "
                             f"sets n_clusters from the data set{hint}")
    return Contract(cls, parameters)


# Other names of the number of clusters (scikit-learn's mixtures take n_components)
CLUSTER_COUNTS = ("n_components", "n_cluster", "num_clusters", "k")


def check(path, params, constraints):
    """Check the user estimator at ``path`` with the variant's ``params`` (a dict) and
    ``constraints`` mode; raises :class:`EstimatorError` with one message per problem."""
    found = contract(path)
    settable = [name for name in found.parameters if name not in RUNNER_PARAMETERS]
    for key in params:
        if key in RUNNER_PARAMETERS:
            raise EstimatorError(
                f"params sets {key}, which the runner sets for every cell from "
                f"{RUNNER_PARAMETERS[key]}; {path} may set {', '.join(settable) or 'nothing'}")
        if key not in found.parameters:
            close = difflib.get_close_matches(key, found.parameters, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise EstimatorError(f"unknown parameter {key!r} in params{hint} ({path} may set "
                                 f"{', '.join(settable) or 'nothing'})")
    if constraints not in CONSTRAINT_MODES:
        raise EstimatorError(f"constraints must be one of {', '.join(CONSTRAINT_MODES)}; got "
                             f"{constraints!r}")
    if constraints == "use":
        method = found.cls.fit_path if found.fit_path else found.cls.fit
        keywords = _keywords(method)
        missing = [] if keywords is None else [k for k in ("must_link", "cannot_link")
                                               if k not in keywords]
        if missing:
            raise EstimatorError(
                f"{path}.{method.__name__} takes no {' and no '.join(missing)} keyword: a "
                "constrained estimator is fitted with fit(X, must_link=..., cannot_link=...); "
                "for a clusterer that ignores constraints, set constraints = \"ignore\"")


def is_sparse(name):
    """Whether the estimator ``name`` fits the s grid: SKM, PCSKM, or a user class with a
    ``sparsity`` parameter."""
    if not is_import_path(name):
        return name in SPARSE
    return contract(name).sparse


def provenance(path):
    """Where the class at ``path`` comes from (the cube's ``algorithm_definitions``): the
    version of the installed distribution providing its module, or ``"unknown"`` with the
    SHA-256 of the module's source file (a single module, e.g. one shipped with
    ``--preload``)."""
    module_name = path.partition(":")[0]
    top = module_name.partition(".")[0]
    distributions = metadata.packages_distributions().get(top, [])
    if distributions:
        return {"distribution": distributions[0],
                "version": metadata.version(distributions[0])}
    module = sys.modules.get(module_name) or importlib.import_module(module_name)
    source = getattr(module, "__file__", None)
    out = {"distribution": None, "version": "unknown"}
    if source and Path(source).is_file():
        out["source_sha256"] = hashlib.sha256(Path(source).read_bytes()).hexdigest()
    return out

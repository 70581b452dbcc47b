"""Experiment specifications: TOML files naming the grid of a study (docs/method/protocol.md §1).

A spec names the data sets (names or fnmatch patterns over ``list_datasets()``), the
algorithms (estimator names, or variants defined in ``[variants.NAME]`` tables with
constructor parameters, checked when the spec is read; the runner sets ``n_clusters``,
``init``, ``random_state`` and ``sparsity`` itself, so a variant cannot), the inits, the
constraint kinds (``kinds`` for DKM++, ROBIN(D) and Maximin(D); ``seeding_kinds`` for
Seeding), the percentages (a list, or ``{start, stop, step}`` with an inclusive stop), runs,
folds, ``max_iter``, the s grid (``sparsity_*``), the ``design`` (paired or unpaired
constraint samples, docs/method/protocol.md §6) and the per-s selection scores the runner
stores (``cv_folds``, ``cv_algorithms``, ``gap_permutations``; docs/method/selection.md).
Data sets outside the registry are defined in ``[data.NAME]`` tables
(:mod:`pcskm.experiments.sources`, docs/method/datasets.md §8) and listed in ``datasets``.
The ``[report]`` table (``focus``: the algorithm ``pcskm report`` compares with the others)
and the ``[run]`` table (``task_timeout``: the seconds a task may run) are outside the
hash. The ``[preregistration]`` table (:class:`Preregistration`: the primary selection
rule, focus, level, alpha and hypotheses, docs/reference/spec-toml.md) is outside the hash
too (it changes no cell), but a store records it and refuses to change it once a cell is
computed (``runner.store.prepare``).
The bundled specs are ``smoke``, ``quick``,
``paper``, ``unpaired`` and ``contamination`` (``experiments/specs/*.toml``).
"""

import difflib
import hashlib
import json
import logging
import numbers
import re
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from . import estimators
from .datasets import list_datasets, match_datasets
from .development import DEVELOPMENT_SETS
from .estimators import (
    CONSTRAINT_MODES,
    ESTIMATOR_CLASSES,
    RUNNER_PARAMETERS,
    SPARSE,
    estimator_class,
    is_import_path,
)
from .protocol import DESIGNS, INIT_CODES, KINDS, pct10, sparsity_grid
from .sources import parse_definition

log = logging.getLogger("pcskm")

ESTIMATORS = tuple(ESTIMATOR_CLASSES)
INITS = tuple(INIT_CODES)  # dkm++, seeding, robin, maximin
BUNDLED = ("smoke", "quick", "paper", "unpaired", "paired-subset", "contamination", "extended",
           "confirmatory", "confirmatory-raw", "confirmatory-sparsity")

_DEFAULTS = {
    "description": "", "seed": 0, "seeding_kinds": ["random"], "n_folds": 10, "max_iter": 25,
    "sparsity_start": 1.1, "sparsity_step": 0.2, "sparsity_max_values": 30, "variants": {},
    "design": "paired", "cv_folds": 0, "gap_permutations": 0, "cv_algorithms": None,
    "cv_runs": None, "data": {}, "report": {}, "run": {}, "preregistration": None,
}
# Keys added after specs and stores were first written, with the value that everything
# written before them implies: left out of the hash at that value (so that such a spec keeps
# its hash), and assumed for a store that does not record them.
# cv_algorithms is stored resolved: the algorithms that get CV scores, none when cv_folds is 0.
# cv_runs is None for CV scores in every run (and when cv_folds is 0).
ADDED_DEFAULTS = {"design": "paired", "cv_folds": 0, "gap_permutations": 0, "cv_algorithms": [],
                  "cv_runs": None, "data": {}}
_REQUIRED = ("datasets", "algorithms", "inits", "kinds", "percentages", "n_runs")
_KEYS = ("name", *_REQUIRED, *_DEFAULTS)
_VARIANT_KEYS = ("estimator", "params", "constraints")
_RANGE_KEYS = ("start", "stop", "step")
# The [report] table: how pcskm report presents the results (docs/reference/spec-toml.md,
# "[report]"). It changes no result, so it is neither in to_dict nor in the hash.
_REPORT_KEYS = ("focus",)
# The [run] table: how pcskm run computes (docs/reference/spec-toml.md, "[run]"). It changes
# no result either: neither in to_dict nor in the hash.
_RUN_KEYS = ("task_timeout",)
# The [preregistration] table (docs/reference/spec-toml.md, "[preregistration]"): the analysis
# stated before any run. It changes no cell, so it is outside the hash; the store records it.
_PREREGISTRATION_REQUIRED = ("rule", "focus", "hypotheses")
# Its optional keys and their defaults. The keys after alpha came later: a store that records
# none of them is read with these values, which are what its analysis used (docs/method/
# statistics.md): failed fits left out per algorithm ("available"), the Bayesian tests with
# their documented defaults.
PREREGISTRATION_DEFAULTS = {"level": "dataset", "alpha": 0.05, "failures": "available",
                            "failure_value": "LKM", "rope": 0.01, "prior": 0.5,
                            "threshold": 0.95}
_PREREGISTRATION_KEYS = (*_PREREGISTRATION_REQUIRED, *PREREGISTRATION_DEFAULTS)
PREREGISTRATION_LEVELS = ("dataset", "case")
# How a failed fit enters the tests (docs/method/statistics.md, "Failed fits")
FAILURE_RULES = ("available", "itt", "complete-case")
# Selections that read the test labels: an optimistic reference and an upper bound, not a rule
# a study can pre-register (docs/method/selection.md).
LABEL_READING = ("paper", "oracle")
# The content that determines the results; name, description and source text do not.
_UNHASHED = ("name", "description", "source_text")


def _canonical_json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


@dataclass(frozen=True)
class AlgorithmVariant:
    """An algorithm of a spec: ``estimator`` (LKM, SKM, PCKM, MPCKM or PCSKM, or the import
    path of a user estimator, docs/reference/estimator-contract.md) with constructor
    ``params`` (e.g. ``PCSKM-paper`` = PCSKM with ``weight_update="paper"``); a user
    estimator's ``constraints`` is "use" (``fit(X, must_link=, cannot_link=)``) or
    "ignore" (``fit(X)``)."""

    name: str
    estimator: str
    params: dict = field(default_factory=dict)
    constraints: str = "use"

    def __hash__(self):
        return hash((self.name, self.estimator, _canonical_json(self.params), self.constraints))

    @property
    def is_user(self):
        return is_import_path(self.estimator)

    def to_dict(self):
        """The variant as the spec hash and the cube record it (``constraints`` only for a
        user estimator, so that the built-ins' hashes stay as they were)."""
        out = {"name": self.name, "estimator": self.estimator, "params": dict(self.params)}
        if self.is_user:
            out["constraints"] = self.constraints
        return out


@dataclass(frozen=True)
class Preregistration:
    """The ``[preregistration]`` table: the primary selection of s (``rule``, a name of
    ``experiments/report/selection.py``'s ``REGISTRY``), the primary comparisons (``focus``
    against each other algorithm), their ``level`` ("dataset": one value per data set, or
    "case"), the significance level ``alpha`` of the Holm-adjusted p over all primary tests,
    the ``hypotheses`` stated before any run, the rule for failed fits (``failures``, with the
    intention-to-treat value ``failure_value``: a number or an algorithm whose value in the
    same cell a failed fit takes) and the Bayesian tests' ``rope`` half-width, ``prior``
    strength and decision ``threshold`` (docs/reference/spec-toml.md)."""

    rule: str
    focus: str
    hypotheses: str
    level: str = PREREGISTRATION_DEFAULTS["level"]
    alpha: float = PREREGISTRATION_DEFAULTS["alpha"]
    failures: str = PREREGISTRATION_DEFAULTS["failures"]
    failure_value: str | float = PREREGISTRATION_DEFAULTS["failure_value"]
    rope: float = PREREGISTRATION_DEFAULTS["rope"]
    prior: float = PREREGISTRATION_DEFAULTS["prior"]
    threshold: float = PREREGISTRATION_DEFAULTS["threshold"]

    def to_dict(self):
        """The table as the store records it (root attribute ``preregistration``)."""
        return preregistration_record({key: getattr(self, key) for key in
                                       _PREREGISTRATION_KEYS})


def preregistration_record(table):
    """A ``[preregistration]`` table as a store records it, the one normalisation that the
    store's checks and the report compare: every optional key with its default
    (:data:`PREREGISTRATION_DEFAULTS`) and the hypotheses without surrounding whitespace."""
    record = {**PREREGISTRATION_DEFAULTS, **table}
    if isinstance(record.get("hypotheses"), str):
        record["hypotheses"] = record["hypotheses"].strip()
    return record


@dataclass(frozen=True)
class ExperimentSpec:
    """A validated experiment grid. ``kinds`` run with DKM++, ROBIN(D) and Maximin(D);
    ``seeding_kinds`` with Seeding."""

    name: str
    description: str
    seed: int
    datasets: tuple
    algorithms: tuple
    inits: tuple
    kinds: tuple
    seeding_kinds: tuple
    percentages: tuple
    n_runs: int
    n_folds: int
    max_iter: int = 25
    sparsity_start: float = 1.1
    sparsity_step: float = 0.2
    sparsity_max_values: int = 30
    design: str = "paired"
    cv_folds: int = 0  # constraint folds of the CV scores; 0: none (docs/method/selection.md §2)
    gap_permutations: int = 0  # null data sets of the gap statistic; 0: none (§3)
    cv_algorithms: tuple = ()  # the algorithms that get CV scores (empty when cv_folds is 0)
    cv_runs: int | None = None  # CV scores in runs 0 to cv_runs - 1 only; None: every run
    data: tuple = ()  # the DataDefinitions of the [data.NAME] tables, in spec order
    source_text: str = ""
    focus: str | None = None  # [report] focus: the algorithm the report compares with the others
    task_timeout: float | None = None  # [run] task_timeout: seconds a task may run; None: none
    preregistration: Preregistration | None = None  # [preregistration]; outside the hash
    # the absolute path of the file the spec was read from (load_spec); None: bundled, or text
    path: str | None = field(default=None, compare=False)

    def sparsity_grid(self, n_features):
        """The s grid of docs/method/protocol.md §7 for ``n_features`` columns."""
        return sparsity_grid(n_features, self.sparsity_start, self.sparsity_step,
                             self.sparsity_max_values)

    def to_dict(self):
        return {
            "name": self.name, "description": self.description, "seed": self.seed,
            "datasets": list(self.datasets),
            "algorithms": [variant.to_dict() for variant in self.algorithms],
            "inits": list(self.inits), "kinds": list(self.kinds),
            "seeding_kinds": list(self.seeding_kinds), "percentages": list(self.percentages),
            "n_runs": self.n_runs, "n_folds": self.n_folds, "max_iter": self.max_iter,
            "sparsity_start": self.sparsity_start, "sparsity_step": self.sparsity_step,
            "sparsity_max_values": self.sparsity_max_values, "design": self.design,
            "cv_folds": self.cv_folds, "gap_permutations": self.gap_permutations,
            "cv_algorithms": list(self.cv_algorithms), "cv_runs": self.cv_runs,
            "data": {definition.name: definition.to_dict() for definition in self.data},
            "source_text": self.source_text,
        }

    def data_ref(self, name):
        """What loads data set ``name`` (``datasets.load`` takes either): its
        :class:`~pcskm.experiments.sources.DataDefinition` if the spec defines it, else the
        registry name."""
        return next((d for d in self.data if d.name == name), name)

    def hash(self):
        """SHA-256 of the canonical JSON of the validated content (not the raw text; name,
        description and source text excluded, and the keys of ``ADDED_DEFAULTS`` at those
        values)."""
        content = {k: v for k, v in self.to_dict().items() if k not in _UNHASHED
                   and not (k in ADDED_DEFAULTS and v == ADDED_DEFAULTS[k])}
        return hashlib.sha256(_canonical_json(content).encode()).hexdigest()


def did_you_mean(value, names, cutoff):
    """``"; did you mean 'NAME'?"`` for the name of ``names`` closest to ``value`` (difflib's
    ratio at least ``cutoff``), else ``""``: the hint of every "unknown ..." error."""
    close = difflib.get_close_matches(str(value), names, n=1, cutoff=cutoff)
    return f"; did you mean {close[0]!r}?" if close else ""


class _Checker:
    """Validation helpers whose errors name the spec and the offending key."""

    def __init__(self, source, check_external=True):
        self.source = source
        self.check_external = check_external

    def fail(self, message):
        raise ValueError(f"spec {self.source}: {message}")

    def keys(self, table, allowed, where):
        for key in table:
            if key not in allowed:
                hint = did_you_mean(key, allowed, 0.6)
                self.fail(f"unknown key {key!r} in {where}{hint} (valid keys: "
                          f"{', '.join(allowed)})")

    def choices(self, values, allowed, key, what):
        if not isinstance(values, list) or not values:
            self.fail(f"{key} must be a non-empty list of {what}s; got {values!r}")
        for value in values:
            if value not in allowed:
                hint = did_you_mean(str(value), allowed, 0.5)
                self.fail(f"unknown {what} {value!r} in {key}{hint} (valid: "
                          f"{', '.join(allowed)})")
        repeated = sorted({value for value in values if values.count(value) > 1})
        if repeated:
            self.fail(f"{key} lists {', '.join(map(repr, repeated))} more than once")
        return tuple(values)

    def integer(self, value, key, minimum):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.fail(f"{key} must be an integer >= {minimum}; got {value!r}")
        return value

    def number(self, value, key):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            self.fail(f"{key} must be a number; got {value!r}")
        return float(value)

    def percentage(self, value, key):
        try:
            return pct10(value)
        except ValueError as error:
            self.fail(f"bad percentage in {key}: {error}")

    def percentages(self, value):
        if isinstance(value, dict):
            self.keys(value, _RANGE_KEYS, "percentages")
            missing = [k for k in _RANGE_KEYS if k not in value]
            if missing:
                self.fail(f"the percentages range needs {', '.join(_RANGE_KEYS)}; missing "
                          f"{', '.join(missing)}")
            start, stop = (self.percentage(value[k], f"percentages.{k}") for k in ("start",
                                                                                   "stop"))
            step = self.number(value["step"], "percentages.step")
            if step <= 0:
                self.fail(f"percentages.step must be positive; got {value['step']!r}")
            step = self.percentage(step, "percentages.step")
            if stop < start:
                self.fail(f"percentages.stop ({value['stop']}) is below start ({value['start']})")
            tenths = list(range(start, stop + 1, step))
        elif isinstance(value, list):
            if not value:
                self.fail("percentages is empty")
            tenths = [self.percentage(v, "percentages") for v in value]
            if len(set(tenths)) != len(tenths):
                self.fail(f"percentages lists a value twice: {value!r}")
        else:
            self.fail(f"percentages must be a list or a {{start, stop, step}} table; got "
                      f"{value!r}")
        return tuple(t / 10 for t in sorted(tenths))  # the cube's percent order

    def params_table(self, value, where):
        """A variant's ``params``: a table of plain values (they enter the spec's hash)."""
        if not isinstance(value, dict):
            self.fail(f"{where}.params must be a table; got {value!r}")
        try:
            _canonical_json(value)
        except TypeError as error:
            self.fail(f"{where}.params holds a value that is not a string, number, boolean, "
                      f"list or table: {error}")
        return value

    def params(self, value, estimator, where):
        """A variant's constructor parameters: only those the runner does not set itself
        (``cells.RUNNER_PARAMETERS``), with values the estimator accepts."""
        self.params_table(value, where)
        cls = estimator_class(estimator)
        names = cls._get_param_names()
        settable = [name for name in names if name not in RUNNER_PARAMETERS]
        for key in value:
            if key in RUNNER_PARAMETERS:
                self.fail(f"{where}.params sets {key}, which the runner sets for every cell "
                          f"from {RUNNER_PARAMETERS[key]}; a variant of {estimator} may set "
                          f"{', '.join(settable)}")
            if key not in names:
                hint = did_you_mean(key, names, 0.6)
                self.fail(f"unknown parameter {key!r} in {where}.params{hint} (a variant of "
                          f"{estimator} may set {', '.join(settable)})")
        try:
            cls(**value)._validate_params()
        except ValueError as error:
            self.fail(f"{where}.params: {error}")
        return dict(value)

    def selection_scores(self, values, algorithms):
        """``(cv_folds, gap_permutations, cv_algorithms, cv_runs)``: the per-s selection
        scores the runner stores (docs/method/selection.md §2, §3); ``cv_algorithms`` defaults
        to every SKM and PCSKM algorithm of the spec when cv_folds is on, and is empty when it
        is off; ``cv_runs`` (None: every run) limits the CV scores to the first runs."""
        counts = []
        for key, minimum, what in (("cv_folds", 2, "constraint folds"),
                                   ("gap_permutations", 1, "permuted data sets")):
            value = values[key]
            if isinstance(value, bool) or not isinstance(value, int) or 0 < value < minimum \
                    or value < 0:
                self.fail(f"{key} must be 0 (off) or an integer >= {minimum} ({what}); got "
                          f"{value!r}")
            counts.append(value)
        cv_folds, gap_permutations = counts
        sparse = [v.name for v in algorithms if v.estimator in SPARSE]
        if (cv_folds or gap_permutations) and not sparse:
            self.fail("cv_folds and gap_permutations score the s grid of SKM and PCSKM, and "
                      "the spec runs neither")
        cv_runs = values["cv_runs"]
        if cv_runs is not None:
            if not cv_folds:
                self.fail("cv_runs is set but cv_folds is 0 (no cross-validation); set "
                          "cv_folds to 2 or more, or remove cv_runs")
            n_runs = values["n_runs"]
            if isinstance(cv_runs, bool) or not isinstance(cv_runs, int) or not 1 <= cv_runs \
                    or (isinstance(n_runs, int) and cv_runs > n_runs):
                self.fail(f"cv_runs must be an integer from 1 to n_runs ({n_runs!r}): the "
                          f"runs that get CV scores; got {cv_runs!r}")
        names = values["cv_algorithms"]
        if names is None:
            return cv_folds, gap_permutations, tuple(sparse) if cv_folds else (), cv_runs
        if not cv_folds:
            self.fail("cv_algorithms is set but cv_folds is 0 (no cross-validation); set "
                      "cv_folds to 2 or more, or remove cv_algorithms")
        chosen = self.choices(names, [v.name for v in algorithms], "cv_algorithms", "algorithm")
        users = [v.name for v in algorithms if v.is_user and v.name in chosen]
        if users:
            self.fail(f"cv_algorithms lists {', '.join(users)}, a user estimator: the "
                      "selection scores need the built-in engines (SKM and PCSKM)")
        unscored = [name for name in chosen if name not in sparse]
        if unscored:
            self.fail(f"cv_algorithms lists {', '.join(unscored)}, which fit no s grid; the "
                      f"spec's SKM and PCSKM algorithms are {', '.join(sparse)}")
        return (cv_folds, gap_permutations, tuple(name for name in sparse if name in chosen),
                cv_runs)

    def report(self, table, algorithms):
        """The ``[report]`` table's ``focus``: one of the spec's algorithms, or None."""
        if not isinstance(table, dict):
            self.fail(f"report must be a table ([report]); got {table!r}")
        self.keys(table, _REPORT_KEYS, "[report]")
        if "focus" not in table:
            return None
        return self.focus(table["focus"], algorithms, "report.focus")

    def run(self, table):
        """The ``[run]`` table's ``task_timeout``: a positive number of seconds, or None."""
        if not isinstance(table, dict):
            self.fail(f"run must be a table ([run]); got {table!r}")
        self.keys(table, _RUN_KEYS, "[run]")
        if "task_timeout" not in table:
            return None
        seconds = self.number(table["task_timeout"], "run.task_timeout")
        if not 0 < seconds < float("inf"):
            self.fail(f"run.task_timeout must be a positive number of seconds; got {seconds:g}")
        return seconds

    def focus(self, focus, algorithms, key):
        """``focus`` (the value of ``key``): the name of one of the spec's ``algorithms``."""
        names = [variant.name for variant in algorithms]
        if not isinstance(focus, str) or focus not in names:
            hint = did_you_mean(str(focus), names, 0.5)
            self.fail(f"{key} {focus!r} is not an algorithm of the spec{hint} (the spec's "
                      f"algorithms: {', '.join(names)})")
        return focus

    def preregistration(self, table, algorithms, values, report_focus):
        """The ``[preregistration]`` table (:class:`Preregistration`), or None: its rule must
        be a selection the spec's scores give for the focus (docs/reference/spec-toml.md)."""
        if table is None:
            return None
        if not isinstance(table, dict):
            self.fail(f"preregistration must be a table ([preregistration]); got {table!r}")
        self.keys(table, _PREREGISTRATION_KEYS, "[preregistration]")
        missing = [key for key in _PREREGISTRATION_REQUIRED if key not in table]
        if missing:
            self.fail(f"[preregistration] needs {', '.join(missing)} (it states the primary "
                      "analysis before any run: rule, focus and hypotheses)")
        focus = self.focus(table["focus"], algorithms, "preregistration.focus")
        if len(algorithms) < 2:
            self.fail("[preregistration] compares its focus with the other algorithms, and the "
                      "spec has no other")
        if report_focus is not None and report_focus != focus:
            self.fail(f"report.focus {report_focus!r} disagrees with preregistration.focus "
                      f"{focus!r}: the report leads with the pre-registered focus; remove "
                      "report.focus or make it the same")
        hypotheses = table["hypotheses"]
        if not isinstance(hypotheses, str) or not hypotheses.strip():
            self.fail(f"preregistration.hypotheses must be a non-empty string; got "
                      f"{hypotheses!r}")
        stated, table = table, preregistration_record(table)
        for key, allowed in (("level", PREREGISTRATION_LEVELS), ("failures", FAILURE_RULES)):
            if table[key] not in allowed:
                self.fail(f"preregistration.{key} must be one of {', '.join(allowed)}; got "
                          f"{table[key]!r}")
        amounts = {key: self.number(table[key], f"preregistration.{key}")
                    for key in ("alpha", "rope", "prior", "threshold")}
        for key, low, high, what in (("alpha", 0, 1, "between 0 and 1"),
                                     ("threshold", 0.5, 1, "above 0.5 and below 1")):
            if not low < amounts[key] < high:
                self.fail(f"preregistration.{key} must be {what}; got {amounts[key]!r}")
        if amounts["rope"] < 0:
            self.fail(f"preregistration.rope must not be negative; got {amounts['rope']!r}")
        if amounts["prior"] <= 0:
            self.fail(f"preregistration.prior must be positive; got {amounts['prior']!r}")
        failure_value = self.failure_value(table, algorithms, "failure_value" in stated)
        rule = self.primary_rule(table["rule"], next(v for v in algorithms if v.name == focus),
                                 values)
        return Preregistration(rule=rule, focus=focus, hypotheses=table["hypotheses"],
                               level=table["level"], failures=table["failures"],
                               failure_value=failure_value, **amounts)

    def failure_value(self, table, algorithms, stated):
        """``failure_value``: a number in [0, 1] (the F a failed fit counts with) or an
        algorithm of the spec (its F in the same cell); the default, LKM, is checked only when
        the intention-to-treat rule is primary (``stated``: the spec gives the key)."""
        value = table["failure_value"]
        names = [variant.name for variant in algorithms]
        if isinstance(value, str):
            if value not in names and (stated or table["failures"] == "itt"):
                self.fail(f"preregistration.failure_value {value!r} is not an algorithm of the "
                          f"spec ({', '.join(names)}); give one or a number in [0, 1]")
            return value
        number = self.number(value, "preregistration.failure_value")
        if not 0 <= number <= 1:
            self.fail(f"preregistration.failure_value must be in [0, 1] (an F-measure) or an "
                      f"algorithm's name; got {number!r}")
        return number

    def primary_rule(self, rule, focus, values):
        """A selection of ``experiments/report/selection.py``'s ``REGISTRY`` that reads no
        test label and that the spec's scores give for ``focus`` (``values``: cv_folds,
        cv_algorithms and gap_permutations resolved, datasets)."""
        from .report.selection import FIXED, REGISTRY  # the report's imports, only when needed

        names = [selection.name for selection in REGISTRY]
        if not isinstance(rule, str) or rule not in names:
            hint = did_you_mean(str(rule), names, 0.5)
            self.fail(f"unknown preregistration.rule {rule!r}{hint} (the selections of s: "
                      f"{', '.join(n for n in names if n not in LABEL_READING)})")
        if rule in LABEL_READING:
            self.fail(f"preregistration.rule {rule!r} reads the labels of the test folds: it "
                      "is a reference, not a selection a study can make; pre-register a "
                      "label-free rule (docs/method/selection.md)")
        needs = next(selection.needs for selection in REGISTRY if selection.name == rule)
        sparse = focus.estimator in SPARSE
        if "cv_score" in needs and not values["cv_folds"]:
            self.fail(f"preregistration.rule {rule!r} needs the constraint cross-validation "
                      "scores, and cv_folds is 0; set cv_folds to 2 or more")
        if "cv_score" in needs and sparse and focus.name not in values["cv_algorithms"]:
            self.fail(f"preregistration.rule {rule!r} needs the cross-validation scores of the "
                      f"focus {focus.name}, which is not in cv_algorithms "
                      f"({', '.join(values['cv_algorithms'])}); add it")
        if "gap" in needs and not values["gap_permutations"]:
            self.fail(f"preregistration.rule {rule!r} needs the gap statistic, and "
                      "gap_permutations is 0; set gap_permutations to 1 or more")
        if rule == FIXED and len(values["datasets"]) < 2:
            self.fail(f"preregistration.rule {rule!r} chooses s on the other data sets, and "
                      "the spec has one data set")
        return rule

    def algorithms(self, names, variants):
        if not isinstance(variants, dict):
            self.fail(f"variants must be a table of tables; got {variants!r}")
        for name, table in variants.items():
            where = f"variants.{name}"
            if name in ESTIMATORS:
                self.fail(f"{where}: a variant cannot reuse the estimator name {name!r}")
            if not isinstance(table, dict):
                self.fail(f"{where} must be a table with estimator and params")
            self.keys(table, _VARIANT_KEYS, where)
            if "estimator" not in table:
                self.fail(f"{where} needs an estimator (one of {', '.join(ESTIMATORS)}, or "
                          "an import path \"package.module:ClassName\")")
            estimator = table["estimator"]
            if not isinstance(estimator, str):
                self.fail(f"{where}.estimator must be a string; got {estimator!r}")
            if ":" not in estimator and estimator not in ESTIMATORS:
                hint = did_you_mean(estimator, ESTIMATORS, 0.5)
                self.fail(f"unknown estimator {estimator!r} in {where}.estimator{hint} (valid: "
                          f"{', '.join(ESTIMATORS)}, or the import path "
                          "\"package.module:ClassName\" of a user estimator)")
            if "constraints" in table and not is_import_path(estimator):
                self.fail(f"{where}.constraints applies to user estimators (import paths); "
                          f"{estimator} decides itself how it uses the constraints")
        self.choices(names, (*ESTIMATORS, *variants), "algorithms", "algorithm")
        unused = [name for name in variants if name not in names]
        if unused:
            self.fail(f"variants {', '.join(unused)} defined but not listed in algorithms")
        return tuple(
            AlgorithmVariant(name, name, {}) if name in ESTIMATORS
            else self.user_variant(name, variants[name])
            if is_import_path(variants[name]["estimator"])
            else AlgorithmVariant(name, variants[name]["estimator"],
                                  self.params(variants[name].get("params", {}),
                                              variants[name]["estimator"], f"variants.{name}"))
            for name in names
        )

    def user_variant(self, name, table):
        """A variant of a user estimator (an import path), checked against the contract of
        docs/reference/estimator-contract.md (the class is imported here)."""
        where = f"variants.{name}"
        params = self.params_table(table.get("params", {}), where)
        constraints = table.get("constraints", "use")
        if constraints not in CONSTRAINT_MODES:
            self.fail(f"{where}.constraints must be one of {', '.join(CONSTRAINT_MODES)}; got "
                      f"{constraints!r}")
        try:
            if self.check_external:
                estimators.check(table["estimator"], params, constraints)
        except estimators.EstimatorError as error:
            self.fail(f"{where}: {error}")
        return AlgorithmVariant(name, table["estimator"], dict(params), constraints)

# Names a data set's group cannot take: the files the store's layout keeps beside the groups
# (the root's zarr.json) and the temporary files a run deletes (*.partial), in any case (a
# case-insensitive file system); docs/reference/cube-schema.md.
RESERVED_NAMES = ("zarr.json",)
RESERVED_SUFFIXES = (".partial",)


# The longest spec or data set name: each names a file or folder (the default store
# results/<spec name>.zarr, a data set's group, the report's files), whose name may have at
# most 255 bytes with the prefixes and suffixes pcskm adds.
MAX_NAME_LENGTH = 100


def _check_spec_name(check, name):
    """Refuse a spec ``name`` that cannot name the default store ``results/<name>.zarr``
    inside ``results/``: a path separator, a leading dot (``..``), a control character, or
    more than :data:`MAX_NAME_LENGTH` characters."""
    shown = name if len(name) <= 40 else name[:40] + "..."
    if not name or name.startswith(".") or re.search(r"[/\\\x00-\x1f\x7f]", name):
        check.fail(f"name {shown!r}: a spec name names its store, results/<name>.zarr, and "
                   "may not be empty, begin with a dot or hold a path separator (/ or \\) "
                   "or a control character")
    if len(name) > MAX_NAME_LENGTH:
        check.fail(f"name {shown!r}: a spec name is at most {MAX_NAME_LENGTH} characters (it "
                   f"names its store, results/<name>.zarr); this one has {len(name)}")


def _data_tables(check, tables, folder):
    """The DataDefinitions of the ``[data.NAME]`` tables (docs/reference/spec-toml.md)."""
    if not isinstance(tables, dict):
        check.fail(f"data must hold [data.NAME] tables; got {tables!r}")
    registry = set(list_datasets())
    definitions = []
    for name, table in tables.items():
        if name in registry:
            check.fail(f"[data.{name}]: {name!r} is a registry data set; give the table "
                       "another name")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", name):
            check.fail(f"[data.{name}]: a data set name is letters, digits and _ . + - "
                       f"(it names a group of the cube); got {name!r}")
        if len(name) > MAX_NAME_LENGTH:
            check.fail(f"[data.{name[:20]}...]: a data set name is at most {MAX_NAME_LENGTH} "
                       f"characters (it names a folder of the store and the report's files); "
                       f"this one has {len(name)}")
        if name.lower() in RESERVED_NAMES or name.lower().endswith(RESERVED_SUFFIXES):
            check.fail(f"[data.{name}]: {name!r} is a name the store uses for its own files "
                       f"({', '.join(RESERVED_NAMES)}, *{', *'.join(RESERVED_SUFFIXES)}); give "
                       "the data set another name")
        try:
            definitions.append(parse_definition(name, table, folder, check.check_external))
        except ValueError as error:
            check.fail(str(error))
    return tuple(definitions)


def _refuse_development_sets(check, data):
    """A pre-registered (confirmatory) spec may not use the development sets of the
    selection rules (docs/method/selection.md §7.3), by name or by loader."""
    used = [d.name for d in data
            if d.name in DEVELOPMENT_SETS or d.loader in DEVELOPMENT_SETS.values()]
    if used:
        check.fail(f"[preregistration]: {', '.join(used)} "
                   f"{'is a development set' if len(used) == 1 else 'are development sets'} "
                   "of the selection rules (docs/method/selection.md §7.3); a confirmatory "
                   "spec may not use them")


def parse_spec(text, *, source="<string>", default_name="spec", folder=None,
               check_external=True):
    """Validate the TOML ``text`` of a spec into an ``ExperimentSpec``. ``folder``: where
    the relative paths of ``[data.NAME]`` tables resolve (default: the working folder).
    ``check_external=False`` reads a store's spec, where the files of its data tables and
    the modules of its user estimators may be absent: it neither checks that the files
    exist nor imports the estimators (their contract is not checked)."""
    check = _Checker(source, check_external)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        check.fail(f"invalid TOML: {error}")
    check.keys(raw, _KEYS, "the spec")
    missing = [key for key in _REQUIRED if key not in raw]
    if missing:
        check.fail(f"missing required key(s): {', '.join(missing)}")
    values = {**_DEFAULTS, "name": default_name, **raw}
    for key in ("name", "description"):
        if not isinstance(values[key], str):
            check.fail(f"{key} must be a string; got {values[key]!r}")
    _check_spec_name(check, values["name"])
    patterns = values["datasets"]
    if not isinstance(patterns, list) or not patterns:
        check.fail(f"datasets must be a non-empty list of names or patterns; got {patterns!r}")
    data = _data_tables(check, values["data"], Path.cwd() if folder is None else folder)
    try:
        datasets = tuple(match_datasets([str(p) for p in patterns],
                                        extra=[d.name for d in data]))
    except ValueError as error:
        check.fail(f"in datasets: {error}")
    unused = [d.name for d in data if d.name not in datasets]
    if unused and check_external:  # not again for a store's own spec
        log.warning("%s: [data.%s] defined but not listed in datasets: ignored", source,
                    "], [data.".join(unused))
    data = tuple(d for d in data if d.name in datasets)
    algorithms = check.algorithms(values["algorithms"], values["variants"])
    cv_folds, gap_permutations, cv_algorithms, cv_runs = check.selection_scores(values,
                                                                                algorithms)
    focus = check.report(values["report"], algorithms)
    preregistration = check.preregistration(
        values["preregistration"], algorithms,
        {"cv_folds": cv_folds, "cv_algorithms": cv_algorithms,
         "gap_permutations": gap_permutations, "datasets": datasets}, focus)
    if preregistration is not None:
        _refuse_development_sets(check, data)
    start = check.number(values["sparsity_start"], "sparsity_start")
    step = check.number(values["sparsity_step"], "sparsity_step")
    if not start > 1:
        check.fail(f"sparsity_start must be above 1 (s > 1); got {start}")
    if not step > 0:
        check.fail(f"sparsity_step must be positive; got {step}")
    return ExperimentSpec(
        name=values["name"],
        description=values["description"].strip(),
        seed=check.integer(values["seed"], "seed", 0),
        datasets=datasets,
        algorithms=algorithms,
        inits=check.choices(values["inits"], INITS, "inits", "init"),
        kinds=check.choices(values["kinds"], KINDS, "kinds", "kind"),
        seeding_kinds=check.choices(values["seeding_kinds"], KINDS, "seeding_kinds", "kind"),
        percentages=check.percentages(values["percentages"]),
        n_runs=check.integer(values["n_runs"], "n_runs", 1),
        n_folds=check.integer(values["n_folds"], "n_folds", 2),
        max_iter=check.integer(values["max_iter"], "max_iter", 1),
        sparsity_start=start,
        sparsity_step=step,
        sparsity_max_values=check.integer(values["sparsity_max_values"],
                                          "sparsity_max_values", 1),
        design=check.choices([values["design"]], DESIGNS, "design", "design")[0],
        cv_folds=cv_folds,
        gap_permutations=gap_permutations,
        cv_algorithms=cv_algorithms,
        cv_runs=cv_runs,
        data=data,
        source_text=text,
        focus=focus,
        task_timeout=check.run(values["run"]),
        preregistration=preregistration,
    )


def list_specs():
    """The names of the bundled specs."""
    return list(BUNDLED)


def load_spec(name_or_path):
    """A bundled spec by name (``BUNDLED``) or a TOML file by path."""
    if isinstance(name_or_path, str) and name_or_path in BUNDLED:
        text = (resources.files("pcskm.experiments") / "specs" / f"{name_or_path}.toml").read_text(
            encoding="utf-8"
        )
        return parse_spec(text, source=f"{name_or_path} (bundled)", default_name=name_or_path)
    path = Path(name_or_path)
    if not path.is_file():
        close = difflib.get_close_matches(str(name_or_path), BUNDLED, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"no spec {str(name_or_path)!r}: not a bundled spec ({', '.join(BUNDLED)}) and no "
            f"such file{hint}"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"spec {path} is not UTF-8 text ({error}); save it as UTF-8") from None
    return replace(parse_spec(text, source=str(path), default_name=path.stem,
                              folder=path.resolve().parent), path=str(path.resolve()))

"""The confirmatory study's three specs (experiments/specs/confirmatory*.toml): one design and
one pre-registration; the primary spec holds the real family standardised, the raw spec the
same sets as the catalogue reads them, the sparsity spec the 20 weak-signal sets. Reads the
specs only (no data, no clustering)."""

import tomllib
from pathlib import Path

import pytest

from pcskm.experiments import load_spec, real_sets
from pcskm.experiments.datasets import WEAK_SIGNAL_SETTINGS, weak_signal_name
from pcskm.experiments.development import DEVELOPMENT_SETS

SPECS = Path(__file__).resolve().parents[1] / "experiments" / "specs"
NAMES = ("confirmatory", "confirmatory-raw", "confirmatory-sparsity")
OWN = {"name", "description", "datasets", "data"}  # the keys a spec of the three has its own


def _raw(name):
    with (SPECS / f"{name}.toml").open("rb") as handle:
        return tomllib.load(handle)


@pytest.mark.parametrize("name", NAMES)
def test_each_spec_is_bundled_and_reads(name):
    spec = load_spec(name)
    assert spec.name == name and spec.preregistration is not None


def test_one_design_and_one_preregistration():
    tables = [_raw(name) for name in NAMES]
    designs = [{key: value for key, value in table.items() if key not in OWN}
               for table in tables]
    assert designs[1] == designs[0] and designs[2] == designs[0]
    records = [load_spec(name).preregistration.to_dict() for name in NAMES]
    assert records[1] == records[0] and records[2] == records[0]
    primary = records[0]
    assert (primary["rule"], primary["focus"], primary["level"], primary["failures"]) == (
        _raw("confirmatory")["preregistration"]["rule"], "PCSKM", "dataset", "itt")
    for hypothesis in ("H1", "H5", "ROPE", "Holm", "PRIMARY"):
        assert hypothesis in primary["hypotheses"]


def test_the_data_are_the_real_family_under_each_protocol_and_the_weak_signal_sets():
    standardised, raw = _raw("confirmatory"), _raw("confirmatory-raw")
    assert len(standardised["datasets"]) == len(raw["datasets"]) == 42
    for spec, tables in ((standardised, real_sets.family_tables(True)),
                         (raw, real_sets.family_tables(False))):
        assert spec["datasets"] == list(tables)
        assert spec["data"] == {name: table for name, table in tables.items()
                                if table is not None}
    assert all(table["standardise"] is True for table in standardised["data"].values())
    assert not any(table.get("standardise") for table in raw["data"].values())
    # a set keeps its name under both protocols (its cut draws the same points), but the
    # registry sets, which a table cannot name
    renamed = {name.removesuffix(real_sets.STANDARDISED_SUFFIX)
               for name in standardised["datasets"]}
    assert renamed == set(raw["datasets"])
    weak = _raw("confirmatory-sparsity")["datasets"]
    assert weak == [weak_signal_name(*setting) for setting in WEAK_SIGNAL_SETTINGS]
    assert len(weak) == 20
    every = {*standardised["datasets"], *raw["datasets"], *weak}
    assert not every & set(DEVELOPMENT_SETS)

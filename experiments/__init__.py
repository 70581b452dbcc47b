"""Data sets, the cross-validation and constraint protocol, experiment specs and the paper's
Table 1 (docs/method/datasets.md and protocol.md)."""

from ._datafiles import ChecksumError, DataNotFoundError, default_data_dir, resolve_data_dir
from .datasets import (
    Dataset,
    dataset_info,
    fetch,
    format_dataset_table,
    list_datasets,
    load,
    match_datasets,
    verify,
)
from .protocol import (
    KIND_CODES,
    KINDS,
    Protocol,
    kind_code,
    pct10,
    seed_sequence,
    sparsity_grid,
)
from .sources import DataDefinition, DataError, load_definition
from .spec import (
    ESTIMATORS,
    INITS,
    AlgorithmVariant,
    ExperimentSpec,
    list_specs,
    load_spec,
    parse_spec,
)
from .table1 import format_table1, table1

__all__ = [
    "ESTIMATORS", "INITS", "KINDS", "KIND_CODES", "AlgorithmVariant", "ChecksumError",
    "DataDefinition", "DataError", "DataNotFoundError", "Dataset", "ExperimentSpec", "Protocol",
    "dataset_info",
    "default_data_dir", "fetch", "format_dataset_table", "format_table1", "kind_code",
    "list_datasets", "list_specs", "load", "load_definition", "load_spec", "match_datasets",
    "parse_spec", "pct10", "resolve_data_dir", "seed_sequence", "sparsity_grid", "table1", "verify",
]

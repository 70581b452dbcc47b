"""Data sets, the cross-validation and constraint protocol, experiment specs and the paper's
Table 1 (docs/method/datasets.md and protocol.md). Names are imported on first use
(:mod:`pcskm._lazy`), so that ``pcskm datasets`` and ``pcskm status`` start fast."""

from pcskm._lazy import lazy_exports

_EXPORTS = {
    **dict.fromkeys(["ChecksumError", "DataNotFoundError", "default_data_dir",
                     "resolve_data_dir"], "._datafiles"),
    **dict.fromkeys(["Dataset", "dataset_info", "fetch", "format_dataset_table",
                     "list_datasets", "load", "match_datasets", "verify"], ".datasets"),
    **dict.fromkeys(["KIND_CODES", "KINDS", "Protocol", "kind_code", "pct10", "seed_sequence",
                     "sparsity_grid"], ".protocol"),
    **dict.fromkeys(["DataDefinition", "DataError", "load_definition"], ".sources"),
    **dict.fromkeys(["ESTIMATORS", "INITS", "AlgorithmVariant", "ExperimentSpec", "list_specs",
                     "load_spec", "parse_spec"], ".spec"),
    **dict.fromkeys(["format_table1", "table1"], ".table1"),
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

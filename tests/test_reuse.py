"""``pcskm run SPEC --from STORE``: the cells copied from a compatible store are the cells a
run computes, byte for byte, and only the others are computed."""

import numpy as np
import pytest
import zarr

from pcskm.experiments.spec import parse_spec
from pcskm.runner import IncompatibleStore, run_spec
from pcskm.runner.store import NotAStore

SOURCE = """
name = "source"
seed = 0
datasets = ["iris", "brodinova-3-7"]
algorithms = ["LKM", "PCKM", "PCSKM"]
inits = ["dkm++", "seeding"]
kinds = ["random", "must-link"]
percentages = [1, 5.5]
n_runs = 2
n_folds = 10
"""
# other data sets, algorithms, percentages and runs; the same seed, design, folds and grids
TARGET = """
name = "target"
seed = 0
datasets = ["iris"]
algorithms = ["LKM", "SKM", "PCSKM"]
inits = ["dkm++", "seeding"]
kinds = ["random", "must-link"]
percentages = [1, 10]
n_runs = 3
n_folds = 10
"""
LABELS = ("algorithm", "init", "kind", "percent", "run")


@pytest.fixture(scope="module")
def source(client, tmp_path_factory):
    store = tmp_path_factory.mktemp("source") / "source.zarr"
    run_spec(parse_spec(SOURCE), store, client=client, progress=False)
    return store


def blocks(store, name, array="done"):
    """``{(algorithm, init, kind, percent, run): value}`` of a data set's ``done`` markers
    (as bools) or another marker array of ``store``."""
    group = zarr.open_group(str(store), mode="r")[name]
    coords = [list(group[label][:]) for label in LABELS]
    values = group[array][:]
    value = bool if array == "done" else int
    return {tuple(coords[d][i] for d, i in enumerate(index)): value(values[index])
            for index in np.ndindex(values.shape)}


def same_arrays(first, second):
    """The (group, variable) pairs whose arrays differ in any byte, shape or dtype (but
    ``run_index``, the log of which run marked each block done)."""
    a, b = zarr.open_group(str(first), mode="r"), zarr.open_group(str(second), mode="r")
    differ = []
    assert sorted(a.group_keys()) == sorted(b.group_keys())
    for name in a.group_keys():
        assert sorted(a[name].array_keys()) == sorted(b[name].array_keys())
        for variable in sorted(set(a[name].array_keys()) - {"run_index"}):
            x, y = a[name][variable][...], b[name][variable][...]
            if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
                differ.append((name, variable))
    return differ


@pytest.mark.parametrize("gap", [0, 2], ids=["no scores", "gap wanted"])
def test_copied_cells_equal_computed_ones(client, source, tmp_path, gap):
    """With the gap statistic on in the target, the SKM and PCSKM blocks of the source
    (which has no scores) are computed again; LKM's are copied."""
    spec = parse_spec(TARGET + f"gap_permutations = {gap}\n")
    fresh = run_spec(spec, tmp_path / "fresh.zarr", client=client, progress=False)
    reused = run_spec(spec, tmp_path / "reused.zarr", client=client, progress=False,
                      reuse_from=source)
    assert same_arrays(tmp_path / "fresh.zarr", tmp_path / "reused.zarr") == []
    # what can be copied, counted label by label: done in the source, and for the algorithms
    # that get the gap in the target, never (the source has no scores)
    in_source = blocks(source, "iris")
    copyable = [key for key, done in blocks(tmp_path / "fresh.zarr", "iris").items()
                if done and in_source.get(key) and not (gap and key[0] in ("SKM", "PCSKM"))]
    assert len(copyable) > 0
    assert fresh.n_cells - reused.n_cells == len(copyable) * 10
    # the copied blocks' code is unknown (another store's runs computed them), the rest
    # are the run's (the first into the store)
    done = blocks(tmp_path / "reused.zarr", "iris")
    runs = blocks(tmp_path / "reused.zarr", "iris", "run_index")
    assert {key for key, d in done.items() if d and runs[key] == -1} == set(copyable)
    assert {runs[key] for key, d in done.items() if d and key not in copyable} == {0}
    assert gap or any(key[0] == "PCSKM" for key in copyable)


def test_an_incompatible_or_missing_store_is_refused(source, tmp_path):
    spec = parse_spec(TARGET.replace("seed = 0", "seed = 1"))
    with pytest.raises(IncompatibleStore, match="(?s)seed is 0 .* but 1 .*Nothing was copied"):
        run_spec(spec, tmp_path / "target.zarr", progress=False, reuse_from=source)
    with pytest.raises(NotAStore, match="missing"):
        run_spec(spec, tmp_path / "target.zarr", progress=False,
                 reuse_from=tmp_path / "none.zarr")

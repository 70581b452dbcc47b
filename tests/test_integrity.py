"""Damaged chunks under done markers: ``verify`` names them, ``pcskm run`` recomputes exactly
their blocks and gives the reference cube, the report refuses them; stores made before
chunks carried checksums still open, verify as far as they can, run and repair."""

import dataclasses
import shutil
import warnings

import numpy as np
import pytest
import xarray as xr
import zarr
from cubes import assert_same_cube, results_data
from zarr.codecs import ZstdCodec

from pcskm import forking
from pcskm.experiments.report import write_report
from pcskm.experiments.spec import parse_spec
from pcskm.runner import run_spec
from pcskm.runner.store import Cube, DamagedStore, integrity, read_layout, verify
from pcskm.runner.store import schema as schema_module

TINY = """
name = "tiny-integrity"
seed = 0
datasets = ["iris"]
algorithms = ["LKM", "PCSKM"]
inits = ["dkm++", "maximin"]
kinds = ["random", "must-link"]
percentages = [1]
n_runs = 2
n_folds = 10
"""
SPEC = parse_spec(TINY)
FIT_VARIABLES = ("f_score", "precision", "recall", "satisfied", "status", "n_iter", "weights",
                 "weights_per_s")
# one chunk per (kind, percent), every algorithm, init, run and fold in it
# (docs/reference/cube-schema.md, Chunks and size): positions along the block dims
CHUNKS = [(0, 0, k, p) for k in range(2) for p in range(1)]
CELLS_PER_CHUNK = 2 * 2 * SPEC.n_runs * SPEC.n_folds  # algorithms x inits x runs x folds
ALL_CELLS = len(CHUNKS) * CELLS_PER_CHUNK


IN_PROCESS_CLIENT = True  # conftest's client: one worker thread in this process


def compute(store, client):
    return run_spec(SPEC, store, client=client, progress=False)


@pytest.fixture(scope="module")
def reference(client, tmp_path_factory):
    store = tmp_path_factory.mktemp("reference") / "tiny.zarr"
    compute(store, client)
    return store


@pytest.fixture(scope="module")
def old_reference(client, tmp_path_factory):
    """The spec computed the way stores were written before chunks carried checksums (Zarr's
    default codecs, chunks of fill values not written)."""
    store = tmp_path_factory.mktemp("old") / "tiny.zarr"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(schema_module, "COMPRESSORS", (ZstdCodec(level=0, checksum=False),))
        patch.setattr(schema_module, "WRITE_CONFIG", {"write_empty_chunks": False})
        compute(store, client)
    return store


def copy(store, tmp_path):
    target = tmp_path / "copy.zarr"
    shutil.copytree(store, target)
    return target


def chunk_file(store, variable, position=()):
    """The file of a chunk, from the store's layout: one chunk per (kind, percent) of the
    fit variables and ``n_constraints`` (``position`` along their leading dims), one per
    group of ``done``."""
    ndim = len(zarr.open_group(str(store), mode="r")["iris"][variable].shape)
    coords = (*position, *(0,) * (ndim - len(position)))
    return store.joinpath("iris", variable, "c", *map(str, coords))


def damage(file, mode):
    data = file.read_bytes()
    if mode == "delete":
        file.unlink()
    elif mode == "truncate":
        file.write_bytes(data[: len(data) // 2])
    else:  # scramble: flip every bit of 16 bytes in the middle, the length unchanged
        middle = len(data) // 2
        file.write_bytes(data[:middle] + bytes(b ^ 0xFF for b in data[middle:middle + 16])
                         + data[middle + 16:])


def found(store):
    return {(d.array, d.file) for d in verify(store).damage}


@pytest.mark.parametrize("mode", ["delete", "truncate", "scramble"])
def test_damaged_chunks_of_every_variable_are_found_and_exactly_their_blocks_recomputed(
        reference, client, tmp_path, mode):
    store = copy(reference, tmp_path)
    assert verify(store).ok
    damaged = {(variable, chunk_file(store, variable, CHUNKS[1])) for variable in FIT_VARIABLES}
    for _, file in damaged:
        damage(file, mode)
    report = verify(store)
    assert found(store) == damaged
    assert report.lost_cells() == CELLS_PER_CHUNK
    text = report.describe()
    for _, file in damaged:
        assert str(file.relative_to(store)) in text
    with pytest.raises(DamagedStore, match="shows no value it cannot verify"):
        write_report(store, tmp_path / "report")
    rerun = compute(store, client)
    assert rerun.n_cells == CELLS_PER_CHUNK  # exactly the blocks of that chunk
    assert verify(store).ok
    assert_same_cube(reference, store)


@pytest.mark.parametrize("mode", ["delete", "truncate", "scramble"])
def test_damaged_constraint_counts_or_done_markers_recompute_the_group(
        reference, client, tmp_path, mode):
    """``n_constraints`` has one chunk per (kind, percent), on which every block of that
    (kind, percent) depends; ``done`` one chunk per data set, on which every block of the
    group depends. A deleted ``done`` chunk reads as nothing done (not damage, but every cell
    is computed again)."""
    store = copy(reference, tmp_path)
    file = chunk_file(store, "n_constraints", CHUNKS[1][2:])
    damage(file, mode)
    assert found(store) == {("n_constraints", file)}
    assert verify(store).lost_cells() == CELLS_PER_CHUNK
    assert compute(store, client).n_cells == CELLS_PER_CHUNK
    assert_same_cube(reference, store)

    file = chunk_file(store, "done")
    damage(file, mode)
    assert found(store) == (set() if mode == "delete" else {("done", file)})
    if mode != "delete":  # the count is of the cells recomputed (it said 0)
        assert f"{ALL_CELLS} cells marked done have lost values" in verify(store).describe()
    assert compute(store, client).n_cells == ALL_CELLS
    assert_same_cube(reference, store)


def test_done_blocks_without_fits_are_recomputed_block_by_block(reference, client, tmp_path):
    """The damage two writers left: blocks marked done whose status says missing (intact
    chunks, written from another process's memory). Only those (percent, run) blocks are
    recomputed."""
    store = copy(reference, tmp_path)
    status = zarr.open_group(str(store), mode="r+")["iris"]["status"]
    values = status[...]
    values[1, 0, 1, 0, 1] = 0  # PCSKM, dkm++, must-link, 1 %, run 1: every fold and s
    status[...] = values
    cube = Cube(store)  # the other writer recorded the chunk it wrote: it is in its place
    cube.record_stored("iris", [(1, 0)], ("status",))
    cube.write_markers("iris")
    report = verify(store)
    assert [(d.array, d.kind) for d in report.damage] == [("status", "inconsistent")]
    assert report.lost_cells() == SPEC.n_folds
    assert compute(store, client).n_cells == SPEC.n_folds
    assert_same_cube(reference, store)


def test_a_store_without_checksums_opens_verifies_runs_and_repairs(
        old_reference, reference, client, tmp_path):
    """Chunks without a checksum are decoded instead: a deleted or truncated chunk is found
    and recomputed; the values equal those of a store with checksums."""
    store = copy(old_reference, tmp_path)
    report = verify(store)
    assert report.ok and report.unchecksummed
    assert "carry no checksums" in report.describe()
    deleted = chunk_file(store, "f_score", CHUNKS[0])
    truncated = chunk_file(store, "weights", CHUNKS[1])
    damage(deleted, "delete")
    damage(truncated, "truncate")
    assert found(store) == {("f_score", deleted), ("weights", truncated)}
    assert compute(store, client).n_cells == 2 * CELLS_PER_CHUNK
    assert verify(store).ok
    assert_same_cube(reference, store)
    codecs = zarr.open_group(str(store), mode="r")["iris"]["f_score"].metadata.codecs
    assert [type(c).__name__ for c in codecs] == ["BytesCodec", "ZstdCodec"]  # unchanged


def test_damaged_coordinates_are_rewritten_from_the_spec(reference, client, tmp_path):
    """A coordinate chunk that fails its checksum is named by verify and rewritten by a run
    from the spec (its recorded digest), every value kept (issue 64)."""
    store = copy(reference, tmp_path)
    file = chunk_file(store, "algorithm")
    damage(file, "scramble")
    report = verify(store)
    assert not report.ok and report.relabelled() == ["iris"]
    assert [(d.array, d.file, d.kind) for d in report.damage] == [("algorithm", file, "corrupt")]
    assert "checksum mismatch" in report.describe()
    assert compute(store, client) is None  # nothing computed again
    assert verify(store).ok
    assert_same_cube(reference, store)


def test_chunks_of_fill_values_are_written(reference, tmp_path):
    """Every chunk a done block needs exists, even one holding only fill values (an all-NaN
    f_score chunk is what a chunk of failed fits writes), so that a missing chunk is always
    damage. Zarr's default is to delete such a chunk."""
    group = zarr.open_group(str(reference), mode="r")["iris"]
    done = group["done"][...]
    for variable in FIT_VARIABLES:
        for position in CHUNKS:
            assert done[position].any()
            assert chunk_file(reference, variable, position).is_file(), (variable, position)
    store = copy(reference, tmp_path)
    cube = Cube(store)
    cube.arrays["iris"]["f_score"][CHUNKS[0]] = np.nan
    assert chunk_file(store, "f_score", CHUNKS[0]).is_file()
    assert set(kinds_of(store).values()) == {"misplaced"}  # not the chunk the task wrote
    cube.record_stored("iris", [CHUNKS[0][2:]], ("f_score",))
    cube.write_markers("iris")
    assert verify(store).ok


def test_weights_per_s_hold_every_fit_and_weights_their_mean_over_s(reference):
    """weights_per_s: LKM's ones at its no-s entry, PCSKM's weights at every s of its grid
    (unit L2 norm, L1 norm at most s, docs/method/protocol.md §11), NaN elsewhere; weights is
    their mean over the s whose fit did not fail."""
    group = xr.open_datatree(reference, engine="zarr")["iris"].to_dataset().load()
    per_s, status = group.weights_per_s, group.status
    lkm, pcskm = per_s.sel(algorithm="LKM"), per_s.sel(algorithm="PCSKM")
    assert (lkm.isel(sparsity=0) == 1).all() and lkm.isel(sparsity=slice(1, None)).isnull().all()
    assert pcskm.isel(sparsity=0).isnull().all()
    fitted = status.sel(algorithm="PCSKM").isin([1, 2])
    grid = pcskm.where(fitted).isel(sparsity=slice(1, None))
    assert grid.notnull().any()
    norm = np.sqrt((grid ** 2).sum("feature")).where(fitted.isel(sparsity=slice(1, None)))
    np.testing.assert_allclose(norm.values[np.isfinite(norm.values)], 1.0, rtol=1e-5)
    l1 = abs(grid).sum("feature").where(fitted.isel(sparsity=slice(1, None)))
    assert (l1 <= l1.sparsity * (1 + 1e-5)).where(l1.notnull(), True).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a cell with every s failed: NaN
        mean = np.nanmean(np.where(fitted.values[..., None], pcskm.values.astype(float),
                                   np.nan), axis=-2)
    np.testing.assert_allclose(group.weights.sel(algorithm="PCSKM").values, mean, rtol=1e-6)


def test_a_store_made_before_weights_per_s_is_read_extended_and_reported(reference, client,
                                                                          tmp_path):
    """A store made before weights_per_s (the variable absent, no metadata digests, no chunk
    digests: schema version 2) verifies, is extended (one more run) without gaining the
    variable, gets the values a new store gets for every other variable, and reports without
    the unthresholded selection."""
    store = copy(reference, tmp_path)
    shutil.rmtree(store / "iris" / "weights_per_s")
    shutil.rmtree(store / "iris" / "chunk_sha256")
    root = zarr.open_group(str(store), mode="r+")
    root.attrs.put({**{k: v for k, v in root.attrs.asdict().items() if k != "metadata_sha256"},
                    "schema_version": 2})
    with warnings.catch_warnings():  # consolidated metadata is not in the Zarr 3 spec
        warnings.simplefilter("ignore", UserWarning)
        zarr.consolidate_metadata(str(store))
    assert verify(store).ok
    assert not read_layout(store).weights_per_s
    more = parse_spec(TINY.replace("n_runs = 2", "n_runs = 3"))
    summary = run_spec(more, store, client=client, progress=False)
    assert summary.n_cells == ALL_CELLS // 2  # the third run only
    assert verify(store).ok
    fresh = tmp_path / "fresh.zarr"
    run_spec(more, fresh, client=client, progress=False)
    extended = xr.open_datatree(store, engine="zarr")["iris"].to_dataset().load()
    direct = xr.open_datatree(fresh, engine="zarr")["iris"].to_dataset().load()
    assert "weights_per_s" not in extended and "weights_per_s" in direct
    # results_data leaves out the chunk digests, which differ where the chunks hold
    # weights_per_s's
    xr.testing.assert_identical(results_data(extended),
                                results_data(direct).drop_vars("weights_per_s"))
    text = write_report(store, tmp_path / "report").read_text()
    assert "Not in this cube: unthresholded." in text


def swap(a, b):
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)


def kinds_of(store):
    return {(d.array, d.file): d.kind for d in verify(store).damage}


@pytest.mark.parametrize("case", ["swapped f_score", "f_score over precision",
                                  "swapped weights", "weights_per_s over weights"])
def test_an_intact_chunk_in_another_place_is_found_and_exactly_its_blocks_recomputed(
        reference, client, tmp_path, case):
    """A chunk's bytes are intact (its CRC32C holds) but it is not the chunk written at its
    place: two chunk files of one array swapped, a chunk copied over another array's at the
    same place, a chunk of another shape copied in. verify names each file, the report
    refuses the store, and a run recomputes exactly the blocks of those chunks and gives
    the reference cube."""
    store = copy(reference, tmp_path)
    if case.startswith("swapped"):
        variable = case.split()[1]
        first, second = (chunk_file(store, variable, chunk) for chunk in CHUNKS)
        assert first.read_bytes() != second.read_bytes()  # else the swap changes no value
        swap(first, second)
        damaged, lost = {(variable, first), (variable, second)}, 2 * CELLS_PER_CHUNK
    else:
        source, _, target = case.split()
        file = chunk_file(store, target, CHUNKS[1])
        file.write_bytes(chunk_file(store, source, CHUNKS[1]).read_bytes())
        damaged, lost = {(target, file)}, CELLS_PER_CHUNK
    report = verify(store)
    assert kinds_of(store) == {key: "misplaced" for key in damaged}
    assert report.lost_cells() == lost
    text = report.describe()
    for _, file in damaged:
        assert f"{file.relative_to(store)}: not the chunk written here" in text
    if case == "weights_per_s over weights":
        assert "a chunk of another shape or type" in text
    with pytest.raises(DamagedStore, match="shows no value it cannot verify"):
        write_report(store, tmp_path / "report")
    assert compute(store, client).n_cells == lost  # exactly the blocks of those chunks
    assert verify(store).ok
    assert_same_cube(reference, store)


def test_a_store_of_schema_version_2_is_bound_by_the_next_run(reference, client, tmp_path,
                                                              caplog):
    """A store of schema version 2 (the chunks of version 3, no record of their digests):
    verify says its chunks are not bound to their place; the next run records the digests
    of its chunks as they are (each the SHA-256 of its key, chunk shape and bytes, bound to
    the store's id and seed: computed here with hashlib), says so, and from then on a
    swapped chunk is found."""
    import hashlib
    import json

    from pcskm.runner.store.digests import record_metadata

    store = copy(reference, tmp_path)
    shutil.rmtree(store / "iris" / "chunk_sha256")
    record_metadata(store, {"schema_version": 2})
    report = verify(store)
    assert report.ok and "not bound to their place (schema version 2)" in report.describe()
    with caplog.at_level("WARNING", logger="pcskm"):
        assert compute(store, client) is None  # nothing to compute
    assert "was of schema version 2" in caplog.text
    root = zarr.open_group(str(store), mode="r")
    assert root.attrs["schema_version"] == 3
    record = root["iris"]["chunk_sha256"][...]
    group = root["iris"]
    binding = f"{root.attrs['store_id']}:{root.attrs['protocol']['seed']}"
    for name, array in group.arrays():
        dims = array.metadata.dimension_names
        markers = ("done", "scored", "run_index", "chunk_sha256")  # written by the client
        if name in markers or not {"kind", "percent"} <= set(dims):
            continue
        for k, _ in enumerate(SPEC.kinds):
            coords = tuple(k if d == "kind" else 0 for d in dims)
            key = f"iris/{name}/c/" + "/".join(map(str, coords))
            header = f"{key} {','.join(map(str, array.chunks))}\n".encode()
            chunk = hashlib.sha256(header + (store / key).read_bytes()).hexdigest()
            expected = hashlib.sha256(f"{binding}\n{chunk}".encode()).hexdigest()
            assert json.loads(record[k, 0])[name] == expected
    swap(chunk_file(store, "recall", CHUNKS[0]), chunk_file(store, "recall", CHUNKS[1]))
    assert set(kinds_of(store).values()) == {"misplaced"}


TWO_GROUPS = dataclasses.replace(SPEC, name="tiny-two-groups", datasets=("iris", "brodinova-5-5"))


def test_groups_checked_side_by_side_find_what_one_process_finds(client, tmp_path,
                                                                 monkeypatch):
    """The data set groups checked by forked children (a store in a folder with many
    chunks) give the verification of the groups checked one after the other: damage of
    every kind in both groups, with a damaged status chunk beside an inconsistent one (whose
    fits are then read chunk by chunk), in the same order with the same blocks."""
    store = tmp_path / "two.zarr"
    run_spec(TWO_GROUPS, store, client=client, progress=False)
    status = zarr.open_group(str(store), mode="r+")["brodinova-5-5"]["status"]
    values = status[...]
    values[0, 1, 1, 0, 0] = 0  # LKM, maximin, must-link, 1 %, run 0: missing
    status[...] = values
    cube = Cube(store)
    cube.record_stored("brodinova-5-5", [(1, 0)], ("status",))
    cube.write_markers("brodinova-5-5")
    damage(chunk_file(store, "f_score", CHUNKS[1]), "delete")
    damage(chunk_file(store, "weights", CHUNKS[0]), "scramble")
    second = store / "brodinova-5-5"
    damage(second.joinpath("status", "c", *map(str, (0, 0, 0, 0, 0, 0, 0))), "truncate")
    over = second.joinpath("weights", "c", *map(str, (0, 0, 1, 0, 0, 0, 0)))
    over.write_bytes(second.joinpath("weights_per_s", "c", *map(str, (0,) * 2 + (1,) + (0,) * 5)
                                     ).read_bytes())
    one = verify(store, workers=1)
    assert {(d.dataset, d.array, d.kind) for d in one.damage} == {
        ("iris", "f_score", "missing"), ("iris", "weights", "corrupt"),
        ("brodinova-5-5", "status", "corrupt"), ("brodinova-5-5", "status", "inconsistent"),
        ("brodinova-5-5", "weights", "misplaced")}
    monkeypatch.setattr(integrity, "FORK_FROM", 0)
    workers = []
    monkeypatch.setattr(integrity, "forked_map", lambda *args, **kwargs: workers.append(
        kwargs["workers"]) or forking.forked_map(*args, **kwargs))
    side_by_side = verify(store, workers=2)
    assert workers == [2]
    assert len(side_by_side.damage) == len(one.damage)
    for a, b in zip(side_by_side.damage, one.damage, strict=True):
        assert a == b
        np.testing.assert_array_equal(a.blocks, b.blocks)
    assert side_by_side.n_chunks == one.n_chunks
    for name in ("iris", "brodinova-5-5"):
        np.testing.assert_array_equal(side_by_side.done[name], one.done[name])
        np.testing.assert_array_equal(side_by_side.scored[name], one.scored[name])
        np.testing.assert_array_equal(side_by_side.wanted[name], one.wanted[name])
    assert side_by_side.describe() == one.describe()

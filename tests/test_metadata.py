"""The store's metadata is as protected as its chunks (docs/reference/cube-schema.md, Metadata
digests): every change to a ``zarr.json`` (a copy in the root's consolidated metadata or a
node's own file) is refused by ``verify``, ``status`` and ``report`` with one line naming the
file and exit code 2; ``pcskm run`` rewrites what it can and gives the reference cube bit for
bit, and refuses the rest the same way. The CLI runs in this process (``main``), its runs on
the module's in-process Dask scheduler."""

import hashlib
import json
import shutil
import warnings

import pytest
import xarray as xr
import zarr
from cubes import assert_same_cube, tiny_spec

from pcskm.experiments.spec import parse_spec
from pcskm.runner import run_spec
from pcskm.runner.cli import main

SPEC_TEXT = tiny_spec("tiny-metadata")
RECORD = "metadata_sha256"


IN_PROCESS_CLIENT = True  # conftest's client: one worker thread in this process


@pytest.fixture(scope="module")
def reference(client, tmp_path_factory):
    store = tmp_path_factory.mktemp("reference") / "tiny.zarr"
    run_spec(parse_spec(SPEC_TEXT), store, client=client, progress=False)
    return store


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("spec") / "tiny.toml"
    path.write_text(SPEC_TEXT)
    return path


@pytest.fixture
def cli(capsys, client):
    """``cli(*args)``: ``pcskm ARGS`` in this process; returns (exit code, stderr, stdout).
    ``run`` goes to the module's scheduler."""
    def call(*args):
        args = [str(a) for a in args]
        if args[0] == "run":
            args += ["--scheduler", client.scheduler.address, "--no-progress"]
        code = main(args)
        out = capsys.readouterr()
        return code, out.err, out.out
    return call


def copy(store, tmp_path):
    target = tmp_path / "copy.zarr"
    shutil.copytree(store, target)
    return target


def read(file):
    return json.loads(file.read_text())


def edit(file, change):
    document = read(file)
    change(document)
    file.write_text(json.dumps(document, indent=2))


def copy_in_root(node, change):
    """Change the copy of ``node``'s metadata in the root's consolidated metadata (the copy
    Zarr and xarray read)."""
    return lambda store: edit(store / "zarr.json",
                              lambda d: change(d["consolidated_metadata"]["metadata"][node]))


def own_file(node, change):
    return lambda store: edit(store / node / "zarr.json", change)


def flip_bit(after, bit):
    """Flip one bit of the first digit that follows the text ``after`` in the root
    ``zarr.json``."""
    def corrupt(store):
        file = store / "zarr.json"
        data = bytearray(file.read_bytes())
        i = data.index(after.encode()) + len(after)
        while not chr(data[i]).isdigit():
            i += 1
        data[i] ^= 1 << bit
        file.write_bytes(bytes(data))
    return corrupt


def truncate(path):
    def corrupt(store):
        data = (store / path).read_bytes()
        (store / path).write_bytes(data[: len(data) // 2])
    return corrupt


def big_endian(document):
    document["codecs"][0]["configuration"]["endian"] = "big"


def fill_zero(document):
    document["fill_value"] = 0.0


def float64(document):
    document["data_type"] = "float64"


def no_checksum(document):
    document["codecs"].pop()


def set_description(document):
    document["attributes"]["description"] = "another data set"


def copied(node, key):
    return f"the consolidated copy of {node}'s metadata: {key} changed"


# case: (corruption, the file the message names, the problem it states)
REPAIRED = {
    "endian in the root": (copy_in_root("iris/f_score", big_endian), "zarr.json",
                           copied("iris/f_score", "codecs")),
    "endian in the array": (own_file("iris/f_score", big_endian), "iris/f_score/zarr.json",
                            "codecs changed"),
    "fill value in the root": (copy_in_root("iris/f_score", fill_zero), "zarr.json",
                               copied("iris/f_score", "fill_value")),
    "fill value in the array": (own_file("iris/f_score", fill_zero), "iris/f_score/zarr.json",
                                "fill_value changed"),
    "shape bit": (flip_bit('"iris/f_score": {\n        "shape": [', 0), "zarr.json",
                  copied("iris/f_score", "shape")),
    "chunk shape bit": (flip_bit('"chunk_shape": [', 1), "zarr.json",
                        copied("iris/algorithm", "chunk_grid")),
    "dtype in the root": (copy_in_root("iris/weights", float64), "zarr.json",
                          copied("iris/weights", "data_type")),
    "dtype in the array": (own_file("iris/status", float64), "iris/status/zarr.json",
                           "data_type changed"),
    "codecs in the root": (copy_in_root("iris/f_score", no_checksum), "zarr.json",
                           copied("iris/f_score", "codecs")),
    "codecs in the array": (own_file("iris/done", no_checksum), "iris/done/zarr.json",
                            "codecs changed"),
    "invalid JSON of a group": (truncate("iris/zarr.json"), "iris/zarr.json",
                                "cannot be read (JSONDecodeError"),
    "invalid JSON of an array": (truncate("iris/percent/zarr.json"),
                                 "iris/percent/zarr.json", "cannot be read (JSONDecodeError"),
    "deleted group": (lambda store: shutil.rmtree(store / "iris"), "iris/zarr.json",
                      "the group of data set iris is missing (its folder was deleted)"),
    "deleted array": (lambda store: shutil.rmtree(store / "iris/precision"),
                      "iris/precision/zarr.json", "is missing"),
    # rewritten from the store's layout, as pcskm writes it
    "an array's file and its copy": (
        lambda store: (own_file("iris/f_score", fill_zero)(store),
                       copy_in_root("iris/f_score", fill_zero)(store)),
        "iris/f_score/zarr.json", "changed; its copy in the root zarr.json differs"),
    "a coordinate's file and its copy": (
        lambda store: (truncate("iris/sparsity/zarr.json")(store),
                       copy_in_root("iris/sparsity", fill_zero)(store)),
        "iris/sparsity/zarr.json", "cannot be read (JSONDecodeError"),
    # rebuilt from the spec (issue 64): what the spec and the data define
    "a group's attributes in its file and its copy": (
        lambda store: (own_file("iris", set_description)(store),
                       copy_in_root("iris", set_description)(store)),
        "iris/zarr.json", "changed; its copy in the root zarr.json differs"),
    "a root attribute": (
        lambda store: edit(store / "zarr.json",
                           lambda d: d["attributes"].update(spec_toml="# edited\n")),
        "zarr.json", "the root attributes or format changed (derivable"),
    "the record deleted from a store of schema version 3": (
        lambda store: edit(store / "zarr.json", lambda d: d["attributes"].pop(RECORD)),
        "zarr.json", f"its attribute {RECORD} is missing, which a store of schema version 3 "
                     "has from its creation (derivable"),
}


def assert_one_line(code, err, *phrases):
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for phrase in phrases:
        assert phrase in err, err


def assert_same_cube_and_records(reference, store):
    """The same results and the same digests of the metadata files."""
    assert_same_cube(reference, store)
    a, b = (xr.open_datatree(s, engine="zarr") for s in (reference, store))
    # the root's own digest aside: it covers the store's id, which a store rebuilt to
    # create a deleted group again draws anew (its results attributes are compared above)
    assert ({k: v for k, v in a.attrs[RECORD].items() if k != "zarr.json"}
            == {k: v for k, v in b.attrs[RECORD].items() if k != "zarr.json"})


@pytest.mark.parametrize("case", REPAIRED)
def test_changed_metadata_is_refused_then_repaired_by_a_run(reference, spec_file, cli,
                                                             tmp_path, case):
    corrupt, file, problem = REPAIRED[case]
    store = copy(reference, tmp_path)
    corrupt(store)
    for command in (["verify", store], ["status", store], ["status", "--verify", store],
                    ["report", store, "--out", tmp_path / "report"]):
        assert_one_line(*cli(*command)[:2], f"{store / file}: {problem}",
                        f"pcskm run tiny-metadata --store {store}")
    assert not (tmp_path / "report" / "report.md").exists()
    code, err, _ = cli("run", spec_file, "--store", store)
    assert code == 0, err
    assert "repaired:" in err and "Traceback" not in err
    assert cli("verify", store)[0] == 0
    assert_same_cube_and_records(reference, store)


# case: (corruption, the file the message names, the phrase saying why)
REFUSED = {
    "invalid JSON of the root": (truncate("zarr.json"), "zarr.json",
                                 "cannot be read (JSONDecodeError"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_what_cannot_be_rewritten_is_refused_by_every_command(reference, spec_file, cli,
                                                               tmp_path, case):
    corrupt, file, problem = REFUSED[case]
    store = copy(reference, tmp_path)
    corrupt(store)
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    for command in (["verify", store], ["status", store], ["report", store, "--out",
                                                           tmp_path / "report"],
                    ["run", spec_file, "--store", store]):
        assert_one_line(*cli(*command)[:2], f"{store / file}", problem, "restore")
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before


def test_a_deleted_group_outside_the_spec_is_refused(reference, cli, tmp_path):
    store = copy(reference, tmp_path)
    shutil.rmtree(store / "iris")
    other = tmp_path / "other.toml"
    other.write_text(SPEC_TEXT.replace('"iris"', '"brodinova-5-5"'))
    assert_one_line(*cli("run", other, "--store", store)[:2],
                    f"{store / 'iris/zarr.json'}: the group of data set iris is missing",
                    "restore the store from a copy (or run a spec with iris on it")


def sha256_of(document):
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def test_the_record_holds_the_digest_of_every_metadata_file(reference):
    """Recomputed here from the files: every node's ``zarr.json``, and for the root its
    attributes less ``runs``, ``run_in_progress`` and the record, and its format keys."""
    files = sorted(str(p.relative_to(reference)) for p in reference.rglob("zarr.json"))
    root = read(reference / "zarr.json")
    record = root["attributes"][RECORD]
    assert sorted(record) == files and len(files) == 23  # the root, iris, 21 arrays
    for file in files[:-1]:
        assert record[file] == sha256_of(read(reference / file)), file
    attrs = {k: v for k, v in root["attributes"].items() if k not in ("runs", RECORD)}
    assert record["zarr.json"] == sha256_of({"attributes": attrs, "zarr_format": 3,
                                             "node_type": "group"})


def test_what_a_run_updates_is_not_checked(reference, cli, tmp_path):
    store = copy(reference, tmp_path)
    edit(store / "zarr.json", lambda d: d["attributes"].update(
        runs=[], run_in_progress={"spec": "tiny-metadata", "done_cells": 0}))
    assert cli("verify", store)[0] == 0


def test_a_store_without_the_record_opens_and_gets_it_at_the_next_run(reference, spec_file,
                                                                      cli, tmp_path):
    """A store of schema version 2 made before the record (no metadata digests, no chunk
    digests) is read unchecked, and its next run records both."""
    store = copy(reference, tmp_path)
    shutil.rmtree(store / "iris" / "chunk_sha256")
    root = zarr.open_group(str(store), mode="r+")
    root.attrs.put({**{k: v for k, v in root.attrs.asdict().items() if k != RECORD},
                    "schema_version": 2})
    with warnings.catch_warnings():  # consolidated metadata is not in the Zarr 3 spec
        warnings.simplefilter("ignore", UserWarning)
        zarr.consolidate_metadata(str(store))
    code, err, out = cli("verify", store)
    assert code == 0, err
    assert "no metadata digests recorded" in out and "not checked" in out
    assert cli("status", store)[0] == 0
    code, err, _ = cli("run", spec_file, "--store", store)
    assert code == 0, err
    assert_same_cube_and_records(reference, store)
    code, _, out = cli("verify", store)
    assert code == 0 and "23 zarr.json files" in out


def test_the_smoke_store_records_forty_six_metadata_files(smoke_report, cli):
    """The count that docs/reference/cli.md shows: the root, iris and its 21 arrays,
    brodinova-5-5 and its 22 (with the uninformative mask)."""
    store, _ = smoke_report
    code, err, out = cli("verify", store)
    assert code == 0, err
    assert "metadata: 46 zarr.json files" in out
    assert len(list(store.rglob("zarr.json"))) == 46


# Nodes the layout does not name (docs/reference/cube-schema.md): written by hand into a
# store, they are named by verify, ignored by every command and never recorded by a run.
def extra_array(store):
    """An array written by hand into the group of data set iris."""
    group = zarr.open_group(str(store / "iris"), mode="r+", use_consolidated=False)
    group.create_array("extra", shape=(3,), dtype="f8")[:] = 1.0
    return "iris/extra"


def extra_group(store):
    """A group ``wine`` written by hand, with a ``done`` array (no dimension names)."""
    root = zarr.open_group(str(store), mode="r+", use_consolidated=False)
    root.create_group("wine").create_array("done", shape=(2,), dtype="u1")[:] = 1
    return "wine"


FOREIGN = {"an array in a data set's group": extra_array, "a group with done markers": extra_group}


def layout_files(store):
    """The keys of the record of digests and of the consolidated metadata."""
    root = read(store / "zarr.json")
    return sorted(root["attributes"][RECORD]), sorted(root["consolidated_metadata"]["metadata"])


def assert_foreign_named(cli, store, node):
    code, err, out = cli("verify", store)
    assert code == 0, err
    assert f"not part of the store's layout: {node} " in out, out
    assert "no damage" in out


@pytest.mark.parametrize("case", FOREIGN)
def test_a_node_the_layout_does_not_name_is_ignored_and_never_recorded(
        reference, spec_file, cli, tmp_path, case):
    store = copy(reference, tmp_path)
    node = FOREIGN[case](store)
    assert_foreign_named(cli, store, node)
    for command in (["status", store], ["status", "--verify", store],
                    ["report", store, "--out", tmp_path / "report"]):
        code, err, _ = cli(*command)
        assert code == 0 and "Traceback" not in err, err
    code, err, _ = cli("run", spec_file, "--store", store)
    assert code == 0 and "Traceback" not in err, err
    assert f"not part of the store's layout: {node} " in err
    # the run recorded and consolidated exactly what the reference records, and kept the node
    assert layout_files(store) == layout_files(reference)
    assert (store / node / "zarr.json").is_file()
    assert_foreign_named(cli, store, node)
    assert_same_cube_and_records(reference, store)
    code, err, _ = cli("run", spec_file, "--store", store)  # and so on every later run
    assert code == 0, err
    assert_foreign_named(cli, store, node)


@pytest.mark.parametrize("case", FOREIGN)
def test_a_node_recorded_by_an_older_pcskm_is_ignored_then_dropped_from_the_record(
        reference, spec_file, cli, tmp_path, case):
    """A pcskm before this consolidated and recorded every node of the folder: readers
    would see the node, so every command refuses the store in one line, and the next run
    consolidates and records the layout alone."""
    store = copy(reference, tmp_path)
    node = FOREIGN[case](store)
    with warnings.catch_warnings():  # consolidated metadata is not in the Zarr 3 spec
        warnings.simplefilter("ignore", UserWarning)
        zarr.consolidate_metadata(str(store))
    record = {str(p.relative_to(store)): sha256_of(read(p)) for p in store.rglob("zarr.json")
              if p.parent != store}
    edit(store / "zarr.json", lambda d: d["attributes"][RECORD].update(record))
    assert any(file.startswith(node) for file in layout_files(store)[0])
    for command in (["verify", store], ["status", store],
                    ["report", store, "--out", tmp_path / "report"]):
        assert_one_line(*cli(*command)[:2], f"{store / 'zarr.json'}: its consolidated metadata "
                        f"copies {node}, not part of the store's layout",
                        f"pcskm run tiny-metadata --store {store}")
    code, err, _ = cli("run", spec_file, "--store", store)
    assert code == 0 and "repaired:" in err and "Traceback" not in err, err
    assert layout_files(store) == layout_files(reference)
    assert_same_cube_and_records(reference, store)
    assert_foreign_named(cli, store, node)


def test_an_extension_is_refused_while_a_foreign_node_is_in_the_store(reference, cli,
                                                                      tmp_path):
    """Extending builds the store anew: it would lose the node, so it is refused, in one
    line, before anything is written."""
    store = copy(reference, tmp_path)
    node = extra_array(store)
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    wider = tmp_path / "wider.toml"
    wider.write_text(SPEC_TEXT.replace("percentages = [1]", "percentages = [1, 5]"))
    assert_one_line(*cli("run", wider, "--store", store)[:2],
                    f"holds nodes that are not part of its layout: {node}",
                    "move them out of the store and rerun")
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before


def test_the_arrays_of_a_layout_are_those_pcskm_writes():
    """:data:`GROUP_ARRAYS` (what the layout names) against the arrays of a group written
    with every option on (selection scores, fit errors, per-s weights, uninformative)."""
    from pcskm.runner.store.create import write_group
    from pcskm.runner.store.layout import GroupLayout
    from pcskm.runner.store.schema import GROUP_ARRAYS

    group = GroupLayout(dataset="toy", algorithms=("PCSKM",), inits=("dkm++",),
                        kinds=("random",), percents=(1.0,), n_runs=1, n_folds=2,
                        sparsity=(1.1,), feature_names=("a", "b"),
                        uninformative=(False, True), attrs={})
    root = zarr.open_group(zarr.storage.MemoryStore(), mode="w", zarr_format=3)
    write_group(root, group, {"cv_folds": 2, "gap_permutations": 2, "cv_auc": True},
                fit_errors=True)
    assert {name for name, _ in root["toy"].arrays()} == GROUP_ARRAYS

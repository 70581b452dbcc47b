"""Checking the store's metadata against its record of digests (:mod:`.digests`), and
repairing what changed (docs/reference/cube-schema.md, Metadata digests).

The root's own record covers its attributes (less those a run updates while it writes:
``runs``, ``run_in_progress`` and the record itself) and its format keys; the consolidated
copies in it are checked against the record of each node, and their header against what Zarr
writes. A changed file is rewritten from its intact copy (or the copy from its intact file,
by consolidating again), both from the store's layout if what pcskm writes for it has the
recorded digest; a data set's group whose folder is gone is dropped, to be created again and
computed by a run whose spec has the data set. What the spec defines is rebuilt from it
(:data:`REBUILT`) rather than refused: a group's attributes, if those of the spec's data set
give the recorded digest; the root's attributes and the record itself, once the store's
protocol is found to be the spec's (a seed or setting that differs is refused, naming the
difference), the run then checking every chunk against its digest (bound to the store's id
and seed, :mod:`.places`) before it writes the root and the record again. A store written
before the record existed is not checked, and gets its record at the next run that writes
it.
"""

import dataclasses
import json
import logging
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import zarr
from zarr.core.group import ConsolidatedMetadata

from .create import write_group
from .digests import (
    RECORD,
    ROOT,
    canonical,
    consolidate,
    digest,
    node_document,
    node_file,
    read_document,
    record_metadata,
    root_document,
)
from .errors import DamagedStore
from .layout import has_user_algorithms, layout_of, merge_layouts
from .lock import check_writable
from .schema import RECORDS_SINCE, in_layout, layout_datasets, not_in_layout

log = logging.getLogger("pcskm")

HEADER = {k: v for k, v in ConsolidatedMetadata(metadata={}).to_dict().items()
          if k != "metadata"}  # what Zarr writes beside the consolidated copies
# How a run repairs a change: the file from its copy, the copy by consolidating, the file and
# its copy from the store's layout, the deleted group by the spec, what the spec defines
# rebuilt from it (a group's attributes; the root's attributes and the record).
REPAIRED_FROM_COPY, RECONSOLIDATED, REGENERATED, GROUP_DROPPED, REBUILT = (
    "file", "copy", "layout", "group", "spec")


def _is_node_file(file):
    """Whether ``file`` names a ``zarr.json`` inside the store (no ``..``, no absolute path)."""
    parts = file.split("/")
    return parts[-1] == ROOT and all(part not in ("", ".", "..") for part in parts[:-1])


def _differing_keys(document, reference):
    keys = sorted(k for k in set(document) | set(reference)
                  if canonical(document.get(k)) != canonical(reference.get(k)))
    return f"{', '.join(keys)} changed" if keys else "changed"


@dataclass(frozen=True)
class Change:
    """A metadata file that differs from its record: ``file`` (its path in the store),
    ``node`` (the group or array it describes; "" for the root), what is wrong, and how a run
    repairs it (:data:`REPAIRED_FROM_COPY`, :data:`RECONSOLIDATED`, :data:`REGENERATED`,
    :data:`GROUP_DROPPED`; None: it cannot); ``copy``: the metadata it writes back."""

    file: str
    node: str
    problem: str
    repair: str | None
    copy: dict | None = field(default=None, repr=False, compare=False)


@dataclass
class MetadataCheck:
    """What :func:`check_metadata` found in the store at ``store``."""

    store: Path
    spec: str = "SPEC"  # the name of the spec that last ran into the store
    recorded: bool = True  # False: a store made before the record (not checked)
    n_files: int = 0  # metadata files checked
    changes: list = field(default_factory=list)

    def describe(self):
        """The line ``pcskm verify`` prints about the metadata."""
        if not self.recorded:
            return ("no metadata digests recorded (a store made before pcskm recorded them): "
                    "the metadata is not checked; the next pcskm run records them")
        return (f"metadata: {self.n_files} zarr.json files (and their consolidated copies) "
                "match their recorded digests")

    def refusal(self, groups=None):
        """One line naming every changed file and what can be done (``groups``: the data sets
        whose deleted group a run would create again; None: any)."""
        listing = "; ".join(f"{self.store / c.file}: {c.problem}"
                            + (" (derivable: pcskm run rebuilds it from the spec)"
                               if c.repair == REBUILT else "") for c in self.changes)
        cannot = [c for c in self.changes if not _repairable(c, groups)]
        if cannot:
            advice = ("pcskm cannot rewrite " + ", ".join(str(self.store / c.file)
                                                          for c in cannot)
                      + ": restore the store from a copy")
            lost = [c.node for c in cannot if c.repair == GROUP_DROPPED]
            if lost:
                advice += (f" (or run a spec with {', '.join(lost)} on it, which creates "
                           "the group again and computes its cells)")
        else:
            advice = (f"pcskm run {self.spec} --store {self.store} (the store's spec, or its TOML "
                      "file) repairs it")
            if any(c.repair == REBUILT for c in self.changes):
                advice += (", rebuilding from the spec what it defines after checking every "
                           "chunk against its digest (a seed or setting of the store that "
                           "differs from the spec's is refused)")
            if any(c.repair == GROUP_DROPPED for c in self.changes):
                advice += " and computes the cells of the deleted group again"
        return (f"the metadata of {self.store} changed since pcskm wrote it: {listing}. "
                f"{advice}")


def _repairable(change, groups):
    if change.repair == GROUP_DROPPED:
        return groups is None or change.node in groups
    return change.repair is not None


def _check_node(store, node, expected, copies, change_list):
    """Compare the file of ``node`` and its consolidated copy with the digest ``expected``."""
    file = node_file(node)
    document, problem = read_document(store / file)
    document = node_document(document)
    copy = copies.get(node)
    copy = node_document(copy) if isinstance(copy, dict) else None
    file_ok = document is not None and digest(document) == expected
    copy_ok = copy is not None and digest(copy) == expected
    if file_ok and copy_ok:
        return
    if not file_ok:
        what = problem or (_differing_keys(document, copy) if copy_ok else "changed")
        if copy_ok:
            change_list.append(Change(file, node, what, REPAIRED_FROM_COPY, copy))
        else:
            change_list.append(Change(file, node, f"{what}; its copy in the root zarr.json "
                                      "differs from the record too", None))
        return
    what = ("missing" if copy is None else _differing_keys(copy, document))
    change_list.append(Change(ROOT, node, f"the consolidated copy of {node}'s metadata: {what}",
                              RECONSOLIDATED))


def check_metadata(store):
    """Compare every metadata file of the store at ``store`` (a folder with a ``zarr.json``)
    with its recorded digest; returns a :class:`MetadataCheck`. Raises
    :class:`DamagedStore` naming the root ``zarr.json`` if it cannot be read."""
    store = Path(store)
    found = MetadataCheck(store)
    root, problem = read_document(store / ROOT)
    if problem:
        raise DamagedStore(f"the metadata of {store} is damaged: {store / ROOT} {problem}. "
                           "pcskm cannot repair it; restore the store from a copy")
    attrs = root.get("attributes")
    attrs = attrs if isinstance(attrs, dict) else {}
    found.spec = str(attrs.get("spec_name", "SPEC"))
    record = attrs.get(RECORD)
    version = attrs.get("schema_version")
    if record is None and isinstance(version, int) and version >= RECORDS_SINCE:
        found.changes.append(Change(ROOT, "", f"its attribute {RECORD} is missing, which a "
                                    f"store of schema version {version} has from its "
                                    "creation", REBUILT))
        return found
    if record is None:
        found.recorded = False
        return found
    if not isinstance(record, dict) or not all(
            isinstance(v, str) and _is_node_file(k) for k, v in record.items()):
        found.changes.append(Change(ROOT, "", f"its attribute {RECORD} is not a record of "
                                    "digests", REBUILT))
        return found
    if digest(root_document(root, attrs)) != record.get(ROOT):
        found.changes.append(Change(ROOT, "", "the root attributes or format changed",
                                    REBUILT))
    consolidated = root.get("consolidated_metadata")
    consolidated = consolidated if isinstance(consolidated, dict) else {}
    copies = consolidated.get("metadata")
    copies = copies if isinstance(copies, dict) else {}
    if {k: v for k, v in consolidated.items() if k != "metadata"} != HEADER:
        found.changes.append(Change(ROOT, "", "the header of its consolidated metadata changed",
                                    RECONSOLIDATED))
    # a node the layout does not name is not checked (a pcskm before this recorded it)
    datasets = layout_datasets(attrs)
    nodes = sorted(node for node in (file.removesuffix("/" + ROOT) for file in record
                                     if file != ROOT) if in_layout(node, datasets))
    found.n_files = 1 + len(nodes)
    deleted = {node for node in nodes if "/" not in node and not (store / node).is_dir()}
    for node in nodes:
        if node in deleted:
            found.changes.append(Change(node_file(node), node, f"the group of data set {node} is "
                                        "missing (its folder was deleted)", GROUP_DROPPED))
        elif node.partition("/")[0] not in deleted:
            _check_node(store, node, record[node_file(node)], copies, found.changes)
    adopted = not_in_layout(copies, datasets)
    if adopted:
        found.changes.append(Change(ROOT, "", f"its consolidated metadata copies "
                                    f"{', '.join(adopted)}, not part of the store's layout (a "
                                    "pcskm before this copied every node)", RECONSOLIDATED))
    lost = [change.node for change in found.changes if change.node and change.repair is None]
    if lost:
        regenerated = _regenerated(store, lost, record)
        found.changes = [dataclasses.replace(change, repair=REGENERATED,
                                             copy=regenerated[change.node])
                         if change.node in regenerated else
                         dataclasses.replace(change, repair=REBUILT)
                         if "/" not in change.node else change
                         for change in found.changes]
    return found


def _regenerated(store, nodes, record, spec_layout=None):
    """The metadata pcskm writes for ``nodes`` in the store's layout (coordinates and
    settings as the store holds them; the group attributes as it holds them too, or, with
    ``spec_layout``, those of the spec's data sets), for those whose digest is the recorded
    one: ``{node: document}``."""
    try:
        layout = layout_of(zarr.open_group(str(store), mode="r"), store)
    except Exception:  # any failure to read the layout leaves nothing to rewrite from
        return {}
    if spec_layout is not None:
        layout = dataclasses.replace(layout, groups={
            name: _with_attrs(group, spec_layout.groups.get(name))
            for name, group in layout.groups.items()})
    found = {}
    with tempfile.TemporaryDirectory() as scratch, warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        root = zarr.open_group(scratch, mode="w-", zarr_format=3)
        for name in sorted({node.partition("/")[0] for node in nodes} & set(layout.groups)):
            write_group(root, layout.groups[name], layout.fixed,
                        has_user_algorithms(layout.algorithms), layout.weights_per_s,
                        layout.schema_version)
        for node in nodes:
            document = node_document(read_document(Path(scratch) / node_file(node))[0])
            if document is not None and digest(document) == record[node_file(node)]:
                found[node] = document
    return found


def _with_attrs(group, spec_group):
    """The group layout ``group`` with the attributes of ``spec_group`` (the spec's group
    of its data set; ``group`` as it is without one)."""
    return group if spec_group is None else dataclasses.replace(group, attrs=spec_group.attrs)


def _rebuilt(store, found, layout):
    """Resolve the :data:`REBUILT` changes of ``found`` from the spec's ``layout``: a group's
    file and copy rewritten from the spec's attributes where they give the recorded digest
    (:func:`_regenerated`); the root accepted once the store's protocol is the spec's
    (:func:`.layout.merge_layouts` raises :class:`.errors.IncompatibleStore` naming every
    difference), for the run to write it and the record again. Raises
    :class:`DamagedStore` for a group whose attributes the spec does not give."""
    changes = [c for c in found.changes if c.repair == REBUILT]
    if any(not c.node for c in changes):
        merge_layouts(layout_of(zarr.open_group(str(store), mode="r"), store), layout,
                      store=str(store),
                      advice="A store's seed and settings are not rebuilt from a spec: give "
                             "the spec the store was made with, or restore the store from a "
                             "copy.")
    groups = [c.node for c in changes if c.node]
    if not groups:
        return found
    record = zarr.open_group(str(store), mode="r").attrs.get(RECORD) or {}
    regenerated = _regenerated(store, groups, record, layout)
    cannot = [node for node in groups if node not in regenerated]
    if cannot:
        raise DamagedStore(
            f"the metadata of {store} changed since pcskm wrote it: the attributes of "
            f"{', '.join(cannot)} are not those of the spec's data set (no file or copy has "
            "their recorded digest): restore the store from a copy, or run the spec it was "
            "made with")
    return dataclasses.replace(found, changes=[
        dataclasses.replace(c, repair=REGENERATED, copy=regenerated[c.node])
        if c.node in regenerated else c for c in found.changes])


def checked_metadata(store):
    """:func:`check_metadata`, raising :class:`DamagedStore` (one line naming every changed
    file) if any changed."""
    found = check_metadata(store)
    if found.changes:
        raise DamagedStore(found.refusal())
    return found


def repair_metadata(store, layout):
    """Repair what :func:`check_metadata` finds (docs/reference/cube-schema.md, Metadata
    digests), for a run of the spec of ``layout`` (:func:`.layout.spec_layout`): rewrite a
    changed file from its copy (or from the store's layout, or the spec's,
    :func:`_rebuilt`), consolidate again, drop the record of a deleted group of a data set
    of the spec (the run creates it again), record the metadata again after a change of the
    root or of the record (the run then checks every chunk, and writes the root from the
    spec). Raises :class:`DamagedStore` naming every change it cannot repair, and
    :class:`.errors.IncompatibleStore` for a protocol that differs from the spec's, before
    writing anything."""
    store, groups = Path(store), layout.groups
    if not (store / ROOT).is_file():
        return  # not a store: check_store says what it is
    found = check_metadata(store)
    if not found.changes:
        return
    found = _rebuilt(store, found, layout)
    if not all(_repairable(change, groups) for change in found.changes):
        raise DamagedStore(found.refusal(groups))
    check_writable(store)
    done = []
    for change in found.changes:
        if change.repair in (REPAIRED_FROM_COPY, REGENERATED):
            (store / change.file).parent.mkdir(parents=True, exist_ok=True)  # a deleted array
            (store / change.file).write_text(json.dumps(change.copy, indent=2))
            source = ("its copy in the root zarr.json" if change.repair == REPAIRED_FROM_COPY
                      else "the store's layout, as pcskm writes it")
            done.append(f"{change.file} rewritten from {source}")
        elif change.repair == GROUP_DROPPED:
            done.append(f"the deleted group {change.node} dropped from the record, to be "
                        "created again and its cells computed")
    dropped = {c.node for c in found.changes if c.repair == GROUP_DROPPED}
    if dropped and isinstance(zarr.open_group(str(store), mode="r").attrs.get(RECORD), dict):
        root = zarr.open_group(str(store), mode="r+")
        record = root.attrs[RECORD]
        root.attrs.update({RECORD: {file: digest for file, digest in record.items()
                                    if file.partition("/")[0] not in dropped}})
    consolidate(store)
    done.append("the consolidated metadata in zarr.json written again from the files")
    if any(c.repair == REBUILT for c in found.changes):
        record_metadata(store)
        done.append("the record of digests written again (the run checks every chunk "
                    "against its digest and writes the root's attributes from the spec)")
    log.warning("%s: the metadata changed since pcskm wrote it: %s\nrepaired: %s", store,
                "; ".join(f"{c.file}: {c.problem}" for c in found.changes), "; ".join(done))

"""The store opened: :class:`CubeView` (a layout with its ``done`` and ``scored`` markers,
read only, for planning), :class:`Cube` (open for the client: its arrays, the markers it
writes and the run record) and :func:`open_cube` (the cube as an ``xarray.DataTree``).
"""

from collections.abc import Mapping

import numpy as np

from pcskm.experiments.protocol import pct10

from .access import check_runnable, open_root, read_layout
from .backends import where
from .backends.common import FLUSHED, RECORDED, RUN_TAG, STARTED
from .digests import consolidate
from .integrity import verify
from .layout import done_shape, json_copy, merge_layouts, positions, spec_layout
from .places import RECORD, bound, read_record, record_stored, record_values, store_binding
from .provenance import (
    RUN_INDEX,
    UNKNOWN,
    changed_blocks,
    codes_of,
    read_run_index,
    run_codes,
)
from .schema import (
    MISSING,
    NOT_APPLICABLE,
    RUNNING,
    applicable,
    block_chunk,
    chunk_region,
    complete_blocks,
    wanted_scores,
    writable_arrays,
    write_regions,
)
from .sizes import check_sizes


class CubeView:
    """A layout with its ``done`` and ``scored`` markers (``scored``: None where a group has
    none), the run that marked each block done (``run_index``, :mod:`.provenance`; unknown
    where not given) and the code each run recorded (``codes``, :func:`.provenance.run_codes`),
    and label-to-position lookups (read only)."""

    def __init__(self, layout, done, scored=None, run_index=None, codes=()):
        self.layout = layout
        self.done = done
        self.scored = {name: (scored or {}).get(name) for name in done}
        self.run_index = {name: (run_index or {}).get(name, np.full(marks.shape, UNKNOWN,
                                                                    np.int16))
                          for name, marks in done.items()}
        self.codes = list(codes)
        self._index = {
            name: {
                "algorithm": {v: i for i, v in enumerate(g.algorithms)},
                "init": {v: i for i, v in enumerate(g.inits)},
                "kind": {v: i for i, v in enumerate(g.kinds)},
                "percent": {pct10(v): i for i, v in enumerate(g.percents)},
            }
            for name, g in layout.groups.items()
        }

    @classmethod
    def planned(cls, path, spec, data_dir=None):
        """What :func:`prepare` would open for ``spec``, without writing anything (for
        ``--dry-run``): the merged layout and the store's done markers, if it exists, less
        those a run would clear because their chunks are damaged."""
        path = where(path)
        new = spec_layout(spec, data_dir)
        check_sizes(new, path)
        if path.is_new():
            return cls(new, {n: np.zeros(done_shape(g), np.uint8)
                             for n, g in new.groups.items()})
        check_runnable(path)
        found = verify(path)
        old = read_layout(path)
        merged = merge_layouts(old, new, store=str(path))
        check_sizes(merged, path, copies=merged != old)
        done, scored, run_index = {}, {}, {}
        root = open_root(path)
        for name, group in merged.groups.items():
            done[name] = np.zeros(done_shape(group), np.uint8)
            scored[name] = np.zeros(done_shape(group), np.uint8)
            run_index[name] = np.full(done_shape(group), UNKNOWN, np.int16)
            if name in old.groups:
                before = old.groups[name]
                index = (positions(before.algorithms, group.algorithms),
                         positions(before.inits, group.inits),
                         positions(before.kinds, group.kinds),
                         positions([pct10(p) for p in before.percents],
                                   [pct10(p) for p in group.percents]),
                         np.arange(before.n_runs))
                done[name][np.ix_(*index)] = found.done_after_repair(name)
                if found.scored.get(name) is not None:
                    scored[name][np.ix_(*index)] = found.scored[name]
                run_index[name][np.ix_(*index)] = read_run_index(root[name])
        return cls(merged, done, scored, run_index, run_codes(root.attrs.asdict()))

    def complete(self, dataset):
        """The blocks of ``dataset`` that are done and carry the selection scores their
        algorithm gets (:func:`complete_blocks`); the others are computed by a run."""
        layout = self.layout
        wanted = wanted_scores(layout.fixed, layout.algorithms,
                               layout.groups[dataset].algorithms)
        return complete_blocks(self.done[dataset], self.scored[dataset], wanted)

    def changed(self, dataset):
        """The complete blocks of ``dataset`` whose code, as the run that marked them done
        recorded it, differs from the store's current definition of their algorithm
        (:func:`.provenance.changed_blocks`; blocks of unknown code are not among them)."""
        group = self.layout.groups[dataset]
        return changed_blocks(self.complete(dataset), self.run_index[dataset], self.codes,
                              group.algorithms, codes_of(self.layout.algorithms))

    def block_index(self, dataset, algorithm, init, kind=None, percent=None):
        """Integer positions of a block (or of its (algorithm, init[, kind]) prefix)."""
        index = self._index[dataset]
        out = [index["algorithm"][algorithm], index["init"][init]]
        if kind is not None:
            out.append(index["kind"][kind])
        if percent is not None:
            out.append(index["percent"][pct10(percent)])
        return tuple(out)


class GroupArrays(Mapping):
    """``{data set: {name: array}}`` of a store opened to write, each data set's arrays
    opened when first asked for: after a commit of a repository the client reopens only
    the groups it marks next, not every group of the store (docs/guide/hpc.md, "The runner
    on object storage, measured")."""

    def __init__(self, path, names):
        self.path, self.names = path, tuple(names)
        self._root, self._opened = None, {}

    def __getitem__(self, name):
        if name not in self._opened:
            if name not in self.names:
                raise KeyError(name)
            if self._root is None:
                self._root = open_root(self.path, "r+")
            self._opened[name] = writable_arrays(self._root[name])
        return self._opened[name]

    def __iter__(self):
        return iter(self.names)

    def __len__(self):
        return len(self.names)


class Cube(CubeView):
    """An open store, for the client: its layout, arrays and in-memory ``done`` markers;
    ``path``: where it lives (:func:`.backends.where`; a repository in a transaction)."""

    def __init__(self, path):
        self.path = where(path)
        layout = read_layout(self.path)
        self.arrays = self._open(layout)
        attrs = open_root(self.path).attrs.asdict()
        super().__init__(layout, {name: arrays["done"][:]
                                  for name, arrays in self.arrays.items()},
                         {name: arrays["scored"][:] for name, arrays in self.arrays.items()
                          if "scored" in arrays},
                         {name: arrays[RUN_INDEX][:] for name, arrays in self.arrays.items()
                          if RUN_INDEX in arrays},
                         run_codes(attrs))
        self.binding = store_binding(attrs)  # what binds its chunk digests (.places.bound)
        # the run writing the store (its place in runs, Cube.begin_run); unknown before
        self.run_number = UNKNOWN
        # the chunk digests of each group (None: a store of schema version 2)
        self.records = {name: read_record(arrays[RECORD]) if RECORD in arrays else None
                        for name, arrays in self.arrays.items()}

    def _open(self, layout):
        return GroupArrays(self.path, layout.groups)

    def commit(self, message="results of the run", kind=FLUSHED, run=None, tag=None):
        """Make everything written since the last commit durable at once: a commit of a
        repository (its arrays opened again on the next transaction), nothing in a folder
        (written in place). Called by the client each time it marks done
        (:meth:`.writer.DoneMarks.write`): the workers' chunks it merged and their done
        markers land in one commit."""
        if self.path.commit(message, kind, run, tag) is not None:
            self.arrays = self._open(self.layout)

    def mark_done(self, pending):
        """Mark done the regions of each data set of ``pending`` (``{data set: regions}``),
        each ``(algorithm position, init position, kind positions, percent positions, runs,
        score bits)`` (the selection scores its cells now carry), by the run writing the
        store (:attr:`run_number`), and write their marker arrays (:meth:`write_markers`)."""
        for dataset, regions in pending.items():
            scored = self.scored[dataset]
            for a, i, kinds, percents, runs, bits in regions:
                block = (a, i, *np.ix_(kinds, percents, runs))
                self.done[dataset][block] = 1
                self.run_index[dataset][block] = self.run_number
                if scored is None:
                    if bits:
                        raise ValueError(f"the store has no selection scores for {dataset}")
                else:
                    scored[block] = bits
        self.write_markers(*pending)

    def record_digests(self, digests):
        """Hold the chunk digests ``digests`` (``{data set: {(kind, percent): {array:
        digest}}}``, from the workers' receipts), bound to the store (:func:`.places.bound`),
        in the groups' records, written with the next markers (:meth:`write_markers`)."""
        for dataset, places in digests.items():
            for place, entry in places.items():
                self.records[dataset].setdefault(place, {}).update(
                    {name: bound(digest, self.binding) for name, digest in entry.items()})

    def record_stored(self, dataset, places, names=None):
        """Record the digests of the chunks at ``places`` ((kind, percent) positions) of
        ``dataset`` as stored (the client wrote them: :func:`.places.record_stored`)."""
        if self.records[dataset] is not None:
            record_stored(self.path, self.arrays[dataset], self.records[dataset], places, names,
                          self.binding)

    def write_markers(self, *datasets):
        """Write the in-memory chunk digests, ``scored`` markers and run indices of
        ``datasets``, then their ``done`` markers (after the chunks they vouch for and their
        digests), each pass in one call into Zarr (:func:`.schema.write_regions`); in a
        repository, all land in the next commit."""
        write_regions([
            *((self.arrays[name][RECORD], ...,
               record_values(self.records[name], self.arrays[name][RECORD].shape))
              for name in datasets if self.records[name] is not None),
            *((self.arrays[name]["scored"], ..., self.scored[name])
              for name in datasets if self.scored[name] is not None),
            *((self.arrays[name][RUN_INDEX], ..., self.run_index[name])
              for name in datasets if RUN_INDEX in self.arrays[name])])
        write_regions([(self.arrays[name]["done"], ..., self.done[name]) for name in datasets])

    def done_cells(self):
        """Cells done, with the selection scores their algorithm gets: (algorithm, init,
        kind, percent, run) blocks times folds."""
        return sum(int(self.complete(name).sum()) * self.layout.groups[name].n_folds
                   for name in self.done)

    def begin_run(self, entry):
        """Note in the store that a run is writing it (``entry``, with the cells done now),
        so that the next run can record this one if it is killed before :meth:`record_run`
        (see :func:`.preparation.prepare`)."""
        root = open_root(self.path, "r+")
        note = json_copy({**entry, "done_cells": self.done_cells()})
        self.run_number = len(root.attrs.get("runs", []))  # its place once recorded
        root.attrs.update({RUNNING: note})
        consolidate(self.path)
        self.commit(f"run started: {entry.get('command')}", STARTED, note)

    def record_run(self, entry):
        """Append ``entry`` (a JSON-able dict: when, how long, where, what was computed;
        None: nothing to record) to the store's ``runs`` attribute, and remove the note of
        :meth:`begin_run`."""
        root = open_root(self.path, "r+")
        attrs = root.attrs.asdict()
        attrs.pop(RUNNING, None)
        if entry is not None:
            attrs["runs"] = [*attrs.get("runs", []), json_copy(entry)]
        root.attrs.put(attrs)
        consolidate(self.path)
        if entry is None:
            self.commit("run ended: nothing written", RECORDED)
        else:
            number = len(attrs["runs"])
            self.commit(f"run {number}: {entry.get('cells')} cells of {entry.get('spec')}",
                        RECORDED, attrs["runs"][-1], RUN_TAG.format(number))

    def clear_done(self, tasks):
        """Unmark the blocks of ``tasks`` (``--force``), so that an interrupted forced run
        resumes where it stopped."""
        touched = set()
        for task in tasks:
            for s in task.settings:
                for block in task.blocks:
                    position = self.block_index(s.dataset, s.algorithm, s.init, block.kind,
                                                block.percent)
                    self.done[s.dataset][(*position, list(block.runs))] = 0
            touched.add(task.dataset)
        for name in touched:
            self.arrays[name]["done"][...] = self.done[name]

    def mark_applicability(self, spec):
        """Status ``not_applicable`` for the spec's (init, kind) pairs it does not run
        (Seeding outside seeding_kinds), ``missing`` again for pairs it now runs, in blocks
        not yet done. Reads each group's status once and writes back only the chunks it
        changed."""
        version = self.layout.schema_version
        for name in spec.datasets:
            layout, array = self.layout.groups[name], self.arrays[name]["status"]
            status, changed = None, set()
            for algorithm in (v.name for v in spec.algorithms):
                for init in spec.inits:
                    for kind in layout.kinds:
                        position = self.block_index(name, algorithm, init, kind)
                        if self.done[name][position].any():
                            continue
                        if status is None:
                            status = array[...]
                        wanted = MISSING if applicable(spec, init, kind) else NOT_APPLICABLE
                        other = NOT_APPLICABLE if wanted == MISSING else MISSING
                        current = status[position]
                        hit = current == other
                        if hit.any():
                            status[position] = np.where(hit, wanted, current)
                            changed |= {block_chunk(version, (*position, p))
                                        for p in np.flatnonzero(hit.any(axis=(1, 2, 3)))}
            for chunk in sorted(changed):
                region = chunk_region(version, chunk)
                array[region] = status[region]
            if changed and self.records[name] is not None:
                self.record_stored(name, sorted({chunk[2:] for chunk in changed}), ("status",))
                self.write_markers(name)


def open_cube(path, run=None):
    """The cube at ``path`` (a path, or an ``s3://`` URL, :func:`.backends.where`) as an
    ``xarray.DataTree`` (one child per data set), read lazily; ``run``: on object storage, as
    the run of that tag (``run-0001``, ``pcskm status``) left it (docs/guide/hpc.md, "The
    store on object storage")."""
    return where(path).open_datatree(run)

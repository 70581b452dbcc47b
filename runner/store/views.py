"""The store opened: :class:`CubeView` (a layout with its ``done`` and ``scored`` markers,
read only, for planning), :class:`Cube` (open for the client: its arrays, the markers it
writes and the run record) and :func:`open_cube` (the cube as an ``xarray.DataTree``).
"""

from collections.abc import Mapping

import numpy as np

from pcskm.experiments.protocol import pct10

from .access import check_runnable, open_root, read_layout
from .integrity import verify
from .layout import done_shape, json_copy, merge_layouts, positions, spec_layout
from .location import FLUSHED, RECORDED, RUN_TAG, STARTED, where
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
    none) and label-to-position lookups (read only)."""

    def __init__(self, layout, done, scored=None):
        self.layout = layout
        self.done = done
        self.scored = {name: (scored or {}).get(name) for name in done}
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
        done, scored = {}, {}
        for name, group in merged.groups.items():
            done[name] = np.zeros(done_shape(group), np.uint8)
            scored[name] = np.zeros(done_shape(group), np.uint8)
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
        return cls(merged, done, scored)

    def complete(self, dataset):
        """The blocks of ``dataset`` that are done and carry the selection scores their
        algorithm gets (:func:`complete_blocks`); the others are computed by a run."""
        layout = self.layout
        wanted = wanted_scores(layout.fixed, layout.algorithms,
                               layout.groups[dataset].algorithms)
        return complete_blocks(self.done[dataset], self.scored[dataset], wanted)

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
    ``path``: where it lives (:func:`.location.where`; a repository in a transaction)."""

    def __init__(self, path):
        self.path = where(path)
        layout = read_layout(self.path)
        self.arrays = self._open(layout)
        super().__init__(layout, {name: arrays["done"][:]
                                  for name, arrays in self.arrays.items()},
                         {name: arrays["scored"][:] for name, arrays in self.arrays.items()
                          if "scored" in arrays})

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
        score bits)`` (the selection scores its cells now carry), and write their marker
        arrays (:meth:`write_markers`)."""
        for dataset, regions in pending.items():
            scored = self.scored[dataset]
            for a, i, kinds, percents, runs, bits in regions:
                block = (a, i, *np.ix_(kinds, percents, runs))
                self.done[dataset][block] = 1
                if scored is None:
                    if bits:
                        raise ValueError(f"the store has no selection scores for {dataset}")
                else:
                    scored[block] = bits
        self.write_markers(*pending)

    def write_markers(self, *datasets):
        """Write the in-memory ``scored`` markers of ``datasets``, then their ``done`` markers
        (after the chunks they vouch for), each pass in one call into Zarr
        (:func:`.schema.write_regions`)."""
        write_regions([(self.arrays[name]["scored"], ..., self.scored[name])
                       for name in datasets if self.scored[name] is not None])
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
        root.attrs.update({RUNNING: note})
        self.path.consolidate()
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
        self.path.consolidate()
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


def open_cube(path, run=None):
    """The cube at ``path`` (a path, or an ``s3://`` URL, :func:`.location.where`) as an
    ``xarray.DataTree`` (one child per data set), read lazily; ``run``: on object storage, as
    the run of that tag (``run-0001``, ``pcskm status``) left it (docs/guide/hpc.md, "The
    store on object storage")."""
    return where(path).open_datatree(run)

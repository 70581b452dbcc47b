"""Where a store is: the command line's store arguments, checked before anything is created.

A store is a folder on a POSIX file system (local disk or a network file system every worker
mounts); ``file://`` URLs name such a folder. Any other URL (``s3://``, ``gs://``, ``az://``,
``abfs://``, ``http(s)://``, ``memory://``, an fsspec chain such as ``simplecache::s3://``)
is refused with one message instead of being taken for a relative path (``s3://b/x.zarr``
would otherwise be a local folder named ``s3:``). Object storage is planned
(docs/guide/hpc.md, "How the workers write").
"""

import argparse
import re
from urllib.parse import unquote, urlsplit

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*(::[A-Za-z][A-Za-z0-9+.-]*)*:(//|:)")


def store_path(text):
    """``text`` as a store path (a string): a path as given, or the path of a ``file://``
    URL on this machine; raises :class:`argparse.ArgumentTypeError` for any other URL (an
    argparse ``type``, so that the command stops before it reads or creates anything)."""
    if not _URL.match(text):
        return text
    parts = urlsplit(text)
    if parts.scheme.lower() == "file" and "::" not in text:
        if parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
            raise argparse.ArgumentTypeError(
                f"{text}: a file:// URL names a folder of this machine (file:///path); "
                "give the path itself")
        return unquote(parts.path)
    raise argparse.ArgumentTypeError(
        f"{text}: object-store URLs are not supported yet; a store is a folder on a local or "
        "network file system (a path, or file:///path). Writing to object storage (S3, GCS, "
        "Azure) is planned (docs/guide/hpc.md, \"How the workers write\")")

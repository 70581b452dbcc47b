"""Where a store is: the command line's store arguments, checked before anything is created.

A store is a folder on a POSIX file system (a path, or a ``file://`` URL of this machine) or
an Icechunk repository on S3-compatible object storage (``s3://bucket/prefix``,
docs/guide/hpc.md, "The store on object storage"); :func:`pcskm.runner.store.where` tells
them apart. Any other URL (``gs://``, ``az://``, ``http(s)://``, ``memory://``, an fsspec
chain such as ``simplecache::s3://``) is refused with one message naming its scheme, never
taken for a relative path (``s3://b/x.zarr`` would otherwise be a local folder named ``s3:``).
"""

import argparse
import re

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*(::[A-Za-z][A-Za-z0-9+.-]*)*:(//|:)")


def is_url(text):
    """Whether ``text`` (a string) is a URL (``scheme://``, ``scheme::``), not a path."""
    return isinstance(text, str) and bool(_URL.match(text))


def store_path(text):
    """``text`` as a store (a string): a path as given, the path of a ``file://`` URL on this
    machine, an ``s3://bucket/prefix`` URL; raises :class:`argparse.ArgumentTypeError` for any
    other URL (an argparse ``type``, so that the command stops before it reads or creates
    anything)."""
    from .store import where

    if not is_url(text):
        return text
    try:
        return str(where(text))
    except ValueError as error:  # UnsupportedStore
        raise argparse.ArgumentTypeError(str(error)) from None

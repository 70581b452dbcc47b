"""The objects of an Icechunk repository in its bucket (docs/reference/cube-schema.md, "The
store on object storage"): which one an Icechunk error names as missing or unreadable
(:func:`damaged_object`: a snapshot, a manifest or a branch's ref, by its key), and the
refs read and written as plain objects where Icechunk cannot open the repository because
the ref of its branch is lost (:func:`holds_repository`, :func:`run_tags`,
:func:`restore_branch`).

Icechunk 1 keeps under ``<prefix>/``: ``snapshots/ID`` (a version: its nodes and the
manifests of their chunks), ``manifests/ID`` (the references of an array's chunks),
``chunks/ID``, ``transactions/ID`` and ``refs/branch.NAME/ref.json`` and
``refs/tag.NAME/ref.json`` (a JSON object naming a snapshot; a tag and a branch have the
same form).
"""

import json
import os
import re
from dataclasses import dataclass

BRANCH_REF = "refs/branch.{}/ref.json"
TAG_REF = "refs/tag.{}/ref.json"
WHAT = {
    "manifests": "the manifest of an array (the references of its chunks)",
    "snapshots": "a snapshot (a version of the store: its nodes and their manifests)",
    "refs": "the ref of branch {} (which snapshot is the store)",
}
# what Icechunk's errors name (their context: the function and its arguments)
_MANIFEST = re.compile(r"fetch_manifest\w*[\s|]+with (?:manifest_)?id=(\w+)")
_SNAPSHOT = re.compile(r"fetch_snapshot\w*[\s|]+with (?:snapshot_)?id=(\w+)")
_REF = re.compile(r"fetch_branch\w*[\s|]+with name=\"([^\"]+)\"")
_NO_SNAPSHOT = re.compile(r"snapshot not found: `(\w+)`")  # resolving a version (ancestry)


@dataclass(frozen=True)
class DamagedObject:
    """An object of a repository that is missing or cannot be read: ``key`` in the bucket,
    ``kind`` (``manifests``, ``snapshots`` or ``refs``), ``what`` it is, ``problem``."""

    key: str
    kind: str
    what: str
    problem: str


def _cause(text):
    """The innermost cause of an Icechunk error's text (its last ``->`` line)."""
    causes = [line.split("->", 1)[1].strip() for line in text.splitlines() if "->" in line]
    return causes[-1] if causes else text.splitlines()[0].strip(" x|")


def damaged_object(error, prefix):
    """The :class:`DamagedObject` that the Icechunk error ``error`` (of the repository at
    ``prefix``) names as missing or unreadable, or None if it names none (an error of the
    network, the credentials or the bucket)."""
    text = str(error)
    problem = _problem(text)
    manifest, snapshot, ref = _MANIFEST.search(text), \
        _SNAPSHOT.search(text) or _NO_SNAPSHOT.search(text), _REF.search(text)
    if manifest:
        return DamagedObject(f"{prefix}/manifests/{manifest.group(1)}", "manifests",
                             WHAT["manifests"], problem)
    if snapshot:
        return DamagedObject(f"{prefix}/snapshots/{snapshot.group(1)}", "snapshots",
                             WHAT["snapshots"], problem)
    if ref and "ref json" in text:
        branch = ref.group(1)
        return DamagedObject(f"{prefix}/{BRANCH_REF.format(branch)}", "refs",
                             WHAT["refs"].format(branch), problem)
    return None


def _problem(text):
    """``missing`` or ``unreadable (cause: truncated or changed)``, from an error's text."""
    missing = ("NoSuchKey" in text or "does not exist" in _cause(text)
               or _NO_SNAPSHOT.search(text) is not None)
    return "missing" if missing else f"unreadable ({_cause(text)}: truncated or changed)"


def damaged_snapshot(error, prefix, snapshot):
    """The :class:`DamagedObject` of the snapshot ``snapshot``, which the Icechunk ``error``
    met reading it alone (a scrambled object's error may name no object)."""
    return DamagedObject(f"{prefix}/snapshots/{snapshot}", "snapshots", WHAT["snapshots"],
                         _problem(str(error)))


def lost_branch_ref(prefix, branch):
    """The :class:`DamagedObject` of the missing ref of ``branch``."""
    return DamagedObject(f"{prefix}/{BRANCH_REF.format(branch)}", "refs",
                         WHAT["refs"].format(branch), "missing")


def _client():
    """A boto3 S3 client with the conventions of :func:`.backends.icechunk._storage` (credentials,
    region and endpoint from the environment, path-style requests to an endpoint)."""
    import boto3
    from botocore.config import Config

    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    return boto3.client("s3", endpoint_url=endpoint or None, region_name=region,
                        config=Config(s3={"addressing_style": "path"} if endpoint else {}))


def holds_repository(bucket, prefix):
    """Whether ``s3://bucket/prefix`` holds snapshots of an Icechunk repository (which
    Icechunk does not open when the ref of its branch is missing)."""
    listing = _client().list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/snapshots/",
                                        MaxKeys=1)
    return bool(listing.get("KeyCount"))


def run_tags(bucket, prefix):
    """``{tag: snapshot id}`` of the tags of the repository at ``s3://bucket/prefix``, read
    from their ref objects (a deleted tag, marked ``ref.json.deleted``, left out); a tag
    whose ref cannot be read is left out."""
    client, tags = _client(), {}
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                             Prefix=f"{prefix}/refs/tag.")
    keys = {item["Key"] for page in pages for item in page.get("Contents", [])}
    for key in keys:
        name = key[len(f"{prefix}/refs/tag."):].rpartition("/")[0]
        if key != f"{prefix}/{TAG_REF.format(name)}" or f"{key}.deleted" in keys:
            continue
        try:
            snapshot = json.loads(client.get_object(Bucket=bucket, Key=key)["Body"].read())
            tags[name] = snapshot["snapshot"]
        except (ValueError, KeyError, TypeError):
            continue
    return tags


def restore_branch(bucket, prefix, branch, tag):
    """Write the ref of ``branch`` as a copy of the ref of ``tag`` (both name a snapshot in
    the same form): the branch points at the tag's snapshot."""
    _client().copy_object(Bucket=bucket, Key=f"{prefix}/{BRANCH_REF.format(branch)}",
                          CopySource={"Bucket": bucket, "Key": f"{prefix}/{TAG_REF.format(tag)}"})

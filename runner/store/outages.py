"""What went wrong with a store on object storage, and an outage of its endpoint waited out
(docs/guide/hpc.md, "When the endpoint fails").

:func:`cause` tells apart, from an Icechunk error, the failures a user fixes differently:
no credentials, credentials the endpoint refuses, credentials that may only read, a missing
bucket, and an endpoint that cannot be reached (refused or dropped connections, DNS, time-outs,
server errors). Only the last is transient: :class:`Patience` tries an operation again, with
backoff, until the endpoint answers or :data:`RETRY_VARIABLE` seconds (default
:data:`RETRY_SECONDS`) have passed since the operation began, then raises
:class:`.errors.StoreUnreachable`; :class:`PatientStore` does so for every read and write of a
Zarr store. Icechunk retries each request a few times itself (its ``StorageRetriesSettings``),
a count of tries rather than a time, and its client keeps the settings of the first request
of a repository, so it is left as it is and this waits on top of it.
"""

import asyncio
import logging
import os
import time

from zarr.abc.store import Store
from zarr.storage import WrapperStore

from .errors import StoreUnreachable

log = logging.getLogger("pcskm")

RETRY_VARIABLE = "PCSKM_S3_RETRY_SECONDS"
RETRY_SECONDS = 600.0  # ten minutes: a restart of an S3 server, a failover, a network blip
FIRST_PAUSE, LONGEST_PAUSE = 1.0, 30.0  # seconds between tries: doubling from, capped at
WARN_EVERY = 60.0  # seconds between two warnings of one outage

NO_CREDENTIALS = "no credentials"
REFUSED_CREDENTIALS = "credentials refused"
READ_ONLY = "credentials that may only read"
DENIED = "credentials that may not read"
NO_BUCKET = "missing bucket"
UNREACHABLE = "unreachable endpoint"

# AWS error codes (and the SDK's words) of each cause; the first that matches is the cause
_SIGNS = (
    (NO_CREDENTIALS, ("no providers in chain provided credentials",
                      "the credential provider was not enabled", "CredentialsNotLoaded",
                      # the chain's last provider failed (the EC2 instance metadata, IMDS)
                      "an error occurred while loading credentials")),
    (REFUSED_CREDENTIALS, ("InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken",
                           "InvalidToken", "TokenRefreshRequired", "InvalidClientTokenId")),
    (NO_BUCKET, ("NoSuchBucket",)),
    (DENIED, ("AccessDenied", "Forbidden")),  # READ_ONLY when a write was denied
    (UNREACHABLE, ("dispatch failure", "io error", "timed out", "timeout", "SlowDown",
                   "ServiceUnavailable", "InternalError", "RequestTimeout",
                   "connection closed", "Connection reset", "Connection refused")),
)


def retry_seconds():
    """How long an outage is waited out: ``$PCSKM_S3_RETRY_SECONDS``, else
    :data:`RETRY_SECONDS`; 0 gives up at the first failure."""
    text = os.environ.get(RETRY_VARIABLE)
    if text is None or not text.strip():
        return RETRY_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise ValueError(f"{RETRY_VARIABLE}={text!r}: give the seconds an outage of the object "
                         f"store's endpoint is waited out, a number >= 0 (default "
                         f"{RETRY_SECONDS:g})")
    return seconds


def cause(error):
    """What ``error`` (an Icechunk error, or its text) says went wrong: one of
    :data:`NO_CREDENTIALS`, :data:`REFUSED_CREDENTIALS`, :data:`READ_ONLY`, :data:`DENIED`,
    :data:`NO_BUCKET`, :data:`UNREACHABLE`, or None when it names none of them (an error
    of the repository's own objects, or one whose causes Icechunk did not keep)."""
    text = str(error)
    for found, signs in _SIGNS:
        if any(sign in text for sign in signs):
            if found == DENIED and "writing object" in text:
                return READ_ONLY
            return found
    return None


def detail(error):
    """The innermost line of an Icechunk error's chain of causes (``Connection refused (os
    error 111)``, ``NoSuchBucket: ...``), else its first line."""
    lines = str(error).splitlines()
    causes = [line.strip()[3:].strip() for line in lines
              if line.strip().startswith(("|->", "`->"))]
    first = [line.strip(" x|") for line in lines if line.strip(" x|")][:1]
    return (causes[-1:] or first or [type(error).__name__])[0]


def explain(error, bucket, probe=None):
    """The cause of the Icechunk ``error`` met on a repository in ``bucket``, in words, with
    what to do: one line per cause of :func:`cause`. ``probe()`` (the error of a plain read of
    the repository, or None if it reads) is asked when ``error`` names no cause (Icechunk keeps
    none for a failed commit): its cause is taken, and a refused write of a repository that
    reads is one of credentials that may only read."""
    found = cause(error)
    if found is None and probe is not None:
        checked = probe()
        if cause(checked) is not None:
            error, found = checked, cause(checked)
        elif checked is None and "writing object" in str(error):
            found = READ_ONLY
    words = detail(error)
    if found == NO_CREDENTIALS:
        return (f"no AWS credentials were found ({words}); set AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN for temporary ones), or "
                "AWS_PROFILE")
    if found == REFUSED_CREDENTIALS:
        return (f"the endpoint {endpoint()} refused the AWS credentials ({words}): an unknown "
                "key, a wrong secret or an expired session token; check AWS_ACCESS_KEY_ID, "
                "AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN")
    if found == READ_ONLY:
        return (f"the bucket refused the write: credentials that may only read it ({words}); "
                "pcskm status, verify and report only read, pcskm run needs credentials that "
                "may write the bucket")
    if found == DENIED:
        return (f"the credentials may not read the bucket {bucket} ({words}); give them "
                "s3:GetObject and s3:ListBucket on it")
    if found == NO_BUCKET:
        return (f"the bucket {bucket} does not exist at {endpoint()} ({words}); create it "
                "(pcskm creates the repository, not the bucket) or check AWS_ENDPOINT_URL. An "
                "S3 server restarted without its data has lost its buckets and the stores in "
                "them")
    if found == UNREACHABLE:
        return (f"the object store's endpoint {endpoint()} cannot be reached ({words}); check "
                "the network and AWS_ENDPOINT_URL")
    first = next((line.strip(" x|") for line in str(error).splitlines()
                  if line.strip(" x|")), type(error).__name__)
    return f"{first}; check the bucket, the AWS credentials or AWS_ENDPOINT_URL"


class Patience:
    """Waiting out an outage of the endpoint of the store ``name``: :meth:`call` tries an
    operation again while it fails with :data:`UNREACHABLE`, pausing 1, 2, 4 ... 30 s, until
    ``seconds`` (:func:`retry_seconds`) have passed since it began. Once it has given up, the
    next operations are tried once each until one succeeds (a run stopping does not wait the
    whole time again for each of its last commits)."""

    def __init__(self, name, seconds=None):
        self.name = name
        self.seconds = retry_seconds() if seconds is None else seconds
        self.gave_up = False
        self._warned = -WARN_EVERY

    def __getstate__(self):
        return {"name": self.name, "seconds": self.seconds}

    def __setstate__(self, state):
        self.__init__(state["name"], state["seconds"])

    def call(self, function, *args, **kwargs):
        """``function(*args, **kwargs)``, tried again while the endpoint cannot be reached."""
        import icechunk

        began, pause = time.monotonic(), FIRST_PAUSE
        while True:
            try:
                result = function(*args, **kwargs)
            except icechunk.IcechunkError as error:
                wait = self._wait(error, began, pause)
                if wait is None:
                    raise
            else:
                self.gave_up = False
                return result
            time.sleep(wait)
            pause = min(2 * pause, LONGEST_PAUSE)

    async def call_async(self, function, *args, **kwargs):
        """:meth:`call` for a coroutine function."""
        import icechunk

        began, pause = time.monotonic(), FIRST_PAUSE
        while True:
            try:
                result = await function(*args, **kwargs)
            except icechunk.IcechunkError as error:
                wait = self._wait(error, began, pause)
                if wait is None:
                    raise
            else:
                self.gave_up = False
                return result
            await asyncio.sleep(wait)
            pause = min(2 * pause, LONGEST_PAUSE)

    def _wait(self, error, began, pause):
        """The seconds to wait before the next try of an operation begun at ``began`` that
        failed with ``error``; None if ``error`` is not an outage; raises
        :class:`StoreUnreachable` when the time is up."""
        if cause(error) != UNREACHABLE:
            return None
        now = time.monotonic()
        left = began + self.seconds - now
        if left <= 0 or self.gave_up:
            self.gave_up = True
            raise StoreUnreachable(self.unreachable(now - began, error)) from None
        if now - self._warned >= WARN_EVERY:
            self._warned = now
            log.warning("%s: the object store's endpoint %s cannot be reached (%s); retrying "
                        "for up to %g s (%s)", self.name, endpoint(), detail(error),
                        self.seconds, RETRY_VARIABLE)
        return min(pause, left)

    def unreachable(self, seconds, error):
        """The message of an endpoint that did not answer for ``seconds``."""
        return (f"{self.name}: the object store's endpoint {endpoint()} was unreachable for "
                f"{seconds:.0f} s ({detail(error)}); pcskm waits out an outage for "
                f"{RETRY_VARIABLE}={self.seconds:g} s. Check the network and the endpoint "
                "(AWS_ENDPOINT_URL); everything committed is kept, and pcskm run again "
                "resumes (docs/guide/hpc.md, \"When the endpoint fails\")")


def endpoint():
    """The endpoint of this process's requests: ``$AWS_ENDPOINT_URL_S3``, else
    ``$AWS_ENDPOINT_URL``, else AWS's S3."""
    return (os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
            or "(AWS S3)")


class PatientStore(WrapperStore):
    """A Zarr store (an Icechunk session's) whose every read and write is tried again through
    an outage of the endpoint (:class:`Patience`)."""

    def __init__(self, store, patience=None):
        super().__init__(store)
        self.patience = patience or Patience(str(store))

    def _with_store(self, store):
        return type(self)(store, self.patience)

    @property
    def supports_consolidated_metadata(self):
        return self._store.supports_consolidated_metadata

    async def get(self, key, prototype, byte_range=None):
        return await self.patience.call_async(self._store.get, key, prototype, byte_range)

    async def get_partial_values(self, prototype, key_ranges):
        key_ranges = list(key_ranges)
        return await self.patience.call_async(self._store.get_partial_values, prototype,
                                              key_ranges)

    async def exists(self, key):
        return await self.patience.call_async(self._store.exists, key)

    async def is_empty(self, prefix):
        return await self.patience.call_async(self._store.is_empty, prefix)

    async def set(self, key, value):
        await self.patience.call_async(self._store.set, key, value)

    _set_many = Store._set_many  # each set tried again, not the wrapped store's own
    _get_many = Store._get_many

    async def set_if_not_exists(self, key, value):
        await self.patience.call_async(self._store.set_if_not_exists, key, value)

    async def delete(self, key):
        await self.patience.call_async(self._store.delete, key)

    async def delete_dir(self, prefix):
        await self.patience.call_async(self._store.delete_dir, prefix)

    async def clear(self):
        await self.patience.call_async(self._store.clear)

    def list(self):
        return self._listed(self._store.list)

    def list_prefix(self, prefix):
        return self._listed(self._store.list_prefix, prefix)

    def list_dir(self, prefix):
        return self._listed(self._store.list_dir, prefix)

    async def _listed(self, listing, *args):
        async def every():
            return [key async for key in listing(*args)]

        for key in await self.patience.call_async(every):
            yield key

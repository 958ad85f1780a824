"""The S3 backend: a store in a bucket of any S3-compatible object storage.

``s3://bucket/prefix?endpoint_url=https://...&region=...`` names the store
kept under ``prefix/`` in ``bucket`` (AWS S3, Tencent COS, MinIO, Cloudflare
R2, ...). Object storage has no transactions, so this is a
:class:`~makers_store.blob.StepwiseBlobStore`: every blob operation is one
HTTP request (a scan is a listing plus one GetObject per key), and the
programs' write order plus compare-and-swap on etags keep the data
consistent. Which requests each operation sends, and why they keep it
correct (conditional writes, a nonce in every body against ABA), is
:mod:`.s3_requests`; this module opens the client, names the store by URL,
counts requests and turns S3's errors into the store's.

Credentials and region come from the standard AWS chain of botocore
(``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` / ``AWS_SESSION_TOKEN``,
``AWS_PROFILE`` or ``?profile=``, the shared config files, instance roles);
secrets are never taken from the URL, which ends up in logs and ``info``.
Other options: ``addressing_style`` (path / virtual / auto),
``max_attempts`` (per request, retries included; default 3) and
``max_connections`` (the pool, default 32).

Client: aiobotocore (extra ``makers-store[s3]``), botocore on aiohttp. It
is maintained alongside botocore, so it speaks every S3 parameter the day
AWS adds it (IfMatch / IfNoneMatch on PutObject, IfMatch on DeleteObject),
and botocore's event hooks count every HTTP request, retries included.
obstore 0.12 was checked against the same server and rejected: its delete
takes no precondition, its listing has no MaxKeys, and it offers no way to
count requests.

Event loops and threads. A store object may be used from any event loop and
any thread. An aiobotocore client (its aiohttp session, the locks of its
credentials) belongs to the loop that made it, so each loop has a client of
its own (:class:`.per_loop.PerLoop`), made on the loop's first request and
closed when that loop shuts down or the store closes. The clients share what
is not bound to a loop: botocore's loaded service models, across every store
of the process (a client costs about 10 ms, not the 60 to 100 ms of a fresh
session), and the store's request counts. Each client sends at most
``max_connections`` requests at once; a request waiting for one of those
slots reports the wait as queue time, which retry budgets do not count
(:func:`makers_store.retry.waited_in_queue`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from typing import Any, ClassVar, assert_never

from makers_store.blob import OBJECT_STORAGE, Capabilities, StepwiseBlobStore, VacuumReport
from makers_store.blob_ops import (
    Delete,
    DeleteMany,
    Get,
    GetMany,
    ListKeys,
    ListMany,
    Op,
    Put,
    Scan,
)
from makers_store.errors import MemoryValidationError, StoreError, missing_extra

from ..per_loop import PerLoop
from .errors import translate
from .requests import RequestSlots, S3Bucket

#: botocore's loader of service models, shared by every session of the
#: process (every store, every loop): it is plain data read from disk, and a
#: fresh one made a client cost about 60 ms instead of 10 (a process that
#: opens stores one after another, a test suite or a copy between two
#: buckets, paid it each time). Credentials stay each session's own. A dict,
#: whose setdefault is atomic, filled by the first client.
_shared_loader: dict[str, Any] = {}


class _LoopClient:
    """One event loop's client, and what closes it."""

    __slots__ = ("bucket", "client", "stack")

    def __init__(self, stack: contextlib.AsyncExitStack, client: Any, bucket: S3Bucket) -> None:
        self.stack = stack
        self.client = client
        self.bucket = bucket

    async def aclose(self) -> None:
        await self.stack.aclose()

    def abandon(self) -> None:
        """Release the client of a loop that was closed without shutting it
        down (a bare ``loop.close()``). asyncio cannot close a transport of a
        closed loop (``close`` and ``abort`` schedule on it), and left to the
        garbage collector each would warn ``unclosed transport``: so each
        kept-alive connection's socket is closed here, and aiohttp's connector
        marked closed (its own close does only that on a closed loop)."""
        http = getattr(getattr(self.client, "_endpoint", None), "http_session", None)
        sessions = getattr(http, "_sessions", None) or {}
        for session in list(sessions.values()):
            connector = getattr(session, "connector", None)
            if connector is None:
                continue
            protocols = [p for held in getattr(connector, "_conns", {}).values() for p, _ in held]
            protocols += list(getattr(connector, "_acquired", ()))
            for protocol in protocols:
                transport = getattr(protocol, "transport", None)
                sock = getattr(transport, "_sock", None)
                if sock is not None:
                    sock.close()
                    transport._sock = None  # type: ignore[union-attr]
            close = getattr(connector, "_close", None)
            if close is not None:
                close()


class S3BlobStore(StepwiseBlobStore):
    """Blob storage in an S3-compatible bucket (``s3://bucket/prefix``)."""

    #: S3 cannot list descending (a reverse listing reads its window
    #: forward), and every request is billed.
    capabilities: ClassVar[Capabilities] = OBJECT_STORAGE

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        profile: str | None = None,
        addressing_style: str | None = None,
        max_attempts: int = 3,
        max_connections: int = 32,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.endpoint_url = endpoint_url
        self.region = region
        self.profile = profile
        self.addressing_style = addressing_style
        self.max_attempts = max_attempts
        self.max_connections = max_connections
        #: HTTP requests sent, by S3 operation name (retries included).
        self.requests: collections.Counter[str] = collections.Counter()
        self._clients: PerLoop[_LoopClient] = PerLoop(
            f"S3 store s3://{bucket}/{self.prefix}",
            self._connect,
            _LoopClient.abandon,
            _LoopClient.aclose,
        )

    # --- connection ----------------------------------------------------------

    async def _connect(self) -> _LoopClient:
        """The running loop's client (see :mod:`.per_loop`)."""
        try:
            from aiobotocore.config import AioConfig
            from aiobotocore.session import get_session
        except ImportError:
            raise missing_extra("aiobotocore", "s3") from None
        session = get_session()  # per loop: its credentials may hold an asyncio lock
        loader = _shared_loader.get("data_loader")
        if loader is not None:
            session.register_component("data_loader", loader)
        if self.profile:
            session.set_config_variable("profile", self.profile)
        config = AioConfig(
            retries={"mode": "standard", "total_max_attempts": self.max_attempts},
            max_pool_connections=self.max_connections,
            # Plain PUT bodies: the default CRC trailers (aws-chunked) are
            # not understood by every S3-compatible service.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        if self.addressing_style:
            style: Any = self.addressing_style
            config = config.merge(AioConfig(s3={"addressing_style": style}))
        stack = contextlib.AsyncExitStack()
        try:
            client = await stack.enter_async_context(
                session.create_client(
                    "s3",
                    endpoint_url=self.endpoint_url,
                    region_name=self.region,
                    config=config,
                )
            )
        except BaseException as exc:
            await stack.aclose()
            if isinstance(exc, Exception):
                raise self._translate(exc, "connect", "") from exc
            raise
        _shared_loader.setdefault("data_loader", session.get_component("data_loader"))
        client.meta.events.register("before-send.s3", self._count_request)
        slots = RequestSlots(self.max_connections)
        return _LoopClient(stack, client, S3Bucket(client, self.bucket, self.prefix, slots))

    def _count_request(self, event_name: str, **_: Any) -> None:
        self.requests[event_name.rsplit(".", 1)[-1]] += 1

    async def close(self) -> None:
        """Close every event loop's client, from any loop."""
        await self._clients.aclose()

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "s3",
            "atomic": False,
            "endpoint": self.endpoint_url or "AWS (from the region)",
            "bucket": self.bucket,
            "prefix": self.prefix,
            "region": self.region,
            "reclaimable_bytes": 0,  # a deleted object's space is the provider's again
        }

    async def vacuum(self) -> VacuumReport:
        return VacuumReport(
            backend="s3",
            bytes_before=None,
            bytes_after=None,
            note=(
                "nothing to do: object storage frees an object's space when it is deleted "
                "(a bucket with versioning keeps old versions until its lifecycle rules "
                "remove them)"
            ),
            nothing_to_do=True,
        )

    # --- operations ----------------------------------------------------------

    async def execute(self, op: Op) -> object:
        try:
            bucket = (self._clients.current() or await self._clients.get()).bucket
            match op:
                case Get():
                    return await bucket.get(op.key)
                case GetMany():
                    return await bucket.get_many(op.keys)
                case Put():
                    return await bucket.put(op)
                case Delete():
                    return await bucket.delete(op)
                case DeleteMany():
                    await bucket.delete_many(op)
                    return None
                case ListKeys():
                    return await bucket.list_keys(op)
                case Scan():
                    return await bucket.scan(op)
                case ListMany():
                    return await asyncio.gather(*(bucket.list_keys(one) for one in op.listings))
                case _:
                    assert_never(op)
        except StoreError:
            raise
        except Exception as exc:
            key = str(getattr(op, "key", None) or getattr(op, "prefix", ""))
            raise self._translate(exc, type(op).__name__, key) from exc

    def _translate(self, exc: Exception, operation: str, key: str) -> Exception:
        where = self.endpoint_url or f"AWS S3 ({self.region or 'default region'})"
        store = f"s3://{self.bucket}/{self.prefix}"
        return translate(exc, operation=operation, key=key, store=store, where=where)


def _positive_int(url: str, options: dict[str, str], name: str, default: int) -> int:
    raw = options.pop(name, None)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise MemoryValidationError(f"url {url!r}: {name} must be a positive integer")
    return value


def from_url(url: str, path: str, options: dict[str, str]) -> S3BlobStore:
    """``s3://bucket/prefix?endpoint_url=...&region=...`` -> an :class:`S3BlobStore`."""
    options = dict(options)
    bucket, _, prefix = path.partition("/")
    if not bucket:
        raise MemoryValidationError(f"url {url!r} names no bucket: write s3://bucket/prefix")
    style = options.pop("addressing_style", None)
    if style not in (None, "auto", "path", "virtual"):
        raise MemoryValidationError(f"url {url!r}: addressing_style must be path, virtual or auto")
    store_options = {
        "endpoint_url": options.pop("endpoint_url", None),
        "region": options.pop("region", None),
        "profile": options.pop("profile", None),
    }
    max_attempts = _positive_int(url, options, "max_attempts", 3)
    max_connections = _positive_int(url, options, "max_connections", 32)
    if options:
        raise MemoryValidationError(
            f"url {url!r}: unknown option(s) {', '.join(sorted(options))}; known: endpoint_url, "
            "region, profile, addressing_style, max_attempts, max_connections (credentials come "
            "from the environment, never from the URL)"
        )
    return S3BlobStore(
        bucket,
        prefix,
        addressing_style=style,
        max_attempts=max_attempts,
        max_connections=max_connections,
        **store_options,
    )

"""The S3 backend: a store in a bucket of any S3-compatible object storage.

``s3://bucket/prefix?endpoint_url=https://...&region=...`` names the store
kept under ``prefix/`` in ``bucket`` (AWS S3, Tencent COS, MinIO, Cloudflare
R2, ...). Object storage has no transactions, so this is a
:class:`~makers_store.blob.StepwiseBlobStore`: every blob operation is one
HTTP request (a scan is a listing plus one GetObject per key), and the
programs' write order plus compare-and-swap on etags keep the data
consistent:

* Get -> GetObject (404 -> None), GetMany -> concurrent GetObjects (at most
  ``SCAN_CONCURRENCY`` in flight), ListMany -> concurrent listings, Put ->
  PutObject with ``If-None-Match: *`` or ``If-Match: <etag>`` (412, and 409
  ConditionalRequestConflict, raise PreconditionFailedError; so does 404 on
  If-Match: the key is gone),
  Delete -> DeleteObject with ``If-Match``, DeleteMany -> DeleteObjects
  (quiet, 1,000 keys per request), ListKeys -> ListObjectsV2 pages
  (``StartAfter``, ``MaxKeys``), Scan -> a listing and concurrent GetObjects.
* S3 lists ascending only: a reverse listing reads the whole window forward
  and keeps its last ``limit`` keys (``capabilities.lists_backward`` False tells the
  store's programs to avoid them on hot paths).
* Delete reports whether the blob existed with ``If-Match: *`` (S3 answers
  404 when it did not): one request. A server that does not honour the
  wildcard (moto answers 412) gets a plain DeleteObject after it. A server
  that ignores If-Match on DELETE altogether deletes unconditionally: the
  store's conditional deletes then lose their protection against a
  concurrent rewrite, and a delete of a missing key reports True.
* S3's ETag of a plain PutObject is the MD5 of the body, so writing equal
  bytes twice would give equal etags and let a stale compare-and-swap pass
  (ABA). Each object's body is therefore the value followed by a
  ``NONCE_SIZE``-byte random nonce, which reads strip: every put has a new
  etag, as the blob contract requires.

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
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, assert_never

from makers_store.blob import OBJECT_STORAGE, Capabilities, StepwiseBlobStore
from makers_store.blob_ops import (
    Blob,
    BlobInfo,
    Delete,
    DeleteMany,
    Entry,
    Get,
    GetMany,
    ListKeys,
    ListMany,
    Op,
    Put,
    Scan,
)
from makers_store.errors import (
    BackendError,
    MemoryCorruptError,
    MemoryValidationError,
    PreconditionFailedError,
    StoreError,
    missing_extra,
)

from .s3_errors import code_and_status, is_client_error, precondition_failed, translate

if TYPE_CHECKING:
    from types_aiobotocore_s3 import S3Client

NONCE_SIZE = 16  # random bytes after each value, so every put gets a new ETag
PAGE_SIZE = 1000  # the most keys ListObjectsV2 returns per request
DELETE_OBJECTS_MAX = 1000  # the most keys one DeleteObjects request takes
SCAN_CONCURRENCY = 16  # GetObjects in flight per scan or batch read


def _epoch_ms(value: Any) -> int:
    return int(value.timestamp() * 1000)


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
        self._client: S3Client | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._opening = asyncio.Lock()

    # --- connection ----------------------------------------------------------

    async def _connect(self) -> S3Client:
        async with self._opening:
            if self._client is not None:
                return self._client
            try:
                from aiobotocore.config import AioConfig
                from aiobotocore.session import get_session
            except ImportError:
                raise missing_extra("aiobotocore", "s3") from None
            session = get_session()
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
            except Exception as exc:
                await stack.aclose()
                raise self._translate(exc, "connect", "") from exc
            client.meta.events.register("before-send.s3", self._count_request)
            self._stack, self._client = stack, client
            return client

    def _count_request(self, event_name: str, **_: Any) -> None:
        self.requests[event_name.rsplit(".", 1)[-1]] += 1

    async def close(self) -> None:
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "s3",
            "atomic": False,
            "endpoint": self.endpoint_url or "AWS (from the region)",
            "bucket": self.bucket,
            "prefix": self.prefix,
            "region": self.region,
        }

    # --- operations ----------------------------------------------------------

    async def execute(self, op: Op) -> object:
        client = self._client or await self._connect()
        try:
            match op:
                case Get():
                    return await self._get(client, op.key)
                case GetMany():
                    return await self._get_all(client, op.keys)
                case Put():
                    return await self._put(client, op)
                case Delete():
                    return await self._delete(client, op)
                case DeleteMany():
                    await self._delete_many(client, op)
                    return None
                case ListKeys():
                    return await self._list(client, op)
                case Scan():
                    return await self._scan(client, op)
                case ListMany():
                    return await asyncio.gather(*(self._list(client, one) for one in op.listings))
                case _:
                    assert_never(op)
        except StoreError:
            raise
        except Exception as exc:
            key = str(getattr(op, "key", None) or getattr(op, "prefix", ""))
            raise self._translate(exc, type(op).__name__, key) from exc

    async def _get(self, client: S3Client, key: str) -> Blob | None:
        try:
            response = await client.get_object(Bucket=self.bucket, Key=self.prefix + key)
        except Exception as exc:
            if is_client_error(exc) and code_and_status(exc) in (("NoSuchKey", 404), ("", 404)):
                return None
            raise
        async with response["Body"] as body:
            raw = await body.read()
        data = self._strip_nonce(key, raw)
        return Blob(key, response["ETag"], len(data), _epoch_ms(response["LastModified"]), data)

    @staticmethod
    def _strip_nonce(key: str, raw: bytes) -> bytes:
        if len(raw) < NONCE_SIZE:
            raise MemoryCorruptError(
                f"blob {key!r} is {len(raw)} bytes, shorter than the {NONCE_SIZE}-byte nonce "
                "makers-store appends: was it written by another tool?"
            )
        return raw[:-NONCE_SIZE]

    async def _put(self, client: S3Client, op: Put) -> BlobInfo | None:
        conditions: dict[str, Any] = {}
        if op.if_none_match:
            conditions["IfNoneMatch"] = "*"
        if op.if_match is not None:
            conditions["IfMatch"] = op.if_match
        body = bytes(op.data) + os.urandom(NONCE_SIZE)
        try:
            response = await client.put_object(
                Bucket=self.bucket, Key=self.prefix + op.key, Body=body, **conditions
            )
        except Exception as exc:
            if conditions and precondition_failed(exc, missing_fails=op.if_match is not None):
                if op.quiet and op.if_none_match:
                    return None  # it exists: kept, as asked
                raise PreconditionFailedError(f"{op.key!r} changed (put precondition)") from exc
            raise
        if op.quiet and op.if_none_match:
            return None
        return BlobInfo(op.key, response["ETag"], len(op.data), time.time_ns() // 1_000_000)

    async def _delete(self, client: S3Client, op: Delete) -> bool:
        key = self.prefix + op.key
        if op.if_match is not None:
            try:
                await client.delete_object(Bucket=self.bucket, Key=key, IfMatch=op.if_match)
            except Exception as exc:
                if precondition_failed(exc, missing_fails=True):
                    raise PreconditionFailedError(
                        f"{op.key!r} changed (delete precondition)"
                    ) from exc
                raise
            return True
        if op.quiet:  # the caller ignores the answer: one plain request
            await client.delete_object(Bucket=self.bucket, Key=key)
            return True
        try:  # "delete if it exists": 404 tells us it did not
            await client.delete_object(Bucket=self.bucket, Key=key, IfMatch="*")
        except Exception as exc:
            if not is_client_error(exc):
                raise
            code, status = code_and_status(exc)
            if status == 404 and code != "NoSuchBucket":
                return False
            if status not in (409, 412):
                raise
            # The server does not honour the wildcard (moto), or a concurrent
            # write raced this one: delete unconditionally.
            await client.delete_object(Bucket=self.bucket, Key=key)
        return True

    async def _delete_many(self, client: S3Client, op: DeleteMany) -> None:
        for start in range(0, len(op.keys), DELETE_OBJECTS_MAX):
            chunk = op.keys[start : start + DELETE_OBJECTS_MAX]
            objects: list[Any] = [{"Key": self.prefix + key} for key in chunk]
            response = await client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": objects, "Quiet": True}
            )
            failed = response.get("Errors") or []
            if failed:  # per-key failures come back in a 200 response
                first = failed[0]
                raise BackendError(
                    f"S3 DeleteObjects failed for {len(failed)} of {len(chunk)} keys in "
                    f"s3://{self.bucket}/{self.prefix}, first {first.get('Key')!r}: "
                    f"{first.get('Code')} ({first.get('Message')})"
                )

    async def _list(self, client: S3Client, op: ListKeys | Scan) -> list[BlobInfo]:
        limit = op.limit
        if limit is not None and limit <= 0:
            return []
        want = None if op.reverse else limit  # a reverse listing reads its whole window
        end = None if op.end_before is None else self.prefix + op.end_before
        start_after = None if op.start_after is None else self.prefix + op.start_after
        cut = len(self.prefix)
        found: list[BlobInfo] = []
        while True:
            page = PAGE_SIZE if want is None else min(PAGE_SIZE, want - len(found))
            extra: dict[str, Any] = {} if start_after is None else {"StartAfter": start_after}
            response = await client.list_objects_v2(
                Bucket=self.bucket, Prefix=self.prefix + op.prefix, MaxKeys=page, **extra
            )
            contents = response.get("Contents", [])
            for item in contents:
                name = item["Key"]
                if end is not None and name >= end:
                    return self._window(found, op)
                size = max(item["Size"] - NONCE_SIZE, 0)
                found.append(
                    BlobInfo(name[cut:], item["ETag"], size, _epoch_ms(item["LastModified"]))
                )
                if want is not None and len(found) >= want:
                    return found
            if not response.get("IsTruncated") or not contents:
                return self._window(found, op)
            start_after = contents[-1]["Key"]

    @staticmethod
    def _window(found: list[BlobInfo], op: ListKeys | Scan) -> list[BlobInfo]:
        if not op.reverse:
            return found
        return found[::-1] if op.limit is None else found[::-1][: op.limit]

    async def _scan(self, client: S3Client, op: Scan) -> list[Entry]:
        infos = await self._list(client, op)
        blobs = await self._get_all(client, [info.key for info in infos])
        # A key deleted between the listing and its GetObject is left out.
        return [Entry(blob.key, blob.data) for blob in blobs if blob is not None]

    async def _get_all(self, client: S3Client, keys: Sequence[str]) -> list[Blob | None]:
        """GetObject of every key, at most ``SCAN_CONCURRENCY`` at a time, in order."""
        gate = asyncio.Semaphore(SCAN_CONCURRENCY)

        async def fetch(key: str) -> Blob | None:
            async with gate:
                return await self._get(client, key)

        tasks = [asyncio.ensure_future(fetch(key)) for key in keys]
        try:
            return await asyncio.gather(*tasks)
        except BaseException:  # leave no GetObject running behind a failed read
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

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

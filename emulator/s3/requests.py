"""What each blob operation sends to S3: the requests of the S3 backend, in one bucket.

:class:`S3Bucket` answers the blob operations with S3 requests through an
open aiobotocore client, under one key prefix of one bucket. It is apart from
:mod:`.s3`, which opens the client, names the store by URL, counts requests
and turns S3's errors into the store's, because this is the part that decides
how many requests each operation costs and what makes it correct on storage
without transactions:

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
* Delete reports whether the blob existed with ``If-Match: *``: one
  request where the server answers 404 for a missing key, as AWS S3 does
  for general purpose buckets. Servers differ there (moto up to 5.2.5
  answers 404, and 412 for an existing key, as if ``*`` were an etag; moto
  5.2.6 treats the wildcard as no condition and answers 204 either way; the
  DeleteObject reference says 204 for a missing key on directory buckets),
  so a 204 alone cannot say whether the key existed. The first delete that
  needs to know asks the server once per process, endpoint and bucket
  (:func:`_wildcard_reports_missing`: a wildcard delete of a key that cannot
  exist): where it answers 404 a 204 means "it existed", as before; where it
  does not, such deletes read the etag first (HeadObject) and delete with
  ``If-Match: <etag>``: one request for a missing key, two for a present
  one. A server that ignores If-Match on DELETE altogether deletes
  unconditionally: the store's conditional deletes then lose their
  protection against a concurrent rewrite.
* At most ``max_connections`` requests are in flight per client
  (:class:`RequestSlots`); time spent waiting for a slot is reported as
  queue time (:func:`makers_store.retry.waited_in_queue`).
* S3's ETag of a plain PutObject is the MD5 of the body, so writing equal
  bytes twice would give equal etags and let a stale compare-and-swap pass
  (ABA). Each object's body is therefore the value followed by a
  ``NONCE_SIZE``-byte random nonce, which reads strip: every put has a new
  etag, as the blob contract requires.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from makers_store.blob_ops import Blob, BlobInfo, Delete, DeleteMany, Entry, ListKeys, Put, Scan
from makers_store.errors import BackendError, MemoryCorruptError, PreconditionFailedError
from makers_store.retry import waited_in_queue

from .errors import code_and_status, is_client_error, precondition_failed

if TYPE_CHECKING:
    from types_aiobotocore_s3 import S3Client

NONCE_SIZE = 16  # random bytes after each value, so every put gets a new ETag
PAGE_SIZE = 1000  # the most keys ListObjectsV2 returns per request
DELETE_OBJECTS_MAX = 1000  # the most keys one DeleteObjects request takes
SCAN_CONCURRENCY = 16  # GetObjects in flight per scan or batch read
#: Where the probe of :func:`_wildcard_reports_missing` points, under the
#: store's prefix, with a random suffix: no program writes a key there.
PROBE_KEY = ".delete-probe/"

#: (endpoint, bucket) -> whether a wildcard DeleteObject of a missing key
#: answers 404 there. What a server does is the server's, not one store
#: object's or one event loop's, so it is asked once per process.
reports_missing: dict[tuple[str, str], bool] = {}
_reports_missing_lock = threading.Lock()


def _epoch_ms(value: Any) -> int:
    return int(value.timestamp() * 1000)


class RequestSlots:
    """``async with slots:`` around one request: at most ``size`` in flight
    (the client's connection pool, so aiohttp never queues them itself),
    and the wait for a slot is reported as queue time. One per client, so
    per event loop."""

    def __init__(self, size: int) -> None:
        self._free = asyncio.Semaphore(size)

    async def __aenter__(self) -> None:
        if self._free.locked():
            began = time.monotonic()
            await self._free.acquire()
            waited_in_queue(time.monotonic() - began)
        else:
            await self._free.acquire()  # free: returns without suspending

    async def __aexit__(self, *exc_info: object) -> None:
        self._free.release()


class S3Bucket:
    """The blob operations as S3 requests, on ``client``, for the keys of
    bucket ``name`` under ``prefix`` (empty, or ending in ``/``), each
    request in one of ``slots``."""

    def __init__(self, client: S3Client, name: str, prefix: str, slots: RequestSlots) -> None:
        self.client = client
        self.name = name
        self.prefix = prefix
        self.slots = slots

    async def get(self, key: str) -> Blob | None:
        async with self.slots:  # the body is read on the request's connection
            try:
                response = await self.client.get_object(Bucket=self.name, Key=self.prefix + key)
            except Exception as exc:
                if is_client_error(exc) and code_and_status(exc) in (
                    ("NoSuchKey", 404),
                    ("", 404),
                ):
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

    async def put(self, op: Put) -> BlobInfo | None:
        conditions: dict[str, Any] = {}
        if op.if_none_match:
            conditions["IfNoneMatch"] = "*"
        if op.if_match is not None:
            conditions["IfMatch"] = op.if_match
        body = bytes(op.data) + os.urandom(NONCE_SIZE)
        try:
            async with self.slots:
                response = await self.client.put_object(
                    Bucket=self.name, Key=self.prefix + op.key, Body=body, **conditions
                )
        except Exception as exc:
            if conditions and precondition_failed(exc, missing_fails=op.if_match is not None):
                if op.quiet and op.if_none_match:
                    return None  # it exists: kept, as asked
                raise PreconditionFailedError(
                    f"{op.key!r} changed (put precondition)", key=op.key
                ) from exc
            raise
        if op.quiet and op.if_none_match:
            return None
        return BlobInfo(op.key, response["ETag"], len(op.data), time.time_ns() // 1_000_000)

    async def delete(self, op: Delete) -> bool:
        key = self.prefix + op.key
        if op.if_match is not None:
            try:
                async with self.slots:
                    await self.client.delete_object(Bucket=self.name, Key=key, IfMatch=op.if_match)
            except Exception as exc:
                if precondition_failed(exc, missing_fails=True):
                    raise PreconditionFailedError(
                        f"{op.key!r} changed (delete precondition)", key=op.key
                    ) from exc
                raise
            return True
        if op.quiet:  # the caller ignores the answer: one plain request
            async with self.slots:
                await self.client.delete_object(Bucket=self.name, Key=key)
            return True
        if not await self._wildcard_reports_missing():
            return await self._delete_by_etag(op.key)
        try:  # "delete if it exists": 404 tells us it did not
            async with self.slots:
                await self.client.delete_object(Bucket=self.name, Key=key, IfMatch="*")
        except Exception as exc:
            if not is_client_error(exc):
                raise
            code, status = code_and_status(exc)
            if status == 404 and code != "NoSuchBucket":
                return False
            if status not in (409, 412):
                raise
            # The server takes the wildcard for an etag (moto up to 5.2.5),
            # or a concurrent write raced this one: it exists, delete it.
            async with self.slots:
                await self.client.delete_object(Bucket=self.name, Key=key)
        return True

    async def _wildcard_reports_missing(self) -> bool:
        """Whether this server answers a wildcard DeleteObject of a missing
        key with 404, so that its 204 means the key existed. Asked once per
        process, endpoint and bucket, by deleting a key that cannot exist
        (nothing is written; deleting a missing key changes nothing)."""
        where = (str(self.client.meta.endpoint_url), self.name)
        known = reports_missing.get(where)
        if known is not None:
            return known
        probe = f"{self.prefix}{PROBE_KEY}{os.urandom(8).hex()}"
        try:
            async with self.slots:
                await self.client.delete_object(Bucket=self.name, Key=probe, IfMatch="*")
            answer = False  # 204 for a missing key: a 204 says nothing
        except Exception as exc:
            if not is_client_error(exc):
                raise
            code, status = code_and_status(exc)
            if status == 409:  # a conflict on a fresh key: ask again next time
                return False
            if code == "NoSuchBucket" or status not in (404, 412):
                raise
            answer = status == 404
        with _reports_missing_lock:
            reports_missing.setdefault(where, answer)
        return answer

    async def _delete_by_etag(self, blob_key: str) -> bool:
        """Delete ``blob_key`` if it exists, telling whether it did, on a server
        whose wildcard delete cannot tell: read its etag (HeadObject), then
        delete with ``If-Match: <etag>``. 404 there: someone else deleted it
        meanwhile (and reports it); 412 or 409: it was rewritten meanwhile,
        which fails the unit like any lost race, for the store's one retry
        policy to run it again."""
        key = self.prefix + blob_key
        try:
            async with self.slots:
                head = await self.client.head_object(Bucket=self.name, Key=key)
        except Exception as exc:
            if is_client_error(exc) and code_and_status(exc)[1] == 404:
                return False
            raise
        try:
            async with self.slots:
                await self.client.delete_object(Bucket=self.name, Key=key, IfMatch=head["ETag"])
        except Exception as exc:
            if not precondition_failed(exc, missing_fails=True):
                raise
            if code_and_status(exc)[1] == 404:
                return False
            raise PreconditionFailedError(
                f"{blob_key!r} changed while being deleted", key=blob_key
            ) from exc
        return True

    async def delete_many(self, op: DeleteMany) -> None:
        for start in range(0, len(op.keys), DELETE_OBJECTS_MAX):
            chunk = op.keys[start : start + DELETE_OBJECTS_MAX]
            objects: list[Any] = [{"Key": self.prefix + key} for key in chunk]
            async with self.slots:
                response = await self.client.delete_objects(
                    Bucket=self.name, Delete={"Objects": objects, "Quiet": True}
                )
            failed = response.get("Errors") or []
            if failed:  # per-key failures come back in a 200 response
                first = failed[0]
                raise BackendError(
                    f"S3 DeleteObjects failed for {len(failed)} of {len(chunk)} keys in "
                    f"s3://{self.name}/{self.prefix}, first {first.get('Key')!r}: "
                    f"{first.get('Code')} ({first.get('Message')})"
                )

    async def list_keys(self, op: ListKeys | Scan) -> list[BlobInfo]:
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
            async with self.slots:
                response = await self.client.list_objects_v2(
                    Bucket=self.name, Prefix=self.prefix + op.prefix, MaxKeys=page, **extra
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

    async def scan(self, op: Scan) -> list[Entry]:
        infos = await self.list_keys(op)
        blobs = await self.get_many([info.key for info in infos])
        # A key deleted between the listing and its GetObject is left out.
        return [Entry(blob.key, blob.data) for blob in blobs if blob is not None]

    async def get_many(self, keys: Sequence[str]) -> list[Blob | None]:
        """GetObject of every key, at most ``SCAN_CONCURRENCY`` at a time, in order."""
        gate = asyncio.Semaphore(SCAN_CONCURRENCY)

        async def fetch(key: str) -> Blob | None:
            async with gate:
                return await self.get(key)

        tasks = [asyncio.ensure_future(fetch(key)) for key in keys]
        try:
            return await asyncio.gather(*tasks)
        except BaseException:  # leave no GetObject running behind a failed read
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

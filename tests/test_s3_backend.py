"""The S3 backend against a throwaway moto server (tests/servers/s3.py).

First, raw requests prove that the server itself enforces the conditions the
store's compare-and-swap relies on: PutObject with ``If-None-Match: *`` on an
existing key and with a stale ``If-Match``, and DeleteObject with a stale
``If-Match``, are answered 412 and change nothing; of many concurrent
PutObjects with the same ``If-Match``, exactly one wins.

What moto does not do like S3: DeleteObject with ``If-Match: *`` (S3: delete
if the key exists, 404 if not). moto up to 5.2.5 answers 412 for an existing
key, as if ``*`` were an etag (the backend then deletes plainly: two requests
for an existing key); moto 5.2.6 ignores the wildcard and answers 204 for a
missing key too. The backend asks the server once which it does and, where a
204 cannot tell, reads the etag with HeadObject and deletes with it. moto
also checks a condition and writes in two unlocked steps; the test server
runs one request at a time so that its conditional writes are atomic, as
S3's are.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import pytest

from makers_store import open_blob_store, open_store
from makers_store._core.programs import STALE_INDEX_BATCH
from makers_store.blob_conformance import CHECKS, run_blob_conformance
from makers_store.blob_ops import DeleteMany, Scan, single
from makers_store.emulator.s3 import requests as s3_requests
from makers_store.emulator.s3.backend import S3BlobStore
from makers_store.emulator.s3.requests import NONCE_SIZE
from makers_store.errors import (
    BackendError,
    MemoryCorruptError,
    MemoryValidationError,
    PreconditionFailedError,
)
from tests.servers.s3 import BUCKET, REGION, endpoint, s3_url

if TYPE_CHECKING:
    from types_aiobotocore_s3 import S3Client


@pytest.fixture
async def raw() -> AsyncIterator[S3Client]:
    from aiobotocore.session import get_session

    async with get_session().create_client(
        "s3", endpoint_url=endpoint(), region_name=REGION
    ) as client:
        yield client


@pytest.fixture
async def blobs() -> AsyncIterator[S3BlobStore]:
    store = open_blob_store(s3_url())
    assert isinstance(store, S3BlobStore)
    yield store
    await store.close()


def status(exc: pytest.ExceptionInfo[Exception]) -> int:
    return int(exc.value.response["ResponseMetadata"]["HTTPStatusCode"])  # type: ignore[attr-defined]


# --- the server enforces the conditions ---------------------------------------


async def test_server_rejects_if_none_match_on_an_existing_key(raw: S3Client) -> None:
    from botocore.exceptions import ClientError

    key = f"raw/{s3_url()}/inm"
    await raw.put_object(Bucket=BUCKET, Key=key, Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as caught:
        await raw.put_object(Bucket=BUCKET, Key=key, Body=b"second", IfNoneMatch="*")
    assert status(caught) == 412
    body = await (await raw.get_object(Bucket=BUCKET, Key=key))["Body"].read()
    assert body == b"first"


async def test_server_rejects_a_stale_if_match_and_accepts_the_current_one(
    raw: S3Client,
) -> None:
    from botocore.exceptions import ClientError

    key = f"raw/{s3_url()}/im"
    first = (await raw.put_object(Bucket=BUCKET, Key=key, Body=b"1"))["ETag"]
    second = (await raw.put_object(Bucket=BUCKET, Key=key, Body=b"2", IfMatch=first))["ETag"]
    with pytest.raises(ClientError) as caught:
        await raw.put_object(Bucket=BUCKET, Key=key, Body=b"3", IfMatch=first)
    assert status(caught) == 412
    with pytest.raises(ClientError) as caught:
        await raw.delete_object(Bucket=BUCKET, Key=key, IfMatch=first)
    assert status(caught) == 412
    body = await (await raw.get_object(Bucket=BUCKET, Key=key))["Body"].read()
    assert body == b"2"
    await raw.delete_object(Bucket=BUCKET, Key=key, IfMatch=second)
    with pytest.raises(ClientError) as caught:
        await raw.get_object(Bucket=BUCKET, Key=key)
    assert status(caught) == 404


async def test_server_lets_exactly_one_of_racing_compare_and_swaps_win(raw: S3Client) -> None:
    from botocore.exceptions import ClientError

    key = f"raw/{s3_url()}/race"
    etag = (await raw.put_object(Bucket=BUCKET, Key=key, Body=b"0"))["ETag"]

    # Distinct bodies: equal bytes get equal ETags (MD5), so a racer writing
    # the current bytes would leave the etag unchanged and the next one pass.
    # That is why S3BlobStore appends a nonce to every value.
    async def attempt(body: str) -> bool:
        try:
            await raw.put_object(Bucket=BUCKET, Key=key, Body=body.encode(), IfMatch=etag)
        except ClientError as exc:
            assert exc.response["ResponseMetadata"]["HTTPStatusCode"] == 412
            return False
        return True

    for round_ in range(3):
        won = await asyncio.gather(*(attempt(f"{round_}-{n}") for n in range(8)))
        assert won.count(True) == 1
        etag = (await raw.head_object(Bucket=BUCKET, Key=key))["ETag"]


# --- the backend ---------------------------------------------------------------


async def test_backend_passes_conformance() -> None:
    async def open_backend() -> S3BlobStore:
        store = open_blob_store(s3_url())
        assert isinstance(store, S3BlobStore)
        return store

    assert await run_blob_conformance(open_backend) == [fn.__name__ for fn in CHECKS]


async def test_each_operation_costs_the_requests_it_should(blobs: S3BlobStore) -> None:
    def cost() -> dict[str, int]:
        spent = dict(blobs.requests)
        blobs.requests.clear()
        return spent

    info = await blobs.put("a", b"1", if_none_match=True)
    assert cost() == {"PutObject": 1}
    assert (await blobs.get("a")) is not None and cost() == {"GetObject": 1}
    assert await blobs.get("missing") is None and cost() == {"GetObject": 1}
    await blobs.put("a", b"2", if_match=info.etag)
    assert cost() == {"PutObject": 1}
    with pytest.raises(PreconditionFailedError):
        await blobs.put("a", b"3", if_match=info.etag)
    assert cost() == {"PutObject": 1}
    assert await blobs.delete("missing") is False  # the server's wildcard answer, asked once
    reports_missing = s3_requests.reports_missing[(endpoint(), BUCKET)]
    cost()
    assert await blobs.delete("missing") is False
    if reports_missing:  # S3, moto <= 5.2.5: If-Match: * answers 404
        assert cost() == {"DeleteObject": 1}
        # One request on S3; moto <= 5.2.5 answers the wildcard 412, so two.
        assert await blobs.delete("a") is True and cost() == {"DeleteObject": 2}
    else:  # moto 5.2.6: a 204 either way, so the etag is read first
        assert cost() == {"HeadObject": 1}
        assert await blobs.delete("a") is True and cost() == {"HeadObject": 1, "DeleteObject": 1}
    for n in range(5):
        await blobs.put(f"s/{n}", b"x")
    cost()
    assert len(await blobs.list("s/", limit=3)) == 3 and cost() == {"ListObjectsV2": 1}
    found = await blobs.run(single(Scan("s/")), write=False)
    assert len(found) == 5 and cost() == {"ListObjectsV2": 1, "GetObject": 5}
    doomed = tuple(f"d/{n}" for n in range(1_500))  # missing keys cost nothing extra
    await blobs.run(single(DeleteMany(doomed)), write=True)
    assert cost() == {"DeleteObjects": 2}  # at most 1,000 keys per request


async def test_the_backend_knows_what_the_servers_wildcard_delete_answers(
    raw: S3Client, blobs: S3BlobStore
) -> None:
    """What the backend learned (once per process, endpoint and bucket) is
    what the server answers a wildcard delete of a missing key."""
    await blobs.delete("missing")
    try:
        await raw.delete_object(Bucket=BUCKET, Key="never-written", IfMatch="*")
        answers_404 = False
    except Exception as exc:
        answers_404 = exc.response["ResponseMetadata"]["HTTPStatusCode"] == 404  # type: ignore[attr-defined]
    assert s3_requests.reports_missing[(endpoint(), BUCKET)] is answers_404


@pytest.mark.parametrize("reports_missing", [True, False])
async def test_delete_tells_whether_the_key_existed_whatever_the_server_answers(
    blobs: S3BlobStore, monkeypatch: pytest.MonkeyPatch, reports_missing: bool
) -> None:
    """Both ways of deleting a key only if it exists, on the real server:
    the wildcard where a 404 reports a missing key (taken only where the
    server does), the etag read first where it does not."""
    await blobs.delete("missing")
    actual = s3_requests.reports_missing[(endpoint(), BUCKET)]
    if reports_missing and not actual:
        pytest.skip("this server answers a wildcard delete of a missing key with 204")
    monkeypatch.setitem(s3_requests.reports_missing, (endpoint(), BUCKET), reports_missing)
    await blobs.put("k", b"1")
    assert await blobs.delete("k") is True
    assert await blobs.get("k") is None
    assert await blobs.delete("k") is False
    assert await blobs.delete("never") is False


async def test_a_common_append_costs_four_requests() -> None:
    async with open_store(s3_url()) as store:
        assert isinstance(store.blobs, S3BlobStore)
        counts = store.blobs.requests
        await store.bind("warm-up").state.set("k", 1)  # + the layout check, once
        costs = []
        for user_id in (None, "u"):
            for n in range(STALE_INDEX_BATCH + 1):
                counts.clear()
                await store.append_message(
                    conversation_id=f"c-{user_id}", role="user", content=str(n), user_id=user_id
                )
                costs.append(dict(counts))
        new, *existing = costs[: STALE_INDEX_BATCH + 1]
        assert new == {"GetObject": 1, "PutObject": 3}  # meta (missing), message, entry, meta
        common = {"GetObject": 1, "PutObject": 3}  # meta, message, entry, meta
        assert existing == [common] * (STALE_INDEX_BATCH - 1) + [{**common, "DeleteObjects": 1}]
        # With a user: one more entry to write, in that user's index.
        mine = costs[STALE_INDEX_BATCH + 2 :]
        with_user = {"GetObject": 1, "PutObject": 4}
        assert mine == [with_user] * (STALE_INDEX_BATCH - 1) + [{**with_user, "DeleteObjects": 1}]


async def test_listings_page_and_stop_at_the_window(
    blobs: S3BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3_requests, "PAGE_SIZE", 2)
    names = [f"p/{n}" for n in range(7)]
    for name in names:
        await blobs.put(name, name.encode())
    blobs.requests.clear()

    async def keys(**kw: Any) -> list[str]:
        return [info.key for info in await blobs.list("p/", **kw)]

    assert await keys() == names
    assert blobs.requests["ListObjectsV2"] == 4  # pages of 2, the last one short
    blobs.requests.clear()
    assert await keys(end_before="p/3") == names[:3]
    assert blobs.requests["ListObjectsV2"] == 2  # stops at the first key past the window
    blobs.requests.clear()
    assert await keys(start_after="p/1", limit=3) == names[2:5]
    assert blobs.requests["ListObjectsV2"] == 2  # MaxKeys shrinks to what is still wanted


@pytest.mark.parametrize(
    ("start_after", "end_before", "limit"),
    [(None, None, None), (None, None, 2), ("p/1", None, 3), (None, "p/5", 2),
     ("p/0", "p/6", None), ("p/2", "p/4", 10), ("p/6", None, 1), (None, "p/0", 1)],
)  # fmt: skip
async def test_reverse_listing_is_the_forward_window_backwards(
    blobs: S3BlobStore,
    monkeypatch: pytest.MonkeyPatch,
    start_after: str | None,
    end_before: str | None,
    limit: int | None,
) -> None:
    monkeypatch.setattr(s3_requests, "PAGE_SIZE", 2)
    assert S3BlobStore.capabilities.lists_backward is False
    for n in range(7):
        await blobs.put(f"p/{n}", b"x")
    await blobs.put("q", b"outside the prefix")
    window = [f"p/{n}" for n in range(7)]
    window = [k for k in window if (start_after is None or k > start_after)]
    window = [k for k in window if (end_before is None or k < end_before)]
    expected = window[::-1][:limit]
    kw: dict[str, Any] = {"start_after": start_after, "end_before": end_before, "limit": limit}
    assert [i.key for i in await blobs.list("p/", reverse=True, **kw)] == expected
    scanned = await blobs.run(single(Scan("p/", reverse=True, **kw)), write=False)
    assert [entry.key for entry in scanned] == expected


async def test_stores_under_different_prefixes_do_not_see_each_other() -> None:
    first, second = open_blob_store(s3_url()), open_blob_store(s3_url())
    try:
        await first.put("k", b"first")
        assert await second.get("k") is None
        assert await second.list() == []
        assert [info.key for info in await first.list()] == ["k"]
    finally:
        await first.close()
        await second.close()


async def test_values_carry_a_nonce_and_foreign_objects_are_reported(
    blobs: S3BlobStore, raw: S3Client
) -> None:
    await blobs.put("mine", b"value")
    stored = await raw.get_object(Bucket=BUCKET, Key=blobs.prefix + "mine")
    assert stored["ContentLength"] == len(b"value") + NONCE_SIZE
    assert [info.size for info in await blobs.list()] == [5]
    await raw.put_object(Bucket=BUCKET, Key=blobs.prefix + "foreign", Body=b"short")
    with pytest.raises(MemoryCorruptError, match="another tool"):
        await blobs.get("foreign")


# --- errors, URLs, describe ----------------------------------------------------


async def test_a_missing_bucket_is_a_clear_backend_error() -> None:
    store = open_blob_store(f"s3://no-such-bucket/x?endpoint_url={endpoint()}&region={REGION}")
    try:
        with pytest.raises(BackendError, match="bucket 'no-such-bucket' does not exist"):
            await store.get("k")
        with pytest.raises(BackendError, match="does not exist"):
            await store.put("k", b"v", if_none_match=True)
        with pytest.raises(BackendError, match="does not exist"):
            await store.list()
    finally:
        await store.close()


async def test_a_server_that_is_down_is_a_clear_backend_error() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"s3://{BUCKET}/x?endpoint_url=http://127.0.0.1:{port}&region={REGION}&max_attempts=1"
    store = open_blob_store(url)
    try:
        with pytest.raises(BackendError, match=f"cannot reach the S3 endpoint .*:{port}"):
            await store.get("k")
    finally:
        await store.close()


async def test_missing_credentials_are_a_clear_backend_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    store = open_blob_store(s3_url())
    try:
        with pytest.raises(BackendError, match="no credentials"):
            await store.get("k")
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("s3:///prefix", "names no bucket"),
        ("s3://b/p?aws_secret_access_key=x", "never from the URL"),
        ("s3://b/p?max_attempts=0", "max_attempts must be a positive integer"),
        ("s3://b/p?addressing_style=sideways", "addressing_style"),
    ],
)
def test_bad_urls_are_rejected(url: str, message: str) -> None:
    with pytest.raises(MemoryValidationError, match=message):
        open_blob_store(url)


async def test_describe_names_the_store_and_no_secret() -> None:
    store = open_blob_store(f"s3://{BUCKET}/some/prefix/?endpoint_url={endpoint()}&region=eu-1")
    facts = store.describe()
    assert facts == {
        "kind": "s3",
        "atomic": False,
        "endpoint": endpoint(),
        "bucket": BUCKET,
        "prefix": "some/prefix/",
        "region": "eu-1",
        "reclaimable_bytes": 0,  # a delete frees the space at once
    }
    assert "testing" not in repr(facts)  # the (fake) keys in the environment
    await store.close()
    await store.close()  # idempotent, and fine before any request


async def test_the_store_runs_on_s3_end_to_end() -> None:
    async with open_store(s3_url()) as store:
        message_id = await store.append_message(
            conversation_id="c1", role="user", content="hello", user_id="u1"
        )
        got = await store.get_messages(conversation_id="c1")
        assert [m.message_id for m in got] == [message_id]
        assert isinstance(store.blobs, S3BlobStore)
        assert store.blobs.requests["PutObject"] >= 2


async def test_keys_with_percent_plus_space_and_unicode_round_trip(blobs: S3BlobStore) -> None:
    names = sorted(
        ["c/a%2Fb/meta", "c/a%25b/meta", "k+plus", "sp ace", "u/\u00e9\U0001f600", "t/~!*'()"]
    )
    for name in names:
        await blobs.put(name, name.encode())
    assert [info.key for info in await blobs.list()] == names
    for name in names:
        blob = await blobs.get(name)
        assert blob is not None and blob.data == name.encode()

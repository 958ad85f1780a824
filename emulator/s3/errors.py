"""The S3 backend's edge for errors: reading botocore's exceptions and
translating them into the store's (:class:`~makers_store.errors.BackendError`
naming the store and what to check). botocore is imported on first use."""

from __future__ import annotations

import asyncio
import functools
from types import ModuleType
from typing import Any

from makers_store.errors import BackendError


@functools.cache
def botocore_errors() -> ModuleType:
    import botocore.exceptions

    return botocore.exceptions


def code_and_status(exc: Exception) -> tuple[str, int]:
    """(code, HTTP status) of a botocore ClientError."""
    response: Any = getattr(exc, "response", {})
    code = str(response.get("Error", {}).get("Code", ""))
    status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
    return code, status


def is_client_error(exc: BaseException) -> bool:
    return isinstance(exc, botocore_errors().ClientError)


def precondition_failed(exc: BaseException, *, missing_fails: bool) -> bool:
    """Whether ``exc`` is the server refusing a conditional request (a 404
    counts when the condition was If-Match: the key is gone)."""
    if not is_client_error(exc):
        return False
    assert isinstance(exc, Exception)
    code, status = code_and_status(exc)
    if status in (409, 412) or code in ("PreconditionFailed", "ConditionalRequestConflict"):
        return True
    return missing_fails and (status == 404 and code != "NoSuchBucket")


_DENIED = ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken")


def translate(exc: Exception, *, operation: str, key: str, store: str, where: str) -> Exception:
    """A StoreError for a client's exception; anything else is returned as is.
    ``store`` is the ``s3://bucket/prefix`` URL, ``where`` the endpoint."""
    errors = botocore_errors()
    if isinstance(exc, errors.ClientError):
        code, status = code_and_status(exc)
        if code == "NoSuchBucket":
            bucket = store.removeprefix("s3://").split("/", 1)[0]
            return BackendError(f"bucket {bucket!r} does not exist at {where}")
        if status == 403 or code in (*_DENIED, "InvalidToken"):
            return BackendError(
                f"access denied to {store} at {where} ({code or status}): check "
                "the credentials (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or the "
                "profile) and the bucket's policy"
            )
        return BackendError(f"S3 {operation} of {key!r} in {store} failed: {code} ({status})")
    if isinstance(exc, errors.NoCredentialsError | errors.PartialCredentialsError):
        return BackendError(
            f"no credentials for {store}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "(or AWS_PROFILE / ?profile=)"
        )
    if isinstance(exc, errors.EndpointConnectionError | errors.ConnectTimeoutError):
        return BackendError(f"cannot reach the S3 endpoint {where}: {exc}")
    if isinstance(exc, errors.BotoCoreError | OSError | asyncio.TimeoutError):
        return BackendError(f"S3 {operation} of {key!r} in {store} failed: {exc}")
    return exc

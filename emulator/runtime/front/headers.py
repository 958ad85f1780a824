"""Headers at the front: what a worker is sent, what a client gets back.

The front passes the client's headers on except hop-by-hop ones and the
internal ``makers-internal-*`` ones (a client cannot forge the run id or the
token), adds the run id it chose, and marks every response with the
instance that served it.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Scope, Send

from ..http_client import Headers
from ..wire import (
    CONVERSATION_HEADER,
    INSTANCE_HEADER,
    INSTANCE_PID_HEADER,
    INTERNAL_HEADER_PREFIX,
    RUN_HEADER,
    RUN_ID_INTERNAL_HEADER,
)
from .supervisor import Worker

HOP_BY_HOP = {
    b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"te",
    b"trailer", b"upgrade", b"expect", b"content-length", b"host",
}
#: On a refused body: the client may still be sending it, so the connection ends here.
CLOSE = (b"connection", b"close")
FROM_WORKER_DROPPED = {
    b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"date", b"server",
}


def header(headers: Headers, name: bytes) -> bytes | None:
    for key, value in headers:
        if key == name:
            return value
    return None


def conversation_of(scope: Scope) -> bytes:
    """The request's conversation id (b"" when it has none)."""
    return header(scope["headers"], CONVERSATION_HEADER.encode()) or b""


def instance_headers(worker: Worker) -> Headers:
    return [
        (INSTANCE_HEADER, str(worker.serial).encode()),
        (INSTANCE_PID_HEADER, str(worker.pid).encode()),
    ]


def forwarded_headers(scope: Scope, cid: bytes, run_id: str) -> Headers:
    """The client's headers as the worker gets them (framing is added when sending)."""
    headers: Headers = scope["headers"]
    forwarded: Headers = [
        (k, v)
        for k, v in headers
        if k not in HOP_BY_HOP
        and not k.startswith(INTERNAL_HEADER_PREFIX)
        and k != CONVERSATION_HEADER.encode()
    ]
    forwarded += [
        (b"host", header(headers, b"host") or b"localhost"),
        (RUN_ID_INTERNAL_HEADER.encode(), run_id.encode()),
    ]
    if cid:
        forwarded.append((CONVERSATION_HEADER.encode(), cid))
    client = scope.get("client")
    if client:
        forwarded.append((b"x-forwarded-for", str(client[0]).encode()))
    return forwarded


def identity_headers(cid: bytes, run_id: str) -> Headers:
    """The identity headers of a response the front makes itself."""
    headers = [(RUN_HEADER.encode(), run_id.encode())]
    return [(CONVERSATION_HEADER.encode(), cid), *headers] if cid else headers


async def send_json(
    send: Send, status: int, payload: Any, headers: Headers | None = None
) -> None:
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body, "more_body": False})

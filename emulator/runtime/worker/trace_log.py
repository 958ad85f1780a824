"""``<project>/.makers-store/traces.jsonl``: one JSON record per finished agent run.

This module is the one definition of the file's format (Studio reads it too).
Each line is one JSON object (UTF-8), format version :data:`RECORD_VERSION`::

    {
      "version": 1,
      "run_id": "run_...",            # ctx.run_id
      "conversation_id": "demo",      # "" when the request had none
      "route": "/chat",               # the URL path
      "file": "agents/chat/index.py", # the route's file
      "instance": 2,                  # serve's instance number
      "pid": 12345,
      "started_at": 1764763200.123,   # epoch seconds
      "duration_ms": 812.4,
      "status": "ok",                 # ok | error | aborted | disconnected | timeout | interrupted
      "http_status": 200,             # what the client was answered (null: unknown)
      "attributes": {...},            # ctx.tracer.set_attributes(...)
      "spans": [{"name", "start_ms" (from the run's start), "duration_ms" (null if never
                 ended), "status", "attributes", "events": [{"name", "attributes"}]}],
      "dropped_spans": 0              # spans over the per-run cap
    }

A run whose handler returned normally but answered 4xx or 5xx (``return
{"error": ...}, 400``, a response envelope, a Response) is ``error``, not
``ok``: :func:`run_status`. ``http_status`` was added in version 1 without a
version change (readers take its absence as unknown).
:data:`FAILED_STATUSES` are what "failed runs" means (the Studio's filter).

Attribute values JSON cannot encode are written as ``str(value)``. Several
worker processes append at once: each record is one ``write`` under an
exclusive ``flock``. The file is bounded: past :data:`MAX_FILE_BYTES` it is
renamed to ``traces.jsonl.1`` (replacing the previous one) and a new file
starts, so at most about twice that is kept.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..project.data_dir import DATA_DIR
from .tracing import Tracer

try:
    import fcntl
except ImportError:  # Windows: appends are still whole lines, rotation may race
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("makers_store.serve")

RECORD_VERSION = 1
FILE_NAME = "traces.jsonl"
MAX_FILE_BYTES = 5 * 1024 * 1024
#: A record larger than this keeps its run fields and drops attributes and spans.
MAX_RECORD_BYTES = 256 * 1024


#: The statuses of runs that did not end well (a client disconnecting is not one).
FAILED_STATUSES = frozenset({"error", "aborted", "timeout"})


def run_status(status: str, http_status: int | None) -> str:
    """The status a run is recorded with: ``ok`` only when its answer was not
    4xx or 5xx (what the handler said stays otherwise: ``aborted`` answers 499)."""
    if status == "ok" and http_status is not None and http_status >= 400:
        return "error"
    return status


def is_failed(record: dict[str, Any]) -> bool:
    """Whether a record's run failed: its status, or its answer's HTTP status
    for records written before :func:`run_status` judged it."""
    http_status = record.get("http_status")
    return record.get("status") in FAILED_STATUSES or (
        isinstance(http_status, int) and http_status >= 400
    )


def trace_path(project: Path) -> Path:
    return project / DATA_DIR / FILE_NAME


def build_record(
    tracer: Tracer,
    *,
    status: str,
    http_status: int | None = None,
    conversation_id: str,
    route: str,
    file: str,
    instance: int,
) -> dict[str, Any]:
    return {
        "version": RECORD_VERSION,
        "run_id": tracer.run_id,
        "conversation_id": conversation_id,
        "route": route,
        "file": file,
        "instance": instance,
        "pid": os.getpid(),
        "started_at": round(tracer.started_at, 3),
        "duration_ms": round(_elapsed_ms(tracer), 3),
        "status": status,
        "http_status": http_status,
        "attributes": tracer.attributes,
        "spans": [span.to_record() for span in tracer.spans],
        "dropped_spans": tracer.dropped_spans,
    }


def _elapsed_ms(tracer: Tracer) -> float:
    return (time.perf_counter() - tracer.started) * 1000


def encode_record(record: dict[str, Any]) -> bytes:
    line = json.dumps(record, ensure_ascii=False, default=str, allow_nan=True)
    data = (line + "\n").encode("utf-8", "replace")
    if len(data) > MAX_RECORD_BYTES:
        trimmed = {**record, "attributes": {}, "spans": [], "truncated": True}
        data = (json.dumps(trimmed, ensure_ascii=False, default=str) + "\n").encode(
            "utf-8", "replace"
        )
    return data


@contextlib.contextmanager
def _locked_append(path: Path) -> Iterator[IO[bytes]]:
    """The file open for appending, under an exclusive lock, rotated if it is full."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        handle = path.open("ab")
        try:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                same = os.fstat(handle.fileno()).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # another process rotated it while we waited for the lock
                continue
            if os.fstat(handle.fileno()).st_size >= MAX_FILE_BYTES:
                os.replace(path, path.with_name(path.name + ".1"))
                continue
            yield handle
            return
        finally:
            handle.close()  # closing releases the lock


def append_record(path: Path, record: dict[str, Any]) -> None:
    """Append one record; a failure is logged, never raised (tracing must not break a run)."""
    data = encode_record(record)
    try:
        with _locked_append(path) as handle:
            handle.write(data)
    except OSError as exc:
        logger.warning("could not write the trace of run %s to %s: %s", record["run_id"], path, exc)


def recent_records(path: Path, limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` records, newest first (unreadable lines are skipped)."""
    lines: list[bytes] = []
    for candidate in (path, path.with_name(path.name + ".1")):
        try:
            lines = candidate.read_bytes().splitlines()[-limit:] + lines
        except FileNotFoundError:
            continue
        if len(lines) >= limit:
            break
    records: list[dict[str, Any]] = []
    for line in reversed(lines[-limit:]):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records[:limit]

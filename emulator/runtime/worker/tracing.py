"""``ctx.tracer``: a request-level root span per run, plus the spans a handler starts.

Platform style (positional, try/finally)::

    ctx.tracer.set_attributes({"user": uid})          # on the run itself
    span = ctx.tracer.start_span("model.call", {"model": name})
    try:
        ...
        span.set_attributes({"tokens": 42})
    finally:
        span.end()

``with``/``async with ctx.tracer.start_span(...) as span`` works too, and
``start_as_current_span`` is an alias (OpenTelemetry-style code runs
unchanged). ``ctx.tracer.record_exception`` does not exist, as on the
platform (code calling it would fail there).

Each span is logged when it ends (``span NAME 1.2ms run=... status=ok {...}``).
When the run ends, one line sums it up (``trace run=... route=... status=...``)
and one record goes to ``<project>/.makers-store/traces.jsonl`` (see
:mod:`.trace_log`), which ``GET /agent-metrics`` serves.
"""

from __future__ import annotations

import logging
import time
from types import TracebackType
from typing import Any

from ..sse import dumps

logger = logging.getLogger("makers_store.serve.trace")

#: Spans kept per run (a handler starting spans in a loop must not grow a record forever).
MAX_SPANS_PER_RUN = 500


def _text(attributes: dict[str, Any]) -> str:
    try:
        return dumps(attributes)
    except (TypeError, ValueError):
        return str(attributes)


class Span:
    def __init__(self, tracer: Tracer, name: str, attributes: dict[str, Any] | None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("start_span: name must be a non-empty string")
        self.tracer = tracer
        self.name = name
        self.attributes: dict[str, Any] = dict(attributes or {})
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.status = "ok"
        self.started = time.perf_counter()
        self.duration_ms: float | None = None

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def set_attributes(self, attributes: dict[str, Any]) -> None:
        self.attributes.update(attributes)

    def add_event(self, name: str, attributes: dict[str, Any] | None = None) -> None:
        self.events.append((name, dict(attributes or {})))

    def set_status(self, status: Any, description: str | None = None) -> None:
        self.status = str(getattr(status, "name", status)).lower()
        if description:
            self.attributes["status_description"] = description

    def record_exception(self, exc: BaseException) -> None:
        self.status = "error"
        self.add_event("exception", {"type": type(exc).__name__, "message": str(exc)})

    def end(self) -> None:
        if self.duration_ms is not None:
            return
        self.duration_ms = (time.perf_counter() - self.started) * 1000
        parts = [f"run={self.tracer.run_id}", f"status={self.status}"]
        if self.attributes:
            parts.append(_text(self.attributes))
        parts += [f"event={name}{_text(attrs) if attrs else ''}" for name, attrs in self.events]
        logger.info("span %s %.1fms %s", self.name, self.duration_ms, " ".join(parts))

    def to_record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "start_ms": round((self.started - self.tracer.started) * 1000, 3),
            "duration_ms": None if self.duration_ms is None else round(self.duration_ms, 3),
            "status": self.status,
            "attributes": self.attributes,
            "events": [{"name": n, "attributes": a} for n, a in self.events],
        }

    def __enter__(self) -> Span:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is not None:
            self.record_exception(exc)
        self.end()

    async def __aenter__(self) -> Span:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)


class Tracer:
    """``ctx.tracer`` of one run: its own attributes (the root span) and its spans."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.attributes: dict[str, Any] = {}
        self.spans: list[Span] = []
        self.dropped_spans = 0
        self.started = time.perf_counter()
        self.started_at = time.time()

    def set_attributes(self, attributes: dict[str, Any]) -> None:
        """Attributes of the run itself (the request-level root span)."""
        if not isinstance(attributes, dict):
            raise TypeError(
                f"set_attributes: attributes must be a dict, not {type(attributes).__name__}"
            )
        self.attributes.update(attributes)

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def start_span(
        self,
        name: str,
        attributes_dict: dict[str, Any] | None = None,
        *,
        attributes: dict[str, Any] | None = None,
    ) -> Span:
        """A new span; end it with ``end()`` (or use it as a context manager).

        ``attributes_dict`` is the platform's positional argument; ``attributes=``
        is accepted as the OpenTelemetry spelling.
        """
        span = Span(self, name, {**(attributes_dict or {}), **(attributes or {})})
        if len(self.spans) < MAX_SPANS_PER_RUN:
            self.spans.append(span)
        else:
            self.dropped_spans += 1
        return span

    start_as_current_span = start_span

    def summary(self, status: str) -> str:
        """The run's log line: its status, time, attributes and spans."""
        elapsed = (time.perf_counter() - self.started) * 1000
        spans = [
            f"{s.name} {'open' if s.duration_ms is None else f'{s.duration_ms:.1f}ms'}"
            for s in self.spans
        ]
        parts = [f"run={self.run_id}", f"status={status}", f"{elapsed:.1f}ms"]
        if self.attributes:
            parts.append(_text(self.attributes))
        if spans:
            parts.append("spans=[" + ", ".join(spans) + "]")
        return " ".join(parts)

"""``ctx.tracer``: spans that are logged when they end (no exporter needed).

::

    with ctx.tracer.start_span("model.call", attributes={"model": name}) as span:
        span.set_attribute("tokens", 42)

logs ``span model.call 12.3ms run=run_... status=ok {"model": ..., "tokens": 42}``.
``start_as_current_span`` is an alias, so OpenTelemetry-style code runs unchanged.
"""

from __future__ import annotations

import logging
import time
from types import TracebackType
from typing import Any

from .sse import dumps

logger = logging.getLogger("makers_store.serve.trace")


class Span:
    def __init__(self, tracer: Tracer, name: str, attributes: dict[str, Any] | None) -> None:
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
        self.tracer.finished.append(self)
        parts = [f"run={self.tracer.run_id}", f"status={self.status}"]
        if self.attributes:
            parts.append(dumps(self.attributes))
        parts += [f"event={name}{dumps(attrs) if attrs else ''}" for name, attrs in self.events]
        logger.info("span %s %.1fms %s", self.name, self.duration_ms, " ".join(parts))

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
    """Creates spans for one run; each is logged with the run id when it ends."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.finished: list[Span] = []

    def start_span(self, name: str, attributes: dict[str, Any] | None = None) -> Span:
        return Span(self, name, attributes)

    start_as_current_span = start_span

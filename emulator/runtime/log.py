"""What ``serve`` and ``studio`` print on the developer's terminal, made safe.

Their lines carry what anyone reaching the port chose: a request path
(``/%1b[31m`` arrives decoded), a ``makers-conversation-id`` header, whatever
project code prints about a request body, an exception's message. Each line
shows control and bidi characters as visible escapes
(:func:`makers_store.text.printable`, the CLI's one implementation), so no HTTP
client can colour, retitle or clear the terminal. Three ways in, one
treatment: the front's log (:class:`SafeFormatter`), uvicorn's own log
(:func:`uvicorn_log_config`), and the workers' output relayed line by line
(:func:`relayed_line`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from makers_store.text import printable

#: ``13:04:05 message``: serve's log lines and uvicorn's alike.
LINE_FORMAT = "%(asctime)s %(message)s"
TIME_FORMAT = "%H:%M:%S"


class SafeFormatter(logging.Formatter):
    """A formatter whose lines, tracebacks included, show control characters
    escaped (newlines kept: a traceback is several lines; a value that must
    not break a line in two is passed through ``printable_line`` first)."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


class CancelledAtStop(logging.Filter):
    """Drops uvicorn's "Exception in ASGI application" for a request cancelled
    because the server stopped: stopping is not an error, and its traceback
    (every frame of Starlette's middleware) buried the line saying it stopped."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, asyncio.CancelledError)


def uvicorn_log_config(*, timestamps: bool = True) -> dict[str, Any]:
    """uvicorn's logging (``uvicorn.Config(log_config=...)``): its warnings
    and errors as serve's lines, through :class:`SafeFormatter` (``timestamps``
    False in a worker, whose lines, like its other output, have none)."""
    fmt = LINE_FORMAT if timestamps else "%(message)s"
    return {
        "version": 1,
        "disable_existing_loggers": False,  # serve's own logger is configured already
        "formatters": {
            "safe": {"()": SafeFormatter, "fmt": fmt, "datefmt": TIME_FORMAT}
        },
        "filters": {"cancelled_at_stop": {"()": CancelledAtStop}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "safe",
                "filters": ["cancelled_at_stop"],
                "stream": "ext://sys.stderr",
            }
        },
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
            "uvicorn.error": {"level": "INFO"},
            "uvicorn.access": {"handlers": [], "level": "INFO", "propagate": False},
        },
    }


def relayed_line(prefix: bytes, line: bytes) -> bytes:
    """One line of a worker's output as the front prints it: ``[instance N] ``
    and the line, control characters escaped (invalid UTF-8 as ``\\xNN``)."""
    text = line.decode("utf-8", "backslashreplace")
    return prefix + printable(text).encode("utf-8") + b"\n"


_ignored_options: set[tuple[str, str]] = set()


def ignored_option(where: str, key: str, accepted: tuple[str, ...]) -> None:
    """Log once per process that ``where`` (``context.store.getMessages``,
    ``context.sandbox.commands.run``) ignores the option ``key``: the platform's
    API is JavaScript, where a property nobody reads is not an error."""
    if (where, key) in _ignored_options:
        return
    _ignored_options.add((where, key))
    logging.getLogger("makers_store.serve").warning(
        "%s: %r is not an option it takes (%s); ignored, as JavaScript ignores a "
        "property nobody reads",
        where, key, ", ".join(accepted),
    )

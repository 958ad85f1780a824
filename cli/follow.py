"""``msg tail``: the last messages, then (``--follow``) new ones as they arrive.

Following polls ``get_messages(after=<last id>)``; a cursor stays valid even
when the message it names is deleted, so nothing is printed twice or
skipped. Ctrl-C and SIGTERM end the loop cleanly (exit code 0).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from makers_store import Message, SyncContextStore

from .errors import NotFound
from .render import emit_json_line, message_view, stdout

PAGE = 100


class _Stop(Exception):
    """Raised by the SIGTERM handler to leave whatever the loop is doing."""


@contextmanager
def _stop_on_sigterm() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        raise _Stop

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def tail(
    store: SyncContextStore,
    conversation_id: str,
    *,
    lines: int,
    follow: bool,
    interval: float,
    as_json: bool,
) -> None:
    console = stdout()

    def show(message: Message) -> None:
        if as_json:
            emit_json_line({"conversation_id": conversation_id, **message.to_dict()})
        else:
            console.print(message_view(message))
            sys.stdout.flush()

    newest = store.get_messages(conversation_id=conversation_id, limit=max(lines, 1), order="desc")
    if not newest and store.get_conversation(conversation_id=conversation_id) is None:
        # as msg list says (with --follow too: a typo would otherwise wait forever)
        raise NotFound(f"conversation {conversation_id!r} not found")
    for message in reversed(newest[:lines]):
        show(message)
    if not follow:
        return
    last = newest[0].message_id if newest else None
    wake = threading.Event()
    try:
        with _stop_on_sigterm():
            while True:
                batch = store.get_messages(
                    conversation_id=conversation_id, limit=PAGE, order="asc", after=last
                )
                for message in batch:
                    show(message)
                if batch:
                    last = batch[-1].message_id
                if len(batch) < PAGE:
                    wake.wait(interval)
    except (KeyboardInterrupt, _Stop):
        return

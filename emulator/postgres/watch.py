"""Change notification on a PostgreSQL store: ``LISTEN`` / ``NOTIFY``.

Every write unit sends, inside its transaction (so it is delivered at
commit, and never for a unit rolled back), one ``pg_notify`` on
:data:`CHANNEL` whose payload is the store's schema and the keys written, one
per line; when they do not fit a notification's payload (8,000 bytes) it is
the schema and ``*``: "something changed", and the watcher compares a
listing. :func:`watch_notifications` listens on a connection of its own: no
polling, a change arrives as soon as it commits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable

CHANNEL = "makers_store"
NOTIFY = "SELECT pg_notify(%s, %s)"
#: Payload bytes a notification may carry (PostgreSQL's limit is 8,000).
PAYLOAD_LIMIT = 7900
_UNKNOWN = "*"


def payload(schema: str, written: Iterable[str]) -> str:
    """The notification for a unit of ``schema`` that wrote ``written``."""
    text = "\n".join([schema, *dict.fromkeys(written)])
    if len(text.encode("utf-8", "surrogatepass")) > PAYLOAD_LIMIT:
        return f"{schema}\n{_UNKNOWN}"
    return text


def keys_of(schema: str, text: str) -> frozenset[str] | None:
    """The keys a notification names for ``schema`` (empty: another
    schema's; None: too many to name)."""
    head, _, rest = text.partition("\n")
    if head != schema:
        return frozenset()
    if rest == _UNKNOWN:
        return None
    return frozenset(rest.split("\n")) if rest else frozenset()


async def watch_notifications(conninfo: str, schema: str) -> AsyncIterator[frozenset[str] | None]:
    """Listen on :data:`CHANNEL` over a connection of its own; yield an empty
    set once listening, then the keys of each notification for ``schema``."""
    import psycopg

    conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
    try:
        await conn.execute(f"LISTEN {CHANNEL}")
        yield frozenset()
        async for note in conn.notifies():
            written = keys_of(schema, note.payload)
            if written is None or written:
                yield written
    finally:
        await conn.close()

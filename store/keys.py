"""The blob key layout, in one place.

::

    c/{cid}/meta                    conversation meta (the commit point)
    c/{cid}/m/{seq}                 one message, seq zero-padded to 10 digits
    c/{cid}/s/{key}                 one state value
    c/{cid}/x/{adapter}/...         framework adapter data
    i/all/{rank}/{cid}              recency index entry
    i/u/{uid}/{rank}/{cid}          per-user recency index entry

``{cid}``, ``{uid}`` and ``{key}`` are escaped: every character outside
``[A-Za-z0-9_-]`` becomes ``%XX`` per UTF-8 byte. The escaping is injective
and never yields ``/`` or ``.``, so no id can collide with another or reach
outside its own ``c/{cid}/`` prefix. ``{rank}`` is ``last_message_at`` in
milliseconds, zero-padded to 15 digits, so keys sort by recency then id.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import unquote

SEQ_WIDTH = 10
RANK_WIDTH = 15
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_SAFE_RE = re.compile(r"[A-Za-z0-9_-]+")
_MESSAGE_ID_RE = re.compile(rf"msg_(\d{{{SEQ_WIDTH}}})_([a-z0-9]{{1,32}})")
_CURSOR_RE = re.compile(rf"(\d{{{RANK_WIDTH}}})\.([A-Za-z0-9_%-]+)")

CONVERSATIONS = "c/"
INDEX_ALL = "i/all/"
INDEX_USERS = "i/u/"


@functools.lru_cache(maxsize=4096)
def escape(text: str) -> str:
    if _SAFE_RE.fullmatch(text):
        return text
    return "".join(
        ch if ch in _SAFE else "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        for ch in text
    )


def unescape(segment: str) -> str:
    return unquote(segment, errors="surrogatepass")


def prefix_end(prefix: str) -> str:
    """The smallest key greater than every key that starts with ``prefix``."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


# --- conversations ---------------------------------------------------------


def conversation_prefix(cid: str) -> str:
    return f"c/{escape(cid)}/"


def meta_key(cid: str) -> str:
    return f"c/{escape(cid)}/meta"


def conversation_from_key(key: str) -> str:
    """The conversation id owning any ``c/{cid}/...`` key."""
    return unescape(key.split("/", 2)[1])


def messages_prefix(cid: str) -> str:
    return f"c/{escape(cid)}/m/"


def message_key(cid: str, seq: int) -> str:
    return f"c/{escape(cid)}/m/{seq:0{SEQ_WIDTH}d}"


def seq_from_message_key(key: str) -> int:
    return int(key.rsplit("/", 1)[1])


def state_prefix(cid: str) -> str:
    return f"c/{escape(cid)}/s/"


def state_key(cid: str, name: str) -> str:
    return f"c/{escape(cid)}/s/{escape(name)}"


def state_name_from_key(key: str) -> str:
    return unescape(key.rsplit("/", 1)[1])


def adapter_prefix(cid: str, adapter: str) -> str:
    return f"c/{escape(cid)}/x/{escape(adapter)}/"


# --- message ids -----------------------------------------------------------


def message_id(seq: int, suffix: str) -> str:
    return f"msg_{seq:0{SEQ_WIDTH}d}_{suffix}"


def seq_of_message_id(mid: str) -> int | None:
    """The sequence number a message id carries, or None if it is not one of ours."""
    match = _MESSAGE_ID_RE.fullmatch(mid)
    return int(match.group(1)) if match else None


# --- recency indexes -------------------------------------------------------


def user_index_prefix(uid: str) -> str:
    return f"i/u/{escape(uid)}/"


def index_prefix(uid: str | None) -> str:
    return INDEX_ALL if uid is None else user_index_prefix(uid)


def rank(last_message_at: int) -> str:
    return f"{max(last_message_at, 0):0{RANK_WIDTH}d}"


def index_key(prefix: str, last_message_at: int, cid: str) -> str:
    return f"{prefix}{rank(last_message_at)}/{escape(cid)}"


def parse_index_key(prefix: str, key: str) -> tuple[int, str]:
    """(last_message_at, conversation id) of an index entry under ``prefix``."""
    rank_text, ecid = key[len(prefix) :].split("/", 1)
    return int(rank_text), unescape(ecid)


def cursor_of_index_key(prefix: str, key: str) -> str:
    return key[len(prefix) :].replace("/", ".", 1)


def index_key_of_cursor(prefix: str, cursor: str) -> str | None:
    """The index position a cursor names, or None if it is malformed."""
    if not _CURSOR_RE.fullmatch(cursor):
        return None
    return prefix + cursor.replace(".", "/", 1)


def parse_any_index_key(key: str) -> tuple[str, str | None, int, str] | None:
    """(prefix, user id or None, last_message_at, conversation id) of any
    index entry, recency or per-user; None when ``key`` is not one."""
    if key.startswith(INDEX_ALL):
        prefix, uid = INDEX_ALL, None
    elif key.startswith(INDEX_USERS) and key.count("/") == 4:
        segment = key[len(INDEX_USERS) :].split("/", 1)[0]
        prefix, uid = f"{INDEX_USERS}{segment}/", unescape(segment)
    else:
        return None
    rest = key[len(prefix) :].split("/")
    if len(rest) != 2 or len(rest[0]) != RANK_WIDTH or not rest[0].isdigit() or not rest[1]:
        return None
    at, cid = parse_index_key(prefix, key)
    return prefix, uid, at, cid


def adapters_prefix(cid: str) -> str:
    """Where every framework adapter keeps data for one conversation."""
    return f"c/{escape(cid)}/x/"

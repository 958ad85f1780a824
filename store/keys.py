"""The blob key layout, in one place.

::

    c/{cid}/meta                    conversation meta (the commit point)
    c/{cid}/m/{seq}                 one message, seq zero-padded to 10 digits
    c/{cid}/s/{key}                 one state value
    c/{cid}/x/{adapter}/...         framework adapter data
    c/{cid}/x/links/{other}         ``other`` is deleted with ``cid``
    c/{cid}/x/claude/...            Claude sessions (section "Claude sessions")
    c/{cid}/x/langgraph/...         LangGraph checkpoints and writes
    i/all/{rank}/{cid}              recency index entry
    i/u/{uid}/{rank}/{cid}          per-user recency index entry
    l/{ns1}/.../.{key}              LangGraph store item (belongs to no conversation)
    x/claude/p/{project}/{sid}      Claude session listing entry (derived)

``{cid}``, ``{uid}`` and ``{key}`` are escaped: every character outside
``[A-Za-z0-9_-]`` becomes ``%XX`` per UTF-8 byte. The escaping is injective
and never yields ``/`` or ``.``, so no id can collide with another or reach
outside its own ``c/{cid}/`` prefix. ``{rank}`` is ``RANK_MAX -
last_message_at`` (milliseconds), zero-padded to 15 digits, so keys sort
newest first, then by id: the default listing order is a forward listing,
the only kind object storage serves without reading the whole range.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import unquote

SEQ_WIDTH = 10
RANK_WIDTH = 15
RANK_MAX = 10**RANK_WIDTH - 1
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


def last_segment(key: str) -> str:
    """The id a key ends with (unescaped)."""
    return unescape(key.rsplit("/", 1)[1])


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
    return last_segment(key)


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
    return f"{RANK_MAX - min(max(last_message_at, 0), RANK_MAX):0{RANK_WIDTH}d}"


def index_key(prefix: str, last_message_at: int, cid: str) -> str:
    return f"{prefix}{rank(last_message_at)}/{escape(cid)}"


def parse_index_key(prefix: str, key: str) -> tuple[int, str]:
    """(last_message_at, conversation id) of an index entry under ``prefix``."""
    rank_text, ecid = key[len(prefix) :].split("/", 1)
    return RANK_MAX - int(rank_text), unescape(ecid)


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


# --- links -----------------------------------------------------------------
# An adapter that keeps a conversation's data under another id (a Claude
# session bound to a non-UUID conversation id) links that id to the
# conversation; deleting the conversation deletes everything the linked id owns.


def links_prefix(cid: str) -> str:
    return f"c/{escape(cid)}/x/links/"


def link_key(cid: str, other_cid: str) -> str:
    return links_prefix(cid) + escape(other_cid)


def linked_conversation(key: str) -> str:
    """The linked id a :func:`link_key` names."""
    return last_segment(key)


# --- LangGraph store -------------------------------------------------------
# Long-term memory of ``ContextStore.langgraph_store`` belongs to no
# conversation, so it lives under its own top-level prefix:
#
#     l/{ns1}/{ns2}/.../.{key}        one item of namespace (ns1, ns2, ...)
#
# Every segment is escaped, and escaping never yields ``.`` or ``/``: the
# leading ``.`` marks the item key, so the items of a namespace and of all
# namespaces below it are exactly the keys under ``l/{ns1}/.../``.

LANGGRAPH_ITEMS = "l/"


def langgraph_namespace_prefix(namespace: tuple[str, ...]) -> str:
    """Keys of every item in ``namespace`` and in the namespaces below it."""
    return LANGGRAPH_ITEMS + "".join(f"{escape(label)}/" for label in namespace)


def langgraph_item_key(namespace: tuple[str, ...], key: str) -> str:
    return f"{langgraph_namespace_prefix(namespace)}.{escape(key)}"


def parse_langgraph_item_key(blob_key: str) -> tuple[tuple[str, ...], str]:
    """(namespace, key) of an item key; raises ValueError on any other key."""
    path, _, last = blob_key.rpartition("/.")
    if not blob_key.startswith(LANGGRAPH_ITEMS) or "/" in last:
        raise ValueError(f"not a LangGraph store item key: {blob_key!r}")
    return _langgraph_namespace(path[len(LANGGRAPH_ITEMS) :]), unescape(last)


@functools.lru_cache(maxsize=4096)
def _langgraph_namespace(path: str) -> tuple[str, ...]:
    return tuple(unescape(label) for label in path.split("/")) if path else ()


# --- Claude sessions -------------------------------------------------------
# A Claude Agent SDK session lives under the conversation whose id is its
# session id (``R`` = ``c/{sid}/x/claude/p/{project}/``)::
#
#     c/{cid}/x/claude/binding              the session UUID bound to a non-UUID cid
#     R h/{stream}                          a transcript's head: generation, next seq,
#                                           mtime, summary (the commit point)
#     R b/{stream}/{gen}/{seq}              one appended batch of entries
#     R u/{stream}/{gen}/{uuid}             idempotency marker: seq of the batch holding uuid
#     x/claude/p/{project}/{sid}            listing entry of a main transcript (derived)
#     x/claude/t/{project}                  the project's mtime clock: the last mtime given
#
# ``{stream}`` is ``m`` for the main transcript and ``s`` + escaped subpath for
# a subagent's; ``{project}``, ``{sid}``, ``{uuid}`` are escaped, ``{gen}`` is
# hex, ``{seq}`` zero-padded, so no two keys of different meaning collide.

CLAUDE_PROJECTS = "x/claude/p/"
CLAUDE_MAIN_STREAM = "m"


def claude_binding_key(cid: str) -> str:
    return adapter_prefix(cid, "claude") + "binding"


def claude_session_prefix(sid: str, project: str) -> str:
    """Everything one session (main transcript and subagents) owns."""
    return f"{adapter_prefix(sid, 'claude')}p/{escape(project)}/"


def claude_stream(subpath: str | None) -> str:
    return CLAUDE_MAIN_STREAM if subpath is None else "s" + escape(subpath)


def claude_heads_prefix(sid: str, project: str) -> str:
    return claude_session_prefix(sid, project) + "h/"


def claude_head_key(sid: str, project: str, stream: str) -> str:
    return claude_heads_prefix(sid, project) + stream


def claude_subpath_of_head_key(key: str) -> str | None:
    """The subpath a head key names (None for the main transcript)."""
    stream = key.rsplit("/", 1)[1]
    return None if stream == CLAUDE_MAIN_STREAM else unescape(stream[1:])


def claude_stream_prefixes(sid: str, project: str, stream: str) -> tuple[str, str]:
    """The batch and marker prefixes of one transcript, every generation."""
    root = claude_session_prefix(sid, project)
    return f"{root}b/{stream}/", f"{root}u/{stream}/"


def claude_batches_prefix(sid: str, project: str, stream: str, gen: str) -> str:
    return f"{claude_session_prefix(sid, project)}b/{stream}/{gen}/"


def claude_batch_key(sid: str, project: str, stream: str, gen: str, seq: int) -> str:
    return f"{claude_batches_prefix(sid, project, stream, gen)}{seq:0{SEQ_WIDTH}d}"


def claude_marker_key(sid: str, project: str, stream: str, gen: str, uuid: str) -> str:
    return f"{claude_session_prefix(sid, project)}u/{stream}/{gen}/{escape(uuid)}"


def claude_project_prefix(project: str) -> str:
    return f"{CLAUDE_PROJECTS}{escape(project)}/"


def claude_project_entry(project: str, sid: str) -> str:
    return f"{claude_project_prefix(project)}{escape(sid)}"


def claude_session_of_project_entry(key: str) -> str:
    return last_segment(key)


def claude_clock_key(project: str) -> str:
    return f"x/claude/t/{escape(project)}"


# --- LangGraph checkpoints -------------------------------------------------
# Under ``P = adapter_prefix(thread_id, "langgraph")`` (the thread id is the
# conversation id), with ``{ns}`` = "n" + escape(checkpoint_ns) so the root
# namespace "" gets a segment too:
#
#   P{ns}/c/{inverted checkpoint id}          one checkpoint (newest sorts first)
#   P{ns}/w/{checkpoint id}/{task id}/{idx}   one pending write of that checkpoint
#   P r/{run id}/{ns}/{inverted checkpoint id} empty marker: the run that made it
#
# Checkpoint ids are printable ASCII (LangGraph's are UUIDv6 strings, which
# sort by time). Inverting maps each character c to chr(0x9E - ord(c)) and
# appends "~", which reverses the order of any two ids (a proper prefix gets
# the larger key thanks to the terminator), so "latest" is the first key of
# a forward listing, the one direction object storage lists efficiently.

LANGGRAPH_ADAPTER = "langgraph"
_CHECKPOINT_ID_RE = re.compile(r"[\x21-\x7d]{1,128}")
_INVERT = str.maketrans({chr(c): chr(0x9E - c) for c in range(0x21, 0x7E)})
#: sorts after every key under a prefix of escaped segments (skip-scans)
LAST_CHARACTER = chr(0x10FFFF)


def is_checkpoint_id(text: str) -> bool:
    """Whether ``text`` can name a checkpoint in keys (printable ASCII, 1..128)."""
    return _CHECKPOINT_ID_RE.fullmatch(text) is not None


def invert_checkpoint_id(checkpoint_id: str) -> str:
    return checkpoint_id.translate(_INVERT) + "~"


def restore_checkpoint_id(inverted: str) -> str:
    return inverted[:-1].translate(_INVERT)


def langgraph_prefix(thread_id: str) -> str:
    return adapter_prefix(thread_id, LANGGRAPH_ADAPTER)


def langgraph_ns_segment(checkpoint_ns: str) -> str:
    return "n" + escape(checkpoint_ns)


def langgraph_ns_of_segment(segment: str) -> str:
    return unescape(segment[1:])


def langgraph_checkpoints_prefix(thread_id: str, checkpoint_ns: str) -> str:
    return f"{langgraph_prefix(thread_id)}{langgraph_ns_segment(checkpoint_ns)}/c/"


def langgraph_checkpoint_key(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    return langgraph_checkpoints_prefix(thread_id, checkpoint_ns) + invert_checkpoint_id(
        checkpoint_id
    )


def langgraph_writes_prefix(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    ns = langgraph_ns_segment(checkpoint_ns)
    return f"{langgraph_prefix(thread_id)}{ns}/w/{escape(checkpoint_id)}/"


def langgraph_write_key(
    thread_id: str, checkpoint_ns: str, checkpoint_id: str, task_id: str, idx: int
) -> str:
    prefix = langgraph_writes_prefix(thread_id, checkpoint_ns, checkpoint_id)
    return f"{prefix}{escape(task_id)}/{idx}"


def langgraph_run_prefix(thread_id: str, run_id: str) -> str:
    return f"{langgraph_prefix(thread_id)}r/{escape(run_id)}/"


def langgraph_run_key(thread_id: str, run_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    ns = langgraph_ns_segment(checkpoint_ns)
    return f"{langgraph_run_prefix(thread_id, run_id)}{ns}/{invert_checkpoint_id(checkpoint_id)}"


def parse_langgraph_run_key(prefix: str, key: str) -> tuple[str, str]:
    """(checkpoint_ns, checkpoint_id) of a run marker listed under ``prefix``."""
    segment, inverted = key[len(prefix) :].split("/", 1)
    return langgraph_ns_of_segment(segment), restore_checkpoint_id(inverted)

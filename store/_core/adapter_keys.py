"""The key layout of the framework adapters' data (LangGraph store and
checkpoints, Claude sessions), built on the store's own layout in
:mod:`makers_store._core.keys`, whose docstring lists every prefix."""

from __future__ import annotations

import functools
import re

from .keys import SEQ_WIDTH, adapter_prefix, escape, id_segment, unescape

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
#: The store's derived index of them (``store/adapters/langgraph/store_index.py``):
#: ``ln/{ns}/.`` namespace directory, ``ln/{ns}/.t`` TTL flag,
#: ``lr/{ns}/~{rank}.{key}`` recency copies, and this marker, present while
#: the index covers every item. Whoever writes items blob by blob (``copy``,
#: ``import``) deletes the marker, and the next use rebuilds the index.
LANGGRAPH_INDEX_VERSION = "ln/.version"
_LANGGRAPH_PREFIXES = (LANGGRAPH_ITEMS, "ln/", "lr/")


def is_langgraph_store_key(key: str) -> bool:
    """Whether ``key`` is a LangGraph store item or part of its index."""
    return key.startswith(_LANGGRAPH_PREFIXES)


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


def claude_main_head_key_of_segment(segment: str, project: str) -> str:
    """:func:`claude_head_key` of a main transcript, from its session's segment."""
    return f"c/{segment}/x/claude/p/{escape(project)}/h/{CLAUDE_MAIN_STREAM}"


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
    return f"{claude_project_prefix(project)}{id_segment(sid)}"


def claude_segment_of_project_entry(key: str) -> str:
    """The segment of the session id (a conversation id) a listing entry names."""
    return key.rsplit("/", 1)[1]


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


def langgraph_writes_base(thread_id: str, checkpoint_ns: str) -> str:
    """Keys of the pending writes of every checkpoint of one namespace."""
    return f"{langgraph_prefix(thread_id)}{langgraph_ns_segment(checkpoint_ns)}/w/"


def langgraph_writes_prefix(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    return f"{langgraph_writes_base(thread_id, checkpoint_ns)}{escape(checkpoint_id)}/"


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

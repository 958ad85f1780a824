"""The blob key layout, in one place.

::

    c/{cid}/meta                    conversation meta (the commit point)
    c/{cid}/m/{seq}                 one message, seq zero-padded to 10 digits
    c/{cid}/s/{key}                 one state value
    c/{cid}/g/{gen}/m/{seq}         one message of generation {gen}
    c/{cid}/g/{gen}/s/{key}         one state value of generation {gen}
    c/{cid}/a/{mid}                 the seq of the message with client id {mid}
    c/{cid}/g/{gen}/a/{mid}         the same in generation {gen}
    c/{cid}/x/{adapter}/...         framework adapter data
    c/{cid}/x/links/{other}         ``other`` is deleted with ``cid``
    c/{cid}/x/names/{segment}       the escaped text of a cut id (see "Bounded ids")
    c/{cid}/x/claude/...            Claude sessions (section "Claude sessions")
    c/{cid}/x/langgraph/...         LangGraph checkpoints and writes
    i/all/{rank}/{cid}              recency index entry
    i/u/{uid}/{rank}/{cid}          per-user recency index entry
    l/{ns1}/.../.{key}              LangGraph store item (belongs to no conversation)
    ln/..., lr/...                  the LangGraph store's derived index (see below)
    x/claude/p/{project}/{sid}      Claude session listing entry (derived)
    v/layout                        the layout version (:mod:`makers_store._core.layout`)

``{cid}``, ``{uid}`` and ``{key}`` are escaped: every character outside
``[A-Za-z0-9_-]`` becomes ``%XX`` per UTF-8 byte. The escaping is injective
and never yields ``/``, ``.`` or ``~``, so no id can collide with another or
reach outside its own ``c/{cid}/`` prefix.

Bounded ids (:func:`id_segment`). An id may be 256 characters, and escaped
a 4-byte character takes 12, so a conversation id, user id or state key whose
escaped form is longer than :data:`SEGMENT_BUDGET` (200) is cut to its first
167 characters, then ``~`` and 32 hex digits of the SHA-256 of the whole
escaped form: every key stays under S3's 1,024 bytes and PostgreSQL's index
entry limit, and distinct ids keep distinct segments (``~`` never occurs in
an escaped one). Such a segment cannot be read back as the id, so where the
store needs the id from a key it has it elsewhere: meta holds the
conversation id, and a *name* blob ``c/{cid}/x/names/{segment}`` holds the
escaped text of a bounded conversation id (for conversations without meta)
or state key. Names are adapter-area blobs, so export, import and copy carry
them and deleting the conversation deletes them. Strings that frameworks
choose (LangGraph namespaces, checkpoint namespaces and task ids, Claude
project keys and subpaths) are escaped but not bounded. ``{rank}`` is ``RANK_MAX -
last_message_at`` (milliseconds), zero-padded to 15 digits, then ``~`` and
``TIE_MAX - tie``, 3 digits, where ``tie`` orders the writes of one
millisecond (:meth:`makers_store._core.runner.UnitRunner.stamp`), so keys sort newest
first, the later of two writes in one millisecond first, then by id: the
default listing order is a forward listing, the only kind object storage
serves without reading the whole range. Entries written before ties existed
have no ``~`` part (``tie`` None) and sort before those of their millisecond.

Generations: meta names the generation (``ConversationRecord.generation``)
that holds the conversation's messages and state; the first is ``""``, whose
keys are ``c/{cid}/m/`` and ``c/{cid}/s/``. Replacing a whole conversation
(``import``, ``copy``) writes a new generation where no reader looks, then
swaps the pointer in meta, so a reader sees the old conversation or the new
one, never a mix, even on object storage (:mod:`makers_store.maintenance.replacing`).
``{gen}`` is ``[a-z0-9]``, so no generation's prefix holds another's.

Message ids. An id the store generates is ``msg_{seq}_{suffix}``: it names
its seq, so it needs no lookup and ids sort in append order. An id the
caller gives (``append_message(..., message_id=...)``) is any other string;
an *alias* blob ``a/{mid}`` in the message's generation holds its seq
(``{mid}`` escaped and bounded like a conversation id). The message blob is
the truth and the alias only points at it: an alias whose seq holds no
visible message with that id is stale and is overwritten by the next append
of the id (:mod:`makers_store._core.appends`). Client ids cannot take the
generated form (:func:`makers_store._core.validate.client_message_id`), so the
form of an id says which way it is found.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import unquote

SEQ_WIDTH = 10
RANK_WIDTH = 15
RANK_MAX = 10**RANK_WIDTH - 1
TIE_WIDTH = 3
TIE_MAX = 10**TIE_WIDTH - 1
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_SAFE_RE = re.compile(r"[A-Za-z0-9_-]+")
_MESSAGE_ID_RE = re.compile(rf"msg_(\d{{{SEQ_WIDTH}}})_([a-z0-9]{{1,32}})")
_GENERATION_RE = re.compile(r"[a-z0-9]{1,32}")
_RANK_RE = re.compile(rf"(\d{{{RANK_WIDTH}}})(?:~(\d{{{TIE_WIDTH}}}))?")
_CURSOR_RE = re.compile(rf"\d{{{RANK_WIDTH}}}(?:~\d{{{TIE_WIDTH}}})?\.[A-Za-z0-9_%~-]+")

CONVERSATIONS = "c/"
#: The layout version of the store's keys (:mod:`makers_store._core.layout`).
LAYOUT_KEY = "v/layout"
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


#: The longest key segment an id becomes (see the module docstring).
SEGMENT_BUDGET = 200
_DIGEST_CHARS = 32
_KEPT = SEGMENT_BUDGET - 1 - _DIGEST_CHARS


def bound(segment: str) -> str:
    """``segment`` itself when it fits the budget, else its first characters,
    ``~`` and a digest of the whole (collision-resistant: 128 bits)."""
    if len(segment) <= SEGMENT_BUDGET:
        return segment
    import hashlib  # here: only an id over the budget needs it, and every command imports keys

    digest = hashlib.sha256(segment.encode("ascii")).hexdigest()[:_DIGEST_CHARS]
    return f"{segment[:_KEPT]}~{digest}"


@functools.lru_cache(maxsize=4096)
def id_segment(text: str) -> str:
    """The key segment of a conversation id, user id or state key."""
    return bound(escape(text))


def is_bounded(segment: str) -> bool:
    """Whether an id's segment was cut (and cannot be read back as the id)."""
    return len(segment) == SEGMENT_BUDGET and segment[_KEPT] == "~"


def id_of_segment(segment: str) -> str | None:
    """The id a segment names, or None when it was cut (see :func:`name_key`)."""
    return None if is_bounded(segment) else unescape(segment)


def unescape(segment: str) -> str:
    return unquote(segment, errors="surrogatepass")


# --- conversations ---------------------------------------------------------


def conversation_prefix(cid: str) -> str:
    return f"c/{id_segment(cid)}/"


@functools.lru_cache(maxsize=4096)
def meta_key(cid: str) -> str:
    """``c/{segment}/meta`` (cached: every unit of work on a conversation reads it)."""
    return f"c/{id_segment(cid)}/meta"


def meta_key_of_segment(segment: str) -> str:
    return f"c/{segment}/meta"


def conversation_segment(key: str) -> str:
    """The segment of the conversation owning any ``c/{cid}/...`` key."""
    return key.split("/", 2)[1]


def id_positions(parts: list[str]) -> tuple[int, ...]:
    """Which segments of a key (split at ``/``) are ids' segments
    (:func:`id_segment`); for ``c/`` keys the conversation's comes first."""
    if parts[0] == "c" and len(parts) >= 3:
        if parts[2] == "s" and len(parts) == 4:
            return (1, 3)
        if parts[2] == "g" and len(parts) == 6 and parts[4] == "s":
            return (1, 5)
        if parts[2:4] == ["x", "links"] and len(parts) == 5:
            return (1, 4)
        return (1,)
    if parts[:2] == ["i", "all"] and len(parts) == 4:
        return (3,)
    if parts[:2] == ["i", "u"] and len(parts) == 5:
        return (2, 4)
    if parts[:3] == ["x", "claude", "p"] and len(parts) == 5:
        return (4,)
    return ()


def current_form(key: str) -> str:
    """``key`` with its id segments bounded: a key written before ids were
    bounded (:mod:`makers_store._core.layout` moves it), the same key otherwise."""
    parts = key.split("/")
    for index in id_positions(parts):
        parts[index] = bound(parts[index])
    return "/".join(parts)


# --- names of bounded ids ----------------------------------------------------


def names_prefix(conversation_segment: str) -> str:
    return f"c/{conversation_segment}/x/names/"


def name_key(conversation_segment: str, segment: str) -> str:
    """Where the escaped text of a bounded ``segment`` used in a conversation
    is kept (the conversation's own id: ``segment == conversation_segment``)."""
    return names_prefix(conversation_segment) + segment


def generation_prefix(cid: str, gen: str = "") -> str:
    """Where generation ``gen``'s messages and state live (``m/`` and ``s/`` below it)."""
    return f"c/{id_segment(cid)}/" if not gen else f"c/{id_segment(cid)}/g/{gen}/"


def generations_prefix(cid: str) -> str:
    """Every generation but the first (``""``) has its keys under here."""
    return f"c/{id_segment(cid)}/g/"


def is_generation(text: str) -> bool:
    return _GENERATION_RE.fullmatch(text) is not None


def messages_prefix(cid: str, gen: str = "") -> str:
    return f"{generation_prefix(cid, gen)}m/"


def message_key(cid: str, seq: int, gen: str = "") -> str:
    return f"{generation_prefix(cid, gen)}m/{seq:0{SEQ_WIDTH}d}"


def seq_from_message_key(key: str) -> int:
    return int(key.rsplit("/", 1)[1])


def aliases_prefix(cid: str, gen: str = "") -> str:
    return f"{generation_prefix(cid, gen)}a/"


def alias_key(cid: str, message_id: str, gen: str = "") -> str:
    """Where the seq of the message with client id ``message_id`` is kept."""
    return f"{generation_prefix(cid, gen)}a/{id_segment(message_id)}"


def encode_alias(seq: int) -> bytes:
    return str(seq).encode("ascii")


def decode_alias(data: bytes) -> int | None:
    """The seq an alias blob holds (None: not one, as if there were no alias)."""
    text = data.decode("ascii", "replace")
    return int(text) if text.isdigit() and len(text) <= SEQ_WIDTH else None


def state_prefix(cid: str, gen: str = "") -> str:
    return f"{generation_prefix(cid, gen)}s/"


def state_key(cid: str, name: str, gen: str = "") -> str:
    return f"{generation_prefix(cid, gen)}s/{id_segment(name)}"


def state_segment_of_key(key: str) -> str:
    """The (possibly bounded) segment of a state key's name."""
    return key.rsplit("/", 1)[1]


def adapter_prefix(cid: str, adapter: str) -> str:
    return f"c/{id_segment(cid)}/x/{escape(adapter)}/"


# --- message ids -----------------------------------------------------------


def message_id(seq: int, suffix: str) -> str:
    return f"msg_{seq:0{SEQ_WIDTH}d}_{suffix}"


def seq_of_message_id(mid: str) -> int | None:
    """The sequence number a generated message id carries, or None for a
    client id (found through its alias instead)."""
    match = _MESSAGE_ID_RE.fullmatch(mid)
    return int(match.group(1)) if match else None


# --- recency indexes -------------------------------------------------------


def user_index_prefix(uid: str) -> str:
    return f"i/u/{id_segment(uid)}/"


def index_prefix(uid: str | None) -> str:
    return INDEX_ALL if uid is None else user_index_prefix(uid)


#: Where an index entry sits: (last_message_at, tie or None).
Position = tuple[int, int | None]


def rank(last_message_at: int) -> str:
    return f"{RANK_MAX - clamp_time(last_message_at):0{RANK_WIDTH}d}"


def clamp_time(at: int) -> int:
    """The time a rank can express (0..RANK_MAX)."""
    return 0 if at < 0 else RANK_MAX if at > RANK_MAX else at


def index_rank(position: Position) -> str:
    at, tie = position
    # rank(at), inlined: every append computes two of these
    at = 0 if at < 0 else RANK_MAX if at > RANK_MAX else at
    if tie is None:
        return f"{RANK_MAX - at:0{RANK_WIDTH}d}"
    return f"{RANK_MAX - at:0{RANK_WIDTH}d}~{TIE_MAX - tie:0{TIE_WIDTH}d}"


def index_key(prefix: str, position: Position, cid: str) -> str:
    return f"{prefix}{index_rank(position)}/{id_segment(cid)}"


def _parse_rank(text: str) -> Position | None:
    match = _RANK_RE.fullmatch(text)
    if match is None:
        return None
    tie = match.group(2)
    return RANK_MAX - int(match.group(1)), None if tie is None else TIE_MAX - int(tie)


def parse_index_key(prefix: str, key: str) -> tuple[Position, str]:
    """(position, conversation segment) of an index entry under ``prefix``."""
    rank_text, segment = key[len(prefix) :].split("/", 1)
    position = _parse_rank(rank_text)
    if position is None:
        raise ValueError(f"not an index entry: {key!r}")
    return position, segment


def cursor_of_index_key(prefix: str, key: str) -> str:
    return key[len(prefix) :].replace("/", ".", 1)


def index_key_of_cursor(prefix: str, cursor: str) -> str | None:
    """The index position a cursor names, or None if it is malformed."""
    if not _CURSOR_RE.fullmatch(cursor):
        return None
    return prefix + cursor.replace(".", "/", 1)


def parse_any_index_key(key: str) -> tuple[str, str | None, Position, str] | None:
    """(prefix, user segment or None, position, conversation segment) of any
    index entry, recency or per-user; None when ``key`` is not one."""
    if key.startswith(INDEX_ALL):
        prefix, uid = INDEX_ALL, None
    elif key.startswith(INDEX_USERS) and key.count("/") == 4:
        segment = key[len(INDEX_USERS) :].split("/", 1)[0]
        prefix, uid = f"{INDEX_USERS}{segment}/", segment
    else:
        return None
    rest = key[len(prefix) :].split("/")
    if len(rest) != 2 or _parse_rank(rest[0]) is None or not rest[1]:
        return None
    position, cid = parse_index_key(prefix, key)
    return prefix, uid, position, cid


def adapters_prefix(cid: str) -> str:
    """Where every framework adapter keeps data for one conversation."""
    return f"c/{id_segment(cid)}/x/"


# --- links -----------------------------------------------------------------
# An adapter that keeps a conversation's data under another id (a Claude
# session bound to a non-UUID conversation id) links that id to the
# conversation; deleting the conversation deletes everything the linked id owns.


def links_prefix(cid: str) -> str:
    return f"c/{id_segment(cid)}/x/links/"


def link_key(cid: str, other_cid: str) -> str:
    return links_prefix(cid) + id_segment(other_cid)


def linked_segment(key: str) -> str:
    """The segment of the linked id a :func:`link_key` names."""
    return key.rsplit("/", 1)[1]

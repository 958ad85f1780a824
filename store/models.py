"""The objects the public API returns: Message, ConversationMeta, ListConversationsResult.

Attribute names are the platform's Python (snake_case) names; ``to_dict()``
gives the same names as a plain dict, the stable shape used for JSON output.
Every ``to_dict()`` of the store's result objects (these, and the counts and
reports of ``store.admin``) is made by :func:`fields_dict`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Role = Literal["user", "assistant", "system", "tool"]
Order = Literal["asc", "desc"]
ROLES: frozenset[str] = frozenset({"user", "assistant", "system", "tool"})


@dataclass(slots=True)
class Message:
    """One stored message. ``updated_at`` is set only after ``update_message``."""

    message_id: str
    role: str
    content: Any
    created_at: int
    metadata: dict[str, Any] | None = None
    updated_at: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self, omit_none=("updated_at",))


@dataclass(slots=True)
class ConversationMeta:
    """What the store knows about one conversation."""

    conversation_id: str
    created_at: int
    last_message_at: int
    message_count: int
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self)


#: Metadata keys a conversation's title is read from, first found first.
TITLE_KEYS = ("title", "name", "subject")


def title(meta: ConversationMeta) -> str:
    """The conversation's title (see :data:`TITLE_KEYS`), or ``""``: what
    ``find_conversations`` matches (:mod:`makers_store.maintenance.search`)
    and the CLI shows. Beside the meta, so showing one imports no search."""
    for key in TITLE_KEYS:
        value = meta.metadata.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


@dataclass(slots=True)
class ListConversationsResult:
    """One page of conversations; pass ``next_cursor`` as ``after`` and
    ``previous_cursor`` as ``before`` to move between pages."""

    items: list[ConversationMeta]
    next_cursor: str | None = None
    previous_cursor: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self, nested=("items",))


def fields_dict(
    obj: DataclassInstance,
    *,
    omit_none: tuple[str, ...] = (),
    leave_out: tuple[str, ...] = (),
    nested: tuple[str, ...] = (),
    keys: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``obj``'s fields as a plain dict, in the order they are declared, each
    under its name or ``keys[name]``: the one mechanism behind ``to_dict()``.
    A field in ``leave_out`` never appears, one in ``omit_none`` only when it
    is not None; a field in ``nested`` holds an object (or a list of them)
    that becomes its ``to_dict()``. Other values are not copied (unlike
    ``dataclasses.asdict``, which would deep-copy every message's content)."""
    renamed = () if keys is None else tuple(keys.items())
    return _dict_function(type(obj), omit_none, leave_out, nested, renamed)(obj)


@functools.cache
def _dict_function(
    cls: type[DataclassInstance],
    omit_none: tuple[str, ...],
    leave_out: tuple[str, ...],
    nested: tuple[str, ...],
    renamed: tuple[tuple[str, str], ...],
) -> Callable[[Any], dict[str, Any]]:
    """The function :func:`fields_dict` runs for ``cls`` with these rules,
    written out as Python once per class and rules, as dataclasses writes
    ``__init__``: a ``to_dict()`` runs for every message exported or sent to
    a Node agent, and attribute reads into a dict run several times faster
    than any loop over the fields."""
    names = dict(renamed)
    lines = ["def to_dict(obj):", "    out = {}"]
    for field_ in dataclasses.fields(cls):
        name = field_.name
        if name in leave_out:
            continue
        value = f"_nested(obj.{name})" if name in nested else f"obj.{name}"
        assign = f"out[{names.get(name, name)!r}] = {value}"
        if name in omit_none:
            lines += [f"    if obj.{name} is not None:", f"        {assign}"]
        else:
            lines.append(f"    {assign}")
    lines.append("    return out")
    namespace: dict[str, Any] = {"_nested": _nested}
    exec("\n".join(lines), namespace)
    function: Callable[[Any], dict[str, Any]] = namespace["to_dict"]
    return function


def _nested(value: Any) -> Any:
    if isinstance(value, list):
        return [item.to_dict() for item in value]
    return None if value is None else value.to_dict()

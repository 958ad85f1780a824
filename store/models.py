"""The objects the public API returns: Message, ConversationMeta, ListConversationsResult.

Attribute names are the platform's Python (snake_case) names; ``to_dict()``
gives the same names as a plain dict, the stable shape used for JSON output.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

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
        out: dict[str, Any] = {
            "message_id": self.message_id,
            "role": self.role,
            "content": self.content,
            "created_at": self.created_at,
            "metadata": self.metadata,
        }
        if self.updated_at is not None:
            out["updated_at"] = self.updated_at
        return out


@dataclass(slots=True)
class ConversationMeta:
    """What the store knows about one conversation."""

    conversation_id: str
    created_at: int
    last_message_at: int
    message_count: int
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "conversation_id": self.conversation_id,
            "created_at": self.created_at,
            "last_message_at": self.last_message_at,
            "message_count": self.message_count,
            "metadata": self.metadata,
        }


@dataclass(slots=True)
class ListConversationsResult:
    """One page of conversations; pass ``next_cursor`` as ``after`` and
    ``previous_cursor`` as ``before`` to move between pages."""

    items: list[ConversationMeta]
    next_cursor: str | None = None
    previous_cursor: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": [item.to_dict() for item in self.items],
            "next_cursor": self.next_cursor,
            "previous_cursor": self.previous_cursor,
        }

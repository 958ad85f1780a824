"""How :class:`~makers_store.ContextStore` methods read their arguments.

The platform's Python code calls the store both positionally, in the
documented order (``append_message(cid, "user", text)``), and by keyword, so
every parameter is positional-or-keyword. A store bound to a conversation
(``ctx.store``) lets ``conversation_id`` be omitted; because it comes first,
the parameters after it need defaults, and :data:`UNSET` marks the ones that
are nevertheless required (:func:`required` rejects them with a
``MemoryValidationError`` naming the argument, as the rest of the API does).
"""

from __future__ import annotations

from typing import Any, TypeVar

from ..errors import MemoryValidationError
from . import keys, validate

T = TypeVar("T")
#: "not passed": the default of required parameters, and of fields
#: ``update_message`` leaves as they are
UNSET: Any = object()


def required(value: T, argument: str) -> T:
    if value is UNSET:
        raise MemoryValidationError(f"{argument} is required")
    return value


def conversation(bound: str | None, given: Any) -> str:
    """``given``, or the conversation the store is bound to when it is omitted."""
    if given is not None:
        return validate.conversation_id(given)
    if bound is None:
        raise MemoryValidationError(
            "conversation_id is required: this store is not bound to a conversation "
            "(pass conversation_id, or use store.bind(conversation_id))"
        )
    return bound


def _is_message_id(value: Any) -> bool:
    return isinstance(value, str) and keys.seq_of_message_id(value) is not None


def message_target(
    bound: str | None, conversation_id: Any, message_id: Any, *, usage: str
) -> tuple[str, str]:
    """The (conversation id, message id) ``update_message``/``delete_message`` name.

    Accepted: ``(message_id)``, the platform runtime's form, in the bound
    conversation; ``(conversation_id, message_id)``, the store spec's form; and
    the same by keyword (``message_id=`` alone on a bound store). With a single
    positional argument it arrives as ``conversation_id`` and must be a message
    id: any string on a bound store (ids may be the caller's own, see
    ``append_message(message_id=)``); on an unbound one a generated id
    (``msg_...``) is read as the message id, anything else as a conversation
    id missing its message id. ``usage`` is the one-argument form, shown when
    the call is misread.
    """
    if message_id is None:
        if conversation_id is None:
            raise MemoryValidationError(f"message_id is required: {usage}")
        if bound is None and not _is_message_id(conversation_id):
            raise MemoryValidationError(
                f"message_id is required: {conversation_id!r} is read as the conversation id "
                f"of an unbound store; pass (conversation_id, message_id), or call {usage} "
                "on a bound store"
            )
        if conversation_id == bound:
            raise MemoryValidationError(
                f"one argument is read as the message id, and {conversation_id!r} is the "
                f"conversation this store is bound to: call {usage}, or pass "
                "(conversation_id, message_id)"
            )
        return conversation(bound, None), validate.message_id(conversation_id)
    if _is_message_id(conversation_id) and not _is_message_id(message_id):
        # update_message(mid, "text"): the content landed in message_id
        raise MemoryValidationError(
            f"conversation_id {conversation_id!r} is a message id and message_id "
            f"{message_id!r} is not: call {usage}"
        )
    return conversation(bound, conversation_id), validate.message_id(message_id)

"""Reading one message by its id (:meth:`~makers_store.ContextStore.get_message`).

A message id names its seq (``msg_{seq}_{suffix}``), so the message is one
read away once meta says the seq is visible; the suffix is then compared, so
an id whose seq exists but whose suffix does not match reads as absent.
"""

from __future__ import annotations

from . import keys
from .blob_ops import Program, get
from .codec import decode_message
from .models import Message
from .programs import visible_meta


def message_by_id(cid: str, message_id: str) -> Program[Message | None]:
    """The visible message ``message_id`` of conversation ``cid``, or None."""
    record = yield from visible_meta(cid)
    seq = keys.seq_of_message_id(message_id)
    if record is None or seq is None or not record.visible(seq):
        return None
    blob = yield from get(keys.message_key(cid, seq, record.generation))
    if blob is None:
        return None
    message = decode_message(blob.data)
    return message if message.message_id == message_id else None

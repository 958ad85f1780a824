"""The in-process backend's search index: each message blob's folded text
(:mod:`makers_store.blob`), computed when a search first meets the
blob and kept by its etag, so a blob rewritten or deleted is never answered
from an old text. A search runs under the map's lock, like a unit of work,
so it sees every unit committed before it and none half-done."""

from __future__ import annotations

from makers_store.blob import SearchIndexCheck, indexed_text, is_message_key
from makers_store.blob_ops import Blob


class TextCache:
    """Folded texts of message blobs by key, each with the etag it was read at."""

    def __init__(self) -> None:
        self.texts: dict[str, tuple[str, str | None]] = {}

    def text(self, blob: Blob) -> str | None:
        kept = self.texts.get(blob.key)
        if kept is not None and kept[0] == blob.etag:
            return kept[1]
        text = indexed_text(blob.data)
        self.texts[blob.key] = (blob.etag, text)
        return text

    def message_keys(self, blobs: dict[str, Blob], folded: str, limit: int) -> list[str]:
        """Keys of message blobs whose text holds ``folded``, at most ``limit``."""
        found: list[str] = []
        for key, blob in blobs.items():
            if not is_message_key(key):
                continue
            text = self.text(blob)
            if text is not None and folded in text:
                found.append(key)
                if len(found) >= limit:
                    break
        for gone in [key for key in self.texts if key not in blobs]:
            del self.texts[gone]
        return found

    def check(self, blobs: dict[str, Blob]) -> SearchIndexCheck:
        """Texts are computed from the blob they belong to: nothing can drift."""
        messages = sum(1 for key in blobs if is_message_key(key))
        return SearchIndexCheck("memory (in-process texts by etag)", messages)

    def rebuild(self, blobs: dict[str, Blob]) -> int:
        self.texts.clear()
        return sum(1 for key in blobs if is_message_key(key))

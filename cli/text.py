"""User data made safe to show on a terminal, and counts in words.

The safe-text functions live in :mod:`makers_store.text`, shared with
``serve`` and the Studio (the emulator may not import the CLI); they are
re-exported here so every command keeps importing them from ``.text``.
Only the standard library: error lines use this too, before rich is imported.
"""

from __future__ import annotations

from makers_store.text import printable, printable_json, printable_line

__all__ = ["counted", "printable", "printable_json", "printable_line"]


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 conversation``, ``6,000 conversations``: every count a person reads
    (``plural`` for nouns that do not just take an ``s``: ``state entries``)."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {plural or noun + 's'}"

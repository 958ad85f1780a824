"""Import JSON lines written by :func:`makers_store.maintenance.exporting.export_jsonl`.

The file is read twice: first every line is validated (nothing is written if
one is bad; the error names the line; see
:mod:`makers_store.maintenance.import_records`), then the records are
written. Each conversation in the file *replaces* the one with that id, in
one unit of work (:mod:`makers_store.maintenance.replacing`): afterwards its
messages (with their ids and timestamps), metadata, users, state, adapter
data, ``next_seq`` and last-write stamp are exactly the file's (a file from
before they were exported: derived, see
:func:`makers_store.maintenance.replacing.replace_conversation`); until then
it reads as it was, whether the import fails, is interrupted or is read
meanwhile. Conversations not in the file are untouched, so importing the
same file twice leaves the same store.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator

from .._core import adapter_keys
from .._core.runner import UnitRunner
from ..blob_ops import Program, delete, put
from ..clock import IdSource
from .exporting import CHUNK_BYTES, TransferCounts
from .import_records import (
    MAX_BLOB_KEY_BYTES,
    MAX_IMPORTED_SEQ,
    KeyedRecord,
    Plan,
    Record,
    Span,
    numbered_records,
    plan_jsonl,
    validate_jsonl,
)
from .replacing import replace_conversation

__all__ = [
    "MAX_BLOB_KEY_BYTES",
    "MAX_IMPORTED_SEQ",
    "import_jsonl",
    "import_program",
    "plan_jsonl",
    "validate_jsonl",
]

# --- import: writing -------------------------------------------------------------


def _put_all(items: list[tuple[str, bytes]]) -> Program[None]:
    for key, data in items:
        yield from put(key, data)


class _Writer:
    """Blobs outside conversations, written in units of up to CHUNK_BYTES."""

    def __init__(self, runner: UnitRunner) -> None:
        self.runner = runner
        self.pending: list[tuple[str, bytes]] = []
        self.pending_bytes = 0

    async def put(self, key: str, data: bytes) -> None:
        self.pending.append((key, data))
        self.pending_bytes += len(data)
        if self.pending_bytes >= CHUNK_BYTES:
            await self.flush()

    async def flush(self) -> None:
        if self.pending:
            items, self.pending, self.pending_bytes = self.pending, [], 0
            await self.runner.run(lambda: _put_all(items), write=True)


class _Lines:
    """The checked file's records, read once in order. A conversation's unit
    takes its records from this one reading; a retry of the unit reads them
    from the file again. ``progress(line, lines)`` runs after each record."""

    def __init__(
        self,
        source: Callable[[], Iterable[str | bytes]],
        lines: int,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        self._source = source
        self._lines = lines
        self._progress = progress
        self._reading: Iterator[tuple[int, Record]] = iter(numbered_records(source()))
        self.head: tuple[int, Record] | None = next(self._reading, None)

    def advance(self) -> None:
        if self.head is not None:
            self._report(self.head[0])
        self.head = next(self._reading, None)

    def take(self, last_line: int) -> Iterator[Record]:
        """The records up to ``last_line``, from this reading."""
        while self.head is not None and self.head[0] <= last_line:
            record = self.head[1]
            self.advance()
            yield record

    def skip(self, last_line: int) -> None:
        while self.head is not None and self.head[0] <= last_line:
            self.head = next(self._reading, None)

    def again(self, span: Span) -> Iterator[Record]:
        """The records of ``span``, read from the file again."""
        for number, record in numbered_records(self._source()):
            if number > span.last_line:
                return
            if number >= span.first_line:
                self._report(number)
                yield record

    def _report(self, number: int) -> None:
        if self._progress is not None and number <= self._lines:
            self._progress(number, self._lines)


async def _replace(runner: UnitRunner, lines: _Lines, span: Span) -> None:
    """Replace one conversation in one unit, again (under the runner's retry
    policy, the store's one) when a writer of the same conversation got in
    between; the new generation is named by the runner's ids."""
    attempts = itertools.count()

    def make() -> Program[None]:
        records = lines.take(span.last_line) if next(attempts) == 0 else lines.again(span)
        return replace_conversation(
            span.cid, records, has_conversation=span.has_conversation, new_generation=runner.ids
        )

    await runner.run(make, write=True)


def _count(counts: TransferCounts, span: Span) -> None:
    counts.conversations += int(span.has_conversation)
    counts.messages += span.messages
    counts.state_entries += span.state_entries
    counts.adapter_blobs += span.adapter_blobs


def _steps(lines: _Lines, plan: Plan, counts: TransferCounts) -> Iterator[Span | KeyedRecord]:
    """The one walk of a checked file, counted: a conversation's span (the
    caller replaces it, taking its records from ``lines``) or a blob outside
    conversations, in file order."""
    spans = iter(plan.spans)
    span = next(spans, None)
    while lines.head is not None:
        number, record = lines.head
        if span is not None and number == span.first_line:
            yield span
            lines.skip(span.last_line)
            _count(counts, span)
            span = next(spans, None)
            continue
        lines.advance()
        if isinstance(record, KeyedRecord):
            counts.blobs += 1
            yield record


def _reindex_langgraph() -> Program[None]:
    """Items written blob by blob: the LangGraph store reindexes on next use."""
    yield from delete(adapter_keys.LANGGRAPH_INDEX_VERSION, quiet=True)


async def import_jsonl(
    runner: UnitRunner,
    source: Callable[[], Iterable[str | bytes]],
    *,
    progress: Callable[[int, int], None] | None = None,
    on_conversation: Callable[[int, int], None] | None = None,
) -> TransferCounts:
    """Read back what :meth:`export_jsonl` wrote: every line of
    ``source()`` is validated before anything is written, then each
    conversation of the file replaces the one with its id in one unit of
    work (idempotent; an interrupted import is finished by running it
    again). ``progress(line, lines)`` reports records read;
    ``on_conversation(done, conversations)`` runs after each conversation."""
    # ``source`` is called once per pass, and again for a conversation whose
    # unit is retried; a stop after on_conversation leaves every conversation of
    # the file either replaced or untouched. The runner's ids name the new
    # generations (maintenance/replacing.py); its retry policy runs a
    # conversation's unit again when it lost a race.
    plan: Plan = plan_jsonl(source())
    counts = TransferCounts()
    lines = _Lines(source, plan.lines, progress)
    writer = _Writer(runner)
    done = 0
    langgraph = False
    for step in _steps(lines, plan, counts):
        if isinstance(step, Span):
            await writer.flush()
            await _replace(runner, lines, step)
            done += 1
            if on_conversation is not None:
                on_conversation(done, len(plan.spans))
        else:
            langgraph |= adapter_keys.is_langgraph_store_key(step.key)
            await writer.put(step.key, step.data)
    await writer.flush()
    if langgraph:
        await runner.run(_reindex_langgraph, write=True)
    return counts


def import_program(
    source: Callable[[], Iterable[str | bytes]], plan: Plan, new_generation: IdSource
) -> Program[TransferCounts]:
    """The import of the checked file ``source()`` (``plan``: its
    :func:`plan_jsonl`) as one program, for a caller that runs it, or several,
    in one unit of work on a transactional backend (a seed: whole or not at
    all). Each conversation is replaced as :func:`import_jsonl` replaces it."""
    counts = TransferCounts()
    lines = _Lines(source, plan.lines, None)
    langgraph = False
    for step in _steps(lines, plan, counts):
        if isinstance(step, Span):
            yield from replace_conversation(
                step.cid,
                lines.take(step.last_line),
                has_conversation=step.has_conversation,
                new_generation=new_generation,
            )
        else:
            langgraph |= adapter_keys.is_langgraph_store_key(step.key)
            yield from put(step.key, step.data)
    if langgraph:
        yield from _reindex_langgraph()
    return counts

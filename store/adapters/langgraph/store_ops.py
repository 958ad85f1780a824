"""LangGraph store operations checked before a batch runs (pure functions).

:class:`~.langgraph_store.MakersLangGraphStore` runs a batch of LangGraph's
``GetOp`` / ``PutOp`` / ``SearchOp`` / ``ListNamespacesOp`` as one unit of
work. Every operation of the batch is checked here first, so a bad argument
raises :class:`MemoryValidationError` (or LangGraph's own
``InvalidNamespaceError``) naming it before anything is read, embedded or
written; and the puts are reduced to the last one per (namespace, key), as
every LangGraph store applies them. Apart from the store class because these
rules are LangGraph's API contract, not how the store runs a batch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchOp,
    validate_op_namespace,
)

from ..._core import validate
from ...errors import MemoryValidationError


def check_op(op: Op) -> PutOp | None:
    """Validate one operation before anything runs; returns it if a put."""
    if not isinstance(op, GetOp | PutOp | SearchOp | ListNamespacesOp):
        raise MemoryValidationError(f"unknown LangGraph store operation: {type(op).__name__}")
    validate_op_namespace(op)
    if isinstance(op, GetOp | PutOp) and not isinstance(op.key, str):
        raise MemoryValidationError(f"key must be a string, got {type(op.key).__name__}")
    _check_unicode(op)
    if isinstance(op, SearchOp):
        if op.query is not None and not isinstance(op.query, str):
            raise MemoryValidationError("query must be a string or None")
        if op.filter is not None and not isinstance(op.filter, Mapping):
            raise MemoryValidationError("filter must be a mapping or None")
        _check_count(op.limit, "limit")
        _check_count(op.offset, "offset")
    elif isinstance(op, ListNamespacesOp):
        _check_count(op.limit, "limit")
        _check_count(op.offset, "offset")
        if op.max_depth is not None:
            _check_count(op.max_depth, "max_depth", minimum=1)
        for condition in op.match_conditions or ():
            if condition.match_type not in ("prefix", "suffix"):
                raise MemoryValidationError(f"unsupported match type {condition.match_type!r}")
    elif isinstance(op, PutOp):
        if not op.namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        if op.value is not None and not isinstance(op.value, Mapping):
            raise MemoryValidationError("value must be a mapping (a JSON object) or None")
        if op.ttl is not None and (
            isinstance(op.ttl, bool)
            or not isinstance(op.ttl, int | float)
            or not math.isfinite(op.ttl)
            or op.ttl <= 0
        ):
            raise MemoryValidationError("ttl must be a positive number of minutes or None")
        if op.index not in (None, False) and not (
            isinstance(op.index, list) and all(isinstance(p, str) for p in op.index)
        ):
            raise MemoryValidationError("index must be None, False or a list of field paths")
        return op
    return None


def _check_unicode(op: Op) -> None:
    """Namespace labels and keys name blobs and are returned in items: UTF-8
    must encode them (a lone surrogate cannot be)."""
    labels = op.namespace_prefix if isinstance(op, SearchOp) else getattr(op, "namespace", ())
    named = [("namespace", label) for label in labels]
    if isinstance(op, GetOp | PutOp):
        named.append(("key", op.key))
    for argument, text in named:
        if isinstance(text, str):
            validate.text(text, argument)


def _check_count(value: Any, argument: str, *, minimum: int = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise MemoryValidationError(f"{argument} must be an integer >= {minimum}, got {value!r}")


def dedupe_puts(puts: list[PutOp | None]) -> list[PutOp]:
    """The last write to each (namespace, key) wins, as in every LangGraph store."""
    last: dict[tuple[tuple[str, ...], str], PutOp] = {}
    for op in puts:
        if op is not None:
            last[(tuple(op.namespace), op.key)] = op
    return list(last.values())

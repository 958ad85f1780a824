"""The embedder of a LangGraph store configured with ``index=``: what it embeds, checked.

``MakersLangGraphStore(store, index={"dims", "embed", "fields"})`` ranks
searches by cosine similarity. :class:`ItemEmbedder` holds what that takes:
the embedder (``ensure_embeddings`` accepts LangChain ``Embeddings`` or a
function), the field paths of an item that are embedded, and the number of
dimensions every vector must have. It picks the texts of each put (a put's
``index`` overrides the configured ``fields``; ``False``: none), embeds them
and the batch's search queries, and refuses a vector of the wrong length or
with a non-finite number, so nothing malformed is stored or compared. Apart
from the store class because it is the one part that calls out to a model;
the store only hands it puts and queries.
"""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING

from langgraph.store.base import (
    IndexConfig,
    Op,
    PutOp,
    SearchOp,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

from ..._core.codec import dumps
from ...errors import MemoryValidationError
from .store_programs import PutPlan

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

#: An embedded field: its path as configured, and the path's tokens ("$": the whole value).
Field = tuple[str, str | list[str]]


def _field(path: str) -> Field:
    return (path, path if path == "$" else tokenize_path(path))


class ItemEmbedder:
    """The embedder, the fields it embeds and the dimensions it must return."""

    def __init__(self, embeddings: Embeddings, dims: int, fields: list[Field]) -> None:
        self.embeddings = embeddings
        self.dims = dims
        self.fields = fields

    @classmethod
    def from_index(cls, index: IndexConfig) -> ItemEmbedder:
        """The embedder ``index`` configures (``dims`` a positive integer,
        ``embed``, optional ``fields``, default the whole value)."""
        if not isinstance(index.get("dims"), int) or index["dims"] <= 0:
            raise MemoryValidationError("index['dims'] must be a positive integer")
        embeddings = ensure_embeddings(index.get("embed"))
        fields = [_field(path) for path in (index.get("fields") or ["$"])]
        return cls(embeddings, index["dims"], fields)

    async def embed_puts(self, puts: list[PutOp], plans: list[PutPlan]) -> None:
        """Embed the indexed fields of every put (``index`` overrides the
        configured ``fields``; False: none) and attach the vectors to its plan."""
        texts: list[str] = []
        owners: list[tuple[int, str]] = []
        for position, op in enumerate(puts):
            if op.value is None or op.index is False:
                continue
            fields = self.fields if op.index is None else [_field(path) for path in op.index]
            for path, tokens in fields:
                found = get_text_at_path(op.value, tokens)
                for index, text in enumerate(found):
                    texts.append(text)
                    owners.append((position, path if len(found) == 1 else f"{path}.{index}"))
        if not texts:
            return
        vectors = await self.embeddings.aembed_documents(texts)
        if len(vectors) != len(texts):
            raise MemoryValidationError(
                f"the embedder returned {len(vectors)} vectors for {len(texts)} texts"
            )
        by_put: dict[int, dict[str, list[float]]] = {}
        for (position, path), vector in zip(owners, vectors, strict=True):
            by_put.setdefault(position, {})[path] = self.checked_vector(vector)
        for position, paths in by_put.items():
            plans[position].vectors_json = dumps(paths)

    async def embed_queries(self, ops: list[Op]) -> dict[str, list[float]]:
        """The vector of each distinct search query of ``ops``, embedded concurrently."""
        queries = list(
            dict.fromkeys(op.query for op in ops if isinstance(op, SearchOp) and op.query)
        )
        vectors = await asyncio.gather(*(self.embeddings.aembed_query(q) for q in queries))
        return {q: self.checked_vector(v) for q, v in zip(queries, vectors, strict=True)}

    def checked_vector(self, vector: list[float]) -> list[float]:
        floats = [float(x) for x in vector]
        if len(floats) != self.dims or not all(math.isfinite(x) for x in floats):
            raise MemoryValidationError(
                f"the embedder returned a vector of {len(floats)} numbers (finite ones "
                f"expected); index['dims'] is {self.dims}"
            )
        return floats

"""The public API's room: the store a user holds.

=========================  =====================================================
module                     what is in it
=========================  =====================================================
:mod:`.context_store`      ``ContextStore``: messages, conversations, binding,
                           and the entries to the features above it
:mod:`.state`              ``StateStore`` (``store.state``)
:mod:`.watch`              ``ContextStore.watch``, from a backend's write feed
:mod:`.factory`            ``open_store(url)``, ``open_blob_store(url)``: the
                           one place a backend is picked, by URL scheme, lazily
:mod:`.location`           where the default store lives (env, project, user)
:mod:`.frameworks`         the framework adapters' entries on ``ContextStore``
=========================  =====================================================

Import ``makers_store`` (its ``__all__``), not these modules: the names here
are resolved on first use, so ``makers_store.api.location`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

# not imported here, not even for type checkers: the rooms above import
# ``.context_store`` itself, and this package stays a leaf of the import graph
__all__ = ["ContextStore"]


def __getattr__(name: str) -> Any:
    if name != "ContextStore":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(".context_store", __name__).ContextStore

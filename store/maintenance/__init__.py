"""Maintenance (``store.admin``, ``makers-store admin|export|import|copy|doctor``):
work over a whole store, run by an operator rather than an agent.

=========================  ======================================================
module                     what is in it
=========================  ======================================================
:mod:`.admin`              ``StoreAdmin`` (``store.admin``): the entry to the rest
:mod:`.inventory`          what a store holds: conversations enumerated, counted
:mod:`.index_repair`       the recency indexes checked and rebuilt
:mod:`.search`             finding messages and conversations by their text
:mod:`.search_index`       a search through the backend's index: candidates
                           checked against the scan's rule
:mod:`.doctor`             the history doctor: findings, and the safe repairs
:mod:`.exporting`          export as JSON lines (``TransferCounts``)
:mod:`.importing`          import of those lines
:mod:`.import_records`     an export file's records, parsed and checked
:mod:`.replacing`          replacing one whole conversation at once (import, copy)
:mod:`.copying`            copying a whole store between backends
:mod:`.snapshots`          named snapshots of the whole store, reset, seeds
=========================  ======================================================

Imports: every room below it: the core, ``lifecycle/``, ``api/`` (the
``ConversationStore`` it is handed: ``StoreAdmin(runner, store)``) and
``adapters/`` (pruning LangGraph checkpoints reads them). Only the facade
above imports this room, on first use of ``store.admin``
(``tests/test_rooms.py``).
"""

"""The store's core (private): the key layout, the records, the I/O-free
programs and the runner that takes them to a backend.

=============================  ==================================================
module                         what is in it
=============================  ==================================================
:mod:`.keys`                   the blob key layout, every prefix
:mod:`.adapter_keys`           the framework adapters' part of the key layout
:mod:`.names`                  cut ids: reading an id back from a key segment
:mod:`.layout`                 the layout version, and moving an old store in place
:mod:`.codec`                  JSON encoding and the records' byte formats
:mod:`.validate`               argument checks, each error naming its argument
:mod:`.arguments`              the platform's calling styles, read in one place
:mod:`.programs`               meta, index entries, whole conversations (the
                               write order: meta is the commit point)
:mod:`.message_programs`       a conversation's messages
:mod:`.message_lookup`         one message by its id
:mod:`.state_programs`         a conversation's state
:mod:`.appends`                appends and their helping protocol
:mod:`.listing`                listing conversations through the recency index
:mod:`.activity`               a conversation's last write (what retention reads)
:mod:`.checkpoint_programs`    LangGraph checkpoints as programs: the adapter's,
                               and fork's and retention's walks over them
:mod:`.value_chunks`           a bounded page of values (export and fork)
:mod:`.vacuum`                 ``VacuumReport``, the seam's vacuum vocabulary
:mod:`.search_text`            the search's rule: a message's text, case folding
                               (re-exported by ``blob`` for backends' indexes)
:mod:`.paging`                 the one cursor walk over a listing
:mod:`.runner`                 ``UnitRunner``: backend, clock, ids, retry policy
:mod:`.portal`                 coroutines run from blocking code (the sync facade)
=============================  ==================================================

Beside it, at the package's top and public: :mod:`makers_store.blob_ops` (what
a program speaks), :mod:`makers_store.blob` (what a backend implements),
:mod:`makers_store.retry` (the one retry policy), :mod:`makers_store.clock`,
:mod:`makers_store.models`, :mod:`makers_store.errors`.

The core imports nothing above it: not :mod:`makers_store.api`, nor
``lifecycle``, ``maintenance`` or ``adapters`` (``tests/test_rooms.py``
checks). The rooms above take a runner or a store from outside.
"""

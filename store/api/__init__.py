"""The store's own API: what an agent does with conversations, messages and
state. Public through :class:`makers_store.ContextStore`, which subclasses
:class:`.conversation_store.ConversationStore` and adds the entries to the
rooms above this one (``store.admin``, the framework adapters).

==========================  ====================================================
module                      what is in it
==========================  ====================================================
:mod:`.conversation_store`  ``ConversationStore``: messages, conversations,
                            binding, forks, context windows, conversions,
                            ``watch`` (the features of ``lifecycle/`` below it)
:mod:`.state`               ``StateStore`` (``store.state``)
:mod:`.watch`               ``ContextStore.watch``, from a backend's write feed
:mod:`.location`            where the default store lives (env, project, user)
:mod:`.backend_urls`        store URLs and the backend each names, imported lazily
==========================  ====================================================

Imports: the core, the blob seam and ``lifecycle/``; nothing of
``adapters/``, ``maintenance/`` or the facade above (``tests/test_rooms.py``).
The adapters and the maintenance room take a ``ConversationStore`` from
outside.
"""

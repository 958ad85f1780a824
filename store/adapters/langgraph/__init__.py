"""LangGraph's checkpointer and store (``makers-store[langgraph]``).

=============================  ==================================================
module                         what is in it
=============================  ==================================================
:mod:`.checkpoints`            ``MakersCheckpointSaver`` (``store.langgraph_checkpointer``)
:mod:`.checkpoint_records`     a checkpoint's records, read and checked
:mod:`.checkpoint_programs`    its I/O-free programs over the core (fork and
                               retention use them too)
:mod:`.store`                  ``MakersLangGraphStore`` (``store.langgraph_store``)
:mod:`.store_ops`              the store's batched operations, read
:mod:`.store_records`          an item's records
:mod:`.store_programs`         its I/O-free programs
:mod:`.store_index`            the vector index
:mod:`.store_embedding`        embedding items for the index
:mod:`.store_sweeper`          the TTL sweeper
=============================  ==================================================
"""

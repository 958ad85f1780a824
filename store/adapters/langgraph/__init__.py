"""LangGraph's checkpointer and store (``makers-store[langgraph]``).

=============================  ==================================================
module                         what is in it
=============================  ==================================================
:mod:`.checkpoints`            ``MakersCheckpointSaver`` (``store.langgraph_checkpointer``)
:mod:`.checkpoint_records`     a checkpoint's records, read and checked
:mod:`.store`                  ``MakersLangGraphStore`` (``store.langgraph_store``)
:mod:`.store_ops`              the store's batched operations, read
:mod:`.store_records`          an item's records
:mod:`.store_programs`         its I/O-free programs
:mod:`.store_index`            the vector index
:mod:`.store_embedding`        embedding items for the index
:mod:`.store_sweeper`          the TTL sweeper
=============================  ==================================================

The checkpoints' I/O-free programs are the core's
(:mod:`makers_store._core.checkpoint_programs`): fork and retention walk
them too, below this room.
"""

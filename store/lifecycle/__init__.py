"""A conversation's life after it is written (issue 24): the room for what
keeps a store healthy over weeks, and what a model sees of a long history.

=========================  ======================================================
module                     what is in it
=========================  ======================================================
:mod:`.fork`               copying a conversation, whole or up to a message,
                           into a new id (``store.fork_conversation``)
:mod:`.context_window`     what a model should see of a long conversation, the
                           platform's ``metadata.summary`` convention
                           (``store.context_window``, ``store.set_summary``)
:mod:`.convert`            messages as OpenAI or Anthropic input
                           (``makers_store.to_openai_input``...)
:mod:`.history_guard`      a history a model accepts, fixed on the way out
:mod:`.history_rules`      the rules the doctor and the guard share
:mod:`.tool_pairing`       tool calls and their results, paired
:mod:`.retention`          deleting idle conversations, and LangGraph
                           checkpoints and Claude transcripts nobody reaches
                           (``store.admin.prune_conversations`` /
                           ``prune_checkpoints``)
=========================  ======================================================

Imports: the core only (a runner is handed in; the LangGraph checkpoint
programs fork and retention walk are the core's,
:mod:`makers_store._core.checkpoint_programs`). The store's own API
(:mod:`makers_store.api`) and the maintenance room build on this one
(``tests/test_rooms.py``). Vacuum's report is the seam's
(:mod:`makers_store._core.vacuum`), the history doctor is maintenance's.
"""

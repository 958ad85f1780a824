"""A conversation's life after it is written (issue 24): the room for what
keeps a store healthy over weeks.

- :mod:`.retention`: deleting conversations idle for a while
  (``store.admin.prune_conversations``), and LangGraph checkpoints and Claude
  transcripts nobody can reach any more (``store.admin.prune_checkpoints``);
- :mod:`.vacuum`: giving back the space deletes leave (``store.admin.vacuum``);
- :mod:`.fork`: copying a conversation, whole or up to a message, into a new
  id (``store.fork_conversation``);
- :mod:`.context_window`: what a model should see of a long conversation, the
  platform's ``metadata.summary`` convention (``store.context_window``,
  ``store.set_summary``);
- :mod:`.doctor`: finding, and where one repair is safe fixing, what breaks a
  model call or a UI (``store.admin.check_history``).

Each works through the public API or the store's
:class:`~makers_store._core.runner.UnitRunner`, on every backend; the blocking twins
are generated into :mod:`makers_store.sync_api` with the rest.
"""

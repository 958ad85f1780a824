"""The Claude Agent SDK's ``SessionStore`` (``makers-store[claude]``).

:mod:`.sessions` holds ``ClaudeSessionStore`` (``store.claude_session_store()``);
:mod:`.session_programs` its I/O-free programs over the core.
"""

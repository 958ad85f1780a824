"""The OpenAI Agents SDK's ``Session`` (``makers-store[openai]``).

:mod:`.sessions` holds ``OpenAISession`` (``store.openai_session(id)``).
"""

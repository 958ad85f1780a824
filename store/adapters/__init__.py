"""Framework adapters: each speaks one agent framework's own storage protocol
over the same Blob store as the generic API.

==========================  ================================  ======================
entry on ``ContextStore``    module                            extra
==========================  ================================  ======================
``claude_session_store()``   :mod:`.claude_sessions`           ``makers-store[claude]``
``openai_session(id)``       :mod:`.openai_sessions`           ``makers-store[openai]``
``langgraph_checkpointer``   :mod:`.langgraph_checkpoints`     ``makers-store[langgraph]``
``langgraph_store``          :mod:`.langgraph_store`           ``makers-store[langgraph]``
==========================  ================================  ======================

The framework SDKs are optional: nothing here imports one until an adapter
is asked for, and a missing SDK raises ``MissingExtraError`` (an ImportError)
naming the extra.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import missing_extra

#: adapter module -> (framework module it needs, extra that installs it)
REQUIREMENTS: dict[str, tuple[str, str]] = {
    "claude_sessions": ("claude_agent_sdk", "claude"),
    "openai_sessions": ("agents", "openai"),
    "langgraph_checkpoints": ("langgraph.checkpoint.base", "langgraph"),
    "langgraph_store": ("langgraph.store.base", "langgraph"),
}


def load_adapter(name: str) -> ModuleType:
    """Import ``makers_store.adapters.<name>``, or explain which extra is missing."""
    framework, extra = REQUIREMENTS[name]
    try:
        importlib.import_module(framework)
    except ImportError as exc:
        raise missing_extra(framework.split(".")[0], extra) from exc
    return importlib.import_module(f"{__name__}.{name}")

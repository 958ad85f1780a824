"""Every framework is an optional extra: ``import makers_store`` and the
generic API work without any of them, and each adapter names its extra."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

WITHOUT_FRAMEWORKS = textwrap.dedent(
    """
    import asyncio, importlib.abc, json, sys

    BLOCKED = ("claude_agent_sdk", "agents", "langgraph", "langchain_core", "deepagents")

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"No module named {name!r} (blocked)")
            return None

    sys.meta_path.insert(0, Block())
    import makers_store
    from makers_store.errors import MissingExtraError

    async def main():
        out = {}
        async with makers_store.open_store("memory://") as store:
            await store.append_message(conversation_id="c", role="user", content="hi")
            out["messages"] = len(await store.get_messages(conversation_id="c"))
            attempts = {
                "claude_session_store": lambda: store.claude_session_store(),
                "openai_session": lambda: store.openai_session("c"),
                "langgraph_checkpointer": lambda: store.langgraph_checkpointer,
                "langgraph_store": lambda: store.langgraph_store,
            }
            for name, attempt in attempts.items():
                try:
                    attempt()
                except MissingExtraError as exc:
                    out[name] = str(exc)
            try:
                await store.claude_session_binding("c")
            except MissingExtraError as exc:
                out["claude_session_binding"] = str(exc)
        out["loaded"] = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        print(json.dumps(out))

    asyncio.run(main())
    """
)


def test_adapters_without_their_frameworks_name_the_extra() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_FRAMEWORKS], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out.pop("messages") == 1 and out.pop("loaded") == []
    assert out == {
        "claude_session_store": out["claude_session_store"],
        "openai_session": out["openai_session"],
        "langgraph_checkpointer": out["langgraph_checkpointer"],
        "langgraph_store": out["langgraph_store"],
        "claude_session_binding": out["claude_session_binding"],
    }
    for name, extra in [
        ("claude_session_store", "claude"),
        ("claude_session_binding", "claude"),
        ("openai_session", "openai"),
        ("langgraph_checkpointer", "langgraph"),
        ("langgraph_store", "langgraph"),
    ]:
        assert f"pip install 'makers-store[{extra}]'" in out[name], (name, out[name])

"""``msg update --meta`` merges and ``msg append --tool-call-id`` pairs a
tool result with its call (issue 32, items 2 and 3), run as a user runs
them: the installed ``makers-store`` in a subprocess, through pipes; the
result read back through the library and its converters."""

from __future__ import annotations

import json
from pathlib import Path

import makers_store
from tests.cli.conftest import make_store, run_process

CALL = {"id": "call_1", "type": "function", "function": {"name": "diff", "arguments": "{}"}}


def test_meta_merges_null_deletes_and_replace_takes_a_flag(tmp_path: Path) -> None:
    url = make_store(f"sqlite:///{tmp_path}/s.db")
    with makers_store.open_sync_store(url) as store:
        mid = store.append_message(
            "c1", "assistant", "", metadata={"tool_calls": [CALL], "draft": True}
        )
        store.append_message("c1", "tool", "ok", metadata={"tool_call_id": "call_1"})

    def update(*args: str) -> dict[str, object]:
        run = run_process("--store", url, "msg", "update", "c1", mid, *args, "--json")
        assert run.returncode == 0, run.stderr
        metadata: dict[str, object] = json.loads(run.stdout)["metadata"]
        return metadata

    # the help's own example: the call stays, so its tool result keeps its call
    assert update("--meta", "rating=5", "--meta", "draft=null") == {
        "tool_calls": [CALL],
        "rating": 5,
    }
    with makers_store.open_sync_store(url) as store:
        history = makers_store.to_openai_input(store.iter_messages("c1"))
        assert history[0]["tool_calls"] == [CALL] and history[1]["tool_call_id"] == "call_1"
        assert list(store.admin.check_history("c1")) == []
    assert update("--meta", "rating=4", "--replace-meta") == {"rating": 4}
    refused = run_process("--store", url, "msg", "update", "c1", mid, "--replace-meta")
    assert refused.returncode == 2 and "--replace-meta replaces the metadata" in refused.stderr


def test_tool_call_id_stores_the_result_where_the_converters_read_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    with makers_store.open_sync_store(url) as store:
        store.append_message("c1", "user", "what changed?")
        store.append_message("c1", "assistant", "", metadata={"tool_calls": [CALL]})
    # the docs' example: a diff from a pipe as the call's result
    run = run_process(
        "--store", url, "msg", "append", "c1", "--role", "tool", "--tool-call-id", "call_1",
        "--content", "-", input="diff --git a/x b/x\n",
    )  # fmt: skip
    assert run.returncode == 0 and run.stderr == "", run.stderr
    with makers_store.open_sync_store(url) as store:
        messages = list(store.iter_messages("c1"))
        assert messages[-1].metadata == {"tool_call_id": "call_1"}
        openai = makers_store.to_openai_input(messages)
        assert openai[-1] == {
            "role": "tool", "content": "diff --git a/x b/x\n", "tool_call_id": "call_1"
        }  # fmt: skip
        anthropic = makers_store.to_anthropic_messages(messages)
        assert anthropic[-1]["content"][0]["tool_use_id"] == "call_1"
        assert list(store.admin.check_history("c1")) == []
    unpaired = run_process(
        "--store", url, "msg", "append", "c1", "--role", "tool", "--content", "-", input="x"
    )
    assert unpaired.returncode == 0
    assert unpaired.stderr.startswith("warning: a tool message without --tool-call-id")
    wrong = run_process("--store", url, "msg", "append", "c1", "-r", "user", "-c", "x",
                        "--tool-call-id", "call_1")  # fmt: skip
    assert wrong.returncode == 2 and "--tool-call-id goes with --role tool" in wrong.stderr

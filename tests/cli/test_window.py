"""``makers-store conv window`` and ``conv summarize``: the context window from the shell."""

from __future__ import annotations

import json
from pathlib import Path

import makers_store
from makers_store.lifecycle.context_window import SUMMARY_INTRO
from tests.cli.conftest import Cli, run_process


def history(lib: makers_store.SyncContextStore) -> list[str]:
    return lib.append_messages(
        "c1", [{"role": ("user", "assistant")[i % 2], "content": f"m{i}"} for i in range(6)]
    )


def test_summarize_then_window(cli: Cli, lib: makers_store.SyncContextStore) -> None:
    mids = history(lib)
    out = cli.ok("conv", "summarize", "c1", "--until", mids[3], "--summary", "four said")
    assert "set, up to and including" in out
    meta = lib.get_conversation("c1")
    assert meta.metadata == {"summary": "four said", "summarizedUntil": mids[3]}

    window = json.loads(cli.ok("conv", "window", "c1", "--json"))
    assert window["summary"] == "four said" and window["summarized_until"] == mids[3]
    assert [m["message_id"] for m in window["messages"]] == mids[4:]
    assert window["system_text"] == f"{SUMMARY_INTRO}\nfour said"
    text = cli.ok("conv", "window", "c1")
    assert "four said" in text and "m4" in text and "m3" not in text

    openai = json.loads(cli.ok("conv", "window", "c1", "--as", "openai"))
    assert openai[0] == {"role": "system", "content": f"{SUMMARY_INTRO}\nfour said"}
    anthropic = json.loads(cli.ok("conv", "window", "c1", "--as", "anthropic"))
    assert anthropic["system"] == f"{SUMMARY_INTRO}\nfour said"
    assert [t["content"] for t in anthropic["messages"]] == ["m4", "m5"]


def test_summary_from_standard_input(cli: Cli, lib: makers_store.SyncContextStore) -> None:
    mids = history(lib)
    cli.ok("conv", "summarize", "c1", "--until", mids[1], "--summary", "-", input="from stdin\n")
    assert lib.get_conversation("c1").metadata["summary"] == "from stdin\n"


def test_a_window_cut_short_says_so(cli: Cli, lib: makers_store.SyncContextStore) -> None:
    history(lib)
    run = cli("conv", "window", "c1", "--last", "2")
    assert run.exit_code == 0 and "time to summarise" in run.stderr


def test_refusals(cli: Cli, lib: makers_store.SyncContextStore) -> None:
    mids = history(lib)
    run = cli("conv", "summarize", "c1", "--until", "nobody", "--summary", "s")
    assert (
        run.exit_code == 3
        and run.stderr == "error: message 'nobody' not found in conversation 'c1'\n"
    )
    assert lib.get_conversation("c1").metadata == {}  # nothing written
    run = cli("conv", "summarize", "missing", "--until", mids[0], "--summary", "s")
    assert run.exit_code == 3
    run = cli("conv", "window", "missing")
    assert run.exit_code == 3 and "not found" in run.stderr
    assert cli("conv", "window", "c1", "--last", "0").exit_code == 2


def test_a_window_names_the_tool_results_it_cut_from_their_call(tmp_path: Path) -> None:
    """Run as a user runs it (a subprocess, pipes): `--last 2` cuts between a
    call and its result, and the cut result is named on stderr and in the JSON;
    so is a result whose call was summarised (the model never sees it)."""
    url = f"sqlite:///{tmp_path}/s.db"
    call = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
    with makers_store.open_sync_store(url) as store:
        _, called, result, answer = store.append_messages(
            "c1",
            [
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": "", "metadata": {"tool_calls": [call]}},
                {"role": "tool", "content": "sunny", "metadata": {"tool_call_id": "call_1"}},
                {"role": "assistant", "content": "It is sunny"},
            ],
        )
    run = run_process("--store", url, "conv", "window", "c1", "--last", "2", "--json")
    assert run.returncode == 0
    window = json.loads(run.stdout)
    assert [m["message_id"] for m in window["messages"]] == [answer]
    assert window["left_out_results"] == [result]
    assert f"left out 1 tool result whose call fell outside the window: {result}\n" in run.stderr
    with makers_store.open_sync_store(url) as store:
        store.set_summary("c1", "asked for the weather", until=called)
    run = run_process("--store", url, "conv", "window", "c1", "--json")
    window = json.loads(run.stdout)
    assert [m["message_id"] for m in window["messages"]] == [answer]
    assert window["left_out_results"] == [result]
    run = run_process("--store", url, "conv", "window", "c1")
    assert run.returncode == 0 and "It is sunny" in run.stdout
    assert f"left out 1 tool result whose call fell outside the window: {result}\n" in run.stderr

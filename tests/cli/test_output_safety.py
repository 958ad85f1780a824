"""User data is printed as text (issue 12, items 10, 11 and 16): markup-like
titles, ids and keys show literally, terminal control sequences show escaped
(and stay exact in --json), and output to a pipe is neither wrapped nor padded."""

from __future__ import annotations

import json

import makers_store
from tests.cli.conftest import Cli, run_process, snapshot

MARKUP = ["What does [/INST] mean?", "[/x]", "[red]T[/red]", "[link=https://example.com]L[/link]"]
HOSTILE = "osc \x1b]0;pwned\x07 red \x1b[31mRED\x1b[0m csi \x9b2J cr \r bidi \u202e end"


def test_markup_in_titles_ids_keys_and_content_is_printed_as_text(
    cli: Cli, lib: makers_store.SyncContextStore, url: str
) -> None:
    for n, text in enumerate(MARKUP):
        cid = f"c{n}{text}"
        lib.append_message(conversation_id=cid, role="user", content=text, metadata={"m": text})
        lib.update_conversation(conversation_id=cid, metadata={"title": text})
        lib.bind(cid).state.set(text, text)
    lib.append_message(conversation_id="[/x]", role="user", content=":smile: [bold]b[/bold]")
    before = snapshot(url)
    listed = cli.ok("conv", "list")
    for n, text in enumerate(MARKUP):
        cid = f"c{n}{text}"
        assert cid in listed and text in listed
        assert text in cli.ok("state", "list", cid)
        shown = cli.ok("conv", "show", cid)
        assert cid in shown and text in shown
        transcript = cli.ok("msg", "list", cid)
        assert transcript.count(text) == 2  # content and metadata
    assert ":smile: [bold]b[/bold]" in cli.ok("msg", "list", "[/x]")
    assert snapshot(url) == before


def test_control_sequences_are_escaped_for_people_and_exact_in_json(
    cli: Cli, lib: makers_store.SyncContextStore, url: str
) -> None:
    lib.append_message(
        conversation_id="c1", role="tool", content=HOSTILE, metadata={"note": HOSTILE}
    )
    lib.update_conversation(conversation_id="c1", metadata={"title": HOSTILE})
    lib.bind("c1").state.set("k\x1b[2J", {"v": HOSTILE})
    for args in (
        ("msg", "list", "c1"),
        ("msg", "tail", "c1"),
        ("conv", "list"),
        ("conv", "show", "c1"),
        ("state", "list", "c1"),
        ("state", "get", "c1", "k\x1b[2J"),
    ):
        out = cli.ok(*args)
        assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out, args
        assert "\u202e" not in out and "\r" not in out, args
        assert "\\x1b" in out or "\\u001b" in out, (args, out)
    assert "osc \\x1b]0;pwned\\x07 red \\x1b[31mRED" in cli.ok("msg", "list", "c1")
    # state get prints JSON that still decodes to the stored value
    assert json.loads(cli.ok("state", "get", "c1", "k\x1b[2J")) == {"v": HOSTILE}
    (message,) = json.loads(cli.ok("msg", "list", "c1", "--json"))["items"]
    assert message["content"] == HOSTILE and message["metadata"] == {"note": HOSTILE}
    assert json.loads(cli.ok("conv", "show", "c1", "--json"))["metadata"]["title"] == HOSTILE
    assert json.loads(cli.ok("state", "list", "c1", "--json")) == {"k\x1b[2J": {"v": HOSTILE}}
    assert json.loads(cli.ok("msg", "tail", "c1", "--json"))["content"] == HOSTILE


def test_error_lines_escape_control_characters(cli: Cli) -> None:
    run = cli("conv", "show", "x\x1b]0;t\x07")
    assert run.exit_code == 3
    assert "\x1b" not in run.stderr and "x\\x1b]0;t\\x07" in run.stderr


def test_output_to_a_pipe_is_neither_wrapped_nor_padded(
    lib: makers_store.SyncContextStore, url: str
) -> None:
    long = " ".join(f"word{n}" for n in range(60))
    lib.append_message(conversation_id="c1", role="user", content=long)
    lib.update_conversation(conversation_id="c1", metadata={"title": "short"})
    lib.append_message(conversation_id="a-much-longer-conversation-id", role="user", content="x")
    for args in (("msg", "list", "c1"), ("conv", "list"), ("info",), ("conv", "show", "c1")):
        run = run_process("--store", url, *args, env={"COLUMNS": "40"})
        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()
        assert lines and all(line == line.rstrip() for line in lines), (args, lines)
        if args[0] == "msg":
            assert f"  {long}" in lines  # one line, although COLUMNS is 40

"""conv, msg, state and info commands change (and show) what the library reads."""

from __future__ import annotations

import json
from pathlib import Path

import makers_store
from makers_store.cli.main import app
from tests.cli.conftest import Cli, read_state


def test_msg_append_creates_the_conversation_and_prints_the_id(
    cli: Cli, lib: makers_store.SyncContextStore
) -> None:
    first = cli.ok("msg", "append", "c1", "--role", "user", "--content", "hello", "--user", "u_1")
    second = cli.ok(
        "msg", "append", "c1", "--role", "assistant",
        "--content-json", '[{"type": "text", "text": "hi"}]',
        "--meta", "model=gpt-4o", "--meta", "tokens=12", "--meta", "flags=[1,2]",
    )  # fmt: skip
    messages = lib.get_messages(conversation_id="c1")
    assert [m.message_id for m in messages] == [first.strip(), second.strip()]
    assert messages[0].role == "user" and messages[0].content == "hello"
    assert messages[1].content == [{"type": "text", "text": "hi"}]
    assert messages[1].metadata == {"model": "gpt-4o", "tokens": 12, "flags": [1, 2]}
    listed = lib.list_conversations(user_id="u_1")
    assert [item.conversation_id for item in listed.items] == ["c1"]


def test_msg_append_content_from_stdin_and_file(
    cli: Cli, lib: makers_store.SyncContextStore, tmp_path: Path
) -> None:
    cli.ok("msg", "append", "c1", "--role", "user", "--content", "-", input="from stdin\n")
    note = tmp_path / "note.txt"
    note.write_text("from a file ✓", encoding="utf-8")
    cli.ok("msg", "append", "c1", "--role", "tool", "--content-file", str(note))
    cli.ok("msg", "append", "c1", "--role", "user", "--content-json", "-", input='{"k": [1]}')
    contents = [m.content for m in lib.get_messages(conversation_id="c1")]
    assert contents == ["from stdin\n", "from a file ✓", {"k": [1]}]


def test_msg_append_rejects_bad_input_without_writing(
    cli: Cli, lib: makers_store.SyncContextStore
) -> None:
    both = cli("msg", "append", "c1", "--role", "user", "--content", "a", "--content-json", '"b"')
    assert both.exit_code == 2 and "mutually exclusive" in both.stderr
    role = cli("msg", "append", "c1", "--role", "robot", "--content", "a")
    assert role.exit_code == 2 and "--role" in role.stderr
    bad_json = cli("msg", "append", "c1", "--role", "user", "--content-json", "{nope")
    assert bad_json.exit_code == 2 and "--content-json must be JSON" in bad_json.stderr
    nothing = cli("msg", "append", "c1", "--role", "user")
    assert nothing.exit_code == 2
    assert lib.get_conversation(conversation_id="c1") is None


def test_msg_append_with_an_id_then_show_update_delete_by_it(
    cli: Cli, lib: makers_store.SyncContextStore
) -> None:
    assert cli.ok("msg", "append", "c1", "--role", "user", "--content", "hi", "--id", "web-1") == (
        "web-1\n"
    )
    generated = cli.ok("msg", "append", "c1", "--role", "assistant", "--content", "yo").strip()
    # a retried append changes nothing; other content under the id fails
    assert cli.ok("msg", "append", "c1", "--role", "user", "--content", "hi", "--id", "web-1")
    clash = cli("msg", "append", "c1", "--role", "user", "--content", "bye", "--id", "web-1")
    assert clash.exit_code == 1 and "'web-1' already names another message" in clash.stderr
    bad = cli("msg", "append", "c1", "--role", "user", "--content", "x", "--id", "a\tb")
    assert bad.exit_code == 2 and "message_id must not hold control characters" in bad.stderr
    assert [m.message_id for m in lib.get_messages(conversation_id="c1")] == ["web-1", generated]
    assert "hi" in cli.ok("msg", "show", "c1", "web-1")
    listed = cli.ok("msg", "list", "c1", "--after", "web-1", "--json")
    assert [item["message_id"] for item in json.loads(listed)["items"]] == [generated]
    cli.ok("msg", "update", "c1", "web-1", "--content", "hello")
    assert lib.get_message(conversation_id="c1", message_id="web-1").content == "hello"  # type: ignore[union-attr]
    cli.ok("msg", "delete", "c1", "web-1", "--yes")
    assert [m.message_id for m in lib.get_messages(conversation_id="c1")] == [generated]
    # an id is user data: a right-to-left override is shown, not obeyed
    shown = cli.ok("msg", "append", "c1", "--role", "user", "--content", "x", "--id", "r\u202eev")
    assert shown == "r\\u202eev\n"


def test_msg_list_renders_a_transcript_and_pages(
    cli: Cli, lib: makers_store.SyncContextStore
) -> None:
    ids = [
        lib.append_message(conversation_id="c1", role="user", content=f"line {n}") for n in range(5)
    ]
    lib.append_message(
        conversation_id="c1",
        role="assistant",
        content=[
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "x"}},
        ],
        metadata={"model": "m"},
    )
    out = cli.ok("msg", "list", "c1")
    assert "line 0" in out and "line 4" in out and "look" in out
    assert "[image_url]" in out and '"url": "x"' in out and '"model":"m"' in out
    for role in ("user", "assistant"):
        assert role in out
    page = json.loads(cli.ok("msg", "list", "c1", "--limit", "2", "--json"))
    assert [m["message_id"] for m in page["items"]] == ids[:2]
    assert page["next_cursor"] == ids[1]
    rest = json.loads(cli.ok("msg", "list", "c1", "--after", ids[1], "--all", "--json"))
    assert [m["message_id"] for m in rest["items"]][:3] == ids[2:]
    assert rest["next_cursor"] is None
    newest = json.loads(cli.ok("msg", "list", "c1", "--order", "desc", "--limit", "1", "--json"))
    assert newest["items"][0]["role"] == "assistant"
    back = json.loads(cli.ok("msg", "list", "c1", "--before", ids[3], "--json"))
    assert [m["message_id"] for m in back["items"]] == ids[:3]


def test_msg_show_update_delete(cli: Cli, lib: makers_store.SyncContextStore) -> None:
    mid = lib.append_message(conversation_id="c1", role="user", content="typo", metadata={"a": 1})
    shown = json.loads(cli.ok("msg", "show", "c1", mid, "--json"))
    assert shown == {"conversation_id": "c1", **lib.get_messages(conversation_id="c1")[0].to_dict()}
    cli.ok("msg", "update", "c1", mid, "--content", "fixed")
    (message,) = lib.get_messages(conversation_id="c1")
    assert message.content == "fixed" and message.metadata == {"a": 1}
    assert message.updated_at is not None
    cli.ok("msg", "update", "c1", mid, "--meta", "rating=5")  # merged
    assert lib.get_messages(conversation_id="c1")[0].metadata == {"a": 1, "rating": 5}
    cli.ok("msg", "update", "c1", mid, "--meta", "rating=5", "--replace-meta")
    assert lib.get_messages(conversation_id="c1")[0].metadata == {"rating": 5}
    cli.ok("msg", "update", "c1", mid, "--clear-meta")
    assert lib.get_messages(conversation_id="c1")[0].metadata is None
    assert cli("msg", "update", "c1", mid).exit_code == 2
    cli.ok("msg", "delete", "c1", mid, "--yes")
    assert lib.get_messages(conversation_id="c1") == []
    assert cli("msg", "delete", "c1", mid, "--yes").exit_code == 3
    assert cli("msg", "show", "c1", mid).exit_code == 3


def test_conv_list_table_and_json(cli: Cli, lib: makers_store.SyncContextStore) -> None:
    for cid, user in (("c1", "u_123"), ("c2", "u_9"), ("c3", "u_123")):
        lib.append_message(conversation_id=cid, role="user", content="x", user_id=user)
    lib.update_conversation(conversation_id="c3", metadata={"title": "Trip to Lisbon"})
    out = cli.ok("conv", "list", "--user", "u_123")
    assert "c1" in out and "c3" in out and "c2" not in out
    assert "Trip to Lisbon" in out and "just now" in out
    document = json.loads(cli.ok("conv", "list", "--json"))
    expected = lib.list_conversations().to_dict()
    assert document == expected
    first = json.loads(cli.ok("conv", "list", "--limit", "2", "--json"))
    assert len(first["items"]) == 2 and first["next_cursor"]
    rest = json.loads(cli.ok("conv", "list", "--after", first["next_cursor"], "--json"))
    seen = [i["conversation_id"] for i in first["items"] + rest["items"]]
    assert sorted(seen) == ["c1", "c2", "c3"]
    everything = json.loads(cli.ok("conv", "list", "--all", "--order", "asc", "--json"))
    assert [i["conversation_id"] for i in everything["items"]] == list(reversed(seen))


def test_conv_list_all_walks_past_one_api_page(
    cli: Cli, lib: makers_store.SyncContextStore
) -> None:
    for n in range(105):
        lib.append_message(conversation_id=f"c{n:03d}", role="user", content="x")
    everything = json.loads(cli.ok("conv", "list", "--all", "--json"))
    assert len({i["conversation_id"] for i in everything["items"]}) == 105
    limited = json.loads(cli.ok("conv", "list", "--limit", "101", "--json"))
    assert len(limited["items"]) == 101 and limited["next_cursor"]


def test_conv_show_update_clear_delete(cli: Cli, lib: makers_store.SyncContextStore) -> None:
    lib.append_message(conversation_id="c1", role="user", content="x")
    lib.update_conversation(conversation_id="c1", metadata={"draft": True})
    cli.ok("conv", "update", "c1", "--set", "title=My chat", "--set", "n=3", "--unset", "draft")
    meta = lib.get_conversation(conversation_id="c1")
    assert meta is not None and meta.metadata == {"title": "My chat", "n": 3}
    shown = json.loads(cli.ok("conv", "show", "c1", "--json"))
    assert shown == {**meta.to_dict(), "user_ids": []}
    assert "My chat" in cli.ok("conv", "show", "c1")
    assert cli("conv", "update", "c1").exit_code == 2
    assert cli("conv", "update", "c1", "--set", "novalue").exit_code == 2
    cli.ok("conv", "clear", "c1", "--yes")
    cleared = lib.get_conversation(conversation_id="c1")
    assert cleared is not None and cleared.message_count == 0
    assert cleared.metadata == {"title": "My chat", "n": 3}
    declined = cli("conv", "delete", "c1", input="y\n")  # an answer without a terminal
    assert declined.exit_code == 1 and lib.get_conversation(conversation_id="c1") is not None
    cli.ok("conv", "delete", "c1", "--yes")
    assert lib.get_conversation(conversation_id="c1") is None
    lib.append_message(conversation_id="c2", role="user", content="x")
    cli.ok("conv", "delete", "c2", "--yes")
    assert lib.get_conversation(conversation_id="c2") is None
    assert cli("conv", "delete", "c2", "--yes").exit_code == 3


def test_state_commands(cli: Cli, url: str) -> None:
    cli.ok("state", "set", "c1", "step", '{"n": 2, "done": false}')
    cli.ok("state", "set", "c1", "name", '"text"')
    cli.ok("state", "set", "c1", "nothing", "null")
    items = read_state(url, "c1")
    assert items == {"step": {"n": 2, "done": False}, "name": "text", "nothing": None}
    assert json.loads(cli.ok("state", "get", "c1", "step")) == {"n": 2, "done": False}
    assert json.loads(cli.ok("state", "get", "c1", "nothing")) is None
    assert json.loads(cli.ok("state", "list", "c1", "--json")) == items
    assert "step" in cli.ok("state", "list", "c1")
    missing = cli("state", "get", "c1", "absent")
    assert missing.exit_code == 3 and "absent" in missing.stderr
    bad = cli("state", "set", "c1", "x", "{nope")
    assert bad.exit_code == 2 and "must be JSON" in bad.stderr
    assert cli("state", "set", "c1", "x", "NaN").exit_code == 2
    cli.ok("state", "delete", "c1", "step")
    assert read_state(url, "c1") == {"name": "text", "nothing": None}
    assert cli("state", "delete", "c1", "step").exit_code == 3


def test_info_reports_store_counts(cli: Cli, lib: makers_store.SyncContextStore, url: str) -> None:
    lib.append_message(conversation_id="c1", role="user", content="x", user_id="u")
    lib.append_message(conversation_id="c1", role="user", content="y")
    lib.append_message(conversation_id="c2", role="user", content="z")
    cli.ok("state", "set", "c1", "k", "1")
    info = json.loads(cli.ok("info", "--json"))
    assert info["url"] == url and info["reason"] == "given explicitly"
    assert info["backend"]["kind"] == "sqlite" and info["backend"]["schema_version"] >= 1
    assert info["backend"]["size_bytes"] > 0
    assert (info["conversations"], info["messages"], info["state_entries"]) == (2, 3, 1)
    assert info["index_entries"] == 3
    text = cli.ok("info")
    assert "given explicitly" in text and "conversations" in text


def test_store_from_environment_says_so(url: str, lib: makers_store.SyncContextStore) -> None:
    lib.append_message(conversation_id="c1", role="user", content="x")
    cli = Cli(url)
    result = cli.runner.invoke(app, ["info", "--json"], env={"MAKERS_STORE_URL": url})
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["url"] == url and "MAKERS_STORE_URL" in info["reason"]
    assert info["conversations"] == 1


def test_msg_tail_without_follow_and_unknown_conversations(
    cli: Cli, lib: makers_store.SyncContextStore
) -> None:
    for n in range(4):
        lib.append_message(conversation_id="c1", role="user", content=f"m{n}")
    out = cli.ok("msg", "tail", "c1", "-n", "2")
    assert "m2" in out and "m3" in out and "m1" not in out
    lines = cli.ok("msg", "tail", "c1", "-n", "3", "--json").splitlines()
    assert [json.loads(line)["content"] for line in lines] == ["m1", "m2", "m3"]
    assert cli.ok("msg", "tail", "c1", "-n", "0") == ""
    assert cli("msg", "list", "nope").exit_code == 3
    lib.clear_messages(conversation_id="c1")
    assert json.loads(cli.ok("msg", "list", "c1", "--json"))["items"] == []

"""The smaller frictions a newcomer met (issue 32, item 8), each run as a
user runs it: the installed ``makers-store`` in a subprocess, through pipes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import makers_store
from tests.cli.conftest import make_store, run_process


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = make_store(f"sqlite:///{tmp_path}/s.db")
    with makers_store.open_sync_store(url) as store:
        store.append_message("c1", "user", "hello", user_id="u1")
    return url


def test_state_set_of_bare_text_shows_the_quoting(url: str) -> None:
    run = run_process("--store", url, "state", "set", "c1", "name", "hello")
    assert run.returncode == 2
    assert run.stderr == (
        "error: VALUE must be JSON; for the text 'hello' write it as a JSON string: "
        "makers-store state set c1 name '\"hello\"'\n"
    )
    assert run_process("--store", url, "state", "set", "c1", "name", '"hello"').returncode == 0
    with makers_store.open_sync_store(url) as store:
        assert store.bind("c1").state.get("name") == "hello"


def test_a_missing_role_is_one_line(url: str) -> None:
    run = run_process("--store", url, "msg", "append", "c1", "--content", "x")
    assert run.returncode == 2
    assert run.stderr == (
        "error: missing --role: one of user, assistant, system, tool "
        "(see 'makers-store msg append --help')\n"
    )


def test_errors_use_the_command_lines_words_not_the_apis(url: str) -> None:
    for args, said in [
        (("conv", "fork", "c1", ""), "error: NEW must not be empty\n"),
        (("conv", "fork", "c1", "c1"), "error: NEW must differ from SRC (both 'c1')\n"),
        (("msg", "show", "", "m"), "error: conversation id must not be empty\n"),
    ]:
        run = run_process("--store", url, *args)
        assert run.returncode == 2 and run.stderr == said, (args, run.stderr)
        assert not re.search(r"\b(new_id|source_id|conversation_id)\b", run.stderr)


def test_blob_and_index_tables_have_headers(url: str) -> None:
    blobs = run_process("--store", url, "blob", "ls").stdout.splitlines()
    assert blobs[0].split() == ["size", "updated", "etag", "key"]
    assert any(line.endswith("c/c1/meta") for line in blobs[1:])
    entries = run_process("--store", url, "index", "ls").stdout.splitlines()
    assert entries[0].split() == ["index", "last", "message", "conversation", "[state]"]
    assert len(entries) == 3  # the recency index and u1's


def test_vacuum_reports_its_sizes_in_one_unit(url: str) -> None:
    run = run_process("--store", url, "vacuum")
    assert run.returncode == 0
    rows = dict(line.split(None, 1) for line in run.stdout.splitlines())
    units = {rows[label].split()[-1] for label in ("before", "after", "reclaimed")}
    assert units == {"KB"}, rows
    document = json.loads(run_process("--store", url, "vacuum", "--json").stdout)
    assert document["bytes_before"] >= document["bytes_after"]


def test_msg_list_says_how_many_more(url: str) -> None:
    with makers_store.open_sync_store(url) as store:
        store.append_messages("c1", [{"role": "user", "content": f"m{n}"} for n in range(11)])
    run = run_process("--store", url, "msg", "list", "c1", "-n", "2")
    assert run.returncode == 0
    edge = re.fullmatch(r"10 more: --after (msg_\S+) or --all\n", run.stderr)
    assert edge, run.stderr
    rest = run_process("--store", url, "msg", "list", "c1", "--after", edge.group(1), "-n", "9")
    assert rest.stderr.startswith("more: --after ") and rest.stderr.endswith(" or --all\n")


def test_importing_a_file_that_is_not_an_export_says_so(url: str, tmp_path: Path) -> None:
    before = run_process("--store", url, "export").stdout
    for name, text, what in [
        ("notes.txt", "hello\n", "not JSON"),
        ("data.json", '{"a": 1}\n', "JSON, but no export record (no known 'type')"),
    ]:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        for extra in ((), ("--dry-run",)):
            run = run_process("--store", url, "import", str(path), "--yes", *extra)
            assert run.returncode == 2
            assert run.stderr.startswith(
                f"error: {path} is not a makers-store export: its first line is {what}; "
            ), run.stderr
    piped = run_process("--store", url, "import", "-", "--yes", input="[1, 2]\n")
    assert piped.returncode == 2 and "standard input is not a makers-store export" in piped.stderr
    assert run_process("--store", url, "export").stdout == before


def test_conv_show_names_a_langgraph_conversations_checkpoints(url: str) -> None:
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.base import empty_checkpoint

    ids = []
    with makers_store.open_sync_store(url) as store:
        saver = store.async_store.langgraph_checkpointer
        for thread in ("c1", "graph-only"):
            config: dict[str, dict[str, str]] = {"configurable": {"thread_id": thread}}
            for _ in range(3):
                checkpoint = empty_checkpoint()
                ids.append(checkpoint["id"])
                config = saver.put(config, checkpoint, {}, {})  # type: ignore[arg-type,assignment]
    run = run_process("--store", url, "conv", "show", "c1")
    assert run.returncode == 0
    assert f"checkpoints  3 LangGraph checkpoints, the latest {ids[2]}" in run.stdout
    only = run_process("--store", url, "conv", "show", "graph-only")
    assert only.returncode == 0, only.stderr
    assert "no messages; 0 state keys; 3 LangGraph checkpoints" in only.stdout
    document = json.loads(run_process("--store", url, "conv", "show", "c1", "--json").stdout)
    assert [c["checkpoint_id"] for c in document["langgraph_checkpoints"]] == ids[2::-1]
    assert {c["checkpoint_ns"] for c in document["langgraph_checkpoints"]} == {""}


def test_importing_equal_data_again_writes_nothing_and_says_so(url: str, tmp_path: Path) -> None:
    export = tmp_path / "backup.jsonl"
    assert run_process("--store", url, "export", "-o", str(export)).returncode == 0
    target = make_store(f"sqlite:///{tmp_path}/t.db")
    first = run_process("--store", target, "import", str(export), "--yes")
    assert first.returncode == 0
    assert "imported 1 conversation (1 new, 0 replaced, 0 already equal)" in first.stderr
    for extra in ((), ("--yes",)):  # nothing to replace: no question, no --yes needed
        again = run_process("--store", target, "import", str(export), *extra)
        assert again.returncode == 0, again.stderr
        assert again.stderr == (
            f"imported nothing from {export}: 0 written, 1 conversation already equal\n"
        )
    document = json.loads(run_process("--store", target, "import", str(export), "--json").stdout)
    assert (document["conversations"], document["unchanged"]) == (0, 1)

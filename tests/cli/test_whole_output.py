"""Output that is not a terminal carries every character the store holds, one
line per table row (issue 23, items 1 to 3): real processes writing to a pipe."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import makers_store
from tests.cli.conftest import console_script, run_process

MB = 1024 * 1024


def pipe(*args: str) -> bytes:
    """The command's stdout, read from a real pipe, as bytes."""
    done = subprocess.run(
        [*console_script(), *args], capture_output=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_sixty_megabytes_through_a_pipe_arrive_whole(url: str) -> None:
    big = "".join(chr(ord("a") + n % 26) for n in range(26)) * (40 * MB // 26) + "END-OF-BIG"
    small = ("x" * 1023 + "\n") * (20 * MB // 1024) + "END-OF-SMALL"
    with makers_store.open_sync_store(url) as store:
        first = store.append_message(conversation_id="c1", role="user", content=big)
        store.append_message(conversation_id="c1", role="assistant", content=small)
    shown = pipe("--store", url, "msg", "show", "c1", first)
    lines = shown.decode("utf-8").split("\n")
    assert lines[1] == "  " + big  # the whole 40 MB line, indented like the transcript
    listed = pipe("--store", url, "msg", "list", "c1")
    assert len(listed) > 60 * MB
    text = listed.decode("utf-8")
    assert "  " + big + "\n" in text
    assert text.count("  " + "x" * 1023 + "\n") == 20 * MB // 1024
    assert text.rstrip("\n").endswith("END-OF-SMALL")


def test_a_long_message_is_not_cut_in_msg_list_show_or_tail(url: str) -> None:
    long = "word " * 300_000 + "THE-END"  # 1.5 M characters, the case
    with makers_store.open_sync_store(url) as store:
        mid = store.append_message(conversation_id="long15", role="user", content=long)
    for args in (
        ("msg", "show", "long15", mid),
        ("msg", "list", "long15"),
        ("msg", "tail", "long15"),
    ):
        run = run_process("--store", url, *args)
        assert run.returncode == 0, run.stderr
        assert f"  {long}\n" in run.stdout, args


def test_conv_list_in_a_pipe_is_one_line_per_row(url: str) -> None:
    titles = {
        "c1": "a title far longer than the column is wide " * 4,
        "c2": "short",
        "c3": "line one\nline two",
    }
    with makers_store.open_sync_store(url) as store:
        for cid, title in titles.items():
            store.append_message(conversation_id=cid, role="user", content="x")
            store.update_conversation(conversation_id=cid, metadata={"title": title})
    for columns in ("40", "200"):
        run = run_process("--store", url, "conv", "list", env={"COLUMNS": columns})
        assert run.returncode == 0, run.stderr
        lines = run.stdout.splitlines()
        assert len(lines) == 1 + len(titles), lines  # the header, then one line per row
        assert lines[0].split() == ["conversation", "title", "messages", "last", "message"]
        row = {line.split()[0]: line for line in lines[1:]}
        assert titles["c1"] in row["c1"]  # whole, not cut to an ellipsis
        assert "line one\\nline two" in row["c3"]
        assert all(line == line.rstrip() for line in lines)
    # rows whose cells fit stay aligned
    assert run.stdout.splitlines()[2].index("short") == run.stdout.splitlines()[0].index("title")


def test_trailing_spaces_of_stored_text_are_kept_and_padding_is_not_added(url: str) -> None:
    with makers_store.open_sync_store(url) as store:
        mid = store.append_message(conversation_id="c1", role="user", content="kept   \n\nend")
    run = run_process("--store", url, "msg", "show", "c1", mid)
    assert run.stdout.splitlines()[1:] == ["  kept   ", "", "  end"]


def test_init_prints_through_the_safe_printer_in_one_piece(tmp_path: Path) -> None:
    target = tmp_path / "demo\x1b[31mred"
    run = run_process("init", str(target), env={"COLUMNS": "40"})
    assert run.returncode == 0, run.stderr
    assert "\x1b" not in run.stdout and "demo\\x1b[31mred" in run.stdout
    lines = run.stdout.splitlines()
    assert all(line == line.rstrip() for line in lines)
    (curl,) = [line for line in lines if "curl" in line]  # not split mid-JSON at 40 columns
    assert curl.endswith("""-d '{"message": "hi"}'""")
    assert any(line.strip().startswith("makers-store chat /chat/stream") for line in lines)

"""Bad input and missing or read-only stores (issue 12, items 12 to 14): each
refused with a named error, nothing written, no file or directory created."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import makers_store
from tests.cli.conftest import Cli, console_script, snapshot


def run_bytes(*args: str | bytes, stdin: bytes = b"", cwd: Path | None = None) -> tuple[int, str]:
    """The real executable with raw bytes in argv and stdin; (exit code, stderr)."""
    done = subprocess.run(
        [*console_script(), *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env={k: v for k, v in os.environ.items() if k != "MAKERS_STORE_DEBUG"},
        timeout=60,
        check=False,
    )
    return done.returncode, done.stderr.decode("utf-8", "replace")


def test_non_utf8_stdin_is_a_usage_error_naming_the_flag(
    lib: makers_store.SyncContextStore, url: str
) -> None:
    lib.append_message(conversation_id="c", role="user", content="kept")
    before = snapshot(url)
    code, err = run_bytes(
        "--store", url, "msg", "append", "c", "--role", "tool", "--content", "-", stdin=b"a\xffb"
    )
    assert code == 2 and err.startswith("error: ") and "--content" in err and "UTF-8" in err
    code, err = run_bytes(
        "--store", url, "msg", "append", "c", "-r", "user", "--content-json", "-", stdin=b'"\xfe"'
    )
    assert code == 2 and "--content-json" in err
    code, err = run_bytes("--store", url, "state", "set", "c", "k", "-", stdin=b'"\xed\xa0\x80"')
    assert code == 2 and "VALUE" in err and "UTF-8" in err
    assert snapshot(url) == before


def test_non_utf8_arguments_are_usage_errors_naming_the_flag(
    lib: makers_store.SyncContextStore, url: str
) -> None:
    lib.append_message(conversation_id="c", role="user", content="kept")
    before = snapshot(url)
    for args, named in (
        ((b"msg", b"append", b"c", b"--role", b"tool", b"--content", b"x\xffy"), "--content"),
        ((b"msg", b"append", b"c", b"-r", b"tool", b"--content=x\xffy"), "--content"),
        ((b"msg", b"append", b"c\xff", b"-r", b"tool", b"--content", b"x"), "argument"),
        ((b"state", b"set", b"c", b"k\xed\xa0\x80", b"1"), "argument"),
        ((b"conv", b"update", b"c", b"--set", b"title=\xff"), "--set"),
    ):
        code, err = run_bytes("--store", url, *args)
        assert code == 2, (args, err)
        assert err.count("\n") == 1 and f"error: {named} '" in err and "not UTF-8" in err
        assert "\\xff" in err or "\\xed" in err  # the bad bytes, shown
    assert snapshot(url) == before


def test_read_commands_refuse_a_store_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "x.db"
    for args in (
        ("conv", "list"),
        ("msg", "list", "c1"),
        ("msg", "tail", "c1"),
        ("state", "list", "c1"),
        ("export",),
        ("index", "check"),
        ("blob", "ls"),
        ("conv", "delete", "c1", "--yes"),
        ("msg", "delete", "c1", "msg_0000000000_aaaaaaaaaa", "--yes"),
    ):
        run = Cli(str(missing))(*args)
        assert run.exit_code == 3, (args, run.stderr)
        assert run.stderr == (
            f"error: store {str(missing)!r} not found (commands that add data create it)\n"
        )
    run = Cli(f"sqlite:///{missing}")("copy", f"sqlite:///{missing}", f"{tmp_path}/dst.db")
    assert run.exit_code == 3 and f"store {str(missing)!r} not found" in run.stderr
    assert list(tmp_path.iterdir()) == []  # no directory, no file
    info = json.loads(Cli(str(missing)).ok("info", "--json"))
    assert info["exists"] is False and info["url"] == str(missing)
    assert "not created yet" in Cli(str(missing)).ok("info")
    assert list(tmp_path.iterdir()) == []
    Cli(str(missing)).ok("msg", "append", "c1", "--role", "user", "--content", "hi")
    assert missing.is_file()  # a write creates it


def test_malformed_urls_are_rejected_and_create_nothing(tmp_path: Path) -> None:
    for url in ("sqlite:/x.db", "sqlite:x.db", "s3:bucket", "memory:", "sqlite://x.db"):
        code, err = run_bytes("--store", url, "conv", "list", cwd=tmp_path)
        assert code == 2, (url, err)
        assert err.startswith(f"error: url {url!r}") and "sqlite:///" in err
        code, err = run_bytes("--store", url, "msg", "append", "c", "-r", "user", "--content", "x",
                              cwd=tmp_path)  # fmt: skip
        assert code == 2, (url, err)
    assert list(tmp_path.iterdir()) == []


@contextmanager
def read_only(target: Path) -> Iterator[None]:
    """Make ``target`` (a file, or a directory and its files) unwritable:
    chattr +i as root (who ignores permission bits), chmod for anyone else."""
    paths = [target, *target.iterdir()] if target.is_dir() else [target]
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", *map(str, paths)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
        return
    modes = {path: path.stat().st_mode for path in paths}
    for path in paths:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        yield
    finally:
        for path, mode in modes.items():
            path.chmod(mode)


@pytest.mark.parametrize("what", ["directory", "file"])
def test_a_store_that_cannot_be_written_is_read_read_only(tmp_path: Path, what: str) -> None:
    directory = tmp_path / "ro"
    directory.mkdir()
    url = f"sqlite:///{directory}/s.db"
    with makers_store.open_sync_store(url) as store:
        store.append_message(conversation_id="c1", role="user", content="hello")
        store.bind("c1").state.set("k", 1)
    before = snapshot(url)
    assert sorted(p.name for p in directory.iterdir()) == ["s.db"]  # WAL files gone
    cli = Cli(url)
    target = directory if what == "directory" else directory / "s.db"
    with read_only(target):
        assert "hello" in cli.ok("msg", "list", "c1")
        assert json.loads(cli.ok("state", "get", "c1", "k", "--json")) == 1
        assert "c1" in cli.ok("conv", "list")
        info = json.loads(cli.ok("info", "--json"))
        assert info["conversations"] == 1
        if what == "directory":
            assert info["backend"]["read_only"]
        cli.ok("export")
        for args in (
            ("msg", "append", "c1", "--role", "user", "--content", "more"),
            ("state", "set", "c1", "k", "2"),
            ("conv", "clear", "c1", "--yes"),
        ):
            run = cli(*args)
            assert run.exit_code == 1, (args, run.stderr)
            assert run.stderr.count("\n") == 1 and "read" in run.stderr
            assert "write access to the file and its directory" in run.stderr
    assert snapshot(url) == before


def test_the_library_opens_for_reading_without_creating(tmp_path: Path) -> None:
    missing = tmp_path / "sub" / "x.db"
    with pytest.raises(makers_store.MemoryNotFoundError, match=r"no store at .*writes create it"):
        makers_store.open_store(str(missing), create=False)
    with pytest.raises(makers_store.MemoryValidationError, match="not a store URL"):
        makers_store.open_store("sqlite:/x.db", create=False)
    assert list(tmp_path.iterdir()) == []
    with makers_store.open_sync_store(f"sqlite:///{missing}") as store:  # create=True by default
        store.append_message(conversation_id="c", role="user", content="x")
    assert missing.is_file()


def test_ids_at_the_limit_work_through_every_command(cli: Cli, tmp_path: Path) -> None:
    """256 four-byte characters (issue 12, item 2): appended, listed, shown,
    exported and imported back, on the default SQLite store."""
    cid, key = "😀" * 256, "鍵" * 256
    cli.ok("msg", "append", cid, "-r", "user", "--content", "hello", "-u", "用" * 256)
    cli.ok("state", "set", cid, key, '{"n": 1}')
    listed = json.loads(cli.ok("conv", "list", "--json"))["items"]
    assert [item["conversation_id"] for item in listed] == [cid]
    mine = json.loads(cli.ok("conv", "list", "--user", "用" * 256, "--json"))["items"]
    assert [item["conversation_id"] for item in mine] == [cid]
    assert "hello" in cli.ok("msg", "list", cid)
    assert json.loads(cli.ok("state", "get", cid, key)) == {"n": 1}
    assert "no drift" in cli.ok("index", "check")
    backup = tmp_path / "backup.jsonl"
    cli.ok("export", "-o", str(backup))
    restored = Cli(f"sqlite:///{tmp_path}/restored.db")
    restored.ok("import", str(backup))
    assert json.loads(restored.ok("state", "get", cid, key)) == {"n": 1}
    assert "hello" in restored.ok("msg", "list", cid)

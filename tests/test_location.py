"""Which store opens by default, and why."""

from __future__ import annotations

from pathlib import Path

import pytest

import makers_store
from makers_store.api.location import resolve
from makers_store.emulator.sqlite.migrations import SCHEMA_VERSION
from makers_store.factory import split_url


def test_explicit_url_wins(tmp_path: Path) -> None:
    loc = resolve("memory://", env={"MAKERS_STORE_URL": "sqlite:///x.db"}, cwd=tmp_path)
    assert (loc.url, loc.reason) == ("memory://", "given explicitly")


def test_environment_variable(tmp_path: Path) -> None:
    loc = resolve(None, env={"MAKERS_STORE_URL": "sqlite:////tmp/e.db"}, cwd=tmp_path)
    assert loc.url == "sqlite:////tmp/e.db" and "MAKERS_STORE_URL" in loc.reason


@pytest.mark.parametrize("marker", ["edgeone.json", "agents", "cloud-functions"])
def test_nearest_makers_project(tmp_path: Path, marker: str) -> None:
    project = tmp_path / "proj"
    deep = project / "src" / "deeper"
    deep.mkdir(parents=True)
    if marker.endswith(".json"):
        (project / marker).write_text("{}")
    else:
        (project / marker).mkdir()
    loc = resolve(None, env={}, cwd=deep)
    assert loc.url == f"sqlite:///{project.resolve()}/.makers-store/store.db"
    assert str(project.resolve()) in loc.reason


def test_user_data_dir_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    loc = resolve(None, env={}, cwd=tmp_path)
    assert loc.url == f"sqlite:///{tmp_path}/data/makers-store/store.db"
    assert "per-user" in loc.reason


async def test_open_store_reports_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "edgeone.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MAKERS_STORE_URL", raising=False)
    async with makers_store.open_store() as store:
        await store.append_message(conversation_id="c", role="user", content="x")
        assert store.location is not None and "Makers project" in store.location.reason
    assert (tmp_path / ".makers-store" / "store.db").exists()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///rel/x.db", ("sqlite", "rel/x.db", {})),
        ("sqlite:////abs/x.db?synchronous=full", ("sqlite", "/abs/x.db", {"synchronous": "full"})),
        ("/plain/path.db", ("sqlite", "/plain/path.db", {})),
        ("memory://", ("memory", "", {})),
    ],
)
def test_url_forms(url: str, expected: tuple[str, str, dict[str, str]]) -> None:
    assert split_url(url) == expected


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://x", "unknown scheme"),
        ("sqlite://x.db", "sqlite:///"),
        ("sqlite:///x.db?bogus=1", "bogus"),
        ("sqlite:///x.db?synchronous=sometimes", "synchronous"),
        ("memory://name", "memory://"),
    ],
)
def test_bad_urls_name_the_problem(url: str, message: str) -> None:
    with pytest.raises(makers_store.MemoryValidationError, match=message):
        makers_store.open_store(url)


async def test_synchronous_full_is_applied(tmp_path: Path) -> None:
    async with makers_store.open_store(f"sqlite:///{tmp_path}/f.db?synchronous=full") as store:
        await store.append_message(conversation_id="c", role="user", content="x")
        assert store.blobs.describe()["synchronous"] == "full"
        assert store.blobs.describe()["schema_version"] == SCHEMA_VERSION

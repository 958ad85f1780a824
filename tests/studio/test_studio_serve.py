"""The Studio under ``makers-store serve``: at /_studio/ on serve's port, the
playground streaming a real agent run (and stopping one), traces per run."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from makers_store.emulator.runtime.worker.trace_log import trace_path
from makers_store.text import UNSAFE
from tests.serve.harness import Server, cli, serving, write_project

from .conftest import wait_live

#: the scaffold's echo model streams one word per 50 ms: this takes seconds
LONG_MESSAGE = " ".join(f"word{n}" for n in range(200))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("studio-serve")
    made = cli("init", str(root / "demo"))
    assert made.returncode == 0, made.stderr
    write_project(  # a route that fails, for the traces' status
        root / "demo",
        {
            "agents/broken.py": """
            async def handler(ctx):
                raise RuntimeError("the model is down")
        """
        },
    )
    with serving(root / "demo", root / "serve.log") as server:
        # unhurried, once: the first conversation page imports LangGraph (see warm_up)
        httpx.get(studio_url(server, "/conversation?id=warm-up"), timeout=120)
        yield server


def studio_url(server: Server, path: str = "/") -> str:
    return f"{server.base_url}/_studio{path}"


def test_serve_prints_the_studio_url_and_serves_it(page: Page, served: Server) -> None:
    assert f"studio {served.base_url}/_studio/" in served.log()
    page.goto(studio_url(served))
    expect(page.locator("nav.top-nav, header.top nav")).to_contain_text("Playground")
    wait_live(page)
    page.goto(served.base_url + "/_studio")  # without the slash: to the same page
    expect(page.locator("h1")).to_have_text("Conversations")


def test_the_playground_streams_a_turn_frame_by_frame(
    page: Page, served: Server, artifacts: Path
) -> None:
    page.goto(studio_url(served, "/playground"))
    page.select_option("select[name=route]", "/chat/stream")
    page.fill("input[name=cid]", "play-1")
    page.fill("textarea[name=body]", json.dumps({"message": "hello studio"}))
    page.click("#playground button[type=submit]")
    expect(page.locator("#run-status")).to_contain_text("done")
    frames = page.locator("#frames li")
    assert frames.count() > 3
    expect(frames.first).to_contain_text("event: delta")
    expect(frames.last).to_contain_text("event: done")
    expect(page.locator("#run-id")).to_contain_text("run_")
    expect(page.locator("#run-instance")).to_have_text("1")
    page.screenshot(path=artifacts / "playground.png", full_page=True)
    run_id = page.locator("#run-id").inner_text()
    page.goto(studio_url(served, "/conversation?id=play-1"))
    expect(page.locator("#messages .message")).to_have_count(2)
    expect(page.locator("#messages .message").first).to_contain_text("hello studio")
    run = page.locator("#runs tbody tr")  # which instance served the turn
    expect(run).to_have_count(1)
    expect(run).to_contain_text("/chat/stream")
    expect(run.locator("td.num").first).to_have_text("1")
    page.goto(studio_url(served, "/traces?id=play-1"))
    row = page.locator("#traces tbody tr", has_text=run_id)
    expect(row).to_contain_text("/chat/stream")
    expect(row.locator("td.num").first).to_have_text("1")
    page.screenshot(path=artifacts / "traces.png", full_page=True)


def test_the_stop_button_stops_a_running_turn(page: Page, served: Server) -> None:
    page.goto(studio_url(served, "/playground"))
    page.select_option("select[name=route]", "/chat/stream")
    expect(page.locator("input[name=stop]")).to_have_value("/chat/stop")  # the sibling
    page.fill("input[name=cid]", "play-stop")
    page.fill("textarea[name=body]", json.dumps({"message": LONG_MESSAGE}))
    page.click("#playground button[type=submit]")
    expect(page.locator("#frames li").nth(2)).to_be_visible()
    page.click("#stop-run")
    expect(page.locator(".toast")).to_contain_text("stop route answered HTTP 200")
    expect(page.locator("#run-status")).to_contain_text("done")
    expect(page.locator("#frames li").last).to_contain_text('"aborted": true')


def test_the_playground_starts_with_a_fresh_conversation(page: Page, served: Server) -> None:
    """Opened without ?id=, the playground's first Send works: init's agents
    answer 400 to a request without a conversation id."""
    page.goto(studio_url(served, "/playground"))
    first = page.locator("input[name=cid]").input_value()
    assert re.fullmatch(r"play-[0-9a-f]{8}", first), first
    page.select_option("select[name=route]", "/chat")
    page.click("#playground button[type=submit]")  # the body as the page starts
    expect(page.locator("#run-status")).to_have_text("done (HTTP 200)")
    expect(page.locator("#frames li").first).to_contain_text(f'"conversation_id": "{first}"')
    page.goto(studio_url(served, "/playground"))
    assert page.locator("input[name=cid]").input_value() not in ("", first)
    page.goto(studio_url(served, "/playground?id=chosen"))  # from a conversation's page
    expect(page.locator("input[name=cid]")).to_have_value("chosen")


def test_the_playground_shows_control_characters_in_an_answer_visibly(
    page: Page, served: Server, artifacts: Path
) -> None:
    """What the agent streams is shown by the page's script: U+202E as an
    escape, as the templates and the CLI show it (ESC arrives escaped by the
    frame's JSON already)."""
    page.goto(studio_url(served, "/playground"))
    page.select_option("select[name=route]", "/chat/stream")
    page.fill("textarea[name=body]", json.dumps({"message": "abc\u202edef \x1b[31mRED"}))
    page.click("#playground button[type=submit]")
    expect(page.locator("#run-status")).to_contain_text("done")
    frames = page.locator("#frames")
    expect(frames).to_contain_text("abc\\u202edef")
    expect(frames).to_contain_text("\\u001b[31mRED")
    assert UNSAFE.search(frames.inner_text()) is None
    page.screenshot(path=artifacts / "playground-control-characters.png", full_page=True)


def test_failed_runs_are_not_ok_in_the_trace_file_or_the_traces_page(
    page: Page, served: Server, artifacts: Path
) -> None:
    """A run answered 400 (init's chat without a conversation id) or 500 (a
    handler that raised) is an error with its HTTP status, in traces.jsonl and
    on the Traces page, whose filter shows the failed runs only."""

    rejected = httpx.post(served.base_url + "/chat", json={"message": "hi"}, timeout=30)
    assert rejected.status_code == 400
    crashed = httpx.post(
        served.base_url + "/broken",
        json={},
        headers={"makers-conversation-id": "t-broken"},
        timeout=30,
    )
    assert crashed.status_code == 500
    fine = httpx.post(
        served.base_url + "/chat",
        json={"message": "hi"},
        headers={"makers-conversation-id": "t-fine"},
        timeout=30,
    )
    assert fine.status_code == 200
    fine_run = fine.headers["makers-run-id"]
    records = {
        r["run_id"]: r for r in map(json.loads, trace_path(served.project).read_text().splitlines())
    }
    by_http = {(r["route"], r["http_status"]): r["status"] for r in records.values()}
    assert by_http[("/chat", 400)] == "error"
    assert by_http[("/broken", 500)] == "error"
    assert records[fine_run]["status"] == "ok" and records[fine_run]["http_status"] == 200

    page.goto(studio_url(served, "/traces"))
    broken = page.locator("#traces tbody tr", has_text="/broken")
    expect(broken.locator("td.status")).to_have_text("error")
    expect(broken.locator("td.http")).to_have_text("500")
    expect(page.locator("#traces tbody tr", has_text=fine_run).locator("td.http")).to_have_text(
        "200"
    )
    page.select_option("#runs-filter", "failed")
    page.click("form.filters button[type=submit]")
    expect(page).to_have_url(re.compile(r"runs=failed"))
    rows = page.locator("#traces tbody tr")
    expect(rows.first).to_be_visible()
    for status in rows.locator("td.status").all_inner_texts():
        assert status.strip() in ("error", "aborted", "timeout"), status
    assert rows.filter(has_text=fine_run).count() == 0
    expect(rows.filter(has_text="/broken")).to_have_count(1)
    page.screenshot(path=artifacts / "traces-failed.png", full_page=True)


def test_rerun_from_here_forks_before_the_turn_and_opens_the_playground(
    page: Page, served: Server
) -> None:
    """Issue 34: "Re-run from here" on a user message forks the conversation
    just before it and opens the Playground on the fork, that message ready."""
    headers = {"makers-conversation-id": "rerun-1"}
    for text in ("first question", "second question"):
        turn = httpx.post(f"{served.base_url}/chat", json={"message": text}, headers=headers)
        assert turn.status_code == 200
    page.goto(studio_url(served, "/conversation?id=rerun-1"))
    messages = page.locator("#messages .message")
    expect(messages).to_have_count(4)
    expect(messages.nth(1).locator('button[data-action="rerun"]')).to_have_count(0)  # a reply
    messages.nth(2).locator('button[data-action="rerun"]').click()
    page.wait_for_url(re.compile(r".*/playground\?id=rerun-1-rerun-"))
    fork = page.locator("input[name=cid]").input_value()
    assert fork.startswith("rerun-1-rerun-")
    expect(page.locator("select[name=route]")).to_have_value("/chat")
    assert json.loads(page.locator("textarea[name=body]").input_value()) == {
        "message": "second question"
    }
    history = httpx.get(f"{served.base_url}/api/history", params={"conversation_id": fork})
    first_turn = [m["content"] for m in history.json()["messages"]]
    assert len(first_turn) == 2 and first_turn[0] == "first question"  # the fork ends before
    page.click("#playground button[type=submit]")
    expect(page.locator("#run-status")).to_contain_text("done")
    replayed = httpx.get(f"{served.base_url}/api/history", params={"conversation_id": fork})
    contents = [m["content"] for m in replayed.json()["messages"]]
    assert contents[2] == "second question" and len(contents) == 4
    original = httpx.get(f"{served.base_url}/api/history", params={"conversation_id": "rerun-1"})
    assert len(original.json()["messages"]) == 4  # untouched

"""The Studio for the whole store, in a real browser: the overview (counts,
size on disk, reclaimable bytes, vacuum, the whole-store doctor), message
search, tool calls shown compactly and linked to their results, an aborted
reply, a conversation's users. One Studio process for the module, over a store
seeded before it starts."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

import makers_store

from .conftest import PageLog, Studio, answer, start_studio, warm_up

WEATHER = {
    "id": "call_w",
    "type": "function",
    "function": {"name": "weather", "arguments": '{"city": "Lisbon"}'},
}
CLAUDE_SESSION = str(uuid.uuid4())


async def _seed(url: str) -> dict[str, str]:
    """The store the module's Studio shows; the ids the tests look for."""
    ids: dict[str, str] = {}
    async with makers_store.open_store(url) as s:
        await s.append_message("trip", "user", "Plan a weekend in LISBON", user_id="u_ana")
        ids["call"] = await s.append_message("trip", "assistant", "", {"tool_calls": [WEATHER]})
        ids["result"] = await s.append_message("trip", "tool", "sunny", {"tool_call_id": "call_w"})
        ids["aborted"] = await s.append_message(
            "trip", "assistant", "Day one: Alfa", {"aborted": True}, user_id="u_bob"
        )
        await s.bind("trip").state.set("budget", 300)
        await s.bind("only-state").state.set("draft", {"step": 1})  # no message: no meta
        blocks = [
            {"type": "text", "text": "Looking"},
            {"type": "tool_use", "id": "t1", "name": "<b>find</b>", "input": {"q": "x"}},
        ]
        await s.append_message("blocks", "assistant", blocks)
        await s.append_message("blocks", "user", [{"type": "tool_result", "tool_use_id": "t1"}])
        # an orphan call at the end of a history: the doctor's finding, repairable
        ids["orphan"] = await s.append_message(
            "orphan", "assistant", "", {"tool_calls": [{**WEATHER, "id": "call_o"}]}
        )
        # a call whose result is 95 messages later: beyond the page that shows the call
        for n in range(120):
            if n == 5:
                ids["far_call"] = await s.append_message(
                    "long", "assistant", "", {"tool_calls": [{**WEATHER, "id": "call_far"}]}
                )
            elif n == 100:
                ids["far_result"] = await s.append_message(
                    "long", "tool", "rain", {"tool_call_id": "call_far"}
                )
            else:
                text = "needle-early" if n == 10 else f"m{n}"
                mid = await s.append_message("long", "user", text)
                ids.setdefault("needle", mid) if n == 10 else None
        await s.claude_session_store().append(
            {"project_key": "p", "session_id": CLAUDE_SESSION},
            [{"type": "user", "uuid": str(uuid.uuid4()), "message": {"content": "hi"}}],
        )
        # space a vacuum gives back
        big = "x" * 4000
        await s.append_messages("junk", [{"role": "user", "content": big}] * 300)
        await s.delete_conversation("junk")
    return ids


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Studio, dict[str, str]]]:
    folder = tmp_path_factory.mktemp("studio-whole-store")
    url = f"sqlite:///{folder}/store.db"
    with ThreadPoolExecutor(1) as worker:  # Playwright's loop may run on this thread
        ids = worker.submit(lambda: asyncio.run(_seed(url))).result()
    started = start_studio(url)
    warm_up(started)
    yield started, ids
    started.stop()


@pytest.fixture(scope="module")
def studio(seeded: tuple[Studio, dict[str, str]]) -> Studio:
    return seeded[0]


@pytest.fixture(scope="module")
def ids(seeded: tuple[Studio, dict[str, str]]) -> dict[str, str]:
    return seeded[1]


def test_the_overview_counts_the_store_and_vacuums_it(
    page: Page,
    studio: Studio,
    seed: makers_store.SyncContextStore,
    page_log: PageLog,
    artifacts: Path,
) -> None:
    counts = seed.admin.counts()
    assert (counts.users, counts.conversations) == (2, 4)
    assert counts.adapter_blobs >= 1  # the Claude transcript
    page.goto(studio.at("/overview"))
    expect(page.locator("#count-conversations")).to_have_text("4")
    expect(page.locator("#count-messages")).to_have_text(f"{counts.messages:,}")
    expect(page.locator("#count-users")).to_have_text("2")
    expect(page.locator("#users-list a")).to_have_text(["u_ana", "u_bob"])
    expect(page.locator("#count-state")).to_have_text("2")
    expect(page.locator("#count-frameworks")).to_contain_text(f"{counts.adapter_blobs:,} blob")
    expect(page.locator("#size-on-disk")).to_have_text(re.compile(r"^[\d.]+ (KB|MB)$"))
    reclaimable = seed.blobs.describe()["reclaimable_bytes"]
    assert reclaimable > 100_000  # the deleted conversation's pages
    expect(page.locator("#reclaimable")).to_contain_text(re.compile(r"(KB|MB)"))
    page.click('button[data-action="vacuum"]')
    assert "changes no data" in answer(page, yes=False)  # cancelled: nothing done
    expect(page.locator("#vacuum-result")).to_have_text("")
    page.click('button[data-action="vacuum"]')
    answer(page)
    expect(page.locator("#vacuum-result")).to_contain_text("given back")
    page.screenshot(path=artifacts / "overview.png", full_page=True)
    assert seed.blobs.describe()["reclaimable_bytes"] < reclaimable
    assert seed.admin.counts() == counts  # no data changed
    assert not page_log.dialogs and not page_log.errors


def test_vacuum_and_the_doctor_are_behind_the_guard(page: Page, studio: Studio) -> None:
    page.goto(studio.at("/overview"))
    token = page.locator('meta[name="studio-token"]').get_attribute("content")
    assert token
    own, elsewhere = studio.url.rstrip("/"), "http://evil.example"
    for path in ("/api/vacuum", "/api/doctor", "/api/doctor-repair"):
        for headers in ({"origin": own}, {"origin": elsewhere, "x-studio-token": token}):
            answer = page.request.post(studio.at(path), data={}, headers=headers)
            assert answer.status == 403, (path, headers)
        assert page.request.get(studio.at(path)).status == 405  # never a GET


def test_a_conversation_of_state_only_is_listed_and_opens(page: Page, studio: Studio) -> None:
    page.goto(studio.url)
    expect(page.locator("#conversations .row-link")).to_have_count(4)  # no index lists it
    assert "only-state" not in page.locator("#conversations").inner_text()
    page.click("#state-only-link")
    row = page.locator("#state-only tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator("td.num")).to_have_text("1")
    row.locator("a").click()
    expect(page.locator("#no-meta")).to_contain_text("1 state key: this conversation holds only")
    expect(page.locator("#panel-state .key")).to_have_text("draft")


def test_message_search_names_and_opens_each_hit(
    page: Page, studio: Studio, ids: dict[str, str], artifacts: Path
) -> None:
    page.goto(studio.at("/search"))
    page.fill("#search", "lisbon")  # any case: the rule of msg search
    page.click("form.filters button[type=submit]")
    hit = page.locator("#hits tr.hit")
    expect(hit).to_have_count(1)
    expect(hit.locator("td").first).to_have_text("trip")
    expect(hit.locator(".snippet")).to_contain_text("Plan a weekend in LISBON")
    page.screenshot(path=artifacts / "search.png", full_page=True)
    page.goto(studio.at("/search?q=needle-early"))
    page.locator("#hits a.hit-link").click()  # the 11th of 120: not in the newest 50
    target = page.locator("#messages .message.target")
    expect(target).to_have_attribute("data-message-id", ids["needle"])
    expect(target).to_contain_text("needle-early")
    expect(target).to_be_in_viewport()
    messages = page.locator("#messages .message")
    expect(messages).to_have_count(50)
    page.click("#load-newer")  # the rest, up to the newest
    expect(messages).to_have_count(110)
    expect(page.locator("#load-newer")).to_have_count(0)
    page.goto(studio.at("/search?q=nowhere-at-all"))
    expect(page.locator("#no-hits")).to_contain_text("No message contains nowhere-at-all")


def test_tool_calls_show_compactly_and_lead_to_their_results(
    page: Page, studio: Studio, ids: dict[str, str], artifacts: Path
) -> None:
    page.goto(studio.at("/conversation?id=trip"))
    call = page.locator(f'#messages .message[data-message-id="{ids["call"]}"] .call')
    expect(call.locator(".call-text")).to_have_text('weather({"city": "Lisbon"})')
    call.locator("a.tool-link").click()  # on the page: it goes there
    expect(page.locator("#messages .message.target")).to_have_attribute(
        "data-message-id", ids["result"]
    )
    result = page.locator(f'#messages .message[data-message-id="{ids["result"]}"]')
    expect(result.locator(".result-of")).to_contain_text("result of call call_w")
    aborted = page.locator(f'#messages .message[data-message-id="{ids["aborted"]}"]')
    expect(aborted.locator(".badge.aborted")).to_have_text("aborted")
    expect(page.locator("#messages .badge.aborted")).to_have_count(1)
    page.screenshot(path=artifacts / "tool-calls.png", full_page=True)
    expect(page.locator("#users a")).to_have_text(["u_ana", "u_bob"])
    page.locator("#users a").first.click()
    expect(page.locator("#conversations .row-link")).to_have_text(["trip"])

    page.goto(studio.at("/conversation?id=blocks"))  # Anthropic blocks; a name is text
    expect(page.locator(".call-text")).to_have_text('<b>find</b>({"q": "x"})')
    assert page.locator(".call-text b").count() == 0
    expect(page.locator(".result-of")).to_contain_text("call t1")

    # a result beyond the page: the link asks the server, which opens the page at it
    page.goto(studio.at(f"/conversation?id=long&message={ids['far_call']}"))
    page.locator("#messages .call a.tool-link").click()
    expect(page).to_have_url(re.compile(re.escape(f"message={ids['far_result']}")))
    expect(page.locator("#messages .message.target")).to_contain_text("rain")
    page.locator("#messages .message.target a.tool-link").click()  # and back to the call
    expect(page.locator("#messages .message.target")).to_have_attribute(
        "data-message-id", ids["far_call"]
    )


def test_the_whole_store_doctor_links_its_findings_and_repairs(
    page: Page,
    studio: Studio,
    seed: makers_store.SyncContextStore,
    ids: dict[str, str],
    artifacts: Path,
) -> None:
    page.goto(studio.at("/overview"))
    page.click('button[data-action="doctor"]')
    assert "every conversation" in answer(page)
    in_orphan = page.locator("a.finding-conversation", has_text=re.compile("^orphan$"))
    finding = page.locator("#doctor-findings .finding", has=in_orphan)
    expect(finding).to_have_count(1)
    expect(finding).to_have_attribute("data-rule", "orphan-tool-call")
    expect(finding.locator(".repair")).to_contain_text(
        "append a result saying the call was interrupted"
    )
    page.screenshot(path=artifacts / "doctor.png", full_page=True)
    assert list(seed.admin.check_history("orphan"))  # checking changed nothing
    page.click('#doctor-findings button[data-action="doctor-repair"]')
    answer(page)
    expect(page.locator("#doctor-result")).to_contain_text("repaired")
    assert list(seed.admin.check_history("orphan")) == []
    page.locator("#doctor-findings .finding", has=in_orphan).locator("a.finding-message").click()
    expect(page.locator("#messages .message.target")).to_have_attribute(
        "data-message-id", ids["orphan"]
    )
    expect(page.locator("#messages .message")).to_have_count(2)  # and the result appended

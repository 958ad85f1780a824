"""What the Studio shows and edits, asserted in a real browser."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import Page, expect

import makers_store

from .conftest import PageLog, Studio, answer, wait_live


def test_the_list_shows_conversations_newest_first_and_filters(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    seed.append_message(f"{cid}-old", "user", "one", user_id="u_lists")
    seed.append_message(cid, "user", "two", user_id="u_lists")
    seed.append_message(cid, "assistant", "three")
    seed.update_conversation(cid, {"title": "Trip to Lisbon"})
    page.goto(studio.url)
    rows = page.locator("#conversations tbody tr")
    expect(rows.first).to_contain_text(cid)
    expect(rows.first).to_contain_text("Trip to Lisbon")
    expect(rows.first.locator(".num")).to_have_text("2")
    page.goto(studio.at("/?user=u_lists"))
    expect(page.locator("#conversations tbody tr")).to_have_count(2)
    page.fill("#search", "lisbon")
    page.keyboard.press("Enter")
    expect(page.locator("#conversations tbody tr")).to_have_count(1)
    expect(page.locator("#conversations")).to_contain_text(cid)
    page.fill("#search", f"{cid}-old")
    page.keyboard.press("Enter")
    expect(page.locator("table.rows").first).to_contain_text(f"{cid}-old")


def test_the_list_pages_with_the_store_cursors(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    user = f"u_{cid}"
    for n in range(55):
        seed.append_message(f"{cid}-{n:02d}", "user", "hi", user_id=user)
    page.goto(studio.at(f"/?user={user}"))
    expect(page.locator("#conversations tbody tr")).to_have_count(50)
    expect(page.locator("#conversations tbody tr").first).to_contain_text(f"{cid}-54")
    page.click("a[rel=next]")
    expect(page.locator("#conversations tbody tr")).to_have_count(5)
    expect(page.locator("#conversations tbody tr").last).to_contain_text(f"{cid}-00")
    page.click("a[rel=prev]")
    expect(page.locator("#conversations tbody tr")).to_have_count(50)


def test_a_transcript_shows_roles_json_and_tool_calls_and_pages_back(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    seed.append_messages(cid, [{"role": "user", "content": f"m{n}"} for n in range(120)])
    seed.append_message(
        cid,
        "assistant",
        [
            {"type": "text", "text": "Looking it up"},
            {"type": "tool_use", "id": "t1", "name": "search", "input": {"q": "lisbon"}},
        ],
        metadata={"model": "m-1"},
    )
    seed.append_message(cid, "tool", {"type": "tool_result", "tool_use_id": "t1", "content": "ok"})
    ids = [m.message_id for m in seed.get_messages(cid, limit=100, order="desc")]
    seed.update_message(cid, ids[2], content="m119 (fixed)")
    page.goto(studio.at(f"/conversation?id={cid}"))
    messages = page.locator("#messages .message")
    expect(messages).to_have_count(50)
    last = messages.last
    expect(last.locator(".role")).to_have_text("tool")
    expect(last).to_contain_text("tool result")
    assistant = messages.nth(48)
    expect(assistant).to_contain_text("tool call search")
    expect(assistant).to_contain_text('"q": "lisbon"')
    expect(messages.nth(47)).to_contain_text("edited")
    page.click("button.older")
    expect(messages).to_have_count(100)
    page.click("button.older")
    expect(messages).to_have_count(122)
    expect(messages.first).to_contain_text("m0")
    expect(page.locator("button.older")).to_have_count(0)


def test_a_state_edit_persists_and_bad_json_writes_nothing(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str, page_log: PageLog
) -> None:
    seed.append_message(cid, "user", "hi")
    seed.bind(cid).state.set("step", {"n": 1})
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    entry = page.locator('form.state-entry[data-key="step"]')
    entry.locator("textarea").fill('{"n": 2, "done": true}')
    entry.locator("button[type=submit]").click()
    expect(page.locator(".toast")).to_contain_text("state saved")
    assert seed.bind(cid).state.get("step") == {"n": 2, "done": True}
    entry = page.locator('form.state-entry[data-key="step"]')
    entry.locator("textarea").fill("{not json")
    entry.locator("button[type=submit]").click()
    expect(page.locator(".toast.bad")).to_contain_text("value is not valid JSON")
    assert seed.bind(cid).state.get("step") == {"n": 2, "done": True}
    new = page.locator('form[data-action="state-new"]')
    new.locator("input[name=key]").fill("added")
    new.locator("textarea").fill('["a", 1]')
    new.locator("button[type=submit]").click()
    expect(page.locator('form.state-entry[data-key="added"]')).to_be_visible()
    assert seed.bind(cid).state.get("added") == ["a", 1]
    page.click('button[data-action="state-delete"][data-key="added"]')
    assert answer(page) == "Delete state key added?"
    expect(page.locator('form.state-entry[data-key="added"]')).to_have_count(0)
    assert seed.bind(cid).state.items() == {"step": {"n": 2, "done": True}}


def test_metadata_merges_and_keys_delete(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str, page_log: PageLog
) -> None:
    seed.append_message(cid, "user", "hi")
    seed.update_conversation(cid, {"title": "Old", "draft": True})
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    page.fill('form[data-action="meta"] textarea', '{"title": "New", "pinned": 1}')
    page.click('form[data-action="meta"] button[type=submit]')
    expect(page.locator("#metadata")).to_contain_text("pinned")
    meta = seed.get_conversation(cid)
    assert meta is not None and meta.metadata == {"title": "New", "draft": True, "pinned": 1}
    page.click('button[data-action="meta-delete"][data-key="draft"]')
    expect(page.locator("#metadata")).not_to_contain_text("draft")
    meta = seed.get_conversation(cid)
    assert meta is not None and meta.metadata == {"title": "New", "pinned": 1}


def test_clear_and_delete_ask_first(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str, page_log: PageLog
) -> None:
    seed.append_message(cid, "user", "hi")
    seed.bind(cid).state.set("k", 1)
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    page.click('button[data-action="delete"]')  # cancelled: nothing happens
    assert "cannot be undone" in answer(page, yes=False)
    expect(page.locator(".toast")).to_have_count(0)
    assert seed.get_conversation(cid) is not None
    page.click('button[data-action="clear"]')
    answer(page)
    expect(page.locator("#messages .message")).to_have_count(0)
    assert seed.get_messages(cid) == []
    assert seed.bind(cid).state.get("k") == 1
    page.click('button[data-action="delete"]')
    answer(page)
    page.wait_for_url(studio.url)
    assert not page_log.dialogs  # asked in the page, never by a native confirm()
    assert seed.get_conversation(cid) is None


def test_screenshots_light_dark_and_narrow(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str, artifacts: Path
) -> None:
    seed.append_message(cid, "user", "Plan a weekend in Lisbon", user_id="u_shots")
    seed.append_message(
        cid,
        "assistant",
        [
            {"type": "text", "text": "Here is a plan."},
            {"type": "tool_use", "name": "weather", "input": {"city": "Lisbon"}},
        ],
    )
    seed.update_conversation(cid, {"title": "Weekend in Lisbon"})
    seed.bind(cid).state.set("plan", {"days": 2, "booked": False})
    page.goto(studio.url)
    page.screenshot(path=artifacts / "list-light.png", full_page=True)
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    page.screenshot(path=artifacts / "conversation-light.png", full_page=True)
    page.emulate_media(color_scheme="dark")
    page.screenshot(path=artifacts / "conversation-dark.png", full_page=True)
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(20, 24, 28)"
    page.set_viewport_size({"width": 420, "height": 800})
    page.screenshot(path=artifacts / "conversation-narrow.png", full_page=True)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 420, "the narrow page scrolls sideways"
    shots = sorted(p.name for p in artifacts.iterdir())
    print(f"studio screenshots in {artifacts}: {json.dumps(shots)}")


def test_keyboard_moves_through_rows(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    seed.append_message(cid, "user", "hi")
    page.goto(studio.url)
    wait_live(page)
    page.keyboard.press("j")
    first = page.locator(".row-link").first
    expect(first).to_be_focused()
    page.keyboard.press("j")
    expect(page.locator(".row-link").nth(1)).to_be_focused()
    page.keyboard.press("/")
    expect(page.locator("#search")).to_be_focused()


def test_ids_with_any_characters_open_and_edit(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    odd = f"{cid} a/b?c=d&e#f %20 ünï ✓"
    seed.append_message(odd, "user", "odd one", user_id="u odd/?&")
    seed.bind(odd).state.set("k/?&#", 1)
    page.goto(studio.at("/?user=" + "u%20odd%2F%3F%26"))
    page.locator(".row-link", has_text=odd).click()
    expect(page.locator("#cid")).to_have_text(odd)
    expect(page.locator("#messages .message")).to_contain_text("odd one")
    wait_live(page)
    entry = page.locator("form.state-entry").first
    entry.locator("textarea").fill("2")
    entry.locator("button[type=submit]").click()
    expect(page.locator(".toast")).to_contain_text("state saved")
    assert seed.bind(odd).state.get("k/?&#") == 2


def test_client_message_ids_show_and_page_back(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    """Ids the caller gave (any characters) are shown and are the paging cursors."""
    seed.append_messages(
        cid,
        [
            {"role": "user", "content": f"m{n}"} | ({"message_id": f"web/{n}?&#ü"} if n % 2 else {})
            for n in range(101)
        ],
    )
    page.goto(studio.at(f"/conversation?id={cid}"))
    messages = page.locator("#messages .message")
    expect(messages).to_have_count(50)
    expect(messages.nth(48).locator(".id")).to_have_text("web/99?&#ü")
    expect(messages.first.locator(".id")).to_have_text("web/51?&#ü")
    page.click("button.older")  # the cursor is the oldest shown: that client id
    expect(messages).to_have_count(100)
    page.click("button.older")
    expect(messages).to_have_count(101)
    expect(messages.first).to_contain_text("m0")
    expect(messages.nth(1).locator(".id")).to_have_text("web/1?&#ü")

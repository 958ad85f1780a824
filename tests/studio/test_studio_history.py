"""The conversation page's "Check history" panel (issue 24, item 6): the
doctor's findings for one conversation, read-only, in a real browser."""

from __future__ import annotations

from playwright.sync_api import Page, expect

import makers_store

from .conftest import Studio, wait_live

CALL = {"id": "w1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}


def test_check_history_lists_the_findings_and_changes_nothing(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    seed.append_message(cid, "user", "weather? <b>now</b>")
    seed.append_message(cid, "assistant", "", {"tool_calls": [CALL]})
    seed.append_message(cid, "user", "hello?", {"run_id": "r"})
    again = seed.append_message(cid, "user", "hello?", {"run_id": "r"})
    before = [m.to_dict() for m in seed.get_messages(cid)]

    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    panel = page.locator("#panel-history")
    expect(panel).to_contain_text("Check history")
    page.click('button[data-action="history-check"]')
    expect(panel.locator("#history-result")).to_have_text("2 findings")
    rules = panel.locator(".finding")
    expect(rules).to_have_count(2)
    expect(rules.nth(0)).to_have_attribute("data-rule", "duplicate-message")
    expect(rules.nth(1)).to_have_attribute("data-rule", "orphan-tool-call")
    expect(rules.nth(1)).to_contain_text("'w1'")
    # the repair in words, and the message a link that opens the page at it
    expect(rules.nth(1).locator(".repair")).to_contain_text(
        "move the call to metadata.interrupted_tool_calls"
    )
    expect(rules.nth(0).locator(".repair")).to_contain_text("delete the later copy")
    assert [m.to_dict() for m in seed.get_messages(cid)] == before  # read-only

    rules.nth(1).locator("a.finding-message").click()
    expect(page.locator("#messages .message.target")).to_have_attribute(
        "data-message-id", before[1]["message_id"]
    )
    page.go_back()
    page.click('button[data-action="history-check"]')
    seed.delete_message(cid, again)
    page.click('button[data-action="history-check"]')  # "Check again"
    expect(panel.locator("#history-result")).to_have_text("1 finding")


def test_a_clean_conversation_says_so(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    seed.append_message(cid, "user", "hi")
    seed.append_message(cid, "assistant", "hello")
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    page.click('button[data-action="history-check"]')
    expect(page.locator("#history-result")).to_have_text("The history is clean.")

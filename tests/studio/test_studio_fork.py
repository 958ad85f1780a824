"""The Studio's "Fork here" on a message, asserted in a real browser."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

import makers_store

from .conftest import PageLog, Studio, wait_live


def test_fork_here_asks_for_an_id_then_opens_the_fork(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str, page_log: PageLog
) -> None:
    first = seed.append_message(cid, "user", "Plan a weekend in Lisbon", user_id="u_fork")
    seed.append_message(cid, "assistant", "Day one: Alfama", message_id="reply/1?&#ü")
    seed.append_message(cid, "user", "Make it cheaper")
    seed.bind(cid).state.set("budget", 300)
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    at = page.locator('#messages .message[data-message-id="reply/1?&#ü"]')
    at.locator('button[data-action="fork"]').click()  # dismissed: nothing is written
    assert page_log.dialogs and "new conversation" in page_log.dialogs[-1]
    expect(page.locator(".toast").last).to_contain_text("fork cancelled")
    assert not [m for m in seed.iter_conversations() if m.conversation_id.startswith(f"{cid}-")]
    page.remove_listener("dialog", page_log.dialog)  # the proposed id, accepted as it is
    page.once("dialog", lambda dialog: dialog.accept(dialog.default_value))
    at.locator('button[data-action="fork"]').click()
    page.wait_for_url(re.compile(re.escape(studio.at("/conversation?id=")) + f"{cid}-fork-"))
    new = page.url.split("id=", 1)[1]
    fork = seed.get_conversation(new)
    assert fork is not None
    assert fork.metadata["forked_from"] == {"conversation_id": cid, "message_id": "reply/1?&#ü"}
    messages = page.locator("#messages .message")
    expect(messages).to_have_count(2)
    expect(messages.nth(1).locator(".id")).to_have_text("reply/1?&#ü")
    assert [m.message_id for m in seed.get_messages(new)] == [first, "reply/1?&#ü"]
    assert seed.bind(new).state.get("budget") == 300
    # forking again into a taken id says so and writes nothing
    answer = page.request.post(
        studio.at("/api/fork"),
        data={"id": cid, "message_id": first, "new_id": new},
        headers={"origin": studio.url.rstrip("/"), "x-studio-token": _token(page)},
    )
    assert answer.status == 409 and "already exists" in answer.json()["error"]
    assert len(seed.get_messages(new)) == 2
    assert not page_log.errors


def test_fork_needs_the_token(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    first = seed.append_message(cid, "user", "hi")
    page.goto(studio.at(f"/conversation?id={cid}"))
    answer = page.request.post(
        studio.at("/api/fork"),
        data={"id": cid, "message_id": first, "new_id": f"{cid}-x"},
        headers={"origin": studio.url.rstrip("/")},
    )
    assert answer.status == 403
    assert seed.get_conversation(f"{cid}-x") is None


def _token(page: Page) -> str:
    token = page.locator('meta[name="studio-token"]').get_attribute("content")
    assert token
    return token

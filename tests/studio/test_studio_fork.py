"""The Studio's "Fork here" on a message, asserted in a real browser."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

import makers_store

from .conftest import PageLog, Studio, answer, wait_live


def test_fork_here_asks_for_an_id_in_the_page_then_opens_the_fork(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str, page_log: PageLog
) -> None:
    first = seed.append_message(cid, "user", "Plan a weekend in Lisbon", user_id="u_fork")
    seed.append_message(cid, "assistant", "Day one: Alfama", message_id="reply/1?&#ü")
    seed.append_message(cid, "user", "Make it cheaper")
    seed.bind(cid).state.set("budget", 300)
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    at = page.locator('#messages .message[data-message-id="reply/1?&#ü"]')
    at.locator('button[data-action="fork"]').click()  # cancelled: nothing is written
    assert "new conversation" in answer(page, yes=False)
    expect(page.locator(".toast").last).to_contain_text("fork cancelled")
    assert not [m for m in seed.iter_conversations() if m.conversation_id.startswith(f"{cid}-")]
    at.locator('button[data-action="fork"]').click()
    proposed = page.locator("#ask-input").input_value()
    assert proposed.startswith(f"{cid}-fork-")
    answer(page)  # the proposed id, accepted as it is
    page.wait_for_url(re.compile(re.escape(studio.at("/conversation?id=")) + f"{cid}-fork-"))
    new = page.url.split("id=", 1)[1]
    assert new == proposed
    expect(page.locator("#forked-from a")).to_have_text(cid)  # forked_from, a link
    expect(page.locator("#forked-from")).to_contain_text("reply/1?&#ü")
    fork = seed.get_conversation(new)
    assert fork is not None
    assert fork.metadata["forked_from"] == {"conversation_id": cid, "message_id": "reply/1?&#ü"}
    messages = page.locator("#messages .message")
    expect(messages).to_have_count(2)
    expect(messages.nth(1).locator(".id")).to_have_text("reply/1?&#ü")
    assert [m.message_id for m in seed.get_messages(new)] == [first, "reply/1?&#ü"]
    assert seed.bind(new).state.get("budget") == 300
    # forking again into a taken id says so and writes nothing
    taken = page.request.post(
        studio.at("/api/fork"),
        data={"id": cid, "message_id": first, "new_id": new},
        headers={"origin": studio.url.rstrip("/"), "x-studio-token": _token(page)},
    )
    assert taken.status == 409 and "already exists" in taken.json()["error"]
    assert len(seed.get_messages(new)) == 2
    # its own id, typed in the page's form; forked_from leads back to the message
    page.locator('#messages .message button[data-action="fork"]').first.click()
    answer(page, value=f"{cid}-chosen")
    page.wait_for_url(studio.at(f"/conversation?id={cid}-chosen"))
    assert seed.get_conversation(f"{cid}-chosen") is not None
    page.goto(studio.at(f"/conversation?id={new}"))
    page.click("#forked-from a")
    expect(page.locator("#messages .message.target")).to_have_attribute(
        "data-message-id", "reply/1?&#ü"
    )
    assert not page_log.errors and not page_log.dialogs  # no native prompt()


def test_fork_needs_the_token(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    first = seed.append_message(cid, "user", "hi")
    page.goto(studio.at(f"/conversation?id={cid}"))
    taken = page.request.post(
        studio.at("/api/fork"),
        data={"id": cid, "message_id": first, "new_id": f"{cid}-x"},
        headers={"origin": studio.url.rstrip("/")},
    )
    assert taken.status == 403
    assert seed.get_conversation(f"{cid}-x") is None


def _token(page: Page) -> str:
    token = page.locator('meta[name="studio-token"]').get_attribute("content")
    assert token
    return token

"""Live updates: what another process writes shows on an open page within 2 s."""

from __future__ import annotations

import subprocess
import sys
import time

from playwright.sync_api import Page, expect

import makers_store

from .conftest import Studio, wait_live

LIVE_MS = 2_000


def in_another_process(store_url: str, code: str) -> None:
    opening = f"import makers_store\nstore = makers_store.open_sync_store({store_url!r})\n"
    script = f"{opening}{code}\nstore.close()\n"
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


def test_a_message_appended_by_another_process_shows_within_two_seconds(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    seed.append_message(cid, "user", "first")
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    expect(page.locator("#messages .message")).to_have_count(1)
    in_another_process(
        studio.store_url, f"store.append_message({cid!r}, 'assistant', 'from elsewhere')"
    )
    written = time.monotonic()
    expect(page.locator("#messages .message").last).to_contain_text(
        "from elsewhere", timeout=LIVE_MS
    )
    assert time.monotonic() - written < LIVE_MS / 1000
    expect(page.locator("#message-count")).to_have_text("2", timeout=LIVE_MS)


def test_state_and_metadata_written_elsewhere_show_live(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    seed.append_message(cid, "user", "first")
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    in_another_process(
        studio.store_url,
        f"store.bind({cid!r}).state.set('pending_run', {{'step': 3}})\n"
        f"store.update_conversation({cid!r}, {{'title': 'Renamed'}})",
    )
    expect(page.locator('form.state-entry[data-key="pending_run"]')).to_be_visible(timeout=LIVE_MS)
    expect(page.locator("#metadata")).to_contain_text("Renamed", timeout=LIVE_MS)


def test_the_list_shows_a_new_conversation_live(page: Page, studio: Studio, cid: str) -> None:
    page.goto(studio.url)
    wait_live(page)
    in_another_process(studio.store_url, f"store.append_message({cid!r}, 'user', 'new')")
    expect(page.locator("#conversations tbody tr").first).to_contain_text(cid, timeout=LIVE_MS)


def test_a_burst_of_appends_shows_every_message_once(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    seed.append_message(cid, "user", "first")
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    in_another_process(
        studio.store_url,
        # one unit of 250: more than one page of new messages arrives at once
        f"store.append_messages({cid!r}, "
        "[{'role': 'assistant', 'content': f'burst {n}'} for n in range(250)])",
    )
    messages = page.locator("#messages .message")
    expect(messages).to_have_count(251)
    expect(messages.last).to_contain_text("burst 249")
    ids = page.eval_on_selector_all("#messages .message", "ms => ms.map(m => m.dataset.messageId)")
    assert len(set(ids)) == 251

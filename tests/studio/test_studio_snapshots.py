"""The Studio's Snapshots page (issue 34): list, save, restore with a
confirmation in the page, asserted in a real browser."""

from __future__ import annotations

from playwright.sync_api import Page, expect

import makers_store

from .conftest import PageLog, Studio, answer


def test_save_list_and_restore_with_confirmation(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, page_log: PageLog
) -> None:
    seed.append_message("kept", "user", "before the bug")
    page.goto(studio.at("/snapshots"))
    expect(page.locator("h1")).to_have_text("Snapshots")
    expect(page.locator("#snapshot-rows")).to_contain_text("No snapshots yet")
    page.fill("#snapshot-save input[name=name]", "before-bug")
    page.click("#snapshot-save button[type=submit]")
    row = page.locator('tr[data-snapshot="before-bug"]')
    expect(row).to_contain_text("before-bug")
    expect(row.locator("td").nth(3)).to_have_text("2")  # "first" (the fixture's) and "kept"
    assert [s.name for s in seed.admin.list_snapshots()] == ["before-bug"]

    seed.append_message("kept", "user", "the bug")
    seed.append_message("new", "user", "after")
    row.locator('button[data-action="snapshot-restore"]').click()
    asked = answer(page, yes=False)  # cancelled: nothing changes
    assert "Everything the store holds now is replaced" in asked and "before-bug" in asked
    assert seed.get_conversation("new") is not None
    row.locator('button[data-action="snapshot-restore"]').click()
    answer(page)
    expect(page.locator(".toast").last).to_contain_text("restored")
    assert seed.get_conversation("new") is None
    assert [m.content for m in seed.get_messages("kept")] == ["before the bug"]

    # saving over a name asks first
    seed.append_message("kept", "user", "later")
    page.fill("#snapshot-save input[name=name]", "before-bug")
    page.click("#snapshot-save button[type=submit]")
    assert "replace it" in answer(page)
    expect(page.locator(".toast").last).to_contain_text("saved")
    assert seed.admin.snapshot_info("before-bug").counts["messages"] == 3
    bad = page.request.post(  # the token guards it as every write
        studio.at("/api/snapshot-restore"),
        data={"name": "before-bug"},
        headers={"origin": studio.url.rstrip("/")},
    )
    assert bad.status == 403
    assert not page_log.errors and not page_log.dialogs

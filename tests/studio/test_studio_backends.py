"""The Studio on PostgreSQL and S3: the same pages, live within 2 s (PostgreSQL
through LISTEN/NOTIFY, S3 by polling a listing every second)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

import makers_store
from tests.backends import SHARED_BACKENDS, backend_url

from .conftest import start_studio, wait_live
from .test_studio_live import LIVE_MS, in_another_process


@pytest.mark.parametrize("kind", [kind for kind in SHARED_BACKENDS if kind != "sqlite"])
def test_pages_and_live_updates_on_other_backends(page: Page, kind: str, tmp_path: Path) -> None:
    url = backend_url(kind, tmp_path)
    with makers_store.open_sync_store(url) as store:
        store.append_message("shared", "user", "first", user_id="u1")
        store.bind("shared").state.set("step", 1)
    studio = start_studio(url)
    try:
        page.goto(studio.url)
        expect(page.locator("#conversations tbody tr")).to_contain_text("shared")
        page.goto(studio.at("/conversation?id=shared"))
        wait_live(page)
        expect(page.locator("#messages .message")).to_have_count(1)
        in_another_process(url, "store.append_message('shared', 'assistant', 'from elsewhere')")
        expect(page.locator("#messages .message").last).to_contain_text(
            "from elsewhere", timeout=LIVE_MS
        )
        in_another_process(url, "store.bind('shared').state.set('step', 2)")
        expect(page.locator('form.state-entry[data-key="step"] textarea')).to_have_value(
            "2", timeout=LIVE_MS
        )
    finally:
        studio.stop()

"""What a person reads in the Studio (issue 23, items 4 and 14): stored
control and bidi characters shown visibly, as the CLI shows them; times in
the browser's local time with UTC on hover, relative in lists; a Merge box
that cannot blank the title by accident."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Browser, Page, expect

import makers_store
from makers_store.emulator.studio.config import HERE as STUDIO_DIR
from makers_store.text import UNSAFE, printable

from .conftest import SHOWN_MS, PageLog, Studio, answer, wait_live

#: U+202E shows "abc" as "cba"; ESC starts a colour; BEL, DEL, a C1 control, an isolate
TRICKY = "abc\u202edef \x1b[31mRED\x1b[0m \x07\x7f\x85 \u2067x\u2069"
SHOWN = printable(TRICKY)  # abc\u202edef \x1b[31mRED\x1b[0m \x07\x7f\x85 \u2067x\u2069
#: the browser's time zone in these tests: UTC+9 all year, so local differs from UTC
ZONE = "Asia/Tokyo"


def no_raw_controls(page: Page) -> None:
    """Nothing on the page (text, titles, the tab's title) holds a character
    makers_store.text.UNSAFE escapes."""
    texts = page.evaluate(
        """() => [document.title, document.body.innerText,
                  ...Array.from(document.querySelectorAll('[title]'), (e) => e.title)]"""
    )
    for text in texts:
        found = UNSAFE.search(text)
        assert found is None, f"raw {found.group()!r} shown in {text[:200]!r}"


@pytest.fixture
def tokyo(browser: Browser, page_log: PageLog) -> Iterator[Page]:
    """A page whose browser lives in Tokyo."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, timezone_id=ZONE)
    opened = context.new_page()
    opened.set_default_timeout(SHOWN_MS)
    opened.on("dialog", page_log.dialog)
    opened.on("console", page_log.console)
    yield opened
    context.close()


def test_the_script_escapes_what_the_server_escapes() -> None:
    """studio.js mirrors makers_store.text.UNSAFE (one set of characters, two languages)."""
    script = (Path(STUDIO_DIR) / "static" / "studio.js").read_text(encoding="utf-8")
    found = re.search(r"const UNSAFE = /(\[[^\]]*\])/gu;", script)
    assert found, "studio.js defines UNSAFE as a /[...]/gu character class"
    mirrored = re.compile(found.group(1))  # JS and Python spell \xNN and \uNNNN alike
    differ = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if bool(mirrored.match(chr(code))) != bool(UNSAFE.match(chr(code)))
    ]
    assert differ == []


def test_control_and_bidi_characters_show_as_escapes(
    page: Page,
    studio: Studio,
    seed: makers_store.SyncContextStore,
    cid: str,
    artifacts: Path,
    page_log: PageLog,
) -> None:
    seed.append_message(cid, "user", TRICKY, metadata={"note": TRICKY})
    seed.append_message(cid, "assistant", [{"type": "text", "text": TRICKY}])
    seed.update_conversation(cid, {"title": TRICKY})
    seed.bind(cid).state.set(f"key{TRICKY}", {"value": TRICKY})
    page.goto(studio.at(f"/?q={cid}"))
    expect(page.locator("table.rows td.title").first).to_have_text(SHOWN)
    no_raw_controls(page)
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    expect(page.locator("#conversation-title")).to_have_text(SHOWN)
    messages = page.locator("#messages .message .part pre")
    expect(messages.first).to_have_text(SHOWN)
    expect(messages.nth(1)).to_have_text(SHOWN)
    expect(page.locator("#panel-state .key")).to_have_text(f"key{SHOWN}")
    no_raw_controls(page)
    assert page.title().startswith("abc\\u202edef")
    page.screenshot(path=artifacts / "control-characters.png", full_page=True)
    # the state's JSON escapes them the JSON way: saved back unchanged, and the
    # key (sent back exactly, not as shown) still names the entry
    entry = page.locator("form.state-entry")
    assert "\\u202e" in entry.locator("textarea").input_value()
    entry.locator("button[type=submit]").click()
    expect(page.locator(".toast")).to_contain_text("state saved")
    assert seed.bind(cid).state.items() == {f"key{TRICKY}": {"value": TRICKY}}
    page.click('button[data-action="state-delete"]')
    assert answer(page) == f"Delete state key key{SHOWN}?"
    expect(page.locator("form.state-entry")).to_have_count(0)
    assert seed.bind(cid).state.items() == {}


def test_times_are_local_with_utc_on_hover_and_relative_in_lists(
    tokyo: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    seed.append_message(cid, "user", "what time is it")
    message = seed.get_messages(cid)[0]
    at = datetime.fromtimestamp(message.created_at / 1000, UTC)
    local = at.astimezone(ZoneInfo(ZONE)).strftime("%Y-%m-%d %H:%M:%S")
    utc = at.strftime("%Y-%m-%d %H:%M:%S UTC")
    tokyo.goto(studio.at(f"/conversation?id={cid}"))
    shown = tokyo.locator("#messages .message time").first
    expect(shown).to_have_text(local)
    expect(shown).to_have_attribute("title", utc)
    created = tokyo.locator("#panel-meta dd time").first
    expect(created).to_have_text(local)
    tokyo.goto(studio.at(f"/?q={cid}"))
    last = tokyo.locator("table.rows td.time time").first
    expect(last).to_have_text(re.compile(r"^(just now|\d+ s ago)$"))
    expect(last).to_have_attribute("title", f"{local} local, {utc}")


def test_times_in_fragments_loaded_later_are_local_too(
    tokyo: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    seed.append_message(cid, "user", "first")
    tokyo.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(tokyo)
    seed.append_message(cid, "assistant", "second, while the page is open")
    later = tokyo.locator("#messages .message").nth(1).locator("time")
    expect(later).to_have_attribute("title", re.compile(r" UTC$"))
    expect(later).not_to_have_text(re.compile("UTC"))


def test_the_merge_box_is_empty_and_cannot_blank_the_title(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    seed.append_message(cid, "user", "hi")
    seed.update_conversation(cid, {"title": "Keep me"})
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    box = page.locator('form[data-action="meta"] textarea')
    expect(box).to_have_value("")
    expect(box).to_have_attribute("placeholder", re.compile(r'^\{"title": ".+"\}$'))
    page.click('form[data-action="meta"] button[type=submit]')  # nothing typed: nothing sent
    page.wait_for_timeout(300)
    expect(page.locator(".toast")).to_have_count(0)
    meta = seed.get_conversation(cid)
    assert meta is not None and meta.metadata == {"title": "Keep me"}

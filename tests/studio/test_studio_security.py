"""The Studio's security model: user content is text, writes need the token
and the same origin, other hosts are refused."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from playwright.sync_api import Page, expect

import makers_store

from .conftest import PageLog, Studio, wait_live

IMG = '<img src=x onerror="window.__xss=1;alert(1)">'
SCRIPT = "</script><script>window.__xss=2;alert(2)</script>"


def test_user_content_is_shown_as_text_and_runs_nothing(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str, page_log: PageLog
) -> None:
    seed.append_message(cid, "user", IMG, metadata={"note": SCRIPT})
    seed.append_message(cid, "assistant", [{"type": "text", "text": SCRIPT}, {"type": IMG}])
    seed.update_conversation(cid, {"title": IMG + SCRIPT, IMG: SCRIPT})
    seed.bind(cid).state.set(IMG, {"html": SCRIPT})
    page.goto(studio.at(f"/?q={cid}"))
    expect(page.locator("table.rows").first).to_contain_text(IMG + SCRIPT)
    page.goto(studio.at(f"/conversation?id={cid}"))
    wait_live(page)
    transcript = page.locator("#messages")
    expect(transcript.locator(".message").first).to_contain_text(IMG)
    expect(transcript.locator(".message").nth(1)).to_contain_text(SCRIPT)
    expect(page.locator("#conversation-title")).to_have_text(IMG + SCRIPT)
    expect(page.locator("#metadata")).to_contain_text(SCRIPT)
    state = page.locator("#panel-state textarea").first
    assert SCRIPT in state.input_value()
    expect(page.locator("#panel-state")).to_contain_text(IMG)
    page.locator("#messages details summary").first.click()  # the metadata, opened
    assert page.evaluate("window.__xss") is None
    assert page.locator("#main img").count() == 0
    assert page_log.dialogs == []
    # the live refresh re-renders the same values: still text
    seed.append_message(cid, "user", IMG)
    expect(transcript.locator(".message")).to_have_count(3)
    assert page.evaluate("window.__xss") is None
    assert page_log.dialogs == []


def _post(studio: Studio, path: str, body: object, headers: dict[str, str]) -> int:
    request = urllib.request.Request(
        studio.at(path), data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return refused.code


def test_a_write_without_the_token_or_from_another_origin_is_refused(
    page: Page, studio: Studio, seed: makers_store.SyncContextStore, cid: str
) -> None:
    seed.append_message(cid, "user", "hi")
    seed.bind(cid).state.set("k", "before")
    page.goto(studio.at(f"/conversation?id={cid}"))
    token = page.locator('meta[name="studio-token"]').get_attribute("content")
    assert token
    body = {"id": cid, "key": "k", "value": '"after"'}
    origin = studio.url.rstrip("/")
    json_type = {"content-type": "application/json"}
    # no token, from the page itself
    answer = page.request.post(studio.at("/api/state"), data=body, headers={"origin": origin})
    assert answer.status == 403
    assert "x-studio-token" in answer.json()["error"]
    # a wrong token
    wrong = {**json_type, "origin": origin, "x-studio-token": "guess"}
    assert _post(studio, "/api/state", body, wrong) == 403
    # the right token from another origin (a page elsewhere that learnt it)
    elsewhere = {**json_type, "origin": "http://evil.example", "x-studio-token": token}
    assert _post(studio, "/api/state", body, elsewhere) == 403
    # the right token without any origin
    assert _post(studio, "/api/state", body, {**json_type, "x-studio-token": token}) == 403
    assert seed.bind(cid).state.get("k") == "before"
    # a page served under another name (DNS rebinding) is refused outright
    rebound = urllib.request.Request(studio.url, headers={"host": "evil.example"})
    try:
        urllib.request.urlopen(rebound, timeout=10)
        raise AssertionError("another Host was served")
    except urllib.error.HTTPError as refused:
        assert refused.code == 403
    # the same write with token and origin goes through
    right = {**json_type, "origin": origin, "x-studio-token": token}
    assert _post(studio, "/api/state", body, right) == 200
    assert seed.bind(cid).state.get("k") == "after"


def test_pages_forbid_inline_script_and_framing(page: Page, studio: Studio) -> None:
    answer = page.goto(studio.url)
    assert answer is not None
    headers = answer.headers
    assert "script-src 'self'" in headers["content-security-policy"]
    assert "unsafe-inline" not in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"
    assert headers["x-content-type-options"] == "nosniff"

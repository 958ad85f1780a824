"""Each test app used as a user uses it, in chromium, through serve's port alone
(``--instances 3``): the chat page streams, remembers, reloads with its history and
stops; it works at the URL serve prints and at ``http://localhost:PORT`` (a Next.js page
hydrates at both); an edit of a frontend file reaches the open page without a reload
(Vite's HMR and Next's Fast Refresh, over their WebSockets through serve's port).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from .conftest import RunningApp

pytestmark = pytest.mark.slow

#: how long a page may take to show what a test waits for (ms); a Next.js page compiles
#: on its first load, and a hot update on 2 busy cores takes seconds
SHOWN_MS = 30_000


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context (its own localStorage: a new conversation) and page; the test
    fails if the page throws (a page that never hydrates throws or logs nothing useful, so
    the tests also act through the page's handlers, which need hydration)."""
    context = browser.new_context()
    opened = context.new_page()
    opened.set_default_timeout(SHOWN_MS)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert not errors, errors


def status_line(page: Page) -> Locator:
    """The page's status line (Next.js's dev indicator is a `status` too, outside `main`)."""
    return page.locator('main [role="status"]')


def status(page: Page) -> str:
    return status_line(page).inner_text()


def send(page: Page, message: str) -> None:
    box = page.get_by_label("Message")
    box.fill(message)
    box.press("Enter")


def replies(page: Page) -> list[str]:
    return page.locator(".messages li.assistant").all_inner_texts()


def test_chat_streams_remembers_reloads_and_stops(app: RunningApp, page: Page) -> None:
    chat_instances: list[str | None] = []
    page.on("response", lambda response: chat_instances.append(
        response.headers.get("makers-instance")) if response.url.endswith("/chat") else None)
    page.goto(app.printed_url)
    expect(status_line(page)).to_have_text("ready", timeout=SHOWN_MS)
    expect(page.get_by_test_id("title")).to_have_text(app.heading, timeout=SHOWN_MS)

    send(page, "my name is Ada")
    expect(status_line(page)).to_have_text("done", timeout=SHOWN_MS)
    assert replies(page) == ['Turn 1: you said "my name is Ada".']
    assert page.get_by_label("Message").input_value() == ""

    # the second turn goes to another instance (conversations rotate): the store remembers
    send(page, "who am I")
    expect(status_line(page)).to_have_text("done", timeout=SHOWN_MS)
    assert replies(page)[-1] == ('Turn 2: you said "who am I". '
                                 'Your first message was "my name is Ada".')
    assert len(set(chat_instances)) == 2, chat_instances  # each turn on its own instance

    # a slow answer streams into the page piece by piece, and Stop ends it
    send(page, "count to 60")
    reply = page.locator(".messages li.assistant").last
    expect(reply).to_contain_text("3 ", timeout=SHOWN_MS)
    assert status(page) == "streaming"
    shown_before_stop = reply.inner_text()
    assert "60." not in shown_before_stop
    clicked = time.monotonic()
    page.get_by_role("button", name="Stop").click()
    expect(status_line(page)).to_have_text("stopped", timeout=SHOWN_MS)
    assert time.monotonic() - clicked < 5.0
    stopped_at = reply.inner_text()
    assert stopped_at.startswith(shown_before_stop) and "60." not in stopped_at
    expect(page.get_by_role("button", name="Stop")).to_be_disabled(timeout=SHOWN_MS)

    # a reload shows the conversation as the store kept it, the stopped answer included
    shown = page.locator(".messages li").all_inner_texts()
    page.reload()
    expect(status_line(page)).to_have_text("ready", timeout=SHOWN_MS)
    expect(page.locator(".messages li")).to_have_count(6, timeout=SHOWN_MS)
    assert page.locator(".messages li").all_inner_texts() == shown


def test_the_app_works_at_localhost(app: RunningApp, page: Page) -> None:
    # Next.js's dev server refuses its dev resources to origins it does not know: a page
    # that did not hydrate would show, and never answer Enter
    page.goto(app.localhost_url)
    expect(status_line(page)).to_have_text("ready", timeout=SHOWN_MS)
    send(page, "hello from localhost")
    expect(status_line(page)).to_have_text("done", timeout=SHOWN_MS)
    assert replies(page) == ['Turn 1: you said "hello from localhost".']


def test_an_edited_frontend_file_reaches_the_open_page(app: RunningApp, page: Page) -> None:
    sockets: list[str] = []
    page.on("websocket", lambda socket: sockets.append(socket.url))
    page.goto(app.printed_url)
    expect(status_line(page)).to_have_text("ready", timeout=SHOWN_MS)
    send(page, "before the edit")
    expect(status_line(page)).to_have_text("done", timeout=SHOWN_MS)
    page.evaluate("window.notReloaded = true")
    original = app.heading_file.read_text(encoding="utf-8")
    edited = app.heading + " (edited)"
    started = time.monotonic()
    try:
        app.heading_file.write_text(original.replace(app.heading, edited), encoding="utf-8")
        expect(page.get_by_test_id("title")).to_have_text(edited, timeout=SHOWN_MS)
        print(f"{app.name}: hot update shown {time.monotonic() - started:.1f}s after the edit")
        # the hot-reload socket is serve's port, the only one the page knows
        port = f":{app.server.port}/"
        assert sockets and all(port in url for url in sockets), sockets
        # updated in place: the page was not reloaded and the chat is still on it
        assert page.evaluate("window.notReloaded") is True
        assert replies(page) == ['Turn 1: you said "before the edit".']
    finally:
        app.heading_file.write_text(original, encoding="utf-8")


@pytest.mark.parametrize("app", ["vite-react-node"], indirect=True)
def test_the_middleware_guards_the_agents_and_not_the_page(app: RunningApp) -> None:
    # middleware.ts, as an auth template's: its matcher names the agents' routes only
    with app.server.client() as client:
        page = client.get("/")
        assert page.status_code == 200 and '<div id="root">' in page.text
        for path, body in [("/chat", {"message": "hi"}), ("/stop", {"conversation_id": "mw"}),
                           ("/history", {"conversation_id": "mw"})]:
            refused = client.post(path, json=body, headers={"makers-conversation-id": "mw"})
            assert refused.status_code == 401, (path, refused.text)
            assert refused.json() == {"error": "sign in first"}
        signed_in = client.post("/history", json={"conversation_id": "mw"},
                                headers={"cookie": "session=s-42"})
        assert signed_in.json() == {"messages": [], "session": "s-42"}  # next({headers})

"""The Studio's browser tests: a real ``makers-store studio`` process, driven
by Playwright in Debian's chromium (Playwright cannot download browsers here;
.ci/run installs chromium with apt when it is missing).

Screenshots go to ``$MAKERS_TEST_ARTIFACTS/studio`` (default: a pytest temp
directory, printed at the end of the session).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Dialog, Page, sync_playwright

import makers_store

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: how long a page may take to show what the test waits for (ms)
SHOWN_MS = 5_000


@dataclass
class Studio:
    url: str  # http://127.0.0.1:PORT/ (ends with /)
    store_url: str
    process: subprocess.Popen[str]
    #: everything the process printed, read by a thread so that its pipe never fills
    output: list[str] = field(default_factory=list)
    drained: threading.Thread = field(init=False)

    def __post_init__(self) -> None:
        assert self.process.stdout is not None
        self.drained = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self.drained.start()

    def at(self, path: str) -> str:
        return self.url.rstrip("/") + path

    def assert_running(self) -> None:
        """Fail with what the process printed if it has exited."""
        code = self.process.poll()
        if code is not None:
            self.drained.join(5)
            raise AssertionError(f"the studio exited with {code}:\n" + "".join(self.output))

    def _read(self, stream: IO[str]) -> None:
        with stream:  # closed here, by its only reader, at the end of the output
            for line in stream:
                self.output.append(line)

    def stop(self) -> None:
        end(self.process)
        self.drained.join(10)


def studio_process(
    store_url: str, *args: str, stderr: int = subprocess.STDOUT
) -> subprocess.Popen[str]:
    """``makers-store studio --store URL --port 0 ARGS`` in a process of its own."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "makers_store.cli.main",
            "studio",
            "--store",
            store_url,
            "--port",
            "0",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        # a crash prints every thread's Python stack (read by Studio.assert_running)
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
    )


def start_studio(store_url: str) -> Studio:
    """``makers-store studio --port 0`` in a process of its own, once it answers."""
    process = studio_process(store_url)
    assert process.stdout is not None
    seen = []
    for line in process.stdout:
        seen.append(line)
        found = re.search(r"http://127\.0\.0\.1:\d+/", line)
        if found:
            return Studio(found.group(0), store_url, process, seen)
    raise AssertionError("the studio did not start:\n" + "".join(seen))


def warm_up(studio: Studio) -> None:
    """Open a conversation page once, unhurried: its first framework panel
    imports LangGraph (seconds on a loaded machine), which a test's page
    load must not wait for within :data:`SHOWN_MS`."""
    with urllib.request.urlopen(studio.at("/conversation?id=first"), timeout=120) as answer:
        answer.read()


def end(process: subprocess.Popen[str]) -> None:
    """SIGTERM, then SIGKILL if it is still running 10 s later."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def stop(process: subprocess.Popen[str]) -> None:
    """End a process no thread reads from, and close its pipes."""
    end(process)
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = os.environ.get("MAKERS_TEST_ARTIFACTS")
    folder = Path(root) / "studio" if root else tmp_path_factory.mktemp("studio-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# Package scope, not session: Playwright's sync API keeps an event loop
# running on the main thread while it is open, and every async test after
# this package would then fail with "cannot be called from a running event loop".
@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    folder = tmp_path_factory.mktemp("studio-store")
    url = f"sqlite:///{folder}/store.db"
    with makers_store.open_sync_store(url) as store:  # the studio opens existing stores only
        store.append_message("first", "user", "hello", user_id="u_first")
    started = start_studio(url)
    warm_up(started)
    yield started
    started.stop()


@pytest.fixture(autouse=True)
def studio_still_running(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test that used the module's studio: it must still be running
    (a crash names its exit code and output instead of later tests' refused connections)."""
    yield
    if "studio" in request.fixturenames:
        request.getfixturevalue("studio").assert_running()


@pytest.fixture
def seed(studio: Studio) -> Iterator[makers_store.SyncContextStore]:
    """The Studio's store, opened separately: seeds and reads back through the library."""
    with makers_store.open_sync_store(studio.store_url) as store:
        yield store


@pytest.fixture
def cid() -> str:
    """A conversation id no other test uses."""
    return f"c-{uuid.uuid4().hex[:10]}"


class PageLog:
    """What a page did that a test may need to assert it did not do (the
    Studio opens no native dialog: it asks in the page, see :func:`answer`)."""

    def __init__(self) -> None:
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        #: whether confirmations are accepted (else dismissed)
        self.accept = False

    def dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        if self.accept:
            dialog.accept()
        else:
            dialog.dismiss()

    def console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(message.text)


@pytest.fixture
def page_log() -> PageLog:
    return PageLog()


@pytest.fixture
def page(browser: Browser, page_log: PageLog) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    opened = context.new_page()
    opened.set_default_timeout(SHOWN_MS)
    opened.on("dialog", page_log.dialog)
    opened.on("console", page_log.console)
    yield opened
    context.close()


def wait_live(page: Page) -> None:
    """Until the page's event stream is open (the header says "live")."""
    page.locator("#live.on").wait_for()


def answer(page: Page, *, yes: bool = True, value: str | None = None) -> str:
    """Answer the Studio's in-page question (its ``<dialog id="ask">``): OK
    (with ``value`` typed into its field, if given) or Cancel; returns what it asked."""
    dialog = page.locator("dialog#ask[open]")
    dialog.wait_for()
    asked = dialog.locator("#ask-text").inner_text()
    if value is not None:
        dialog.locator("#ask-input").fill(value)
    dialog.locator("#ask-yes" if yes else "#ask-no").click()
    dialog.wait_for(state="hidden")
    return asked

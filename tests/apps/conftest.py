"""The whole-app tests: three small chat apps shaped like the official templates, each run by
one ``makers-store serve --instances 3`` (frontend dev server included) and driven in Debian's
chromium through serve's port alone.

The apps are committed projects (``vite-react-node/``, ``next-node/``, ``vite-python/``); their
npm packages come from their committed lock files, installed with ``npm ci`` on first use
(.ci/run installs them before the suite, out of its timings). The tests run the apps in place:
the dev servers' caches (``node_modules/.vite``, ``.next/``) are git-ignored.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.node.harness import npm_ci
from tests.serve.harness import Server, pid_alive, serving
from tests.studio.conftest import CHROMIUM, CHROMIUM_ARGS

HERE = Path(__file__).resolve().parent
#: app -> the file that holds its heading, and the heading's text
APPS = {
    "vite-react-node": ("src/Title.tsx", "Vite chat"),
    "next-node": ("app/Title.tsx", "Next chat"),
    "vite-python": ("src/title.js", "Python chat"),
}
#: how long the first page may take: Next compiles it on first request (slow on 2 cores)
FIRST_PAGE_TIMEOUT_S = 180.0
#: how long one request for it may take (asked again until FIRST_PAGE_TIMEOUT_S)
PAGE_REQUEST_TIMEOUT_S = 30.0


@dataclass
class RunningApp:
    name: str
    project: Path
    server: Server
    #: the app's URL as serve's banner prints it (ends with /)
    printed_url: str
    heading_file: Path
    heading: str

    @property
    def localhost_url(self) -> str:
        return f"http://localhost:{self.server.port}/"


def printed_app_url(log: str, port: int) -> str:
    """The first URL on serve's port that serve printed: the app's."""
    found = re.search(rf"http://[\w.\[\]:-]+:{port}/?", log)
    assert found, f"serve printed no URL on port {port}:\n{log}"
    return found.group(0).rstrip("/") + "/"


def processes_in(folder: Path) -> list[str]:
    """The command lines of the processes whose working directory is in ``folder``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            if Path(cwd).is_relative_to(folder) and pid_alive(int(entry.name)):
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


def wait_for_the_page(url: str, server: Server) -> None:
    """Until ``url`` answers with the app's HTML (the dev server may still be starting)."""
    deadline = time.monotonic() + FIRST_PAGE_TIMEOUT_S
    last = ""
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(f"serve exited with {server.process.returncode}:\n{server.log()}")
        try:
            answer = httpx.get(url, timeout=PAGE_REQUEST_TIMEOUT_S)
            last = f"{answer.status_code} {answer.text[:300]}"
            if answer.status_code == 200 and "<html" in answer.text.lower():
                return
        except httpx.HTTPError as error:
            last = repr(error)
        time.sleep(0.5)
    raise AssertionError(f"{url} did not serve the app ({last}):\n{server.log()}")


# Package scope: Playwright's sync API keeps an event loop running while it is open (see
# tests/studio/conftest.py).
@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture(scope="module", params=list(APPS))
def app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
        ) -> Iterator[RunningApp]:
    name: str = request.param
    project = HERE / name
    npm_ci(project)
    folder = tmp_path_factory.mktemp(name)
    heading_path, heading = APPS[name]
    with serving(project, folder / "serve.log", "--store", f"sqlite:///{folder / 'store.db'}",
                 "--instances", "3", env={"NEXT_TELEMETRY_DISABLED": "1"}) as server:
        started = time.monotonic()
        wait_for_the_page(server.base_url + "/", server)
        print(f"{name}: first page in {time.monotonic() - started:.1f}s")
        url = printed_app_url(server.log(), server.port)
        assert processes_in(project), "no process runs in the project: where is its dev server?"
        yield RunningApp(name, project, server, url, project / heading_path, heading)
    # the dev server, its workers (Next's, esbuild's) and npx: all gone with serve
    deadline = time.monotonic() + 10
    while processes_in(project) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_in(project), f"left running after serve stopped: {processes_in(project)}"

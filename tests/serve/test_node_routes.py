"""Which Node files serve routes, and what serve checks before starting Node workers."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from makers_store.emulator.runtime.node import setup as node_setup
from makers_store.emulator.runtime.project.node_entry import function_entry_label
from makers_store.emulator.runtime.project.routes import discover

from .harness import write_project


def test_node_files_are_routed_next_to_python_ones(tmp_path: Path) -> None:
    project = write_project(tmp_path, {
        "agents/chat.ts": "export async function onRequest(context: any) {}\n",
        "agents/research/index.ts": "export async function onRequest(context: any) {}\n",
        "agents/stop.mjs": "export async function onRequest(context) {}\n",
        "agents/_shared.ts": "export const x = 1;\n",
        "agents/types.d.ts": "export type X = number;\n",
        "agents/node_modules/pkg/index.js": "export function onRequest() {}\n",
        "agents/same.py": "async def handler(ctx):\n    return 1\n",
        "agents/same.ts": "export async function onRequest() {}\n",
        "cloud-functions/api/users/[id].ts": "export function onRequestGet(context) {}\n",
        "cloud-functions/express/[[default]].js": "const app = 1;\nexport default app;\n",
        "cloud-functions/lib/format.ts": "export const format = (s: string) => s;\n",
    })
    routes = discover(project)
    agents = {route.path: (route.relative, route.language) for route in routes.agents}
    assert agents == {
        "/chat": ("agents/chat.ts", "node"),
        "/research": ("agents/research/index.ts", "node"),
        "/stop": ("agents/stop.mjs", "node"),
        "/same": ("agents/same.py", "python"),
    }
    assert any("agents/same.ts: not routed (agents/same.py already answers /same)" in warning
               for warning in routes.warnings)
    functions = {route.shown_path: (route.entry_label, route.methods) for route in routes.functions}
    assert functions == {
        "/api/users/[id]": ("onRequestGet", "ANY"),
        "/express/[[default]]": ("default export (Express/Koa app)", "ANY"),
    }
    assert routes.helpers == ("cloud-functions/lib/format.ts",)
    found = routes.function_for("/express/a/b")
    assert found is not None and found[1] == {"default": "a/b"}


@pytest.mark.parametrize(
    ("source", "label"),
    [
        ("export const onRequest = async (context) => new Response('x');", "onRequest"),
        ("export async function onRequestPost(c) {}\nexport function onRequestGet(c) {}",
         "onRequestGet, onRequestPost"),
        ("async function handle(c) {}\nexport { handle as onRequestPut };", "onRequestPut"),
        ("exports.onRequest = async function (context) {};", "onRequest"),
        ("export default app;", "default export (Express/Koa app)"),
        ("export function render() {}", None),
        ("// export async function onRequest() {}  (commented out, indented)", None),
    ],
)
def test_cloud_function_entry_patterns(tmp_path: Path, source: str, label: str | None) -> None:
    file = tmp_path / "f.ts"
    file.write_text(source, encoding="utf-8")
    assert function_entry_label(file) == label


def _fake_node(folder: Path, version: str) -> str:
    script = folder / "node"
    script.write_text(f"#!/bin/sh\necho {version}\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_node_missing_or_too_old_stops_serve_with_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = write_project(tmp_path / "p", {"agents/a.js": "export function onRequest() {}\n"})
    routes = discover(project)
    monkeypatch.setenv(node_setup.NODE_ENV, _fake_node(tmp_path, "v18.19.0"))
    too_old = re.escape("Node.js v18.19.0; the platform runs Node 20")
    with pytest.raises(node_setup.NodeSetupError, match=too_old):
        node_setup.prepare_node(project, routes)
    monkeypatch.delenv(node_setup.NODE_ENV)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(node_setup.NodeSetupError, match="`node` is not on PATH"):
        node_setup.prepare_node(project, routes)


def test_plain_javascript_needs_no_loader_and_python_projects_no_node(tmp_path: Path) -> None:
    js = write_project(tmp_path / "js", {"agents/a.mjs": "export function onRequest() {}\n"})
    runtime = node_setup.prepare_node(js, discover(js))
    assert runtime is not None and runtime.tsx_loader is None
    py = write_project(tmp_path / "py", {"agents/a.py": "async def handler(ctx):\n    pass\n"})
    assert node_setup.prepare_node(py, discover(py)) is None


def test_missing_node_modules_is_reported(tmp_path: Path) -> None:
    project = write_project(tmp_path, {"package.json": '{"dependencies": {"zod": "^3"}}'})
    warnings = node_setup.project_warnings(project)
    assert len(warnings) == 1 and "run `npm install`" in warnings[0]
    (project / "node_modules").mkdir()
    assert node_setup.project_warnings(project) == []


@pytest.mark.slow
def test_tsx_is_installed_from_npm_once_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(node_setup.CACHE_ENV, str(tmp_path / "cache"))
    node = node_setup.prepare_node  # the real Node on PATH
    project = write_project(tmp_path / "p", {"agents/a.ts": "export function onRequest() {}\n"})
    said: list[str] = []
    runtime = node(project, discover(project), said.append)
    assert runtime is not None and runtime.tsx_loader is not None
    assert os.path.isfile(runtime.tsx_loader)
    assert runtime.tsx_loader.startswith(str(tmp_path / "cache" / f"tsx-{node_setup.TSX_VERSION}"))
    assert len(said) == 1 and "installing the TypeScript loader tsx" in said[0]
    node(project, discover(project), said.append)
    assert len(said) == 1  # installed once

"""The documentation: a short README, one page per topic in docs/, every link
and anchor resolving, and the generated CLI reference current (regenerate it
with ``python -m devtools.cli_reference``)."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
import typer.main

from devtools import ROOT, cli_reference
from makers_store.cli.main import app

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]
#: What the README must stay under, in bytes (issue 22).
README_LIMIT = 15_000


def without_code(text: str) -> str:
    """``text`` without its fenced code blocks and code spans."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        slug = cli_reference.anchor(heading.replace("`", ""))
        found.add(slug if slug not in found else f"{slug}-1")
    return found


def test_the_cli_reference_is_current() -> None:
    assert cli_reference.TARGET == DOCS / "cli-reference.md"
    current = cli_reference.TARGET.read_text(encoding="utf-8") == cli_reference.render()
    assert current, "run: python -m devtools.cli_reference"
    done = subprocess.run(
        [sys.executable, "-m", "devtools.cli_reference", "--check"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_changed_command_makes_the_reference_stale(tmp_path: Path) -> None:
    page = tmp_path / "cli-reference.md"
    assert cli_reference.main([str(page)]) == 0
    assert not cli_reference.stale(page)
    page.write_text(page.read_text().replace("rebuild", "rebuilt"))
    assert cli_reference.stale(page)
    assert cli_reference.main(["--check", str(page)]) == 1


@pytest.mark.parametrize("key", ["purelib", "platlib"])
def test_the_reference_generator_refuses_site_packages(key: str) -> None:
    target = Path(sysconfig.get_paths()[key]) / "makers-store-cli-reference-probe.md"
    with pytest.raises(SystemExit, match="refusing to write"):
        cli_reference.main([str(target)])
    assert not target.exists()


def test_the_reference_has_every_option_and_argument() -> None:
    reference = cli_reference.TARGET.read_text(encoding="utf-8")
    parts = re.split(r"^#+ (makers-store[^\n]*)$", reference, flags=re.M)
    sections = dict(zip(parts[1::2], parts[2::2], strict=True))

    def walk(command: Any, path: str) -> None:
        section = sections[path]
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            if param.param_type_name == "option":
                name = param.opts[0]
                assert f"`{name}" in section or f", {name}" in section, (path, name)
            else:
                name = (param.metavar or param.name).lower()
                assert f"`{name}" in section.lower(), (path, name)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "makers-store")


def test_the_readme_is_short_and_links_the_docs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode("utf-8")) < README_LIMIT
    assert "(docs/index.md)" in readme and "(CHANGELOG.md)" in readme


def test_the_index_lists_every_page() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    for page in DOCS.glob("*.md"):
        if page.name != "index.md":
            assert f"]({page.name})" in index, page.name


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_page_opens_with_a_paragraph(page: Path) -> None:
    lines = [line for line in page.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert lines[0].startswith("# "), page.name
    first = next(line for line in lines[1:] if not line.startswith("<!--"))
    assert not first.startswith(("#", "|", "```", "-")), (page.name, first)


#: What docs/studio.md must name, each with the page and anchor it links (issue 32):
#: the Studio's own actions and the CLI's lifecycle tools it leaves to the CLI.
STUDIO_LINKS = {
    "prune": "lifecycle.md#retention",
    "vacuum": "lifecycle.md#vacuum-giving-back-the-space-deletes-leave",
    "doctor": "lifecycle.md#history-doctor",
    "fork": "lifecycle.md#fork",
    "window": "lifecycle.md#the-context-window-summary-plus-the-latest-messages",
    "summarize": "lifecycle.md#the-context-window-summary-plus-the-latest-messages",
    "Check history": "lifecycle.md#history-doctor",
    "Fork here": "lifecycle.md#fork",
}


def test_the_studio_page_names_and_links_the_lifecycle_tools() -> None:
    text = (DOCS / "studio.md").read_text(encoding="utf-8")
    for word, target in STUDIO_LINKS.items():
        assert word in text, word
        assert f"]({target})" in text, target


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_link_resolves(page: Path) -> None:
    for target in re.findall(r"\]\(([^)\s]+)\)", without_code(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target}"
        if fragment and linked.suffix == ".md":
            assert fragment in anchors(linked), f"{page.name}: {target}"


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda page: page.name)
def test_figures_in_the_docs_carry_no_history(page: Path) -> None:
    """What a figure was before goes to CHANGELOG.md; the docs say what is."""
    text = page.read_text(encoding="utf-8")
    for pattern in (r"\(was\b", r"\bwas \d", r"\bused to\b", r"before this change"):
        assert not re.search(pattern, text), (page.name, pattern)

"""Which Node files a Makers project routes, and how they are entered.

The platform's Node runtime (its node-entry and node-functions docs) loads
``agents/**/*.ts`` and ``cloud-functions/**/*.{ts,js,mjs}`` and calls the
exported ``onRequest`` (or, first, the method's own ``onRequestPost``,
``onRequestGet``...) with ``context``; a cloud function may instead
``export default`` an Express or Koa app. Agents are routed whatever they
export (a file without a handler answers 500 naming it, as a Python agent
without ``handler`` does); a cloud-function file is routed only when it has
one of those exports, every other one being a helper module.

The check is a text search, like :mod:`.entry_patterns`' fallback: nothing is
imported or compiled here, so discovery never runs project code.
"""

from __future__ import annotations

import re
from pathlib import Path

#: File types the Node runtime loads (``.ts`` through the TypeScript loader).
NODE_SUFFIXES = (".ts", ".mts", ".js", ".mjs")
#: Those that need the TypeScript loader (tsx).
TYPESCRIPT_SUFFIXES = (".ts", ".mts")
#: Declaration files describe types only; never routes.
_DECLARATION = re.compile(r"\.d\.m?ts$")
#: The entry label of a file that ``export default``s an Express or Koa app,
#: called with Node's ``(req, res)`` and reading the body itself.
APP_ENTRY_LABEL = "default export (Express/Koa app)"
_HANDLER_NAME = r"onRequest(?:Get|Post|Put|Patch|Delete|Head|Options)?"
_EXPORTED_HANDLER = re.compile(
    rf"^\s*export\s+(?:(?:async\s+)?function\s*\*?\s*|(?:const|let|var)\s+)({_HANDLER_NAME})\b",
    re.M,
)
_EXPORT_LIST = re.compile(r"^\s*export\s*\{([^}]*)\}", re.M)
_EXPORT_DEFAULT = re.compile(r"^\s*export\s+default\b", re.M)
_COMMONJS_EXPORT = re.compile(rf"\b(?:module\.)?exports\.({_HANDLER_NAME})\s*=")


def is_node_file(file: Path) -> bool:
    return file.suffix in NODE_SUFFIXES and not _DECLARATION.search(file.name)


def _handlers(source: str) -> list[str]:
    names = _EXPORTED_HANDLER.findall(source) + _COMMONJS_EXPORT.findall(source)
    for group in _EXPORT_LIST.findall(source):
        for item in group.split(","):
            exported = item.split(" as ")[-1].strip()
            if re.fullmatch(_HANDLER_NAME, exported):
                names.append(exported)
    return sorted(set(names))


def function_entry_label(file: Path) -> str | None:
    """What the route table shows for a Node cloud function; None for a helper module."""
    try:
        source = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    handlers = _handlers(source)
    if handlers:
        return ", ".join(handlers)
    if _EXPORT_DEFAULT.search(source):
        return APP_ENTRY_LABEL
    return None

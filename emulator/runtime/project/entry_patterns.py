"""Which ``cloud-functions/`` files are routes: the platform's entry patterns.

A ``.py`` file there is a route only if it contains one of
``class handler(BaseHTTPRequestHandler)``, ``app = Flask(...)``,
``app = FastAPI(...)`` or ``application = get_wsgi_application()``; every
other file is a helper module, copied but not routed (platform-runtime.md
§1.4). The current official claude-agent-starter-python template adds a
fifth, a module-level ``handler`` function (``async def handler(context)``):
the "context handler" (see :data:`..platform_choices.CONTEXT_HANDLER_ENTRY`).
The four documented patterns win when a file has one of them as well.

The check reads the source with :mod:`ast` and imports nothing, so discovery
never runs project code. Patterns count at module level and inside top-level
``if`` / ``try`` blocks (``try: from flask import Flask``...). A file that
does not parse is judged by a plain text search instead, so a route with a
syntax error is still routed and its import error shown.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..platform_choices import CONTEXT_HANDLER_ENTRY

#: "agent" for agents/; for cloud functions, how the runtime enters the module:
#: its ``class handler``, its framework ``app`` / Django ``application``, or its
#: ``handler`` function (a context handler); "node" for a Node cloud function
#: (its ``onRequest*`` exports or default-exported app, see :mod:`.node_entry`).
EntryKind = Literal["agent", "handler", "app", "application", "context_handler", "node"]


@dataclass(frozen=True, slots=True)
class Entry:
    kind: EntryKind
    #: What the route table shows: "handler class", "Flask app", "context handler"...
    label: str


HANDLER_CLASS = Entry("handler", "handler class")
CONTEXT_HANDLER = Entry("context_handler", "context handler")
DJANGO_APP = Entry("application", "Django app")
_HANDLER_BASE = "BaseHTTPRequestHandler"
_APP_FACTORIES = {"Flask", "FastAPI"}
_DJANGO_FACTORY = "get_wsgi_application"
_TEXT_HANDLER_CLASS = re.compile(r"^\s*class\s+handler\s*\([^)]*\bBaseHTTPRequestHandler\b", re.M)
_TEXT_APP = re.compile(r"^\s*app\s*(?::[^=]*)?=\s*(?:[\w.]+\.)?(Flask|FastAPI)\s*\(", re.M)
_TEXT_DJANGO = re.compile(r"^\s*application\s*=\s*(?:[\w.]+\.)?get_wsgi_application\s*\(", re.M)
_TEXT_CONTEXT_HANDLER = re.compile(r"^(?:async\s+)?def\s+handler\s*\(", re.M)


def _name(node: ast.expr) -> str | None:
    """``X`` for ``X`` and ``a.b.X``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for statement in body:
        yield statement
        if isinstance(statement, ast.If):
            yield from _top_level(statement.body)
            yield from _top_level(statement.orelse)
        elif isinstance(statement, ast.Try):
            yield from _top_level(statement.body)
            for except_handler in statement.handlers:
                yield from _top_level(except_handler.body)
            yield from _top_level(statement.orelse)


def _assigned(statement: ast.stmt) -> tuple[list[str], ast.expr | None]:
    if isinstance(statement, ast.Assign):
        return [t.id for t in statement.targets if isinstance(t, ast.Name)], statement.value
    if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
        return [statement.target.id], statement.value
    return [], None


def _documented_entry(statement: ast.stmt) -> Entry | None:
    """One of the platform doc's four patterns."""
    if isinstance(statement, ast.ClassDef):
        if statement.name == "handler" and any(_name(b) == _HANDLER_BASE for b in statement.bases):
            return HANDLER_CLASS
        return None
    names, value = _assigned(statement)
    if not isinstance(value, ast.Call):
        return None
    factory = _name(value.func)
    if "app" in names and factory in _APP_FACTORIES:
        return Entry("app", f"{factory} app")
    if "application" in names and factory == _DJANGO_FACTORY:
        return DJANGO_APP
    return None


def _is_context_handler(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
        and statement.name == "handler"
    )


def entry_in_tree(tree: ast.Module) -> Entry | None:
    """The entry pattern of a parsed module, or None for a helper module."""
    context_handler = False
    for statement in _top_level(tree.body):
        found = _documented_entry(statement)
        if found is not None:
            return found
        context_handler = context_handler or _is_context_handler(statement)
    return CONTEXT_HANDLER if context_handler and CONTEXT_HANDLER_ENTRY else None


def _entry_in_text(source: str) -> Entry | None:
    if _TEXT_HANDLER_CLASS.search(source):
        return HANDLER_CLASS
    app = _TEXT_APP.search(source)
    if app:
        return Entry("app", f"{app.group(1)} app")
    if _TEXT_DJANGO.search(source):
        return DJANGO_APP
    if CONTEXT_HANDLER_ENTRY and _TEXT_CONTEXT_HANDLER.search(source):
        return CONTEXT_HANDLER
    return None


def entry_in_source(source: str) -> Entry | None:
    """The entry pattern ``source`` contains, or None for a helper module."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return _entry_in_text(source)
    return entry_in_tree(tree)


def find_entry(file: Path) -> Entry | None:
    """The entry pattern of ``file`` (None: a helper module, or unreadable)."""
    try:
        source = file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return entry_in_source(source)

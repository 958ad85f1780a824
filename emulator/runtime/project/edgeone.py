"""``edgeone.json``: the keys the agent runtime reads, checked when serve starts.

- ``agents.framework``: one of :data:`..platform_choices.KNOWN_FRAMEWORKS`;
  shapes ``ctx.tools``. Unknown -> a warning, then treated as absent;
  absent -> :data:`..platform_choices.FRAMEWORK_WHEN_ABSENT`.
- ``agents.timeout``: seconds (a positive number); the soft limit of one run.
- ``agents.runtime``: accepted and ignored (legacy; the platform detects it).
- Any other key is ignored (console metadata, build settings).

A file that is not JSON, or keys of the wrong type, stop serve with a
:class:`~..errors.ServeError` naming the file and the position.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ServeError
from ..platform_choices import FRAMEWORK_WHEN_ABSENT, KNOWN_FRAMEWORKS

FILE_NAME = "edgeone.json"


@dataclass(frozen=True)
class AgentsConfig:
    framework: str | None = FRAMEWORK_WHEN_ABSENT
    #: ``agents.timeout`` in seconds; None when not set.
    timeout_s: float | None = None
    #: Where the framework came from, for the start banner.
    framework_source: str = "not set"
    warnings: tuple[str, ...] = field(default=())


def _load(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ServeError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ServeError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ServeError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}"
        ) from None


def read_agents_config(project: Path) -> AgentsConfig:
    """The ``agents`` settings of ``project/edgeone.json`` (defaults when there is none)."""
    path = project / FILE_NAME
    if not path.is_file():
        return AgentsConfig()
    data = _load(path)
    if not isinstance(data, dict):
        raise ServeError(f"{path}: the top level must be a JSON object")
    agents = data.get("agents", {})
    if not isinstance(agents, dict):
        raise ServeError(f"{path}: \"agents\" must be an object, not {json.dumps(agents)}")
    warnings: list[str] = []
    framework = agents.get("framework")
    source = f"{FILE_NAME} agents.framework"
    if framework is None:
        framework, source = FRAMEWORK_WHEN_ABSENT, "not set"
    elif not isinstance(framework, str):
        raise ServeError(f"{path}: agents.framework must be a string, not {json.dumps(framework)}")
    elif framework not in KNOWN_FRAMEWORKS:
        warnings.append(
            f"{path}: agents.framework {framework!r} is not one the platform knows "
            f"({', '.join(KNOWN_FRAMEWORKS)}); ctx.tools keeps its generic shape"
        )
        framework, source = FRAMEWORK_WHEN_ABSENT, f"not set ({framework!r} is unknown)"
    timeout = agents.get("timeout")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise ServeError(
            f"{path}: agents.timeout must be a positive number of seconds, "
            f"not {json.dumps(timeout)}"
        )
    return AgentsConfig(
        framework=framework,
        timeout_s=None if timeout is None else float(timeout),
        framework_source=source,
        warnings=tuple(warnings),
    )

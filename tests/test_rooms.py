"""The library's rooms import downward only, as the maps in ``store/__init__.py``
and ``emulator/__init__.py`` say.

``store/`` is in layers; a module may import its own room and the rooms
below it, never one above, whether the import runs at import time, on use
(inside a function) or only for type checkers: :data:`STORE_LAYERS`, lowest
first. ``emulator/``'s backends each import no other backend, and of the
store only its blob interface (:data:`BACKEND_INTERFACE`). The import graph
is the one ``tests/test_store_imports.py`` reads.
"""

from __future__ import annotations

from tests.test_store_imports import MODULES, PACKAGE, graph, short

#: The store's rooms, lowest first: (room, the modules in it, by prefix of
#: their name under ``makers_store``; "" is ``makers_store`` itself).
STORE_LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("errors", "models", "clock", "text", "limits")),
    ("core", ("_core", "blob_ops", "blob", "blob_conformance", "retry")),
    ("lifecycle", ("lifecycle",)),
    ("api", ("api",)),
    ("adapters", ("adapters",)),
    ("maintenance", ("maintenance",)),
    ("facade", ("", "context_store", "factory", "sync_api")),
]

#: What the emulator's backends may import of the store (see ``emulator/__init__.py``).
BACKEND_INTERFACE = ("blob", "blob_ops", "errors", "retry")
#: The emulator's backends, one room each.
BACKENDS = ("memory", "sqlite", "postgres", "s3")
#: Outside the store: the CLI and the emulator (its runtime and Studio are
#: rooms of their own, checked in tests/test_store_imports.py).
OUTSIDE = (f"{PACKAGE}.cli", f"{PACKAGE}.emulator")


def matches(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(f"{prefix}.")


def store_layer(module: str) -> int | None:
    """The rank of ``module``'s room in :data:`STORE_LAYERS` (None outside the store)."""
    if matches(module, OUTSIDE[0]) or matches(module, OUTSIDE[1]):
        return None
    name = "" if module == PACKAGE else module.removeprefix(f"{PACKAGE}.")
    for rank, (_room, prefixes) in enumerate(STORE_LAYERS):
        if any(name == p if p in ("",) else matches(name, p) for p in prefixes):
            return rank
    raise AssertionError(f"{module} is in no room: add it to a room's map and STORE_LAYERS")


EVERY_IMPORT = graph(type_checking=True, on_use=True)


def upward(module: str) -> list[str]:
    rank = store_layer(module)
    assert rank is not None
    return sorted(
        f"{short(module)} -> {short(target)} ({STORE_LAYERS[store_layer(target) or 0][0]})"
        for target in EVERY_IMPORT[module]
        if (layer := store_layer(target)) is not None and layer > rank
    )


def test_every_store_module_is_in_a_room() -> None:
    store = [name for name in MODULES if store_layer(name) is not None]
    assert len(store) > 60  # the reader sees the store
    for name in store:
        store_layer(name)


def test_no_room_of_the_store_imports_a_room_above_it() -> None:
    found = [edge for name in MODULES if store_layer(name) is not None for edge in upward(name)]
    assert found == []


def test_the_core_imports_nothing_above_it() -> None:
    """The rule the issue names first, said on its own: the core imports
    nothing from api, lifecycle, adapters or maintenance."""
    core = [name for name in MODULES if store_layer(name) in (0, 1)]
    assert f"{PACKAGE}._core.runner" in core and f"{PACKAGE}.blob" in core
    assert [edge for name in core for edge in upward(name)] == []


def test_the_rule_sees_an_upward_import() -> None:
    """Not vacuous: the facade imports the maintenance room (``store.admin``)."""
    facade = f"{PACKAGE}.context_store"
    assert store_layer(facade) == len(STORE_LAYERS) - 1
    assert f"{PACKAGE}.maintenance.admin" in EVERY_IMPORT[facade]


def private(module: str) -> bool:
    """Whether ``module`` is a private part of the store: a ``_`` name under
    ``makers_store`` (``_core`` and everything in it, ``_anything.py``)."""
    parts = module.split(".")
    return (
        parts[0] == PACKAGE
        and store_layer(module) is not None
        and any(part.startswith("_") for part in parts[1:])
    )


def test_nothing_outside_the_store_imports_a_private_module() -> None:
    """cli/ and emulator/ use what ``makers_store`` exports and the documented
    internal interface (the map in ``store/__init__.py``), never ``_core``."""
    outside = [name for name in MODULES if store_layer(name) is None]
    assert len(outside) > 50  # the CLI, the backends, the runtime, the Studio
    found = sorted(
        f"{short(name)} -> {short(target)}"
        for name in outside
        for target in EVERY_IMPORT[name]
        if private(target)
    )
    assert found == []


def test_the_private_rule_sees_a_private_module() -> None:
    """Not vacuous: the store's own modules import ``_core``, and the rule
    names it private."""
    assert private(f"{PACKAGE}._core.codec") and not private(f"{PACKAGE}.limits")
    facade = f"{PACKAGE}.context_store"
    assert any(private(target) for target in EVERY_IMPORT[facade])


def test_backends_import_only_the_blob_interface_and_no_other_backend() -> None:
    emulator = f"{PACKAGE}.emulator"
    allowed = {f"{PACKAGE}.{name}" for name in BACKEND_INTERFACE} | {PACKAGE}
    checked = 0
    for name in MODULES:
        if not matches(name, emulator) or matches(name, f"{emulator}.runtime"):
            continue
        if matches(name, f"{emulator}.studio"):
            continue
        checked += 1
        own = next((b for b in BACKENDS if matches(name, f"{emulator}.{b}")), None)
        for target in EVERY_IMPORT[name]:
            if matches(target, emulator):
                other = next((b for b in BACKENDS if matches(target, f"{emulator}.{b}")), None)
                assert other in (None, own), f"{short(name)} imports {short(target)}"
                assert not matches(target, f"{emulator}.runtime"), short(name)
            else:
                assert target in allowed, f"{short(name)} imports {short(target)}"
    assert checked > 20

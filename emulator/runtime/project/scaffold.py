"""``makers-store init DIR``: write a runnable Makers project (see :mod:`.templates`)."""

from __future__ import annotations

from pathlib import Path

from makers_store.errors import MemoryValidationError

from .templates import FILES


def scaffold(directory: Path, *, force: bool = False) -> list[Path]:
    """Write the project into ``directory``; the files written.

    Refuses (MemoryValidationError) to overwrite an existing file unless
    ``force`` is true; other files already in ``directory`` are left alone.
    """
    directory = directory.expanduser()
    if directory.exists() and not directory.is_dir():
        raise MemoryValidationError(f"DIR {str(directory)!r} exists and is not a directory")
    targets = {directory / relative: text for relative, text in FILES.items()}
    existing = [path for path in targets if path.exists()]
    if existing and not force:
        shown = ", ".join(str(path.relative_to(directory)) for path in existing[:4])
        raise MemoryValidationError(
            f"DIR {str(directory)!r} already has {shown}; pass --force to overwrite"
        )
    written: list[Path] = []
    for path, text in targets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.name == "README.md":
            text = text.format(name=directory.resolve().name)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written

"""The ``makers-store`` command line: a thin typer + rich layer over the library."""

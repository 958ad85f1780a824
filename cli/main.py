"""The ``makers-store`` command: one typer sub-app per noun, one error boundary.

Imports stay lazy: ``makers-store --help`` must not import the library's
backends, rich or sqlite-utils. Each command imports what it needs inside its
function; the modules imported here hold only typer declarations.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from . import blob, conv, copy, index, info, msg, state, transfer
from . import serve as serve_commands
from .context import CliState
from .errors import BoundaryGroup, run_with_error_boundary

app = typer.Typer(
    name="makers-store",
    cls=BoundaryGroup,
    help=(
        "Inspect and edit EdgeOne Makers conversation stores; run agents locally.\n\n"
        "Exit codes: 0 ok, 1 error, 2 usage, 3 not found."
    ),
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def _global(
    ctx: typer.Context,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            envvar="MAKERS_STORE_URL",
            metavar="URL",
            help="Store URL (sqlite:///file.db, memory://); default: see `makers-store info`.",
        ),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    from typer import _click as click

    from_env = ctx.get_parameter_source("store") == click.core.ParameterSource.ENVIRONMENT
    # From the environment, let the library resolve it too, so `info` can say why.
    ctx.obj = CliState(store_url=None if from_env else store, debug=debug)


app.command("info")(info.info_command)
app.add_typer(conv.app, name="conv")
app.add_typer(msg.app, name="msg")
app.add_typer(state.app, name="state")
app.add_typer(index.app, name="index")
app.add_typer(blob.app, name="blob")
app.command("export")(transfer.export_command)
app.command("import")(transfer.import_command)
app.command("copy")(copy.copy_command)
app.command("serve")(serve_commands.serve_command)
app.command("init")(serve_commands.init_command)


def main() -> int:
    """Run the CLI; the one place errors become exit codes (see cli/errors.py)."""
    return run_with_error_boundary(app, sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())

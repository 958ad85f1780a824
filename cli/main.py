"""The ``makers-store`` command: one typer sub-app per noun, one error boundary.

Imports stay lazy: ``makers-store --help`` must not import the library's
backends, rich or sqlite-utils. Each command imports what it needs inside its
function; the modules imported here hold only typer declarations.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from typer import _click as click
from typer.core import TyperArgument, TyperOption

from . import blob, chat, conv, copy, doctor, index, info, msg, prune, state, studio, transfer
from . import serve as serve_commands
from . import vacuum as vacuum_commands
from . import window as window_commands
from .context import CliState, accept_global_options_after, complete_store_path
from .errors import BoundaryGroup, run_with_error_boundary
from .options import examples


class RootGroup(BoundaryGroup):
    """The root command: the error boundary, and the global options accepted
    after any command as well as before it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        accept_global_options_after(self)
        plain_metavars(self)


class _Argument(TyperArgument):
    """An argument shown as ``NAME`` (``[NAME]`` when optional) in usage lines
    and without its Python type in the help: typer writes ``{NAME}`` and
    ``NAME <str>``."""

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")

    def display_type_rich(self, ctx: click.Context) -> str | None:
        return None


class _Option(TyperOption):
    """An option whose range reads as words (``at least 1``, ``0 to 100``), not ``0<=x<=100``."""

    def _get_number_range_help_str(self) -> str | None:  # typer >= 0.27 only calls this
        info = self.type_descriptor.parameter_info
        low, high = info.min, info.max
        if low is not None and high is not None:
            return f"{low} to {high}"
        if low is not None:
            return f"at least {low}"
        if high is not None:
            return f"at most {high}"
        return None


def _choices(param: Any) -> Any:
    """An option's choices: typer >= 0.27 declares them in its type descriptor,
    the typer floor (0.26) in click's Choice type."""
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is not None:
        return descriptor.choices
    return getattr(param.type, "choices", None)


def plain_metavars(command: Any) -> None:
    """One form for values in every command's help: an option's value is an
    upper-case word (``--limit N``) or its choices (``--order asc|desc``),
    never typer's ``<int range>`` or ``<str>``; arguments as :class:`_Argument`."""
    for param in command.params:
        if isinstance(param, TyperArgument):
            param.__class__ = _Argument
            if param.metavar is None:
                param.metavar = (param.name or "value").upper()
        elif isinstance(param, TyperOption):
            param.__class__ = _Option
            if param.metavar is not None or param.is_flag:
                continue
            choices = _choices(param)
            if choices:
                param.metavar = "|".join(str(getattr(c, "value", c)) for c in choices)
            else:
                param.metavar = (param.name or "value").upper()
    for sub in getattr(command, "commands", {}).values():
        plain_metavars(sub)


app = typer.Typer(
    name="makers-store",
    cls=RootGroup,
    help=(
        "Inspect and edit EdgeOne Makers conversation stores; run agents locally.\n\n"
        "Global options (--store, --debug) go before or after the command.\n\n"
        "Exit codes: 0 ok, 1 error, 2 usage, 3 not found."
    ),
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"makers-store {version('makers-store')}")
        raise typer.Exit()


@app.callback(
    epilog=examples("makers-store info", "makers-store --store sqlite:///dev.db conv list")
)
def _global(
    ctx: typer.Context,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            envvar="MAKERS_STORE_URL",
            metavar="URL",
            help="Store URL (sqlite:///file.db, memory://); default: see `makers-store info`.",
            autocompletion=complete_store_path,
        ),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            is_eager=True,
            callback=_print_version,
            help="Print the version and exit.",
        ),
    ] = False,
) -> None:
    source = ctx.get_parameter_source("store")
    from_env = source is not None and source.name == "ENVIRONMENT"
    # From the environment, let the library resolve it too, so `info` can say why.
    ctx.obj = CliState(store_url=None if from_env else store, debug=debug)


app.command("info", epilog=examples("makers-store info", "makers-store info --json"))(
    info.info_command
)
app.add_typer(conv.app, name="conv")
conv.app.command(
    "window",
    epilog=examples("makers-store conv window c_42", "makers-store conv window c_42 --as openai"),
)(window_commands.window_command)
conv.app.command(
    "summarize",
    epilog=examples(
        "makers-store conv summarize c_42 --until msg_0000000040_k3j9x2 --summary 'Days 1-3.'"
    ),
)(window_commands.summarize_command)
app.add_typer(msg.app, name="msg")
app.add_typer(state.app, name="state")
app.add_typer(index.app, name="index")
app.add_typer(blob.app, name="blob")
app.command(
    "export",
    epilog=examples(
        "makers-store export -o backup.jsonl",
        "makers-store export --conversation c_42 --conversation c_43 > two.jsonl",
    ),
)(transfer.export_command)
app.command(
    "import",
    epilog=examples(
        "makers-store import backup.jsonl",
        "makers-store --store sqlite:///copy.db import - < backup.jsonl",
    ),
)(transfer.import_command)
app.command(
    "copy",
    epilog=examples(
        "makers-store copy .makers-store/store.db 'postgresql://app@db.internal/agents'",
        "makers-store copy SRC_URL DST_URL --prune",
    ),
)(copy.copy_command)
app.command(
    "doctor",
    epilog=examples("makers-store doctor", "makers-store doctor c_42 --fix --dry-run"),
)(doctor.doctor_command)
app.command(
    "prune",
    epilog=examples(
        "makers-store prune --idle-for 30d --dry-run",
        "makers-store prune --checkpoints keep-latest --conversation c_42",
    ),
)(prune.prune_command)
app.command("vacuum", epilog=examples("makers-store vacuum", "makers-store vacuum --json"))(
    vacuum_commands.vacuum_command
)
app.command("serve", epilog=examples("makers-store serve", "makers-store serve demo --port 9000"))(
    serve_commands.serve_command
)
app.command("init", epilog=examples("makers-store init demo"))(serve_commands.init_command)
app.command("chat", epilog=chat.EPILOG)(chat.chat_command)
app.command(
    "studio",
    epilog=examples(
        "makers-store studio --open",
        "makers-store studio --store 'postgresql://app@db.internal/agents' --port 9000",
    ),
)(studio.studio_command)


def main() -> int:
    """Run the CLI; the one place errors become exit codes (see cli/errors.py)."""
    return run_with_error_boundary(app, sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())

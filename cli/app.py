"""The ``makers-store`` command tree: one typer sub-app per noun, one error boundary.

Imports stay lazy: a command builds and imports only itself. The root group
knows its commands by name (:data:`COMMANDS`); typer turns a command's
function into a click command, and its module is imported, only when that
command runs (``makers-store conv list`` builds ``conv`` alone, never the
Studio's or ``serve``'s), or when the whole tree is asked for (``--help``,
the docs and completion generators read ``.commands``). Modules of commands
import only typer and the standard library at module level; the library,
rich and the backends are imported inside the functions that use them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from types import SimpleNamespace
from typing import Annotated, Any

import typer
from typer import _click as click
from typer.core import TyperArgument, TyperGroup, TyperOption
from typer.models import CommandInfo

from .context import CliState, accept_global_options_after, complete_store_path
from .errors import BoundaryGroup
from .options import examples


class LazyCommands(MutableMapping[str, Any]):
    """A group's commands, each built on first use: looking one up by name
    builds that one; walking them all builds all, in the order of ``names``.
    The root's are :data:`COMMANDS`; a noun's are its typer app's functions."""

    def __init__(self, names: Callable[[], list[str]], build: Callable[[str], Any]) -> None:
        self._names = names
        self._build = build
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in self._names():
                raise KeyError(name)
            command = self._build(name)
            self._built[name] = command
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        names = self._names()
        yield from names
        yield from (name for name in list(self._built) if name not in names)

    def __len__(self) -> int:
        return len(set(self._names()) | set(self._built))

    def __contains__(self, name: object) -> bool:
        return name in self._names() or name in self._built


def build_command(name: str) -> Any:
    """The click command ``name`` of the root: its typer app built, its
    options shown plainly, the global options accepted after it. A noun's
    own commands are built when used too (``conv list`` builds ``list``
    alone: typer reads a function's signature and annotations to build it)."""
    import typer.main

    entry = COMMANDS[name]
    made = entry.load()
    if (
        made.registered_commands
        and not made.registered_groups
        and len(made.registered_commands) == 1
    ):
        command = typer.main.get_command(made)  # one function: typer makes the command itself
        command.name = name
        accept_global_options_after(SimpleNamespace(commands={name: command}))
        plain_metavars(command)
        return command
    # A noun: built as a sub-app, as add_typer builds it (no completion
    # options), but without its functions, which LazyCommands builds.
    holder = typer.Typer(add_completion=False, rich_markup_mode=None)
    holder.add_typer(made, name=name)
    functions, made.registered_commands = made.registered_commands, []
    try:
        command = typer.main.get_command(holder).commands[name]  # type: ignore[attr-defined]
    finally:
        made.registered_commands = functions
    command.__class__ = NounGroup
    command.name = name
    groups = dict(command.commands)  # a noun's own sub-nouns (none today): built already
    # each command's typer declaration, by name: the noun's functions', then
    # those kept elsewhere (Entry.more), whose module is imported by the loader
    by_name: dict[str, Callable[[], CommandInfo]] = {
        info.name or typer.main.get_command_name(info.callback.__name__): _given(info)
        for info in functions
        if info.callback is not None
    }
    by_name.update(entry.more)

    def build(sub: str) -> Any:
        built = groups.get(sub) or typer.main.get_command_from_info(
            by_name[sub](),
            pretty_exceptions_short=holder.pretty_exceptions_short,
            rich_markup_mode=holder.rich_markup_mode,
        )
        accept_global_options_after(SimpleNamespace(commands={sub: built}))  # walks a group
        plain_metavars(built)
        return built

    command.commands = LazyCommands(lambda: [*by_name, *groups], build)
    plain_metavars(command, below=False)
    return command


def _given(info: CommandInfo) -> Callable[[], CommandInfo]:
    """A declaration at hand, loaded as :attr:`Entry.more`'s are."""
    return lambda: info


class NounGroup(TyperGroup):
    """A noun's group (``conv``): its commands listed with whole summaries."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, summary(self.commands[name].help or "")) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class RootGroup(BoundaryGroup):
    """The root command: the error boundary, the global options accepted
    after any command as well as before it, commands built when used."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(lambda: list(COMMANDS), build_command)
        plain_metavars(self, below=False)  # each command's own when it is built

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands in the sections of :data:`COMMANDS` (as gh groups
        its own), each with its whole one-line summary, never cut short."""
        for section in SECTIONS:
            rows = []
            for name, entry in COMMANDS.items():
                if entry.section == section:
                    rows.append((name, summary(self.commands[name].help or "")))
            with formatter.section(f"{section} commands"):
                formatter.write_dl(rows)


def summary(help_text: str) -> str:
    """A command's summary in a list of commands: its first sentence, whole
    (click cuts it at the terminal's width with "...")."""
    import re

    paragraph = " ".join(help_text.split("\n\n")[0].split())
    first = re.match(r"(.+?[.!?])(?=\s+[A-Z(`]|$)", paragraph)
    return first.group(1) if first else paragraph


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


class PlainValue:
    """The check of a value typed for a parameter of a common shape (text, a
    whole number or a number within bounds, a choice, repeated text).

    typer (0.27 and later) checks every value, defaults included, with a
    pydantic ``TypeAdapter``; importing pydantic costs more than everything
    else ``makers-store conv list`` does. These shapes are checked here
    instead, with the same outcome; any other (paths, files) still goes to
    typer. A bad value raises :class:`~.errors.BadValue`, which the error
    boundary words from the parameter's declaration as it words typer's."""

    __slots__ = ("choices", "high", "kind", "low")

    def __init__(self, kind: Any, low: Any, high: Any, choices: Any) -> None:
        self.kind, self.low, self.high, self.choices = kind, low, high, choices

    @classmethod
    def of(cls, descriptor: Any) -> PlainValue | None:
        """The check for ``descriptor`` (typer's TypeDescriptor), or None
        when it is not one of the shapes above."""
        from enum import Enum
        from typing import get_args

        info = descriptor.parameter_info
        kind = descriptor.annotation
        if getattr(info, "clamp", False) or getattr(descriptor, "file_annotation", None):
            return None
        if getattr(descriptor, "is_list", False) and get_args(kind) == (str,):
            return cls(list, None, None, None)
        if kind is str or kind is bool:
            return cls(kind, None, None, None)
        if kind is int or kind is float:
            return cls(kind, info.min, info.max, None)
        if isinstance(kind, type) and issubclass(kind, Enum) and descriptor.choices:
            if not getattr(info, "case_sensitive", True):
                return None
            return cls(kind, None, None, list(descriptor.choices))
        return None

    def coerce(self, value: Any, param: Any, ctx: click.Context) -> Any:
        from .errors import BadValue

        if value is None:
            return () if self.kind is list else None
        kind = self.kind
        if kind is list:
            if isinstance(value, str) or not all(isinstance(item, str) for item in value):
                raise BadValue(value, ctx=ctx, param=param)
            return list(value)
        if kind is str:
            if not isinstance(value, str):
                raise BadValue(value, ctx=ctx, param=param)
            return value
        if kind is bool:
            if isinstance(value, bool):
                return value
            raise BadValue(value, ctx=ctx, param=param)
        if self.choices is not None:
            for choice in self.choices:
                if value == choice or value == choice.value:
                    return choice
            raise BadValue(value, ctx=ctx, param=param)
        return self._number(value, param, ctx)

    def _number(self, value: Any, param: Any, ctx: click.Context) -> Any:
        import math

        from .errors import BadValue

        try:
            if isinstance(value, bool) or not isinstance(value, int | float | str):
                raise ValueError
            number = self.kind(value.strip() if isinstance(value, str) else value)
        except (ValueError, OverflowError):
            raise BadValue(value, ctx=ctx, param=param) from None
        if isinstance(number, float) and not math.isfinite(number):
            raise BadValue(value, ctx=ctx, param=param)
        if (self.low is not None and number < self.low) or (
            self.high is not None and number > self.high
        ):
            raise BadValue(value, ctx=ctx, param=param)
        return number


def check_values_plainly() -> None:
    """Make every typer parameter (ours, and those typer makes itself: -h,
    the completion options) check its value with :class:`PlainValue` when it
    can. One place replaces typer's lazy ``get_runtime_param`` (typer >= 0.27;
    older releases check values with click's types and have nothing to replace)."""
    from typer import core

    base = getattr(core, "_TyperParameter", None)
    typer_own = getattr(base, "get_runtime_param", None)
    if base is None or typer_own is None or getattr(typer_own, "plain", False):
        return

    def get_runtime_param(param: Any) -> Any:
        if param._runtime_param is None:
            plain = PlainValue.of(param.type_descriptor)
            if plain is None:
                return typer_own(param)  # typer's own (pydantic)
            param._runtime_param = plain
        return param._runtime_param

    get_runtime_param.plain = True  # type: ignore[attr-defined]
    base.get_runtime_param = get_runtime_param


check_values_plainly()


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


def plain_metavars(command: Any, *, below: bool = True) -> None:
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
    for sub in getattr(command, "commands", {}).values() if below else ():
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
        from makers_store import __version__

        typer.echo(f"makers-store {__version__}")  # as main() prints it without typer
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


class Entry:
    """A command of the root: the section of the help it is listed in, and
    how to make its typer app (importing its module only then). ``more``: a
    noun's commands kept in another module (``conv window``), each loaded,
    with its module, only when that command is built."""

    __slots__ = ("load", "more", "section")

    def __init__(
        self,
        section: str,
        load: Callable[[], typer.Typer],
        more: dict[str, Callable[[], CommandInfo]] | None = None,
    ) -> None:
        self.section = section
        self.load = load
        self.more = more or {}


def _module(name: str) -> Any:
    from importlib import import_module

    return import_module(f"{__package__}.{name}")


def _one(module: str, function: str, name: str, *lines: str) -> Callable[[], typer.Typer]:
    """A command that is one function: ``module.function``, with ``lines`` as
    its examples (else the module's ``EPILOG``)."""

    def load() -> typer.Typer:
        found = _module(module)
        single = typer.Typer(add_completion=False, rich_markup_mode=None)
        epilog = examples(*lines) if lines else found.EPILOG
        single.command(name, epilog=epilog)(getattr(found, function))
        return single

    return load


def _group(module: str) -> Callable[[], typer.Typer]:
    """A noun with commands of its own (``conv list``): ``module.app``."""

    def load() -> typer.Typer:
        sub: typer.Typer = _module(module).app
        return sub

    return load


def _elsewhere(module: str, function: str, name: str, *lines: str) -> Callable[[], CommandInfo]:
    """A noun's command that is ``module.function`` (see :attr:`Entry.more`),
    with ``lines`` as its examples."""

    def load() -> CommandInfo:
        single = typer.Typer(add_completion=False, rich_markup_mode=None)
        single.command(name, epilog=examples(*lines))(getattr(_module(module), function))
        info: CommandInfo = single.registered_commands[0]
        return info

    return load


#: The sections of the root's help, in order (gh lists core commands first).
SECTIONS = ("Conversation", "Store", "Local runtime")

#: Every command of the root, in the order of the help.
COMMANDS: dict[str, Entry] = {
    "conv": Entry(
        "Conversation",
        _group("conv"),
        more={  # the context window's two commands (cli/window.py)
            "window": _elsewhere(
                "window",
                "window_command",
                "window",
                "makers-store conv window c_42",
                "makers-store conv window c_42 --as openai",
            ),
            "summarize": _elsewhere(
                "window",
                "summarize_command",
                "summarize",
                "makers-store conv summarize c_42 --until msg_0000000040_k3j9x2 "
                "--summary 'Days 1-3.'",
            ),
        },
    ),
    "msg": Entry("Conversation", _group("msg")),
    "state": Entry("Conversation", _group("state")),
    "info": Entry(
        "Store",
        _one("info", "info_command", "info", "makers-store info", "makers-store info --json"),
    ),
    "export": Entry(
        "Store",
        _one(
            "transfer",
            "export_command",
            "export",
            "makers-store export -o backup.jsonl",
            "makers-store export --conversation c_42 --conversation c_43 > two.jsonl",
        ),
    ),
    "import": Entry(
        "Store",
        _one(
            "transfer",
            "import_command",
            "import",
            "makers-store import backup.jsonl",
            "makers-store --store sqlite:///copy.db import - < backup.jsonl",
        ),
    ),
    "copy": Entry(
        "Store",
        _one(
            "copy",
            "copy_command",
            "copy",
            "makers-store copy .makers-store/store.db 'postgresql://app@db.internal/agents'",
            "makers-store copy SRC_URL DST_URL --prune",
        ),
    ),
    "doctor": Entry(
        "Store",
        _one(
            "doctor",
            "doctor_command",
            "doctor",
            "makers-store doctor",
            "makers-store doctor c_42 --fix --dry-run",
        ),
    ),
    "prune": Entry(
        "Store",
        _one(
            "prune",
            "prune_command",
            "prune",
            "makers-store prune --idle-for 30d --dry-run",
            "makers-store prune --checkpoints keep-latest --conversation c_42",
        ),
    ),
    "vacuum": Entry(
        "Store",
        _one(
            "vacuum",
            "vacuum_command",
            "vacuum",
            "makers-store vacuum",
            "makers-store vacuum --json",
        ),
    ),
    "snapshot": Entry("Store", _group("snapshot")),
    "reset": Entry(
        "Store",
        _one(
            "snapshot",
            "reset_command",
            "reset",
            "makers-store reset --dry-run",
            "makers-store reset --to before-bug --yes",
        ),
    ),
    "seed": Entry(
        "Store",
        _one(
            "snapshot",
            "seed_command",
            "seed",
            "makers-store seed seeds/",
            "makers-store --store sqlite:///test.db seed seeds/three.jsonl",
        ),
    ),
    "index": Entry("Store", _group("index")),
    "blob": Entry("Store", _group("blob")),
    "init": Entry("Local runtime", _one("serve", "init_command", "init", "makers-store init demo")),
    "serve": Entry(
        "Local runtime",
        _one(
            "serve",
            "serve_command",
            "serve",
            "makers-store serve",
            "makers-store serve demo --port 9000",
        ),
    ),
    "chat": Entry("Local runtime", _one("chat", "chat_command", "chat")),
    "studio": Entry(
        "Local runtime",
        _one(
            "studio",
            "studio_command",
            "studio",
            "makers-store studio --open",
            "makers-store studio --store 'postgresql://app@db.internal/agents' --port 9000",
        ),
    ),
}

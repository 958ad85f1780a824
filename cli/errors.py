"""The one place errors become exit codes.

=====  ==========================================================
code   meaning
=====  ==========================================================
0      ok
1      error (the store, the backend, the data; drift found)
2      usage: bad options or arguments, or invalid input values
3      not found: the conversation, message, state key, blob or store
130    interrupted (Ctrl-C)
141    stdout closed before everything was written (``| head``)
=====  ==========================================================

Every failure is one line ``error: ...`` on stderr; ``--debug`` (or
``MAKERS_STORE_DEBUG=1``) adds the traceback. The root command's class,
:class:`BoundaryGroup`, applies this to every way the app is run: the console
script, ``python -m makers_store.cli.main`` and typer's ``CliRunner``.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from typing import Any

import typer

# typer >= 0.26 runs on its own copy of click, typer._click (the floor declared in
# pyproject.toml and tested in tests/cli/test_packaging.py); it is imported here
# only, for the exception classes the error boundary catches.
from typer import _click as click
from typer.core import TyperGroup

OK, ERROR, USAGE, NOT_FOUND, INTERRUPTED, BROKEN_PIPE = 0, 1, 2, 3, 130, 141
PROG_NAME = "makers-store"


class CliError(Exception):
    """A failure the CLI itself detects, with its exit code."""

    def __init__(self, message: str, code: int = ERROR) -> None:
        super().__init__(message)
        self.code = code


class NotFound(CliError):
    def __init__(self, message: str) -> None:
        super().__init__(message, NOT_FOUND)


class StoreNotFound(NotFound):
    """The store itself does not exist (and the command would not create it)."""


class UsageProblem(CliError):
    def __init__(self, message: str) -> None:
        super().__init__(message, USAGE)


class Interrupted(CliError):
    """Ctrl-C, with what had been done by then."""

    def __init__(self, message: str) -> None:
        super().__init__(message, INTERRUPTED)


def say(message: str) -> None:
    """One line on stderr (control characters in it shown escaped)."""
    from .text import printable

    sys.stderr.write(f"error: {printable(message)}\n")
    sys.stderr.flush()


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the flush at exit stays quiet."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (CliRunner)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def exit_code_of(exc: BaseException) -> int:
    """The exit code for an exception raised by a command."""
    if isinstance(exc, CliError):
        return exc.code
    from makers_store.errors import MemoryNotFoundError, MemoryValidationError

    if isinstance(exc, MemoryNotFoundError):
        return NOT_FOUND
    if isinstance(exc, MemoryValidationError):
        return USAGE
    return ERROR


#: The library's words for a missing conversation (it names the argument),
#: said the way every command says "not found".
_LIBRARY_NOT_FOUND = re.compile(r"conversation_id ('.*'|\".*\") (?:not found|does not exist)")


def describe(exc: BaseException) -> str:
    from makers_store.errors import MemoryNotFoundError, MemoryValidationError, StoreError

    if isinstance(exc, MemoryNotFoundError):
        named = _LIBRARY_NOT_FOUND.fullmatch(str(exc))
        if named:
            return f"conversation {named.group(1)} not found"
    if isinstance(exc, MemoryValidationError):
        return in_cli_words(str(exc)) or type(exc).__name__
    if isinstance(exc, CliError | StoreError):
        return str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return f"unexpected {type(exc).__name__}: {exc}"


#: The library's argument names as the CLI's user knows them (``conv fork``'s
#: SRC and NEW; ids in words); quoted names (a file's field) stay as they are.
_CLI_WORDS = {"conversation_id": "conversation id", "message_id": "message id",
              "user_id": "user id", "source_id": "SRC", "new_id": "NEW"}  # fmt: skip


def in_cli_words(message: str) -> str:
    """A library error naming its API arguments (``new_id must differ from
    source_id``) in the words of the command line (``NEW must differ from SRC``)."""
    import re

    return re.sub(
        r"(?<![\w'\"])(" + "|".join(_CLI_WORDS) + r")(?![\w'\"])",
        lambda found: _CLI_WORDS[found.group(1)],
        message,
    )


def _usage_message(exc: click.exceptions.UsageError) -> str:
    message = _own_words(exc) or exc.format_message()
    if exc.ctx is not None:
        message += f" (see '{exc.ctx.command_path} --help')"
    return message


def did_you_mean(given: str, choices: Sequence[str]) -> str:
    """`` (did you mean 'user'?)`` when ``given`` is close to one of ``choices``."""
    import difflib

    close = difflib.get_close_matches(given.lower(), list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _own_words(exc: click.exceptions.UsageError) -> str | None:
    """A bad value or command in the CLI's words, not its validator's.

    typer validates option values with pydantic, whose messages name neither
    the choices nor what was typed the way a person reads them (``Value error,
    'usr' is not one of ...``, ``Input should be a valid integer``). The
    message is made here from the parameter's declaration and the value.
    """
    if isinstance(exc, click.exceptions.MissingParameter) and exc.param is not None:
        return _missing(exc.param)  # before BadParameter: it is one
    if isinstance(exc, click.exceptions.BadParameter) and exc.param is not None:
        return _bad_value(exc)
    message = exc.format_message()
    if message.startswith("No such command") and exc.ctx is not None:
        command = exc.ctx.command
        names = sorted(getattr(command, "commands", {}))
        given = message.split("'")[1] if message.count("'") >= 2 else ""
        return f"no command {given!r} in '{exc.ctx.command_path}'" + (
            did_you_mean(given, names) if given else ""
        )
    return None


class BadValue(click.exceptions.BadParameter):
    """A value the CLI's own check (cli/app.py's PlainValue) refused:
    ``given`` is what was typed."""

    def __init__(self, given: Any, **kwargs: Any) -> None:
        super().__init__(f"{given!r} is not a valid value", **kwargs)
        self.given = given


def _missing(param: Any) -> str | None:
    """A required option of choices not given, on one line (click lists the
    choices one per line); None for others (click's words are one line)."""
    long_names = [name for name in param.opts if name.startswith("--")]
    if param.param_type_name == "argument" or not param.opts:
        name = param.metavar or (param.name or "value").upper()
    else:
        name = (long_names or param.opts)[0]
    descriptor = getattr(param, "type_descriptor", None)
    choices = getattr(descriptor, "choices", None) or getattr(
        getattr(param, "type", None), "choices", None
    )
    if not choices:
        return None
    values = ", ".join(str(getattr(choice, "value", choice)) for choice in choices)
    return f"missing {name}: one of {values}"


def _bad_value(exc: click.exceptions.BadParameter) -> str | None:
    param = exc.param
    assert param is not None
    found: list[dict[str, Any]] = [{"input": exc.given}] if isinstance(exc, BadValue) else []
    errors = getattr(exc.__cause__, "errors", None)  # pydantic's ValidationError
    if callable(errors):
        found = errors()
    if not found or "input" not in found[0]:
        return None
    given = found[0]["input"]
    shown = repr(given) if isinstance(given, str) else repr(str(given))
    long_names = [name for name in param.opts if name.startswith("--")]
    if param.param_type_name == "argument" or not param.opts:
        name = param.metavar or (param.name or "value").upper()
    else:
        name = (long_names or param.opts)[0]
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None:
        return None
    if descriptor.choices:
        values = [str(getattr(choice, "value", choice)) for choice in descriptor.choices]
        hint = did_you_mean(str(given), values) if isinstance(given, str) else ""
        return f"{name} must be one of {', '.join(values)}; got {shown}{hint}"
    info = descriptor.parameter_info
    kind = descriptor.annotation
    if kind is int or kind is float:
        noun = "a whole number" if kind is int else "a number"
        try:
            number = kind(given)
        except (TypeError, ValueError, OverflowError):
            return f"{name} must be {noun}; got {shown}"
        if number != number:  # nan
            return f"{name} must be {noun}; got {shown}"
        if info.min is not None and number < info.min:
            return f"{name} must be at least {info.min}; got {shown}"
        if info.max is not None and number > info.max:
            return f"{name} must be at most {info.max}; got {shown}"
    message = str(found[0].get("msg", ""))
    message = message.removeprefix("Value error, ").rstrip(".")
    return f"{name}: {message}; got {shown}" if message else None


def _debug_wanted(args: Sequence[str]) -> bool:
    flag = os.environ.get("MAKERS_STORE_DEBUG", "").lower() in ("1", "true", "yes")
    options = args[: args.index("--")] if "--" in args else args
    return flag or "--debug" in options


class _StdoutClosed(Exception):
    """EPIPE on stdout, taken out of typer's hands (it would exit 1)."""


class BoundaryGroup(TyperGroup):
    """The root command: runs the app and turns every outcome into an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        # typer turns these two into exit codes by itself, silently: 130 for
        # Ctrl-C, 1 for a closed pipe. Catch them first (commands that can say
        # what was done by then raise Interrupted themselves).
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise Interrupted("interrupted") from None
        except BrokenPipeError:
            raise _StdoutClosed from None

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        code = self._run(argv, prog_name or PROG_NAME, complete_var, **extra)
        if standalone_mode:
            sys.exit(code)
        return code

    def _run(self, argv: list[str], prog_name: str, complete_var: str | None, **extra: Any) -> int:
        debug = _debug_wanted(argv)
        try:
            check_arguments_are_utf8(argv)
            result = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()
            return USAGE
        except click.exceptions.UsageError as exc:
            say(_usage_message(exc))
            return USAGE
        except click.exceptions.ClickException as exc:
            say(exc.format_message())
            return exc.exit_code
        except typer.Abort:
            say("aborted")
            return ERROR
        except KeyboardInterrupt:
            say("interrupted")
            return INTERRUPTED
        except _StdoutClosed:
            # the reader stopped reading (`| head`): quiet, like cat, with the
            # code a process killed by SIGPIPE reports
            _silence_stdout()
            return BROKEN_PIPE
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else ERROR)
        except Exception as exc:
            if debug:
                import traceback

                traceback.print_exc()
            say(describe(exc))
            return exit_code_of(exc)
        return result if isinstance(result, int) else OK


def run_with_error_boundary(app: typer.Typer, argv: Sequence[str]) -> int:
    """Run ``app`` on ``argv`` and return the exit code (see the table above)."""
    command = typer.main.get_command(app)
    code = command.main(list(argv), PROG_NAME, standalone_mode=False)
    return code if isinstance(code, int) else OK


def check_arguments_are_utf8(argv: list[str]) -> None:
    """Refuse command-line words that are not UTF-8 (Python hands them over as
    lone surrogates, which no store accepts), naming the option they belong to."""
    for position, word in enumerate(argv):
        raw = os.fsencode(word)
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            continue
        if word.startswith("--") and "=" in word:
            owner, _, value = word.partition("=")
            raw = os.fsencode(value)
        elif position > 0 and argv[position - 1].startswith("-") and argv[position - 1] != "-":
            owner = argv[position - 1]
        else:
            owner = "argument"
        shown = raw.decode("utf-8", errors="backslashreplace")  # as typed, bad bytes as \xNN
        raise UsageProblem(f"{owner} '{shown}' is not UTF-8 text")

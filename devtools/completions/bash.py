"""The bash completion script: three lookup tables (subcommands, options, option
values) as ``case`` functions, and the completion function that walks the words."""

from __future__ import annotations

from .tree import ASK, FUNC, HEADER, PROG, Node, sq, valued_options, walk


def _case(function: str, subject: str, arms: list[str]) -> str:
    """A function that echoes the arm of ``case subject`` that matches."""
    body = "\n".join(f"        {arm} ;;" for arm in arms)
    return f"""{FUNC}_{function}() {{
    case "{subject}" in
{body}
    esac
}}
"""


def _tables(nodes: list[Node]) -> str:
    commands = [
        f'"{n.path}") echo {sq(" ".join(c.name for c in n.commands))}' for n in nodes if n.commands
    ]
    options = [
        f'"{n.path}") echo {sq(" ".join(name for o in n.options for name in o.names))}'
        for n in nodes
    ]
    values = [f'"{n.path}|{name}") echo {sq(o.value)}' for n, name, o in valued_options(nodes)]
    return "\n".join(
        [_case("commands", "$1", commands), _case("options", "$1", options),
         _case("value", "$1|$2", values)]
    )  # fmt: skip


def _command_path() -> str:
    """The loop that finds the subcommand typed so far (skipping option values)."""
    return f"""    cmdpath=""
    i=1
    while [ "$i" -lt "$COMP_CWORD" ]; do
        word="${{COMP_WORDS[i]}}"
        if [ -n "$({FUNC}_value "$cmdpath" "$word")" ]; then
            i=$((i + 2))
            continue
        fi
        case " $({FUNC}_commands "$cmdpath") " in
            *" $word "*) cmdpath="${{cmdpath:+$cmdpath }}$word" ;;
        esac
        i=$((i + 1))
    done
"""


def _complete(nodes: list[Node]) -> str:
    """The completion function: an option's value, an option, a subcommand, an argument."""
    files = " | ".join(f'"{n.path}"' for n in nodes if n.file_arguments) or '"-"'
    ids = " | ".join(f'"{n.path}"' for n in nodes if n.id_arguments) or '"-"'
    ids_reply = f'COMPREPLY=($(COMP_WORDS="${{COMP_WORDS[*]}}" COMP_CWORD=$COMP_CWORD {ASK}))'
    return f"""{FUNC}() {{
    local cur prev cmdpath word value i
    COMPREPLY=()
    cur="${{COMP_WORDS[COMP_CWORD]}}"
    prev="${{COMP_WORDS[COMP_CWORD-1]}}"
{_command_path()}    value="$({FUNC}_value "$cmdpath" "$prev")"
    if [ "$COMP_CWORD" -gt 1 ] && [ -n "$value" ]; then
        case "$value" in
            file) COMPREPLY=($(compgen -f -- "$cur")) ;;
            choices:*) COMPREPLY=($(compgen -W "${{value#choices:}}" -- "$cur")) ;;
        esac
        return 0
    fi
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$({FUNC}_options "$cmdpath")" -- "$cur"))
        return 0
    fi
    local commands
    commands="$({FUNC}_commands "$cmdpath")"
    if [ -n "$commands" ]; then
        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        return 0
    fi
    case "$cmdpath" in
        {files}) COMPREPLY=($(compgen -f -- "$cur")) ;;
        {ids}) {ids_reply} ;;
    esac
    return 0
}}
"""


def bash(root: Node) -> str:
    nodes = walk(root)
    return f"""# bash completion for {PROG}
# {HEADER}
# Install: source this file from ~/.bashrc, or copy it to
# ~/.local/share/bash-completion/completions/{PROG}

{_tables(nodes)}
{_complete(nodes)}
complete -F {FUNC} {PROG}
"""

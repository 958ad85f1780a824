"""The zsh completion script: the same three lookup tables as bash's (with help
texts, for ``_describe``), an id helper, and the completion function."""

from __future__ import annotations

from .tree import ASK, FUNC, HEADER, PROG, Node, sq, valued_options, walk


def _item(name: str, text: str) -> str:
    """``name:help`` for ``_describe`` (a colon in the name escaped)."""
    escaped = name.replace(":", "\\:")
    return sq(f"{escaped}:{text}")


def _case(function: str, reset: str, subject: str, arms: list[str]) -> str:
    """A function that sets ``reply``/``REPLY`` from the arm of ``case subject`` that matches."""
    body = "\n".join(f"        {arm} ;;" for arm in arms)
    return f"""{FUNC}_{function}() {{
    {reset}
    case "{subject}" in
{body}
    esac
}}
"""


def _tables(nodes: list[Node]) -> str:
    def reply(node: Node, items: list[str]) -> str:
        return f'("{node.path}") reply=({" ".join(items)})'

    commands = [reply(n, [_item(c.name, c.help) for c in n.commands]) for n in nodes if n.commands]
    options = [
        reply(n, [_item(name, o.help) for o in n.options for name in o.names]) for n in nodes
    ]
    values = [f'("{n.path}|{name}") REPLY={sq(o.value)}' for n, name, o in valued_options(nodes)]
    return "\n".join(
        [_case("commands", "reply=()", "$1", commands),
         _case("options", "reply=()", "$1", options),
         _case("value", 'REPLY=""', "$1|$2", values)]
    )  # fmt: skip


def _ids() -> str:
    """Conversation ids, from the program itself."""
    return f"""{FUNC}_ids() {{
    local -a found
    found=(${{(f)"$(COMP_WORDS="${{words[*]}}" COMP_CWORD=$((CURRENT - 1)) {ASK})"}})
    compadd -- $found
}}
"""


def _command_path() -> str:
    """The loop that finds the subcommand typed so far (skipping option values)."""
    return f"""    while (( i < CURRENT )); do
        word="${{words[i]}}"
        {FUNC}_value "$cmdpath" "$word"
        if [[ -n "$REPLY" ]]; then
            (( i += 2 ))
            continue
        fi
        {FUNC}_commands "$cmdpath"
        if (( ${{reply[(I)${{(b)word}}:*]}} )); then
            cmdpath="${{cmdpath:+$cmdpath }}$word"
        fi
        (( i++ ))
    done
"""


def _complete(nodes: list[Node]) -> str:
    """The completion function: an option's value, an option, a subcommand, an argument."""
    files = "|".join(f'"{n.path}"' for n in nodes if n.file_arguments) or '"-"'
    ids = "|".join(f'"{n.path}"' for n in nodes if n.id_arguments) or '"-"'
    return f"""{FUNC}() {{
    local cmdpath="" word REPLY
    local -a reply
    local -i i=2
{_command_path()}    {FUNC}_value "$cmdpath" "${{words[CURRENT-1]}}"
    if (( CURRENT > 2 )) && [[ -n "$REPLY" ]]; then
        case "$REPLY" in
            (file) _files ;;
            (choices:*) compadd -- ${{=REPLY#choices:}} ;;
        esac
        return
    fi
    if [[ "${{words[CURRENT]}}" == -* ]]; then
        {FUNC}_options "$cmdpath"
        _describe -t options option reply
        return
    fi
    {FUNC}_commands "$cmdpath"
    if (( ${{#reply}} )); then
        _describe -t commands command reply
        return
    fi
    case "$cmdpath" in
        ({files}) _files ;;
        ({ids}) {FUNC}_ids ;;
    esac
}}
"""


def zsh(root: Node) -> str:
    nodes = walk(root)
    return f"""#compdef {PROG}
# zsh completion for {PROG}
# {HEADER}
# Install: copy this file as _{PROG} into a directory of $fpath, then run compinit.

{_tables(nodes)}
{_ids()}
{_complete(nodes)}
if [[ "$funcstack[1]" == "_{PROG}" ]]; then  # autoloaded from $fpath
    {FUNC} "$@"
else
    compdef {FUNC} {PROG}
fi
"""

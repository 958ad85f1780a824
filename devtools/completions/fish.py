"""The fish completion script: one ``complete`` line per subcommand, option and
argument kind, each guarded by the subcommand path it belongs to."""

from __future__ import annotations

from .tree import ASK, HEADER, PROG, Node, Opt, sq, valued_options, walk


def _flags(option: Opt) -> str:
    flags = " ".join(
        f"-l {name[2:]}" if name.startswith("--") else f"-s {name[1:]}" for name in option.names
    )
    if option.value == "file":
        flags += " -r -F"
    elif option.value.startswith("choices:"):
        flags += f" -x -a {sq(option.value[len('choices:') :])}"
    elif option.value:
        flags += " -x"
    return flags


def _lines(node: Node) -> list[str]:
    at = f"-n {sq(f'__makers_store_at {sq(node.path)}')}"
    lines = [f"complete -c {PROG} {at} -a {sq(c.name)} -d {sq(c.help)}" for c in node.commands]
    lines += [f"complete -c {PROG} {at} {_flags(o)} -d {sq(o.help)}" for o in node.options]
    if node.file_arguments:
        lines.append(f"complete -c {PROG} {at} -F")
    if node.id_arguments:
        lines.append(f"complete -c {PROG} {at} -a '(__makers_store_ids)'")
    return lines


def fish(root: Node) -> str:
    nodes = walk(root)
    valued = " ".join(sq(f"{n.path}|{name}") for n, name, _ in valued_options(nodes))
    subcommands = " ".join(sq(f"{n.path}|{c.name}") for n in nodes for c in n.commands)
    body = "\n".join(line for n in nodes for line in _lines(n))
    return f"""# fish completion for {PROG}
# {HEADER}
# Install: copy this file to ~/.config/fish/completions/{PROG}.fish

set -g __makers_store_valued {valued}
set -g __makers_store_subcommands {subcommands}

function __makers_store_path
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l path ""
    set -l skip 0
    for word in $tokens
        if test $skip = 1
            set skip 0
            continue
        end
        if contains -- "$path|$word" $__makers_store_valued
            set skip 1
        else if contains -- "$path|$word" $__makers_store_subcommands
            set path (string trim -- "$path $word")
        end
    end
    echo $path
end

function __makers_store_at
    set -l path (__makers_store_path)
    test "$path" = "$argv[1]"
end

function __makers_store_ids
    set -l words (commandline -opc) (commandline -ct)
    COMP_WORDS="$words" COMP_CWORD=(math (count $words) - 1) {ASK}
end

complete -c {PROG} -f
{body}
"""

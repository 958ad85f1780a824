"""``makers-store doctor``: find, and with ``--fix`` repair, what breaks a
model call or a UI in conversation histories (``store.admin.check_history``
and ``store.admin.repair_history``; the rules are in
``makers_store.lifecycle.history_rules``).

The exit code says whether the history is clean when the command ends: 0
when nothing was found (or everything found was repaired), 1 otherwise, with
``--dry-run`` too (it changes nothing, so what it found is still there).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .context import open_session
from .errors import UsageProblem
from .options import DryRun, JsonOutput, Plan, Yes, complete_conversation_ids, confirmed
from .text import counted

if TYPE_CHECKING:
    from makers_store.lifecycle.history_rules import HistoryFinding

#: What ``--fix`` does for each kind of repair, as a plan's words.
#: (each repair's sentence is ``history_rules.REPAIR_WORDS``: the Studio shows it too)
_REPAIR_WORDS = {
    "append-interrupted-result": ("append", "interrupted tool result"),
    "set-aside-call": ("set aside", "tool call"),
    "delete-duplicate": ("delete", "duplicate message"),
}  # fmt: skip

#: What a person can do about each rule's finding (``--fix`` does what
#: :data:`_REPAIR_WORDS` says, for the findings it can repair).
_HINTS = {
    "orphan-tool-call": "append the call's result: makers-store msg append CONVERSATION_ID "
    "--role tool --tool-call-id CALL_ID --content TEXT",
    "orphan-tool-result": "the call it answers is gone: delete the result "
    "(makers-store msg delete CONVERSATION_ID MESSAGE_ID) or append the call before it",
    "misplaced-tool-result": "a result must come right after its call's turn: delete it and "
    "append it again after the call, or set the call aside with --fix",
    "orphan-session-call": "the Agents SDK session lacks the call's output item: add one with "
    "the session's add_items, or delete the call item",
    "orphan-session-output": "the session's output item answers no call item: delete it",
    "duplicate-message-id": "two messages hold one id: delete one "
    "(makers-store msg delete CONVERSATION_ID MESSAGE_ID)",
    "duplicate-message": "the same message was appended twice by one run: delete the later "
    "copy (--fix does)",
    "openai-invalid-message": "rewrite its content or metadata into a shape Chat Completions "
    "takes (makers-store msg update ... --content-json / --meta)",
    "anthropic-invalid-message": "rewrite its content into blocks the Messages API takes "
    "(makers-store msg update ... --content-json)",
    "orphan-adapter-data": "framework data left by a deleted conversation: makers-store prune "
    "--checkpoints keep-latest removes orphaned transcripts; export first to keep it",
}


def hint_of(rule: str) -> str:
    """The hint for ``rule``'s findings (every rule has one; a new rule without
    one says where to look)."""
    return _HINTS.get(rule, "see docs/lifecycle.md, the history doctor")


ConversationArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="CONVERSATION_ID",
        help="Check only this conversation (default: every conversation in the store).",
        show_default=False,
        autocompletion=complete_conversation_ids,
    ),
]
Fix = Annotated[
    bool,
    typer.Option(
        "--fix",
        help="Repair what has one safe repair: an orphan tool call gets a result saying it was "
        "interrupted, an exact duplicate is deleted. Asks first.",
    ),
]


def doctor_command(
    ctx: typer.Context,
    conversation_id: ConversationArgument = None,
    fix: Fix = False,
    dry_run: DryRun = False,
    yes: Yes = False,
    as_json: JsonOutput = False,
) -> None:
    """Check conversation histories for what breaks a model call or a UI.

    Finds tool calls without results and results without calls (also in
    OpenAI Agents SDK session items), duplicated messages, messages the
    converters cannot turn into valid OpenAI or Anthropic input, and adapter
    data whose conversation is gone. Exit code 1 when it finds something.
    """
    from .render import progress

    if (dry_run or yes) and not fix:
        raise UsageProblem("--dry-run and --yes go with --fix")
    with open_session(ctx) as session:
        admin = session.store.admin
        checked = 0

        def one_more() -> None:
            nonlocal checked
            checked += 1

        total = 1 if conversation_id is not None else admin.count_conversations()
        found = 0
        findings: list[dict[str, Any]] = []
        repairable: list[HistoryFinding] = []
        with progress("checking", total) as bar:

            def advance() -> None:
                one_more()
                bar.advance()

            for finding in admin.check_history(conversation_id, on_conversation=advance):
                found += 1
                if not as_json:
                    _print_finding(finding)
                if as_json or fix:  # kept only when they are printed together, or repaired
                    findings.append({**finding.to_dict(), "hint": hint_of(finding.rule)})
                if finding.repair is not None:
                    repairable.append(finding)
        if not fix:
            _summary(checked, found, len(repairable), as_json, findings)
            _exit(found)
            return
        if not repairable:
            _summary(checked, found, 0, as_json, findings)
            _exit(found)
            return
        plan = _plan(repairable, findings, checked)
        try:
            confirmed(plan, yes=yes, dry_run=dry_run, as_json=as_json)
        except typer.Exit:  # --dry-run: nothing changed, so what was found is still there
            raise typer.Exit(1 if found else 0) from None
        repairs = []
        with progress("repairing", total) as bar:
            for repair in admin.repair_history(conversation_id, on_conversation=bar.advance):
                repairs.append(repair.to_dict())
                if not as_json:
                    _print_repair(repair.finding, repair.outcome)
    left = found - sum(1 for r in repairs if r["repaired"])
    if as_json:
        from .render import emit_json

        emit_json(
            {"conversations": checked, "findings": findings, "repairs": repairs, "remaining": left}
        )
    else:
        from .render import stdout

        done = sum(1 for r in repairs if r["repaired"])
        stdout().print(
            f"repaired {done:,} of {counted(len(repairs), 'repairable finding')}; "
            + (
                f"{counted(max(left, 0), 'finding')} left (run the doctor again to see them)"
                if left > 0
                else "the history is clean"
            )
        )
    _exit(max(left, 0))


def _print_finding(finding: HistoryFinding) -> None:
    """One finding: where, which rule, which messages; then what it means and
    what ``--fix`` would do. User data (ids, text) as safe text."""
    from .render import Text, cell, stdout, text

    screen = stdout()
    head = cell(finding.conversation_id) + Text(f"  {finding.rule}")
    if finding.message_ids:
        head += Text("  ") + cell(", ".join(finding.message_ids))
    screen.print(head)
    from makers_store.lifecycle.history_rules import REPAIR_WORDS

    repair = REPAIR_WORDS.get(finding.repair or "")
    advice = f" [--fix: {repair}]" if repair else ""
    screen.print(Text("    ") + text(finding.description) + Text(advice))
    screen.print(Text(f"    hint: {hint_of(finding.rule)}", style="dim"))


def _print_repair(finding: HistoryFinding, outcome: str) -> None:
    from .render import Text, cell, stdout, text

    head = cell(finding.conversation_id) + Text(f"  {finding.rule}  ")
    stdout().print(head + text(outcome))


def _summary(
    checked: int, found: int, repairable: int, as_json: bool, findings: list[dict[str, Any]]
) -> None:
    if as_json:
        from .render import emit_json

        emit_json(
            {
                "conversations": checked,
                "findings": findings,
                "count": found,
                "repairable": repairable,
            }
        )
        return
    from .render import stdout

    if not found:
        said = "the history is clean"
    else:
        said = counted(found, "finding")
        if repairable:
            said += f", {repairable:,} repairable with --fix"
    stdout().print(f"checked {counted(checked, 'conversation')}: {said}")


def _plan(repairable: list[HistoryFinding], findings: list[dict[str, Any]], checked: int) -> Plan:
    kinds = Counter(f.repair for f in repairable)
    clauses = [
        f"{words[0]} {counted(kinds[name], words[1])}"
        for name, words in _REPAIR_WORDS.items()
        if kinds[name]
    ]
    conversations = len({f.conversation_id for f in repairable})
    action = f"{', '.join(clauses)} in {counted(conversations, 'conversation')}"
    from makers_store.lifecycle.history_rules import REPAIR_WORDS

    from .text import printable_line

    details = [
        f"{REPAIR_WORDS[f.repair]}: {printable_line(f.conversation_id)} "
        f"{printable_line(', '.join(f.message_ids))} ({f.rule})"
        for f in repairable
        if f.repair is not None
    ]
    return Plan(
        action,
        details=details,
        counts={
            "conversations": checked,
            "findings": findings,
            "repairable": len(repairable),
            "repairs": dict(kinds),
        },
    )


def _exit(found: int) -> None:
    if found:
        raise typer.Exit(1)

"""Budgets as a person or a script reads them: text with paste-ready snippets, or JSON.

The budgets are computed once in `firedup.tables.budget`; this module only renders them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from firedup.core.safe import json_text, visible
from firedup.core.units import fit_lines, fmt_duration
from firedup.render.snippets import snippets_for
from firedup.tables.budget import BudgetReport
from firedup.tables.grouping import left_out_lines, population_label
from firedup.tables.timeouts import LayerTimeouts


def budget_json(report: BudgetReport) -> dict[str, Any]:
    """`report.as_json()` with each group's snippets (bash, kubernetes, compose)."""
    data = report.as_json()
    for i, (item, b) in enumerate(zip(data["groups"], report.budgets, strict=True)):
        item["snippets"] = snippets_for(b, _timeouts(report, i)) if b.budget_seconds is not None else {}
    return data


def _timeouts(report: BudgetReport, index: int) -> LayerTimeouts | None:
    return report.timeouts[index] if index < len(report.timeouts) else None


def _seconds(seconds: int) -> str:
    """`17 min 30 s (1050 s)`, `57 s`: a budget as people read it and as it is pasted."""
    return f"{fmt_duration(seconds)} ({seconds} s)" if seconds >= 60 else fmt_duration(seconds)


def answer_line(report: BudgetReport, index: int) -> str:
    """One group's answer: `production (...): 17 min 30 s (1050 s) from launch; risk < 1 % ...`."""
    b = report.budgets[index]
    if b.budget_seconds is None:
        return f"{b.label}: no budget (no ready run with a time to ready)"
    split = report.splits[index] if index < len(report.splits) else None
    text = f"{b.label}: budget {_seconds(b.budget_seconds)} from launch"
    if split is not None:
        warm = split[2].budget
        text += (f" for a cold start; warm start {_seconds(warm.budget_seconds)}"
                 if warm.budget_seconds is not None else " for a cold start")
    return f"{text}; {b.risk_label.split(';')[0]}"


def budget_text(report: BudgetReport, snippets: Sequence[str] = (), width: int | None = None,
                verbose: bool = False) -> str:
    """The answer first (a line per group: its budget from launch), then how each was made, what
    was left out, and the snippets asked for. With a `width` (the terminal's) the prose is fitted
    to it; the snippets are not: they are code to paste, and a wrapped line would no longer run.
    `verbose` adds each budget's whole derivation and lists every run left out."""
    g = report.grouping
    if not g.groups:
        return "\n".join(["no server startup found in the input",
                          *(f"  {visible(lo.source, one_line=True)}: {lo.reason}" for lo in g.left_out)])
    lines = [answer_line(report, i) for i in range(len(report.budgets))]
    lines.append("")
    if g.population:
        lines.append("runs of " + population_label(g.population))
    lines.extend(f"note: {n}" for n in g.notes)
    for i, b in enumerate(report.budgets):
        if b.budget_seconds is not None:
            lines.extend(_derivation_lines(report, i, verbose))
    lines.extend(left_out_lines(g.left_out, "left out", verbose))
    shown = [i for i, b in enumerate(report.budgets) if b.budget_seconds is not None]
    if not snippets and shown:
        lines.append("")
        lines.append("snippets to paste: --snippet timeouts|bash|kubernetes|compose" + (
            " with --group KEY=VALUE (one group's)" if len(shown) > 1 else "") + "; -v shows every one")
    return "\n".join([fit_lines("\n".join(lines), width), *_snippet_blocks(report, snippets, width)])


def _derivation_lines(report: BudgetReport, index: int, verbose: bool) -> list[str]:
    """How one group's budget was made: its method and risk, its clock, its cold and warm starts
    apart, and (`verbose`) its whole derivation."""
    b = report.budgets[index]
    lines = [f"{b.label}: {b.method_label}; {b.risk_label}" + (f"; {b.beside}" if b.beside else "")]
    clock = report.clocks[index] if index < len(report.clocks) else None
    if clock is not None:
        lines.append(f"  {clock.text}")
    split = report.splits[index] if index < len(report.splits) else None
    if split is not None:
        apart, _, warm = split
        lines.append(f"  cold and warm starts apart: {len(apart.cold)} cold, {len(apart.warm)} warm "
                     f"(warm: {warm.budget.method_label}; {warm.budget.risk_label})")
        for rid in apart.cold:
            lines.append(f"    cold: {apart.sources.get(rid, rid)}: {apart.reasons[rid]}")
        lines.extend(f"    warm: {apart.sources.get(rid, rid)}" for rid in apart.warm)
    if verbose:
        lines.append(f"  {b.statement}")
    return lines


def _snippet_blocks(report: BudgetReport, snippets: Sequence[str], width: int | None) -> list[str]:
    """The snippets asked for, each group's under a `# ---- kind: group ----` line: the timeouts
    (prose) fitted to `width`, the code as it is, since a wrapped line would no longer run."""
    lines: list[str] = []
    for index, b in enumerate(report.budgets):
        if b.budget_seconds is None or not snippets:
            continue
        texts = snippets_for(b, _timeouts(report, index))
        for kind in snippets:
            if kind not in texts:
                continue
            lines.append("")
            lines.append(fit_lines(f"# ---- {kind}: {visible(b.label, one_line=True)} ----", width).replace("\n", "\n# "))
            text = texts[kind].rstrip("\n")  # the timeouts are prose; the rest is code to paste as is
            lines.append(fit_lines(text, width) if kind == "timeouts" else text)
    return lines


SNIPPET_KINDS = ("timeouts", "bash", "kubernetes", "compose")


def budget_output(report: BudgetReport, snippets: Sequence[str] = (), verbose: bool = False, as_json: bool = False,
                  width: int | None = None) -> str:
    """What `firedup budget` prints, to its last newline: the JSON, one snippet alone (a script
    to redirect into a file), or the text with the snippets asked for (`all`: every kind, as
    `verbose` without a choice; `none`: none)."""
    if as_json:
        return json_text(budget_json(report), indent=1) + "\n"
    kinds = SNIPPET_KINDS if "all" in snippets or (verbose and not snippets) else tuple(
        k for k in snippets if k != "none")
    asked = [k for k in snippets if k != "none"]
    if asked and not any(b.budget_seconds is not None for b in report.budgets):
        from firedup.errors import DataError

        raise DataError(f"--snippet {asked[0]}: no budget, so no snippet: no run in the input reached ready")
    if len(kinds) == 1 and kinds[0] != "timeouts":
        return snippet_only(report, kinds[0])
    return budget_text(report, kinds, width=width, verbose=verbose) + "\n"


def group_labels(report: BudgetReport) -> list[str]:
    """`KEY=VALUE[,KEY=VALUE]` of each group with a budget: what `--group` takes."""
    return [",".join(f"{k}={v}" for k, v in b.key.items()) or "all" for b in report.budgets
            if b.budget_seconds is not None]


def select_group(report: BudgetReport, group: str | None) -> BudgetReport:
    """The report cut to the group `--group KEY=VALUE[,...]` names (None: unchanged). Raises
    UsageError naming the groups when none matches."""
    from firedup.errors import UsageError

    if group is None:
        return report
    from firedup.tables.grouping import parse_group_selector

    try:
        wanted = parse_group_selector(group)
    except UsageError as exc:
        raise UsageError(f"{exc}; give KEY=VALUE, one of: {'; '.join(group_labels(report)) or 'none'}") from None
    keep = [i for i, b in enumerate(report.budgets)
            if set(wanted) <= set(b.key) and all(str(b.key[k]).lower() == v.strip().lower() for k, v in wanted.items())]
    if not keep:
        raise UsageError(f"--group {group}: no such group; the groups are: {'; '.join(group_labels(report)) or 'none'}")

    def pick(items: list[Any]) -> list[Any]:
        return [items[i] for i in keep if i < len(items)]

    return BudgetReport(report.grouping, pick(report.budgets), pick(report.timeouts), pick(report.clocks),
                        pick(report.splits))


def snippet_only(report: BudgetReport, kind: str) -> str:
    """One kind of snippet and nothing else, so that `firedup budget --snippet bash > wait.sh` is a
    script holding one budget. Several groups with a budget: a UsageError naming them (choose one
    with --group), never the first one silently. No budget at all: a DataError (exit 5), no script."""
    from firedup.errors import DataError, UsageError

    with_budget = [i for i, b in enumerate(report.budgets) if b.budget_seconds is not None]
    if not with_budget:
        # a script that says "ready" for a server that is not even running must not be written
        raise DataError(f"--snippet {kind}: no budget, so no snippet: no run in the input reached ready")
    if len(with_budget) > 1:
        raise UsageError(f"--snippet {kind} writes one group's budget, and there are {len(with_budget)}: "
                         f"choose one with --group ({'; '.join(group_labels(report))})")
    index = with_budget[0]
    return snippets_for(report.budgets[index], _timeouts(report, index))[kind]

"""Budgets as a person or a script reads them: text with paste-ready snippets, or JSON.

The budgets are computed once in `firedup.tables.budget`; this module only renders them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from firedup.core.safe import visible
from firedup.core.units import fit_lines, fmt_duration
from firedup.render.snippets import snippets_for
from firedup.tables.budget import BudgetReport, LayerTimeouts
from firedup.tables.compare import left_out_lines, population_label


def budget_json(report: BudgetReport) -> dict[str, Any]:
    """`report.as_json()` with each group's snippets (bash, kubernetes, compose)."""
    data = report.as_json()
    for i, (item, b) in enumerate(zip(data["groups"], report.budgets, strict=True)):
        item["snippets"] = snippets_for(b, _timeouts(report, i)) if b.budget_seconds is not None else {}
    return data


def _timeouts(report: BudgetReport, index: int) -> LayerTimeouts | None:
    return report.timeouts[index] if index < len(report.timeouts) else None


def budget_text(report: BudgetReport, snippets: Sequence[str] = ("timeouts", "bash", "kubernetes", "compose"),
                width: int | None = None) -> str:
    """The budgets, then the snippets. With a `width` (the terminal's) the prose is fitted to it;
    the snippets are not: they are code to paste, and a wrapped line would no longer run."""
    g = report.grouping
    if not g.groups:
        return "\n".join(["no server startup found in the input",
                          *(f"  {visible(lo.source, one_line=True)}: {lo.reason}" for lo in g.left_out)])
    lines: list[str] = []
    if g.population:
        lines.append("runs of " + population_label(g.population))
    lines.extend(f"note: {n}" for n in g.notes)
    for b in report.budgets:
        lines.append("")
        if b.budget_seconds is None:
            lines.append(f"{b.label}: no budget ({b.statement})")
            continue
        lines.append(f"{b.label}: budget {fmt_duration(b.budget_seconds)} ({b.budget_seconds} s), "
                     f"{b.method_label}; {b.risk_label}")
        lines.append(f"  {b.statement}")
    lines.extend(left_out_lines(g.left_out, "left out"))
    lines = [fit_lines("\n".join(lines), width)]
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
    return "\n".join(lines)


def snippet_only(report: BudgetReport, kind: str) -> str:
    """One kind of snippet and nothing else, so that `firedup budget --snippet bash > wait.sh` is a
    script: the first group's with a budget (the others follow as comments, for YAML as
    separate documents). No budget at all: a comment saying why."""
    parts: list[str] = []
    for index, b in enumerate(report.budgets):
        if b.budget_seconds is None:
            continue
        text = snippets_for(b, _timeouts(report, index))[kind]
        if not parts:
            parts.append(text)
        elif kind == "bash":
            parts.append("# ---- another group: " + b.label.replace("\n", " ") + " ----\n"
                         + "".join("# " + line + "\n" for line in text.splitlines()))
        else:
            parts.append("---\n" + text)
    if not parts:
        return "# no budget: no run reached ready in the input\n"
    return "".join(parts)

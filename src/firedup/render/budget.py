"""Budgets as a person or a script reads them: text with paste-ready snippets, or JSON.

The budgets are computed once in `firedup.tables.budget`; this module only renders them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from firedup.core.safe import visible
from firedup.core.units import fmt_duration
from firedup.render.snippets import snippets_for
from firedup.tables.budget import BudgetReport
from firedup.tables.compare import left_out_lines, population_label


def budget_json(report: BudgetReport) -> dict[str, Any]:
    """`report.as_json()` with each group's snippets (bash, kubernetes, compose)."""
    data = report.as_json()
    for item, b in zip(data["groups"], report.budgets, strict=True):
        item["snippets"] = snippets_for(b) if b.budget_seconds is not None else {}
    return data


def budget_text(report: BudgetReport, snippets: Sequence[str] = ("bash", "kubernetes", "compose")) -> str:
    g = report.grouping
    if not g.groups:
        return "\n".join(["no server startup found in the input",
                          *(f"  {lo.source}: {lo.reason}" for lo in g.left_out)])
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
                     f"method: {b.method}, asked risk {b.risk:.2%}")
        lines.append(f"  {b.statement}")
    lines.extend(left_out_lines(g.left_out, "left out"))
    for b in report.budgets:
        if b.budget_seconds is None or not snippets:
            continue
        texts = snippets_for(b)
        for kind in snippets:
            lines.append("")
            lines.append(f"# ---- {kind}: {visible(b.label, one_line=True)} ----")
            lines.append(texts[kind].rstrip("\n"))
    return "\n".join(lines)

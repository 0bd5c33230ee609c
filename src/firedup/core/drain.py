"""Templates of log lines no rule knows, Drain-style (He et al., ICWS 2017): numbers and ids
masked, lines of the same length and first word grouped, a line joining the template it
shares most words with (at least `similarity` of them), the words that differ becoming `<*>`.

Why not drain3: its last release (0.9.11, 2022) is an sdist only, untyped (mypy strict here),
pulls jsonpickle and cachetools for persistence this does not need, and is configured by an
ini file; a start-up has a few thousand unknown lines at most, which this mines in one pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

WILD = "<*>"
_HEX = frozenset("0123456789abcdefABCDEF")
MAX_TEMPLATES_PER_GROUP = 200  # a bound on the work per line; later lines start new groups' tail


def _masked(token: str) -> str:
    """A word with a digit in it (a number, a size, a pid, a path with a hash) is a variable."""
    if any(c.isdigit() for c in token):
        return WILD
    if len(token) >= 8 and all(c in _HEX for c in token):
        return WILD
    return token


@dataclass
class Template:
    """Lines sharing one shape: how many, the first one's number, and one of them whole."""

    tokens: list[str]
    count: int
    line: int
    example: str
    lines: list[int] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(self.tokens)

    def as_contract(self) -> dict[str, object]:
        return {"template": self.text, "count": self.count, "line": self.line, "example": self.example}


def _similarity(template: list[str], tokens: list[str]) -> float:
    same = sum(1 for a, b in zip(template, tokens, strict=True) if a == b and a != WILD)
    return same / len(tokens) if tokens else 1.0


def mine(lines: Iterable[tuple[int, str]], similarity: float = 0.5) -> list[Template]:
    """Templates of `(line number, text)` pairs, most lines first (then first seen)."""
    groups: dict[tuple[int, str], list[Template]] = {}
    order: list[Template] = []
    for number, text in lines:
        tokens = [_masked(t) for t in text.split()]
        if not tokens:
            continue
        key = (len(tokens), tokens[0])
        group = groups.setdefault(key, [])
        best: Template | None = None
        best_score = -1.0
        for candidate in group:
            score = _similarity(candidate.tokens, tokens)
            if score > best_score:
                best, best_score = candidate, score
        if best is not None and best_score >= similarity:
            best.tokens = [a if a == b else WILD for a, b in zip(best.tokens, tokens, strict=True)]
            best.count += 1
            best.lines.append(number)
            continue
        if len(group) >= MAX_TEMPLATES_PER_GROUP:
            group.pop(0)
        template = Template(tokens, 1, number, text, [number])
        group.append(template)
        order.append(template)
    return sorted(order, key=lambda t: (-t.count, t.line))

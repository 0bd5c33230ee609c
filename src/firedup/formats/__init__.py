"""The format registry: every module in this package that defines `FORMAT` is an engine.

Adding an engine means adding a module here; nothing else in firedup names engines (a test
holds that). A format defined elsewhere (a plugin, a test) joins with `register`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Container
from functools import cache

from firedup.errors import UnknownEngineError
from firedup.formats._foreign import literals as _foreign_literals
from firedup.formats._foreign import looks_like
from firedup.formats.base import Format, Header, Rule

__all__ = ["Format", "Header", "Rule", "all_formats", "foreign_engine", "get_format", "known_engines", "no_known_engine",
           "register", "sniff_format", "sniff_literals", "unregister"]

_NOT_ENGINES = {"base", "vocab"}


@cache
def all_formats() -> dict[str, Format]:
    """Import every engine module once, in name order."""
    found: dict[str, Format] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name in _NOT_ENGINES or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        fmt = getattr(module, "FORMAT", None)
        if isinstance(fmt, Format):
            found[fmt.name] = fmt
    return found


def register(fmt: Format) -> Format:
    """Add a format defined outside this package; it then sniffs, parses, waits and replays
    like the built-in ones. Replaces a format of the same name."""
    all_formats()[fmt.name] = fmt
    return fmt


def unregister(name: str) -> None:
    """Forget a format added with `register` (a test cleaning up after itself)."""
    all_formats().pop(name, None)


def known_engines() -> str:
    """`sglang, vllm`: the registered names, for help texts and messages."""
    return ", ".join(sorted(all_formats()))


def get_format(name: str) -> Format:
    formats = all_formats()
    try:
        return formats[name]
    except KeyError:
        known = ", ".join(sorted(formats))
        raise UnknownEngineError(f"unknown engine {name!r} (known: {known})") from None


def sniff_format(sample: str, found: Container[str] | None = None) -> Format | None:
    """The format whose rules best explain `sample` (`Format.sniff_score`: every rule that matches one
    of its lines is evidence); None when no format's rule does (an input of no known engine is
    never read as some default engine), or when a foreign engine's literals weigh more (another
    engine's log quoting a line of ours is not ours to read). `found`: the sniff literals a
    caller already found in `sample` (the batch engine's scan), foreign engines' included.

    Lines are read only until the answer is certain: rules are tried heaviest first (across
    formats), each format's score kept between what its rules tried so far give and what its
    untried ones could add; an SGLang head is decided by its args and ready lines and the
    absence of vLLM's heavy ones, not by looking for every rule's literal."""
    formats = all_formats()
    other = looks_like(sample, found)
    foreign = other[1] if other is not None else 0.0
    low = dict.fromkeys(formats, 0.0)
    high = {name: fmt.sniff_most for name, fmt in formats.items()}
    for weight, name, rule in _sniff_queue(formats):
        decided = _decided(low, high, foreign)
        if decided is not None:
            return formats[decided] if decided else None
        if formats[name].recognises(rule, sample, found):
            low[name] += weight
        else:
            high[name] -= weight
    scored = sorted(((score, name) for name, score in low.items()), reverse=True)
    if not scored or scored[0][0] <= 0 or foreign > scored[0][0]:
        return None
    return formats[scored[0][1]]


# The registered formats' sniff rules, heaviest first, by the formats (ids, and the formats
# themselves so an id is never reused while kept): sorted once, not for every log's sniff.
_QUEUES: dict[tuple[int, ...], tuple[tuple[Format, ...], list[tuple[float, str, Rule]]]] = {}


def _sniff_queue(formats: dict[str, Format]) -> list[tuple[float, str, Rule]]:
    key = tuple(id(fmt) for fmt in formats.values())
    kept = _QUEUES.get(key)
    if kept is None or any(a is not b for a, b in zip(kept[0], formats.values(), strict=True)):
        queue = sorted(((rule.evidence, name, rule) for name, fmt in formats.items() for rule in fmt.sniff_rules),
                       key=lambda item: -item[0])
        kept = _QUEUES[key] = (tuple(formats.values()), queue)
    return kept[1]


def _decided(low: dict[str, float], high: dict[str, float], foreign: float) -> str | None:
    """The format `sniff_format` gives whatever the rules not tried yet show ("" for none), or None
    while they could still change it."""
    if max(high.values(), default=0.0) <= 0 or foreign > max(high.values(), default=0.0):
        return ""
    for name, score in low.items():
        if score > 0 and score >= foreign and all(score > high[other] for other in high if other != name):
            return name
    return None


def sniff_literals() -> frozenset[str]:
    """Every literal `sniff_format` looks for: those of the registered formats' rules that are evidence,
    and the foreign engines'. A caller that finds them in one pass passes what it found as
    `sniff_format(sample, found)`."""
    return frozenset(lit for fmt in all_formats().values() for lit in fmt.sniff_literals) | _foreign_literals()


def release_literals() -> frozenset[str]:
    """Every literal a registered format's `release_hint` looks for (`Dating.release_literals`):
    a caller whose scan finds them with the sniff literals passes what it found as
    `release_hint(sample, found)`."""
    return frozenset(lit for fmt in all_formats().values() for lit, _, _ in fmt.dating.release_literals)


def foreign_engine(sample: str) -> str | None:
    """The engine firedup does not read that `sample` looks like ("TGI (text-generation-inference)"), if any."""
    other = looks_like(sample)
    return other[0].title if other is not None else None


def no_known_engine(looks: str | None = None) -> str:
    """Why an input no format recognises is not read, what it looks like, and what would help (one line)."""
    if looks:
        return (f"no known engine: it looks like {looks} output, which firedup does not read "
                f"(it reads {known_engines()})")
    return f"no known engine: none of {known_engines()} recognises its first lines; name one with --engine"

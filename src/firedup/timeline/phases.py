"""The phases every view lists, in order, and the umbrella phases that span others."""

from __future__ import annotations

from collections.abc import Iterable

from firedup.formats import all_formats

PHASE_ORDER = ("launch", "dist_init", "load_weights", "model_loading", "torch_compile", "kv_cache", "cuda_graph",
               "draft.dist_init", "draft.load_weights", "draft.kv_cache", "draft.cuda_graph", "engine_init",
               "http_start", "warmup", "unattributed", "total")

_UMBRELLAS: dict[tuple[int, ...], dict[str, tuple[str, ...]]] = {}  # by the registered formats


def umbrella_phases() -> dict[str, tuple[str, ...]]:
    """Phases that span others (`Format.meaning.umbrella_phases`), over every registered format:
    cross-run views show runs of any engine side by side. Stacked with the phases inside,
    an umbrella counts the same seconds twice, and it never says which step inside was slow."""
    formats = tuple(all_formats().values())
    key = tuple(id(fmt) for fmt in formats)
    found = _UMBRELLAS.get(key)
    if found is None:
        found = {}
        for fmt in formats:
            for phase, inner in fmt.meaning.umbrella_phases.items():
                found[phase] = tuple(dict.fromkeys((*found.get(phase, ()), *inner)))
        _UMBRELLAS.clear()
        _UMBRELLAS[key] = found
    return found


def spanned(phase: str, present: Iterable[str]) -> bool:
    """True when `phase` is an umbrella and one of the phases it spans is among `present`."""
    inner = umbrella_phases().get(phase, ())
    return any(p in inner for p in present)


def spans_note(phase: str, present: Iterable[str]) -> str:
    """` (spans torch_compile, cuda_graph)` for an umbrella over phases listed beside it, else ``."""
    listed = set(present)
    inner = [p for p in umbrella_phases().get(phase, ()) if p in listed]
    return f" (spans {', '.join(inner)})" if inner else ""

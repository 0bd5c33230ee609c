"""Every explanation sentence firedup writes about a set of logs, one per line, by kind.

The kinds (issue 31): a run's verdict (`outcome`), each silence and what it was (`silence`,
`cause`), each cache verdict (`cache`), the crash and its hint (`crash`, `hint`), the engine's
own timings beside the table's (`timings`), what would have made it start sooner (`advice`), and over the whole set the budget's answer and
derivation (`budget`) and what was left out (`left out`). `tests/test_sentences.py` holds them
to golden files (`tests/golden/sentences/*.txt`, rewritten by `python tests/regen_golden.py`),
reads each as English (`english_problems`) and checks none contradicts a figure beside it
(`contradictions`).
"""

from __future__ import annotations

import re
from pathlib import Path

from firedup.core.units import fmt_duration, fmt_offset
from firedup.timeline.run import Run
from firedup.timeline.silence import COLD_SECONDS

# the sets of logs: the samples always, the real-GPU runs and the corpus where ../shared is
SETS = ("samples", "realgpu", "corpus")


def set_paths(name: str, root: Path, shared: Path) -> list[Path]:
    if name == "samples":
        return sorted((root / "sample_logs").glob("*.log"))
    if name == "realgpu":
        return sorted((shared / "realgpu").glob("*.log"))
    return sorted([*(shared / "corpus" / "sglang").glob("*.log"), *(shared / "corpus" / "vllm").glob("*.log")])


def run_sentences(run: Run) -> list[tuple[str, str]]:
    """(kind, sentence) for one run, as `timeline` words them (unwrapped)."""
    from firedup.render.text import cache_summary, engine_timings_lines, outcome_line, silence_place

    out = [("outcome", outcome_line(run))]
    first = run.first_ts
    for s in run.silences:
        at = fmt_offset(s.start.minus(first)) if first is not None else ""
        out.append(("silence", f"{fmt_duration(s.seconds)} at {at} {silence_place(s)}"))
        if s.cause:
            out.append(("cause", s.cause))
    for v in run.caches.values():
        if v.verdict != "unknown" or v.basis != "none":
            out.append(("cache", cache_summary(v)))
    if run.crash is not None:
        c = run.crash
        when = "after ready" if c.after_ready else f"in {c.phase or 'an unknown phase'}"
        out.append(("crash", f"{c.category}, {when}, line {c.line}"))
        if c.hint:
            out.append(("hint", " ".join(c.hint.split())))
    if run.engine_timings:
        lines = [line.strip() for line in engine_timings_lines(run, width=10_000)]
        out.append(("timings", " | ".join(lines)))
    out.extend(("advice", " ".join(item.line().split())) for item in run.advice)
    return out


def set_sentences(paths: list[Path], strip: str) -> list[str]:
    """Every sentence about these logs, `NAME#RUN kind: sentence`, then the set's budget."""
    from firedup.render.budget import budget_text
    from firedup.tables.budget import budgets
    from firedup.tables.frames import from_runs
    from firedup.timeline.pipeline import parse_paths

    result = parse_paths([str(p) for p in paths])
    lines = []
    for run in result.runs:
        name = Path(run.source).name
        # a path a sentence names (a twin's) is given without the checkout's folder: the goldens hold in any clone
        lines.extend(f"{name}#{run.run_index + 1} {kind}: {text.replace(strip, '') if strip else text}"
                     for kind, text in run_sentences(run))
    report = budgets(from_runs(result.runs))
    for verbose in (False, True):
        kind = "derivation" if verbose else "budget"
        text = budget_text(report, verbose=verbose).replace(strip, "")
        section = kind
        for line in text.split("\n"):
            if not line.strip():
                continue
            if line.startswith("left out"):
                section = "left out" + (" -v" if verbose else "")
            elif line.startswith("snippets to paste"):
                section = kind
            lines.append(f"{section}: {line.strip()}")
    return lines


# --- reading them as English ----------------------------------------------------------------------

_PLURAL_AFTER_ONE = re.compile(r"(?<![\d.,])\b1 (runs|silences|files|lines|crashes|groups|starts|ranks)\b")
_BAD = (
    (re.compile(r"\s[:;,.](?=\s|$)"), "space before punctuation"),
    (re.compile(r"…\s*:"), "a cut text run into a colon"),
    (re.compile(r"\b(?:after|in|for|at|took|of) \?(?=$|[\s,;)])"), "a time printed as ?"),
    (re.compile(r"\b(its|a|an|the) (the|a|an|its)\b"), "two articles"),
    (re.compile(r"\b([A-Za-z]\w*) \1\b"), "a doubled word"),
    (re.compile(r"\S {2,}\S"), "two spaces inside a sentence"),
    (re.compile(r"[,;]$"), "a sentence that stops on punctuation"),
    (re.compile(r", where the\b"), "`where` before a noun phrase"),
)
_WORDS = re.compile(r"[A-Za-z_][\w.'-]*")


def english_problems(sentence: str) -> list[str]:
    """What makes a sentence not read as English: `… : shorter than`, `after ?`, doubled clauses,
    `its the`, `1 silences`, unbalanced brackets."""
    if sentence.count("`") % 2:
        return ["unbalanced backquote"]
    sentence = re.sub(r"`[^`]*`", "`…`", sentence)  # a log's own text, quoted, is not ours to judge
    problems = [why for pattern, why in _BAD if pattern.search(sentence)]
    if _PLURAL_AFTER_ONE.search(sentence):
        problems.append("a plural after 1")
    for open_, close in ("()", "[]"):
        if sentence.count(open_) != sentence.count(close):
            problems.append(f"unbalanced {open_}{close}")
    words = _WORDS.findall(sentence)
    for n in range(6, len(words) // 2 + 1):  # a clause of 6 words or more said twice
        seen: set[tuple[str, ...]] = set()
        for i in range(len(words) - n + 1):
            gram = tuple(words[i:i + n])
            if gram in seen:
                problems.append(f"a doubled clause: {' '.join(gram)!r}")
                break
            seen.add(gram)
        else:
            continue
        break
    return problems


# --- never contradicting a figure beside it -------------------------------------------------------


def contradictions(run: Run) -> list[str]:
    """Sentences about a run that deny what the figures beside them show."""
    from firedup.render.text import outcome_line

    out = []
    line = outcome_line(run, launch=False)
    if run.seconds_to_end is not None and not run.lower_bound and fmt_duration(run.seconds_to_end) not in line:
        out.append(f"the verdict {line!r} does not state the time to the end {fmt_duration(run.seconds_to_end)}")
    if run.crash is not None and run.crash.phase and run.outcome == "crashed" and f" in {run.crash.phase}" not in line:
        out.append(f"the verdict {line!r} does not name the crash's phase {run.crash.phase}")
    for v in run.caches.values():
        m = re.search(r"(\S+) took .* with no (.+?) silence in it", v.reason)
        if m:
            inside = [s for s in run.silences if m.group(1) in (s.phase, s.umbrella)]
            if inside:
                out.append(f"{v.kind}: {v.reason!r} beside {len(inside)} silence(s) in {m.group(1)}")
        loud = [s for s in run.silences if s.cache == v.kind and s.seconds >= COLD_SECONDS]
        if v.verdict == "warm" and loud:
            out.append(f"{v.kind} warm beside a {fmt_duration(loud[0].seconds)} silence it explains")
        if v.reason.startswith("the log's own lines"):
            for s in run.silences:
                timed = [n for n, _ in v.evidence if s.since_line < n < s.line]
                if timed and v.kind not in (s.cause or ""):
                    out.append(f"the silence at line {s.since_line} holds {v.kind}'s own lines {timed} but says "
                               f"{s.cause!r}")
    for item in run.advice:  # a fix never saves more than the cause cost, nor more than the start-up took
        if item.saving_seconds is not None and item.saving_seconds > item.seconds + 0.5:
            out.append(f"{item.kind} saves {fmt_duration(item.saving_seconds)} of its {fmt_duration(item.seconds)}")
        if run.seconds_to_end is not None and item.seconds > run.seconds_to_end + 0.5 and not run.lower_bound:
            out.append(f"{item.kind} cost {fmt_duration(item.seconds)} of a {fmt_duration(run.seconds_to_end)} start")
    return out

"""A run's config: the flags its lines state (an args dump, an echoed launch command), the
defaults they imply, and the flags the log proves without stating them (inferred, with why)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from firedup.core.config import COMMON_FLAGS, checked_flags, read_server_args
from firedup.core.lazy import lazy_regex
from firedup.formats import Format
from firedup.formats.convert import DROPPED
from firedup.formats.vocab import CONFIG_STATED, ERROR_PREFIX, MEMORY_POOL_END, SCHEDULER_READY, SERVER_ARGS
from firedup.read.engine import Event, Unmatched
from firedup.read.events import ACCESS
from firedup.timeline.outcome import engine_only
from firedup.timeline.run import Run


def read_config(run: Run, events: Sequence[Event], defaults: Mapping[str, Any], fmt: Format) -> None:
    """Flags from the args dump; else from an echoed launch command (plus the defaults it implies)."""
    stated: dict[str, Any] = {}
    defaults_line: int | None = None  # an args line that lists only the non-default flags
    for event in events:
        from_line = event.fields.get("config_stated")
        if isinstance(from_line, dict):  # a milestone line that also states flags (engine config, version)
            for key, value in from_line.items():
                stated.setdefault(key, value)
        if event.name == SERVER_ARGS and not run.all_config:
            if _read_args_dump(run, event, fmt):
                defaults_line = event.line
        elif isinstance(event.fields.get("argv"), dict):
            _read_launch_command(run, event, defaults, stated)
        elif event.name == CONFIG_STATED:
            for key, value in event.fields.items():
                if key not in ("level", "starts_run", "repeated"):
                    stated.setdefault(key, value)
    _merge_stated(run, stated, defaults, defaults_line)
    dropped = checked_flags(run.all_config)
    if dropped:
        run.warnings.append(_dropped_note("flag values", dropped, "not finite, beyond 64 bits or, for a count, not whole"))
    if fmt.parsing.derive_config is not None:
        fmt.parsing.derive_config(run.all_config, run.config_inferred)
    # the common flags first (None where unstated), then the others in their order: `update`
    # gives a common flag the value it already has, in its place
    config = {flag: run.all_config.get(flag) for flag in COMMON_FLAGS}
    config.update(run.all_config)
    run.config = config


def _read_args_dump(run: Run, event: Event, fmt: Format) -> bool:
    """The run's flags from its args dump (the format's reader, else the common one); True when
    the dump lists only the flags that differ from the defaults."""
    text = str(event.fields.get("args", ""))
    only_non_defaults = False
    if fmt.parsing.read_args is not None:
        dump = fmt.parsing.read_args(text)
        fields, complete = dump.fields, dump.complete
        only_non_defaults = dump.only_non_defaults
    else:
        fields, complete = read_server_args(text)
    run.all_config = fields
    run.config_complete = complete
    if not complete:
        run.warnings.append(f"line {event.line}: the args dump is cut short; flags after the cut are unknown")
    return only_non_defaults


def _read_launch_command(run: Run, event: Event, defaults: Mapping[str, Any], stated: dict[str, Any]) -> None:
    """The flags an echoed launch command sets, and the defaults of those it leaves out."""
    argv = event.fields["argv"]
    for key, value in argv.items():
        stated.setdefault(key, value)
    for key, value in defaults.items():
        if key not in argv and key not in stated:
            stated[key] = value
            run.config_inferred[key] = f"default: the launch command on line {event.line} does not set it"


def _merge_stated(run: Run, stated: Mapping[str, Any], defaults: Mapping[str, Any], defaults_line: int | None) -> None:
    """The flags other lines state under the args dump's (which wins), then the defaults of an
    args dump that lists only the non-default flags (`defaults_line`)."""
    if run.all_config:
        for key in list(run.config_inferred):
            if key in run.all_config:
                del run.config_inferred[key]
    for key, value in stated.items():
        run.all_config.setdefault(key, value)
    if defaults_line is not None:
        for key, value in defaults.items():
            if run.all_config.get(key) is None:
                run.all_config[key] = value
                run.config_inferred[key] = f"default: the args line {defaults_line} lists only non-default flags"


DROPPED_SHOWN = 5  # values named in a note on values dropped; the rest are counted


def _dropped_note(what: str, items: Sequence[str], why: str) -> str:
    named = ", ".join(items[:DROPPED_SHOWN]) + (f" and {len(items) - DROPPED_SHOWN} more" if len(items) > DROPPED_SHOWN else "")
    return f"{what} ignored ({why}): {named}"


def note_dropped(run: Run, events: Sequence[Event]) -> None:
    """One note for the numbers the lines of this run held that were refused where they were
    read (`formats.base.convert_field`: not finite, too big, not ASCII digits, a port out of range)."""
    items = [f"line {e.line}: {item}" for e in events for item in e.fields.get(DROPPED, ())]
    if items:
        run.warnings.append(_dropped_note("values read from the log", items,
                                          "a number not finite, too big or not in ASCII digits, or a port out of range"))


def _every_rank_era(run: Run, events: Sequence[Event], fmt: Format) -> bool:
    """True when the scheduler finished in a log whose every rank prints every per-rank line.

    In the versions (and bench runs) of an engine that tags ranks only when parallel where
    every rank prints the scheduler's ready line, that line has no `available_gpu_mem`.
    """
    ready = [e for e in events if e.name == SCHEDULER_READY]
    if not ready:
        return False
    return engine_only(events, fmt) or all("available_gpu_mem_gb" not in e.fields for e in ready)


# What `config_inferred` says a flag was read from, when no line states it.
RANK_TAGS = "inferred from rank tags"
GRAPH_CAPTURE = "inferred from graph capture"


def _tp_numbers(ranks: Iterable[str | None]) -> list[int]:
    """The tensor-parallel ranks among rank tags (`DP0 TP3` -> 3); "[gpu_id=N]" (the oldest
    versions) numbers them the same way."""
    return sorted({int(t[3:] if t.startswith("GPU") else t[2:]) for rank in ranks if rank for t in rank.split()
                   if (t[:2] == "TP" and t[2:].isdigit()) or (t[:3] == "GPU" and t[3:].isdigit())})


def infer_config(run: Run, events: Sequence[Event], fmt: Format, unmatched: Sequence[Unmatched] = ()) -> None:
    """Fill flags the log proves without stating them, and say what proved them. A flag any
    line states is never changed. Rank tags count on every line of the run, those no rule
    knows too (`unmatched`): an excerpt's ranks often show only there. Each source of evidence
    is one function of `_INFERENCES`, asked in order."""
    for infer in _INFERENCES:
        infer(run, events, fmt, unmatched)


def _infer(run: Run, flag: str, value: Any, why: str) -> None:
    run.config[flag] = value
    run.config_inferred[flag] = why


def _from_implying_lines(run: Run, events: Sequence[Event], fmt: Format, unmatched: Sequence[Unmatched]) -> None:
    """Lines that prove flags (`Kind.implies`)."""
    names = {m.name for m in run.milestones}
    for kind in fmt.vocab.implying:
        if kind.name in names:
            for flag, value in kind.implies.items():
                if run.config.get(flag) is None:
                    _infer(run, flag, value, kind.implies_why)


# What says a run spans nodes, in any line of it (those no rule knows too): a flag's value
# (`nnodes=2`, `--nnodes 2`, `node_rank=1`, `--node-rank 1`) or NCCL's communicator line
# (`nNodes 2`). Rank tags then count one node's ranks: a bound, never the size.
_MULTI_NODE = lazy_regex(r"\bn_?nodes['\"]?\s?[=:]\s?'?0*(?:[2-9]|[1-9]\d)|--nnodes[= ]0*(?:[2-9]|[1-9]\d)"
                         r"|\bnode[_-]rank['\"]?\s?[=:]\s?'?0*[1-9]|--node-rank[= ]0*[1-9]|\bnNodes 0*(?:[2-9]|[1-9]\d)")
# NCCL's communicator size ("comm 0x... rank 3 nranks 16 cudaDev 3 ..."): more ranks than the tags show
_NCCL_RANKS = lazy_regex(r"\bn[Rr]anks[= ](\d{1,6})\b")


def _multi_node_sign(events: Sequence[Event], unmatched: Sequence[Unmatched], ranks_seen: int) -> str | None:
    """The first line that says the run is bigger than the ranks its tags show, as "line N". A
    communicator's size counts only where no pipeline stage past the first tags a line (with
    pipeline parallelism the world is tensor x pipeline ranks on one node too)."""
    lines = [*((e.line, e.text) for e in events), *((u.line, u.text) for u in unmatched)]
    stages = {t for r in [*(e.rank for e in events), *(u.rank for u in unmatched)] if r for t in r.split()
              if t[:2] == "PP" and t[2:].isdigit() and t != "PP0"}
    for line, text in sorted((n, t) for n, t in lines if "ode" in t or "anks" in t):
        if _MULTI_NODE().search(text):
            return f"line {line} says the run spans nodes"
        m = _NCCL_RANKS().search(text)
        if m is not None and int(m[1]) > ranks_seen and not stages:
            return f"line {line} names a communicator of {int(m[1])} ranks"
    return None


def _tp_from_tags(run: Run, tps: list[int], events: Sequence[Event], unmatched: Sequence[Unmatched],
                  seen: str, caveat: str = "") -> bool:
    """tp_size from the TP ranks tags show (`seen` words what showed them): exact when they are
    TP0..TPn-1 and no line says the run spans nodes; else, where the highest rank proves more
    than one, only a bound (`config_at_least`), the size left unknown. True when it set the size."""
    if not tps or tps[-1] < 1:
        return False
    least = tps[-1] + 1
    run.config_at_least["tp_size"] = least
    contiguous = tps == list(range(len(tps)))
    sign = _multi_node_sign(events, unmatched, least) if contiguous else None
    if contiguous and sign is None:
        _infer(run, "tp_size", least, f"{RANK_TAGS}: {seen} TP0..TP{least - 1} print lines{caveat}")
        return True
    shown = f"TP0..TP{least - 1}" if contiguous else (
        ", ".join(f"TP{t}" for t in tps[:8]) + (f" and {len(tps) - 8} more" if len(tps) > 8 else ""))
    why = sign if sign is not None else f"TP{tps[-1]} means {least} ranks or more"
    run.config_inferred["tp_size"] = f"{RANK_TAGS}: at least {least} ({seen} {shown} print lines; {why})"
    return False


def _tp_from_processes(run: Run, events: Sequence[Event], fmt: Format, unmatched: Sequence[Unmatched]) -> None:
    """tp_size from the processes that print per-rank lines, for engines whose lines always
    carry a process tag: ranks TP0..TPn-1, or n processes printing a line every rank prints."""
    if run.config.get("tp_size") is not None or fmt.meaning.rank_tags_only_when_parallel:
        return
    tps = _tp_numbers([*(e.rank for e in events if e.name != ACCESS), *(u.rank for u in unmatched)])
    if _tp_from_tags(run, tps, events, unmatched, "processes of ranks") or "tp_size" in run.config_at_least:
        return
    for name in fmt.meaning.every_rank_prints:
        # data-parallel engine cores (`DP1`) are replicas, not tensor-parallel ranks
        procs = {e.rank for e in events if e.name == name and not (e.rank or "").startswith("DP")}
        if len(procs) >= 2:
            _infer(run, "tp_size", len(procs), f"{len(procs)} processes print {name!r}, which every rank prints "
                                               "(the world size: tensor x pipeline parallel)")
            return


def _cuda_graph_from_capture(run: Run, events: Sequence[Event], fmt: Format,
                             unmatched: Sequence[Unmatched]) -> None:
    """disable_cuda_graph from a graph capture the log shows (or a crash inside one), or from
    a scheduler that became ready after its memory pool without capturing."""
    if run.config.get("disable_cuda_graph") is not None:
        return
    if any(e.name in fmt.vocab.graph_capture for e in events):
        _infer(run, "disable_cuda_graph", False, f"{GRAPH_CAPTURE}: the log shows a CUDA graph capture")
    elif fmt.meaning.capture_trace is not None and any(
            e.name.startswith(ERROR_PREFIX) and re.search(fmt.meaning.capture_trace, e.text) for e in events):
        _infer(run, "disable_cuda_graph", False, f"{GRAPH_CAPTURE}: the crash happened inside CUDA graph capture")
    else:
        pool = next((m for m in run.milestones if m.key == MEMORY_POOL_END), None)
        after = fmt.vocab.past_capture
        if pool is not None and any(m.name in after and m.line > pool.line for m in run.milestones):
            _infer(run, "disable_cuda_graph", True, "the scheduler became ready without capturing a graph")


def _tp_from_rank_tags(run: Run, events: Sequence[Event], fmt: Format, unmatched: Sequence[Unmatched]) -> None:
    """tp_size from the rank tags of an engine that tags ranks only when parallel: none on the
    scheduler's lines, TP0..TPn-1, or only TP0 in a version where every rank prints."""
    if run.config.get("tp_size") is not None or not fmt.meaning.rank_tags_only_when_parallel:
        return
    sched, tps = _own_tp_tags(events, fmt, unmatched)
    if sched and not tps and not any(e.rank for e in sched):
        _infer(run, "tp_size", 1, f"{RANK_TAGS}: scheduler lines carry no TP tag, which {fmt.display} "
                                  "prints only when tp_size > 1")
    elif _tp_from_tags(run, tps, events, unmatched, "ranks",
                       " (on a multi-node run this counts this node's ranks only)") or "tp_size" in run.config_at_least:
        return
    elif tps == [0] and _every_rank_era(run, events, fmt):
        _infer(run, "tp_size", 1, f"{RANK_TAGS}: only TP0 prints the per-rank lines of a complete "
                                  "startup, in a version where every rank prints them")


def _own_tp_tags(events: Sequence[Event], fmt: Format, unmatched: Sequence[Unmatched]) -> tuple[list[Event], list[int]]:
    """The scheduler's own lines and the TP ranks the server's own lines show. Access lines
    (runtime traffic) do not count: compaction drops most of them; nor do lines without a
    header or with another logger's clock."""
    served = [e for e in events if e.name != ACCESS]
    skip = {"bare"} | {h.name for h in fmt.parsing.headers if h.clock == "foreign"}
    own = [e for e in served if e.header not in skip and e.ts is not None and not e.inherited]
    scheduler = fmt.vocab.scheduler
    sched = [e for e in own if e.name in scheduler]
    tps = _tp_numbers([*(e.rank for e in (own or served)), *(u.rank for u in unmatched if u.own or not own)])
    return sched, tps


# The sources of inference, in the order they are asked (an earlier one's flag stands).
_INFERENCES: tuple[Callable[[Run, Sequence[Event], Format, Sequence[Unmatched]], None], ...] = (
    _from_implying_lines, _tp_from_processes, _cuda_graph_from_capture, _tp_from_rank_tags)

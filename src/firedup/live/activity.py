"""What a process tree did over the last seconds, in words (`Activity`): a pure function of the
looks `live.proc.TreeWatch` took (`classify`), so tests feed it fake trees.

Each kind of evidence is one rule (`RULES`, tried in order, the first that sees its evidence
wins): a tree gone, stopped, compiling (a compiler child, a busy compile worker), reading weights,
building kernels into a cache, a busy GPU, GPU memory rising, importing, reading or computing
with nothing else to show for it, waiting on storage, and at the end idle (stuck).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

WINDOW_S = 10.0  # what the tree opened, mapped or wrote counts over the newest looks within this span ...
RATE_S = 3.0  # ... and rates over the newest within this one: what changed, not what was (a load that
# ended 5 s ago is not reading now)
MIN_SPAN_S = 1.5  # a verdict needs looks at least this far apart
READ_MB_S = 1.0  # read rate that means "reading"
BUSY_CPU = 0.10  # share of one core that means "busy"
WORKER_CPU = 0.05  # share of one core a compile worker uses while it compiles
GPU_GROWTH_MB = 64.0  # GPU memory growth over the window that means "allocating"
GPU_BUSY_PCT = 10.0  # GPU utilisation (mean over the window) that means "busy"
SHOWN = 3  # file or library names a note shows


@dataclass(frozen=True)
class Seen:
    """One process at one look."""

    pid: int
    name: str
    state: str
    cpu_ticks: int
    reads: int | None
    compiler: bool = False  # a compiler executable
    worker: bool = False  # a Python compile worker (counts only while it uses CPU)
    weights: tuple[str, ...] = ()  # weight files open or mapped
    modules: tuple[str, ...] = ()  # Python modules or shared libraries open
    caches: tuple[str, ...] = ()  # kernel cache or build files open (or newly mapped)
    new_libraries: tuple[str, ...] = ()  # shared libraries mapped since the process's last maps read
    gpus: tuple[int, ...] = ()  # /dev/nvidiaN minors it has open
    # bytes read from weight files while watched (their positions, their mapped pages in); None:
    # unreadable, and the process's own reads stand in
    weight_bytes: int | None = None


@dataclass(frozen=True)
class GpuSeen:
    """The tree's share of the GPUs at one look."""

    devices: tuple[int, ...]  # indexes the tree uses
    util: float | None  # the busiest of them, %
    used_mb: float | None  # the tree's memory on them
    basis: str  # "processes" (the driver names the tree's pids) | "devices" (their devices' totals)


@dataclass(frozen=True)
class Look:
    """What one look at the tree saw (`TreeWatch.sample`)."""

    at: float
    procs: tuple[Seen, ...]
    gpu: GpuSeen | None = None
    caches_written: tuple[str, ...] = ()  # kernel-cache folders of the server changed since the look before

    @property
    def alive(self) -> bool:
        return bool(self.procs)


@dataclass(frozen=True)
class Activity:
    """What the tree did over the last seconds, in words, whether that is work, and what was seen."""

    kind: str  # compiling | reading | gpu | allocating | importing | busy | stuck | gone
    text: str
    busy: bool  # clearly working: a timeout now is "timed out while busy"
    processes: int = 0
    evidence: tuple[str, ...] = ()
    compilers: tuple[str, ...] = ()  # compiler processes seen (the cache verdicts use them)

    def __str__(self) -> str:
        return self.text


GPU_DOING = {"cuda_graph": "capturing graphs", "warmup": "warming up"}


def printable(text: str) -> str:
    """A file or process name as a note may show it: what does not print (a newline that would
    forge a line, an escape sequence) is written as its escape."""
    return text if text.isprintable() else "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def _names(paths: Iterable[str], limit: int = SHOWN) -> str:
    names = list(dict.fromkeys(printable(p.rsplit("/", 1)[-1]) for p in paths))
    shown = ", ".join(names[:limit])
    return shown + (f", +{len(names) - limit} more" if len(names) > limit else "")


def _paths(paths: Iterable[str], limit: int = 8) -> str:
    unique = list(dict.fromkeys(printable(p) for p in paths))
    return ", ".join(unique[:limit]) + (f", +{len(unique) - limit} more" if len(unique) > limit else "")


def _plural(n: int, word: str, words: str | None = None) -> str:
    return f"1 {word}" if n == 1 else f"{n} {words or word + 's'}"


@dataclass
class Window:
    """The looks a verdict weighs (the newest within WINDOW_S) and the rates between its first
    live look and its last."""

    looks: list[Look]
    phase: str | None  # the log's stage: names what a busy GPU does
    ticks: int  # clock ticks per second of the cpu figures

    @cached_property
    def last(self) -> Look:
        return self.looks[-1]

    @cached_property
    def first(self) -> Look:
        """The oldest live look within RATE_S of the newest: the start of every rate."""
        return next((x for x in self.looks if x.alive and self.last.at - x.at <= RATE_S), self.last)

    @cached_property
    def recent(self) -> list[Look]:
        return [x for x in self.looks if x.at >= self.first.at]

    @cached_property
    def span(self) -> float:
        return self.last.at - self.first.at

    @cached_property
    def before(self) -> dict[int, Seen]:
        return {p.pid: p for p in self.first.procs}

    @property
    def n(self) -> int:
        return len(self.last.procs)

    def cpu_of(self, p: Seen) -> float:
        old = self.before.get(p.pid)
        return max(0, p.cpu_ticks - (old.cpu_ticks if old else 0)) / self.ticks / self.span if self.span > 0 else 0.0

    def read_of(self, p: Seen) -> float:
        old = self.before.get(p.pid)
        if p.reads is None or old is None or old.reads is None:
            return 0.0
        return max(0, p.reads - old.reads) / self.span / 1e6 if self.span > 0 else 0.0

    def weights_of(self, p: Seen) -> float:
        """MB/s the process read from weight files: their positions and mapped pages where those
        can be read (a process reading /dev/zero with a weight file open reads no weights), its
        own reads only where they cannot."""
        if p.weight_bytes is None:
            return self.read_of(p)
        # from the first look of the span that knew them (a weight file found during the span)
        since = next(((x.at, s.weight_bytes) for x in self.recent for s in x.procs
                      if s.pid == p.pid and s.weight_bytes is not None), None)
        if since is None or self.last.at <= since[0]:
            return 0.0
        return max(0, p.weight_bytes - since[1]) / (self.last.at - since[0]) / 1e6

    @cached_property
    def cpu(self) -> float:
        return sum(self.cpu_of(p) for p in self.last.procs)

    @cached_property
    def reads(self) -> float:
        return sum(self.read_of(p) for p in self.last.procs)

    @cached_property
    def gpus(self) -> list[GpuSeen]:
        """The GPU readings over the window (memory growth), ..."""
        return [x.gpu for x in self.looks if x.gpu is not None]

    @cached_property
    def recent_gpus(self) -> list[GpuSeen]:
        """... and over the rates' span (utilisation now), with the reading before it (NVML is
        read every 2 s: the span may hold none)."""
        older = [x.gpu for x in self.looks if x.gpu is not None and x.at < self.first.at][-1:]
        return older + [x.gpu for x in self.recent if x.gpu is not None]

    @cached_property
    def gpu_where(self) -> tuple[str, str, str]:
        """(`GPU 0, 1`, `, 12.0 GB`, whose figures) of the newest GPU reading."""
        now = self.gpus[-1]
        memory = f", {now.used_mb / 1024:.1f} GB" if now.used_mb is not None else ""
        whose = "" if now.basis == "processes" else " (the devices' totals: the driver does not name this tree's pids)"
        return f"GPU {', '.join(str(d) for d in now.devices)}", memory, whose

    @cached_property
    def gpu_util(self) -> float | None:
        utils = [g.util for g in self.recent_gpus if g.util is not None]
        return sum(utils) / len(utils) if utils else None

    @cached_property
    def gpu_grown(self) -> float | None:
        """MB the tree's GPU memory grew over the window (the same basis of figures at both ends)."""
        if not self.gpus:
            return None
        now = self.gpus[-1]
        mem = [g.used_mb for g in self.gpus if g.used_mb is not None and g.basis == now.basis]
        return mem[-1] - mem[0] if len(mem) >= 2 else None

    @cached_property
    def gpu_from(self) -> float:
        """When the window's first GPU reading was taken (memory growth is counted from it)."""
        return next((x.at for x in self.looks if x.gpu is not None and x.gpu.used_mb is not None), self.first.at)

    @cached_property
    def gpu_evidence(self) -> tuple[str, ...]:
        """What the tree's GPUs showed (nothing where it uses none), for any verdict's evidence."""
        if not self.gpus or not self.gpus[-1].devices:
            return ()
        (where, memory, whose), util = self.gpu_where, self.gpu_util
        return (f"{where}: {util:.0f}% busy{memory}{whose}" if util is not None else f"{where}{memory}{whose}",)


Rule = Callable[[Window], Activity | None]


def _gone(w: Window) -> Activity | None:
    return None if w.last.alive else Activity("gone", "the process is gone", busy=False)


def _stopped(w: Window) -> Activity | None:
    if not all(p.state in "Tt" for p in w.last.procs):
        return None
    return Activity("stuck", f"stopped: {_plural(w.n, 'process', 'processes')} suspended (SIGSTOP, a debugger, a frozen cgroup)",
                    busy=False, processes=w.n, evidence=("state T (stopped) in every process of the tree",))


def _working(w: Window, p: Seen) -> bool:
    """A compiler that compiles: it used CPU since the rates' first look, or runs now (one look
    shows a compiler just started). A sleeping process named nvcc compiles nothing."""
    return p.state in "RD" or (w.span > 0 and w.cpu_of(p) >= WORKER_CPU)


def _compilers(w: Window) -> Activity | None:
    """Compiler children using CPU (the sleeping ones of their chain named with them: nvcc waits
    while its cicc works), or compile workers using CPU."""
    last = w.last
    present = [p for p in last.procs if p.compiler]
    compilers = sorted({p.name for p in present}) if any(_working(w, p) for p in present) else []
    workers = [p for p in last.procs if p.worker and w.span > 0 and w.cpu_of(p) >= WORKER_CPU]
    if not (compilers or workers):
        return None
    names = compilers + sorted({p.name for p in workers} - set(compilers))
    evidence = [f"compiler processes: {', '.join(f'{p.name} (pid {p.pid})' for p in last.procs if p.compiler)}"] \
        if compilers else []
    if workers:
        evidence.append("compile workers using CPU: " + ", ".join(f"pid {p.pid}" for p in workers))
    return Activity("compiling", f"compiling kernels ({', '.join(names)})", busy=True, processes=w.n,
                    evidence=tuple(evidence), compilers=tuple(compilers))


def _weights(w: Window) -> Activity | None:
    """Bytes read from files of a model (their positions, their mapped pages in)."""
    holders = {p.pid for x in w.recent for p in x.procs if p.weights}
    weight_rate = sum(w.weights_of(p) for p in w.last.procs if p.pid in holders)
    weights = [f for x in reversed(w.recent) for p in x.procs for f in p.weights]
    if not weights or weight_rate < READ_MB_S:
        return None
    return Activity("reading", f"reading weights ({weight_rate:.0f} MB/s: {_names(weights)})", busy=True,
                    processes=w.n, evidence=(f"weight files open: {_paths(weights)}",
                                             f"{weight_rate:.1f} MB/s read from them by "
                                             f"{_plural(len(holders), 'process', 'processes')}"))


def _caches(w: Window) -> Activity | None:
    """Kernel build files opened, cached kernels mapped, or the server's kernel-cache folders
    written during the window, while the tree works (Inductor and Triton compile inside the
    server process too: no compiler child shows it)."""
    caches = [c for x in w.looks[1:] for p in x.procs for c in p.caches]
    written = [c for x in w.recent[1:] for c in x.caches_written]
    if not (caches or written) or not (w.cpu >= BUSY_CPU or w.reads >= READ_MB_S):
        return None
    evidence = [f"kernel cache or build files: {_paths(caches)}"] if caches else []
    if written:
        evidence.append(f"kernel-cache folders written: {_paths(written)}")
    what = f"kernel cache: {_names(caches)}" if caches else f"kernel cache written: {_names(written)}"
    return Activity("compiling", f"compiling kernels ({what})", busy=True, processes=w.n,
                    evidence=(*evidence, f"{w.cpu * 100:.0f}% of a core"))


def _gpu_busy(w: Window) -> Activity | None:
    util = w.gpu_util
    if not w.gpu_evidence or util is None or util < GPU_BUSY_PCT:
        return None
    where, memory, _ = w.gpu_where
    doing = GPU_DOING.get((w.phase or "").removeprefix("draft."))
    what = f"{doing}: " if doing else (f"in {w.phase}: " if w.phase else "")
    grown = w.gpu_grown
    rising = f", memory +{grown / 1024:.1f} GB in {w.last.at - w.gpu_from:.0f} s" \
        if grown is not None and grown >= GPU_GROWTH_MB else ""
    return Activity("gpu", f"GPU busy ({what}{util:.0f}% on {where}{memory}{rising})", busy=True, processes=w.n,
                    evidence=w.gpu_evidence)


def _allocating(w: Window) -> Activity | None:
    """GPU memory rising over the window on a GPU not busy now (a busy one is `_gpu_busy`'s)."""
    grown = w.gpu_grown
    if not w.gpu_evidence or grown is None or grown < GPU_GROWTH_MB:
        return None
    where, memory, _ = w.gpu_where
    return Activity("allocating", f"allocating (GPU memory rising: +{grown / 1024:.1f} GB in "
                    f"{w.last.at - w.gpu_from:.0f} s on {where}{memory})", busy=True, processes=w.n,
                    evidence=w.gpu_evidence)


def _importing(w: Window) -> Activity | None:
    """Shared libraries mapped during the window, or modules open in a process that reads or works."""
    libraries = [lib for x in w.recent for p in x.procs for lib in p.new_libraries]
    working = w.cpu >= BUSY_CPU or w.reads >= READ_MB_S
    modules = [m for p in w.last.procs if w.read_of(p) > 0 or w.cpu_of(p) >= BUSY_CPU for m in p.modules]
    if not (libraries or (modules and working)):
        return None
    loaded = f"{_plural(len(set(libraries)), 'shared library', 'shared libraries')} loaded: {_names(libraries)}" \
        if libraries else f"modules open: {_names(modules)}"
    rate = f"; {w.reads:.0f} MB/s read" if w.reads >= READ_MB_S else ""
    return Activity("importing", f"importing ({loaded}{rate})", busy=True, processes=w.n,
                    evidence=(loaded, f"{w.reads:.1f} MB/s read, {w.cpu * 100:.0f}% of a core", *w.gpu_evidence))


def _reading(w: Window) -> Activity | None:
    if w.reads < READ_MB_S:
        return None
    held = any(p.weights for p in w.last.procs)
    what = "not from the weight files open" if held else "no weight file open"
    return Activity("busy", f"busy: reading {w.reads:.0f} MB/s, {what} ({w.cpu * 100:.0f}% of a core)",
                    busy=True, processes=w.n, evidence=(f"{w.reads:.1f} MB/s read with no weight file, module or "
                                                        "kernel cache open", *w.gpu_evidence))


def _on_cpu(w: Window) -> Activity | None:
    if w.cpu < BUSY_CPU:
        return None
    return Activity("busy", f"busy on CPU ({w.cpu * 100:.0f}% of a core)", busy=True, processes=w.n,
                    evidence=(f"{w.cpu * 100:.0f}% of a core", *w.gpu_evidence))


def _storage(w: Window) -> Activity | None:
    """Uninterruptible sleep: a read or write the storage has not answered yet."""
    blocked = [p for p in w.last.procs if p.state == "D"]
    if not blocked:
        return None
    return Activity("busy", f"waiting on storage ({_plural(len(blocked), 'process', 'processes')} in "
                            f"uninterruptible I/O: a slow disk or network filesystem?)", busy=True, processes=w.n,
                    evidence=("state D in " + ", ".join(f"pid {p.pid}" for p in blocked),
                              f"{w.reads:.2f} MB/s read", *w.gpu_evidence))


def _idle(w: Window) -> Activity:
    idle_gpu = ", GPU idle" if w.gpu_evidence else ""
    sleepers = sorted({p.name for p in w.last.procs if p.compiler})
    asleep = (f"compilers asleep: {', '.join(sleepers)}",) if sleepers else ()
    return Activity("stuck", f"idle: no CPU ({w.cpu * 100:.0f}% of a core), no reads, no compiler{idle_gpu} in "
                             f"{_plural(w.n, 'process', 'processes')}: waiting on a peer (an NCCL rendezvous?) or stuck",
                    busy=False, processes=w.n,
                    evidence=(f"{w.cpu * 100:.0f}% of a core, {w.reads:.2f} MB/s read, no compiler", *asleep,
                              *w.gpu_evidence))


# What one look shows (tried first, whatever the span) ...
AT_ONCE: tuple[Rule, ...] = (_gone, _stopped, _compilers)
# ... and what needs looks MIN_SPAN_S apart, in order; idle when none sees its evidence.
OVER_TIME: tuple[Rule, ...] = (_weights, _caches, _gpu_busy, _allocating, _importing, _reading, _on_cpu, _storage,
                               _idle)


def classify(looks: Sequence[Look], phase: str | None = None, ticks: int = 100) -> Activity | None:
    """The verdict over `looks` (oldest first; the newest within WINDOW_S count), a pure
    function of what they saw: the first rule that sees its evidence. None until they span
    MIN_SPAN_S (except a gone, stopped or compiling tree, which one look shows). `phase`: the
    log's stage, which names what a busy GPU is doing; `ticks`: clock ticks per second of the
    cpu figures."""
    if not looks:
        return None
    last = looks[-1]
    w = Window([x for x in looks if last.at - x.at <= WINDOW_S], phase, ticks)
    for rule in AT_ONCE:
        found = rule(w)
        if found is not None:
            return found
    if w.span < MIN_SPAN_S:
        return None
    for rule in OVER_TIME:
        found = rule(w)
        if found is not None:
            return found
    return None


__all__ = ["AT_ONCE", "OVER_TIME", "Activity", "GpuSeen", "Look", "Seen", "Window", "classify", "printable"]

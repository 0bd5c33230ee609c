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

WINDOW_S = 10.0  # rates are measured over the newest looks within this span
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
        return next((x for x in self.looks if x.alive), self.last)

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

    @cached_property
    def cpu(self) -> float:
        return sum(self.cpu_of(p) for p in self.last.procs)

    @cached_property
    def reads(self) -> float:
        return sum(self.read_of(p) for p in self.last.procs)

    @cached_property
    def gpus(self) -> list[GpuSeen]:
        return [x.gpu for x in self.looks if x.gpu is not None]

    @cached_property
    def gpu_where(self) -> tuple[str, str, str]:
        """(`GPU 0, 1`, `, 12.0 GB`, whose figures) of the newest GPU reading."""
        now = self.gpus[-1]
        memory = f", {now.used_mb / 1024:.1f} GB" if now.used_mb is not None else ""
        whose = "" if now.basis == "processes" else " (the devices' totals: the driver does not name this tree's pids)"
        return f"GPU {', '.join(str(d) for d in now.devices)}", memory, whose

    @cached_property
    def gpu_util(self) -> float | None:
        utils = [g.util for g in self.gpus if g.util is not None]
        return sum(utils) / len(utils) if utils else None

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


def _compilers(w: Window) -> Activity | None:
    """Compiler children, or compile workers using CPU: one look shows them."""
    last = w.last
    compilers = sorted({p.name for p in last.procs if p.compiler})
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
    """Files of a model open (or mapped) in processes whose reads grow."""
    holders = {p.pid for x in w.looks for p in x.procs if p.weights}
    weight_rate = sum(w.read_of(p) for p in w.last.procs if p.pid in holders)
    weights = [f for x in reversed(w.looks) for p in x.procs for f in p.weights]
    if not weights or weight_rate < READ_MB_S:
        return None
    return Activity("reading", f"reading weights ({weight_rate:.0f} MB/s: {_names(weights)})", busy=True,
                    processes=w.n, evidence=(f"weight files open: {_paths(weights)}",
                                             f"{weight_rate:.1f} MB/s read by "
                                             f"{_plural(len(holders), 'process', 'processes')} holding them"))


def _caches(w: Window) -> Activity | None:
    """Kernel build files opened, or cached kernels mapped, during the window, while the tree works."""
    caches = [c for x in w.looks[1:] for p in x.procs for c in p.caches]
    if not caches or not (w.cpu >= BUSY_CPU or w.reads >= READ_MB_S):
        return None
    return Activity("compiling", f"compiling kernels (kernel cache: {_names(caches)})", busy=True, processes=w.n,
                    evidence=(f"kernel cache or build files: {_paths(caches)}",))


def _gpu_busy(w: Window) -> Activity | None:
    util = w.gpu_util
    if not w.gpu_evidence or util is None or util < GPU_BUSY_PCT:
        return None
    where, memory, _ = w.gpu_where
    doing = GPU_DOING.get((w.phase or "").removeprefix("draft."))
    what = f"{doing}: " if doing else (f"in {w.phase}: " if w.phase else "")
    return Activity("gpu", f"GPU busy ({what}{util:.0f}% on {where}{memory})", busy=True, processes=w.n,
                    evidence=w.gpu_evidence)


def _allocating(w: Window) -> Activity | None:
    """GPU memory rising over the window (the same basis of figures at both ends)."""
    if not w.gpu_evidence:
        return None
    now = w.gpus[-1]
    mem = [g for g in w.gpus if g.used_mb is not None and g.basis == now.basis]
    if len(mem) < 2 or mem[-1].used_mb is None or mem[0].used_mb is None:
        return None
    grown = mem[-1].used_mb - mem[0].used_mb
    if grown < GPU_GROWTH_MB:
        return None
    where, memory, _ = w.gpu_where
    return Activity("allocating", f"allocating (GPU memory rising: +{grown / 1024:.1f} GB in "
                    f"{w.last.at - w.first.at:.0f} s on {where}{memory})", busy=True, processes=w.n,
                    evidence=w.gpu_evidence)


def _importing(w: Window) -> Activity | None:
    """Shared libraries mapped during the window, or modules open in a process that reads or works."""
    libraries = [lib for x in w.looks for p in x.procs for lib in p.new_libraries]
    modules = [m for p in w.last.procs if w.read_of(p) > 0 or w.cpu_of(p) >= BUSY_CPU for m in p.modules]
    if not (libraries or (modules and (w.cpu >= BUSY_CPU or w.reads >= READ_MB_S))):
        return None
    loaded = f"{_plural(len(set(libraries)), 'shared library', 'shared libraries')} loaded: {_names(libraries)}" \
        if libraries else f"modules open: {_names(modules)}"
    rate = f"; {w.reads:.0f} MB/s read" if w.reads >= READ_MB_S else ""
    return Activity("importing", f"importing ({loaded}{rate})", busy=True, processes=w.n,
                    evidence=(loaded, f"{w.reads:.1f} MB/s read, {w.cpu * 100:.0f}% of a core", *w.gpu_evidence))


def _reading(w: Window) -> Activity | None:
    if w.reads < READ_MB_S:
        return None
    return Activity("busy", f"busy: reading {w.reads:.0f} MB/s, no weight file open ({w.cpu * 100:.0f}% of a core)",
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
    return Activity("stuck", f"idle: no CPU ({w.cpu * 100:.0f}% of a core), no reads, no compiler{idle_gpu} in "
                             f"{_plural(w.n, 'process', 'processes')}: waiting on a peer (an NCCL rendezvous?) or stuck",
                    busy=False, processes=w.n,
                    evidence=(f"{w.cpu * 100:.0f}% of a core, {w.reads:.2f} MB/s read, no compiler", *w.gpu_evidence))


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

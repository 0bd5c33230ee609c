"""Timed writes to one merged output stream, and tqdm's progress-bar text.

A server log is what several processes wrote to one file (stderr and stdout redirected
together), in time order. `Stream` collects writes at float times (seconds after the
start) and renders them in that order; a tqdm bar writes `\\r` + frame with no newline,
so a line another process logs while a bar is open ends up glued after the frame, as in
real logs.
"""

from __future__ import annotations

import calendar
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

# tqdm's unicode bar: a space, 7 partial blocks, the full block.
_BAR_CHARS = " " + "".join(chr(c) for c in range(0x258F, 0x2587, -1))
_BAR_WIDTH = 10  # tqdm's bar width when the output is not a terminal
_MININTERVAL = 0.1  # tqdm's default: updates closer than this are not drawn
_SMOOTHING = 0.3  # tqdm's default EMA weight for the displayed rate


class Clock:
    """Seconds after `start` -> the `%Y-%m-%d %H:%M:%S` text SGLang's logger prints (truncated)."""

    def __init__(self, start: datetime) -> None:
        self.start = start
        self.epoch = calendar.timegm(start.timetuple()) + start.microsecond / 1e6
        self._cache: dict[int, str] = {}

    def stamp(self, t: float) -> str:
        second = math.floor(self.epoch + t)
        text = self._cache.get(second)
        if text is None:
            text = datetime.fromtimestamp(second, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
            self._cache[second] = text
        return text

    def at(self, t: float) -> datetime:
        return self.start + timedelta(seconds=t)

    def glog(self, t: float) -> str:
        """`MMDD HH:MM:SS.ffffff`, the clock of torch/glog lines (`W1103 10:14:02.199000 ...`)."""
        return self.at(t).strftime("%m%d %H:%M:%S.%f")


class Sink(Protocol):
    """Where timed text goes: the merged stream, or one process's pipe into it."""

    def write(self, t: float, text: str, key: str | None = None) -> int: ...


def kubectl_stamp(clock: Clock) -> Callable[[float], str]:
    """`kubectl logs --timestamps`: the runtime's RFC 3339 time (nanoseconds, zeros trimmed) + space."""
    def stamp(t: float) -> str:
        ns = round(t * 1e9)
        second, frac = divmod(ns, 10**9)
        text = datetime.fromtimestamp(clock.epoch + second, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")
        digits = f"{frac:09d}".rstrip("0")
        return f"{text}{'.' + digits if digits else ''}Z "
    return stamp


class Stream:
    """Writes at float times; `render()` returns them in time order (ties keep write order).

    A write may carry a `key`; `render_marked()` then also says on which physical line
    (1-based) that write landed, which is how the generator's ground truth names lines.
    `collector`, when given, turns a time into the prefix a log collector puts in front of
    each physical line (see `kubectl_stamp`); the time is that of the write ending the line,
    as a container runtime stamps a line when its newline arrives.
    """

    def __init__(self, clock: Clock, collector: Callable[[float], str] | None = None) -> None:
        self.clock = clock
        self.collector = collector
        self._items: list[tuple[float, int, str]] = []
        self._keys: dict[int, str] = {}

    def write(self, t: float, text: str, key: str | None = None) -> int:
        """Add a write; returns its sequence number (see `set_key`)."""
        seq = len(self._items)
        if key is not None:
            self._keys[seq] = key
        self._items.append((t, seq, text))
        return seq

    def set_key(self, seq: int, key: str) -> None:
        """Name an earlier write, once it is known to be the one that matters (e.g. the first)."""
        self._keys[seq] = key

    def latest_since(self, since: int) -> int | None:
        """The sequence number of the write that renders last among writes `since` onwards."""
        tail = self._items[since:]
        return max(tail)[1] if tail else None

    def __len__(self) -> int:
        return len(self._items)

    def raw(self, t: float, line: str, key: str | None = None) -> int:
        """A line printed without SGLang's logger (third-party output, traceback bodies)."""
        return self.write(t, line + "\n", key)

    def log(self, t: float, msg: str, rank: str | None = None, key: str | None = None) -> int:
        """`[YYYY-MM-DD HH:MM:SS TPn] msg` (no rank tag for the main process or a single GPU)."""
        tag = f" {rank}" if rank else ""
        return self.write(t, f"[{self.clock.stamp(t)}{tag}] {msg}\n", key)

    def uvicorn(self, t: float, msg: str, level: str = "INFO", key: str | None = None) -> int:
        return self.write(t, f"[{self.clock.stamp(t)}] {level + ':':<9} {msg}\n", key)

    def access(self, t: float, client: str, method: str, path: str, status: int, key: str | None = None) -> int:
        phrase = _PHRASES[status]
        return self.uvicorn(t, f'{client} - "{method} {path} HTTP/1.1" {status} {phrase}', key=key)

    @property
    def last_t(self) -> float:
        return max((t for t, _, _ in self._items), default=0.0)

    def render(self) -> list[str]:
        return [text for _, _, text in sorted(self._items)]

    def render_marked(self) -> tuple[list[str], dict[str, int]]:
        """The rendered pieces and, per key, the physical line its write starts on."""
        pieces: list[str] = []
        lines: dict[str, int] = {}
        line = 1
        items = sorted(self._items)
        for _, seq, text in items:
            key = self._keys.get(seq)
            if key is not None:
                lines[key] = line
            pieces.append(text)
            line += text.count("\n")
        if self.collector is not None:
            pieces = self._collected(items, pieces)
        return pieces, lines

    def _collected(self, items: list[tuple[float, int, str]], pieces: list[str]) -> list[str]:
        """Each physical line behind the collector's prefix, stamped when its newline was written."""
        assert self.collector is not None
        ends: list[float] = []  # physical line -> the time of the write that ended it
        for t, _, text in items:
            ends.extend([t] * text.count("\n"))
        if items and not pieces[-1].endswith("\n"):
            ends.append(items[-1][0])  # an unfinished last line is stamped at its last write
        out: list[str] = []
        line = 0
        at_start = True
        for text in pieces:
            parts: list[str] = []
            for segment in _split_after_newlines(text):
                if at_start and segment:
                    parts.append(self.collector(ends[line]))
                parts.append(segment)
                at_start = segment.endswith("\n")
                if at_start:
                    line += 1
            out.append("".join(parts))
        return out


def _split_after_newlines(text: str) -> list[str]:
    """`"a\nb\rc\n"` -> `["a\n", "b\rc\n"]`: lines end at `\n` only (a `\r` redraw stays inside)."""
    parts = text.split("\n")
    out = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


_PHRASES = {200: "OK", 404: "Not Found", 503: "Service Unavailable"}


# --- tqdm ----------------------------------------------------------------------------------


def format_interval(seconds: float) -> str:
    """tqdm's `[MM:SS]` / `[H:MM:SS]`."""
    mins, secs = divmod(int(seconds), 60)
    hours, mins = divmod(mins, 60)
    return f"{hours:d}:{mins:02d}:{secs:02d}" if hours else f"{mins:02d}:{secs:02d}"


def format_rate(rate: float | None) -> str:
    """tqdm's rate: `2.41s/it` below one iteration per second, else `3.10it/s`; `?it/s` unknown."""
    if not rate:
        return "?it/s"
    if rate < 1:
        return f"{1 / rate:5.2f}s/it"
    return f"{rate:5.2f}it/s"


def bar_text(frac: float) -> str:
    """tqdm's 10-cell unicode bar for a fraction in [0, 1]."""
    nsyms = len(_BAR_CHARS) - 1
    full, part = divmod(int(frac * _BAR_WIDTH * nsyms), nsyms)
    if full >= _BAR_WIDTH:
        return _BAR_CHARS[-1] * _BAR_WIDTH
    return _BAR_CHARS[-1] * full + _BAR_CHARS[part] + _BAR_CHARS[0] * (_BAR_WIDTH - full - 1)


class Tqdm:
    """One tqdm bar on rank 0's stderr: the frames it draws, at the times it draws them.

    `style="classic"` is tqdm's default `{l_bar}{bar}{r_bar}` (graph capture); `style="shards"`
    is SGLang's `BAR_FORMAT` for weight shards (`NN% Completed | n/N [...]`). The displayed
    rate is tqdm's smoothed rate; the frame drawn by `close()` shows the overall rate.
    """

    def __init__(self, stream: Sink, t: float, total: int, desc: str | None, style: str = "classic",
                 end: str = "") -> None:
        self.stream = stream
        self.end = end  # vLLM's shard bar_format ends in "\n": every frame is a line of its own
        self.start = t
        self.total = total
        self.desc = desc
        self.style = style
        self.n = 0
        self._last_n = 0
        self._last_t = t
        self._last_len = 0
        self._ema_dn = _Ema()
        self._ema_dt = _Ema()
        self._draw(t, None)

    def _frame(self, t: float, rate: float | None) -> str:
        elapsed = format_interval(t - self.start)
        remaining = format_interval((self.total - self.n) / rate) if rate else "?"
        pct = 100.0 * self.n / self.total if self.total else 0.0
        tail = f"{self.n}/{self.total} [{elapsed}<{remaining}, {format_rate(rate)}]"
        if self.style == "shards":
            return f"{self.desc}: {pct:3.0f}% Completed | {tail}"
        head = f"{self.desc}: " if self.desc else ""
        return f"{head}{pct:3.0f}%|{bar_text(self.n / self.total if self.total else 0.0)}| {tail}"

    def _draw(self, t: float, rate: float | None) -> None:
        text = self._frame(t, rate)
        pad = " " * max(self._last_len - len(text), 0)
        self._last_len = len(text)
        self.stream.write(t, "\r" + text + self.end + pad)

    def _rate(self, t: float) -> float | None:
        dn, dt = self._ema_dn.value(), self._ema_dt.value()
        if dn is not None and dt:
            return dn / dt
        elapsed = t - self.start
        return self.n / elapsed if elapsed > 0 else None

    def update(self, t: float, n: int = 1) -> None:
        self.n += n
        dt = t - self._last_t
        if dt < _MININTERVAL:
            return
        dn = self.n - self._last_n
        self._ema_dn.add(dn)
        self._ema_dt.add(dt)
        self._draw(t, self._rate(t))
        self._last_n, self._last_t = self.n, t

    def set_description(self, t: float, desc: str) -> None:
        self.desc = desc
        self._draw(t, self._rate(t))

    def close(self, t: float) -> None:
        elapsed = t - self.start
        self._draw(t, self.n / elapsed if elapsed > 0 else None)
        self.stream.write(t, "\n")


class _Ema:
    """tqdm's debiased exponential moving average."""

    def __init__(self) -> None:
        self._last = 0.0
        self._calls = 0

    def add(self, x: float) -> None:
        self._last = _SMOOTHING * x + (1 - _SMOOTHING) * self._last
        self._calls += 1

    def value(self) -> float | None:
        if not self._calls:
            return None
        return self._last / (1 - (1 - _SMOOTHING) ** self._calls)

"""Re-enact a recorded startup: the log at its original pace, and the HTTP answers it implies.

Wait scripts, Kubernetes probes and `firedup wait` itself are hard to test without a GPU
and a 15-minute startup. `replay` writes a recorded log line by line at its original pace
(divided by `speed`) and serves the engine's endpoints on 127.0.0.1 with the answers the
engine gave at that moment (its format's `health`, read by `firedup.core.health`): nothing
listens before the port opens, the health endpoint answers what that engine's answered
until the ready line (say 503 with an empty body, or 200 on versions that did), and the
process exits as the server did.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import signal
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from firedup.core.health import (
    HealthSemantics,
    VersionGuess,
    answer,
    latency,
    valid_version,
    version_key,
)
from firedup.errors import FiredupError, InputError, OutputError, UsageError
from firedup.formats import Format, foreign_engine, no_known_engine
from firedup.formats.base import opens_at
from firedup.formats.vocab import HTTP_RUNNING, READY
from firedup.live.telemetry import metrics_page
from firedup.read.clock import Stamp
from firedup.read.engine import Event
from firedup.read.sources import Source, normalise
from firedup.timeline.pipeline import DatePolicy, LogReader
from firedup.timeline.run import Run

_BAR_ELAPSED = re.compile(r"\d+/\d+ \[(?:(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d+)<")
_BAR_NAME = re.compile(r"^[^\d%|]*")


@dataclass
class ScriptLine:
    raw: bytes  # as in the file, without its newline
    at: float  # seconds after the log's first timestamp, on the log's clock (its last piece)
    timed: bool  # the line carries its own time (else it follows its predecessor)
    # The line in the pieces a terminal would see: cut where a progress bar redraws (`\r`),
    # each with its moment. One piece for an ordinary line.
    pieces: list[tuple[bytes, float]] = field(default_factory=list)


@dataclass
class Script:
    """A log prepared for replay: every line with its moment, and what the server did."""

    source: str
    fmt: Format
    lines: list[ScriptLine]
    runs: list[Run]
    actions: dict[int, list[str]]  # 0-based line index -> "restart" | "open" | "ready" | "crash"
    version: VersionGuess
    port: int | None  # the port of the log's `Uvicorn running on` line
    url_line: int | None  # the line that names it
    model: str
    exit_code: int  # 0 when the last run did not crash
    notes: list[str] = field(default_factory=list)  # what reading the log had to say (a damaged .gz)

    @property
    def duration(self) -> float:
        return self.lines[-1].at if self.lines else 0.0


REPLAY_MAX_BYTES = 512 << 20  # replay holds every line in memory (with its moment): a start-up is a few MB


def _read_bytes(path: Path, notes: list[str] | None = None) -> bytes:
    """The log's bytes, inflated if gzipped (`sources`' rules: a damaged end keeps what reads
    well, said in `notes`; a gzip bomb stops); at most `REPLAY_MAX_BYTES`."""
    from firedup.read.sources import _Inflated

    too_big = InputError(str(path), f"more than {REPLAY_MAX_BYTES >> 20} MB: replay holds the whole log in memory; "
                                    "replay the start-up alone (cut it out with `sed -n` or `head`)")
    try:
        if path.is_file() and path.stat().st_size > REPLAY_MAX_BYTES:
            raise too_big
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(str(path), "no such file") from None
    except IsADirectoryError:
        raise InputError(str(path), "is a directory; replay takes one log file") from None
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from None
    if data[:2] == b"\x1f\x8b":
        inflated = _Inflated(str(path), io.BufferedReader(io.BytesIO(data)))
        parts, total = [], 0
        while chunk := inflated.read(1 << 20):
            parts.append(chunk)
            total += len(chunk)
            if total > REPLAY_MAX_BYTES:
                raise too_big
        data = b"".join(parts)
        if inflated.error is not None:
            if not data or "gzip bomb" in inflated.error:
                raise InputError(str(path), inflated.error)
            if notes is not None:
                notes.append(f"{path}: {inflated.error}; replaying what reads")
    if not data.strip():
        raise InputError(str(path), "empty file")
    if b"\x00" in data[:65536]:
        raise InputError(str(path), "not a text log: binary data")
    return data


def _bar_seconds(text: str) -> tuple[str, float] | None:
    """A tqdm frame's description and elapsed time (`... 3/4 [00:02<00:01, ...]`)."""
    m = _BAR_ELAPSED.search(text)
    if m is None:
        return None
    seconds = int(m["h"] or 0) * 3600 + int(m["m"]) * 60 + int(m["s"])
    name = _BAR_NAME.match(text)
    return (name.group(0).split("(")[0].strip() if name else ""), float(seconds)


def load_script(path: Path, engine: str | None = None, server_version: str | None = None) -> Script:
    """Read a log and work out when each line was written and what the server was doing."""
    notes: list[str] = []
    try:
        return _load_script(path, engine, server_version, notes)
    except MemoryError:
        raise InputError(str(path), "too big to replay in this machine's memory; replay the start-up alone") from None


def _load_script(path: Path, engine: str | None, server_version: str | None, notes: list[str]) -> Script:
    data = _read_bytes(path, notes)
    raws = data.split(b"\n")
    if raws and raws[-1] == b"":
        raws.pop()
    texts = [r.decode("utf-8", errors="replace") for r in raws]
    # an unknown --engine raises UnknownEngineError (a usage error) before anything is read
    reader = LogReader(str(path), engine, DatePolicy.of(Source(str(path), path)), keep_stamps=True)
    reader.feed([line for number, text in enumerate(texts, start=1) for line in normalise(text, number)], force=True)
    if reader.fmt is None:
        raise InputError(str(path), no_known_engine(foreign_engine("\n".join(texts[:2000]))))
    runs = reader.runs()
    assert reader.stamps is not None
    fmt, events = reader.fmt, reader.events
    lines = _pace(raws, _stamped_parts(reader, raws, reader.stamps))
    last = runs[-1] if runs else None
    port, url_line = _served_port(last)
    model = "default"
    if last is not None:
        model = str(last.all_config.get("served_model_name") or last.config.get("model_path") or "default")
    return Script(str(path), fmt, lines, runs, _actions(runs, events, fmt), _version(last, events, fmt, server_version),
                  port, url_line, model, _exit_code(last, events, fmt), notes)


def _actions(runs: Sequence[Run], events: Sequence[Event], fmt: Format) -> dict[int, list[str]]:
    """What the server did at which line (0-based): restarted, opened its port, got ready, crashed."""
    actions: dict[int, list[str]] = {}
    for run in runs:
        if run.first_line is not None:
            actions.setdefault(run.first_line - 1, []).append("restart")
        if fmt.serving.health is not None:
            opens = run.milestone(opens_at(fmt.serving.health))
            if opens is not None:
                actions.setdefault(opens.line - 1, []).append("open")
        ready = run.milestone(READY) if run.ready_kind == "server" else None
        if ready is not None:
            actions.setdefault(ready.line - 1, []).append("ready")
        if run.crash is not None and not _hangs(run, events, fmt):
            actions.setdefault(run.crash.line - 1, []).append("crash")
    return actions


def _version(last: Run | None, events: Sequence[Event], fmt: Format, server_version: str | None) -> VersionGuess:
    """The version the replayed server answers as: `--server-version`, else the one the log's last run shows."""
    if server_version is not None:
        if not valid_version(server_version):
            raise UsageError(f"--server-version {server_version!r} is not a version like 0.4.6.post2")
        return VersionGuess(server_version, server_version, ("given with --server-version",))
    if last is None or fmt.serving.version_guess is None:
        return VersionGuess()
    run_events = [e for e in events if last.first_line is not None and last.last_line is not None
                  and last.first_line <= e.line <= last.last_line]
    return fmt.serving.version_guess(run_events, last.all_config, last.config_complete)


def _served_port(last: Run | None) -> tuple[int | None, int | None]:
    """The port the last run's `Uvicorn running on` line names, and that line."""
    running = last.milestone(HTTP_RUNNING) if last is not None else None
    if running is None or not running.fields.get("url"):
        return None, None
    m = re.search(r":(\d+)(?:/|$)", str(running.fields["url"]))
    return (int(m.group(1)), running.line) if m else (None, running.line)


def _exit_code(last: Run | None, events: Sequence[Event], fmt: Format) -> int:
    """The server's exit status: 0 unless the last run crashed (137 where the engine kills its tree)."""
    if last is None or last.crash is None or _hangs(last, events, fmt):
        return 0
    names = {e.name for e in events if last.first_line is not None and e.line >= last.first_line}
    return 137 if names & fmt.serving.kills_tree_on else 1


_REDRAW = re.compile(rb"(?=\r)")


def _hangs(run: Run, events: Sequence[Event], fmt: Format) -> bool:
    """A server that declared itself stuck (a failed health check) and never died: it keeps
    its port and keeps answering that it is starting, so a replay hangs too instead of exiting."""
    if run.crash is None or run.crash.category != "hang" or run.first_line is None:
        return False
    names = {e.name for e in events if e.line >= run.first_line and (run.last_line is None or e.line <= run.last_line)}
    return not names & (fmt.vocab.fatal | fmt.serving.kills_tree_on)


def _stamped_parts(reader: LogReader, raws: list[bytes],
                   stamps: dict[int, tuple[Stamp, bool]]) -> list[list[tuple[bytes, float | None]]]:
    """Each physical line cut where a progress bar redraws (`\r`), each piece with its own
    time in seconds after the log's first timestamp (None: the piece has no time of its own).

    The times are those the pipeline read (`LogReader.stamps`): on the server's own clock,
    a collector's stamp moved onto it. A log with a clock of its own never mixes in a
    collector's stamp that could not be moved (a host's local time before the first line
    showing both): that line follows its predecessor instead.
    """
    own_clock = any(on_own for _, on_own in stamps.values())
    first: Stamp | None = None
    out: list[list[tuple[bytes, float | None]]] = []
    for number, raw in enumerate(raws, start=1):
        found = stamps.get(number)
        stamp = found[0] if found is not None and (found[1] or not own_clock) else None
        parts = [p for p in _REDRAW.split(raw) if p] or [raw]
        holder = 0 if len(parts) == 1 else _timed_piece(reader, parts)
        pieces: list[tuple[bytes, float | None]] = []
        for i, part in enumerate(parts):
            own = stamp if i == holder else None
            if own is not None and first is None:
                first = own
            pieces.append((part, own.minus(first) if own is not None and first is not None else None))
        out.append(pieces)
    return out


def _timed_piece(reader: LogReader, parts: list[bytes]) -> int | None:
    """Which piece of a line redrawn in place carries the line's time: the first with a
    collector's stamp or a header with a time (a log line glued after a bar)."""
    assert reader.scanner is not None
    for i, part in enumerate(parts):
        for line in normalise(part.decode("utf-8", errors="replace"), 0):
            laid = reader.scanner.layout(line.text)
            if line.outer is not None or (laid is not None and laid[1].get("time")):
                return i
    return None


def _pace(raws: list[bytes], parts: list[list[tuple[bytes, float | None]]]) -> list[ScriptLine]:
    """Every piece's moment: its own time; a progress-bar frame at its bar's start plus its
    elapsed time (`[00:04<...]`); anything else with its predecessor. Never earlier than
    the piece before it, and a frame never later than the next piece with its own time.
    A line is written piece by piece, as a terminal shows a bar redrawn in place."""
    flat: list[tuple[float, bool]] = []
    bars: dict[str, tuple[float, float]] = {}  # name -> (start, last elapsed)
    previous = 0.0
    for pieces in parts:
        for data, stamp in pieces:
            at = previous
            bar = _bar_seconds(data.decode("utf-8", errors="replace")) if b"[" in data else None
            if bar is not None:
                name, elapsed = bar
                start, last = bars.get(name, (previous, -1.0))
                if elapsed < last or name not in bars:
                    start = previous
                bars[name] = (start, elapsed)
                at = start + elapsed
            if stamp is not None:
                at = max(at, stamp) if bar is not None else stamp
            flat.append((at, stamp is not None))
            previous = at if stamp is not None else max(previous, at)
    ats = [at for at, _ in flat]
    next_timed = float("inf")
    for i in range(len(flat) - 1, -1, -1):
        if flat[i][1]:
            next_timed = ats[i]
        elif ats[i] > next_timed:
            ats[i] = next_timed
    out: list[ScriptLine] = []
    floor = 0.0
    k = 0
    for raw, pieces in zip(raws, parts, strict=True):
        paced = []
        for data, _ in pieces:
            floor = max(floor, ats[k])
            paced.append((data, floor))
            k += 1
        out.append(ScriptLine(raw, floor, any(stamp is not None for _, stamp in pieces), paced))
    return out


def check_replay_args(log: Path, out: Path, speed: float, hold: float | None) -> None:
    """Numbers that make sense, and an output that is not the input (replaying a log into
    itself would truncate it before reading a line)."""
    if not math.isfinite(speed) or speed <= 0:
        raise UsageError(f"--speed {speed:g}: give a finite number greater than 0")
    if hold is not None and (not math.isfinite(hold) or hold < 0):
        raise UsageError(f"--hold {hold:g}: give a finite number of seconds, 0 or more")
    same = False
    with contextlib.suppress(OSError):
        same = out.exists() and log.exists() and os.path.samefile(log, out)
    if same or os.path.abspath(log) == os.path.abspath(out):
        raise UsageError(f"--out {out}: that is the input log; replay writes a new file (it would truncate its input)")


# --- the HTTP side -----------------------------------------------------------------------


@dataclass
class _State:
    stage: str = "closed"  # "closed" | "starting" | "ready"
    lock: threading.Lock = field(default_factory=threading.Lock)
    answers: Counter[tuple[str, int]] = field(default_factory=Counter)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], state: _State, health: HealthSemantics, script: Script) -> None:
        super().__init__(address, _Handler)
        self.state = state
        self.health = health
        self.engine = script.fmt.name
        self.script = script
        self.version = script.version.pick()
        self.created = int(time.time())


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"  # what the engines' Python HTTP servers call themselves
    sys_version = ""

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self._answer(send_body=True)

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # replay reports a summary of the answers when it ends

    def _answer(self, send_body: bool) -> None:
        server = self.server
        path = self.path.split("?", 1)[0]
        with server.state.lock:
            stage = server.state.stage
        metrics = self._metrics(path, stage)
        status, kind = (200, "metrics") if metrics is not None else answer(server.health, path, stage, server.version)
        if status is None:  # the port is closed by now: behave like a dying server
            self.close_connection = True
            return
        delay = latency(server.health, path, stage, server.version)
        if delay:
            time.sleep(delay)  # a ready health check that runs a generation answers after it
        body = b""
        if metrics is not None:
            body = metrics.encode()
        elif status == 200 and kind != "empty":
            body = json.dumps(self._body(kind)).encode()
        elif status == 404:
            body = b'{"detail":"Not Found"}'
        with server.state.lock:
            server.state.answers[(path, status)] += 1
        self.send_response(status)
        if body:
            self.send_header("Content-Type", "text/plain; version=0.0.4" if metrics is not None else "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body and body:
            self.wfile.write(body)

    def _body(self, kind: str) -> dict[str, Any]:
        script = self.server.script
        engine = self.server.engine
        if kind == "models":
            return {"object": "list", "data": [{"id": script.model, "object": "model",
                                                "created": self.server.created, "owned_by": engine,
                                                "root": script.model}]}
        if kind == "server_info":
            return self._server_info()
        return {"model_path": script.model, "tokenizer_path": script.model, "is_generation": True}

    def _timings(self) -> dict[str, Any] | None:
        """The engine's start-up figures of the run being replayed (its own timings line)."""
        runs = self.server.script.runs
        return runs[-1].engine_timings if runs and runs[-1].engine_timings else None

    def _server_info(self) -> dict[str, Any]:
        script, spec = self.server.script, self.server.health.telemetry
        info: dict[str, Any] = {"model_path": script.model, "served_model_name": script.model}
        if self.server.version is not None:
            info["version"] = self.server.version
        timings = self._timings()
        version = self.server.version
        if spec is not None and spec.info_key and timings is not None and (
                spec.info_since is None or version is None or version_key(version) >= version_key(spec.info_since)):
            info[spec.info_key] = timings
        return info

    def _metrics(self, path: str, stage: str) -> str | None:
        """The metrics page, where the engine serves one: the log's server arguments turned
        it on, and the port is open."""
        spec = self.server.health.telemetry
        runs = self.server.script.runs
        if spec is None or stage == "closed" or path != spec.metrics_path or not runs:
            return None
        if spec.metrics_flag is not None and not runs[-1].all_config.get(spec.metrics_flag):
            return None
        timings = self._timings() or {}
        return metrics_page(spec, timings, labels={"model_name": self.server.script.model})


# --- writing ------------------------------------------------------------------------------


class _Writer:
    """Appends lines to FILE and reopens it when it was moved away, like Python's
    WatchedFileHandler, so that rotating the output mid-replay works as with a real server."""

    def __init__(self, path: Path, restamp: Restamp | None = None) -> None:
        self.path = path
        self.restamp = restamp
        self._file: BinaryIO | None = None
        self._ident: tuple[int, int] | None = None
        self.said_first: str | None = None  # the log's own first stamp, to be said once

    def write(self, raw: bytes, end: bool = True) -> None:
        if self.restamp is not None:
            seen = self.restamp.first
            raw = self.restamp(raw)
            if seen is None and self.restamp.first is not None:
                self.said_first = self.restamp.first
        if self._file is not None:
            try:
                st = os.stat(self.path)
                moved = (st.st_dev, st.st_ino) != self._ident
            except FileNotFoundError:
                moved = True
            if moved:
                self._file.close()
                self._file = None
        if self._file is None:
            from firedup.core.files import open_log

            try:
                handle = open_log(self.path, append=self._ident is not None)  # kept open while writing
            except OSError as exc:
                raise OutputError(str(self.path), exc.strerror or str(exc)) from None
            st = os.fstat(handle.fileno())
            self._file, self._ident = handle, (st.st_dev, st.st_ino)
        self._file.write(raw + b"\n" if end else raw)
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


# --- the replay loop -------------------------------------------------------------------------


def _wait_until(deadline: float, stop: threading.Event) -> bool:
    """Sleep until `deadline` (monotonic); False when stopped first."""
    delay = deadline - time.monotonic()
    return not (delay > 0 and stop.wait(delay))


class Restamp:
    """Lines restamped to this machine's clock as they are written (`replay --now`): the date
    and time the engine's header holds (its `date`/`md`, `time` and `frac` fields, in their own
    layout and precision) become the moment the line is written, so `wait --pid` measures the
    launch of a replayed start. A collector's stamp in front of the header is left as it was."""

    def __init__(self, fmt: Format, clock: Callable[[], float] = time.time) -> None:
        self.headers = [h.regex for h in fmt.parsing.headers if "time" in h.regex.groupindex]
        self.clock = clock
        self.first: str | None = None  # the log's own first stamp, shown when the replay starts

    def __call__(self, raw: bytes) -> bytes:
        text = raw.decode("utf-8", errors="replace")
        for regex in self.headers:
            m = regex.match(text)
            if m is None or m.group("time") is None:
                continue
            now = datetime.fromtimestamp(self.clock())
            spans = []
            for group, value in (("date", f"{now:%Y-%m-%d}"), ("md", f"{now:%m-%d}"), ("time", f"{now:%H:%M:%S}")):
                if group in regex.groupindex and m.group(group) is not None:
                    spans.append((m.span(group), value))
            if "frac" in regex.groupindex and m.group("frac") is not None:
                digits = len(m.group("frac"))
                spans.append((m.span("frac"), f"{now.microsecond:06d}{'0' * 3}"[:digits]))
            if self.first is None:
                self.first = " ".join(m.group(g) for g in ("date", "md", "time") if g in regex.groupindex and m.group(g))
            for (start, end), value in sorted(spans, reverse=True):
                text = text[:start] + value + text[end:]
            return text.encode()
        return raw


def _rewrite_port(raw: bytes, port: int) -> bytes:
    text = raw.decode("utf-8", errors="replace")
    return re.sub(r"(https?://[^\s:/]+):\d+", rf"\g<1>:{port}", text, count=1).encode()


class _Port:
    """The replayed server's HTTP side as the log goes: closed, listening while it starts, ready.
    `say` writes one line of what the replay does."""

    def __init__(self, script: Script, port: int, say: Callable[[str], None]) -> None:
        self.script = script
        self.port = port
        self.say = say
        self.state = _State()
        self.server: _Server | None = None

    def set(self, stage: str) -> None:
        with self.state.lock:
            self.state.stage = stage

    def stage(self) -> str:
        with self.state.lock:
            return self.state.stage

    def open(self, index: int) -> None:
        health = self.script.fmt.serving.health
        if health is None or self.server is not None:
            return
        try:
            self.server = _Server(("127.0.0.1", self.port), self.state, health, self.script)
        except OSError as exc:
            raise FiredupError(f"cannot listen on 127.0.0.1:{self.port}: {exc.strerror or exc} "
                               "(pick another port with --port)") from None
        self.port = self.server.server_address[1]
        self.set("starting")
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
        self.say(f"listening on http://127.0.0.1:{self.port} (line {index + 1}: the server's HTTP port opens)")

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
            self.say("port closed (the server process is gone)")

    def answers(self) -> dict[tuple[str, int], int]:
        with self.state.lock:
            return dict(self.state.answers)


class _Clock:
    """The replay's start on this machine's monotonic clock (moved on past a launch delay), and its notes."""

    def __init__(self, err: TextIO) -> None:
        self.err = err
        self.started = time.monotonic()

    def say(self, text: str) -> None:
        wall = time.monotonic() - self.started
        print(f"replay: +{wall:.1f}s {text}", file=self.err, flush=True)


def _check_pace(speed: float, hold: float | None, launch_delay: float) -> None:
    if not math.isfinite(speed) or speed <= 0:
        raise UsageError(f"--speed {speed:g}: give a finite number greater than 0")
    if hold is not None and (not math.isfinite(hold) or hold < 0):
        raise UsageError(f"--hold {hold:g}: give a finite number of seconds, 0 or more")
    if not math.isfinite(launch_delay) or launch_delay < 0:
        raise UsageError(f"--launch-delay {launch_delay:g}: give a finite number of seconds, 0 or more")


def _port_to_serve(script: Script, port: int | None) -> int:
    """`--port`, else the log's, else the engine's default; 0: any free port, known now (the log
    may name it before the port opens)."""
    default_port = script.fmt.serving.probing.default_port if script.fmt.serving.probing is not None else 8000
    served_port = port if port is not None else (script.port or default_port)
    if served_port == 0:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            served_port = int(probe.getsockname()[1])
    return served_port


def replay(script: Script, out: Path, speed: float = 1.0, port: int | None = None, hold: float | None = None,
           err: TextIO = sys.stderr, stop: threading.Event | None = None, launch_delay: float = 0.0,
           split_writes: float = 0.0,
           now: bool = False) -> int:
    """Write the script to `out` and serve its HTTP answers; return the server's exit status.

    `launch_delay`: seconds (of the log's time, so divided by `speed`) before the first line, as
    a real server's imports print nothing for 20-30 s after its launch: a wait script started
    with the replay is then tested as it runs in life, its clock starting at the launch.

    A crash ends the replay with the status the server had (137 when the engine kills its
    process tree, `Format.serving.kills_tree_on`; the CLI then kills itself with SIGKILL so that
    shells see exactly what they saw). A log that ends ready or still starting keeps serving
    until `stop` is set or `hold` seconds pass.

    `split_writes`: each line is written in two flushes this many wall seconds apart, as a server
    whose output is block-buffered writes it: a wait loop under test must read lines, not chunks.
    `now`: each line's stamp is the moment it is written (`Restamp`), the log's own first stamp said.
    """
    _check_pace(speed, hold, launch_delay)
    stop = stop or threading.Event()
    served = _Port(script, _port_to_serve(script, port), lambda text: None)
    writer = _Writer(out, Restamp(script.fmt) if now else None)
    clock = _Clock(err)
    served.say = clock.say
    wall = script.duration / speed
    print(f"replay: {script.source} -> {out}: {len(script.lines)} lines, {script.duration:.0f} s of log time "
          f"in {wall:.1f} s at {speed:g}x; {_ending(script)}", file=err, flush=True)
    if script.fmt.serving.health is not None:
        print(f"replay: {script.fmt.name} {script.version.describe()}; {_health_summary(script, script.fmt.serving.health)}",
              file=err, flush=True)
    if launch_delay:  # the imports: no line, nothing listening
        clock.say(f"launched; the log begins in {launch_delay:g} s of log time ({launch_delay / speed:.1f} s), as "
                  "a server's first line comes after its imports")
        if not _wait_until(clock.started + launch_delay / speed, stop):
            clock.say("stopped before the log began")
            writer.close()
            return 143
        clock.started += launch_delay / speed
    try:
        crashed = False
        for index, line in enumerate(script.lines):
            if not _write_pieces(line, clock.started, speed, stop, writer, split_writes):
                clock.say("stopped before the end of the log")
                return 143
            crashed = _play_line(script, index, line, served, writer, crashed, split_writes, stop)
            if writer.restamp is not None and writer.said_first is not None:
                clock.say(f"lines restamped to this machine's clock as written (--now); the log's first stamp "
                          f"was {writer.said_first}")
                writer.said_first = None
        return _end(script, served, crashed, hold, stop)
    finally:
        writer.close()
        served.close()
        answers = served.answers()
        if answers:
            summary = ", ".join(f"{path} {status}x{n}" for (path, status), n in sorted(answers.items()))
            print(f"replay: answered {sum(answers.values())} requests: {summary}", file=err, flush=True)


def _write_pieces(line: ScriptLine, started: float, speed: float, stop: threading.Event, writer: _Writer,
                  lead: float = 0.0) -> bool:
    """A bar redrawn in place, piece by piece with no newline yet, each at its moment; then waits
    for the line's own moment (less `lead`: a line split in two flushes ends at it). False when
    stopped first."""
    pieces = line.pieces or [(line.raw, line.at)]
    for data, at in pieces[:-1]:
        if not _wait_until(started + at / speed, stop):
            return False
        writer.write(data, end=False)
    return _wait_until(started + line.at / speed - lead, stop)


def _play_line(script: Script, index: int, line: ScriptLine, served: _Port, writer: _Writer, crashed: bool,
               split_writes: float = 0.0, stop: threading.Event | None = None) -> bool:
    """The line's last piece written, with what the server did at it; whether it has crashed."""
    actions = script.actions.get(index, [])
    raw = (line.pieces or [(line.raw, line.at)])[-1][0]
    if "restart" in actions and index > 0:
        served.close()
        served.set("closed")
        crashed = False
    # A ready line implies an open port even when the log never showed it open.
    if "open" in actions or "ready" in actions:
        served.open(index)
    if index + 1 == script.url_line and script.port is not None and script.port != served.port:
        raw = _rewrite_port(raw, served.port)  # the log names the port actually served
    if "ready" in actions:
        served.set("ready")
        served.say(f"ready (line {index + 1})")
    if split_writes > 0 and len(raw) > 1:  # half a line, a pause, the rest: a block-buffered writer
        writer.write(raw[:len(raw) // 2], end=False)
        (stop or threading.Event()).wait(split_writes)
        raw = raw[len(raw) // 2:]
    writer.write(raw)
    if "crash" in actions:
        crashed = True
        served.say(f"crash (line {index + 1}): the server dies")
        served.close()
        served.set("closed")
    return crashed


def _end(script: Script, served: _Port, crashed: bool, hold: float | None, stop: threading.Event) -> int:
    """The log is written: exit as the server did after a crash, else keep serving."""
    if crashed and script.exit_code:
        served.close()
        how = f"killed with SIGKILL ({script.fmt.serving.tree_kill_note}): status 137" \
            if script.exit_code == 137 else "the main process exits with an error: status 1"
        served.say(f"the log ends with a crash; exiting like the server ({how})")
        return script.exit_code
    what = {"ready": "ready", "starting": "still warming up", "closed": "still starting"}[served.stage()]
    if hold is None:
        served.say(f"end of the log; the server is {what}: serving until interrupted")
        stop.wait()
    else:
        served.say(f"end of the log; the server is {what}: serving for {hold:g} s more")
        stop.wait(hold)
    return 0


def _ending(script: Script) -> str:
    """How the re-enacted start-up ends, as the replay's first line says it: what a wait script
    under test should conclude."""
    last = script.runs[-1] if script.runs else None
    if last is None:
        return "no server start-up in it"
    if script.exit_code:
        return f"the server crashes (exit {script.exit_code})"
    if last.outcome == "ready":
        return "the server gets ready"
    if last.outcome == "crashed":
        return "the server hangs (alive, never ready)"
    return "the log ends before the server is ready"


def _health_summary(script: Script, health: HealthSemantics) -> str:
    version = script.version.pick()
    parts = []
    for path in dict.fromkeys((health.endpoint, "/ready")):
        starting, _ = answer(health, path, "starting", version)
        ready, _ = answer(health, path, "ready", version)
        if ready == 404:
            parts.append(f"{path} 404")
        else:
            parts.append(f"{path} {starting or 'refused'} while warming up, {ready} when ready")
    return f"refused until {opens_at(health)}; " + "; ".join(parts)


def run_replay(log: Path, out: Path, speed: float, port: int | None, hold: float | None, engine: str | None,
               server_version: str | None, err: TextIO = sys.stderr, launch_delay: float = 0.0,
               split_writes: float = 0.0,
               now: bool = False) -> int:
    """The CLI's entry: SIGTERM ends the replay cleanly; a crash exits as the server did."""
    check_replay_args(log, out, speed, hold)
    script = load_script(log, engine=engine, server_version=server_version)
    for note in script.notes:
        print(f"replay: note: {note}", file=err, flush=True)
    stop = threading.Event()

    def on_term(signum: int, frame: Any) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        code = replay(script, out, speed=speed, port=port, hold=hold, err=err, stop=stop, launch_delay=launch_delay,
                      split_writes=split_writes, now=now)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if code == 137:
        err.flush()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGKILL)  # the shell sees 137, Python sees -9: as with the server
    return code


__all__ = ["Restamp", "Script", "ScriptLine", "check_replay_args", "load_script", "replay", "run_replay"]

"""The launch of every run (timeline.launch): stated by a line, given, estimated, unknown; and
held against what an outside poller saw of real start-ups (../shared/realgpu)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, time, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, SHARED, run_cli
from firedup.errors import UsageError
from firedup.formats import get_format
from firedup.timeline.launch import Launch, estimate
from firedup.timeline.pipeline import parse_paths
from firedup.timeline.run import Run

READY = """\
[2026-12-05 22:46:55] server_args=ServerArgs(model_path='/m', tp_size=1, disable_cuda_graph=True)
[2026-12-05 22:47:25 TP0] Load weight begin. avail mem=78.64 GB
[2026-12-05 22:47:26 TP0] Load weight end. elapsed=0.16 s, type=Qwen3ForCausalLM, avail mem=60.00 GB, mem usage=18.00 GB.
[2026-12-05 22:47:28] Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)
[2026-12-05 22:47:32] The server is fired up and ready to roll!
"""


def _runs(tmp_path: Path, text: str, **kw: object) -> list[Run]:
    path = tmp_path / "server.log"
    path.write_text(text)
    result = parse_paths([str(path)], **kw)  # type: ignore[arg-type]
    assert not result.errors, result.errors
    return result.runs


def test_a_log_that_states_no_launch_carries_the_engines_typical_gap_never_zero(tmp_path: Path) -> None:
    [run] = _runs(tmp_path, READY)
    gap = get_format("sglang").timeouts.launch_gap
    assert gap is not None and gap.typical > 0
    launch = run.launch
    assert launch is not None and launch.source == "estimated"
    assert launch.gap == gap.typical and (launch.low, launch.high) == (gap.low, gap.high)
    assert run.total_seconds == 37.0
    assert run.launch_to_ready == 37.0 + gap.typical
    assert launch.ts is not None and run.first_ts is not None and run.first_ts.minus(launch.ts) == gap.typical
    assert launch.margin == gap.high - gap.typical  # a budget adds the rest of the range, a fact of its own
    out = run.as_contract()["launch"]
    # the contract's keys, exact
    assert {"ts", "source", "seconds_before_first_line", "seconds_to_ready", "basis"} <= set(out)
    assert out["seconds_to_ready"] == 37.0 + gap.typical and "docs/launch.md" in out["basis"]


def test_a_journald_service_start_is_the_launch(tmp_path: Path) -> None:
    text = (
        "Dec 05 22:46:30 gpu1 systemd[1]: Starting sglang.service - SGLang...\n"
        "Dec 05 22:46:31 gpu1 systemd[1]: Started sglang.service - SGLang.\n"
        + "".join(f"Dec 05 {line[12:20]} gpu1 python[77]: {line}\n" for line in READY.splitlines())
    )
    [run] = _runs(tmp_path, text, default_date=datetime(2026, 12, 5).date())
    assert run.launch is not None and run.launch.source == "log", run.launch
    assert run.launch.line == 2 and run.launch.ts is not None and run.launch.ts.iso.endswith("22:46:31")
    assert run.launch_to_ready == pytest.approx(61.0)  # 22:46:31 -> 22:47:32


def test_launched_at_gives_the_launch_and_a_time_after_the_first_line_is_refused(tmp_path: Path) -> None:
    [run] = _runs(tmp_path, READY, launched_at=time(22, 46, 34))
    assert run.launch is not None and run.launch.source == "given" and run.launch.gap == 21.0
    assert run.launch_to_ready == 58.0
    with pytest.raises(UsageError, match="after the log's first line"):  # issue 40: refused, not a warning
        _runs(tmp_path, READY, launched_at=datetime(2026, 12, 5, 22, 50))


def test_launched_at_on_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.log").write_text(READY)
    code, out, err = run_cli(["parse", str(tmp_path / "a.log"), "--json", "--launched-at", "22:46:34"],
                             monkeypatch, capsys)
    assert code == 0, err
    launch = json.loads(out)["runs"][0]["launch"]
    assert (launch["source"], launch["seconds_to_ready"]) == ("given", 58.0)
    code, _, err = run_cli(["parse", str(tmp_path / "a.log"), "--launched-at", "yesterday"], monkeypatch, capsys)
    assert code == 2 and "not a time" in err


def test_a_restart_is_launched_after_the_previous_starts_last_line(tmp_path: Path) -> None:
    crash = ("[2026-12-05 22:40:00] server_args=ServerArgs(model_path='/m', tp_size=1)\n"
             "[2026-12-05 22:40:05 TP0] Init torch distributed begin.\n"
             "[2026-12-05 22:40:09] Received sigquit from a child process. It usually means the child failed.\n")
    restarted = READY.replace("22:46:55", "22:40:19")  # 10 s after the crash's last line
    first, second = _runs(tmp_path, crash + restarted)
    assert first.launch is not None and first.launch.source == "estimated"
    assert second.launch is not None and second.launch.source == "estimated"
    assert second.launch.high == 10.0 and second.launch.gap == 10.0
    assert "previous start's last line" in second.launch.basis


def test_an_excerpt_or_a_log_without_times_has_no_launch_to_estimate() -> None:
    fmt = get_format("sglang")
    assert estimate(None, fmt.timeouts.launch_gap, "SGLang").source == "unknown"
    from firedup.read.clock import Stamp

    first = Stamp(datetime(2026, 12, 5, 22, 46, 55), "2026-12-05T22:46:55")
    assert estimate(first, fmt.timeouts.launch_gap, "SGLang", begins_mid_startup=True).source == "unknown"
    assert estimate(first, None, "X").source == "unknown"
    with pytest.raises(ValueError):
        Launch("guessed", "no such source")


def test_the_views_show_both_clocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.log").write_text(READY)
    code, out, _ = run_cli(["timeline", str(tmp_path / "a.log")], monkeypatch, capsys)
    assert code == 0
    assert "READY in 37 s, ~58 s from launch" in out
    assert "launch: ~2026-12-05T22:46:34, 21 s before the first line (estimated" in out
    code, out, _ = run_cli(["parse", str(tmp_path / "a.log")], monkeypatch, capsys)
    assert "from launch" in out.splitlines()[0] and "~58 s" in out


@pytest.mark.skipif(not (SHARED / "tools" / "check_realgpu.py").is_file(), reason="../shared is absent")
def test_time_from_launch_holds_against_the_outside_pollers_first_200() -> None:
    """../shared/tools/check_realgpu.py: every real ready run's launch -> ready within
    max(8 s, 15 %) of the poller's launch -> first HTTP 200."""
    proc = subprocess.run([sys.executable, str(SHARED / "tools" / "check_realgpu.py"), str(SHARED / "realgpu"),
                           "--cmd", f"{sys.executable} -m firedup"], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " 0 failed to parse" in proc.stdout


def test_known_launches_at_hand_set_the_budget_s_margin_not_the_run_s_time(tmp_path: Path) -> None:
    """A known launch of the same engine and config (here given; `wait --pid` measures them) beats
    the documented range for the budget's launch margin, and leaves the other run's own time from
    launch as `parse` gives it (the tables re-estimated its gap to 40 s while `parse` said 21 s)."""
    import firedup
    from firedup.tables.frames import from_runs

    (tmp_path / "a.log").write_text(READY)
    (tmp_path / "b.log").write_text(READY.replace("22:47:32", "22:47:40"))
    [known] = parse_paths([str(tmp_path / "a.log")], launched_at=time(22, 46, 15)).runs  # 40 s before the first line
    [other] = parse_paths([str(tmp_path / "b.log")]).runs
    assert other.launch is not None and other.launch.gap == 21.0 and other.launch_to_ready is not None
    runs = from_runs([known, other])
    row = runs.runs.filter(runs.runs["source"] == str(tmp_path / "b.log")).to_dicts()[0]
    assert (row["launch_source"], row["launch_gap"]) == ("estimated", other.launch.gap)
    assert row["launch_to_ready"] == other.launch_to_ready
    report = firedup.budgets(runs)
    clock = report.clocks[0]
    assert clock is not None and clock.kinds == {"given": 1, "estimated": 1}
    assert "first line + 21 s" in clock.text and "1 measured launch of this configuration's runs" in clock.text
    margin = 40.0 - other.launch.gap  # the measured gap reaches 19 s beyond the estimate
    assert f"the budget adds {margin:.0f} s" in clock.text
    assert report.budgets[0].launch_margin == margin
    assert report.budgets[0].slowest == max(known.launch_to_ready or 0.0, other.launch_to_ready)


def test_a_file_no_format_reads_as_a_servers_is_skipped_not_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 27: a poller's `.health.txt` beside the logs (it quotes the launch command) became an
    INCOMPLETE SGLang run, and budgets counted it ("3 ready, of 6 runs")."""
    (tmp_path / "run.log").write_text(READY)
    (tmp_path / "run.health.txt").write_text(
        "22:46:33 CUDA_HOME=/usr/local/cuda CMD: python3 -m sglang.launch_server --model-path /m --port 30000\n"
        "--- start (t=0 is poller start, server pid 2175)\n    0.00 22:46:34 refused\n   58.58 22:47:33 200\n")
    result = parse_paths([str(tmp_path)], all_files=True)
    assert [Path(r.source).name for r in result.runs] == ["run.log"]
    [skipped] = [s for s in result.sources if s.source.endswith("run.health.txt")]
    assert skipped.engine is None and skipped.skipped is not None and "not a server log" in skipped.skipped
    code, out, err = run_cli(["budget", str(tmp_path), "--all"], monkeypatch, capsys)
    assert code == 0 and "run.health.txt: not a server log" in err and err.count("run.health.txt") == 1
    assert "incomplete" not in out


@pytest.mark.parametrize("first_line, what", [
    ("2026-12-05T22:46:20.500000000Z container start 3f2a6b9c0d1e2f3a4b5c (image=lmsysorg/sglang, name=sglang)",
     "a container runtime starts"),
    ("2026-12-05 22:46:20 python3 -m sglang.launch_server --model-path /m --port 30000", "a shell echoes the launch command"),
])
def test_a_launchers_own_stamped_line_is_the_launch(tmp_path: Path, first_line: str, what: str) -> None:
    """`docker events` beside `docker logs -t`, or a launcher that stamps the command it runs."""
    stamped = "".join(f"2026-12-05T{line[12:20]}.100000000Z {line}\n" for line in READY.splitlines())
    [run] = _runs(tmp_path, first_line + "\n" + stamped)
    assert run.launch is not None and run.launch.source == "log" and run.launch.line == 1, run.launch
    assert what in run.launch.basis
    assert run.launch_to_ready == pytest.approx(72.0, abs=1.0)  # 22:46:20 -> 22:47:32


# --- issue 40: no line, clock or given time may make a launch lie ------------------------------

FIRST = datetime(2026, 12, 5, 22, 46, 55)  # READY's first line
PLAUSIBLE = get_format("sglang").timeouts.launch_gap.plausible  # type: ignore[union-attr]
_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _journald(text: str = READY, host: str = "gpu1") -> str:
    return "".join(f"{_jd(datetime.fromisoformat(line[1:20]))} {host} python[77]: {line}\n" for line in text.splitlines())


def _shifted(first: datetime, text: str = READY) -> str:
    """`text` with every `[YYYY-MM-DD HH:MM:SS` stamp moved so that its first line is at `first`."""
    shift = first - datetime.fromisoformat(text[1:20])
    return "".join(f"[{datetime.fromisoformat(line[1:20]) + shift:%Y-%m-%d %H:%M:%S}{line[20:]}\n"
                   for line in text.splitlines())


def _jd(when: datetime) -> str:
    return when.strftime("%b %d %H:%M:%S")


def _unit(when: datetime, unit: str, verb: str = "Started") -> str:
    return f"{_jd(when)} gpu1 systemd[1]: {verb} {unit} - {unit.split('.')[0]}.\n"


def _docker_logs(text: str = READY) -> str:
    return "".join(f"{line[1:11]}T{line[12:20]}.100000000Z {line}\n" for line in text.splitlines())


def _event(when: datetime, container: str, image: str, what: str = "start", tz: timedelta = timedelta(0)) -> str:
    local = when + tz
    sign = "-" if tz < timedelta(0) else "+"
    minutes = abs(int(tz.total_seconds())) // 60
    offset = "Z" if not tz else f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"
    return f"{local:%Y-%m-%dT%H:%M:%S}.000000000{offset} container {what} {container} (image={image}, name=x)\n"


def _merge(*blocks: tuple[datetime, str]) -> str:
    """Lines of several writers, in time order (journald and `docker events` interleave so)."""
    return "".join(text for _, text in sorted(blocks, key=lambda b: b[0]))


def test_another_units_start_27_min_before_is_not_the_launch_nor_the_first_line(tmp_path: Path) -> None:
    """Issue 40, class 1: `Started logrotate.service` 27 min before the server made `READY in 27 min
    32 s` for a 37 s start (the launch line became the first line too)."""
    text = _unit(FIRST - timedelta(minutes=27, seconds=32), "logrotate.service") + _journald()
    [run] = _runs(tmp_path, text, default_date=FIRST.date())
    assert run.total_seconds == 37.0 and run.first_ts is not None and run.first_ts.dt == FIRST
    assert run.launch is not None and run.launch.source == "estimated"
    assert "logrotate.service" in run.launch.basis and "27 min 32 s before the first line" in run.launch.basis


@given(st.floats(0.0, PLAUSIBLE), st.lists(st.tuples(st.sampled_from(["logrotate", "node-exporter", "cron", "sshd"]),
                                                    st.floats(-3600.0, 3600.0)), max_size=6))
@_SETTINGS
def test_the_servers_unit_is_the_launch_among_unrelated_ones(tmp_path: Path, gap: float,
                                                             others: list[tuple[str, float]]) -> None:
    """Random unrelated units started around the server's: the server's own (named by its unit)
    is its launch; the first line is the server's own."""
    gap = round(gap)
    start = FIRST - timedelta(seconds=gap)
    blocks = [(start, _unit(start, "sglang.service")), (FIRST, _journald())]
    blocks += [(FIRST + timedelta(seconds=round(t)) - timedelta(microseconds=1), _unit(FIRST + timedelta(seconds=round(t)),
                                                                                      f"{name}.service"))
               for name, t in others]
    [run] = _runs(tmp_path, _merge(*blocks), default_date=FIRST.date())
    assert run.first_ts is not None and run.first_ts.dt == FIRST and run.total_seconds == 37.0
    assert run.launch is not None and run.launch.source == "log", run.launch
    assert run.launch.ts is not None and run.launch.ts.dt == start


@given(st.floats(0.0, PLAUSIBLE), st.lists(st.floats(-600.0, 600.0), max_size=4))
@_SETTINGS
def test_an_unnamed_unit_counts_alone_and_never_beside_others(tmp_path: Path, gap: float, others: list[float]) -> None:
    """A unit that does not name the engine (`llm.service`) is the launch when it is the only one
    started within the plausible gap; beside another, which is the server's is not known: the
    run stays estimated, and says so."""
    gap = round(gap)
    start = FIRST - timedelta(seconds=gap)
    moments = [FIRST + timedelta(seconds=round(t)) for t in others]
    blocks = [(start, _unit(start, "llm.service")), (FIRST, _journald())]
    blocks += [(m - timedelta(microseconds=1), _unit(m, f"job{i}.service")) for i, m in enumerate(moments)]
    [run] = _runs(tmp_path, _merge(*blocks), default_date=FIRST.date())
    rivals = [m for m in moments if timedelta(0) <= FIRST - m <= timedelta(seconds=PLAUSIBLE)]
    assert run.launch is not None
    if rivals:
        assert run.launch.source == "estimated" and "which launched this server is not known" in run.launch.basis
    else:
        assert run.launch.source == "log" and run.launch.ts is not None and run.launch.ts.dt == start


@given(st.floats(0.0, PLAUSIBLE - 1), st.lists(st.floats(-3600.0, 3600.0), max_size=5),  # the stamps differ by 0.1 s
       st.integers(-12 * 60, 14 * 60).map(lambda m: timedelta(minutes=m)))
@_SETTINGS
def test_the_servers_container_is_the_launch_on_any_utc_offset(tmp_path: Path, gap: float, others: list[float],
                                                              tz: timedelta) -> None:
    """Class 1 and 3: `docker events` of every container (node-exporter's start) beside
    `docker logs -t` of the server, the events on any UTC offset (`+01:00` was ignored)."""
    gap = round(gap)
    start = FIRST - timedelta(seconds=gap)
    blocks = [(start, _event(start, "3f2a6b9c0d1e", "lmsysorg/sglang:v0.5.16", tz=tz)), (FIRST, _docker_logs())]
    blocks += [(FIRST + timedelta(seconds=round(t)) - timedelta(microseconds=1),
                _event(FIRST + timedelta(seconds=round(t)), f"{i:012x}", "prom/node-exporter", tz=tz))
               for i, t in enumerate(others)]
    [run] = _runs(tmp_path, _merge(*blocks))
    assert run.first_ts is not None and run.first_ts.dt == FIRST
    assert run.launch is not None and run.launch.source == "log", run.launch
    assert run.launch.ts is not None and abs((run.launch.ts.dt - (start - timedelta(seconds=0.1))).total_seconds()) < 0.01


def test_a_yearless_journald_launch_on_new_years_eve_is_dated_the_year_before(tmp_path: Path) -> None:
    """Class 3: `Dec 31 23:59:50` before 2027 server lines was dated 2027-12-31."""
    ready = _shifted(datetime(2027, 1, 1, 0, 0, 15))
    text = "Dec 31 23:59:50 gpu1 systemd[1]: Started sglang.service - SGLang.\n" + _journald(ready)
    [run] = _runs(tmp_path, text)
    assert run.launch is not None and run.launch.source == "log", run.launch
    assert run.launch.ts is not None and run.launch.ts.dt == datetime(2026, 12, 31, 23, 59, 50)
    assert run.launch.gap == 25.0 and run.launch_to_ready == 25.0 + 37.0


@given(st.lists(st.tuples(st.integers(5, 60), st.integers(10, 300), st.booleans()), min_size=1, max_size=4),
       st.booleans(), st.booleans())
@_SETTINGS
def test_each_restart_keeps_its_own_launch(tmp_path: Path, starts: list[tuple[int, int, bool]], docker: bool,
                                           trailing: bool) -> None:
    """Class 2: random restarts (a crash with its line, or a start killed without a word), each
    started by its own launch line some seconds before its first line: each run's launch is its
    own line, never the estimate; a launch line after the last ready opens no run."""
    crash = ("[{t0}] server_args=ServerArgs(model_path='/m', tp_size=1)\n"
             "[{t1} TP0] Init torch distributed begin.\n")
    fatal = "[{t2}] Received sigquit from a child process. It usually means the child failed.\n"
    at = FIRST
    blocks: list[tuple[datetime, str]] = []
    launches = []
    for gap, length, with_fatal in [*starts, (21, 0, False)]:
        launch = at
        first = launch + timedelta(seconds=gap)
        launches.append((launch, first))
        if length:  # a crashed start
            stamp = [f"{first + timedelta(seconds=s):%Y-%m-%d %H:%M:%S}" for s in (0, 2, 4)]
            text = crash.format(t0=stamp[0], t1=stamp[1]) + (fatal.format(t2=stamp[2]) if with_fatal else "")
            at = first + timedelta(seconds=length)
        else:  # the last: ready
            text = _shifted(first)
        blocks.append((first, _docker_logs(text) if docker else _journald(text)))
        blocks.append((launch, _event(launch, "3f2a6b9c0d1e", "lmsysorg/sglang") if docker else
                       _unit(launch, "sglang.service")))
    if trailing:
        end = at + timedelta(minutes=30)
        blocks.append((end, _event(end, "3f2a6b9c0d1e", "lmsysorg/sglang") if docker else _unit(end, "sglang.service")))
    runs = _runs(tmp_path, _merge(*blocks), default_date=FIRST.date())
    assert len(runs) == len(launches), [(r.outcome, r.first_ts) for r in runs]
    for run, (launch, first) in zip(runs, launches, strict=True):
        assert run.first_ts is not None and abs((run.first_ts.dt - first).total_seconds()) < 1
        assert run.launch is not None and run.launch.source == "log", run.launch
        assert run.launch.ts is not None and abs((run.launch.ts.dt - launch).total_seconds()) < 1
    assert runs[-1].outcome == "ready"


@given(st.integers(-3 * 86400, 3 * 86400), st.sampled_from(["time", "datetime", "utc", "+01:00", "str"]))
@_SETTINGS
def test_launched_at_counts_only_where_it_can_be_this_runs_launch(tmp_path: Path, offset: int, form: str) -> None:
    """Class 4: a time 1 s after the first line became the day before (a gap of 86,399 s), a date 6
    years earlier was taken, `14:20:00Z` was an internal TypeError. Now a given time counts when it
    is at most the plausible gap before the first line, and is refused with one line otherwise."""
    when = FIRST - timedelta(seconds=offset)
    value: object = {"time": when.time(), "datetime": when, "str": when.isoformat(sep=" "),
                     "utc": when.replace(tzinfo=UTC),  # a log in UTC
                     "+01:00": (when + timedelta(hours=1)).replace(tzinfo=timezone(timedelta(hours=1))).isoformat(),
                     }[form]
    fits = 0 <= offset <= PLAUSIBLE or (form == "time" and 0 <= offset % 86400 <= PLAUSIBLE)
    if not fits:
        with pytest.raises(UsageError) as refused:
            _runs(tmp_path, READY, launched_at=value)
        assert "\n" not in str(refused.value) and "not this run's launch" in str(refused.value)
        return
    [run] = _runs(tmp_path, READY, launched_at=value)
    assert run.launch is not None and run.launch.source == "given", run.warnings
    assert run.launch.gap == offset % 86400 if form == "time" else run.launch.gap == offset
    assert run.launch_to_ready == run.launch.gap + 37.0


@pytest.mark.parametrize("value, says", [("2026-12-05", "a date alone"), (datetime(2026, 12, 5).date(), "a date alone"),
                                         (5, "not a time"), ("14:20", None), (b"22:46:34", "not a time")])
def test_the_librarys_launched_at_raises_firedups_own_error(tmp_path: Path, value: object, says: str | None) -> None:
    """Class 4: the library's `launched_at=` raised IndexError for a string, a date or an int."""
    import firedup

    (tmp_path / "a.log").write_text(READY)
    with pytest.raises(UsageError) as refused:
        firedup.parse([str(tmp_path / "a.log")], launched_at=value)  # type: ignore[arg-type]
    if says:
        assert says in str(refused.value)
    assert firedup.parse([str(tmp_path / "a.log")], launched_at="22:46:34").runs[0].launch.source == "given"  # type: ignore[union-attr]


def test_with_a_folder_only_the_run_it_can_be_the_launch_of_takes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Class 4: given with a folder, 21 runs of other days took it (gaps up to 164 days)."""
    (tmp_path / "a.log").write_text(READY)
    for day in range(1, 4):
        (tmp_path / f"b{day}.log").write_text(_shifted(FIRST - timedelta(days=day)))
    code, out, err = run_cli(["parse", str(tmp_path), "--json", "--launched-at", "22:46:34"], monkeypatch, capsys)
    assert code == 0, err
    runs = {Path(r["source"]).name: r for r in json.loads(out)["runs"]}
    assert runs["a.log"]["launch"]["source"] == "given"
    # a time of day on the other logs' own days would be their launch too; a full date is not
    code, out, err = run_cli(["parse", str(tmp_path), "--json", "--launched-at", "2026-12-05T22:46:34"], monkeypatch,
                             capsys)
    runs = {Path(r["source"]).name: r for r in json.loads(out)["runs"]}
    assert runs["a.log"]["launch"]["source"] == "given"
    assert [runs[f"b{d}.log"]["launch"]["source"] for d in range(1, 4)] == ["estimated"] * 3
    assert all(any("not this run's launch" in w for w in runs[f"b{d}.log"]["warnings"]) for d in range(1, 4))
    code, _, err = run_cli(["parse", str(tmp_path / "b1.log"), "--launched-at", "2026-12-05T22:46:34"], monkeypatch,
                           capsys)
    assert code == 2 and err.count("\n") == 1 and "after the log's first line" in err


def test_a_gap_before_a_collector_stamped_first_line_is_not_every_runs_allowance(tmp_path: Path) -> None:
    """Class 5: a `docker logs -t` log whose container started 1 s before its first
    collector-stamped line (a line printed during the imports, without the server's own time),
    beside two raw logs of the same config: the raw logs were allowed `first line + 0 s`."""
    import firedup
    from firedup.tables.frames import from_runs

    early = "2026-12-05T22:46:55.100000000Z /usr/lib/python3/site-packages/torch/cuda/__init__.py:61: FutureWarning: x\n"
    late = _shifted(FIRST + timedelta(seconds=25))
    docker = (_event(FIRST - timedelta(seconds=1), "3f2a6b9c0d1e", "lmsysorg/sglang") + early
              + "".join(f"{line[1:11]}T{line[12:20]}.100000000Z {line}\n" for line in late.splitlines()))
    (tmp_path / "docker.log").write_text(docker)
    (tmp_path / "raw1.log").write_text(_shifted(FIRST + timedelta(hours=1)))
    (tmp_path / "raw2.log").write_text(_shifted(FIRST + timedelta(hours=2)))
    result = parse_paths([str(tmp_path)], content_hash=True)
    by_name = {Path(r.source).name: r for r in result.runs}
    [docker_run] = [by_name["docker.log"]]
    assert docker_run.first_from_collector and docker_run.launch is not None and docker_run.launch.source == "log"
    assert docker_run.launch.gap is not None and docker_run.launch.gap < 2.0
    runs = from_runs(result.runs)
    rows = {Path(r["source"]).name: r for r in runs.runs.to_dicts()}
    gap = get_format("sglang").timeouts.launch_gap
    assert gap is not None
    for name in ("raw1.log", "raw2.log"):
        assert rows[name]["launch_first_kind"] == "own"
        assert rows[name]["launch_high"] == gap.high, rows[name]["launch_basis"]  # the engine's range, not 0-0 s
    clock = firedup.budgets(runs).clocks[0]
    assert clock is not None and "first line + 0 s" not in clock.text


def test_the_estimate_reaches_a_cold_page_caches_gap_and_says_which_case() -> None:
    """Class 6: real SGLang start-ups with a 16 GB checkpoint after the page cache was dropped
    printed their first line 22-37 s after the launch; the range said 16-27 s. Every engine's
    range now reaches its cold top, keeps its warm top, and the basis names both cases."""
    from firedup.formats import all_formats
    from firedup.timeline.launch import launch_gap_text

    sglang = get_format("sglang").timeouts.launch_gap
    assert sglang is not None and sglang.high >= 37.0 and sglang.warm_high == 27.0
    for fmt in all_formats().values():
        gap = fmt.timeouts.launch_gap
        if gap is None:
            continue
        text = launch_gap_text(gap)
        assert gap.warm_high is not None and gap.warm_high < gap.high
        assert f"{gap.high:.0f} s cold" in text and "warm page cache" in text
        assert gap.plausible >= 3 * gap.high

"""`firedup replay`: pacing, version semantics, and the HTTP answers over real loopback."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path

import pytest

from _live import (
    CRASH_OOM,
    NEW_READY,
    OLD_READY,
    VLLM_READY,
    env,
    firedup,
    free_port,
    replaying,
    stamps,
    start_replay,
    status_of,
    wait_for_text,
)
from conftest import CORPUS
from firedup.core.health import answer
from firedup.formats.sglang import HEALTH as SGLANG_HEALTH
from firedup.formats.vllm import HEALTH as VLLM_HEALTH
from firedup.live.replay import load_script, replay


def test_each_timed_line_is_written_at_its_own_offset() -> None:
    script = load_script(NEW_READY)
    first = stamps(NEW_READY)[0]
    texts = NEW_READY.read_text().splitlines()
    for text, line in zip(texts, script.lines, strict=True):
        m = re.match(r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})", text)
        if m:
            assert line.timed
            assert line.at == (datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S") - first).total_seconds()
    assert [line.at for line in script.lines] == sorted(line.at for line in script.lines)


def test_progress_frames_are_paced_by_their_own_elapsed_time() -> None:
    """A tqdm frame `[00:04<...]` comes 4 s after its bar started (the line before the bar)."""
    script = load_script(NEW_READY)
    texts = NEW_READY.read_text().splitlines()
    shards = [i for i, t in enumerate(texts) if t.startswith("Multi-thread loading shards")]
    start = script.lines[shards[0] - 1].at  # "Load weight begin" on TP1, +8 s
    assert start == 8.0
    assert [script.lines[i].at - start for i in shards] == [0.0, 4.0, 8.0, 10.0]
    # never later than the next line with its own time
    batches = [i for i, t in enumerate(texts) if t.startswith("Capturing batches")]
    assert all(script.lines[i].at <= script.lines[batches[-1] + 1].at for i in batches)


def test_an_untimed_line_follows_its_predecessor() -> None:
    script = load_script(OLD_READY)
    texts = OLD_READY.read_text().splitlines()
    jit = next(i for i, t in enumerate(texts) if "flashinfer.jit: Loading" in t)
    assert not script.lines[jit].timed
    assert script.lines[jit].at == script.lines[jit - 1].at


@pytest.mark.parametrize(("log", "version", "health_warming", "ready_route"), [
    (OLD_READY, "0.4.8 or older", 200, False),  # the complete ServerArgs has no skip_server_warmup
    (NEW_READY, "0.5.21 or newer", 503, True),  # 'Init parallel begin'
    (CRASH_OOM, "0.4.9 to 0.5.18", 503, False),
])
def test_the_version_is_read_from_the_logs_shape(log: Path, version: str, health_warming: int,
                                                 ready_route: bool) -> None:
    script = load_script(log)
    assert script.version.describe().startswith(version)
    picked = script.version.pick()
    assert answer(SGLANG_HEALTH, "/health", "starting", picked)[0] == health_warming
    assert (answer(SGLANG_HEALTH, "/ready", "starting", picked)[0] == 503) is ready_route
    assert answer(SGLANG_HEALTH, "/health", "closed", picked)[0] is None


def test_an_explicit_server_version_wins() -> None:
    script = load_script(OLD_READY, server_version="0.5.20")
    assert answer(SGLANG_HEALTH, "/health", "starting", script.version.pick())[0] == 503
    assert answer(SGLANG_HEALTH, "/ready", "ready", "0.5.20")[0] == 200
    assert answer(SGLANG_HEALTH, "/ready", "ready", "0.5.19")[0] == 404
    assert answer(SGLANG_HEALTH, "/model_info", "starting", "0.5.5")[0] == 404  # added in 0.5.6


def test_vllm_is_refused_until_ready_then_200() -> None:
    assert answer(VLLM_HEALTH, "/health", "starting", None)[0] is None
    assert answer(VLLM_HEALTH, "/health", "ready", None)[0] == 200
    assert answer(VLLM_HEALTH, "/ping", "ready", "0.6.3")[0] == 404
    assert answer(VLLM_HEALTH, "/v1/models", "ready", None) == (200, "models")


def test_a_crash_exits_like_sglang_sigquit_path_and_a_dead_scheduler_with_1(tmp_path: Path) -> None:
    assert load_script(CRASH_OOM).exit_code == 137
    dead = tmp_path / "dead.log"
    dead.write_text(
        "[2025-01-10 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
        "[2025-01-10 10:00:05 TP0] Init torch distributed begin.\n"
        "[2025-01-10 10:00:06 TP0] Load weight begin. avail mem=78.50 GB\n"
        "[2025-01-10 10:00:30] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
        "[2025-01-10 10:00:30] Exit code: -9\n"
        "Traceback (most recent call last):\n"
        "EOFError\n")
    assert load_script(dead).exit_code == 1
    assert load_script(NEW_READY).exit_code == 0


def _cut_before_ready(log: Path, tmp_path: Path) -> Path:
    """The log up to (not including) its ready line: a server still warming up for ever."""
    lines = log.read_text().splitlines(keepends=True)
    cut = tmp_path / f"warming-{log.name}"
    cut.write_text("".join(line for line in lines if "fired up and ready" not in line))
    return cut


def test_refused_before_uvicorn_then_503_with_an_empty_body_while_warming_up(tmp_path: Path) -> None:
    out = tmp_path / "live.log"
    port = free_port()
    with replaying(_cut_before_ready(NEW_READY, tmp_path), out, port, 20) as proc:
        wait_for_text(out, "Init parallel begin")
        assert status_of(port, "/health")[0] is None  # +6 s of log time; the port opens at +29 s
        wait_for_text(out, "POST /generate")  # the last line: warming up from now on
        status, body, headers = status_of(port, "/health")
        assert (status, body, headers.get("content-length")) == (503, b"", "0")
        assert "content-type" not in headers
        assert status_of(port, "/ready")[:2] == (503, b"")  # 0.5.20+ has /ready
        models = status_of(port, "/v1/models")
        assert models[0] == 200  # not gated on readiness
        assert json.loads(models[1])["data"][0]["id"] == "qwen3-8b"  # --served-model-name in the args dict
        assert status_of(port, "/model_info")[0] == 200
        assert status_of(port, "/no/such/route")[0] == 404
        assert proc.poll() is None  # a server still starting keeps running


def test_200_with_an_empty_body_once_ready_and_the_log_names_the_served_port(tmp_path: Path) -> None:
    out = tmp_path / "live.log"
    port = free_port()
    with replaying(NEW_READY, out, port, 50) as proc:
        content = wait_for_text(out, "fired up and ready to roll")
        assert status_of(port, "/health")[:2] == (200, b"")
        assert status_of(port, "/ready")[:2] == (200, b"")
        assert proc.poll() is None  # a ready server keeps serving
    # The log's own port is rewritten to the one served, so scripts reading it get there.
    assert f"Uvicorn running on http://0.0.0.0:{port} " in content
    original = NEW_READY.read_text().splitlines()
    written = out.read_text().splitlines()
    assert len(written) == len(original)
    assert [a for a, b in zip(original, written, strict=True) if a != b] == [
        next(t for t in original if "Uvicorn running on" in t)]


def test_old_versions_answer_200_during_warm_up(tmp_path: Path) -> None:
    out = tmp_path / "live.log"
    port = free_port()
    with replaying(_cut_before_ready(OLD_READY, tmp_path), out, port, 50) as proc:
        wait_for_text(out, "POST /generate")
        assert status_of(port, "/health")[:2] == (200, b"")  # the trap: 200 while still warming up
        assert status_of(port, "/ready")[0] == 404  # no /ready before 0.5.20
    assert "/health 200 while warming up" in proc.stderr
    assert "the server is still warming up" in proc.stderr


def test_a_crashing_log_kills_the_replay_like_the_server(tmp_path: Path) -> None:
    out = tmp_path / "live.log"
    proc = start_replay(CRASH_OOM, out, free_port(), 50)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL  # a shell shows 137, as for SGLang's SIGQUIT path
    assert out.read_text() == CRASH_OOM.read_text()
    assert "status 137" in err


def test_sigterm_ends_a_holding_replay_cleanly(tmp_path: Path) -> None:
    out = tmp_path / "live.log"
    port = free_port()
    proc = start_replay(NEW_READY, out, port, 100)
    wait_for_text(out, "fired up")
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert "answered" not in err or "requests" in err
    assert status_of(port, "/health")[0] is None  # the port is closed again


def test_replay_writes_to_a_rotated_output_like_a_watched_file_handler(tmp_path: Path) -> None:
    log = tmp_path / "two.log"
    log.write_text("[2025-01-10 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
                   "[2025-01-10 10:00:00 TP0] Init torch distributed begin.\n"
                   "[2025-01-10 10:00:02 TP0] Load weight begin. avail mem=78.50 GB\n"
                   "[2025-01-10 10:00:02 TP0] Load weight end. type=M, avail mem=60.00 GB\n")
    out = tmp_path / "live.log"
    with replaying(log, out, free_port(), 4, "--hold", "30"):
        wait_for_text(out, "Init torch distributed begin")  # the next line comes 0.5 s later
        out.rename(tmp_path / "live.log.1")
        wait_for_text(out, "Load weight end")
    assert (tmp_path / "live.log.1").read_text().splitlines() == log.read_text().splitlines()[:2]
    assert out.read_text().splitlines() == log.read_text().splitlines()[2:]


def test_bad_inputs_give_one_line_and_exit_1(tmp_path: Path) -> None:
    from _live import env, firedup

    missing = subprocess.run(firedup("replay", str(tmp_path / "nope.log"), "--out", str(tmp_path / "o.log")),
                             capture_output=True, text=True, env=env(), timeout=30)
    assert missing.returncode == 1
    assert missing.stderr.strip().endswith("nope.log: no such file")
    assert "Traceback" not in missing.stderr
    bad_speed = subprocess.run(firedup("replay", str(NEW_READY), "--out", str(tmp_path / "o.log"), "--speed", "0"),
                               capture_output=True, text=True, env=env(), timeout=30)
    assert bad_speed.returncode == 2


@pytest.mark.parametrize("name", ["001", "054"])
def test_a_corpus_log_replays_to_the_same_text(tmp_path: Path, name: str) -> None:
    found = sorted((CORPUS / "sglang").glob(f"{name}_*.log"))
    if not found:
        pytest.skip("the shared corpus is not available")
    out = tmp_path / "live.log"
    port = free_port()
    with replaying(found[0], out, port, 200, "--hold", "30"):
        wait_for_text(out, "fired up and ready to roll")
        assert status_of(port, "/health")[0] == 200
    original = found[0].read_text().splitlines()
    written = out.read_text().splitlines()
    assert [re.sub(r":\d+ \(Press", ":P (Press", t) for t in written] == \
           [re.sub(r":\d+ \(Press", ":P (Press", t) for t in original]


def test_a_bar_redrawn_in_place_is_written_piece_by_piece_at_its_own_pace(tmp_path: Path) -> None:
    log = tmp_path / "bar.log"
    log.write_bytes(
        b"[2026-01-10 10:00:00] server_args={'model_path': 'm', 'tp_size': 1}\n"
        b"[2026-01-10 10:00:01] Load weight begin. avail mem=78.50 GB\n"
        b"Multi-thread loading shards:   0% Completed | 0/4 [00:00<?, ?it/s]"
        b"\rMulti-thread loading shards:  50% Completed | 2/4 [00:04<00:04,  2.00s/it]"
        b"\rMulti-thread loading shards: 100% Completed | 4/4 [00:08<00:00,  2.00s/it]"
        b"[2026-01-10 10:00:10] Load weight end. type=M, avail mem=60.00 GB\n")
    line = load_script(log).lines[2]
    # frames at the bar's start (+1 s, the line before) plus their elapsed time; the last
    # piece carries the glued log line, whose own time (+10 s) wins
    assert [(data[:30], at) for data, at in line.pieces] == [
        (b"Multi-thread loading shards:  ", 1.0), (b"\rMulti-thread loading shards: ", 5.0),
        (b"\rMulti-thread loading shards: ", 10.0)]
    assert b"".join(data for data, _ in line.pieces) == line.raw


def test_vllm_refuses_connections_until_ready_even_after_naming_its_port(tmp_path: Path) -> None:
    lines = VLLM_READY.read_text().splitlines(keepends=True)
    cut = tmp_path / "vllm-starting.log"
    cut.write_text("".join(t for t in lines if "Application startup complete" not in t))
    out, port = tmp_path / "live.log", free_port()
    with replaying(cut, out, port, 50):
        content = wait_for_text(out, "Waiting for application startup")  # the last line
        assert f"Starting vLLM API server on http://0.0.0.0:{port}" in content  # the served port, named early
        assert status_of(port, "/health")[0] is None
    with replaying(VLLM_READY, tmp_path / "live2.log", port, 50):
        wait_for_text(tmp_path / "live2.log", "Application startup complete")
        assert status_of(port, "/health")[:2] == (200, b"")
        assert status_of(port, "/v1/models")[0] == 200
        assert status_of(port, "/ready")[0] == 404  # vLLM has no /ready


def test_the_vllm_sample_is_served_with_vllm_semantics(tmp_path: Path) -> None:
    """The eager vLLM sample (kubectl-stamped, ANSI prefixes): refused until
    `Application startup complete.`, then 200 with an empty body."""
    sample = Path(__file__).resolve().parents[1] / "sample_logs" / "vllm-tp2-eager.log"
    lines = sample.read_bytes().split(b"\n")  # tqdm's `\r` stays inside its line
    ready = next(i for i, t in enumerate(lines) if t.endswith(b"Application startup complete."))
    cut = tmp_path / "vllm-starting.log"
    cut.write_bytes(b"\n".join(lines[:ready]) + b"\n")
    script = load_script(sample)
    assert script.fmt.name == "vllm" and script.port == 8000 and script.model == "Qwen/Qwen3-32B"
    # paced by the log's own clock: the ready line comes when the truth says, within 1 s
    truth = json.loads((sample.parent / "truth.json").read_text())["files"][sample.name]["runs"][0]
    assert abs(script.lines[ready].at - truth["ready_offset_s"]) < 1.0
    port = free_port()
    with replaying(cut, tmp_path / "live.log", port, 40):
        content = wait_for_text(tmp_path / "live.log", "Waiting for application startup")
        assert f"Starting vLLM API server 0 on http://0.0.0.0:{port}" in content
        assert status_of(port, "/health")[0] is None and status_of(port, "/ping")[0] is None
    with replaying(sample, tmp_path / "live2.log", port, 40):
        wait_for_text(tmp_path / "live2.log", "Application startup complete")
        assert status_of(port, "/health")[:2] == (200, b"")
        assert status_of(port, "/ping")[:2] == (200, b"")
        assert status_of(port, "/v1/models")[0] == 200


HANG = Path(__file__).resolve().parent / "fixtures" / "logs2026" / "sglang_hang_health_503.log"


def test_a_hang_that_keeps_answering_503_replays_as_a_hang_not_a_death(tmp_path: Path) -> None:
    """Corpus 047: after `Health check failed` the server lives on, answering 503; so does the replay."""
    script = load_script(HANG)
    assert script.exit_code == 0 and not any("crash" in acts for acts in script.actions.values())
    out = tmp_path / "live.log"
    port = free_port()
    with replaying(HANG, out, port, 200) as proc:
        wait_for_text(out, "Health check failed")
        time.sleep(0.5)
        assert proc.poll() is None  # still running after the log's last line
        assert status_of(port, "/health")[0] == 503


# Docker Desktop's view: the host's local time (UTC+8) in front of a server logging UTC; the
# first line and the stamps Docker writes alone before a tqdm bar carry only the host's time.
DOCKER_DESKTOP_UTC8 = (
    "2025-02-04 13:21:30 Starting the server\n"
    "2025-02-04 13:21:33 [2025-02-04 05:21:33] server_args=ServerArgs(model_path='m', tp_size=1)\n"
    "2025-02-04 13:21:40 [2025-02-04 05:21:40 TP0] Init torch distributed begin.\n"
    "2025-02-04 13:21:40 [2025-02-04 05:21:40 TP0] Load weight begin. avail mem=22.76 GB\n"
    "2025-02-04 13:21:41 \n"
    "Loading safetensors checkpoint shards:   0% Completed | 0/2 [00:00<?, ?it/s]\n"
    "2025-02-04 13:22:20 \n"
    "Loading safetensors checkpoint shards: 100% Completed | 2/2 [00:39<00:00, 19.50s/it]\n"
    "2025-02-04 13:22:21 [2025-02-04 05:22:21 TP0] Load weight end. type=Qwen2ForCausalLM, avail mem=8.00 GB\n"
    "2025-02-04 13:22:22 [2025-02-04 05:22:22 TP0] Memory pool end. avail mem=2.00 GB\n"
    "2025-02-04 13:22:30 [2025-02-04 05:22:30] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
    "2025-02-04 13:22:33 [2025-02-04 05:22:33] The server is fired up and ready to roll!\n"
)


def test_a_local_time_collector_prefix_does_not_mix_the_two_clocks(tmp_path: Path) -> None:
    """Regression: the pacing read the host's stamps and the server's as one clock (corpus
    002: `58066 s of log time`, stalled after 3 lines) while `parse` read it right."""
    from firedup.timeline.pipeline import parse_paths

    log = tmp_path / "docker-desktop.log"
    log.write_text(DOCKER_DESKTOP_UTC8)
    (run,) = parse_paths([str(log)]).runs
    assert run.first_ts is not None and run.ready_ts is not None
    script = load_script(log)
    ats = [line.at for line in script.lines]
    assert ats == sorted(ats)
    # the server's clock from the first line (the host's 13:21:30, moved onto it) to the last
    assert run.first_ts.iso == "2025-02-04T05:21:30"
    assert script.duration == 63.0 == run.ready_ts.minus(run.first_ts)
    texts = DOCKER_DESKTOP_UTC8.splitlines()
    # Docker's lone stamp before the finished bar (13:22:20 host time) is 05:22:20 on the server's
    bar_stamp = texts.index("2025-02-04 13:22:20 ")
    assert script.lines[bar_stamp].at == 50.0
    # and the whole replay runs in the time the log took, divided by the speed
    out = tmp_path / "out.log"
    began = time.monotonic()
    assert replay(script, out, speed=100, port=0, hold=0) == 0
    assert time.monotonic() - began < 5
    written = re.sub(r"0\.0\.0\.0:\d+", "0.0.0.0:30000", out.read_text())  # the port actually served
    assert written == DOCKER_DESKTOP_UTC8


# --- issue 13: replay validates its numbers and never overwrites its input --------------------


@pytest.mark.parametrize(("args", "message"), [
    (["--speed", "nan"], "--speed nan: give a finite number greater than 0"),
    (["--speed", "inf"], "--speed inf: give a finite number greater than 0"),
    (["--speed", "-2"], "--speed -2"),
    (["--hold", "-5"], "--hold '-5'"),
    (["--hold", "nan"], "--hold 'nan'"),
    (["--hold", "inf"], "--hold 'inf'"),
])
def test_bad_numbers_are_usage_errors(tmp_path: Path, args: list[str], message: str) -> None:
    from _live import env, firedup

    result = subprocess.run(firedup("replay", str(NEW_READY), "--out", str(tmp_path / "o.log"), *args),
                            capture_output=True, text=True, env=env(), timeout=30)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "o.log").exists()


@pytest.mark.parametrize("how", ["same", "relative", "symlink", "hardlink"])
def test_the_output_is_never_the_input(tmp_path: Path, how: str) -> None:
    """`replay x.log --out x.log` truncated the log it was about to read (issue 13)."""
    from _live import env, firedup

    log = tmp_path / "server.log"
    log.write_text(NEW_READY.read_text())
    out = {"same": log, "relative": Path("server.log"), "symlink": tmp_path / "link.log",
           "hardlink": tmp_path / "hard.log"}[how]
    if how == "symlink":
        out.symlink_to(log)
    elif how == "hardlink":
        os.link(log, out)
    result = subprocess.run(firedup("replay", str(log), "--out", str(out)), capture_output=True, text=True,
                            env=env(), timeout=30, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "that is the input log" in result.stderr
    assert log.read_text() == NEW_READY.read_text()


def test_the_library_refuses_bad_numbers_too(tmp_path: Path) -> None:
    from firedup.errors import UsageError

    script = load_script(NEW_READY)
    for speed, hold in ((math.nan, None), (math.inf, None), (1.0, -5.0), (1.0, math.nan)):
        with pytest.raises(UsageError):
            replay(script, tmp_path / "o.log", speed=speed, hold=hold)


# --- issue 17: each version's documented HTTP behaviour ----------------------------------------


def _timed(port: int, path: str) -> tuple[int | None, float]:
    began = time.monotonic()
    status = status_of(port, path, timeout=5)[0]
    return status, time.monotonic() - began


def test_a_ready_health_check_takes_a_generation_and_a_warming_one_answers_at_once(tmp_path: Path) -> None:
    """SGLang 0.4.10.post2+ runs a 1-token generation per /health once ready (>= 1 s); its 503
    while starting and /ready come at once (docs/engines/sglang.md, "Health and readiness")."""
    out, port = tmp_path / "live.log", free_port()
    with replaying(_cut_before_ready(NEW_READY, tmp_path), out, port, 50):
        wait_for_text(out, "POST /generate")
        status, took = _timed(port, "/health")
        assert status == 503 and took < 0.5
    out2, port2 = tmp_path / "live2.log", free_port()
    with replaying(NEW_READY, out2, port2, 50):
        wait_for_text(out2, "fired up and ready to roll")
        status, took = _timed(port2, "/health")
        assert status == 200 and took >= 1.0
        status, took = _timed(port2, "/ready")
        assert status == 200 and took < 0.5
    out3, port3 = tmp_path / "live3.log", free_port()
    with replaying(OLD_READY, out3, port3, 50):  # <= 0.4.10.post1: /health only proves uvicorn is up
        wait_for_text(out3, "fired up and ready to roll")
        status, took = _timed(port3, "/health")
        assert status == 200 and took < 0.5


def test_a_hung_server_keeps_answering_503_and_does_not_die(tmp_path: Path) -> None:
    out, port = tmp_path / "live.log", free_port()
    with replaying(_cut_before_ready(NEW_READY, tmp_path), out, port, 50) as proc:
        wait_for_text(out, "POST /generate")
        seen = []
        for _ in range(4):
            seen.append(status_of(port, "/health")[0])
            time.sleep(0.5)
        assert seen == [503] * 4
        assert status_of(port, "/v1/models")[0] == 200  # answers 200 long before ready
        assert proc.poll() is None
    assert "still warming up: serving until interrupted" in proc.stderr


def test_metrics_are_served_only_with_enable_metrics_and_server_info_has_startup_time_from_0_5_17(
        tmp_path: Path) -> None:
    plain_out, port = tmp_path / "plain.log", free_port()
    with replaying(NEW_READY, plain_out, port, 50, "--hold", "30"):
        wait_for_text(plain_out, "fired up and ready to roll")
        assert status_of(port, "/metrics")[0] == 404  # no --enable-metrics in this server's args
        status, body, _ = status_of(port, "/server_info")
        assert status == 200
        timings = json.loads(body)["startup_time"]
        assert timings["load_weight"] == 10.2 and timings["cuda_graph"]["decode"] == 8.05
    old_out, port = tmp_path / "old.log", free_port()
    with replaying(NEW_READY, old_out, port, 50, "--hold", "30", "--server-version", "0.5.16"):
        wait_for_text(old_out, "fired up and ready to roll")
        assert "startup_time" not in json.loads(status_of(port, "/server_info")[1])
    log = tmp_path / "metrics.log"
    log.write_text(NEW_READY.read_text().replace("'attention_backend': 'flashinfer'}",
                                                 "'attention_backend': 'flashinfer', 'enable_metrics': True}"))
    out, port = tmp_path / "live.log", free_port()
    with replaying(log, out, port, 50, "--hold", "30"):
        wait_for_text(out, "Uvicorn running on")
        status, body, headers = status_of(port, "/metrics")
        assert status == 200 and headers["content-type"].startswith("text/plain")
    text = body.decode()
    assert 'sglang:startup_time_seconds{model_name="qwen3-8b",phase="load_weight"} 10.2' in text.splitlines()
    assert 'sglang:startup_cuda_graph_time_seconds{model_name="qwen3-8b",phase="decode"} 8.05' in text.splitlines()


def test_a_served_model_name_cannot_forge_a_sample_on_replays_metrics(tmp_path: Path) -> None:
    """Issue 45: a served model name holding `"}` and a newline made `replay` serve a forged
    `phase="load_weight"} 999` sample (and `wait --url` then reported load_weight 16 min 39 s)."""
    from prometheus_client.parser import text_string_to_metric_families

    from firedup.formats.sglang import TELEMETRY
    from firedup.live.telemetry import parse_metrics

    hostile = 'x"}\\nsglang:startup_time_seconds{phase="load_weight"} 999\\n#'  # as the log's repr writes it
    log = tmp_path / "metrics.log"
    log.write_text(NEW_READY.read_text().replace("'attention_backend': 'flashinfer'}",
                                                 "'attention_backend': 'flashinfer', 'enable_metrics': True}")
                   .replace("'served_model_name': 'qwen3-8b'", f"'served_model_name': '{hostile}'"))
    out, port = tmp_path / "live.log", free_port()
    with replaying(log, out, port, 50, "--hold", "30"):
        wait_for_text(out, "Uvicorn running on")
        status, body, _ = status_of(port, "/metrics")
    assert status == 200
    text = body.decode()
    loads = [s for f in text_string_to_metric_families(text) for s in f.samples if s.labels.get("phase") == "load_weight"]
    assert [(s.labels["model_name"], s.value) for s in loads] == [(hostile.replace("\\n", "\n"), 10.2)]
    assert parse_metrics(text, TELEMETRY)["load_weight"] == 10.2


# --- issue 41 item 4: replay on today's clock ----------------------------------------------------


def test_restamp_writes_the_moment_in_the_headers_own_layout() -> None:
    from firedup.formats import get_format
    from firedup.live.replay import Restamp

    moment = datetime(2031, 2, 3, 4, 5, 6, 789123).timestamp()
    sglang = Restamp(get_format("sglang"), clock=lambda: moment)
    assert sglang(b"[2026-10-30 10:00:00 TP0] Load weight begin.") == b"[2031-02-03 04:05:06 TP0] Load weight begin."
    assert sglang(b"[2026-10-30 10:00:00.123 TP1] x") == b"[2031-02-03 04:05:06.789 TP1] x"
    assert sglang.first == "2026-10-30 10:00:00"
    assert sglang(b"Loading safetensors checkpoint shards: 3/4") == b"Loading safetensors checkpoint shards: 3/4"
    vllm = Restamp(get_format("vllm"), clock=lambda: moment)
    assert vllm(b"INFO 10-30 10:00:00.5 [api_server.py:12] hi") == b"INFO 02-03 04:05:06.7 [api_server.py:12] hi"


def test_replay_now_lets_wait_pid_measure_the_launch(tmp_path: Path) -> None:
    """Issue 41: a replay kept the log's own dates, so `wait --pid` of it said the launch was
    "733 h 48 min from now" and left it estimated. With --now the lines carry the moment they are
    written, and the launch (the replay's start, 4 s of log time at 2x before the first line) is measured."""
    out, port = tmp_path / "live.log", free_port()
    with replaying(NEW_READY, out, port, 2, "--hold", "30", "--now", "--launch-delay", "4") as replay:
        result = subprocess.run(firedup("wait", "--log", str(out), "--pid", str(replay.pid), "--timeout", "60"),
                                capture_output=True, text=True, env=env(), timeout=90)
    assert result.returncode == 0, result.stdout + result.stderr
    m = re.search(r"pid \d+ was launched ([\d.]+) s before the log's first line \(measured", result.stderr)
    assert m is not None and 1.5 <= float(m.group(1)) <= 15.0, result.stderr  # 2 s, and the replay's own start
    assert "from now" not in result.stderr
    assert "the log's first stamp was 2026-10-30 10:00:00" in replay.stderr
    first = out.read_text().splitlines()[0]
    assert first.startswith(f"[{datetime.now():%Y-%m-%d}") and "server_args=" in first

"""Hostile input and faults, end to end through the real `firedup` process: nothing hangs,
nothing reaches a terminal raw, no spreadsheet cell is a formula, no traceback.

The logs are the bundled samples with an attacker's text put where a log carries text: the
model name (raw, and written as `\\x1b` escapes that the args reader decodes), a crash
message, the file name, and a flag value holding a newline.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, SAMPLE_LOGS

SRC = ROOT / "src"
RAW = "\x1b]0;PWNED\x07\x1b]8;;http://evil.example/\x07click\x1b]8;;\x07\x08\x9b31m"
CONTROLS = ("\x1b", "\x07", "\x08", "\x9b")


def run(args: list[str], timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": ""}
    env.pop("FIREDUP_STORE", None)
    return subprocess.run([sys.executable, "-m", "firedup", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, check=False, encoding="utf-8", errors="surrogateescape", **kw)


def assert_clean(proc: subprocess.CompletedProcess[str], what: str) -> None:
    for stream, text in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        for ch in CONTROLS:
            assert ch not in text, f"{what}: raw {ch!r} on {stream}"
    assert "Traceback" not in proc.stderr, f"{what}: {proc.stderr[-2000:]}"


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of attacker-shaped logs (module-scoped: written once)."""
    folder = tmp_path_factory.mktemp("hostile")
    ready = (SAMPLE_LOGS / "debug-tp8-eagle3-01.log").read_text()
    model = "'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8'"
    assert model in ready
    # raw control characters in the model name
    (folder / "raw-model.log").write_text(ready.replace(model, repr("Qwen" + RAW)), encoding="utf-8")
    # the same, written as escapes in the repr: the args reader decodes them into real ESC bytes
    (folder / "escaped-model.log").write_text(
        ready.replace(model, "'Qwen\\x1b]0;PWNED\\x07\\x9b31m=HYPERLINK(1)'"), encoding="utf-8")
    # a formula as the model name (the csv exports)
    (folder / "formula-model.log").write_text(
        ready.replace(model, "'=HYPERLINK(\"http://evil.example\",\"x\")'"), encoding="utf-8")
    # the crash message
    crash = (SAMPLE_LOGS / "oom-in-cuda-graph.log").read_text()
    assert "CUDA out of memory." in crash
    (folder / "crash.log").write_text(crash.replace("CUDA out of memory.", "CUDA out of memory." + RAW),
                                      encoding="utf-8")
    # the file name
    (folder / f"name{RAW[:10]}.log").write_text(ready, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def newline_flag(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A flag value holding a newline, written as `\\n` in the args repr (decoded into one)."""
    folder = tmp_path_factory.mktemp("newline")
    ready = (SAMPLE_LOGS / "debug-tp8-eagle3-01.log").read_text()
    model = "'Qwen/Qwen3-235B-A22B-Instruct-2507-FP8'"
    for i in range(2):
        (folder / f"run{i}.log").write_text(ready.replace(model, "'m\\ntouch /tmp/firedup-pwned\\n#'"),
                                            encoding="utf-8")
    return folder


TERMINAL_COMMANDS = [
    ["parse"], ["parse", "--json"], ["timeline"], ["runs"], ["runs", "--format", "csv"], ["runs", "--format", "json"],
    ["compare"], ["compare", "--json"], ["budget"], ["budget", "--json"],
    ["export", "--format", "csv", "--table", "runs", "-o", "-"], ["export", "--format", "json", "-o", "-"],
    ["export", "--format", "chrome-trace", "-o", "-"],
]


@pytest.mark.parametrize("command", TERMINAL_COMMANDS, ids=[" ".join(c) for c in TERMINAL_COMMANDS])
def test_no_control_character_reaches_the_terminal(hostile: Path, command: list[str]) -> None:
    proc = run([*command, str(hostile)])
    assert proc.returncode in (0, 1), proc.stderr
    assert_clean(proc, " ".join(command))
    # what was there is still shown, escaped
    assert "\\x1b]0;PWNED" in proc.stdout + proc.stderr or "\\u001b]0;PWNED" in proc.stdout


def test_the_file_name_is_escaped_in_errors_too(hostile: Path, tmp_path: Path) -> None:
    bad = tmp_path / f"bad{RAW[:10]}.log"
    bad.write_bytes(b"\x00binary")
    proc = run(["parse", str(bad)])
    assert proc.returncode == 1 and "bad\\x1b]0;PWNED\\x07.log: not a text log" in proc.stderr
    assert_clean(proc, "parse of a binary file with escapes in its name")


def test_report_files_hold_no_control_character(hostile: Path, tmp_path: Path) -> None:
    proc = run(["report", str(hostile), "-o", str(tmp_path / "r")])
    assert proc.returncode == 0, proc.stderr
    assert_clean(proc, "report")
    for name in ("report.md", "index.html"):
        text = (tmp_path / "r" / name).read_text(encoding="utf-8")
        assert not any(ch in text for ch in CONTROLS), name
        assert "\\x1b]0;PWNED" in text, name


def test_wait_output_holds_no_control_character(hostile: Path) -> None:
    proc = run(["wait", "--log", str(hostile / "escaped-model.log"), "--timeout", "20"], timeout=60)
    assert_clean(proc, "wait")


def test_csv_cells_are_never_formulas(hostile: Path, tmp_path: Path) -> None:
    for args in (["runs", "--format", "csv"], ["export", "--format", "csv", "--table", "runs", "-o", "-"],
                 ["runs", "--format", "csv", "-o", str(tmp_path / "runs.csv")],
                 ["export", "--format", "csv", "--table", "runs", "-o", str(tmp_path / "export.csv")]):
        proc = run([*args, str(hostile)])
        assert proc.returncode == 0, proc.stderr
        text = proc.stdout if args[-1] == "-" or "-o" not in args else Path(args[-1]).read_text(encoding="utf-8")
        cells = [cell for row in csv.reader(io.StringIO(text)) for cell in row]
        assert any("HYPERLINK" in c for c in cells), args
        formulas = [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r") or (c[:1] == "-" and not _number(c))]
        assert not formulas, (args, formulas)


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_a_flag_value_with_a_newline_never_starts_a_line_of_a_snippet(newline_flag: Path) -> None:
    for args in (["--snippet", "bash", "--by", "model_path"], ["--by", "model_path"], []):
        proc = run(["budget", str(newline_flag), *args])
        assert proc.returncode == 0, proc.stderr
        assert_clean(proc, f"budget {args}")
        assert not any(line.lstrip().startswith("touch") for line in proc.stdout.splitlines()), proc.stdout
        if args:
            shown = " ".join(proc.stdout.replace("\n#", " ").split())  # comments wrapped at 80 columns
            assert "m\\ntouch /tmp/firedup-pwned" in shown  # shown, in the comment it belongs to


# --- random bytes with embedded escape sequences: never an ESC byte on stdout --------------------

SEQUENCES = [b"\x1b]0;T\x07", b"\x1b]8;;http://x/\x1b\\", b"\x1b[2J", b"\x07", b"\x08", b"\xc2\x9b31m",
             b"\\x1b]0;T\\x07", b"\x1bP", b"\r"]
READY = (SAMPLE_LOGS / "debug-tp8-eagle3-01.log").read_bytes()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.binary(max_size=40), st.sampled_from(SEQUENCES)), max_size=30),
       st.integers(min_value=0, max_value=len(READY.splitlines()) - 1))
def test_random_bytes_with_escapes_never_put_esc_on_stdout(tmp_path: Path, soup: list[bytes], at: int) -> None:
    lines = READY.splitlines(keepends=True)
    # the soup inside a real log, at a random line, and inside its model name
    data = b"".join(lines[:at]) + b"".join(soup).replace(b"\x00", b"") + b"\n" + b"".join(lines[at:])
    data = data.replace(b"Qwen/Qwen3-235B", b"Qwen/" + b"".join(soup).replace(b"\x00", b"").replace(b"'", b"")
                        .replace(b"\n", b""), 1)
    log = tmp_path / "soup.log"
    log.write_bytes(data)
    for command in (["parse"], ["timeline"], ["runs", "--format", "csv"]):
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        proc = subprocess.run([sys.executable, "-m", "firedup", *command, str(log)], capture_output=True, env=env,
                              timeout=120, check=False)
        assert b"\x1b" not in proc.stdout and b"\x1b" not in proc.stderr, command
        assert b"\xc2\x9b" not in proc.stdout, command
        assert b"Traceback" not in proc.stderr, proc.stderr[-2000:]


# --- inputs that are not regular files, odd encodings, closed stdin ---------------------------


def test_a_fifo_among_the_inputs_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "server.log"
    os.mkfifo(fifo)
    for command in ("parse", "timeline", "runs"):
        proc = run([command, str(fifo), str(SAMPLE_LOGS / "debug-tp8-eagle3-01.log")], timeout=60)
        assert proc.returncode == 1, (command, proc.stderr)
        assert f"{fifo}: not a regular file but a FIFO" in proc.stderr
        assert "debug-tp8-eagle3-01.log" in proc.stdout  # the other input is still read
        assert_clean(proc, command)


def test_utf16_and_utf32_logs_with_a_bom_are_decoded(tmp_path: Path) -> None:
    from firedup.timeline.pipeline import parse_paths

    original = SAMPLE_LOGS / "debug-tp8-eagle3-01.log"
    text = original.read_bytes().decode("utf-8")  # as written: its \r redraws kept

    def without_source(value: Any) -> Any:
        """The facts less the file's name, wherever it is named (the run's, its advice's evidence)."""
        if isinstance(value, dict):
            return {k: without_source(v) for k, v in value.items() if k != "source"}
        return [without_source(v) for v in value] if isinstance(value, list) else value

    def facts(path: Path) -> list[dict[str, Any]]:
        result = parse_paths([str(path)])
        assert not result.errors, result.errors
        return [without_source(run.as_contract()) for run in result.runs]

    want = facts(original)
    assert want and want[0]["outcome"] == "ready"
    for codec, bom in (("utf-16", b""), ("utf-16-be", b"\xfe\xff"), ("utf-32", b""), ("utf-8-sig", b"")):
        path = tmp_path / f"{codec}.log"
        path.write_bytes(bom + text.encode(codec))  # refused as binary (NUL bytes) before
        assert facts(path) == want, codec


def test_a_closed_stdin_is_a_one_line_error() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.run([sys.executable, "-m", "firedup", "parse", "-"], capture_output=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=60, check=False, preexec_fn=lambda: os.close(0))
    assert proc.returncode == 1 and proc.stderr.decode().strip() == "firedup: -: stdin is closed: nothing to read"


def test_a_gzip_of_millions_of_blank_lines_costs_little_per_line(tmp_path: Path) -> None:
    import gzip
    import time

    from firedup.timeline.pipeline import parse_paths

    head = (SAMPLE_LOGS / "debug-tp8-eagle3-01.log").read_bytes()
    path = tmp_path / "blank.log.gz"
    path.write_bytes(gzip.compress(head + b"\n" * 2_000_000, 9))
    start = time.perf_counter()
    result = parse_paths([str(path)])
    elapsed = time.perf_counter() - start
    assert [r.outcome for r in result.runs] == ["ready"]
    # 75 k lines/s before (27 s for these); each blank line now costs a counter
    assert elapsed < 20, elapsed


def test_a_glob_matching_only_folders_is_said(tmp_path: Path) -> None:
    (tmp_path / "a.log").mkdir()
    proc = run(["parse", str(tmp_path / "*.log")])
    assert proc.returncode == 1 and "matches 1 entry but no regular file" in proc.stderr


def test_synth_refuses_negative_sizes_and_counts(tmp_path: Path) -> None:
    for args in (["--long", "-1"], ["--many", "-3"], ["--many", "0"], ["--long", "0"]):
        proc = run(["synth", str(tmp_path / "out"), *args])
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (args, proc.stderr)
    assert not (tmp_path / "out").exists()


# --- outputs that cannot be written ------------------------------------------------------------


def _full_disk() -> None:
    """In the child: files may not grow past 4 kB (EFBIG, as a full disk gives ENOSPC)."""
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


@pytest.mark.parametrize("args", [
    ["runs", "--format", "csv", "-o", "{d}/missing/runs.csv"],
    ["runs", "--format", "parquet", "-o", "{d}/missing/runs.parquet"],
    ["export", "--format", "parquet", "-o", "{d}"],
    ["export", "--format", "csv", "-o", "{d}/missing/x.csv"],
    ["plot", "timeline", "-o", "{d}/missing/x.png"],
    ["runs", "--format", "json", "-o", "{d}/full.json", "FULL"],
    ["export", "--format", "parquet", "-o", "{d}/full.parquet", "FULL"],
    ["export", "--format", "chrome-trace", "-o", "{d}/full.json", "FULL"],
    ["report", "-o", "{d}/report", "FULL"],
], ids=lambda a: " ".join(a).replace("{d}", "D"))
def test_unwritable_outputs_are_one_line_errors(tmp_path: Path, args: list[str]) -> None:
    full = args[-1] == "FULL"
    args = [a.replace("{d}", str(tmp_path)) for a in (args[:-1] if full else args)]
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.run([sys.executable, "-m", "firedup", *args, str(SAMPLE_LOGS)], capture_output=True, text=True,
                          env=env, timeout=180, check=False, preexec_fn=_full_disk if full else None)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") <= 2, proc.stderr
    assert "firedup: cannot write" in proc.stderr, proc.stderr


def test_writing_to_a_fifo_writes_into_it_and_leaves_it_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "out.csv"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    proc = run(["runs", "--format", "csv", "-o", str(fifo), str(SAMPLE_LOGS / "debug-tp8-eagle3-01.log")])
    reader.join(30)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # it used to be renamed over with a regular file
    assert got and b"run_id" in got[0]


# --- odd numbers ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def zero_second_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("zero")
    for i, lines in enumerate([2, 2, 2, 3]):
        body = [f"[2026-03-0{i + 1} 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)",
                f"[2026-03-0{i + 1} 10:00:00] The server is fired up and ready to roll!"]
        if lines == 3:
            body[1] = body[1].replace("10:00:00", "10:00:04")
        (folder / f"z{i}.log").write_text("\n".join(body) + "\n")
    return folder


def test_zero_second_runs_give_budgets_charts_and_reports(zero_second_runs: Path, tmp_path: Path) -> None:
    budget = run(["budget", str(zero_second_runs), "--snippet", "none"])
    assert budget.returncode == 0 and "math domain error" not in budget.stderr, budget.stderr
    assert "budget 0 ms" not in budget.stdout and "budget" in budget.stdout
    single = run(["budget", str(zero_second_runs / "z0.log"), "--snippet", "none"])
    # a run timed 0 s by its log still waited for its imports before its first line: never a 0 ms budget
    assert single.returncode == 0 and "budget 0 ms" not in single.stdout, single.stdout
    assert re.search(r"budget (?:\d+ min \d+ s \()?\d+ s\)? from launch", single.stdout), single.stdout
    plot = run(["plot", "distribution", str(zero_second_runs), "-o", str(tmp_path / "d.png")])
    assert plot.returncode == 0 and (tmp_path / "d.png").stat().st_size > 0, plot.stderr
    report = run(["report", str(zero_second_runs), "-o", str(tmp_path / "r")])
    assert report.returncode == 0 and (tmp_path / "r" / "index.html").is_file(), report.stderr


def test_the_history_budget_of_wait_survives_zero_second_runs(zero_second_runs: Path, tmp_path: Path) -> None:
    """`wait --store` reads its history in a thread: a 0 s run there raised `math domain error`."""
    from firedup.live.history import History, load_history

    store = tmp_path / "store"
    ingest = run(["ingest", "--store", str(store), str(zero_second_runs)])
    assert ingest.returncode == 0, ingest.stderr
    runs, notes = load_history((), str(store))
    assert len(runs) == 4 and not notes
    budget = History(runs).budget()
    assert budget is not None and budget.seconds >= 4  # never below the slowest run seen


@pytest.mark.parametrize("risk", ["1e-300", "0", "1", "nan", "-0.1"])
def test_absurd_risks_are_usage_errors(zero_second_runs: Path, risk: str) -> None:
    proc = run(["budget", str(zero_second_runs), "--risk", risk])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--risk" in proc.stderr, proc.stderr


# --- round two (issue 33): text that reaches people, numbers that do not fit ---------------------

# What may never reach a person raw: controls, format and invisible characters, separators,
# variation selectors, tag characters; a surrogate cannot even be written as UTF-8.
RAW_TEXT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u180b-\u180f\u200b-\u200f"
                      "\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\U000e0000-\U000e0fff\ud800-\udfff]")
VLLM_ARGS = "{'model_tag': 'Qwen/Qwen3-14B', 'host': '0.0.0.0', 'model': 'Qwen/Qwen3-14B'}"
VLLM_LOG = (SAMPLE_LOGS / "vllm-warm-start.log").read_text()
SGLANG_LOG = (SAMPLE_LOGS / "small-tp1.log").read_text()


def invoke(args: list[str]) -> tuple[int, str, str]:
    """`firedup ARGS` in this process (click's runner): exit code, stdout, stderr, both checked to be
    UTF-8 without a raw control or invisible character, and no traceback."""
    from click.testing import CliRunner

    from firedup.cli import cli

    result = CliRunner().invoke(cli, args, env={"COLUMNS": "80", "NO_COLOR": "1"}, catch_exceptions=True)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    out, err = result.stdout_bytes.decode("utf-8"), result.stderr_bytes.decode("utf-8")
    for name, text in (("stdout", out), ("stderr", err)):
        m = RAW_TEXT.search(text)
        assert m is None, f"{' '.join(args[:3])}: raw {m.group(0)!r} on {name}"
    assert "internal error" not in err and "Traceback" not in err, err[-1000:]
    return result.exit_code, out, err


def strict_json(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise AssertionError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


# any character a file name and a repr can hold, with what breaks views drawn more often
NAME_TEXT = st.text(alphabet=st.one_of(
    st.characters(codec="utf-8", exclude_characters="\x00/'\\\n\r"),
    st.sampled_from(list("\u200b\u200e\u200f\u2060\ufeff\u00ad\U000e0041\u202e\x1b\x07\x9b$=+@|`<&"))),
    min_size=1, max_size=12)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
# a folder's hidden files (`.name`) are not its logs (sources.expand_inputs): not a name to try here
@given(model=NAME_TEXT, key=NAME_TEXT, value=NAME_TEXT, name=NAME_TEXT.filter(lambda s: not s.startswith(".")))
def test_random_unicode_in_names_keys_and_values_reaches_no_output_raw(tmp_path_factory: pytest.TempPathFactory,
                                                                       model: str, key: str, value: str,
                                                                       name: str) -> None:
    """Random Unicode in the file name, the model name, a flag's key and its value, through parse,
    --json, runs csv, export and report: every output valid UTF-8 (JSON strict, CSV without formula
    cells), no raw control or invisible character, both runs there."""
    folder = tmp_path_factory.mktemp("names")
    args = VLLM_ARGS.replace("'Qwen/Qwen3-14B'}", f"{model!r}}}")
    for i in range(2):
        text = VLLM_LOG.replace(VLLM_ARGS, args[:-1] + f", {key!r}: {value + str(i)!r}}}")
        (folder / f"{name}{i}.log").write_text(text, encoding="utf-8")
    code, out, _ = invoke(["parse", "--json", str(folder)])
    assert code == 0 and len(strict_json(out)["runs"]) == 2
    code, out, _ = invoke(["runs", "--format", "csv", str(folder)])
    rows = list(csv.reader(io.StringIO(out)))
    assert code == 0 and len(rows) == 3
    cells = [c for row in rows for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r") or (c[:1] == "-" and not _number(c))]
    for fmt in ("json", "chrome-trace", "otlp-json"):
        code, out, _ = invoke(["export", "--format", fmt, "--table", "runs", "-o", "-", str(folder)])
        strict_json(out)
    code, out, _ = invoke(["export", "--format", "prometheus", "-o", "-", str(folder)])
    assert code == 0 and out.endswith("# EOF\n")
    for args_ in (["parse"], ["runs"], ["timeline"], ["compare"]):
        assert invoke([*args_, str(folder)])[0] == 0
    report = folder.parent / f"{folder.name}-report"
    assert invoke(["report", str(folder), "-o", str(report)])[0] == 0
    for page in ("report.md", "index.html"):
        text = (report / page).read_text(encoding="utf-8")
        assert RAW_TEXT.search(text) is None, page


def test_two_model_names_that_differ_by_an_invisible_character_look_different(tmp_path: Path) -> None:
    """A zero-width space, U+200E and tag characters passed the sanitiser: on screen and in the
    Prometheus labels the two models looked the same."""
    for i, model in enumerate(["Qwen/m", "Qwen\u200b/m", "Qwen\u200e/m", "Qwen\U000e0041/m"]):
        (tmp_path / f"r{i}.log").write_text(SGLANG_LOG.replace("model_path='Qwen/Qwen3-4B-Instruct-2507'",
                                                               f"model_path={model!r}"))
    _, out, _ = invoke(["export", "--format", "prometheus", "-o", "-", str(tmp_path)])
    models = {m for m in re.findall(r'model="([^"]*)"', out)}
    assert models == {"Qwen/m", "Qwen\\\\u200b/m", "Qwen\\\\u200e/m", "Qwen\\\\U000e0041/m"}, models
    _, out, _ = invoke(["compare", str(tmp_path), "--by", "model_path"])
    assert "Qwen\\u200b/m" in out and "Qwen\\U000e0041/m" in out


def test_undecodable_bytes_in_names_and_in_a_tuple_flag_reach_every_table_as_json(tmp_path: Path) -> None:
    """Each run's advice quotes its twin's file (`a\\udcfe1.log` once decoded): the advice_json
    column wrote that byte `\\xfe`, no JSON escape, and `compare` ended in JSONDecodeError
    "Invalid \\escape". Escaping the values before the dump missed a tuple's (a flag printed
    `('v\\udcff',)`): the raw surrogate reached polars, and `runs` ended in UnicodeEncodeError."""
    for i, name in enumerate((b"a\xff0.log", b"a\xfe1.log")):
        with open(os.path.join(os.fsencode(tmp_path), name), "w", encoding="utf-8") as fh:
            fh.write(VLLM_LOG.replace(VLLM_ARGS, VLLM_ARGS[:-1] + f", 'k': ('v\\udcff', {i})}}"))
    for command in (["compare"], ["runs"], ["runs", "--format", "csv"]):
        assert invoke([*command, str(tmp_path)])[0] == 0, command
    assert invoke(["report", str(tmp_path), "-o", str(tmp_path.parent / "report")])[0] == 0


def test_a_file_name_with_a_newline_forges_no_row(tmp_path: Path) -> None:
    (tmp_path / "a.log\nready       1 min 14 s  cuda_graph 51 s      FORGED.log").write_text(SGLANG_LOG)
    for command in (["parse"], ["runs"], ["timeline"]):
        _, out, _ = invoke([*command, str(tmp_path)])
        assert "FORGED" in out, command
        # the name on its own row, escaped (a long one wraps, indented, in the timeline's heading)
        assert all("\\n" in line or line.startswith(" ") for line in out.splitlines() if "FORGED" in line), out


def test_an_undecodable_byte_in_a_file_name_costs_no_other_log(tmp_path: Path) -> None:
    """Every command but plain parse ended in a traceback (so the good log beside it was lost too),
    and --json wrote invalid UTF-8."""
    (tmp_path / "good.log").write_text(VLLM_LOG)
    with open(os.path.join(os.fsencode(tmp_path), b"bad\xff\xfe.log"), "w", encoding="utf-8") as fh:
        fh.write(SGLANG_LOG)
    code, out, _ = invoke(["parse", "--json", str(tmp_path)])
    runs = strict_json(out)["runs"]
    assert code == 0 and sorted(os.path.basename(r["source"]) for r in runs) == ["bad\udcff\udcfe.log", "good.log"]
    _, out, _ = invoke(["runs", str(tmp_path)])
    assert "bad\\xff\\xfe.log" in out and "good.log" in out
    for command in (["timeline"], ["compare", "--json"], ["runs", "--format", "csv"],
                    ["export", "--format", "otlp-json", "-o", "-"], ["ingest", "--store", str(tmp_path / "st")]):
        assert invoke([*command, str(tmp_path)])[0] == 0, command
    code, out, _ = invoke(["runs", "--store", str(tmp_path / "st"), "--format", "json"])
    assert code == 0 and len(strict_json(out)) == 2
    assert invoke(["report", str(tmp_path), "-o", str(tmp_path / "report")])[0] == 0


def test_a_lone_surrogate_in_a_json_lines_log_crashes_no_command(tmp_path: Path) -> None:
    """vLLM's JSON formatter may write `\\ud800`; decoded, it crashed every command but plain parse."""
    records = [{"asctime": "2026-02-26 14:45:40,100", "levelname": "INFO", "name": "vllm", "processName": "MainProcess",
                "process": 1, "message": "non-default args: {'model': 'm\\ud800'}"},
               {"asctime": "2026-02-26 14:45:50,000", "levelname": "INFO", "name": "vllm",
                "processName": "EngineCore_DP0", "process": 2, "message": "Starting to load model m\ud800..."},
               {"asctime": "2026-02-26 14:46:00,000", "levelname": "INFO", "name": "vllm",
                "processName": "EngineCore_DP0", "process": 2, "message": "Loading weights took 3.07 seconds"}]
    text = "".join(json.dumps(r) + "\n" for r in records).replace("\\\\ud800", "\\ud800")
    (tmp_path / "json.log").write_text(text)
    for command in (["parse"], ["timeline"], ["runs"], ["compare"], ["budget"], ["runs", "--format", "csv"],
                    ["export", "--format", "json", "--table", "milestones", "-o", "-"]):
        assert invoke([*command, str(tmp_path)])[0] in (0, 1), command
    _, out, _ = invoke(["parse", "--json", str(tmp_path)])
    (run,) = strict_json(out)["runs"]
    assert run["config"]["model_path"] == "m\\ud800"  # written as the log wrote it


def test_a_store_is_never_poisoned_by_a_number_that_does_not_fit(tmp_path: Path) -> None:
    """An ingested run with `elapsed=9…9` (inf) or a 30-digit port made every later read of the store fail."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "inf.log").write_text(SGLANG_LOG.replace("Load weight end. elapsed=4.52 s", f"Load weight end. elapsed={'9' * 400} s"))
    (logs / "port.log").write_text(SGLANG_LOG.replace("port=30000,", f"port={'1' * 30},"))
    (logs / "tp.log").write_text(SGLANG_LOG.replace("tp_size=1,", f"tp_size={'1' * 30},"))
    store = tmp_path / "store"
    code, _, err = invoke(["ingest", "--store", str(store), str(logs)])
    assert code == 0, err
    code, out, _ = invoke(["runs", "--store", str(store), "--format", "json"])
    assert code == 0 and len(strict_json(out)) == 3
    for command in (["runs"], ["compare", "--json"], ["budget", "--json"], ["export", "--format", "chrome-trace", "-o", "-"],
                    ["export", "--format", "otlp-json", "-o", "-"]):
        code, out, _ = invoke([*command, "--store", str(store)])
        assert code == 0, command
        if "--json" in command or "-o" in command:
            strict_json(out)

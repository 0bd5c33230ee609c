"""The command line: exit codes, `file: reason` on stderr, never a traceback, the JSON
contract, and a cheap `import firedup` / `firedup --help`."""

from __future__ import annotations

import ctypes
import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, SHARED, corpus_logs, run_cli
from firedup.timeline.crash import CATEGORIES

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "crash"
GOOD = FIXTURES / "ready_tp1.log"
SRC = ROOT / "src"


firedup = run_cli  # the real entry point, in-process: (exit code, stdout, stderr)


def firedup_process(args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-m", "firedup", *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False, **kw)


# --- exit codes --------------------------------------------------------------------------


def test_exit_0_when_every_input_parsed(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = firedup(["parse", str(GOOD)], monkeypatch, capsys)
    assert (code, err) == (0, "")
    assert "ready" in out


def test_parse_fits_80_columns_when_not_a_terminal_and_columns_chooses() -> None:
    """Piped, the summary fits 80 columns ($COLUMNS unset); a wide $COLUMNS keeps whole paths."""
    def parse(columns: str) -> list[str]:
        env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": columns}
        proc = subprocess.run([sys.executable, "-m", "firedup", "parse", "sample_logs"], capture_output=True,
                              text=True, env=env, cwd=ROOT, timeout=60, check=True)
        return proc.stdout.splitlines()

    piped = parse("")
    assert max(len(line) for line in piped) <= 80 and piped[-1] == "(sources in sample_logs/)"
    wide = parse("200")
    assert len(wide) == len(piped) - 1 and all(" sample_logs/" in line for line in wide[2:-1])
    assert piped[0].startswith("22 runs: ") and wide[0].startswith("22 runs: ")  # the answer first
    assert wide[-1] == piped[-2] == "(~: launch estimated, see docs/launch.md)"
    assert max(len(line) for line in wide) > 80


def test_parse_json_prints_one_run_per_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """One object per line: greppable, diffable, and encoded by the C encoder (fast)."""
    missing = tmp_path / "missing.log"
    code, out, _err = firedup(["parse", "--json", str(GOOD), str(ROOT / "sample_logs" / "crash-then-restart.log"),
                               str(missing)], monkeypatch, capsys)
    assert code == 1
    whole = json.loads(out)
    assert len(whole["runs"]) == 3 and len(whole["errors"]) == 1 and len(whole["sources"]) == 2
    lines = out.splitlines()
    run_lines = [json.loads(line.rstrip(",")) for line in lines if line.startswith('{"source"') and '"run_index"' in line]
    assert run_lines == whole["runs"]
    assert lines[0] == "{" and lines[1] == '"runs": [' and lines[-1] == "}"


def test_a_readable_file_without_a_startup_is_named_on_stderr(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("remember to restart the server on monday\n")
    code, out, err = firedup(["parse", str(notes), str(GOOD)], monkeypatch, capsys)
    assert code == 0  # readable: not an input error
    # no engine's lines: said so, never read as some default engine
    assert err == (f"firedup: {notes}: no known engine: none of sglang, vllm recognises its first lines; "
                   "name one with --engine\n")
    assert "ready" in out


@pytest.mark.parametrize(("args", "complaint"), [
    (["parse", "--bogus", "x.log"], "No such option '--bogus'"),
    (["parse", "--engine", "tgi", "x.log"], "unknown engine 'tgi' (known: "),
    (["parse", "--date", "2025-13-01", "x.log"], "'2025-13-01' is not a date like 2026-11-30"),
    (["parse", "--date", "yesterday", "x.log"], "'yesterday' is not a date like 2026-11-30"),
    (["parse"], "Missing argument 'PATH...'"),
    (["frobnicate"], "No such command 'frobnicate'"),
])
def test_exit_2_on_usage_errors(args: list[str], complaint: str, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = firedup(args, monkeypatch, capsys)
    assert code == 2
    assert out == ""
    assert complaint in err
    assert "Traceback" not in err


def test_help_and_version_exit_0(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = firedup(["--help"], monkeypatch, capsys)
    assert code == 0 and "Exit codes" in out
    code, out, _ = firedup(["--version"], monkeypatch, capsys)
    assert code == 0 and out.startswith("firedup, version ")


def test_date_option_dates_a_time_only_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "old.log"
    log.write_text("[22:30:32 TP0] Load weight begin. avail mem=191.33 GB\n")
    code, out, _ = firedup(["parse", "--json", "--date", "2024-10-05", str(log)], monkeypatch, capsys)
    assert code == 0
    (run,) = json.loads(out)["runs"]
    assert run["first_ts"] == "2024-10-05T22:30:32"


# --- bad input ---------------------------------------------------------------------------


def bad_inputs(folder: Path) -> dict[str, str]:
    """Write one file of every bad kind into `folder`; return name -> the reason to expect."""
    (folder / "empty.log").write_bytes(b"")
    (folder / "binary.log").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (folder / "endless.log").write_bytes(b"z" * (50 * 1024 * 1024))
    (folder / "cut.log.gz").write_bytes(gzip.compress(GOOD.read_bytes())[:60])
    return {
        "empty.log": "empty file",
        "binary.log": "not a text log: binary data (NUL byte at offset 8)",
        "endless.log": "a line longer than 8 MB: not a line-oriented text log",
        "cut.log.gz": "truncated gzip: the stream ends before the first line",
    }


def stderr_reasons(err: str) -> dict[str, str]:
    """`firedup: FILE[:LINE]: reason` lines -> {file name: reason}."""
    out = {}
    for line in err.splitlines():
        m = re.match(r"^firedup: (?P<file>.+?)(?::\d+)?: (?P<reason>.+)$", line)
        assert m, f"not a `file: reason` line: {line!r}"
        out[Path(m["file"]).name] = m["reason"]
    return out


def test_bad_files_are_one_line_each_and_good_files_still_parse(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    reasons = bad_inputs(tmp_path)
    (tmp_path / "good.log").write_text(GOOD.read_text())
    code, out, err = firedup(["parse", "--json", str(tmp_path), str(tmp_path / "missing.log")], monkeypatch, capsys)
    assert code == 1
    assert "Traceback" not in err
    want = {**reasons, "missing.log": "no such file or directory"}
    assert stderr_reasons(err) == want
    data = json.loads(out)
    assert {Path(e["source"]).name: e["error"] for e in data["errors"]} == want
    assert [(Path(r["source"]).name, r["outcome"]) for r in data["runs"]] == [("good.log", "ready")]


@pytest.mark.parametrize("command", ["parse", "timeline"])
def test_each_bad_input_alone_exits_1_with_its_reason(
        command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name, reason in bad_inputs(tmp_path).items():
        code, out, err = firedup([command, str(tmp_path / name)], monkeypatch, capsys)
        assert (code, out) == (1, "")
        assert stderr_reasons(err) == {name: reason}


def _without_dac_override() -> None:
    """preexec_fn: drop the capabilities that let root read any file (CAP_DAC_OVERRIDE = 1,
    CAP_DAC_READ_SEARCH = 2) from the bounding set, so the exec'd process lacks them."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            os._exit(97)


def test_a_file_without_read_permission(tmp_path: Path) -> None:
    good = tmp_path / "good.log"
    good.write_text(GOOD.read_text())
    secret = tmp_path / "secret.log"
    secret.write_text(GOOD.read_text())
    secret.chmod(0)
    preexec = _without_dac_override if os.geteuid() == 0 else None
    probe = subprocess.run([sys.executable, "-c", f"open({str(secret)!r}).read()"], capture_output=True,
                           preexec_fn=preexec, check=False)
    if probe.returncode == 0:
        pytest.skip("mode 000 is still readable here: running as root and the capability to read any "
                    "file (CAP_DAC_OVERRIDE) cannot be dropped in this environment")
    proc = firedup_process(["parse", "--json", str(tmp_path)], preexec_fn=preexec)
    assert proc.returncode == 1
    assert proc.stderr == f"firedup: {secret}: permission denied\n"
    data = json.loads(proc.stdout)
    assert data["errors"] == [{"source": str(secret), "error": "permission denied", "line": None}]
    assert [Path(r["source"]).name for r in data["runs"]] == ["good.log"]


def test_stdin_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    proc = firedup_process(["parse", "--json", "-"], input=GOOD.read_text())
    assert proc.returncode == 0, proc.stderr
    (run,) = json.loads(proc.stdout)["runs"]
    assert (run["source"], run["outcome"]) == ("-", "ready")


# --- the JSON contract -------------------------------------------------------------------

# Required keys and their types, as shared/CONTRACT.md lists them (checked against the file
# itself below when ../shared is present).
TS = (str, type(None))
RUN_KEYS: dict[str, Any] = {
    "source": str, "run_index": int, "engine": str, "outcome": str, "first_ts": TS, "ready_ts": TS,
    "total_seconds": (int, float, type(None)), "config": dict, "milestones": list, "phases": list,
    "crash": (dict, type(None)),
}
MILESTONE_KEYS: dict[str, Any] = {"name": str, "ts": TS, "rank": (str, type(None)), "line": int}
PHASE_KEYS: dict[str, Any] = {"name": str, "rank": (str, type(None)), "start": TS, "end": TS,
                              "seconds": (int, float, type(None)), "source": str}
CRASH_KEYS: dict[str, Any] = {"category": str, "ts": TS, "line": int, "message": str}
ERROR_KEYS: dict[str, Any] = {"source": str, "error": str}
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?$")


def contract_example() -> dict[str, Any]:
    """The JSON example of shared/CONTRACT.md, comments removed."""
    text = (SHARED / "CONTRACT.md").read_text()
    block = text.split("```json", 1)[1].split("```", 1)[0]
    return dict(json.loads(re.sub(r"//[^\n]*", "", block)))


def test_the_key_tables_here_are_the_contracts() -> None:
    if not (SHARED / "CONTRACT.md").is_file():
        pytest.skip(f"{SHARED / 'CONTRACT.md'} is absent")
    example = contract_example()
    run = example["runs"][0]
    assert set(example) == {"runs", "errors"}
    assert set(run) == set(RUN_KEYS)
    assert set(run["milestones"][0]) == set(MILESTONE_KEYS)
    assert set(run["phases"][0]) == set(PHASE_KEYS)
    assert set(example["errors"][0]) == set(ERROR_KEYS)


def check_types(obj: dict[str, Any], keys: dict[str, Any], where: str) -> None:
    for key, kind in keys.items():
        assert key in obj, f"{where}: no {key!r}"
        assert isinstance(obj[key], kind) and not isinstance(obj[key], bool), f"{where}.{key} = {obj[key]!r}"
        if kind is TS and obj[key] is not None:
            assert ISO.match(obj[key]), f"{where}.{key} = {obj[key]!r} is not ISO 8601"


def check_contract(data: dict[str, Any]) -> int:
    assert {"runs", "errors"} <= set(data)
    for error in data["errors"]:
        check_types(error, ERROR_KEYS, "error")
    for run in data["runs"]:
        where = f"{run.get('source')}#{run.get('run_index')}"
        check_types(run, RUN_KEYS, where)
        assert run["outcome"] in ("ready", "crashed", "incomplete")
        assert (run["ready_ts"] is not None) == (run["outcome"] == "ready")
        for m in run["milestones"]:
            check_types(m, MILESTONE_KEYS, f"{where} milestone")
        assert [m["line"] for m in run["milestones"]] == sorted(m["line"] for m in run["milestones"])
        for p in run["phases"]:
            check_types(p, PHASE_KEYS, f"{where} phase {p.get('name')}")
            assert p["source"] in ("reported", "timestamps")
        if run["crash"] is not None:
            check_types(run["crash"], CRASH_KEYS, f"{where} crash")
            assert run["crash"]["category"] in CATEGORIES
            assert run["outcome"] == "crashed" or run["crash"].get("after_ready")
    return len(data["runs"])


def test_parse_json_has_every_contract_key_for_every_fixture_run(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = firedup(["parse", "--json", str(FIXTURES)], monkeypatch, capsys)
    assert code == 0
    assert check_contract(json.loads(out)) == len(list(FIXTURES.glob("*.log")))


def test_parse_json_has_every_contract_key_for_every_corpus_run(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    logs = corpus_logs("sglang")
    if not logs:
        pytest.skip("the corpus (../shared/corpus/sglang) is absent")
    code, out, _ = firedup(["parse", "--json", *map(str, logs)], monkeypatch, capsys)
    assert code == 0
    assert check_contract(json.loads(out)) >= len(logs)


def test_an_empty_result_is_still_the_contract(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.log").write_bytes(b"")
    code, out, _ = firedup(["parse", "--json", str(tmp_path / "empty.log")], monkeypatch, capsys)
    assert code == 1
    data = json.loads(out)
    assert data["runs"] == []
    check_contract(data)


# --- cheap start-up ----------------------------------------------------------------------

HEAVY = ("polars", "matplotlib", "numpy", "pandas", "ray", "fsspec", "s3fs")


@pytest.mark.parametrize("code", [
    "import firedup",
    "import sys; sys.argv = ['firedup', '--help']\nfrom firedup.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass",
    "import sys; sys.argv = ['firedup', 'parse', '--help']\nfrom firedup.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass",
])
def test_import_and_help_do_not_load_heavy_libraries(code: str) -> None:
    probe = code + "\nimport sys\nprint('loaded:', *(m for m in " + repr(HEAVY) + " if m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONPATH": str(SRC)}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "loaded:"



# --- the library's own errors, through the CLI (issue 33) ---------------------------------------


@pytest.mark.parametrize("command", [["parse"], ["timeline"], ["runs"], ["compare"], ["budget"],
                                     ["check", "--history", str(GOOD)]], ids=lambda c: c[0])
def test_a_terminal_of_one_to_six_columns_gets_the_narrowest_view(command: list[str], monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`COLUMNS=1` to `6` gave `ValueError: invalid width -3` (textwrap) and other tracebacks."""
    vllm = str(ROOT / "sample_logs" / "vllm-warm-start.log")
    for columns in range(1, 7):
        monkeypatch.setenv("COLUMNS", str(columns))
        code, out, err = firedup([*command, str(GOOD), vllm], monkeypatch, capsys)
        assert code in (0, 1, 6), (columns, err)  # 6: check cannot judge (no history of this config)
        assert out.strip() and "Traceback" not in err, columns


def test_an_empty_path_is_a_usage_error_not_the_current_folder(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT / "sample_logs")
    for command in (["parse", ""], ["parse", "--json", ""], ["runs", ""], ["timeline", ""]):
        code, out, err = firedup(command, monkeypatch, capsys)
        assert code == 2 and not out, (command, out[:200])
        assert "an empty path names no file" in err and err.count("\n") == 1


# --- an unknown wrapper: a harness re-logging two servers ------------------------------------

WRAPPED = Path(__file__).resolve().parent / "fixtures" / "wrapped"
# Every milestone each server of the wrapped fixtures prints, in the order of its lines.
WRAPPED_MILESTONES = {
    "two_servers.log": ["server_args", "dist_init.begin", "dist_init.end", "load_weight.begin", "load_weight.end",
                        "kv_cache.allocated", "memory_pool.end", "cuda_graph.begin", "cuda_graph.end",
                        "scheduler.ready", "http.started", "http.running", "http.first_request", "ready",
                        "health.first", "request.first"],
    "two_vllm_servers.log": ["server_args", "engine.init", "dist_init.end", "load_weight.begin", "load_weight.end",
                             "model_loading.end", "torch_compile.end", "kv_cache.allocated", "kv_cache.allocated",
                             "cuda_graph.end", "engine.ready", "http.running", "http.started", "ready",
                             "http.first_request", "health.first", "request.first"],
}


@pytest.mark.parametrize("name", sorted(WRAPPED_MILESTONES))
def test_two_servers_behind_one_harness_are_two_runs_with_every_milestone(
        name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`[ts] [harness.server_manager] [INFO] [worker_N] ` before every line of two servers
    started 2-3 s apart: the engine's own header is found behind it, and the wrapper's tag
    keeps the servers apart (two runs, each with every milestone, on its own lines)."""
    path = WRAPPED / name
    code, out, err = firedup(["parse", str(path), "--json"], monkeypatch, capsys)
    assert (code, err) == (0, "")
    runs = json.loads(out)["runs"]
    assert len(runs) == 2
    lines = path.read_text().splitlines()
    for worker, run in enumerate(runs):
        assert run["outcome"] == "ready" and run["ready_kind"] == "server"
        assert [m["name"] for m in run["milestones"]] == WRAPPED_MILESTONES[name]
        assert all(f"[worker_{worker}]" in lines[m["line"] - 1] for m in run["milestones"])
        ready = next(m for m in run["milestones"] if m["name"] == "ready")
        assert ready["ts"] == run["ready_ts"] and run["total_seconds"] in (45.0, 59.0)
        assert f"this run is the one of [worker_{worker}]" in " ".join(run["warnings"])

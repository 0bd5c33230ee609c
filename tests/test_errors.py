"""firedup.errors: the hierarchy, and every error class reaching the CLI as one line with its
exit code and no traceback; a bug still shows its traceback."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT, SAMPLE_LOGS, run_cli
from firedup import errors
from firedup.cli import main
from firedup.errors import (
    EXIT_NO_DATA,
    EXIT_OTHER,
    EXIT_SOME_INPUTS_BAD,
    EXIT_USAGE,
    DataError,
    FiredupError,
    FollowError,
    InputError,
    NoStartupError,
    OutputError,
    StoreError,
    UnknownEngineError,
    UnknownFlagError,
    UsageError,
    exit_code_for,
    writing,
)

READY = ROOT / "tests" / "fixtures" / "crash" / "ready_tp1.log"  # one startup, one rank


firedup = run_cli  # the real entry point, in-process: (exit code, stdout, stderr)


# --- the hierarchy ---------------------------------------------------------------------------


@pytest.mark.parametrize(("cls", "code"), [
    (FiredupError, EXIT_OTHER), (InputError, EXIT_SOME_INPUTS_BAD), (FollowError, EXIT_OTHER),
    (StoreError, EXIT_OTHER), (OutputError, EXIT_OTHER), (UsageError, EXIT_USAGE), (UnknownEngineError, EXIT_USAGE),
    (UnknownFlagError, EXIT_USAGE), (DataError, EXIT_NO_DATA), (NoStartupError, EXIT_NO_DATA),
])
def test_every_error_is_a_firedup_error_with_its_exit_code(cls: type[FiredupError], code: int) -> None:
    assert issubclass(cls, FiredupError) and cls.exit_code == code


def test_the_exit_codes_are_the_documented_ones() -> None:
    assert (errors.EXIT_OK, errors.EXIT_SOME_INPUTS_BAD, errors.EXIT_USAGE, errors.EXIT_CRASHED, errors.EXIT_NO_DATA,
            errors.EXIT_TIMEOUT) == (0, 1, 2, 3, 5, 124)
    readme = (ROOT / "README.md").read_text()
    assert "`5` no server startup" in readme


def test_library_callers_that_caught_value_and_key_errors_still_do() -> None:
    """Before the hierarchy the library raised ValueError/KeyError for these: callers keep working."""
    assert issubclass(UsageError, ValueError) and issubclass(DataError, ValueError)
    assert issubclass(UnknownEngineError, KeyError)
    assert str(UnknownEngineError("unknown engine 'tgi'")) == "unknown engine 'tgi'"  # not KeyError's quotes


def test_a_message_is_one_line_whatever_it_quotes() -> None:
    error = StoreError("/s/runs: cannot read the store (ComputeError:\n  bad parquet\n\n  at row 3)")
    assert str(error) == "/s/runs: cannot read the store (ComputeError:; bad parquet; at row 3)"


@pytest.mark.parametrize("error", [
    InputError("a.log", "empty file"), InputError("b.log.gz", "truncated", 12), OutputError("x.png", "Read-only"),
    UnknownFlagError("unknown flag 'x'"), NoStartupError(),
])
def test_errors_cross_a_process_boundary_whole(error: FiredupError) -> None:
    """The parse pool sends InputError back from its workers."""
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error) and vars(back) == vars(error)


def test_input_error_names_the_file_and_line() -> None:
    assert str(InputError("logs/a.log.gz", "a truncated gzip file", 40)) == "logs/a.log.gz:40: a truncated gzip file"
    from firedup.read.sources import InputError as FromSources

    assert FromSources is InputError  # one class, wherever it is imported from


def test_writing_maps_only_the_writes_oserror(tmp_path: Path) -> None:
    target = tmp_path / "no-such-dir" / "x.txt"
    with pytest.raises(OutputError, match=r"^cannot write .*x\.txt: No such file or directory$"), writing(target):
        target.write_text("x")
    with pytest.raises(RuntimeError), writing(target):  # not an OSError: untouched
        raise RuntimeError("a bug")


@pytest.mark.parametrize(("bad", "runs", "code"), [(0, 3, 0), (1, 3, 1), (1, 0, 1), (0, 0, 5)])
def test_exit_code_for_a_command_that_read_logs(bad: int, runs: int, code: int) -> None:
    assert exit_code_for(bad, runs) == code


# --- each class reaching the CLI: one line, its exit code, no traceback ----------------------


def _denied(*args: object, **kwargs: object) -> None:
    raise PermissionError(13, "Permission denied")


def _cases(tmp: Path) -> list[tuple[str, list[str], int, str]]:
    notes = tmp / "notes.txt"
    notes.write_text("remember to restart the server on monday\n")
    a_file = tmp / "a-file"
    a_file.write_text("not a store\n")
    return [
        ("InputError", ["replay", str(tmp / "nope.log"), "--out", str(tmp / "o.log")], 1,
         f"firedup: {tmp / 'nope.log'}: no such file"),
        ("UsageError", ["export", str(READY), "--format", "parquet", "-o", "-"], 2,
         "firedup: Parquet is binary: give a file with -o"),
        ("UnknownEngineError", ["parse", "--engine", "tgi", str(READY)], 2,
         "firedup: unknown engine 'tgi' (known: "),
        ("UnknownFlagError", ["compare", str(SAMPLE_LOGS), "--by", "cuda_graf"], 2,
         "firedup: unknown flag 'cuda_graf' in --by; did you mean "),
        ("StoreError", ["ingest", str(READY), "--store", str(a_file)], 1,
         f"firedup: {a_file}: not a directory, so it cannot be a firedup store"),
        ("OutputError", ["plot", "timeline", str(READY), "-o", str(tmp / "missing-dir" / "t.png")], 1,
         f"firedup: cannot write {tmp / 'missing-dir' / 't.png'}: No such file or directory"),
        ("DataError", ["plot", "ranks", str(READY), "-o", str(tmp / "r.png")], 5,
         "firedup: no run has phases on two or more ranks"),
        ("NoStartupError", ["plot", "timeline", str(notes), "-o", str(tmp / "t.png")], 5,
         "firedup: no server startup found in the input: nothing to draw"),
    ]


@pytest.mark.parametrize("name", ["InputError", "UsageError", "UnknownEngineError", "UnknownFlagError", "StoreError",
                                  "OutputError", "DataError", "NoStartupError"])
def test_each_error_reaches_the_user_as_one_line(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    [(_, args, want_code, want_start)] = [case for case in _cases(tmp_path) if case[0] == name]
    code, _out, err = firedup(args, monkeypatch, capsys)
    assert code == want_code, err
    lines = err.splitlines()
    # one line; an input that held no server's log is listed before it, once (issue 27)
    assert lines[-1].startswith(want_start) and all(line.startswith("firedup: ") for line in lines), err
    assert len(lines) == 1 or (name == "NoStartupError" and len(lines) == 2 and "no known engine" in lines[0]), err
    assert "Traceback" not in err and "Usage:" not in err, err


def test_follow_error_reaches_the_user_as_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "server.log"
    log.write_text("starting\n")
    # root reads everything: the follower's own os.open is denied (its os, not the process's)
    import os
    import types

    denied_os = types.SimpleNamespace(**{name: getattr(os, name) for name in dir(os) if not name.startswith("__")})
    denied_os.open = _denied
    monkeypatch.setattr("firedup.read.follow.os", denied_os)
    code, _out, err = firedup(["wait", "--log", str(log), "--timeout", "5", "--quiet"], monkeypatch, capsys)
    assert code == 1, err
    assert err == f"firedup: {log}: cannot read it (Permission denied)\n"


def test_a_file_without_a_startup_exits_5_with_one_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Like pytest's 5 (no tests collected): read fine, nothing to show; not 0, not a usage error."""
    notes = tmp_path / "notes.txt"
    notes.write_text("remember to restart the server on monday\n")
    code, out, err = firedup(["parse", str(notes)], monkeypatch, capsys)
    assert (code, out) == (5, "")
    # a file no engine's lines are in is said to be that, never read as some default engine
    assert err == f"firedup: {notes}: no known engine: none of sglang, vllm recognises its first lines; name one with --engine\n"
    code, _out, _err = firedup(["parse", str(notes), str(tmp_path / "gone.log")], monkeypatch, capsys)
    assert code == 1  # an unreadable input says more than an empty one


# --- bugs keep their traceback ----------------------------------------------------------------


def test_an_unexpected_exception_still_shows_a_traceback(tmp_path: Path) -> None:
    """A bug must not be dressed up as a user error: the real process prints the traceback."""
    script = ("import sys, firedup.api as api\n"
              "def broken(*a, **k): raise RuntimeError('a bug in the library')\n"
              "api.parse = broken\n"
              "from firedup.cli import main\n"
              f"sys.argv = ['firedup', 'parse', {str(READY)!r}]\n"
              "main()\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False,
                          env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr
    assert proc.stderr.rstrip().endswith("RuntimeError: a bug in the library")
    assert "firedup: " not in proc.stderr


def test_an_oserror_that_is_not_the_users_path_is_a_bug_not_a_file_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Regression: `report` caught every OSError, so a missing template (jinja2's TemplateNotFound
    is an OSError) became "Could not open file ...: unknown error". Now it keeps its traceback."""
    import jinja2

    import firedup.render.report as report_module

    def missing(context: dict[str, Any]) -> str:
        raise jinja2.TemplateNotFound("index.html.j2")

    monkeypatch.setattr(report_module, "render_html", missing)
    monkeypatch.setattr(sys, "argv", ["firedup", "report", str(READY), "-o", str(tmp_path / "r")])
    with pytest.raises(jinja2.TemplateNotFound):
        main()
    assert "Could not open file" not in capsys.readouterr().err


def test_a_report_into_an_unwritable_place_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the report folder should go\n")
    code, _out, err = firedup(["report", str(READY), "-o", str(blocker / "r")], monkeypatch, capsys)
    assert code == 1
    assert err == f"firedup: cannot write {blocker / 'r'}: Not a directory\n"

"""The command line's surface, one convention per kind of value (cli.py's shared option
helpers): every --help ends with examples and fits 80 columns, every duration option takes the
same forms, every command that takes paths takes `--store` or refuses it in one line, and
`--json` is spelled the same wherever a command prints a result."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from conftest import ROOT, run_cli
from firedup.cli import EXAMPLES, Duration, cli
from firedup.errors import UsageError
from firedup.live.options import parse_timeout

SAMPLES = ROOT / "sample_logs"
COMMANDS = sorted(cli.commands)


def _help(args: list[str], columns: int) -> str:
    result = CliRunner().invoke(cli, [*args, "--help"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("command", COMMANDS)
def test_every_help_ends_with_examples_and_fits_80_columns(command: str, columns: int) -> None:
    text = _help([command], columns)
    assert "\n  Examples:\n    firedup " in text or "\n  Examples:\n    kubectl " in text
    assert [line for line in text.splitlines() if len(line) > 80] == []


@pytest.mark.parametrize("columns", [80, 200])
def test_the_command_list_cuts_no_summary(columns: int) -> None:
    text = _help([], columns)
    listed = text.split("Commands:\n", 1)[1].splitlines()
    assert len(listed) == len(COMMANDS)  # one line each: no summary wrapped or cut
    assert not [line for line in listed if line.endswith("...") or len(line) > 80]
    for command in COMMANDS:
        assert not cli.commands[command].get_short_help_str(limit=10_000).endswith("...")


def _example_argv(command: str) -> list[list[str]]:
    """Each example of a command as the argv firedup gets (after `firedup`, after a pipe)."""
    text = "\n".join(EXAMPLES[command]).replace("\\\n", " ")
    commands = []
    for line in text.splitlines():
        words = shlex.split(line.split("|")[-1], comments=True)
        assert words[0] == "firedup" and words[1] == command, line
        commands.append(words[1:])
    return commands


@pytest.mark.parametrize("command", COMMANDS)
def test_every_example_is_accepted_by_its_command(command: str) -> None:
    """Each example parses: its options exist, its values convert, nothing required is missing."""
    for argv in _example_argv(command):
        with cli.commands[command].make_context(command, argv[1:]) as ctx:
            assert ctx.params is not None


# --- durations ------------------------------------------------------------------------------------

FORMS = {"90": 90.0, "90s": 90.0, "1m30s": 90.0, "15min": 900.0, "1.5h": 5400.0, "2 h 30 min": 9000.0}


def _duration_options() -> list[tuple[str, click.Option]]:
    return [(name, p) for name, command in sorted(cli.commands.items()) for p in command.params
            if isinstance(p, click.Option) and "DURATION" in (p.metavar or "")]


def test_every_option_that_takes_a_duration_says_so_and_uses_the_one_type() -> None:
    found = {(name, p.opts[0]) for name, p in _duration_options()}
    assert {("wait", "--timeout"), ("wait", "--stall-after"), ("wait", "--url-grace"), ("replay", "--hold"),
            ("replay", "--launch-delay")} <= found
    for name, p in _duration_options():
        assert isinstance(p.type, Duration) or (name, p.opts[0]) == ("wait", "--timeout")  # auto too


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_duration_option_accepts_the_same_forms(form: str) -> None:
    for name, p in _duration_options():
        if isinstance(p.type, Duration):
            with cli.commands[name].make_context(name, [*_required(name), p.opts[0], form]) as ctx:
                assert ctx.params[p.name or ""] == FORMS[form], (name, p.opts[0])
        else:
            assert parse_timeout(form) == (FORMS[form], False)


def _required(name: str) -> list[str]:
    return {"replay": ["x.log", "--out", "y.log"]}.get(name, [])


def test_never_is_no_limit_where_an_option_has_one_and_refused_in_one_line_elsewhere() -> None:
    never = {}
    for name, p in _duration_options():
        if not isinstance(p.type, Duration):
            never[p.opts[0]] = parse_timeout("never")[0]
            continue
        try:
            with cli.commands[name].make_context(name, [*_required(name), p.opts[0], "never"]) as ctx:
                never[p.opts[0]] = ctx.params[p.name or ""]
        except UsageError as exc:
            assert "\n" not in str(exc) and p.opts[0] in str(exc)
            never[p.opts[0]] = "refused"
    assert never == {"--timeout": None, "--stall-after": math.inf, "--url-grace": math.inf, "--hold": None,
                     "--launch-delay": "refused", "--split-writes": "refused"}


@pytest.mark.parametrize("bad", ["abc", "-5", "5 parsecs", "inf", "1e400"])
def test_a_bad_duration_is_one_line_naming_the_option(bad: str, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["wait", "--log", "x.log", "--stall-after", bad], monkeypatch, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("firedup: --stall-after ")


# --- the store ------------------------------------------------------------------------------------


def _takes_paths(command: click.Command) -> bool:
    return any(isinstance(p, click.Argument) for p in command.params) or command.name == "wait"


def test_every_command_that_takes_paths_has_the_one_store_option() -> None:
    for name in COMMANDS:
        command = cli.commands[name]
        if _takes_paths(command):
            store = [p for p in command.params if "--store" in p.opts]
            assert len(store) == 1, name
            assert isinstance(store[0], click.Option) and not store[0].is_flag and store[0].flag_value == "", name


@pytest.mark.parametrize("command", [c for c in COMMANDS if _takes_paths(cli.commands[c])])
def test_store_is_read_or_refused_in_one_line(command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    option = next(p for p in cli.commands[command].params if "--store" in p.opts)
    log = str(SAMPLES / "prod-tp8-eagle3-01.log")
    if option.expose_value:  # read: the option parses, bare and with a folder
        for spelling in (["--store"], [f"--store={tmp_path}"]):
            argv = {"plot": ["timeline", "-o", "t.png"], "check": [log], "ingest": [log],
                    "export": ["--json", "-o", "r.json"]}.get(command, []) + spelling
            with cli.commands[command].make_context(command, argv) as ctx:
                assert ctx.params["store"] in ("", str(tmp_path))
        return
    argv = {"synth": [str(tmp_path / "out")], "replay": [log, "--out", str(tmp_path / "o.log")],
            "report": [log, "-o", str(tmp_path / "r")]}.get(command, [log])
    code, out, err = run_cli([command, *argv, "--store"], monkeypatch, capsys)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(f"firedup: {command} does not read the history store: ")
    assert not (tmp_path / "out").exists() and not (tmp_path / "r").exists()


def test_ingest_takes_a_bare_store_as_the_default_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("FIREDUP_STORE", str(tmp_path / "store"))
    code, out, err = run_cli(["ingest", str(SAMPLES / "prod-tp8-eagle3-01.log"), "--store"], monkeypatch, capsys)
    assert code == 0, err
    assert str(tmp_path / "store") in out


# --- output formats -------------------------------------------------------------------------------


def test_timeline_json_is_parse_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    log = str(SAMPLES / "oom-in-cuda-graph.log")
    code, timeline, _ = run_cli(["timeline", log, "--json"], monkeypatch, capsys)
    assert code == 0
    assert timeline == run_cli(["parse", log, "--json"], monkeypatch, capsys)[1]
    assert json.loads(timeline)["runs"][0]["crash"]["category"]


def test_json_is_an_alias_of_format_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    logs = str(SAMPLES)
    assert run_cli(["runs", logs, "--json"], monkeypatch, capsys) == run_cli(["runs", logs, "--format", "json"],
                                                                             monkeypatch, capsys)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert run_cli(["export", logs, "--json", "-o", str(a)], monkeypatch, capsys)[0] == 0
    assert run_cli(["export", logs, "--format", "json", "-o", str(b)], monkeypatch, capsys)[0] == 0
    assert a.read_bytes() == b.read_bytes() and json.loads(a.read_text())
    code, _, err = run_cli(["export", logs, "-o", str(a)], monkeypatch, capsys)
    assert code == 2 and "--format" in err


def test_every_command_that_prints_a_result_has_json() -> None:
    """The writing commands (plot, report, synth, replay) write files; wait writes --record."""
    printing = {"parse", "timeline", "runs", "compare", "budget", "check", "export"}
    for name in printing:
        assert any("--json" in p.opts for p in cli.commands[name].params), name

"""The command line: each command is a few lines over a library function.

Only this module imports click. Heavy libraries (polars, matplotlib) are imported inside
the commands that need them, so `firedup --help` stays fast.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from firedup import __version__
from firedup.errors import EXIT_OK, EXIT_SOME_INPUTS_BAD, EXIT_USAGE, FiredupError

if TYPE_CHECKING:
    from firedup.parse import ParseResult

F = TypeVar("F", bound=Callable[..., Any])


def _use_color(stream: Any = None) -> bool:
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")


def _style(color: bool) -> Callable[..., str]:
    def style(text: str, **kw: Any) -> str:
        return click.style(text, **kw) if color else text

    return style


def _parse_date(ctx: click.Context, param: click.Parameter, value: str | None) -> _dt.date | None:
    if value is None:
        return None
    try:
        return _dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date like 2026-11-30") from None


def input_options(func: F) -> F:
    """PATH... plus the options every command that reads logs shares."""

    @click.argument("paths", nargs=-1, required=True, metavar="PATH...")
    @click.option("--engine", default=None, metavar="NAME", help="Force the log format (sglang, vllm) instead of sniffing it.")
    @click.option("--date", "default_date", callback=_parse_date, metavar="YYYY-MM-DD",
                  help="Date for logs that print only times (or no year).")
    @click.option("--all", "all_files", is_flag=True, help="In directories, read every file, not only *.log/.txt/.out/.gz.")
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _read(paths: tuple[str, ...], engine: str | None, default_date: _dt.date | None, all_files: bool) -> ParseResult:
    """Parse inputs, report unreadable ones on stderr as `file: reason`."""
    from firedup.parse import parse_paths

    try:
        result = parse_paths(paths, engine=engine, default_date=default_date, all_files=all_files,
                             progress=_progress_bar())
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    for err in result.errors:
        click.echo(f"firedup: {err}", err=True)
    return result


def _progress_bar() -> Callable[[int, int, str], None] | None:
    """A one-line progress counter on stderr for long batches, only on a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int, name: str) -> None:
        if total < 20:
            return
        end = "\n" if done == total else ""
        click.echo(f"\rparsing {done}/{total} files", err=True, nl=False)
        if end:
            click.echo("", err=True)

    return show


def _exit_for(result: ParseResult) -> None:
    sys.exit(EXIT_SOME_INPUTS_BAD if result.errors else EXIT_OK)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="firedup")
def cli() -> None:
    """Profile the startup of LLM inference servers (SGLang, vLLM) from their logs.

    \b
    Exit codes: 0 all inputs parsed, 1 some inputs unreadable (the rest is
    still printed), 2 usage error; `wait` adds 3 (crashed) and 124 (timed out).
    """


@cli.command()
@input_options
@click.option("--json", "as_json", is_flag=True, help="Print the machine-readable contract (shared/CONTRACT.md).")
def parse(paths: tuple[str, ...], engine: str | None, default_date: _dt.date | None, all_files: bool,
          as_json: bool) -> None:
    """Parse logs into runs, milestones and phases."""
    from firedup.render import summary_text

    result = _read(paths, engine, default_date, all_files)
    if as_json:
        click.echo(json.dumps(result.as_contract(), indent=1, ensure_ascii=False))
    elif result.runs:
        click.echo(summary_text(result.runs))
    _exit_for(result)


@cli.command()
@input_options
def timeline(paths: tuple[str, ...], engine: str | None, default_date: _dt.date | None, all_files: bool) -> None:
    """Show each run's phases, longest first, with per-rank spread and the crash."""
    from firedup.render import timelines_text

    result = _read(paths, engine, default_date, all_files)
    color = _use_color()
    if result.runs:
        click.echo(timelines_text(result.runs, _style(color)), color=color)
    elif not result.errors:
        click.echo("no server startup found in the input", err=True)
    _exit_for(result)


def main() -> None:
    """Entry point: user errors become one line on stderr and an exit code, never a traceback."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except FiredupError as exc:
        click.echo(f"firedup: {exc}", err=True)
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(EXIT_OK)
    except KeyboardInterrupt:
        sys.exit(130)


__all__ = ["EXIT_USAGE", "cli", "main"]

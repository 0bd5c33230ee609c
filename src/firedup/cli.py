"""The command line: each command is a few lines over one `firedup.api` call.

Only this module imports click. Heavy libraries (polars, matplotlib) are imported inside
the commands that need them, so `firedup --help` stays fast. A `FiredupError` from the library
becomes `firedup: <message>` and its exit code in one place (`FiredupGroup`); click's own usage
errors keep click's `Usage:` form; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from firedup import __version__, api
from firedup.core.safe import json_text, json_visible, visible, without_credentials
from firedup.errors import EXIT_OK, EXIT_REGRESSED, FiredupError, UsageError, exit_code_for
from firedup.render.answers import ingest_lines, n_runs, unread_lines

if TYPE_CHECKING:
    from firedup.tables.frames import Runs
    from firedup.timeline.pipeline import ParseResult

F = TypeVar("F", bound=Callable[..., Any])


def _columns() -> int:
    """The width every text view fits: $COLUMNS, else the terminal's, else 80 (piped); at least
    `MIN_WIDTH` (`COLUMNS=1` gets the narrowest view, not a traceback)."""
    import shutil

    from firedup.core.units import MIN_WIDTH

    return max(shutil.get_terminal_size().columns, MIN_WIDTH)


def _fitted(text: str) -> str:
    """A text view fitted to the terminal (core.units.fit_lines): no line wider than it."""
    from firedup.core.units import fit_lines

    return fit_lines(text, _columns())


def _use_color(stream: Any = None) -> bool:
    stream = stream or sys.stdout
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")


class _Terminal:
    """The one gate between text (much of it from logs and file names) and a terminal.

    Everything printed goes through `clean`, which shows every control character escaped
    (`firedup.core.safe.visible`) and no URL's password (`without_credentials`): a log line holding an OSC title or hyperlink, BEL or a C1
    CSI reaches the screen as `\\x1b]0;...`, never as an instruction. Colour is ours only:
    `style` puts a placeholder with a per-process nonce where its coloured text goes, and
    `clean` swaps the placeholders back after escaping, so no log text can pass as one.
    """

    def __init__(self) -> None:
        self._nonce = os.urandom(6).hex()  # what secrets.token_hex does, without importing secrets and hmac
        self._styled: list[str] = []
        self._slot = re.compile(f"\ue000{self._nonce}:(\\d+)\ue001")

    def style(self, color: bool) -> Callable[..., str]:
        def style(text: str, **kw: Any) -> str:
            if not color:
                return text
            self._styled.append(click.style(visible(text), **kw))
            return f"\ue000{self._nonce}:{len(self._styled) - 1}\ue001"

        return style

    def clean(self, text: str) -> str:
        out = visible(without_credentials(text))
        if self._styled and "\ue000" in out:
            out = self._slot.sub(lambda m: self._styled[int(m.group(1))], out)
        return out


TERMINAL = _Terminal()


def _style(color: bool) -> Callable[..., str]:
    return TERMINAL.style(color)


def echo(text: str = "", err: bool = False, nl: bool = True, color: bool | None = None) -> None:
    """`click.echo` through the terminal gate (`_Terminal.clean`)."""
    click.echo(TERMINAL.clean(text), err=err, nl=nl, color=color)


def redraw(text: str, nl: bool = False) -> None:
    """A progress line redrawn in place on stderr: our `\\r`, then `text` through the gate."""
    click.echo("\r" + TERMINAL.clean(text), err=True, nl=nl)


class _SafeStream:
    """A text stream whose writes pass the terminal gate, for code that writes to a stream
    itself (`wait`). The status line's own `\\r` + erase-line prefix is kept; `json` mode
    writes JSON text, whose C0 characters `json.dumps` already escaped, with `json_visible`."""

    _CLEAR_LINE = "\r\x1b[K"

    def __init__(self, stream: Any, json_text: bool = False) -> None:
        self._stream = stream
        self._json = json_text

    def write(self, text: str) -> int:
        if self._json:
            return int(self._stream.write(json_visible(without_credentials(text))))
        lead = ""
        if text.startswith(self._CLEAR_LINE):
            lead, text = self._CLEAR_LINE, text[len(self._CLEAR_LINE):]
        return int(self._stream.write(lead + TERMINAL.clean(text)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


# --- one convention per kind of value, shared by every command ------------------------------
# Durations: seconds (90) or a duration (90s, 1m30s, 15min, 1h), `never` where an option has
# no limit. Paths: the logs a command is about are its arguments; earlier logs to judge or
# wait by are `--history PATH`. Output: `--json` where a command prints a result (`runs` and
# `export` keep `--format`). The store: `--store` (bare: the default one; `--store=DIR|URL`),
# on every command that reads runs; the others refuse it in one line saying why.


class Duration(click.ParamType["float | None"]):
    """A duration as every option spells it (`core.units.parse_duration`) -> seconds; `never`
    gives `never_value` (inf, or None where the option's default is no limit), or is refused
    where it means nothing (`allow_never=False`)."""

    name = "duration"

    def __init__(self, never_value: float | None = math.inf, allow_never: bool = True) -> None:
        self.never_value, self.allow_never = never_value, allow_never

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float | None:
        from firedup.core.units import NEVER, parse_duration

        if value is None or isinstance(value, float):
            return value
        option = param.opts[0] if param is not None and param.opts else "duration"
        if str(value).strip().lower() in NEVER:
            if self.allow_never:
                return self.never_value
            raise UsageError(f"{option} {value!r}: give seconds (900) or a duration (90s, 15min); "
                             "never means nothing here")
        return parse_duration(str(value), option)


def store_option(help_text: str = "Also read the history store: bare --store for the default one "
                                  "($FIREDUP_STORE or the user data dir), or --store=DIR (or s3://, gs://, "
                                  "az:// URL).") -> Callable[[F], F]:
    """`--store` / `--store=DIR|URL`, spelled the same on every command that reads runs."""
    return click.option("--store", "store", is_flag=False, flag_value="", default=None, metavar="DIR|URL",
                        help=help_text)


def refuses_store(why: str) -> Callable[[F], F]:
    """A command that takes paths but cannot read the store: `--store` is refused in one line."""
    def refuse(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
        if value is not None:
            raise UsageError(f"{ctx.info_name} does not read the history store: {why}")
    return click.option("--store", is_flag=False, flag_value="", default=None, expose_value=False,
                        hidden=True, callback=refuse)


# Each command's --help ends with these (`Examples:`, as kubectl and systemctl show them).
EXAMPLES: dict[str, tuple[str, ...]] = {
    "parse": ("firedup parse sample_logs/",
              "firedup parse server.log --json > runs.json",
              "kubectl logs POD | firedup parse -"),
    "timeline": ("firedup timeline sample_logs/oom-in-cuda-graph.log",
                 "firedup timeline server.log --launched-at 22:46:34",
                 "firedup timeline server.log --json"),
    "runs": ("firedup runs sample_logs/",
             "firedup runs --store",
             "firedup runs sample_logs/ --format csv -o runs.csv"),
    "compare": ("firedup compare sample_logs/ --by disable_cuda_graph",
                "firedup compare --store --by tp_size",
                "firedup compare sample_logs/ --json"),
    "budget": ("firedup budget sample_logs/",
               "firedup budget sample_logs/ --snippet kubernetes \\",
               "    --group disable_cuda_graph=False",
               "firedup budget --store --risk 0.001 --json"),
    "check": ("firedup check new.log --history sample_logs/",
              "firedup check new.log --store --json"),
    "ingest": ("firedup ingest sample_logs/",
               "firedup ingest 's3://bucket/logs/*.log' --store s3://bucket/firedup",
               "firedup ingest logs/ --ray auto   # a running Ray cluster (ray start)"),
    "export": ("firedup export sample_logs/ --format chrome-trace -o trace.json",
               "firedup export sample_logs/ --format prometheus -o -",
               "firedup export --store --json --table runs -o runs.json"),
    "synth": ("firedup synth sample_logs/ --seed 7",
              "firedup synth --list",
              "firedup synth big/ --long 1G"),
    "plot": ("firedup plot timeline sample_logs/ -o timeline.png",
             "firedup plot compare sample_logs/ --by disable_cuda_graph -o compare.svg",
             "firedup plot ranks sample_logs/ -o ranks.png"),
    "report": ("firedup report sample_logs/ -o reports/sample/",
               "firedup report logs/ --by disable_cuda_graph -o reports/fleet/"),
    "wait": ("firedup wait --log server.log --url http://127.0.0.1:30000/health",
             "kubectl logs -f POD | firedup wait --log - --timeout 15min",
             "firedup wait --log server.log --pid 4242 --store --ingest"),
    "replay": ("firedup replay sample_logs/prod-tp8-eagle3-01.log --out server.log",
               "firedup replay old.log --out server.log --speed 10 --port 0 --hold 90s"),
}


def _with_examples(group: click.Group) -> None:
    """Every command's --help ends with its `Examples:` (kept as written: click's \\b)."""
    for name, command in group.commands.items():
        lines = EXAMPLES.get(name)
        if lines:
            command.epilog = "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


def _parse_date(ctx: click.Context, param: click.Parameter, value: str | None) -> _dt.date | None:
    from firedup.read.clock import MAX_YEAR, MIN_YEAR

    if value is None:
        return None
    try:
        day = _dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date like 2026-11-30") from None
    if not MIN_YEAR <= day.year <= MAX_YEAR:
        raise click.BadParameter(f"{value} is outside the years a log's dates may have ({MIN_YEAR}-{MAX_YEAR})")
    return day


def _parse_launched_at(ctx: click.Context, param: click.Parameter, value: str | None) -> _dt.datetime | _dt.time | None:
    """`--launched-at`: a time of day (`22:46:34`) or a date and time, on the log's clock."""
    from firedup.timeline.launch import parse_launched_at

    return None if value is None else parse_launched_at(value)


LAUNCHED_AT_HELP = ("When the server process was launched, on the log's clock (22:46:34, or with its date): "
                    "times from launch count from it instead of an estimate.")


def input_options(func: F) -> F:
    """PATH... plus the options every command that reads logs shares."""
    return click.argument("paths", nargs=-1, required=True, metavar="PATH...")(_reading_options(func))


def _engine_help() -> str:
    """The --engine help, naming the registered engines (the format modules say which)."""
    from firedup.formats import known_engines

    return f"Force the log format ({known_engines()}) instead of sniffing it."


ENGINE_HELP = _engine_help()


def _reading_options(func: F) -> F:
    """How logs are read: the format, the date for logs without one, which files to take."""
    func = click.option("--all", "all_files", is_flag=True,
                        help="In directories, read every file, not only *.log/.txt/.out/.gz.")(func)
    func = click.option("--date", "default_date", callback=_parse_date, metavar="YYYY-MM-DD",
                        help="Date for logs that print only times (or no year).")(func)
    return click.option("--engine", default=None, metavar="NAME",
                        help=ENGINE_HELP)(func)


def _read(paths: tuple[str, ...], engine: str | None, default_date: _dt.date | None, all_files: bool,
          launched_at: _dt.datetime | _dt.time | None = None) -> ParseResult:
    """Parse inputs, report unreadable ones on stderr as `file: reason`."""
    result = api.parse(paths, engine=engine, date=default_date, all_files=all_files, progress=_progress_bar(),
                       launched_at=launched_at)
    _say_unread(result)
    return result


def _say_unread(result: ParseResult) -> None:
    """The inputs that could not be read, or held no startup, on stderr as `file: reason`."""
    for line in unread_lines(result):
        echo(line, err=True)


def _progress_bar() -> Callable[[int, int, str], None] | None:
    """A one-line progress counter on stderr for long batches, only on a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int, name: str) -> None:
        if total < 20:
            return
        end = "\n" if done == total else ""
        redraw(f"parsing {done}/{total} files", nl=False)
        if end:
            echo("", err=True)

    return show


def _exit(errors: int, runs: int) -> None:
    """0, 1 when some inputs were unreadable, 5 when none held a server startup."""
    sys.exit(exit_code_for(errors, runs))


class FiredupGroup(click.Group):
    """The one place a library error becomes what the user sees: one line, `firedup:
    <message>`, and the error's exit code; for `main` and for any caller of `cli` (click's
    test runner, an embedding program)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except FiredupError as exc:
            echo(f"firedup: {exc}", err=True)
            sys.exit(exc.exit_code)


@click.group(cls=FiredupGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 80})
@click.version_option(__version__, prog_name="firedup")
def cli() -> None:
    """Profile the startup of LLM inference servers ({engines}) from their logs.

    \b
    Exit codes: 0 all inputs parsed, 1 some inputs unreadable (the rest is
    still printed), 2 usage error, 5 no server startup in the inputs (or
    nothing to draw); `wait` adds 3 (crashed), 124 (timed out) and 4 (timed
    out while the server sat idle: stuck); `check` exits 1 when a run regressed,
    6 when its history cannot judge it.
    """


def _with_engine_titles(group: click.Group) -> None:
    """The top-level help names the registered engines (the format modules say which)."""
    from firedup.formats import all_formats

    titles = ", ".join(fmt.title or fmt.name for fmt in all_formats().values())
    group.help = (group.help or "").replace("{engines}", titles)


_with_engine_titles(cli)


@cli.command(short_help="Parse logs into runs, milestones and phases.")
@input_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON: every run, milestone, phase and crash (the contract scripts rely on).")
@refuses_store("it reads logs (`firedup runs --store` lists the store's runs)")
@click.option("--launched-at", callback=_parse_launched_at, metavar="TIME", help=LAUNCHED_AT_HELP)
def parse(paths: tuple[str, ...], engine: str | None, default_date: _dt.date | None, all_files: bool,
          as_json: bool, launched_at: _dt.datetime | _dt.time | None) -> None:
    """Parse logs into runs, milestones and phases.

    The text summary fits the terminal (80 columns when not a terminal, $COLUMNS to choose):
    the folder the sources share is said once, long names are cut in the middle.
    """
    if as_json and launched_at is not None:  # whole: a time no run can take is refused before any output
        from firedup.timeline.pipeline import write_contract_json

        result = _read(paths, engine, default_date, all_files, launched_at)
        write_contract_json(result, _SafeStream(sys.stdout, json_text=True))  # type: ignore[arg-type]
        _exit(len(result.errors), len(result.runs))
    if as_json:  # streamed: each run written as it is parsed, memory flat over any number of files
        streamed = api.write_parse_json(paths, _SafeStream(sys.stdout, json_text=True),  # type: ignore[arg-type]
                                        engine=engine, date=default_date, all_files=all_files,
                                        progress=_progress_bar(), launched_at=launched_at)
        _say_unread(streamed)
        _exit(len(streamed.errors), streamed.run_count)
    from firedup.render.text import parse_table_text  # not on --json's path

    result = _read(paths, engine, default_date, all_files, launched_at)
    if result.runs:
        echo(_fitted(parse_table_text(result.runs, width=_columns())))
    _exit(len(result.errors), len(result.runs))


@cli.command(short_help="Each run's phases, longest first, per-rank spread, the crash.")
@input_options
@click.option("--launched-at", callback=_parse_launched_at, metavar="TIME", help=LAUNCHED_AT_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the runs as JSON, as parse --json does.")
@refuses_store("its phases per rank are read from the logs (`firedup runs --store` lists the store's runs)")
def timeline(paths: tuple[str, ...], engine: str | None, default_date: _dt.date | None, all_files: bool,
             launched_at: _dt.datetime | _dt.time | None, as_json: bool) -> None:
    """Show each run's phases, longest first, with per-rank spread and the crash."""
    from firedup.render.text import timelines_text

    if as_json:  # one spelling of JSON: the runs as `parse --json` writes them
        streamed = api.write_parse_json(paths, _SafeStream(sys.stdout, json_text=True),  # type: ignore[arg-type]
                                        engine=engine, date=default_date, all_files=all_files,
                                        progress=_progress_bar(), launched_at=launched_at)
        _say_unread(streamed)
        _exit(len(streamed.errors), streamed.run_count)
    result = _read(paths, engine, default_date, all_files, launched_at)
    color = _use_color()
    if result.runs:
        echo(_fitted(timelines_text(result.runs, _style(color), width=_columns())), color=color)
    elif not result.errors:
        echo("no server startup found in the input", err=True)
    _exit(len(result.errors), len(result.runs))


# --- many runs: runs, compare, budget, ingest, export ---------------------------------------


def many_inputs(func: F) -> F:
    """PATH... (optional with --store) plus the options of the commands over many runs."""
    func = _reading_options(func)
    func = store_option()(func)
    return click.argument("paths", nargs=-1, metavar="[PATH...]")(func)


def _load(paths: tuple[str, ...], store: str | None, engine: str | None, default_date: _dt.date | None,
          all_files: bool) -> Runs:
    """Paths and/or the store (`--store` alone: "", the default one) -> tables; unreadable
    inputs reported on stderr."""
    if not paths and store is None:
        raise click.UsageError("give log paths, --store for the history, or both")
    runs = api.load(paths, store=store, engine=engine, date=default_date, all_files=all_files,
                    progress=_progress_bar())
    for err in runs.errors:
        echo(f"firedup: {err}", err=True)
    for skipped in runs.skipped:
        echo(f"firedup: {skipped}", err=True)
    if store is not None and not paths and not len(runs):
        echo(f"firedup: the store {api.open_store(store).root} holds no runs yet; add some with "
                   "`firedup ingest PATH...`", err=True)
    return runs


def _exit_runs(runs: Runs) -> None:
    _exit(len(runs.errors), len(runs))


@cli.command("runs", short_help="One row per run: outcome, time to ready, biggest phases.")
@many_inputs
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]), default="table",
              show_default=True, help="Output format.")
@click.option("--json", "fmt", flag_value="json", help="Same as --format json.")
@click.option("-o", "--output", "out", default=None, metavar="FILE", help="Write to FILE instead of stdout.")
def runs_cmd(paths: tuple[str, ...], store: str | None, engine: str | None, default_date: _dt.date | None,
             all_files: bool, fmt: str, out: str | None) -> None:
    """One row per run: outcome, time to ready, biggest phases, the flags that differ.

    The table fits the terminal (80 columns when not a terminal, $COLUMNS to choose): the
    columns that do not fit are counted on one line; --format csv/json/parquet hold them all.
    With --store the rows are in the order the runs began, with their date.
    """

    if fmt == "parquet" and (not out or out == "-"):
        raise click.UsageError("--format parquet needs -o FILE")
    to_file = out if out and out != "-" else None
    runs = _load(paths, store, engine, default_date, all_files)
    # the terminal's width ($COLUMNS, else 80 when not a terminal); a file gets every column
    # from the store (many days, many machines) the rows are in the order the runs began, with the date
    text = api.summary(runs, fmt, to_file, width=None if to_file else _columns(),
                       by_time=store is not None)
    if text is not None:
        echo(text if fmt != "table" or to_file else _fitted(text))
    _exit_runs(runs)


_BY_HELP = ("Group by these flags (comma-separated or repeated). Default: the flags that differ between the runs, "
            "except those that give about one group per run (floats, seeds, ports, paths).")
by_option = click.option("--by", "by", multiple=True, metavar="FLAG[,FLAG...]", help=_BY_HELP)


@cli.command(short_help="Compare groups of runs by flags: which phase makes the difference.")
@many_inputs
@by_option
@click.option("-v", "--verbose", is_flag=True, help="Long flag values whole, not cut at the width; every run left "
                                                    "out with its reason.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (keys: groups, deltas, ...).")
def compare(paths: tuple[str, ...], store: str | None, engine: str | None, default_date: _dt.date | None,
            all_files: bool, by: tuple[str, ...], verbose: bool, as_json: bool) -> None:
    """Compare groups of runs: time to ready, phases, and what explains the difference.

    Runs of one engine and model are compared; without --by, those with the most ready runs,
    and a note names the others and how to compare them.
    """
    from firedup.tables.compare_text import comparison_text

    runs = _load(paths, store, engine, default_date, all_files)
    result = api.compare(runs, by)
    echo(json_text(result.as_json(), indent=1) if as_json
         else _fitted(comparison_text(result, width=_columns(), verbose=verbose)))
    _exit_runs(runs)


def _risk(ctx: click.Context, param: click.Parameter, value: float) -> float:
    from firedup.tables.risk import MIN_RISK

    if not MIN_RISK <= value < 1.0:  # NaN fails both
        raise click.BadParameter(f"must be between 0 and 1 (at least {MIN_RISK:g}), e.g. 0.01 for a 1% chance of a timeout")
    return value


def risk_option(help_text: str = "Accepted chance that a healthy start takes longer than the budget.",
                ) -> Callable[[F], F]:
    return click.option("--risk", default=0.01, show_default=True, callback=_risk, type=float, help=help_text)


@cli.command(short_help="Start-up timeouts with their risk, and wait loops/probes to paste.")
@many_inputs
@by_option
@risk_option()
@click.option("--snippet", "snippets",
              type=click.Choice(["all", "timeouts", "bash", "kubernetes", "compose", "none"]), multiple=True,
              help="Print after the budgets every layer's timeout, or one ready-to-paste snippet. A single "
                   "snippet prints it alone, so `--snippet bash --group KEY=VALUE > wait.sh` is a script.")
@click.option("--group", "group", default=None, metavar="KEY=VALUE[,...]",
              help="Only this group (as the first lines name it), e.g. disable_cuda_graph=False: what a "
                   "snippet is for when there are several groups.")
@click.option("-v", "--verbose", is_flag=True, help="Every budget's derivation, every run left out, every snippet.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (keys: groups, ...).")
def budget(paths: tuple[str, ...], store: str | None, engine: str | None, default_date: _dt.date | None,
           all_files: bool, by: tuple[str, ...], risk: float, snippets: tuple[str, ...], group: str | None,
           verbose: bool, as_json: bool) -> None:
    """Recommended start-up timeouts per group, counted from the server's launch, with their risk,
    and wait loops/probes to paste. The first lines are the answer: a budget per group."""
    from firedup.render.budget import budget_output, select_group

    runs = _load(paths, store, engine, default_date, all_files)
    report = select_group(api.budgets(runs, by, risk), group)
    echo(budget_output(report, snippets, verbose, as_json, width=_columns()), nl=False)
    _exit_runs(runs)


@cli.command(short_help="CI gate: fail when start-up time or a phase regressed.")
@click.argument("paths", nargs=-1, required=True, metavar="NEW...")
@click.option("--history", "history", multiple=True, metavar="PATH",
              help="Earlier logs (files or folders) to judge by. Repeatable.")
@store_option("Also judge by the history store: bare --store for the default one, or --store=DIR (or a "
              "bucket URL).")
@risk_option("Chance that a healthy run is called a regression, per measure, if times are log-normal.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (keys: verdict, rule, failed, runs, ...).")
@click.option("-v", "--verbose", is_flag=True, help="Also print the rule.")
@_reading_options
def check(paths: tuple[str, ...], history: tuple[str, ...], store: str | None, risk: float, as_json: bool,
          verbose: bool, engine: str | None, default_date: _dt.date | None, all_files: bool) -> None:
    """Fail (exit 1) when a new run's time to ready from launch or any phase regressed beyond the
    history's spread for the same config, or it did not get ready; CANNOT JUDGE (exit 6) when the
    history holds fewer than 2 runs of its config; exit 0 otherwise, 5 when NEW holds no server
    startup (like pytest). The first lines are the verdicts."""
    from firedup.errors import EXIT_CANNOT_JUDGE
    from firedup.tables.check import CANNOT_JUDGE

    report = api.check(paths, history, store=store, risk=risk, engine=engine, date=default_date,
                       all_files=all_files)
    for err in report.errors:
        echo(f"firedup: {err}", err=True)
    echo(json_text(report.as_json(), indent=1) if as_json else _fitted(report.text(verbose)))
    if report.failed or report.errors:
        sys.exit(EXIT_REGRESSED)
    sys.exit(EXIT_CANNOT_JUDGE if report.verdict == CANNOT_JUDGE else EXIT_OK)


@cli.command(short_help="Add runs to the history store (a log already there is skipped).")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@store_option("The store to add to: a folder, or a bucket prefix (s3://, gs://, az://) (default, or bare "
              "--store: $FIREDUP_STORE, else the user data dir).")
@click.option("--engine", default=None, metavar="NAME", help=ENGINE_HELP)
@click.option("--date", "default_date", callback=_parse_date, metavar="YYYY-MM-DD",
              help="Date for logs that print only times (or no year).")
@click.option("--all", "all_files", is_flag=True, help="In directories, read every file, not only *.log/.txt/.out/.gz.")
@click.option("--force", is_flag=True, help="Re-parse and replace logs that are already in the store.")
@click.option("--ray", "ray", default=None, metavar="ADDRESS|auto|local",
              help="Parse on a Ray cluster with Ray Data, each worker writing into the store: auto (the "
                   "cluster `ray start` runs here: it must be running), host:port, ray://host:port, or local (a private one, "
                   "stopped afterwards). Needs firedup[fleet] on the workers.")
@click.option("--workers", type=click.IntRange(min=1), default=None, metavar="N",
              help="Files parsed at once (default: one per core; with --ray local, the cluster's CPUs).")
@click.option("-v", "--verbose", is_flag=True, help="List each file: added, or already in the store.")
def ingest(paths: tuple[str, ...], store: str | None, engine: str | None, default_date: _dt.date | None,
           all_files: bool, force: bool, ray: str | None, workers: int | None, verbose: bool) -> None:
    """Add the runs of these logs to the history store (a log already there is skipped).

    PATH may be a file, a folder, a glob, or an object-storage URL (s3://, gs://, az://: a key,
    a prefix or a glob), read with the credentials of the environment."""
    st = api.open_store(store or True)
    report = api.ingest(paths, store=st, engine=engine, date=default_date, all_files=all_files, force=force,
                        progress=_progress_bar(), ray=ray, workers=workers)
    for err in report.errors:
        echo(f"firedup: {err}", err=True)
    for line in ingest_lines(report, str(st.root), verbose):
        echo(_fitted(line))
    _exit(len(report.errors), report.runs_added + len(report.present))


@cli.command(short_help="Export a trace (Perfetto, OTLP), metrics, or a table.")
@many_inputs
@click.option("--format", "fmt", type=click.Choice(["chrome-trace", "prometheus", "otlp-json", "csv", "parquet", "json"]),
              default=None,
              help="chrome-trace opens in ui.perfetto.dev and chrome://tracing; prometheus is OpenMetrics text "
                   "(startup_time_seconds{phase=...}, as the engine's own gauge); otlp-json is one span per phase "
                   "per rank for an OTLP collector (Jaeger, Tempo); the others write one table.")
@click.option("--json", "fmt", flag_value="json", help="Same as --format json.")
@click.option("--table", "table_name", type=click.Choice(["phases", "runs", "milestones"]), default="phases",
              show_default=True, help="The table csv/parquet/json write.")
@click.option("-o", "--output", "out", required=True, metavar="FILE", help="Where to write (- = stdout for text).")
def export(paths: tuple[str, ...], store: str | None, engine: str | None, default_date: _dt.date | None,
           all_files: bool, fmt: str | None, table_name: str, out: str) -> None:
    """Export runs as a trace (Chrome/Perfetto, or OTLP/JSON spans), as OpenMetrics text, or a table as
    CSV, Parquet or JSON."""
    if fmt is None:
        raise click.UsageError("missing --format (or --json)")
    runs = _load(paths, store, engine, default_date, all_files)
    api.export(runs, fmt, out, table=table_name)
    if out != "-":  # (to stdout the export itself is the output)
        what = f"the {table_name} table of " if fmt in ("csv", "parquet", "json") else ""
        echo(_fitted(f"wrote {what}{n_runs(len(runs))} to {out} ({fmt})"))
    _exit_runs(runs)


def _parse_size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """`1G`, `200M`, `150k` or a plain byte count (`core.units.parse_size`)."""
    from firedup.core.units import parse_size

    try:
        return None if value is None else parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _byte_progress(label: str) -> Callable[[int, int], None] | None:
    """`label 37%` redrawn on stderr, only on a terminal."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        redraw(f"{label} {min(100, 100 * done // max(total, 1))}%", nl=done >= total)

    return show


@cli.command(short_help="Write synthetic start-up logs with their ground truth.")
@click.argument("out_dir", required=False, type=click.Path(file_okay=False))
@refuses_store("it writes synthetic logs into OUT_DIR")
@click.option("--seed", default=7, show_default=True, help="Same seed, byte-identical logs.")
@click.option("--scenario", "scenarios", multiple=True, metavar="NAME",
              help="Write only this sample (repeatable); see --list.")
@click.option("--list", "list_only", is_flag=True, help="List the sample scenarios and exit.")
@click.option("--long", "long_size", callback=_parse_size, metavar="SIZE",
              help="Instead: one long log (OUT_DIR/long.log) of about SIZE (e.g. 1G) with several startups.")
@click.option("--startups", default=4, show_default=True, help="Startups in the --long log.")
@click.option("--many", type=click.IntRange(min=1), metavar="N", help="Instead: N varied startup logs in OUT_DIR.")
@click.option("--size", "many_size", callback=_parse_size, default="200k", show_default=True, metavar="SIZE",
              help="Approximate size of each --many log.")
def synth(out_dir: str | None, seed: int, scenarios: tuple[str, ...], list_only: bool, long_size: int | None,
          startups: int, many: int | None, many_size: int) -> None:
    """Write synthetic startup logs of the built-in engines with their ground truth (truth.json).

    \b
    By default: the bundled sample set (README.md, truth.json and one .log
    per scenario). --long and --many write benchmark inputs.
    """
    from firedup.synth.jobs import write_synth
    from firedup.synth.samples import sample_scenarios

    if list_only:
        for name, scenario in sample_scenarios(seed).items():
            echo(_fitted(f"{name:<22} {scenario.description}"))
        return
    if out_dir is None:
        raise click.UsageError("missing OUT_DIR (the folder to write into)")
    if long_size is not None and many is not None:
        raise click.UsageError("--long and --many are separate jobs: pick one")
    echo(write_synth(out_dir, seed=seed, scenarios=scenarios, long_size=long_size, startups=startups, many=many,
                     many_size=many_size, progress=_byte_progress))


# --- pictures and reports: plot, report ------------------------------------------------------------

PLOT_KINDS = api.PLOT_KINDS  # = firedup.render.charts.KINDS (tested)


@cli.command(short_help="Draw a chart (timeline, compare, distribution, ranks).")
@click.argument("kind", type=click.Choice(PLOT_KINDS), metavar="KIND")
@many_inputs
@by_option
@click.option("-o", "--output", "out", required=True, metavar="FILE.png|FILE.svg", help="Where to write the chart.")
@click.option("--run", "run_names", multiple=True, metavar="FILE[#N]",
              help="timeline: only these runs (repeatable); ranks: this run (default: the one whose ranks differ most).")
@click.option("--ranks", "per_rank", is_flag=True, help="timeline: a row per rank under each run.")
@risk_option("distribution: the risk of the budget line.")
def plot(kind: str, paths: tuple[str, ...], store: str | None, engine: str | None, default_date: _dt.date | None,
         all_files: bool, by: tuple[str, ...], out: str, run_names: tuple[str, ...], per_rank: bool,
         risk: float) -> None:
    """Draw one chart of the runs: KIND is timeline, compare, distribution or ranks.

    \b
    timeline      Gantt chart of runs (--ranks: a row per rank), ready and
                  crash marked
    compare       stacked median phases per group (--by), median time to
                  ready at the end
    distribution  time to ready per group (--by), the budget line (--risk)
    ranks         heatmap of phase duration by rank: stragglers (--run picks
                  the run)
    """
    if not out.lower().endswith((".png", ".svg")):
        raise click.BadParameter("write the chart to a .png or .svg file", param_hint="-o")
    runs = _load(paths, store, engine, default_date, all_files)
    chart = api.plot(kind, runs, out, by=by, run=run_names, ranks=per_rank, risk=risk)
    echo(_fitted(f"wrote the {kind} chart of {n_runs(len(runs))} to {out}"))  # the answer first, then what it leaves out
    if chart.coverage is not None and not chart.coverage.complete:
        echo(_fitted(f"note: the chart {chart.coverage.text('draws')} (`firedup compare` lists them)"), err=True)
    _exit_runs(runs)


def _stage_bar() -> Callable[[str, int, int], None] | None:
    """`parsing logs [#####.....] 12/40` redrawn on stderr, only on a terminal."""
    if not sys.stderr.isatty():
        return None
    state = {"stage": ""}

    def show(stage: str, done: int, total: int) -> None:
        if stage != state["stage"] and state["stage"]:
            echo("", err=True)
        state["stage"] = stage
        filled = 24 * done // max(total, 1)
        redraw(f"{stage:<15} [{'#' * filled}{'.' * (24 - filled)}] {done}/{total}", nl=False)

    return show


@cli.command(short_help="Write an HTML report and a Markdown one with PNG charts.")
@input_options
@by_option
@risk_option()
@click.option("-o", "--output", "out_dir", required=True, metavar="DIR",
              help="Folder to write index.html, report.md and the charts into (e.g. reports/NAME/).")
@refuses_store("its crashes and ranks are read from the logs themselves: give their paths")
def report(paths: tuple[str, ...], engine: str | None, default_date: _dt.date | None, all_files: bool,
           by: tuple[str, ...], risk: float, out_dir: str) -> None:
    """Write DIR/index.html (one self-contained file: open it from disk or mail it) and
    DIR/report.md with its PNG charts beside it (for a wiki or a PR)."""
    bar = _stage_bar()
    try:
        result = api.report(paths, out_dir, by=by, risk=risk, engine=engine, date=default_date, all_files=all_files,
                            progress=bar)
    finally:
        if bar is not None:
            echo("", err=True)
    for err in result.errors:
        echo(f"firedup: {err}", err=True)
    echo(_fitted(f"wrote {result.runs} run{'s' if result.runs != 1 else ''} to {out_dir.rstrip('/')}/index.html "
                 f"and report.md (+{len(result.files) - 2} charts)"))
    _exit(len(result.errors), result.runs)


@cli.command(short_help="Wait until a server is ready, reading its log, URL and process.")
@click.option("--log", "log", default=None, type=click.Path(dir_okay=False, allow_dash=True, path_type=str),
              metavar="FILE|-", help="The server's log file (it may not exist yet); - reads standard input as it "
                                     "comes (`kubectl logs -f POD | firedup wait --log -`). Optional with --url or --pid.")
@click.option("--url", default=None, metavar="URL",
              help="Probe this URL's status code once a second: 200 is ready (e.g. http://127.0.0.1:30000/health).")
@click.option("--pid", type=int, default=None, metavar="PID",
              help="The server's process: its start is the run's launch (measured), its death ends the wait "
                   "(exit 3); its process tree and GPUs, sampled every second, tell importing, reading weights, compiling, "
                   "GPU busy, allocating and idle apart.")
@click.option("--timeout", "timeout", default="auto", show_default=True, metavar="DURATION|auto|never",
              help="Give up after this long (900, 90s, 1m30s, 15min, 1h); 0 checks once, as kubectl wait; "
                   "never: no limit. auto: the budget from history runs of the same config, else 30 min.")
@click.option("--history", "history", multiple=True, metavar="PATH",
              help="Earlier logs (files or folders) of this server, for the ETA, the auto timeout and stall "
                   "warnings. Repeatable.")
@store_option("Also use the history store as history: bare --store for the default one "
              "($FIREDUP_STORE or the user data dir), or --store=DIR (or a bucket URL).")
@click.option("--stall-after", type=Duration(), default=None, metavar="DURATION|never",
              help="Warn after this long without log output (default: the phase's longest silence in history, "
                   "at least 30 s; 180 s without history); never: no stall warning.")
@click.option("--url-grace", type=Duration(), default="30", show_default=True, metavar="DURATION|never",
              help="After the log's ready line, how long the URL may take to answer 200 before it is called "
                   "wrong (exit 1); never: wait for it.")
@click.option("--engine", default=None, metavar="NAME", help=ENGINE_HELP)
@click.option("--from-end", is_flag=True,
              help="Ignore what the log already holds: wait for a startup that begins after now "
                   "(for a log appended across restarts).")
@click.option("--quiet", "-q", is_flag=True, help="No status line or phase lines; warnings and the verdict only.")
@click.option("--no-inspect", is_flag=True, help="Never look at the server's process tree (/proc, NVML, nvidia-smi).")
@click.option("--record", default=None, type=click.Path(dir_okay=False, path_type=str), metavar="FILE",
              help="Also write the outcome as JSON: exit code, headline, the run (as parse --json), the engine's "
                   "own start-up figures and what they agree with, the process tree's last state and what it did.")
@click.option("--ingest", is_flag=True,
              help="When the wait ends, add the log's start-ups to the history store (--store's, else the default "
                   "one), with the launch --pid measured: budgets from that history count from measured launches.")
def wait(log: str | None, url: str | None, pid: int | None, timeout: str, history: tuple[str, ...],
         store: str | None, stall_after: float | None, url_grace: float, engine: str | None, from_end: bool,
         quiet: bool, no_inspect: bool, record: str | None, ingest: bool) -> None:
    """Wait until a server is ready, reading its log (and URL, and process) as it starts.

    \b
    Exit codes: 0 ready, 124 timed out while the server was busy (or not
    inspected), 4 timed out while its process tree sat idle (stuck, or
    waiting on a peer), 3 crashed or died before ready (with the
    diagnosis), 2 usage error, 1 other (e.g. the log says ready but --url
    never answers 200: a wrong port or URL).
    """
    color = _use_color(sys.stderr)
    sys.exit(api.wait(log, url=url, pid=pid, timeout=timeout, history=history, store=store, stall_after=stall_after,
                      url_grace=url_grace, engine=engine, from_end=from_end, quiet=quiet, inspect=not no_inspect,
                      record=record, ingest=ingest, out=_SafeStream(sys.stdout),  # type: ignore[arg-type]
                      err=_SafeStream(sys.stderr), style=_style(color and _use_color())))  # type: ignore[arg-type]


@cli.command(short_help="Re-enact a recorded start-up: its log at pace, its HTTP answers.")
@click.argument("log", type=click.Path(dir_okay=False, path_type=str))
@refuses_store("it re-enacts one LOG file")
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=str), metavar="FILE",
              help="Write the log's lines here, at their original pace / --speed.")
@click.option("--speed", type=float, default=1.0, show_default=True, metavar="N",
              help="Replay N times faster (a finite number above 0).")
@click.option("--port", type=click.IntRange(0, 65535), default=None, metavar="P",
              help="Serve HTTP on 127.0.0.1:P (default: the port the log names, else the engine's default; "
                   "0 = any free port).")
@click.option("--server-version", default=None, metavar="VERSION",
              help="The engine version whose HTTP semantics to serve (default: read from the log's shape).")
@click.option("--hold", type=Duration(never_value=None), default=None, metavar="DURATION|never",
              help="After the last line, keep serving this long (90, 90s, 15min; default, or never: until "
                   "interrupted).")
@click.option("--launch-delay", type=Duration(allow_never=False), default=None, metavar="DURATION",
              help="Hold the log back this long after starting (log time: divided by --speed), as a real "
                   "server's imports do (20-30 s): a wait loop started with the replay counts from the launch.")
@click.option("--split-writes", type=Duration(allow_never=False), default=None, metavar="DURATION",
              help="Write each line in two flushes this far apart (wall time), as a server with block-buffered "
                   "output does: a wait loop must read lines, not chunks.")
@click.option("--now", is_flag=True, default=False,
              help="Restamp each line with the moment it is written (this machine's clock; the log's own first "
                   "stamp is said): `wait --pid` of the replay then measures its launch.")
@click.option("--engine", default=None, metavar="NAME", help=ENGINE_HELP)
def replay(log: str, out: str, speed: float, port: int | None, server_version: str | None, hold: float | None,
           launch_delay: float | None, split_writes: float | None, now: bool, engine: str | None) -> None:
    """Re-enact a recorded startup: write its log at pace and serve its HTTP answers.

    \b
    Nothing listens on the port before the log shows it open; then the health
    endpoint answers as that engine version's did (503 with an empty body until
    the ready line, say, or connection refused), a readiness endpoint where the
    version has one, and /v1/models and the like as soon as the port opens. The
    process exits as the server did: 137 (SIGKILL) or 1 for a crash.
    """
    sys.exit(api.replay(log, out, speed=speed, port=port, server_version=server_version, hold=hold,
                        launch_delay=launch_delay or 0.0, split_writes=split_writes or 0.0, now=now,
                        engine=engine))


_with_examples(cli)


def main() -> None:
    """Entry point: user errors become one line on stderr and an exit code, never a traceback."""
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(EXIT_OK)
    except KeyboardInterrupt:
        sys.exit(130)


__all__ = ["FiredupGroup", "cli", "main"]

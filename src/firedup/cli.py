"""The command line: each command is a few lines over a library function."""

from __future__ import annotations

import json
import sys

import click

from firedup import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="firedup")
def cli() -> None:
    """Profile the startup of LLM inference servers (SGLang, vLLM) from their logs."""


@cli.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the machine-readable contract.")
@click.option("--engine", default=None, help="Force the log format instead of sniffing it.")
def parse(paths: tuple[str, ...], as_json: bool, engine: str | None) -> None:
    """Parse logs into runs, milestones and phases."""
    from firedup.parse import parse_paths

    result = parse_paths(paths, engine=engine)
    for err in result.errors:
        click.echo(str(err), err=True)
    click.echo(json.dumps(result.as_contract(), indent=1))
    sys.exit(1 if result.errors else 0)


def main() -> None:
    cli()

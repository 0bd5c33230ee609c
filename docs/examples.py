"""The README's and docs' examples are real output: rerun every ```console block and rewrite it.

    python docs/examples.py          # rewrite the blocks of README.md and docs/*.md in place
    python docs/examples.py --check  # exit 1 and show the first difference when one is stale
    python docs/examples.py docs/x.md  # only these pages

A ```console block whose first line is a command (`$ firedup ...`, `$ python -c ...`) is an
example: each `$ ` line in it is a command, run by bash in a scratch folder that holds a copy of
sample_logs/ and docs/data/ (and ../shared as shared/, when it is next to the checkout), with COLUMNS=80 unless
the command sets it, and the lines up to the next `$ ` are its output (stdout and stderr, as a
terminal shows them). The blocks of one page run in order in one scratch folder, so an `ingest`
is seen by the `find` after it. Output that cannot be the same twice is written as a placeholder:
the scratch folder as `.`, today's date as `YYYY-MM-DD`. Blocks in ```sh or ```text are not run
(a live server, a GPU log that is not in this repository): the page says so where it shows them.
tests/test_docs.py runs the check; `firedup` is this checkout's (`python -m firedup`).
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
BLOCK = re.compile(r"^```console\n(.*?)^```$", re.S | re.M)
COMMAND = re.compile(r"^\$ ")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def examples(text: str) -> Iterator[tuple[re.Match[str], list[tuple[str, str]]]]:
    """Each example block and its (command, shown output) pairs."""
    for match in BLOCK.finditer(text):
        lines = match.group(1).split("\n")[:-1]
        if not lines or not COMMAND.match(lines[0]):
            continue
        pairs: list[tuple[str, list[str]]] = []
        for line in lines:
            if line.startswith("$ "):
                pairs.append((line[2:], []))
            else:
                pairs[-1][1].append(line)
        yield match, [(command, "\n".join(out)) for command, out in pairs]


def needs_shared(command: str) -> bool:
    return "shared/" in command


def scratch() -> Path:
    """A folder like a fresh clone's root for the examples: sample_logs/ (a copy: `synth` writes
    into it), shared/ when it exists."""
    folder = Path(tempfile.mkdtemp(prefix="firedup-docs-"))
    shutil.copytree(ROOT / "sample_logs", folder / "sample_logs")
    shutil.copytree(ROOT / "docs" / "data", folder / "docs" / "data")  # inputs made for an example
    if SHARED.is_dir():
        (folder / "shared").symlink_to(SHARED)
    bin_dir = folder / ".bin"
    bin_dir.mkdir()
    shim = bin_dir / "firedup"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m firedup "$@"\n')
    shim.chmod(0o755)
    python = bin_dir / "python"  # `$ python -c ...` examples run this interpreter, with this checkout's firedup
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    return folder


def run(command: str, folder: Path) -> str:
    """One command as a user's shell runs it, its output with the placeholders."""
    env = {k: v for k, v in os.environ.items() if k not in ("LINES", "NO_COLOR", "FIREDUP_STORE")}
    env.update(COLUMNS="80", PYTHONPATH=str(ROOT / "src"), MPLBACKEND="Agg", TZ="UTC",
               PATH=f"{folder / '.bin'}{os.pathsep}{env.get('PATH', '')}",
               FIREDUP_STORE=str(folder / ".store"))
    proc = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    return placeholders(proc.stdout + proc.stderr, folder).rstrip("\n")


def placeholders(text: str, folder: Path) -> str:
    text = text.replace(str(folder) + "/", "").replace(str(folder), ".")
    return text.replace(_dt.date.today().isoformat(), "YYYY-MM-DD")


def refresh(page: Path, folder: Path) -> str:
    """The page with every example's output rerun."""
    text = page.read_text()
    out, last = [], 0
    for match, pairs in examples(text):
        if any(needs_shared(c) for c, _ in pairs) and not SHARED.is_dir():
            continue
        body = "\n".join(f"$ {command}\n{run(command, folder)}".rstrip("\n") for command, _ in pairs)
        out.append(text[last:match.start(1)] + body + "\n")
        last = match.end(1)
    return "".join(out) + text[last:]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    only = {(ROOT / a).resolve() for a in argv if not a.startswith("--")}  # pages named: only those
    stale = 0
    for page in pages():
        if only and page.resolve() not in only:
            continue
        folder = scratch()
        try:
            new = refresh(page, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        if new == page.read_text():
            continue
        if check:
            import difflib

            stale += 1
            sys.stdout.writelines(difflib.unified_diff(page.read_text().splitlines(True), new.splitlines(True),
                                                       str(page), "rerun", n=1))
        else:
            page.write_text(new)
            print(f"rewrote {page.relative_to(ROOT)}")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""parse_paths on bad input: every bad file is one clear line in `errors`, every good file is
still parsed, and nothing raises."""

from __future__ import annotations

import ast
import gzip
import json
import tempfile
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firedup.timeline.pipeline import parse_paths

GOOD = (Path(__file__).resolve().parent / "fixtures" / "crash" / "ready_tp1.log").read_text()
FIFTY_MB = 50 * 1024 * 1024


def busy_log(lines: int) -> str:
    """A long, varied log (runtime batch lines) that gzip cannot squeeze to nothing."""
    out = [GOOD]
    for i in range(lines):
        out.append(f"[2025-08-31 18:{i // 60 % 60:02d}:{i % 60:02d}] Decode batch. #running-req: {i % 97}, "
                   f"#token: {i * 7919 % 100003}, token usage: 0.{i % 100:02d}, gen throughput (token/s): {i % 523}.{i % 10}\n")
    return "".join(out)


def truncated_gzip(path: Path) -> int:
    """Write a .gz cut in the middle; return how many whole lines it still holds."""
    whole = gzip.compress(busy_log(20000).encode())
    cut = whole[: len(whole) // 2]
    path.write_bytes(cut)
    readable = zlib.decompressobj(wbits=31).decompress(cut)
    return readable.count(b"\n")


@pytest.fixture
def mixed_dir(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A directory holding two good logs and one of every kind of bad one (the reason each
    must give, as written by hand)."""
    (tmp_path / "good.log").write_text(GOOD)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "good.log.gz").write_bytes(gzip.compress(GOOD.encode()))
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "binary.log").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    (tmp_path / "endless.log").write_bytes(b"x" * FIFTY_MB)
    lines = truncated_gzip(tmp_path / "cut.log.gz")
    garbage = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03this is not deflate data"
    (tmp_path / "garbage.gz").write_bytes(garbage)
    try:
        zlib.decompressobj(wbits=31).decompress(garbage)
    except zlib.error as exc:  # zlib's own words for what is wrong, e.g. "invalid block type"
        zlib_says = str(exc).split(": ", 1)[1]
    reasons = {
        "empty.log": "empty file",
        "binary.log": "not a text log: binary data (NUL byte at offset 7)",
        "endless.log": "a line longer than 8 MB: not a line-oriented text log",
        "cut.log.gz": f"truncated gzip: the stream ends after line {lines}",
        "garbage.gz": f"corrupt gzip data ({zlib_says})",
    }
    return tmp_path, reasons


def test_a_directory_mixing_good_and_bad_files(mixed_dir: tuple[Path, dict[str, str]]) -> None:
    folder, reasons = mixed_dir
    result = parse_paths([str(folder)])
    got = {Path(e.source).name: e.reason for e in result.errors}
    assert got == reasons
    for error in result.errors:
        assert "\n" not in str(error)
        assert str(error).startswith(error.source)
    # both good files parsed in full, plus whatever the truncated .gz held before its cut
    good = [r for r in result.runs if Path(r.source).name in ("good.log", "good.log.gz")]
    assert [r.outcome for r in good] == ["ready", "ready"]
    assert all(r.ready_ts is not None and r.ready_ts.iso == "2025-08-31T17:49:40" for r in good)


def test_the_line_of_an_endless_line_is_named(mixed_dir: tuple[Path, dict[str, str]]) -> None:
    folder, _ = mixed_dir
    (error,) = parse_paths([str(folder / "endless.log")]).errors
    assert error.line == 1
    assert str(error) == f"{folder / 'endless.log'}:1: a line longer than 8 MB: not a line-oriented text log"


def test_a_long_line_after_good_lines_keeps_the_startup_before_it(tmp_path: Path) -> None:
    path = tmp_path / "tail-junk.log"
    path.write_bytes(GOOD.encode() + b"y" * (9 * 1024 * 1024))
    result = parse_paths([str(path)])
    lines = GOOD.count("\n")
    assert [(e.line, e.reason) for e in result.errors] == [(lines + 1, "a line longer than 8 MB: not a line-oriented text log")]
    assert [r.outcome for r in result.runs] == ["ready"]


def test_a_truncated_gzip_keeps_the_startup_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "rotated.log.gz"
    lines = truncated_gzip(path)
    result = parse_paths([str(path)])
    assert [e.reason for e in result.errors] == [f"truncated gzip: the stream ends after line {lines}"]
    (run,) = result.runs
    assert run.outcome == "ready"  # the startup sits in the first lines, before the cut
    assert any("stops early" in w for w in run.warnings)
    assert result.sources[0].lines["physical"] == lines


def test_a_gzip_cut_inside_its_first_block_is_an_error_without_runs(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gz"
    path.write_bytes(gzip.compress(GOOD.encode())[:40])
    result = parse_paths([str(path)])
    assert result.runs == []
    assert [e.reason for e in result.errors] == ["truncated gzip: the stream ends before the first line"]


def test_a_file_of_blank_lines_is_read_without_runs_or_errors(tmp_path: Path) -> None:
    path = tmp_path / "blank.log"
    path.write_text("\n\n   \n")
    result = parse_paths([str(path)])
    assert (result.runs, result.errors) == ([], [])
    assert result.sources[0].lines["physical"] == 3


def test_unknown_engine_is_the_callers_mistake() -> None:
    with pytest.raises(ValueError, match="unknown engine 'tgi'"):
        parse_paths(["whatever.log"], engine="tgi")


def test_a_pool_of_processes_gives_the_same_runs_errors_and_order(mixed_dir: tuple[Path, dict[str, str]]) -> None:
    """Many files go to worker processes: the result must not tell. The reasons are the
    hand-written ones, whichever process read the file."""
    folder, reasons = mixed_dir
    for i in range(12):
        (folder / f"more-{i:02d}.log").write_text(GOOD.replace("2025-08-31", f"2025-09-{i + 1:02d}"))
    seen: list[tuple[int, int]] = []
    pooled = parse_paths([str(folder)], jobs=2, progress=lambda i, n, name: seen.append((i, n)))
    alone = parse_paths([str(folder)], jobs=1)
    assert {Path(e.source).name: e.reason for e in pooled.errors} == reasons
    assert [(e.source, e.reason, e.line) for e in pooled.errors] == [(e.source, e.reason, e.line) for e in alone.errors]
    assert pooled.as_contract() == alone.as_contract()
    assert [r.ready_ts.iso if r.ready_ts else None for r in pooled.runs if "more-" in r.source] == \
        [f"2025-09-{i + 1:02d}T17:49:40" for i in range(12)]
    assert [i for i, _n in seen] == list(range(len(seen)))  # progress in order, to the end
    assert seen[-1][0] == seen[-1][1]


def test_streamed_json_is_the_contract_json_of_the_whole_result(mixed_dir: tuple[Path, dict[str, str]]) -> None:
    """`parse --json` streams (runs encoded by the worker that parsed them, written as they come):
    the very text `write_contract_json` gives for the whole result, errors and sources included,
    with a pool and without, and the counts the exit code needs."""
    import io

    from firedup.timeline.pipeline import write_contract_json, write_parse_json

    folder, reasons = mixed_dir
    for i in range(12):
        (folder / f"more-{i:02d}.log").write_text(GOOD.replace("2025-08-31", f"2025-09-{i + 1:02d}"))
    whole = parse_paths([str(folder), str(folder / "missing.log")], jobs=1)
    expected = io.StringIO()
    write_contract_json(whole, expected)
    for jobs in (1, 2):
        out = io.StringIO()
        streamed = write_parse_json([str(folder), str(folder / "missing.log")], out, jobs=jobs)
        assert out.getvalue() == expected.getvalue()
        assert streamed.run_count == len(whole.runs) > 12
        assert [e.reason for e in streamed.errors] == [e.reason for e in whole.errors]
        assert len(streamed.errors) == len(reasons) + 1


@pytest.mark.parametrize("in_memory", [0, 30_000, 10**9])
def test_streamed_runs_wait_in_memory_or_in_a_file_alike(monkeypatch: pytest.MonkeyPatch, in_memory: int) -> None:
    """The encoded runs wait for the twin rules in memory up to a size, then in a file: the same
    text whichever, also where the spill comes mid-way and where the twin rules change runs
    (the samples' cold and warm starts)."""
    import io

    from firedup.timeline import pipeline

    sample = Path(__file__).resolve().parents[1] / "sample_logs"
    expected = io.StringIO()
    pipeline.write_contract_json(parse_paths([str(sample)], jobs=1), expected)
    monkeypatch.setattr(pipeline, "_SPOOL_IN_MEMORY", in_memory)
    changed: list[int] = []
    real_verdicts = pipeline.twin_verdicts

    def verdicts(facts: Any) -> Any:
        found = real_verdicts(facts)
        changed.append(len(found))
        return found

    monkeypatch.setattr(pipeline, "twin_verdicts", verdicts)
    out = io.StringIO()
    pipeline.write_parse_json([str(sample)], out, jobs=1)
    assert out.getvalue() == expected.getvalue()
    assert changed and changed[0] > 0  # some runs were encoded again


def test_a_runs_caches_are_found_in_its_encoded_text_or_said_unknown() -> None:
    """The twin rules change a run's caches alone: the parent splices their new value into the
    run's text at the span the worker gave (`_encoded_run`). The span holds exactly the caches'
    encoding, in the very text of the whole run; a run whose text holds the span's mark (a log
    line can) or a value only `json_text` writes (NaN) gives no span, and the whole text."""
    import math

    from firedup.timeline import pipeline

    sample = Path(__file__).resolve().parents[1] / "sample_logs"
    runs = parse_paths([str(sample)], jobs=1).runs
    encode = pipeline._encoder()
    for run in runs:
        text, span = pipeline._encoded_run(run)
        assert text == encode(run.as_contract())
        assert span is not None and text[span[0]:span[1]] == encode(run.as_contract()["caches"])
    hostile = runs[0]
    hostile.warnings.append(f"a log line holding {pipeline._CACHES_MARK} inside")  # not the mark's JSON
    text, span = pipeline._encoded_run(hostile)
    assert text == encode(hostile.as_contract())
    assert span is not None and text[span[0]:span[1]] == encode(hostile.as_contract()["caches"])
    hostile.warnings.append(pipeline._CACHES_MARK)  # the mark's very JSON, before the caches
    text, span = pipeline._encoded_run(hostile)
    assert span is None and text == encode(hostile.as_contract())
    odd = runs[1]
    odd.config["nan_flag"] = math.nan
    text, span = pipeline._encoded_run(odd)
    assert span is None and text == encode(odd.as_contract()) and '"nan_flag": null' in text


def test_a_streamed_parse_of_a_small_log_creates_no_temporary_file() -> None:
    """A parse of a log or a few holds its runs in memory: no `tempfile` import (~3 ms of every
    `parse --json`), no file created."""
    import subprocess
    import sys

    sample = Path(__file__).resolve().parents[1] / "sample_logs" / "small-tp1.log"
    code = ("import io, sys; from firedup.timeline.pipeline import write_parse_json; out = io.StringIO(); "
            "write_parse_json([sys.argv[1]], out); print(len(out.getvalue()) > 100, 'tempfile' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(sample)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False"]


def test_streamed_json_refuses_an_unknown_engine_before_writing_anything() -> None:
    import io

    from firedup.timeline.pipeline import write_parse_json

    out = io.StringIO()
    with pytest.raises(ValueError, match="unknown engine 'tgi'"):
        write_parse_json(["whatever.log"], out, engine="tgi")
    assert out.getvalue() == ""


def test_a_bug_in_one_file_is_its_error_line_and_the_batch_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unexpected exception while reading one file is that file's one-line error (which
    says how to get the traceback); FIREDUP_DEBUG=1 lets it through with its traceback."""
    from firedup.timeline import pipeline

    (tmp_path / "a.log").write_text(GOOD)
    (tmp_path / "b.log").write_text(GOOD)
    real = pipeline.parse_source

    def flaky(source: Any, *args: Any, **kwargs: Any) -> Any:
        if source.name.endswith("a.log"):
            raise KeyError("boom")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pipeline, "parse_source", flaky)
    monkeypatch.delenv("FIREDUP_DEBUG", raising=False)
    result = parse_paths([str(tmp_path)], jobs=1)
    assert [e.reason for e in result.errors] == [
        "internal error (KeyError: 'boom'); please report it (rerun with FIREDUP_DEBUG=1 for the traceback)"]
    assert len(result.runs) == 1
    monkeypatch.setenv("FIREDUP_DEBUG", "1")
    with pytest.raises(KeyError, match="boom"):
        parse_paths([str(tmp_path)], jobs=1)


def test_firedup_wait_outputs_beside_the_logs_are_skipped_with_a_note(tmp_path: Path) -> None:
    """`firedup wait ... > server.wait.txt 2>&1` quotes the log's lines (its crash, its stages):
    read as a log it was one more start-up (issue 44). Its notes and its --record JSON are
    firedup's own outputs: skipped, said as a note, never a run or an error."""
    from firedup.render.answers import unread_lines

    (tmp_path / "server.log").write_text(GOOD)
    (tmp_path / "server.wait.txt").write_text("firedup wait: following server.log; timeout 4 min 00 s\n" + GOOD)
    (tmp_path / "server.wait.json").write_text('{\n "exit_code": 3,\n "headline": "CRASHED",\n "log": '
                                               + repr(GOOD).replace("'", '"') + "\n}\n")
    result = parse_paths([str(tmp_path)], all_files=True)
    assert [r.source for r in result.runs] == [str(tmp_path / "server.log")]
    assert result.errors == []
    notes = unread_lines(result)
    assert len(notes) == 2 and all(n.startswith("note: ") and "firedup's own output" in n for n in notes)
    assert {"server.wait.txt", "server.wait.json"} == {Path(n.split(": ")[1]).name for n in notes}


@pytest.mark.parametrize("scanner", ["batch", "incremental"])
def test_firedup_wait_output_is_skipped_by_either_engine(tmp_path: Path, scanner: str) -> None:
    """The batch engine's look at a file's head (`_batch_head`) is also where its first bytes
    tell firedup's own output: a `wait` transcript the batch engine would read is still skipped."""
    from firedup.read.sources import expand_inputs
    from firedup.timeline.pipeline import OWN_OUTPUT, parse_source

    (tmp_path / "server.wait.txt").write_text("firedup wait: following server.log; timeout 4 min 00 s\n" + GOOD)
    [source], _ = expand_inputs([str(tmp_path / "server.wait.txt")])
    runs, report = parse_source(source, scanner=scanner)
    assert runs == [] and report.skipped is not None and report.skipped.startswith(OWN_OUTPUT)


# --- every value an args dump holds reaches `parse --json` ------------------------------------------

_VLLM = Path(__file__).resolve().parent.parent / "sample_logs" / "vllm-warm-start.log"
_SCALARS = (st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(st.characters(exclude_categories=("Cs",)), max_size=12))
# What `ast.literal_eval` reads from a dump and JSON has no type for: sets (of one kind, so they
# sort), bytes, complex numbers.
_SETS = st.sets(st.integers(-1000, 1000), max_size=4) | st.sets(st.text(max_size=6), max_size=4)
_ODD = st.binary(max_size=6) | st.complex_numbers(allow_nan=False, allow_infinity=False, max_magnitude=1e6)
_VALUES = st.recursive(_SCALARS | _SETS | _ODD, lambda inner: st.lists(inner, max_size=3)
                       | st.lists(inner, max_size=3).map(tuple)
                       | st.dictionaries(st.text(max_size=6), inner, max_size=3)
                       | st.dictionaries(st.tuples(st.integers(0, 9), st.integers(0, 9)), inner, max_size=2),
                       max_leaves=8)


def _as_json(value: Any) -> Any:
    """What `parse --json` writes for a flag's value: a set as a sorted list, a tuple as a list,
    bytes and complex numbers as their text, a key JSON cannot hold (a tuple) as its text."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, (list, tuple)):
        return [_as_json(v) for v in value]
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _as_json(v) for k, v in value.items()}
    if isinstance(value, (bytes, complex)):
        return str(value)
    return value


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_VALUES)
def test_every_value_of_an_args_dump_is_written_by_parse_json(value: Any) -> None:
    """A vLLM flag printed as a set (`{'a.com', 'b.com'}` in `non-default args`) made `parse
    --json` raise TypeError: the run's encoder had no `default=`. Every value the config parser
    reads comes back from `json.loads` (sets as sorted lists)."""
    from click.testing import CliRunner

    from firedup.cli import cli

    lines = _VLLM.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "non-default args: {" in line)
    lines[at] = lines[at].replace("non-default args: {", f"non-default args: {{'x_flag': {value!r}, ", 1)
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "vllm.log"
        log.write_text("".join(lines), encoding="utf-8")
        result = CliRunner().invoke(cli, ["parse", str(log), "--json"])
    assert result.exit_code == 0 and result.exception is None, result.output
    read = ast.literal_eval(repr(value))  # what the dump says (`(-0+0j)` reads as 0j)
    assert json.loads(result.output)["runs"][0]["config"]["x_flag"] == _as_json(read)


@given(text=st.text(alphabet="ab\n\r", max_size=40), count=st.integers(0, 12))
def test_the_first_lines_of_a_head_are_those_a_split_keeps(text: str, count: int) -> None:
    """`pipeline._first_lines` finds the `count`-th newline and splits only up to it: the lines
    `text.split("\\n", count)[:count]` gives, for texts of fewer, as many and more lines."""
    from firedup.timeline.pipeline import _first_lines

    assert _first_lines(text, count) == text.split("\n", count)[:count]

"""The plain-text timeline view."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import sample_truth
from firedup.render.text import timeline_text
from firedup.timeline.pipeline import parse_paths

CRASH_IN_CAPTURE = """\
[2026-11-07 04:28:48] server_args={'model_path': 'm', 'tp_size': 2}
[2026-11-07 04:28:50 TP0] Memory pool end. avail mem=8.40 GB
[2026-11-07 04:29:09 TP0] Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, avail mem=6.20 GB
[2026-11-07 04:29:29 TP0] Scheduler hit an exception: Traceback (most recent call last):
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
"""


def test_a_phase_cut_by_a_crash_says_so_within_80_columns(tmp_path: Path) -> None:
    # Bug: the row ended "timestamps, never " once open phases got a duration: 85 columns cut to 80.
    path = tmp_path / "crash.log"
    path.write_text(CRASH_IN_CAPTURE)
    [run] = parse_paths([str(path)]).runs
    text = timeline_text(run)
    [row] = [line for line in text.splitlines() if "cuda_graph (verify)" in line]
    assert row.rstrip().endswith("timestamps, no end") and len(row) <= 80
    assert "20 s" in row


def _sample_and_corpus_logs() -> list[str]:
    from conftest import SAMPLE_LOGS, corpus_logs

    return [str(SAMPLE_LOGS)] + [str(p) for p in corpus_logs("sglang") + corpus_logs("vllm")]


def test_every_timeline_fits_80_columns_but_the_file_name() -> None:
    result = parse_paths(_sample_and_corpus_logs())
    assert len(result.runs) >= 14
    for run in result.runs:
        lines = timeline_text(run).splitlines()
        assert lines[0].startswith(("READY", "CRASHED", "HUNG", "ENGINE READY", "INCOMPLETE"))  # the answer first
        head = 2 if lines[1].endswith(" from launch") else 1  # the second clock on a line of its own
        assert lines[head].startswith("  " + run.source)  # then the file, however long its path
        too_wide = [line for i, line in enumerate(lines) if len(line) > 80 and i != head]
        assert not too_wide, (run.source, too_wide)


def _run_on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """Run firedup with stdout on a pseudo-terminal, as a user at a shell would; `env` is
    the child's whole environment."""
    import os
    import pty
    import subprocess
    import sys

    from conftest import ROOT

    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "firedup", *args], stdout=follower, stderr=subprocess.DEVNULL,
                            env={**env, "PYTHONPATH": str(ROOT / "src")})
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process is done
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode()


def test_colour_only_on_a_terminal_and_never_with_no_color(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from conftest import ROOT, SAMPLE_LOGS

    log = str(SAMPLE_LOGS / "small-tp1.log")
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    assert "\x1b[" in _run_on_a_terminal(["timeline", log], env)
    assert "\x1b[" not in _run_on_a_terminal(["timeline", log], {**env, "NO_COLOR": "1"})
    piped = subprocess.run([sys.executable, "-m", "firedup", "timeline", log], capture_output=True, text=True,
                           env={**env, "PYTHONPATH": str(ROOT / "src")}, check=True)
    assert "READY" in piped.stdout and "\x1b[" not in piped.stdout


def test_a_rank_waiting_at_the_barrier_is_not_a_kv_cache_straggler(tmp_path: Path) -> None:
    # Bug: TP1 loaded its weights 9 s early, then waited for TP0 before the pools; its
    # "kv_cache" (from its own load end to the pool's end) was marked as the straggler.
    path = tmp_path / "tp2.log"
    path.write_text(
        "[2026-02-01 10:00:00 TP0] Load weight begin. avail mem=78.00 GB\n"
        "[2026-02-01 10:00:00 TP1] Load weight begin. avail mem=78.00 GB\n"
        "[2026-02-01 10:00:51 TP1] Load weight end. type=M, dtype=torch.bfloat16, avail mem=60.00 GB\n"
        "[2026-02-01 10:01:00 TP0] Load weight end. type=M, dtype=torch.bfloat16, avail mem=60.00 GB\n"
        "[2026-02-01 10:01:00 TP0] Memory pool end. avail mem=9.00 GB\n"
        "[2026-02-01 10:01:00 TP1] Memory pool end. avail mem=9.00 GB\n")
    [run] = parse_paths([str(path)]).runs
    [row] = [line for line in timeline_text(run).splitlines() if line.strip().startswith("kv_cache")]
    # the rank to blame is the last one in (TP0, 9 s after TP1), not TP1 that waited for it
    assert "9.0 s" in row and "TP0 last in, +9.0 s" in row and "TP1" not in row and "straggler" in row


def test_vllm_umbrella_timers_are_marked_and_never_the_biggest_phase() -> None:

    from conftest import SAMPLE_LOGS
    from firedup.core.units import fmt_duration
    from firedup.render.text import parse_table_text

    names = ("vllm-tp2-compiled.log", "vllm-tp2-eager.log")
    runs = parse_paths([str(SAMPLE_LOGS / n) for n in names]).runs
    truth = sample_truth()["files"]
    summary = parse_table_text(runs).splitlines()
    # the biggest step, not vLLM's timer around it: compile in the default run, weights when eager
    compiled = truth["vllm-tp2-compiled.log"]["runs"][0]["reported"]["torch_compile"]["TP0"]
    eager = truth["vllm-tp2-eager.log"]["runs"][0]["reported"]["load_weights"]["TP0"]
    assert any(f"torch_compile {fmt_duration(compiled)}" in line and names[0] in line for line in summary)
    assert any(f"load_weights {fmt_duration(eager)}" in line and names[1] in line for line in summary)
    text = timeline_text(runs[0])
    marked = [line.split()[-3] for line in text.splitlines() if " * " in line and line.endswith("reported")]
    assert sorted(marked) == ["engine_init", "model_loading"]
    assert "* engine_init spans torch_compile, kv_cache, cuda_graph; model_loading" in text
    assert "torch_compile *" not in text


# --- `firedup parse`: one line per run, fitted to the terminal -------------------------------


def _name_kept(cell: str, name: str) -> bool:
    """The source cell is the name, or the name cut in the middle: its start and its end kept."""
    head, cut, tail = cell.partition("…")
    return cell == name or (bool(cut) and name.startswith(head) and name.endswith(tail) and len(head) >= 8)


@pytest.mark.parametrize("width", [60, 80, 100])
def test_parse_summary_fits_the_width_and_says_the_shared_folder_once(width: int) -> None:
    """sample_logs/ rows run to 94 columns with the folder: fitted, the folder is said once below."""
    from conftest import SAMPLE_LOGS
    from firedup.render.text import parse_table_text

    runs = parse_paths([str(SAMPLE_LOGS)]).runs
    assert max(len(line) for line in parse_table_text(runs).splitlines()) > width  # there is something to fit
    lines = parse_table_text(runs, width=width).splitlines()
    assert all(len(line) <= width for line in lines), width
    assert lines[0].startswith(f"{len(runs)} runs: ")  # the answer first
    assert lines[-1] == f"(sources in {SAMPLE_LOGS}/)"
    assert lines[-2] == "(~: launch estimated, see docs/launch.md)"  # the second clock's note
    at = lines[1].index("source")
    for row, run in zip(lines[2:-2], runs, strict=True):
        where = f"#{run.run_index + 1} " if run.run_index else ""
        assert row.split()[0] == run.outcome
        assert row[at:].startswith(where) and _name_kept(row[at + len(where):], Path(run.source).name), row


def test_parse_summary_cuts_long_corpus_names_in_the_middle() -> None:
    """The corpus' names are up to 73 characters: at 80 columns each keeps its number and its end."""
    from conftest import corpus_logs
    from firedup.render.text import parse_table_text

    logs = corpus_logs("sglang")
    if not logs:
        pytest.skip("no corpus (../shared)")
    runs = parse_paths([str(p) for p in logs]).runs
    lines = parse_table_text(runs, width=80).splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[-1] == f"(sources in {logs[0].parent}/)"
    cells = [row[lines[1].index("source"):] for row in lines[2:2 + len(runs)]]
    assert all(_name_kept(cell.removeprefix(f"#{run.run_index + 1} " if run.run_index else ""), Path(run.source).name)
               for cell, run in zip(cells, runs, strict=True))
    assert sum("…" in cell for cell in cells) > len(runs) / 2
    # a width that holds every path: the lines are as they were, whole paths and no folder line
    wide = parse_table_text(runs, width=300)
    assert wide == parse_table_text(runs) and all(str(run.source) in wide for run in runs)


def test_the_rank_slow_to_load_is_blamed_at_the_kv_barrier_not_the_ranks_that_waited() -> None:
    """TP0 ends its load 7-8 s after TP1-TP3 (who then wait at the KV pool barrier)."""
    path = Path(__file__).resolve().parent / "fixtures" / "logs2026" / "sglang_tp4_slow_load_waits_at_kv.log"
    [run] = parse_paths([str(path)]).runs
    text = timeline_text(run)
    [row] = [line for line in text.splitlines() if line.strip().startswith("kv_cache") and "last in" in line]
    assert "TP0 last in, +8.0 s" in row and "straggler" in row
    assert not any(f"TP{r}" in row for r in (1, 2, 3))
    # the run's critical path waits for the last rank in, so the wait is not counted twice
    kv = [p for p in run.run_phases() if p.name == "kv_cache"]
    assert [p.seconds for p in kv] == [0.0]


def test_a_hang_is_said_as_a_hang_not_a_crash() -> None:
    path = Path(__file__).resolve().parent / "fixtures" / "logs2026" / "sglang_hang_health_503.log"
    [run] = parse_paths([str(path)]).runs
    assert run.outcome == "crashed" and run.crash is not None and run.crash.category == "hang"  # the contract's
    text = timeline_text(run)
    assert "HUNG in warmup" in text and "CRASHED" not in text


def test_a_log_with_no_year_anywhere_says_year_unknown_not_1970() -> None:
    """vLLM prints month and day only; read from a pipe there is no file date either. The
    placeholder year must not pass for a date (regression: `from 1970-03-18T06:54:54`)."""
    from firedup.read.sources import normalise
    from firedup.timeline.pipeline import LogReader

    reader = LogReader("-")  # stdin: no --date, no file, no collector prefix
    text = (Path(__file__).parent / "fixtures" / "vllm_ready.log").read_text()
    # without the lines naming the version, whose release would date the log ("version")
    raws = [raw for raw in text.splitlines() if "version" not in raw and "LLM engine (v" not in raw]
    reader.feed([line for i, raw in enumerate(raws, start=1) for line in normalise(raw, i)], force=True)
    (run,) = reader.runs()
    assert run.date_source == "unknown"
    shown = timeline_text(run)
    assert "1970" not in shown
    assert "from 06-05T09:07:30 to " in shown and "year unknown" in shown


def test_fit_lines_wraps_only_what_is_too_wide_and_keeps_every_character() -> None:
    from firedup.core.units import fit_lines

    table = "  phase      debug\n  launch     8.0 s"
    assert fit_lines(table, 80) == table and fit_lines(table, None) == table
    sentence = "  production vs debug (disable_cuda_graph=True): +11 min 10 s median time to ready, 14 % more"
    fitted = fit_lines(sentence, 40).split("\n")
    assert all(len(line) <= 40 for line in fitted) and len(fitted) > 1
    assert fitted[0].startswith("  production") and all(line.startswith("    ") for line in fitted[1:])
    assert "+11 min 10 s" in fitted[1] or "+11 min 10 s" in fitted[2]  # a duration is never cut
    assert " ".join(" ".join(fitted).split()) == " ".join(sentence.split())
    path = "/very/long/" + "x" * 100 + ".log"
    assert "".join(line.strip() for line in fit_lines(path, 30).split("\n")) == path


def test_a_crashed_runs_phase_shares_are_of_the_time_its_header_shows(tmp_path: Path) -> None:
    """The header says CRASHED after `seconds_to_end` (to the crash's line); the shares were of
    `total_seconds` (to the log's last line: two minutes of ranks shutting down here)."""
    import re

    log = tmp_path / "crash-with-tail.log"
    log.write_text(
        "[2026-11-07 10:00:00] server_args=ServerArgs(model_path='m', tp_size=1)\n"
        "[2026-11-07 10:00:01 TP0] Load weight begin. avail mem=78.00 GB\n"
        "[2026-11-07 10:00:41 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.00 GB, "
        "mem usage=18.00 GB.\n"
        "[2026-11-07 10:00:50 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "[2026-11-07 10:02:50] Received sigquit from a child process. It usually means the child failed.\n")
    (run,) = parse_paths([str(log)]).runs
    assert run.outcome == "crashed"
    assert (run.seconds_to_end, run.total_seconds) == (50.0, 170.0)
    row = next(line for line in timeline_text(run).splitlines() if re.search(r"\bload_weights\b", line))
    assert " 80.0% " in row  # 40 s of the 50 s the header shows, not 23.5 % of 170 s

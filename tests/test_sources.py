"""Reading inputs and normalising lines: one test per case a real log shows.

Every case is written as the raw bytes a collector or terminal produces, put in a real file,
and read back through `read_lines` (and, where the point is a timestamp, through the whole
parse). The expected text and times are written out by hand from the input.
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firedup.read.sources import InputError, Line, Source, expand_inputs, read_lines
from firedup.timeline.pipeline import parse_paths
from firedup.timeline.run import Run


def read(tmp_path: Path, data: bytes | str, name: str = "server.log") -> list[Line]:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return list(read_lines(Source(str(path), path)))


def texts(lines: list[Line]) -> list[str]:
    return [line.text for line in lines]


def parse_one(tmp_path: Path, text: str, default_date: dt.date | None = None, mtime_year: int | None = None) -> Run:
    path = tmp_path / "server.log"
    path.write_text(text)
    if mtime_year is not None:
        stamp = dt.datetime(mtime_year, 6, 1).timestamp()
        os.utime(path, (stamp, stamp))
    result = parse_paths([str(path)], default_date=default_date)
    assert not result.errors
    assert len(result.runs) == 1
    return result.runs[0]


def stamps(run: Run, name: str) -> list[str | None]:
    return [m.ts.iso if m.ts else None for m in run.milestones if m.name == name]


# --- colour codes ------------------------------------------------------------------------


def test_ansi_colour_codes_are_stripped(tmp_path: Path) -> None:
    lines = read(tmp_path, "\x1b[32m[2025-03-01 10:00:00 TP0]\x1b[0m Load weight begin. \x1b[1;33mavail mem=9.00 GB\x1b[0m\n")
    assert texts(lines) == ["[2025-03-01 10:00:00 TP0] Load weight begin. avail mem=9.00 GB"]


def test_cloudwatch_octal_escapes_are_stripped(tmp_path: Path) -> None:
    # AWS DJL / CloudWatch writes ESC as the four characters "#033".
    raw = "[INFO ] PyProcess - W-210-model-stdout: #033[1;36m(VllmWorker rank=1 pid=812)#033[0;0m INFO 02-22 06:35:40 [core.py:96] ok\n"
    (line,) = read(tmp_path, raw)
    assert line.text == "INFO 02-22 06:35:40 [core.py:96] ok"
    assert line.proc == "VllmWorker rank=1"


@pytest.mark.parametrize("raw", [
    "[1;36m(VllmWorker rank=1 pid=55)[0;0m INFO 02-22 06:35:40 [core.py:96] ok\n",
    # no "(" after the first code and no "[0m": the remnants must still go (regression)
    "[1;36mINFO 02-22 06:35:40 [core.py:96] ok[0;0m\n",
])
def test_bare_ansi_remnants_are_stripped(tmp_path: Path, raw: str) -> None:
    (line,) = read(tmp_path, raw)
    assert line.text == "INFO 02-22 06:35:40 [core.py:96] ok"


@settings(max_examples=300)
@given(st.lists(st.sampled_from(["\x1b", "\x1b[", "\x1b(", "#033[", "#03", "[", "]", "(", "1", "36", ";", "?", "m", "B",
                                 "a", " ", "00:03<", "%|"]), max_size=12))
def test_a_line_without_esc_loses_what_the_whole_colour_pattern_takes(parts: list[str]) -> None:
    """`_uncoloured` looks for bare remnants alone where no ESC or "#033[" is: the same text."""
    from firedup.read.sources import _ANSI, _uncoloured

    text = "".join(parts)
    assert _uncoloured(text) == _ANSI().sub("", text)


# --- progress bars, CRLF, indentation ----------------------------------------------------

SHARDS = [
    "Loading safetensors checkpoint shards:   0% Completed | 0/2 [00:00<?, ?it/s]",
    "Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:03<00:03,  3.10s/it]",
    "Loading safetensors checkpoint shards: 100% Completed | 2/2 [00:06<00:00,  3.05s/it]",
]


def test_progress_redraws_keep_only_the_final_state(tmp_path: Path) -> None:
    lines = read(tmp_path, "\r".join(SHARDS) + "\n")
    assert texts(lines) == [SHARDS[-1]]
    assert [line.number for line in lines] == [1]


def test_a_bar_whose_description_changes_keeps_only_its_final_state(tmp_path: Path) -> None:
    # tqdm's first draw has no description; SGLang then updates "(bs=.. avail_mem=..)" on every
    # redraw (regression: each redraw used to survive as a line of its own)
    raw = ("\r  0%|          | 0/3 [00:00<?, ?it/s]"
           "\rCapturing batches (bs=4 avail_mem=60.01 GB):   0%|          | 0/3 [00:00<?, ?it/s]"
           "\rCapturing batches (bs=2 avail_mem=59.83 GB):  33%|███▎      | 1/3 [00:00<00:01,  2.19it/s]"
           "\rCapturing batches (bs=1 avail_mem=59.67 GB): 100%|██████████| 3/3 [00:00<00:00,  6.39it/s]\n")
    assert texts(read(tmp_path, raw)) == [
        "Capturing batches (bs=1 avail_mem=59.67 GB): 100%|██████████| 3/3 [00:00<00:00,  6.39it/s]"]


def test_two_different_bars_on_one_line_both_keep_their_final_state(tmp_path: Path) -> None:
    fetch = "Fetching 4 files: 100%|██████████| 4/4 [00:02<00:00,  1.9it/s]"
    raw = "\r".join([SHARDS[0], fetch.replace("100%", " 50%").replace("4/4", "2/4"), SHARDS[2], fetch]) + "\n"
    assert texts(read(tmp_path, raw)) == [SHARDS[2], fetch]


def test_a_log_line_glued_after_a_bar_is_never_lost(tmp_path: Path) -> None:
    bar = "Capturing batches (bs=4 avail_mem=60.01 GB):   0%|          | 0/4 [00:00<?, ?it/s]"
    glued = "[2025-08-31 17:49:46] IS_TBO_ENABLED is not initialized, using False"
    lines = read(tmp_path, f"\r{bar}{glued}\r{bar.replace('  0%', ' 25%').replace('0/4', '1/4')}\n")
    assert glued in texts(lines)
    # and the bar's earlier state is still superseded by its later one
    assert texts(lines) == [glued, bar.replace("  0%", " 25%").replace("0/4", "1/4")]


def test_crlf_line_endings(tmp_path: Path) -> None:
    raw = b"[2025-02-04 05:21:40 TP0] Init torch distributed begin.\r\n[2025-02-04 05:21:41 TP0] Load weight begin.\r\n"
    lines = read(tmp_path, raw)
    assert texts(lines) == ["[2025-02-04 05:21:40 TP0] Init torch distributed begin.",
                            "[2025-02-04 05:21:41 TP0] Load weight begin."]
    assert [line.number for line in lines] == [1, 2]


def test_notebook_indentation_mixed_three_and_four_spaces(tmp_path: Path) -> None:
    # a notebook export mixes 3- and 4-space indentation; another indents everything by 4
    log = ("    [2026-02-09 03:50:51] Load weight begin. avail mem=78.00 GB\n"
           "   [2026-02-09 03:50:58] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.00 GB, mem usage=15.00 GB.\n"
           "    [2026-02-09 03:51:02] Memory pool end. avail mem=8.00 GB\n"
           "   \n")
    assert texts(read(tmp_path, log))[:3] == [line.strip() for line in log.splitlines()[:3]]
    run = parse_one(tmp_path, log)
    assert stamps(run, "load_weight.begin") == ["2026-02-09T03:50:51"]
    assert stamps(run, "load_weight.end") == ["2026-02-09T03:50:58"]
    assert stamps(run, "memory_pool.end") == ["2026-02-09T03:51:02"]


def test_indentation_in_front_of_a_collector_prefix_is_removed_too(tmp_path: Path) -> None:
    # a markdown-pasted `docker logs -t` output: the prefix starts after the indentation
    (line,) = read(tmp_path, "    2026-09-22T06:49:56.336833841Z [2026-09-22 06:49:56] Load weight begin.\n")
    assert line.text == "[2026-09-22 06:49:56] Load weight begin."
    assert line.outer is not None and line.outer.text == "2026-09-22T06:49:56.336833841Z"


# --- collector prefixes ------------------------------------------------------------------


@pytest.mark.parametrize(("prefix", "written", "frac"), [
    ("2026-09-22T06:49:56.336833841Z ", "2026-09-22T06:49:56.336833841Z", "336833841"),  # docker logs -t
    ("2026-09-22T06:49:56.336833+00:00 ", "2026-09-22T06:49:56.336833+00:00", "336833"),  # kubectl --timestamps
    ("2026-09-22T06:49:56Z ", "2026-09-22T06:49:56Z", ""),
])
def test_rfc3339_prefix(tmp_path: Path, prefix: str, written: str, frac: str) -> None:
    (line,) = read(tmp_path, prefix + "[2026-09-22 06:49:56] server_args=ServerArgs(model_path='m', tp_size=1)\n")
    assert line.text == "[2026-09-22 06:49:56] server_args=ServerArgs(model_path='m', tp_size=1)"
    assert line.outer is not None
    assert (line.outer.text, line.outer.year, line.outer.month, line.outer.day, line.outer.time, line.outer.frac) == \
        (written, 2026, 9, 22, "06:49:56", frac)


def test_docker_desktop_local_time_prefix_keeps_the_servers_own_clock(tmp_path: Path) -> None:
    # docker compose on a desktop: the outer stamp is host-local time, the server's own stamp another zone
    log = ("2025-02-04 21:21:40 [2025-02-04 05:21:40 TP0] Init torch distributed begin.\n"
           "2025-02-04 21:21:40 [2025-02-04 05:21:40 TP0] Load weight begin. avail mem=22.76 GB\n"
           "2025-02-04 21:21:41 \n"
           "Loading safetensors checkpoint shards:   0% Completed | 0/2 [00:00<?, ?it/s]\n")
    lines = read(tmp_path, log)
    assert lines[0].text == "[2025-02-04 05:21:40 TP0] Init torch distributed begin."
    assert lines[0].outer is not None and lines[0].outer.text == "2025-02-04 21:21:40"
    assert lines[2].text == "" and lines[2].outer is not None  # the stamp alone before a tqdm bar
    run = parse_one(tmp_path, log)
    assert stamps(run, "load_weight.begin") == ["2025-02-04T05:21:40"]


def test_an_sglang_line_missing_its_bracket_is_not_a_docker_desktop_stamp(tmp_path: Path) -> None:
    # a real paste cut the "[" of the first line; "DP1 PP1 TP1] ..." closes the server's
    # own header, so the stamp is the server's, not a collector's (the timeline stays on one clock)
    log = ("2026-06-28 23:41:27 DP1 PP1 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
           "ValueError: boom\n"
           "[2026-06-28 23:41:28 DP0 PP1 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
           "ValueError: boom\n")
    lines = read(tmp_path, log)
    assert lines[0].text.startswith("2026-06-28 23:41:27 DP1 PP1 TP1] Scheduler hit")
    assert lines[0].outer is None
    run = parse_one(tmp_path, log)
    assert run.date_source != "outer"
    assert run.crash is not None and run.crash.line == 1
    assert "DP1 PP1 TP1" in run.ranks


def test_python_logging_comma_stamp_is_not_taken_for_a_collector_prefix(tmp_path: Path) -> None:
    (line,) = read(tmp_path, "2026-04-05 16:52:19,388 - CUTE_DSL - WARNING - slow path\n")
    assert line.text == "2026-04-05 16:52:19,388 - CUTE_DSL - WARNING - slow path"
    assert line.outer is None


def test_journald_prefix(tmp_path: Path) -> None:
    (line,) = read(tmp_path, "Feb 22 06:35:40 gpu-node-7 python3[3361]: [2026-02-22 06:35:40 TP0] Load weight begin.\n")
    assert line.text == "[2026-02-22 06:35:40 TP0] Load weight begin."
    assert line.outer is not None
    assert (line.outer.year, line.outer.month, line.outer.day, line.outer.time) == (None, 2, 22, "06:35:40")


def test_docker_compose_service_prefix(tmp_path: Path) -> None:
    lines = read(tmp_path, "sglang-server  | [2025-02-04 05:21:40 TP0] Load weight begin.\n"
                           "sglang-server  | 2026-09-22T06:49:56Z [2026-09-22 06:49:56] Uvicorn running on http://0.0.0.0:30000\n")
    assert texts(lines) == ["[2025-02-04 05:21:40 TP0] Load weight begin.",
                            "[2026-09-22 06:49:56] Uvicorn running on http://0.0.0.0:30000"]
    assert lines[1].outer is not None and lines[1].outer.text == "2026-09-22T06:49:56Z"


def test_ray_worker_prefix_and_repeat_count(tmp_path: Path) -> None:
    lines = read(tmp_path, "(WorkerDict pid=26105) [2025-11-20 01:12:06] Downcasting torch.float32 to torch.bfloat16. [repeated 3x across cluster]\n"
                           "(WorkerDict pid=26107, ip=10.0.0.7) [2025-11-20 01:13:05 TP0] Init torch distributed begin.\n")
    assert texts(lines) == ["[2025-11-20 01:12:06] Downcasting torch.float32 to torch.bfloat16.",
                            "[2025-11-20 01:13:05 TP0] Init torch distributed begin."]
    assert [(line.proc, line.repeated) for line in lines] == [("WorkerDict", 3), ("WorkerDict", 1)]


def test_a_ray_repeat_summary_after_a_crash_is_not_a_restart(tmp_path: Path) -> None:
    # under Ray, "[repeated 3x across cluster]" copies lines the other workers
    # printed earlier; one that says "Init torch distributed begin" after the crash used to
    # open a phantom second run (regression)
    log = ("(WorkerDict pid=26107) [2025-11-20 01:13:05 TP0] Init torch distributed begin.\n"
           "(WorkerDict pid=26103) [2025-11-20 01:13:05 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
           '(WorkerDict pid=26103)   File "/x/torch/distributed/rendezvous.py", line 198, in _create_c10d_store\n'
           "(WorkerDict pid=26103) RuntimeError: Ping failed on TCPStore, invalid nonce\n"
           "(WorkerDict pid=26103) [2025-11-20 01:13:05 TP0] Init torch distributed begin. [repeated 3x across cluster]\n")
    path = tmp_path / "ray.log"
    path.write_text(log)
    result = parse_paths([str(path)])
    assert [run.outcome for run in result.runs] == ["crashed"]


def test_invalid_utf8_is_replaced_never_fatal(tmp_path: Path) -> None:
    raw = b"[2025-03-01 10:00:00 TP0] Load weight begin. caf\xe9 \xff\xfe\n[2025-03-01 10:00:01 TP0] ok \xc3\n"
    lines = read(tmp_path, raw)
    assert texts(lines) == ["[2025-03-01 10:00:00 TP0] Load weight begin. caf\ufffd \ufffd\ufffd",
                            "[2025-03-01 10:00:01 TP0] ok \ufffd"]
    assert parse_paths([str(tmp_path / "server.log")]).runs[0].milestone("load_weight.begin") is not None


# --- the date rule ------------------------------------------------------------------------


def test_an_outer_stamp_supplies_the_date_of_a_time_only_line(tmp_path: Path) -> None:
    run = parse_one(tmp_path, "2026-09-22T06:49:56.1Z [06:49:56 TP0] Load weight begin. avail mem=70.00 GB\n"
                              "2026-09-22T06:50:30.1Z [06:50:30 TP0] Load weight end. type=X, avail mem=50.00 GB\n")
    assert stamps(run, "load_weight.begin") == ["2026-09-22T06:49:56"]
    assert stamps(run, "load_weight.end") == ["2026-09-22T06:50:30"]
    assert run.date_source == "outer"


def test_an_outer_stamp_supplies_date_and_time_to_a_line_without_any(tmp_path: Path) -> None:
    run = parse_one(tmp_path, "2026-09-22T06:49:56Z [gpu_id=0] Init nccl begin.\n"
                              "2026-09-22T06:50:01Z [gpu_id=0] Load weight begin. avail mem=70.00 GB\n")
    assert stamps(run, "load_weight.begin") == ["2026-09-22T06:50:01"]


def test_local_time_prefix_ahead_of_utc_puts_a_time_only_line_on_the_day_before(tmp_path: Path) -> None:
    # host at UTC+8 stamps 02:00 on the 5th; the server (UTC) printed 18:00 -- of the 4th
    run = parse_one(tmp_path, "2025-02-05 02:00:00 [18:00:00 TP0] Load weight begin. avail mem=22.76 GB\n"
                              "2025-02-05 02:00:09 [18:00:09 TP0] Load weight end. type=X, avail mem=8.00 GB\n")
    assert stamps(run, "load_weight.begin") == ["2025-02-04T18:00:00"]
    assert stamps(run, "load_weight.end") == ["2025-02-04T18:00:09"]


def test_the_clock_offset_a_dated_line_shows_dates_the_time_only_lines_after_it(tmp_path: Path) -> None:
    # a 16 h gap between the two clocks (a real compose log) is more than half a day: the nearest day
    # alone would be wrong; the dated first line shows the offset (regression)
    run = parse_one(tmp_path, "2025-02-04 21:21:33 [2025-02-04 05:21:33] server_args=ServerArgs(model_path='m')\n"
                              "2025-02-04 21:21:40 [05:21:40 TP0] Load weight begin. avail mem=22.76 GB\n")
    assert stamps(run, "load_weight.begin") == ["2025-02-04T05:21:40"]


def test_outer_midnight_moves_the_date_of_time_only_lines_once(tmp_path: Path) -> None:
    run = parse_one(tmp_path, "2026-09-22T23:59:58Z [23:59:58 TP0] Load weight begin. avail mem=70.00 GB\n"
                              "2026-09-23T00:00:03Z [00:00:03 TP0] Load weight end. type=X, avail mem=50.00 GB\n"
                              "2026-09-23T00:00:04Z [23:59:59 TP1] Load weight end. type=X, avail mem=50.00 GB\n")
    assert stamps(run, "load_weight.end") == ["2026-09-23T00:00:03", "2026-09-22T23:59:59"]


def test_journald_supplies_month_and_day_the_file_supplies_the_year(tmp_path: Path) -> None:
    log = "Mar 14 22:30:32 gpu-node-7 python3[77]: [22:30:32 TP0] Load weight begin. avail mem=191.33 GB\n"
    assert stamps(parse_one(tmp_path, log, mtime_year=2024), "load_weight.begin") == ["2024-03-14T22:30:32"]
    assert stamps(parse_one(tmp_path, log, default_date=dt.date(2023, 1, 1)), "load_weight.begin") == \
        ["2023-03-14T22:30:32"]


def test_time_only_lines_take_the_date_option(tmp_path: Path) -> None:
    run = parse_one(tmp_path, "[22:30:32 TP0] Load weight begin. avail mem=191.33 GB\n", default_date=dt.date(2024, 10, 5))
    assert stamps(run, "load_weight.begin") == ["2024-10-05T22:30:32"]
    assert run.date_source == "--date"


def test_time_only_lines_without_a_date_are_on_1970_01_01(tmp_path: Path) -> None:
    run = parse_one(tmp_path, "[22:30:32 TP0] Load weight begin. avail mem=191.33 GB\n")
    assert stamps(run, "load_weight.begin") == ["1970-01-01T22:30:32"]
    assert run.date_source == "default"


def test_time_only_lines_cross_midnight_once_even_with_a_late_rank(tmp_path: Path) -> None:
    run = parse_one(tmp_path, "[23:59:58 TP0] Load weight begin. avail mem=70.00 GB\n"
                              "[23:59:58 TP1] Load weight begin. avail mem=70.00 GB\n"
                              "[00:00:03 TP0] Load weight end. type=X, avail mem=50.00 GB\n"
                              "[23:59:59 TP1] Load weight end. type=X, avail mem=50.00 GB\n"
                              "[00:05:00 TP0] Memory pool end. avail mem=8.00 GB\n",
                    default_date=dt.date(2024, 12, 31))
    assert stamps(run, "load_weight.begin") == ["2024-12-31T23:59:58", "2024-12-31T23:59:58"]
    # TP1's late line stays on the 31st (regression: it jumped a day ahead)
    assert stamps(run, "load_weight.end") == ["2025-01-01T00:00:03", "2024-12-31T23:59:59"]
    assert stamps(run, "memory_pool.end") == ["2025-01-01T00:05:00"]


def test_a_garbled_time_is_no_timestamp(tmp_path: Path) -> None:
    # "[00:23:84]" fits the header's shape; it used to raise ValueError (found by hypothesis)
    run = parse_one(tmp_path, "[2025-03-01 10:00:00 TP0] Load weight begin. avail mem=9.00 GB\n"
                              "[00:23:84 TP0] Load weight end. type=X, avail mem=5.00 GB\n"
                              "2025-03-01T25:00:00Z [gpu_id=0] Memory pool end. avail mem=1.00 GB\n")
    assert stamps(run, "load_weight.end") == ["2025-03-01T10:00:00"]  # the last good stamp, inherited
    assert stamps(run, "memory_pool.end") == ["2025-03-01T10:00:00"]


# --- inputs ------------------------------------------------------------------------------


def make_tree(root: Path) -> None:
    (root / "a").mkdir()
    (root / "a" / "deep").mkdir()
    (root / ".hidden").mkdir()
    for rel in ("one.log", "two.txt", "a/three.out", "a/deep/four.log", "notes.md", ".hidden/five.log", "a/.six.log"):
        (root / rel).write_text("[2025-03-01 10:00:00 TP0] Load weight begin.\n")
    (root / "a" / "seven.log.gz").write_bytes(gzip.compress(b"[2025-03-01 10:00:00 TP0] Load weight begin.\n"))


def names(sources: list[Source], root: Path) -> list[str]:
    return sorted(str(Path(s.name).relative_to(root)) for s in sources)


def test_a_directory_is_read_recursively_for_log_suffixes_skipping_hidden(tmp_path: Path) -> None:
    make_tree(tmp_path)
    sources, errors = expand_inputs([str(tmp_path)])
    assert errors == []
    assert names(sources, tmp_path) == ["a/deep/four.log", "a/seven.log.gz", "a/three.out", "one.log", "two.txt"]


def test_all_takes_every_file_of_a_directory(tmp_path: Path) -> None:
    make_tree(tmp_path)
    sources, _ = expand_inputs([str(tmp_path)], all_files=True)
    assert "notes.md" in names(sources, tmp_path)
    assert ".hidden/five.log" not in names(sources, tmp_path)


def test_globs_expand_and_a_path_is_read_once(tmp_path: Path) -> None:
    make_tree(tmp_path)
    sources, errors = expand_inputs([str(tmp_path / "*.log"), str(tmp_path / "**" / "*.out"), str(tmp_path / "one.log")])
    assert errors == []
    assert names(sources, tmp_path) == ["a/three.out", "one.log"]


def test_missing_paths_and_empty_matches_are_errors_for_that_input_only(tmp_path: Path) -> None:
    make_tree(tmp_path)
    (tmp_path / "empty").mkdir()
    sources, errors = expand_inputs([str(tmp_path / "nope.log"), str(tmp_path / "*.nothing"), str(tmp_path / "empty"),
                                     str(tmp_path / "one.log")])
    assert names(sources, tmp_path) == ["one.log"]
    assert [e.reason for e in errors] == [
        "no such file or directory", "no file matches this pattern",
        "directory holds no log files (*.log, *.txt, *.out, *.gz; --all takes any file)"]


def test_gzip_is_read_transparently(tmp_path: Path) -> None:
    log = "[2025-03-01 10:00:00 TP0] Load weight begin.\r\n[2025-03-01 10:00:05 TP0] Memory pool end.\n"
    plain = read(tmp_path, log)
    assert read(tmp_path, gzip.compress(log.encode()), name="server.log.gz") == plain
    # the magic bytes decide, not the name
    assert read(tmp_path, gzip.compress(log.encode()), name="rotated.1") == plain
    assert read(tmp_path, log, name="mislabelled.gz") == plain


def test_stdin_is_read_with_dash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = gzip.compress(b"[2025-03-01 10:00:00 TP0] Load weight begin. avail mem=9.00 GB\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(data))))
    sources, _ = expand_inputs(["-", "-"])
    assert sources == [Source("-", None)]
    assert texts(list(read_lines(sources[0]))) == ["[2025-03-01 10:00:00 TP0] Load weight begin. avail mem=9.00 GB"]


@pytest.mark.parametrize(("data", "reason"), [
    (b"", "empty file"),
    (b"[2025-03-01] ok\n\x00\x01\x02", "not a text log: binary data (NUL byte at offset 16)"),
])
def test_unreadable_content_is_one_input_error(tmp_path: Path, data: bytes, reason: str) -> None:
    with pytest.raises(InputError) as info:
        read(tmp_path, data)
    assert info.value.reason == reason
    assert str(info.value) == f"{tmp_path / 'server.log'}: {reason}"


# --- redraw collapsing, against the quadratic rule it replaced ---------------------------

def _reference_kept(pieces: list[str]) -> list[str]:
    """The rule as first written: drop a bar redraw when any later piece redraws it."""
    from firedup.read.sources import _bar_key, _same_bar

    keys = [_bar_key(piece) if "%" in piece else None for piece in pieces]
    kept = []
    for i, piece in enumerate(pieces):
        if not piece and len(pieces) > 1:
            continue
        key = keys[i]
        if key is not None and any(later is not None and _same_bar(key, later) for later in keys[i + 1:]):
            continue
        kept.append(piece)
    return kept or [""]


def _reference_split(segment: str) -> list[str]:
    """The split into pieces as first written, slice by slice: a piece ends at a bar's end
    when a bar starts before it and more than blanks follow."""
    from firedup.read.sources import _BAR, _BAR_END

    out = []
    while (m := _BAR_END.search(segment)) and _BAR.search(segment[: m.start() + 1]) and segment[m.end():].strip():
        out.append(segment[: m.end()])
        segment = segment[m.end():]
    return [*out, segment]


_REDRAWS = st.sampled_from([
    "", "  ",
    "  0%|          | 0/5 [00:00<?, ?it/s]",
    "Capturing batches (bs=4 avail_mem=3.1 GB):  40%|████      | 2/5 [00:01<00:01,  1.5it/s]",
    "Capturing batches (bs=2 avail_mem=3.0 GB): 100%|██████████| 5/5 [00:03<00:00,  1.6it/s]",
    "Capturing batches:  20%|██        | 1/5 [00:00<00:02]",
    "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:01<00:01,  1.5it/s]",
    "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:02<00:00,  1.6it/s]",
    "Fetching 4 files: 100%|██████████| 4/4 [00:00<00:00, 99.1it/s]",
    "[2026-01-01 10:00:00 TP0] Capture cuda graph end. Time elapsed: 3.0 s",
    "a line with 100% of nothing",
    "  0%|          | 0/4 [00:00<?, ?it/s]",
    "   Capturing batches (bs=8):  60%|██████    | 3/5 [00:02<00:01]   ",
    "| 1/5 [00:01<00:02] 40%|",
    "Capturing batches:  20%|██        | 1/5 [00:00<00:02][2026-01-01 10:00:00] a log line glued on",
    "x 5% Completed | 1/4 [00:01<00:03, 1it/s] y",
    "Loading:  50%|█████     | 2/4 [00:01<00:01]Fetching 4 files: 100%|██████████| 4/4 [00:00<00:00]",
    "(bs=2) 7% Completed | 1/5 [00:01<00:03]",
])


@settings(max_examples=500, deadline=None)
@given(st.lists(_REDRAWS, min_size=1, max_size=12), st.lists(st.sampled_from(["\r", ""]), min_size=11, max_size=11))
def test_redraw_collapsing_keeps_what_the_quadratic_rule_kept(pieces: list[str], joints: list[str]) -> None:
    """Redraws after a carriage return or glued on (tqdm writing to a file without one)."""
    from firedup.read.sources import normalise

    raw = pieces[0] + "".join(joint + piece for joint, piece in zip(joints, pieces[1:], strict=False))
    got = [line.text for line in normalise(raw, 1)]
    split: list[str] = []
    for seg in raw.split("\r") if "\r" in raw else [raw]:
        split.extend(_reference_split(seg) if "<" in seg and "%" in seg else [seg])
    assert got == _reference_kept([piece.strip() for piece in split])


# --- broken bytes in a good log (issue 42, class 3): keep what reads, drop what does not, say so ----

_GOOD = (Path(__file__).resolve().parents[1] / "sample_logs" / "small-tp1.log").read_bytes()


def _facts(path: Path) -> list[tuple[object, ...]]:
    result = parse_paths([str(path)])
    assert not result.errors, result.errors
    return [(r.outcome, r.first_ts, r.ready_ts, r.total_seconds, r.config.get("model_path"), r.config.get("tp_size"),
             len(r.milestones)) for r in result.runs]


def _warnings(path: Path) -> list[str]:
    return [w for r in parse_paths([str(path)]).runs for w in r.warnings]


def test_a_log_followed_by_a_megabyte_of_nul_bytes_is_read_and_said(tmp_path: Path) -> None:
    """A file cut by a power loss: was refused whole, "not a text log"."""
    (tmp_path / "good.log").write_bytes(_GOOD)
    (tmp_path / "cut.log").write_bytes(_GOOD + b"\x00" * (1 << 20))
    assert _facts(tmp_path / "cut.log") == _facts(tmp_path / "good.log")
    assert any("1,048,576 NUL bytes dropped" in w for w in _warnings(tmp_path / "cut.log"))


def test_one_nul_inside_the_ready_line_costs_only_the_nul(tmp_path: Path) -> None:
    (tmp_path / "good.log").write_bytes(_GOOD)
    (tmp_path / "nul.log").write_bytes(_GOOD.replace(b"fired up and", b"fired up\x00 and"))
    assert _facts(tmp_path / "nul.log") == _facts(tmp_path / "good.log")
    assert any(w.startswith("line 40: 1 NUL byte dropped") for w in _warnings(tmp_path / "nul.log"))


def test_a_byte_order_mark_starting_a_concatenated_log_is_dropped(tmp_path: Path) -> None:
    """`cat a.log b.log`, b.log saved with a UTF-8 BOM: its first line (here the args line) was lost."""
    lines = _GOOD.split(b"\n")
    second = b"\n".join(lines[6:]).replace(b"2026-06-02", b"2026-06-03")
    (tmp_path / "plain.log").write_bytes(_GOOD + second)
    (tmp_path / "bom.log").write_bytes(_GOOD + b"\xef\xbb\xbf" + second)
    facts = _facts(tmp_path / "bom.log")
    assert facts == _facts(tmp_path / "plain.log") and len(facts) == 2
    assert facts[1][4] == "Qwen/Qwen3-4B-Instruct-2507"


@pytest.mark.parametrize("data", [
    b"\x7fELF\x02\x01\x01\x00\x00\x00\n" + b"\x00" * 64,    # an executable
    b"SQLite format 3\x00\x10\x00\x01\x01\n",               # a database
    b"h\x00e\x00l\x00l\x00o\x00\n\x00",                     # UTF-16 without its BOM
    b"[2025-03-01] ok\n\x00\x01\x02\x03\x04\x05\x06",       # binary junk after a log
])
def test_binary_data_is_still_refused(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(InputError, match="not a text log: binary data"):
        read(tmp_path, data)


_BREAKS = st.lists(st.tuples(st.integers(0, len(_GOOD)), st.sampled_from([b"\x00", b"\x00" * 700, b"bom"])),
                   min_size=1, max_size=6)


@settings(max_examples=40, deadline=None)
@given(breaks=_BREAKS, tail=st.sampled_from([b"", b"\x00" * 5000]))
def test_random_nul_and_bom_insertions_cost_no_run(tmp_path_factory: pytest.TempPathFactory,
                                                   breaks: list[tuple[int, bytes]], tail: bytes) -> None:
    """NULs anywhere after the first line (inside lines, between them, inside a character), a
    BOM at the start of any line: the runs read as from the log without them."""
    folder = tmp_path_factory.mktemp("nul")
    first_line = _GOOD.index(b"\n") + 1
    data = _GOOD
    for at, what in sorted(breaks, reverse=True):
        if what == b"bom":
            at = data.rfind(b"\n", 0, at) + 1
            if data.startswith(b"\xef\xbb\xbf", at):
                continue
            what = b"\xef\xbb\xbf"
        at = max(at, first_line)
        data = data[:at] + what + data[at:]
    (folder / "good.log").write_bytes(_GOOD)
    (folder / "broken.log").write_bytes(data + tail)
    assert _facts(folder / "broken.log") == _facts(folder / "good.log")
    if b"\x00" in data + tail:
        assert any("NUL byte" in w for w in _warnings(folder / "broken.log"))


# --- collector prefixes: the screen before the table ------------------------------------------

_PREFIX_PIECES = st.sampled_from([
    "2026-11-01T12:13:34.481156419Z ", "2025-12-06T10:00:01+0000 host ident[7]: ", "2026-06-02 14:22:57 ",
    "2026-06-02 14:22:57 | ", "Feb 22 06:34:42 host env[2827]: ", "Sat 2025-12-06 10:00:01 UTC host env[1]: ",
    "Jun 02 14:21:10 ", "server-1  | ", "[INFO ] PyProcess - W-332-model-stdout: ",
    "[INFO ] 2025-02-14 08:22:13 PyProcess - W-1-m-stdout: ", "INFO  PyProcess W-123-model-stdout: ",
    "[1,0]<stdout>:", "[rank0]: ", "(APIServer pid=1) ", "(Worker rank=1 pid=300) ", "( pid=3) ", "(pid=4, ip=10.0.0.1) ",
    "[2026-06-02 14:22:57] ", "INFO 11-01 12:14:42 [launcher.py:46] ", "INFO:     ", "[", "(", "I", "2026-", " ", "x", "",
])


def _strip_by_the_table(text: str) -> tuple[object, ...]:
    """What `strip_tagged` gives, as the collector table says it plainly: each collector of the
    first character's kind tried in order, no screen."""
    from firedup.read.collectors import BY_FIRST, first_key

    outer = proc = pid = tag = None
    for _ in range(4):
        for collector in BY_FIRST[first_key(text[:1])]:
            m = collector.regex.match(text)
            if m is not None and (collector.accepts is None or collector.accepts(text, m.end())):
                break
        else:
            break
        if collector.stamp is not None:
            outer = outer or collector.stamp(m)
        elif collector.process_tag:
            if proc is None and pid is None:
                pid = int(m["pid"])
            proc = proc or (m["proc"].rsplit(" pid=", 1)[0].strip() if "pid=" in m["proc"] else m["proc"])
            if proc.startswith("pid="):
                proc = None
        elif collector.source_tag and tag is None:
            tag = m["service"]
        text = text[m.end():]
    return text, outer, proc, pid, tag


@settings(max_examples=400, deadline=None)
@given(st.lists(_PREFIX_PIECES, max_size=6).map("".join), st.text(max_size=20))
def test_strip_tagged_takes_off_what_the_collector_table_says(prefixes: str, rest: str) -> None:
    """`strip_tagged` skips a kind of prefix where one pattern of all its collectors fails
    (`sources._any_prefix`): what it strips, and what the prefixes said, are the table's."""
    from firedup.read.sources import strip_tagged

    text = prefixes + rest
    assert strip_tagged(text) == _strip_by_the_table(text)


# what a bar's start is made of, and what may come before or between: digits (an Arabic-Indic
# one too), `%`, `|`, `Completed`, blanks, a description's words
_BAR_BITS = st.lists(st.sampled_from(["1", "23", "100", "1234", "\u0663", "%", "|", " ", "  ", " Completed |",
                                      "Completed", "\u2588", "(bs=4)", "a", ": ", "100%|", "7%|", "1234%|",
                                      "45%  Completed |", "\u0663\u0663\u0663%|", "%%|"]), max_size=24).map("".join)


def _split_bars_long_way(segment: str) -> tuple[list[str], list[object]]:
    """`sources._split_bars` as it was before its searches were narrowed: each bar start
    searched from the piece's start, each key through `_key_of`."""
    from firedup.read.sources import _BAR, _BAR_END, _NON_SPACE, _bar_key, _key_of

    pieces: list[str] = []
    keys: list[object] = []
    begin = 0
    while True:
        m = _BAR_END.search(segment, begin)
        bar = _BAR.search(segment, begin, m.start() + 1) if m else None
        if m is None or bar is None:
            piece = segment[begin:]
            pieces.append(piece)
            keys.append(_bar_key(piece.strip()) if m is not None and "%" in piece else None)
            return pieces, keys
        keys.append(_key_of(segment[begin: bar.start()], m["total"]))
        end = m.end()
        if end == len(segment) or _NON_SPACE.search(segment, end) is None:
            pieces.append(segment[begin:])
            return pieces, keys
        pieces.append(segment[begin: end])
        begin = end


# a bar's end as tqdm draws it, and what follows one when a log line is glued after it
_BAR_ENDS = st.sampled_from([" | 1/20 [00:01<00:25,  1.35s/it]", "| 3/3 [00:01<00:00,  2.64it/s]", "| 0/58 [00:00<?, ?it/s]",
                             " INFO 12:00:01 ready", "  ", "|", "] [", ""])


@settings(max_examples=300)
@given(parts=st.lists(st.tuples(_BAR_BITS, _BAR_ENDS), min_size=1, max_size=4))
def test_splitting_bars_is_the_long_way(parts: list[tuple[str, str]]) -> None:
    """`_split_bars` searches a bar start from 3 characters before the first `%` of the piece
    (a match is 1 to 3 digits and a `%`) and looks a seen description up itself: the pieces
    and keys of the patterns searched from the piece's start."""
    from firedup.read.sources import _split_bars

    segment = "".join(start + end for start, end in parts)
    pieces: list[str] = []
    keys: list[object] = []
    _split_bars(segment, pieces, keys)
    assert (pieces, keys) == _split_bars_long_way(segment)

"""report: what the HTML and Markdown say, that they fetch nothing, escape log text, and come out
the same byte for byte; checked against the generator's truth and the log text."""

from __future__ import annotations

import base64
import html
import os
import re
import shutil
import struct
import subprocess
import sys
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE_LOGS, sample_truth
from firedup.api import report as report_of
from firedup.core.units import fmt_duration
from firedup.errors import UsageError
from firedup.render.report import (
    CHART_FILES,
    display_paths,
    generation_time,
    md_code,
    md_fence,
    md_text,
)

SAMPLES = SAMPLE_LOGS
COMMITTED = ROOT / "reports" / "sample"
TRUTH = sample_truth()
GENERATED = re.compile(r"Generated \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC")
SCRIPT = '<script>alert("firedup")</script>'


def firedup(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    full["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + full.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "firedup", *args], capture_output=True, text=True, env=full,
                          timeout=300, check=False, cwd=cwd)


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's command, run from the checkout like a user does."""
    out = tmp_path_factory.mktemp("report") / "sample"
    proc = firedup("report", "sample_logs/", "--by", "disable_cuda_graph", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no progress bar when stderr is not a terminal
    runs = sum(len(f["runs"]) for f in TRUTH["files"].values())  # every startup the generator wrote
    assert f"wrote {runs} runs" in proc.stdout
    return out


class Resources(HTMLParser):
    """Every URL the page would load or link to, and every element name."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.urls.extend(value or "" for name, value in attrs if name in ("src", "href", "srcset", "poster", "data"))


def _strip_time(text: str) -> str:
    return GENERATED.sub("Generated <time>", text)


# --- the contents ------------------------------------------------------------------------------


def test_summary_counts_outcomes_from_the_truth(sample_report: Path) -> None:
    runs = [r for f in TRUTH["files"].values() for r in f["runs"]]
    ready = sum(r["outcome"] == "ready" for r in runs)
    crashed = sum(r["outcome"] == "crashed" for r in runs)
    page = (sample_report / "index.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert f"{len(runs)} startups from {len(TRUTH['files'])} log files" in text
    assert f"{ready} ready, {crashed} crashed" in text
    md = (sample_report / "report.md").read_text()
    assert f"Outcomes: {ready} ready, {crashed} crashed." in md
    # the headline comparison: debug vs production, and what explains the difference
    assert re.search(r"debug \(disable_cuda_graph=True\) ready in a median of 4 min \d\d s, production "
                     r"\(disable_cuda_graph=False\) in 1\d min \d\d s; cuda_graph and draft\.cuda_graph explain ", text)


def test_each_crash_with_its_diagnosis_and_line(sample_report: Path) -> None:
    page = html.unescape((sample_report / "index.html").read_text())
    md = (sample_report / "report.md").read_text()
    for name, item in TRUTH["files"].items():
        for run in item["runs"]:
            if run["crash"] is None:
                continue
            line_no = run["crash"]["line"]
            log_line = (SAMPLES / name).read_bytes().decode().split("\n")[line_no - 1]  # physical lines
            # the report quotes the line the crash came from (without its timestamp prefix)
            quoted = log_line.split("] ", 1)[1]
            assert f"(line {line_no})" in page and quoted in page, (name, quoted)
            assert f"(line {line_no})" in md and quoted in md
            assert f"{run['crash']['category']}, in {run['crash']['phase']}" in page
    assert "Diagnosis: lower --cuda-graph-max-bs" in page


def test_budget_phase_tables_unattributed_and_one_section_per_run(sample_report: Path) -> None:
    page = (sample_report / "index.html").read_text()
    md = (sample_report / "report.md").read_text()
    n_runs = sum(len(f["runs"]) for f in TRUTH["files"].values())
    assert page.count('<section class="run"') == n_runs
    assert md.split("## Appendix: every run", 1)[1].count("\n### ") == n_runs
    for section in ("Budget: how long to wait", "Phases per group", "Charts", "Crashes", "Unattributed time"):
        assert f">{section}</h2>" in page and f"## {section}" in md
    # the budget table holds both groups, never below the slowest run seen (from the truth)
    for debug in (True, False):
        times = [r["ready_offset_s"] for f in TRUTH["files"].values() for r in f["runs"]
                 if r["outcome"] == "ready" and r["config"].get("disable_cuda_graph") is debug
                 and r["config"]["model_path"].startswith("Qwen/Qwen3-235B")]
        label = "debug" if debug else "production"
        row = re.search(rf"\| {label} \(disable\\_cuda\\_graph=\w+\) \| (\d+) \| [^|]+ \| \*\*[^(]+\((\d+) s\)\*\*", md)
        assert row, label
        assert int(row.group(1)) == len(times) and int(row.group(2)) >= max(times)
    assert "kubernetes snippet" in page and "startupProbe:" in page and "```yaml" in md
    # unattributed time: a run whose log has a gap lists it
    assert re.search(r"\| `sample_logs/prod-tp8-eagle3-0\d\.log` \| \d", md.split("## Unattributed time")[1])


def test_charts_embedded_and_beside_the_markdown(sample_report: Path) -> None:
    page = (sample_report / "index.html").read_text()
    images = re.findall(r'<img src="data:image/png;base64,([^"]+)"', page)
    md = (sample_report / "report.md").read_text()
    files = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert files == ["compare.png", "distribution.png", "timeline.png", "ranks.png"]
    assert len(images) == len(files)
    for data, name in zip(images, files, strict=True):
        # the page carries the very PNG that sits beside report.md
        assert base64.b64decode(data) == (sample_report / name).read_bytes()
        assert (sample_report / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_page_fetches_nothing(sample_report: Path) -> None:
    page = (sample_report / "index.html").read_text()
    parser = Resources()
    parser.feed(page)
    assert "script" not in parser.tags and "iframe" not in parser.tags
    assert parser.urls and all(u.startswith(("data:", "#")) for u in parser.urls), \
        [u for u in parser.urls if not u.startswith(("data:", "#"))]
    assert "@import" not in page and not re.search(r"url\((?!data:)", page)
    assert "default-src 'none'" in page  # and the browser is told so


def test_no_absolute_path_of_this_machine(sample_report: Path, tmp_path: Path) -> None:
    for path in (sample_report / "index.html", sample_report / "report.md"):
        text = path.read_text()
        assert str(ROOT) not in text and str(sample_report) not in text
    # inputs outside the working directory are named from their common folder
    outside = tmp_path / "incident-42"
    (outside / "logs").mkdir(parents=True)
    for name in ("prod-tp8-eagle3-01.log", "debug-tp8-eagle3-01.log"):
        shutil.copy(SAMPLES / name, outside / "logs" / name)
    result = report_of([str(outside / "logs")], tmp_path / "out", by=["disable_cuda_graph"])
    for path in result.files[:2]:
        text = path.read_text()
        assert str(tmp_path) not in text
        assert "logs/prod-tp8-eagle3-01.log" in text


def test_display_paths() -> None:
    cwd = "/home/me/work"
    assert display_paths(["logs/a.log", "/home/me/work/b.log"], cwd) == {
        "-": "stdin", "logs/a.log": "logs/a.log", "/home/me/work/b.log": "b.log"}
    shown = display_paths(["/var/log/x/a.log", "/var/log/x/sub/b.log"], cwd)
    assert shown["/var/log/x/a.log"] == "x/a.log" and shown["/var/log/x/sub/b.log"] == "x/sub/b.log"
    assert display_paths(["/srv/one.log"], cwd)["/srv/one.log"] == "srv/one.log"


# --- escaping ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The OOM sample with a <script> in its error message and HTML in its file name."""
    folder = tmp_path_factory.mktemp("hostile")
    text = (SAMPLES / "oom-in-cuda-graph.log").read_text()
    assert "CUDA out of memory." in text
    # every line of the error says it, so whichever line the crash reading quotes carries the markup
    text = text.replace("CUDA out of memory.", f"CUDA out of memory. {SCRIPT} | *bold* [x](http://evil)")
    (folder / "logs").mkdir()
    (folder / "logs" / "oom<b>x.log").write_text(text)
    result = report_of([str(folder / "logs")], folder / "out")
    assert result.runs == 1
    return folder / "out"


def test_log_text_with_script_shows_as_text(hostile: Path) -> None:
    page = (hostile / "index.html").read_text()
    assert SCRIPT not in page and "<b>x" not in page
    assert "&lt;script&gt;alert(" in page and SCRIPT in html.unescape(page)  # shown as text
    assert "oom&lt;b&gt;x.log" in page
    parser = Resources()
    parser.feed(page)
    assert "script" not in parser.tags and "b" not in parser.tags
    md = (hostile / "report.md").read_text()
    # in Markdown the message is inline code (literal), the file name escaped text
    assert re.search(r"`[^`\n]*CUDA out of memory\. " + re.escape(SCRIPT + r" \| *bold* [x](http://evil)"), md)
    assert "oom&lt;b&gt;x.log" in md
    outside_code = re.sub(r"(`+).*?\1", "", re.sub(r"```.*?```", "", md, flags=re.DOTALL))
    assert "<script" not in outside_code and "<b>" not in outside_code


def test_markdown_escapes() -> None:
    assert md_text("a_b *c* <d> & | # e") == r"a\_b \*c\* &lt;d&gt; &amp; \| # e"
    assert md_text("# heading") == r"\# heading" and md_text("- item") == r"\- item"
    assert md_text("1. first") == r"1\. first" and md_text("+3:47") == "+3:47"
    assert md_fence("a ``` b") == "````text\na ``` b\n````"
    assert md_code("x ` y") == "``x ` y``" and md_code("a|b") == r"`a\|b`"


# --- byte for byte -----------------------------------------------------------------------------


def test_regenerating_gives_the_same_bytes(sample_report: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    proc = firedup("report", "sample_logs/", "--by", "disable_cuda_graph", "-o", str(again))
    assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in sample_report.iterdir())
    assert names == sorted(p.name for p in again.iterdir())
    for name in names:
        a, b = (sample_report / name).read_bytes(), (again / name).read_bytes()
        if name.endswith((".html", ".md")):
            a, b = _strip_time(a.decode()).encode(), _strip_time(b.decode()).encode()
        assert a == b, name


PINNED_EPOCH = "1780000000"  # 2026-05-28 20:26:40 UTC


@pytest.fixture(scope="module")
def pinned_reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The README's command twice, into two folders, with one SOURCE_DATE_EPOCH."""
    outs = []
    for name in ("first", "second"):
        out = tmp_path_factory.mktemp(name) / "sample"
        proc = firedup("report", "sample_logs/", "--by", "disable_cuda_graph", "-o", str(out),
                       env={"SOURCE_DATE_EPOCH": PINNED_EPOCH})
        assert proc.returncode == 0, proc.stderr
        outs.append(out)
    return outs[0], outs[1]


def test_the_same_source_date_epoch_gives_byte_identical_files(pinned_reports: tuple[Path, Path]) -> None:
    first, second = pinned_reports
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in second.iterdir())
    assert set(names) == {"index.html", "report.md", *CHART_FILES.values()}  # every chart is drawn and compared
    for name in names:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    for name in ("index.html", "report.md"):
        assert "Generated 2026-05-28 20:26 UTC" in (first / name).read_text()


def _png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """(type, payload) of every chunk of a PNG file, read by the format's own layout."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, at = [], 8
    while at < len(data):
        (size,) = struct.unpack(">I", data[at:at + 4])
        chunks.append((data[at + 4:at + 8], data[at + 8:at + 8 + size]))
        at += 12 + size
    return chunks


def test_png_charts_carry_no_time_and_no_version(pinned_reports: tuple[Path, Path]) -> None:
    """A PNG can hold a modification time (tIME) and text (matplotlib writes its version under
    `Software` unless told not to): none may be there, or the bytes depend on the build."""
    for png in sorted(pinned_reports[0].glob("*.png")):
        kinds = [kind for kind, _ in _png_chunks(png.read_bytes())]
        assert kinds[0] == b"IHDR" and kinds[-1] == b"IEND", png.name
        assert not {b"tIME", b"tEXt", b"iTXt", b"zTXt", b"eXIf"} & set(kinds), (png.name, kinds)
    embedded = re.findall(r"data:image/png;base64,([^\"]+)", (pinned_reports[0] / "index.html").read_text())
    assert len(embedded) == len(CHART_FILES)
    for data in embedded:  # the page's copies are the same files
        assert base64.b64decode(data) in {p.read_bytes() for p in pinned_reports[0].glob("*.png")}


@pytest.mark.parametrize("value", ["yesterday", "-1", "1.5", " 1780000000", "1e9", "\uff11\uff12",
                                   "99999999999999999999"])
def test_a_source_date_epoch_that_is_not_unix_seconds_is_refused(value: str) -> None:
    with pytest.raises(UsageError, match="SOURCE_DATE_EPOCH="):
        generation_time({"SOURCE_DATE_EPOCH": value})


def test_a_bad_source_date_epoch_is_one_line_on_stderr_before_anything_is_written(tmp_path: Path) -> None:
    proc = firedup("report", "sample_logs/small-tp1.log", "-o", str(tmp_path / "r"), env={"SOURCE_DATE_EPOCH": "now"})
    assert proc.returncode == 2
    assert proc.stderr.startswith("firedup: SOURCE_DATE_EPOCH='now' is not a time in whole seconds")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "r").exists()


def test_unset_or_empty_source_date_epoch_is_the_current_time() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    for environ in ({}, {"SOURCE_DATE_EPOCH": ""}):
        assert before <= generation_time(environ) <= datetime.now(UTC)
    assert generation_time({"SOURCE_DATE_EPOCH": PINNED_EPOCH}) == datetime(2026, 5, 28, 20, 26, 40, tzinfo=UTC)


def test_make_demo_pins_the_committed_report_to_the_last_commit_of_the_samples() -> None:
    """`make demo` rewrites reports/sample/ with SOURCE_DATE_EPOCH = the author time of the last
    commit of sample_logs/, so the committed report must carry that time: then the demo leaves
    `git status` clean (the rest of the bytes: the tests above)."""
    if shutil.which("make") is None or shutil.which("git") is None or not COMMITTED.is_dir():
        pytest.skip("needs make, git and reports/sample/")

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()

    if git("rev-parse", "--is-shallow-repository") != "false":
        pytest.skip("not a full git checkout: the samples' last commit is not known")
    if git("status", "--porcelain", "--", "sample_logs"):
        pytest.skip("sample_logs/ has uncommitted changes")
    env = {k: v for k, v in os.environ.items() if k not in ("SOURCE_DATE_EPOCH", "MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    dry = subprocess.run(["make", "-n", "demo"], cwd=ROOT, capture_output=True, text=True, env=env, check=False)
    m = re.search(r"^SOURCE_DATE_EPOCH=(\S+) \S*firedup report sample_logs/", dry.stdout, re.M)
    assert m is not None, dry.stdout + dry.stderr
    authored = git("log", "-1", "--format=%at", "--", "sample_logs")
    assert m.group(1) == authored
    stamp = datetime.fromtimestamp(int(authored), UTC).strftime("Generated %Y-%m-%d %H:%M UTC")
    # the committed files, as git holds them, not the working tree: running the README's own
    # `firedup report sample_logs/ ... -o reports/sample/` (today's time) must not fail this test
    # (regression); `git checkout reports/sample` or `make demo` puts the pinned time back
    for name in ("report.md", "index.html"):
        committed = git("show", f"HEAD:{COMMITTED.relative_to(ROOT).as_posix()}/{name}")
        assert GENERATED.findall(committed) == [stamp], name


def test_committed_example_is_what_the_command_writes(sample_report: Path) -> None:
    """reports/sample/ is current: the same text (charts compared as files in the test above;
    their pixels depend on the matplotlib and FreeType versions, so they are not compared here)."""
    if not COMMITTED.is_dir():
        pytest.skip("reports/sample/ is not in this checkout")
    assert _strip_time((COMMITTED / "report.md").read_text()) == _strip_time((sample_report / "report.md").read_text())

    def text_only(page: str) -> str:
        return _strip_time(re.sub(r"data:image/png;base64,[^\"]+", "data:", page))

    assert text_only((COMMITTED / "index.html").read_text()) == text_only((sample_report / "index.html").read_text())
    assert sorted(p.name for p in COMMITTED.iterdir()) == sorted(p.name for p in sample_report.iterdir())


# --- the command -------------------------------------------------------------------------------


def test_unknown_flag_fails_before_writing(tmp_path: Path) -> None:
    proc = firedup("report", "sample_logs/", "--by", "cuda_graph", "-o", str(tmp_path / "r"))
    assert proc.returncode == 2 and "unknown flag 'cuda_graph'" in proc.stderr
    assert not (tmp_path / "r").exists()


def test_unreadable_input_is_reported_and_the_rest_written(tmp_path: Path) -> None:
    proc = firedup("report", "sample_logs/small-tp1.log", str(tmp_path / "missing.log"), "-o", str(tmp_path / "r"))
    assert proc.returncode == 1
    assert "missing.log" in proc.stderr and "Traceback" not in proc.stderr
    page = (tmp_path / "r" / "index.html").read_text()
    assert "Inputs that could not be read (1)" in page and "missing.log" in page


def test_progress_bar_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from firedup import cli

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert cli._stage_bar() is None
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    bar = cli._stage_bar()
    assert bar is not None
    bar("parsing logs", 10, 40)
    bar("drawing charts", 4, 4)
    err = capsys.readouterr().err
    assert "\rparsing logs    [######..................] 10/40" in err
    assert "\n\rdrawing charts  [########################] 4/4" in err


def test_a_report_on_the_vllm_samples_speaks_vllm(tmp_path: Path) -> None:
    out = tmp_path / "vllm"
    proc = firedup("report", "sample_logs/vllm-tp2-eager.log", "sample_logs/vllm-tp2-compiled.log",
                   "--by", "disable_cuda_graph", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    md = (out / "report.md").read_text()
    truth = {n: TRUTH["files"][n]["runs"][0] for n in ("vllm-tp2-eager.log", "vllm-tp2-compiled.log")}
    compiled = truth["vllm-tp2-compiled.log"]["reported"]
    assert f"torch\\_compile explains {fmt_duration(compiled['torch_compile']['TP0'])}" in md
    assert "Compared: runs of `engine=vllm, model_path=Qwen/Qwen3-32B`." in md
    # vLLM's health semantics in the pasted snippets, not SGLang's
    prose = " ".join(md.replace("\n#", " ").split())  # the snippets' comments, wrapped at 80 columns
    assert ("vLLM's health routes answer with an empty body (200 with an empty body), and connection refused "
            "until the engine is ready.") in prose
    assert "VLLM_ENGINE_READY_TIMEOUT_S (engine): must outlast first line to ready" in md
    assert "http://127.0.0.1:8000/health" in md and "503 while warming up" not in md and "SGLang" not in md
    # the engine's own timers are shown with what they span, at the value the log printed
    engine_init = fmt_duration(compiled["engine_init"]["DP0"])
    assert f"| engine\\_init (spans torch\\_compile, kv\\_cache, cuda\\_graph) | {engine_init} |" in md
    assert "| model\\_loading (spans load\\_weights) |" in md


def _line_time(path: Path, number: int) -> datetime:
    """The timestamp SGLang printed on line `number` of `path` (`[2026-11-07 12:03:14 TP0] ...`)."""
    line = path.read_text(encoding="utf-8").splitlines()[number - 1]
    match = re.search(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", line)
    assert match, line
    return datetime.fromisoformat(match.group(1))


def test_crash_time_is_the_crash_lines_in_timeline_crash_section_and_appendix(sample_report: Path) -> None:
    """Regression: the appendix (and `timeline`) said the time to the end of the log (12 s), the
    crash section the time to the crash line (11 s), for the same crash."""
    name = "crash-then-restart.log"
    truth = TRUTH["files"][name]["runs"][0]
    path = SAMPLES / name
    first = datetime.fromisoformat(truth["first_ts"])
    to_crash = fmt_duration((_line_time(path, truth["crash"]["line"]) - first).total_seconds())
    to_log_end = fmt_duration((_line_time(path, truth["last_line"]) - first).total_seconds())
    assert to_crash != to_log_end  # the sample tells the two apart
    md = (sample_report / "report.md").read_text()
    crash_heading = next(line for line in md.splitlines() if line.startswith(f"### sample\\_logs/{md_text(name)}: "))
    assert crash_heading.endswith(f", after {to_crash}")
    assert f"after {to_crash}, \\~" in md and f"after {to_log_end}, \\~" not in md  # the appendix, then from launch
    timeline = firedup("timeline", str(path)).stdout
    assert f"after {to_crash}, ~" in timeline and f"after {to_log_end}," not in timeline  # then from launch


def test_the_report_leaves_runs_alone_and_names_them_by_their_ids(tmp_path: Path) -> None:
    """Regression: `report` rewrote `run.source` to its display name, and the content hash, then
    re-read by that name (no file there), gave the run another id than `firedup runs` does."""
    from firedup.render.report import build_context
    from firedup.tables.load import load
    from firedup.timeline.pipeline import parse_paths

    outside = tmp_path / "elsewhere" / "logs"  # outside the working directory: shown by a shorter name
    outside.mkdir(parents=True)
    log = outside / "crash-then-restart.log"
    shutil.copy(SAMPLES / log.name, log)
    missing = str(outside / "gone.log")
    result = parse_paths([str(log), missing], content_hash=True)
    sources = [run.source for run in result.runs]
    error_sources = [e.source for e in result.errors]
    (tmp_path / "out").mkdir()
    context = build_context(result, None, 0.01, tmp_path / "out", [str(log), missing])
    assert [run.source for run in result.runs] == sources == [str(log)] * 2
    assert [e.source for e in result.errors] == error_sources == [missing]
    shown = [entry["title"] for entry in context["appendix"]]
    assert shown == ["logs/crash-then-restart.log", "logs/crash-then-restart.log #2"]  # a display name...
    expected = load([str(log)]).runs["run_id"].to_list()
    assert [entry["run_id"] for entry in context["appendix"]] == expected  # ...and the run's own id


def test_a_url_from_a_log_is_never_a_live_link(tmp_path: Path) -> None:
    """A URL in a flag value became a link in report.md (GitHub links bare URLs, `www.` and
    e-mail addresses)."""
    args = "{'model_tag': 'Qwen/Qwen3-14B', 'host': '0.0.0.0', 'model': 'Qwen/Qwen3-14B'}"
    text = (SAMPLES / "vllm-warm-start.log").read_text()
    logs = tmp_path / "logs"
    logs.mkdir()
    for i, value in enumerate(["http://evil.example/a www.evil.example", "mail@evil.example"]):
        (logs / f"run{i}.log").write_text(text.replace(args, args[:-1] + f", 'knob': {value!r}}}"))
    result = report_of([str(logs)], tmp_path / "out", by=["knob"])
    assert result.runs == 2
    md = (tmp_path / "out" / "report.md").read_text()
    assert "evil.example" in md
    outside_code = re.sub(r"(`+).*?\1", "", re.sub(r"```.*?```", "", md, flags=re.DOTALL))
    assert "evil" not in outside_code, [line for line in outside_code.splitlines() if "evil" in line]
    page = (tmp_path / "out" / "index.html").read_text()
    assert not re.search(r"<a\b[^>]*evil", page)

"""charts: the data behind each chart, checked against the generator's truth and the log text.

The figures themselves are checked for what a reader would stumble on without looking at
pixels: every text inside the figure, no two texts overlapping (16 ranks, 30 runs), titles,
legends, time axes in minutes:seconds, and the same bytes for the same chart.
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from conftest import ROOT, SAMPLE_LOGS, sample_truth
from firedup.core.units import fmt_clock, fmt_duration
from firedup.render import charts
from firedup.render.charts import (
    PHASE_COLOURS,
    compare_data,
    distribution_data,
    phase_colour,
    ranks_data,
    tick_step,
    timeline_data,
)
from firedup.tables.compare import compare
from firedup.tables.frames import Runs
from firedup.tables.load import load
from firedup.timeline.phases import PHASE_ORDER
from logmaker import Spec, write, write_many_ranks

SAMPLES = SAMPLE_LOGS
TRUTH = sample_truth()


@pytest.fixture(scope="module")
def samples() -> Runs:
    return load([str(SAMPLES)])


def _truth_runs() -> Iterator[tuple[str, dict[str, Any]]]:
    for name, item in TRUTH["files"].items():
        for run in item["runs"]:
            yield name, run


def _run_id(runs: Runs, name: str, index: int = 0) -> str:
    row = runs.runs.filter(pl.col("source").str.ends_with("/" + name) & (pl.col("run_index") == index))
    return str(row["run_id"][0])


# --- colours and axes -------------------------------------------------------------------------


def test_every_phase_has_its_own_colour() -> None:
    names = [p for p in PHASE_ORDER if p != "total"]
    colours = [phase_colour(p) for p in names]
    assert len(set(colours)) == len(colours), dict(zip(names, colours, strict=True))
    # a draft model's phase is a lighter copy of the target's: same hue, closer to white
    for name in ("load_weights", "cuda_graph", "kv_cache", "dist_init"):
        target, draft = phase_colour(name), phase_colour(f"draft.{name}")
        assert sum(int(draft[i:i + 2], 16) for i in (1, 3, 5)) > sum(int(target[i:i + 2], 16) for i in (1, 3, 5))
    # unknown names get a fixed colour, the same in every process (no hash randomisation)
    assert phase_colour("some_new_phase") == phase_colour("some_new_phase")
    assert set(PHASE_COLOURS) <= set(PHASE_ORDER)


def test_phase_colours_are_the_palette_in_every_chart(samples: Runs) -> None:
    from matplotlib.colors import to_hex

    seen: dict[str, set[str]] = {}
    for fig in (charts.timeline(samples), charts.compare(samples, ["disable_cuda_graph"])):
        for legend in fig.legends:
            for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
                if text.get_text() in PHASE_ORDER or text.get_text().startswith("draft."):
                    seen.setdefault(text.get_text(), set()).add(to_hex(handle.get_facecolor()).upper())
    assert seen and all(colours == {phase_colour(p).upper()} for p, colours in seen.items()), seen


def test_clock_labels() -> None:
    assert [fmt_clock(s) for s in (0, 59.6, 242, 3600, 3723)] == ["0:00", "1:00", "4:02", "1:00:00", "1:02:03"]
    assert tick_step(900) == 120 and tick_step(250) == 30 and tick_step(12) == 2
    assert 900 / tick_step(900) <= 9


# --- timeline ----------------------------------------------------------------------------------


def test_timeline_marks_ready_and_crash_where_the_truth_says(samples: Runs) -> None:
    data = timeline_data(samples)
    assert len(data.rows) == len(samples) == sum(len(f["runs"]) for f in TRUTH["files"].values())
    for name, run in _truth_runs():
        rid = _run_id(samples, name, run["run_index"])
        (mark,) = data.marks.filter(pl.col("run_id") == rid).iter_rows(named=True)
        if run["outcome"] == "ready":
            assert mark["kind"] == "ready"
            # the log's clock has whole seconds: the mark is within a second of the generator's offset
            assert abs(mark["at"] - run["ready_offset_s"]) <= 1.0, (name, mark)
        else:
            assert mark["kind"] == "crash" and run["crash"]["category"] in mark["label"]


def test_timeline_bars_cover_each_run_and_gaps_are_their_own_phase(samples: Runs) -> None:
    data = timeline_data(samples)
    for rid, bars in data.bars.group_by("run_id"):
        total = float(samples.runs.filter(pl.col("run_id") == rid[0])["seconds_to_end"][0])
        # the run-level bars plus the unattributed gaps tile the run from its first line to its end
        covered = sorted((b["start"], b["end"]) for b in bars.iter_rows(named=True))
        assert covered[0][0] == 0.0
        reach = 0.0
        for start, end in covered:
            assert start <= reach + 1e-6, (rid, start, reach)
            reach = max(reach, end)
        assert reach == pytest.approx(total, abs=1e-6)
        # drawn longest first, so a short phase inside a long one stays on top
        lengths = [b["end"] - b["start"] for b in bars.iter_rows(named=True)]
        assert lengths == sorted(lengths, reverse=True)
    assert "unattributed" in set(data.bars["phase"].to_list())


def test_timeline_rows_per_rank_follow_the_rank_tags_in_the_log(samples: Runs) -> None:
    rid = _run_id(samples, "prod-tp8-eagle3-03.log")
    data = timeline_data(samples, [rid], ranks=True)
    tags = sorted(set(re.findall(r"^\[[^\]]* (TP\d+)\]", (SAMPLES / "prod-tp8-eagle3-03.log").read_text(),
                                 re.MULTILINE)), key=lambda t: int(t[2:]))
    assert data.rows == ["prod-tp8-eagle3-03.log", *(f"    {t}" for t in tags)]
    # each rank row holds that rank's load_weights, as long as the elapsed= line printed
    truth = dict(_truth_runs())["prod-tp8-eagle3-03.log"]["reported"]["load_weights"]
    for row, tag in enumerate(tags, start=1):
        lw = data.bars.filter((pl.col("row") == row) & (pl.col("phase") == "load_weights"))
        assert lw["seconds"][0] == pytest.approx(truth[tag])


def test_timeline_keeps_the_callers_order(samples: Runs) -> None:
    ids = [_run_id(samples, "small-tp1.log"), _run_id(samples, "debug-tp8-eagle3-01.log")]
    assert timeline_data(samples, ids).rows == ["small-tp1.log", "debug-tp8-eagle3-01.log"]


# --- compare -----------------------------------------------------------------------------------


def test_compare_data_medians_match_the_truth(samples: Runs) -> None:
    data = compare_data(compare(samples, ["disable_cuda_graph"]))
    times: dict[bool, list[float]] = {True: [], False: []}
    for _name, run in _truth_runs():
        if run["outcome"] == "ready" and run["config"]["model_path"].startswith("Qwen/Qwen3-235B"):
            times[run["config"]["disable_cuda_graph"]].append(round(run["ready_offset_s"]))
    groups = {r["group"].split(" ")[0]: r for r in data.groups.iter_rows(named=True)}
    assert set(groups) == {"debug", "production"}
    for key, name in ((True, "debug"), (False, "production")):
        assert groups[name]["n"] == len(times[key])
        assert groups[name]["median"] == pytest.approx(statistics.median(times[key]), abs=1.0)
    # segments of a bar are contiguous and sum to the bar's length; debug has no graph capture
    for gi, segs in data.segments.group_by("group_index", maintain_order=True):
        left = 0.0
        for seg in segs.iter_rows(named=True):
            assert seg["left"] == pytest.approx(left)
            left += seg["seconds"]
        assert left == pytest.approx(data.groups.filter(pl.col("group_index") == gi[0])["stacked"][0])
    debug_phases = set(data.segments.filter(pl.col("group") == groups["debug"]["group"])["phase"].to_list())
    assert "cuda_graph" not in debug_phases and "load_weights" in debug_phases
    prod = data.segments.filter(pl.col("group") == groups["production"]["group"])
    graph = prod.filter(pl.col("phase") == "cuda_graph")["seconds"][0]
    prod_truth = [sum(v["TP0"] for k, v in r["reported"].items() if k.startswith("cuda_graph/"))
                  for n, r in _truth_runs() if n.startswith("prod-")]
    assert graph == pytest.approx(statistics.median(prod_truth), abs=2.0)


def test_compare_leaves_umbrella_phases_out_of_the_stack(tmp_path: Path) -> None:
    runs = load([str(SAMPLES / "debug-tp8-eagle3-01.log")])
    cmp = compare(runs)
    cmp.grouping.groups[0].phases["engine_init"] = 500.0  # vLLM's timer spans the others
    assert "engine_init" not in set(compare_data(cmp).segments["phase"].to_list())


def test_vllm_timers_around_other_phases_are_not_stacked_twice() -> None:
    """vLLM's `Model loading took` spans `Loading weights took`, `init engine` spans compile and
    capture: the bars stack the steps, and add up to no more than the time to ready."""
    names = ("vllm-tp2-eager.log", "vllm-tp2-compiled.log")
    data = compare_data(compare(load([str(SAMPLES / n) for n in names]), ["disable_cuda_graph"]))
    assert not {"model_loading", "engine_init"} & set(data.segments["phase"].to_list())
    for g in data.groups.iter_rows(named=True):
        assert g["stacked"] <= g["median"] + 0.5, g
    truth = dict(_truth_runs())["vllm-tp2-compiled.log"]["reported"]
    prod = data.segments.filter(pl.col("group_index") == 1)
    for phase in ("load_weights", "torch_compile", "cuda_graph"):
        assert prod.filter(pl.col("phase") == phase)["seconds"][0] == truth[phase]["TP0"]


# --- distribution ------------------------------------------------------------------------------


def test_distribution_points_are_the_ready_times_and_the_budget_is_above_them(samples: Runs) -> None:
    data = distribution_data(samples, ["disable_cuda_graph"], risk=0.05)
    # from launch, as the budget line counts and `runs` shows (`launch.seconds_to_ready`): no line states
    # these launches, so each is the first line less SGLang's typical gap
    from firedup.formats import get_format

    gap = get_format("sglang").timeouts.launch_gap
    assert gap is not None
    expected = sorted(round(r["ready_offset_s"]) + gap.typical for n, r in _truth_runs()
                      if r["outcome"] == "ready" and r["config"]["model_path"].startswith("Qwen/Qwen3-235B"))
    assert sorted(data.points["seconds"].to_list()) == pytest.approx(expected, abs=1.0)
    for g in data.budgets.iter_rows(named=True):
        pts = data.points.filter(pl.col("group_index") == g["group_index"])["seconds"].to_list()
        assert g["budget_seconds"] >= max(pts) and g["risk"] == 0.05 and g["n"] == len(pts)
    # the vertical spread is deterministic and keeps points inside their row
    offsets = data.points["offset"].to_list()
    assert offsets == distribution_data(samples, ["disable_cuda_graph"], risk=0.05).points["offset"].to_list()
    assert all(abs(o) < 0.3 for o in offsets)


# --- ranks -------------------------------------------------------------------------------------


def test_ranks_heatmap_is_the_printed_elapsed_values(samples: Runs) -> None:
    truth = {(n, r["run_index"]): r for n, r in _truth_runs()}
    # the default run is the one whose ranks differ most, by the values the log printed
    spreads = {key: max((max(v.values()) - min(v.values())) for v in r["reported"].values() if len(v) > 1)
               for key, r in truth.items() if r["reported"] and any(len(v) > 1 for v in r["reported"].values())}
    worst = max(spreads, key=lambda k: spreads[k])
    data = ranks_data(samples)
    assert data.run_id == _run_id(samples, *worst)
    reported = truth[worst]["reported"]
    for key, by_rank in reported.items():
        column = key.replace("/", " (") + (")" if "/" in key else "")
        for rank, seconds in by_rank.items():
            cell = data.cells.filter((pl.col("rank") == rank) & (pl.col("column") == column))
            assert cell["seconds"][0] == pytest.approx(seconds), (key, rank)
            assert cell["excess"][0] == pytest.approx(seconds - min(by_rank.values()))
    assert data.ranks == [f"TP{i}" for i in range(8)]
    assert data.columns.index("load_weights") < data.columns.index("cuda_graph (prefill)")


def test_ranks_flags_a_straggler_as_the_text_view_does(tmp_path: Path) -> None:
    base = datetime(2026, 11, 5, 8, 0, 0)
    write(tmp_path / "tp16.log", Spec(base, tp=16))
    text = (tmp_path / "tp16.log").read_text()
    # every rank states its load time on the end line, as SGLang 0.5 prints it; TP11 takes 60 s longer
    pattern = re.compile(r"( TP(\d+)\] Load weight end\. )(type=DeepseekV3)")
    assert len(pattern.findall(text)) == 16, "logmaker's load line changed"
    text = pattern.sub(lambda m: f"{m.group(1)}elapsed={120 + (60 if m.group(2) == '11' else 0):.2f} s, "
                                 f"{m.group(3)}", text)
    (tmp_path / "tp16.log").write_text(text)
    runs = load([str(tmp_path / "tp16.log")])
    data = ranks_data(runs)
    assert len(data.ranks) == 16
    flagged = data.cells.filter(pl.col("straggler"))
    assert flagged.select("rank", "phase").rows() == [("TP11", "load_weights")]


def test_ranks_without_ranks_says_why() -> None:
    runs = load([str(SAMPLES / "small-tp1.log")])
    with pytest.raises(ValueError, match="two or more ranks"):
        ranks_data(runs)


# --- the figures: readable, labelled, not overlapping ------------------------------------------


def _texts(fig: Any) -> list[tuple[str, Any]]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    hidden = set()  # tick labels outside the axis' view: matplotlib keeps them but does not draw them
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo - 1e-9 <= tick.get_loc() <= hi + 1e-9 or not tick.get_visible():
                    hidden.update({id(tick.label1), id(tick.label2)})
    out = []
    for text in fig.findobj(Text):
        if id(text) in hidden or not text.get_visible() or not text.get_text().strip():
            continue
        out.append((text.get_text(), text.get_window_extent(renderer)))
    return out


def _assert_readable(fig: Any) -> None:
    texts = _texts(fig)
    width, height = fig.get_size_inches() * fig.dpi
    for label, box in texts:  # nothing cut off at the figure's edge
        assert box.x0 >= -1 and box.y0 >= -1 and box.x1 <= width + 1 and box.y1 <= height + 1, (label, box)
    for (a, box_a), (b, box_b) in itertools.combinations(texts, 2):
        overlap_w = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
        overlap_h = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
        assert overlap_w <= 1 or overlap_h <= 1, f"{a!r} overlaps {b!r}"


def test_the_overlap_check_catches_overlaps() -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 2))
    fig.text(0.1, 0.5, "ready 14 min 42 s")
    fig.text(0.15, 0.5, "crash (oom in cuda_graph)")
    with pytest.raises(AssertionError, match="overlaps"):
        _assert_readable(fig)


@pytest.fixture(scope="module")
def thirty(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    from firedup.synth.bulk import write_many

    folder = tmp_path_factory.mktemp("thirty")
    write_many(folder, n=30, seed=3, target_bytes=1000)
    return load([str(folder)])


@pytest.fixture(scope="module")
def sixteen(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    folder = tmp_path_factory.mktemp("sixteen")
    base = datetime(2026, 11, 5, 8, 0, 0)
    write(folder / "tp16-a.log", Spec(base, tp=16))
    write(folder / "tp16-b.log", Spec(base, tp=16, disable_cuda_graph=True, load_weights=200))
    return load([str(folder)])


@pytest.mark.parametrize("kind", list(charts.KINDS))
def test_samples_charts_are_labelled_and_do_not_overlap(samples: Runs, kind: str) -> None:
    fig = charts.plot(kind, samples, ["disable_cuda_graph"])
    _assert_readable(fig)
    titles = [ax.get_title(loc="left") for ax in fig.axes] + [fig.get_suptitle()]
    assert any(t.strip() for t in titles), "no title"
    assert fig.legends or any(ax.get_legend() for ax in fig.axes), "no legend"
    labels = [ax.get_xlabel() + ax.get_ylabel() for ax in fig.axes]
    assert any("m:ss" in lab or "minutes:seconds" in lab for lab in labels), labels


def test_time_ticks_read_minutes_and_seconds(samples: Runs) -> None:
    fig = charts.timeline(samples)
    texts = [t for t, _ in _texts(fig)]
    ticks = [t for t in texts if re.fullmatch(r"\d+:\d{2}", t)]
    assert "0:00" in ticks and len(ticks) >= 4


def test_thirty_runs_do_not_overlap(thirty: Runs) -> None:
    assert len(thirty) >= 30
    for kind in ("timeline", "compare", "distribution"):
        _assert_readable(charts.plot(kind, thirty))


def test_sixteen_ranks_do_not_overlap(sixteen: Runs) -> None:
    _assert_readable(charts.ranks(sixteen))
    _assert_readable(charts.timeline(sixteen, ranks=True))


def test_same_chart_same_bytes(samples: Runs, tmp_path: Path) -> None:
    for fmt in ("png", "svg"):
        first = charts.to_bytes(charts.compare(samples, ["disable_cuda_graph"]), fmt)
        second = charts.to_bytes(charts.compare(samples, ["disable_cuda_graph"]), fmt)
        assert first == second
    svg = charts.to_bytes(charts.compare(samples, ["disable_cuda_graph"]), "svg").decode()
    assert "<dc:date>" not in svg
    png = charts.to_bytes(charts.compare(samples, ["disable_cuda_graph"]), "png")
    assert b"Software" not in png and b"matplotlib version" not in png
    with pytest.raises(ValueError, match=r"\.png or \.svg"):
        charts.save(charts.compare(samples), tmp_path / "chart.pdf")


def test_charts_do_not_touch_pyplot_state(samples: Runs) -> None:
    import sys

    charts.timeline(samples)
    assert "matplotlib.pyplot" not in sys.modules or not __import__("matplotlib.pyplot").pyplot.get_fignums()


# --- the command -------------------------------------------------------------------------------


def _firedup(*args: str) -> Any:
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "firedup", *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False, cwd=ROOT)


def test_plot_command_writes_png_and_svg(tmp_path: Path) -> None:
    png, svg = tmp_path / "compare.png", tmp_path / "timeline.svg"
    proc = _firedup("plot", "compare", "sample_logs/", "--by", "disable_cuda_graph", "-o", str(png))
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    proc = _firedup("plot", "timeline", "sample_logs/", "--run", "crash-then-restart.log#2", "--ranks", "-o", str(svg))
    assert proc.returncode == 0, proc.stderr
    text = svg.read_text()
    assert text.startswith("<?xml") and "crash-then-restart.log #2" in text and "TP7" in text
    assert "prod-tp8-eagle3-01.log" not in text  # only the run asked for


@pytest.mark.parametrize(("args", "message"), [
    (("plot", "pie", "sample_logs/", "-o", "x.png"), "'pie' is not one of"),
    (("plot", "compare", "sample_logs/", "-o", "x.pdf"), ".png or .svg"),
    (("plot", "ranks", "sample_logs/", "--run", "nope.log", "-o", "x.png"), "no run 'nope.log'"),
    (("plot", "compare", "sample_logs/", "--by", "cuda_graph", "-o", "x.png"), "unknown flag 'cuda_graph'"),
])
def test_plot_usage_errors_are_one_line(args: tuple[str, ...], message: str) -> None:
    proc = _firedup(*args)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_nothing_to_draw_is_a_data_condition_not_a_usage_error(tmp_path: Path) -> None:
    """A single-rank log has no rank heatmap: one line and exit 5 (EXIT_NO_DATA), no `Usage:`."""
    proc = _firedup("plot", "ranks", "sample_logs/small-tp1.log", "-o", str(tmp_path / "x.png"))
    assert proc.returncode == 5, proc.stderr
    assert proc.stderr == ("firedup: no run has phases on two or more ranks, so there is no rank heatmap "
                           "to draw\n")
    assert not (tmp_path / "x.png").exists()


def test_plot_kinds_match_the_library() -> None:
    from firedup.cli import PLOT_KINDS

    assert tuple(charts.KINDS) == PLOT_KINDS


# --- what a chart leaves out ------------------------------------------------------------------


def _axis_texts(fig: Any) -> str:
    return "\n".join(t.get_text() for ax in fig.axes for t in (ax.xaxis.label, *ax.texts))


@pytest.mark.parametrize("kind", ["compare", "distribution"])
def test_a_chart_of_some_runs_says_how_many_of_how_many_and_why(samples: Runs, kind: str) -> None:
    """Regression: `plot compare` / `plot distribution` silently drew a subset of the runs."""
    from firedup.tables.budget import budgets

    if kind == "compare":
        computed = compare(samples, ["disable_cuda_graph"])
        grouping, fig = computed.grouping, charts.compare(samples, comparison=computed)
        cdata = compare_data(computed)
        drawn, cover = int(cdata.groups["n"].sum()), cdata.coverage
    else:
        report = budgets(samples, ["disable_cuda_graph"], 0.01)
        grouping, fig = report.grouping, charts.distribution(samples, budget_report=report)
        ddata = distribution_data(samples, budget_report=report)
        drawn, cover = ddata.points.height, ddata.coverage
    crashed = sum(r["outcome"] == "crashed" for _, r in _truth_runs())
    total = sum(1 for _ in _truth_runs())
    assert (cover.shown, cover.total) == (drawn, total) and drawn < total
    assert cover.left_out["crashed"] == crashed and sum(cover.left_out.values()) == total - drawn
    kinds = [lo.kind for lo in grouping.left_out]
    assert cover.left_out == {kind: kinds.count(kind) for kind in kinds}
    text = " ".join(_axis_texts(fig).split())
    assert f"Drawn: {drawn} of {total} runs; left out: " in text and f"{crashed} crashed" in text
    _assert_readable(fig)


def test_a_chart_of_every_run_says_nothing_more() -> None:
    debug = load(sorted(str(p) for p in SAMPLES.glob("debug-*.log")))
    fig = charts.compare(debug)
    assert compare_data(compare(debug)).coverage.complete and "Drawn:" not in _axis_texts(fig)


def test_the_distribution_draws_the_budgets_it_is_given(samples: Runs) -> None:
    """The chart draws the computed BudgetReport (here at 5 %), not its own at the default 1 %."""
    from firedup.tables.budget import budgets

    report = budgets(samples, ["disable_cuda_graph"], 0.05)
    data = distribution_data(samples, budget_report=report)
    assert data.risk == 0.05
    assert data.budgets["budget_seconds"].to_list() == [b.budget_seconds for b in report.budgets if b.n]
    fig = charts.distribution(samples, budget_report=report)
    assert "5 %" in fig.get_suptitle()


def test_plot_says_on_stderr_what_the_chart_leaves_out(tmp_path: Path) -> None:
    total = sum(1 for _ in _truth_runs())
    for kind in ("compare", "distribution"):
        proc = _firedup("plot", kind, "sample_logs/", "--by", "disable_cuda_graph", "-o", str(tmp_path / "c.png"))
        assert proc.returncode == 0, proc.stderr
        said = " ".join(proc.stderr.split())  # one note, fitted to 80 columns
        assert re.search(rf"^note: the chart draws \d+ of {total} runs; left out: .*crashed", said)
    proc = _firedup("plot", "compare", "sample_logs/debug-tp8-eagle3-01.log", "sample_logs/debug-tp8-eagle3-02.log",
                    "-o", str(tmp_path / "d.png"))
    assert proc.returncode == 0 and "draws" not in proc.stderr, proc.stderr


def test_ranks_heatmap_blames_the_last_rank_in_at_a_barrier() -> None:
    """The heatmap and its caption agree with the text view: TP0 (slow load) arrived last at kv_cache."""
    path = ROOT / "tests" / "fixtures" / "logs2026" / "sglang_tp4_slow_load_waits_at_kv.log"
    data = ranks_data(load([str(path)]))
    kv = data.cells.filter(pl.col("phase") == "kv_cache")
    assert kv.filter(pl.col("straggler"))["rank"].to_list() == ["TP0"]
    assert kv.filter(pl.col("rank") == "TP0")["late"][0] == pytest.approx(8.0)
    caption = data.summary
    assert "TP0" in caption and "TP1" not in caption


def test_dollars_in_names_and_flag_values_are_shown_as_written(tmp_path: Path) -> None:
    """matplotlib read `$...$` in a label as math: `$x^$` raised, `$\\frac{1}{2}$` typeset a fraction."""
    from firedup import api

    args = "{'model_tag': 'Qwen/Qwen3-14B', 'host': '0.0.0.0', 'model': 'Qwen/Qwen3-14B'}"
    text = (SAMPLE_LOGS / "vllm-warm-start.log").read_text()
    for i, value in enumerate(["$x^$", "$\\frac{1}{2}$"]):
        (tmp_path / f"run{i}-$x^$.log").write_text(text.replace(args, args[:-1] + f", 'knob': {value!r}}}"))
    runs = api.load([str(tmp_path)])
    for kind in ("timeline", "compare", "distribution"):
        out = tmp_path / f"{kind}.svg"
        api.plot(kind, runs, out, by="knob")
        svg = out.read_text()
        assert "$x^$" in svg or (kind == "distribution" and "$\\frac{1}{2}$" in svg), kind


# --- rank charts at scale (issue 45) --------------------------------------------------------------


@pytest.fixture(scope="module")
def many_ranks(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """2,000 ranks whose weights take 4-11 s: more ranks than the heatmap's 64 rows."""
    path = tmp_path_factory.mktemp("ranks") / "ranks2000.log"
    write_many_ranks(path, 2000)
    return load([str(path)])


def test_ranks_title_is_true_of_every_rank_not_only_the_rows_drawn(many_ranks: Runs) -> None:
    """The title's median was taken over the 64 rows drawn (all near the slowest), so 2,000 ranks
    spanning 4-11 s were said to "agree within a second"."""
    data = ranks_data(many_ranks)
    assert len(data.ranks) == charts.heatmap.RANKS_MAX_ROWS and data.total_ranks == 2000
    assert "agree" not in data.summary
    every = many_ranks.phases.filter((pl.col("scope") == "rank") & (pl.col("phase") == "load_weights"))
    over = float(every["seconds"].max()) - float(every["seconds"].median())  # type: ignore[arg-type]
    slowest = set(every.filter(pl.col("seconds") == pl.col("seconds").max())["rank"].to_list())
    assert over >= 3.0
    named = re.match(rf"Slowest: (TP\d+) in load_weights, {re.escape(fmt_duration(over))} over the median rank",
                     data.summary)
    assert named and named[1] in slowest, data.summary
    figure = charts.ranks(many_ranks)
    assert data.summary in figure.axes[0].get_title(loc="left").replace("\n", " ")
    assert ranks_data(many_ranks).summary == data.summary  # ties broken the same way each time


def test_timeline_by_rank_says_how_many_ranks_it_draws(many_ranks: Runs) -> None:
    """60 rows of 2,000 ranks were drawn without a word; and each row filtered every rank."""
    data = timeline_data(many_ranks, ranks=True)
    assert len(data.rows) == charts.gantt.TIMELINE_MAX_ROWS
    assert "the first 59 of 2,000 ranks in rank order" in data.title
    assert data.rows[1:4] == ["    TP0", "    TP1", "    TP2"]
    drawn = {r.strip() for r in data.rows[1:]}
    assert set(data.bars.filter(pl.col("rank").is_not_null())["rank"].to_list()) == drawn

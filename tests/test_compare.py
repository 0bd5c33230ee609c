"""compare: groups, statistics and deltas checked against figures computed from the log text."""

from __future__ import annotations

import re
import statistics
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import SAMPLE_LOGS, sample_truth
from firedup.core.units import fmt_duration
from firedup.errors import UnknownFlagError
from firedup.tables.compare import compare
from firedup.tables.compare_text import comparison_text
from firedup.tables.grouping import quantile
from firedup.tables.load import load
from logmaker import Spec, fleet, ready_seconds_by_regex, ready_times, write


def test_quantile_is_numpy_linear() -> None:
    # statistics.quantiles(method="inclusive") is the same R type 7 rule, computed another way
    data = [230.0, 240.0, 250.0, 255.0, 265.0]
    assert quantile(data, 0.9) == pytest.approx(statistics.quantiles(data, n=10, method="inclusive")[8])
    assert quantile(data, 0.5) == statistics.median(data)
    assert quantile([7.0], 0.9) == 7.0
    assert quantile([], 0.5) is None


def test_groups_by_disable_cuda_graph(fleet_logs: Path) -> None:
    cmp = compare(load([str(fleet_logs)]), ["disable_cuda_graph"])
    groups = {g.key["disable_cuda_graph"]: g for g in cmp.grouping.groups}
    debug, prod = ready_times(fleet_logs, "debug"), ready_times(fleet_logs, "prod")
    assert len(debug) == 5 and len(prod) == 5  # prod-oom has no ready line
    for value, times in ((True, debug), (False, prod)):
        g = groups[value]
        assert g.n == len(times)
        assert g.median == statistics.median(times)
        assert g.p90 == pytest.approx(statistics.quantiles(times, n=10, method="inclusive")[8])
        assert g.max == max(times)
    assert [lo.source for lo in groups[False].not_timed] == [str(fleet_logs / "prod-oom.log")]


def test_cuda_graph_explains_the_difference(fleet_logs: Path) -> None:
    truth = fleet(fleet_logs)
    cmp = compare(load([str(fleet_logs)]), ["disable_cuda_graph"])
    (d,) = cmp.deltas
    assert d.base.key == {"disable_cuda_graph": True}
    assert d.main_phase == "cuda_graph"
    prod_graph = [float(t["cuda_graph"] or 0) for n, t in truth.items() if n.startswith("prod-") and t.get("cuda_graph")]
    assert d.main_phase_seconds == statistics.median(prod_graph)
    assert d.total_seconds == statistics.median(ready_times(fleet_logs, "prod")) - statistics.median(ready_times(fleet_logs, "debug"))
    assert d.flags_differ == {"disable_cuda_graph": ([True], [False])}
    head = cmp.headline
    assert head.startswith("debug (disable_cuda_graph=True) ready in a median of "
                           f"{fmt_duration(statistics.median(ready_times(fleet_logs, 'debug')))}, production "
                           f"(disable_cuda_graph=False) in {fmt_duration(statistics.median(ready_times(fleet_logs, 'prod')))}")
    # every phase the flag changes: the target's graphs and the draft's (issue 38)
    names, seconds = d.explained
    assert names == ["cuda_graph", "draft.cuda_graph"] and seconds is not None
    assert seconds == pytest.approx(d.main_phase_seconds + d.phases["draft.cuda_graph"])
    assert f"cuda_graph and draft.cuda_graph explain {fmt_duration(seconds)} of the " \
           f"{fmt_duration(d.total_seconds)} difference" in head


def test_left_out_says_why(fleet_logs: Path) -> None:
    cmp = compare(load([str(fleet_logs)]), ["disable_cuda_graph"])
    reasons = {Path(lo.source).name: lo.reason for lo in cmp.grouping.left_out}
    assert set(reasons) == {"prod-oom.log", "small-tp1.log"}
    assert reasons["prod-oom.log"].startswith("crashed (oom in cuda_graph)")
    assert "other model" in reasons["small-tp1.log"] and "Qwen2.5-0.5B" in reasons["small-tp1.log"]
    text = comparison_text(cmp)  # one line per reason with a count; -v each run with its reason
    assert "left out of the timing (2 runs; -v lists each with its reason):" in text
    assert "  1 crashed: prod-oom.log" in text and "  1 of another model: small-tp1.log" in text
    verbose = comparison_text(cmp, verbose=True)
    assert "left out of the timing (2):" in verbose
    assert f"prod-oom.log: {reasons['prod-oom.log']}" in verbose


def test_without_by_groups_by_the_flags_that_vary(fleet_logs: Path) -> None:
    cmp = compare(load([str(fleet_logs)]))
    assert cmp.grouping.by == ["disable_cuda_graph"]  # tp_size differs only for the other model
    assert cmp.grouping.by_auto
    assert any("disable_cuda_graph" in n for n in cmp.grouping.notes)


def test_auto_grouping_passes_over_flags_that_give_a_group_per_run(tmp_path: Path) -> None:
    """A float and an int each run sets its own way split 6 runs into 6 groups; the boolean makes 2."""
    for i in range(6):
        write(tmp_path / f"run-{i}.log", Spec(datetime(2026, 1, 5, 8 + i), disable_cuda_graph=i % 2 == 0,
                                               extra_flags={"mem_fraction_static": 0.80 + i / 100,
                                                            "cuda_graph_max_bs": 8 * (i + 1)}))
    runs = load([str(tmp_path)])
    cmp = compare(runs)
    assert cmp.grouping.by == ["disable_cuda_graph"] and [g.n for g in cmp.grouping.groups] == [3, 3]
    [note] = [n for n in cmp.grouping.notes if "not grouped by" in n]
    assert "mem_fraction_static (float values)" in note
    assert "cuda_graph_max_bs (most runs have a value of their own)" in note
    assert "mem_fraction_static" in comparison_text(cmp)
    # asked for by name, a float still groups, as before
    assert [g.n for g in compare(runs, ["mem_fraction_static"]).grouping.groups] == [1] * 6


def test_auto_grouping_passes_over_seeds_ports_paths_among_the_other_flags(tmp_path: Path) -> None:
    """No common flag differs: of the other flags, only the categorical one groups."""
    for i in range(6):
        extra: dict[str, object] = {
            "schedule_policy": "lpm" if i < 3 else "fcfs", "sampling_seed": i % 2, "metrics_port": 9000 + i % 2,
            "dump_dir": f"dumps/{i % 2}", "weights_source": f"/data/{i % 2}",
            "schedule_conservativeness": 1.0 if i < 3 else 0.5, "chunk_budget": 1000 + i}
        write(tmp_path / f"run-{i}.log", Spec(datetime(2026, 1, 5, 8 + i), extra_flags=extra))
    grouping = compare(load([str(tmp_path)])).grouping
    assert grouping.by == ["flag.schedule_policy"] and [g.n for g in grouping.groups] == [3, 3]
    [note] = [n for n in grouping.notes if "not grouped by" in n]
    # prose names a flag by its key, as the log states it (the tables' column is `flag.KEY`)
    for expected in ("sampling_seed (a seed)", "metrics_port (a port or address)", "schedule_conservativeness (float",
                     "chunk_budget (most runs have a value of their own)"):
        assert expected in note
    assert "flag." not in note
    assert "dump_dir, weights_source (a path)" in note or "weights_source, dump_dir (a path)" in note


def test_grouping_by_model_keeps_every_model(fleet_logs: Path) -> None:
    cmp = compare(load([str(fleet_logs)]), ["model_path"])
    assert sorted(g.key["model_path"] for g in cmp.grouping.groups) == ["/models/DeepSeek-V3", "/models/Qwen2.5-0.5B"]
    assert [Path(lo.source).name for lo in cmp.grouping.left_out] == ["prod-oom.log"]


# --- which runs are compared without --by --------------------------------------------------


def _write_runs(folder: Path, prefix: str, n: int, model: str, day: int, args_line: bool = True) -> list[float]:
    """`n` ready runs of `model` (debug and production in turn); without their args line, their
    model is unknown. Their times to ready, read by regex."""
    times = []
    for i in range(n):
        path = folder / f"{prefix}-{i}.log"
        write(path, Spec(datetime(2026, 4, day, 8 + i), model=model, disable_cuda_graph=i % 2 == 1,
                         load_weights=100 + 7 * i))
        if not args_line:
            path.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                                    if "server_args=" not in line))
        times.append(ready_seconds_by_regex(path))
    return [t for t in times if t is not None]


def _suggested_by(notes: list[str]) -> list[str]:
    """The `--by X,Y` the note on the choice suggests to compare the other populations."""
    [hint] = [n for n in notes if n.startswith("to compare another")]
    return hint.split("`--by ")[1].split("`")[0].split(",")


@pytest.mark.parametrize("unknown_runs", [2, 3])
def test_without_by_a_known_model_with_two_timed_runs_beats_runs_of_unknown_model(tmp_path: Path,
                                                                                  unknown_runs: int) -> None:
    """Runs without an args line may be of different models: a comparison of them tells little,
    so a known model with two timed runs is compared, on a tie and against more runs alike."""
    _write_runs(tmp_path, "tail", unknown_runs, "/models/Lost", 1, args_line=False)
    known = _write_runs(tmp_path, "known", 2, "/models/Known-7B", 2)
    g = compare(load([str(tmp_path)])).grouping
    assert g.population == {"engine": "sglang", "model_path": "/models/Known-7B"}
    assert sorted(t for grp in g.groups for t in grp.ready_seconds) == sorted(known)
    assert not any("though their model is unknown" in n for n in g.notes)
    [choice] = [n for n in g.notes if "the most ready runs" in n]
    passed_over = f"runs of unknown model ({unknown_runs} timed) may be of different models, so they are not compared"
    assert (passed_over in choice) == (unknown_runs > 2)
    if unknown_runs > 2:
        assert "of known model with the most ready runs to time (2 ready, of 2 runs)" in choice


def test_without_by_the_most_ready_runs_are_compared_even_of_unknown_model_and_it_says_so(tmp_path: Path) -> None:
    unknown = _write_runs(tmp_path, "tail", 3, "/models/Lost", 1, args_line=False)
    _write_runs(tmp_path, "known", 1, "/models/Known-7B", 2)
    _write_runs(tmp_path, "other", 1, "/models/Other-1B", 3)
    cmp = compare(load([str(tmp_path)]))
    g = cmp.grouping
    assert g.population == {"engine": "sglang", "model_path": None}
    assert sorted(t for grp in g.groups for t in grp.ready_seconds) == sorted(unknown)
    left = {Path(lo.source).name for lo in g.left_out}
    assert left == {"known-0.log", "other-0.log"}
    text = comparison_text(cmp)
    assert "comparing runs of engine=sglang, model_path=unknown (no args line in their logs" in text
    [choice] = [n for n in g.notes if "the most ready runs" in n]
    assert f"({len(unknown)} ready, of {len(unknown)} runs)" in choice
    assert "though their model is unknown: no known model has 2 timed runs (the most: 1)" in choice
    assert "2 runs of 2 others: /models/Known-7B (1 ready), /models/Other-1B (1 ready)" in choice
    # the one line on how to compare the others holds: each model gets a group of its own
    by = _suggested_by(g.notes)
    assert by == ["model_path"]
    side_by_side = compare(load([str(tmp_path)]), by).grouping
    assert {grp.key["model_path"] for grp in side_by_side.groups} == {None, "/models/Known-7B", "/models/Other-1B"}
    # with --by, a known model that spans the groups still comes first, as before
    assert compare(load([str(tmp_path)]), ["disable_cuda_graph"]).grouping.population["model_path"] == "/models/Known-7B"


def test_without_by_runs_that_begin_mid_startup_do_not_count_towards_the_choice(fleet_logs: Path,
                                                                                tmp_path: Path) -> None:
    for i in range(3):  # three tails of runs that began before their logs: ready, but not timed
        lines = (fleet_logs / f"prod-{i}.log").read_text().splitlines(keepends=True)
        cut = max(j for j, line in enumerate(lines) if "Capture cuda graph begin" in line) + 1
        (tmp_path / f"tail-{i}.log").write_text("".join(lines[cut:]))
    known = _write_runs(tmp_path, "known", 2, "/models/Known-7B", 2)
    g = compare(load([str(tmp_path)])).grouping
    assert g.population["model_path"] == "/models/Known-7B"
    assert sorted(t for grp in g.groups for t in grp.ready_seconds) == sorted(known)
    [choice] = [n for n in g.notes if "the most ready runs" in n]
    assert "unknown model (3 ready, 0 timed)" in choice


def test_without_by_the_note_names_the_other_engines_and_models_and_how_to_compare_them() -> None:
    runs = load([str(SAMPLE_LOGS)])
    g = compare(runs).grouping
    frame = runs.runs
    kept = frame.filter((frame["engine"] == g.population["engine"]) & (frame["model_path"] == g.population["model_path"]))
    [choice] = [n for n in g.notes if "the most ready runs" in n]
    assert f"{(kept['outcome'] == 'ready').sum()} ready, of {kept.height} runs" in choice
    others = frame.filter(~frame["run_id"].is_in(kept["run_id"].implode()))
    pairs = set(zip(others["engine"].to_list(), others["model_path"].to_list(), strict=True))
    assert f"left out (listed below): {others.height} runs of {len(pairs)} others: " in choice
    for engine, model in pairs:
        assert f"{engine} {model} (" in choice
    by = _suggested_by(g.notes)
    assert by == ["engine", "model_path"]  # the samples hold two engines
    groups = compare(runs, by).grouping.groups
    assert {(grp.key["engine"], grp.key["model_path"]) for grp in groups} == pairs | {tuple(g.population.values())}


def test_unknown_flag_is_one_short_line_with_the_closest_names() -> None:
    """sample_logs states hundreds of flags: the error names the closest, counts the rest, says where to look."""
    runs = load([str(SAMPLE_LOGS)])
    with pytest.raises(UnknownFlagError) as err:
        compare(runs, ["tp_sizee"])
    msg = str(err.value)
    assert msg.startswith("unknown flag 'tp_sizee' in --by; did you mean tp_size")
    assert f"these runs state {len(runs.flag_columns)} flags:" in msg and "firedup parse --json" in msg
    assert "\n" not in msg and len(msg) < 200 and "speculative_algorithm" not in msg
    assert err.value.exit_code == 2
    with pytest.raises(UnknownFlagError) as err:  # too short for difflib, but the start of one name
        compare(runs, ["mem_frac"])
    assert "did you mean mem_fraction_static?" in str(err.value)
    with pytest.raises(UnknownFlagError) as err:  # issue 31: the flag a debug/production split is by
        compare(runs, ["cuda_graph"])
    close = str(err.value).split("did you mean ")[1].split("?")[0].split(", ")
    assert "disable_cuda_graph" in close and close.index("disable_cuda_graph") < 2, close


def test_broken_files_and_other_engines_are_left_out(tmp_path: Path) -> None:
    write(tmp_path / "a.log", Spec(datetime(2026, 1, 5, 8), disable_cuda_graph=True))
    write(tmp_path / "b.log", Spec(datetime(2026, 1, 5, 9)))
    (tmp_path / "c.log.gz").write_bytes(b"\x1f\x8b broken")
    cmp = compare(load([str(tmp_path)]), ["disable_cuda_graph"])
    assert [g.n for g in cmp.grouping.groups] == [1, 1]
    (lo,) = cmp.grouping.left_out
    assert lo.source.endswith("c.log.gz") and lo.reason.startswith("unreadable")


def test_json_keys(fleet_logs: Path) -> None:
    data = compare(load([str(fleet_logs)]), ["disable_cuda_graph"]).as_json()
    assert {"groups", "deltas"} <= set(data)
    g = data["groups"][0]
    assert {"key", "n", "total_seconds", "phases"} <= set(g)
    assert set(g["total_seconds"]) >= {"median", "p90", "max"}
    assert all(set(v) == {"median"} for v in g["phases"].values())
    assert data["groups"][1]["phases"]["cuda_graph"]["median"] > 0


def test_no_ready_run(tmp_path: Path) -> None:
    write(tmp_path / "oom.log", Spec(datetime(2026, 1, 5, 8), crash_in="cuda_graph"))
    cmp = compare(load([str(tmp_path)]))
    assert cmp.headline == "no run reached ready, so there is no time to ready to compare"
    assert cmp.deltas == []


def test_a_log_that_begins_mid_startup_is_not_timed(fleet_logs: Path, tmp_path: Path) -> None:
    lines = (fleet_logs / "prod-1.log").read_text().splitlines(keepends=True)
    cut = max(i for i, line in enumerate(lines) if "Capture cuda graph begin" in line) + 1
    (tmp_path / "tail.log").write_text("".join(lines[cut:]))  # a tail: the capture began before it
    for name in ("prod-0.log", "debug-0.log"):
        (tmp_path / name).write_bytes((fleet_logs / name).read_bytes())
    runs = load([str(tmp_path)])
    # the tail has no args line, so its model is unknown: left out of a by-flag comparison, and says why
    by_flag = compare(runs, ["disable_cuda_graph"])
    reasons = {Path(lo.source).name: lo.reason for lo in by_flag.grouping.left_out}
    assert reasons["tail.log"].startswith("model unknown")
    # grouped by model too, it is in a group of its own, but not timed: its time is a lower bound
    cmp = compare(runs, ["model_path", "disable_cuda_graph"])
    prod = next(g for g in cmp.grouping.groups if g.key == {"model_path": "/models/DeepSeek-V3",
                                                           "disable_cuda_graph": False})
    assert prod.n == 1 and prod.ready_seconds == [ready_seconds_by_regex(fleet_logs / "prod-0.log")]
    tail = next(g for g in cmp.grouping.groups if g.key["model_path"] is None)
    assert tail.n == 0
    (lo,) = tail.not_timed
    assert lo.source.endswith("tail.log") and "lower bound" in lo.reason


# --- SGLang and vLLM in one folder ---------------------------------------------------------


def _truth(name: str) -> dict[str, Any]:
    return sample_truth()["files"][name]["runs"][0]  # type: ignore[no-any-return]


def _sample_names(engine: str, model: str) -> list[str]:
    """The sample files whose (one) startup the generator wrote with this engine and model."""
    files = sample_truth()["files"]
    return sorted(name for name, f in files.items()
                  if f["runs"][0]["engine"] == engine and f["runs"][0]["config"].get("model_path") == model)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled samples plus SGLang runs of the model the vLLM samples start (Qwen3-32B, TP2)."""
    import shutil

    from firedup.synth import generate
    from firedup.synth.model import H100, RunSpec, Scenario
    from firedup.synth.samples import QWEN3_32B_TP2

    folder = tmp_path_factory.mktemp("mixed")
    for path in SAMPLE_LOGS.glob("*.log"):
        shutil.copy(path, folder / path.name)
    for i in range(3):
        spec = RunSpec(model=QWEN3_32B_TP2, tp_size=2, gpu=H100, cuda_graph=True, cuda_graph_max_bs=256)
        generate(Scenario(f"sglang-qwen3-32b-{i}", (spec,), datetime(2026, 11, 10, 8 + i)), 11 + i) \
            .write(folder / f"sglang-qwen3-32b-{i}.log")
    return folder


def test_by_engine_compares_the_model_both_engines_ran(mixed: Path) -> None:
    cmp = compare(load([str(mixed)]), ["engine"])
    g = cmp.grouping
    assert g.population == {"model_path": "Qwen/Qwen3-32B"}  # not the model with the most runs
    groups = {grp.label: grp for grp in g.groups}
    assert set(groups) == {"engine=sglang", "engine=vllm"}
    # the three written here and the samples' own SGLang runs of the model
    assert groups["engine=sglang"].n == 3 + len(_sample_names("sglang", "Qwen/Qwen3-32B"))
    assert groups["engine=vllm"].n == 2
    # vLLM's times are its two samples, read from their truth
    vllm_truth = [_truth(n)["ready_offset_s"] for n in ("vllm-tp2-eager.log", "vllm-tp2-compiled.log")]
    assert sorted(groups["engine=vllm"].ready_seconds) == pytest.approx(sorted(vllm_truth), abs=1.0)
    # everything of another model is left out, with why
    left = {Path(lo.source).name: lo.reason for lo in g.left_out}
    assert left["prod-tp8-eagle3-01.log"].startswith("other model (model_path=Qwen/Qwen3-235B-A22B-Instruct-2507-FP8)")
    assert left["small-tp1.log"].startswith("other model (model_path=Qwen/Qwen3-4B-Instruct-2507)")
    assert not any(name.startswith(("vllm-tp2-", "sglang-qwen3-32b")) for name in left)


def test_by_engine_on_the_samples_compares_sglang_with_vllm_on_one_model() -> None:
    model = "Qwen/Qwen3-32B"
    sglang, vllm = _sample_names("sglang", model), _sample_names("vllm", model)
    assert sglang and vllm  # sample_logs/ holds runs of one model on both engines
    cmp = compare(load([str(SAMPLE_LOGS)]), ["engine"])
    assert cmp.grouping.population == {"model_path": model}
    groups = {grp.label: grp for grp in cmp.grouping.groups}
    assert set(groups) == {"engine=sglang", "engine=vllm"}
    for label, names in (("engine=sglang", sglang), ("engine=vllm", vllm)):
        truth = sorted(_truth(n)["ready_offset_s"] for n in names)
        assert sorted(groups[label].ready_seconds) == pytest.approx(truth, abs=1.0)
    (d,) = cmp.deltas
    assert {d.base.label, d.other.label} == {"engine=sglang", "engine=vllm"}
    assert d.flags_differ["engine"] == ([d.base.key["engine"]], [d.other.key["engine"]])
    assert cmp.headline.startswith(f"{cmp.grouping.groups[0].label} ready in a median of ")
    assert "none of" not in comparison_text(cmp)  # no engine is missing from the comparison


@pytest.fixture(scope="module")
def one_model_per_engine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled samples without the SGLang runs of the vLLM runs' model: no model ran on both."""
    import shutil

    folder = tmp_path_factory.mktemp("apart")
    shared = set(_sample_names("sglang", "Qwen/Qwen3-32B"))
    for path in SAMPLE_LOGS.glob("*.log"):
        if path.name not in shared:
            shutil.copy(path, folder / path.name)
    return folder


def test_by_engine_when_no_model_ran_on_both_says_why_one_engine_is_missing(one_model_per_engine: Path) -> None:
    cmp = compare(load([str(one_model_per_engine)]), ["engine"])
    assert [grp.label for grp in cmp.grouping.groups] == ["engine=sglang"]
    text = comparison_text(cmp)
    assert ("note: engine=vllm: 4 ready runs, none of model_path=Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 (left out "
            "below)") in text
    assert "of another model: " in text  # one line per reason
    assert "vllm-tp2-eager.log: other model (model_path=Qwen/Qwen3-32B)" in comparison_text(cmp, verbose=True)


def test_the_demo_headline_is_the_sglang_story_with_the_vllm_runs_left_out() -> None:
    cmp = compare(load([str(SAMPLE_LOGS)]), ["disable_cuda_graph"])
    assert cmp.grouping.population == {"engine": "sglang", "model_path": "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8"}
    assert cmp.headline.startswith("debug (disable_cuda_graph=True) ready in a median of 4 min")
    left = {Path(lo.source).name: lo.reason for lo in cmp.grouping.left_out}
    assert left["vllm-tp2-compiled.log"].startswith("other engine and model (engine=vllm, model_path=Qwen/Qwen3-32B)")
    assert left["vllm-tp2-eager.log"].startswith("other engine and model")
    for name in _sample_names("sglang", "Qwen/Qwen3-32B"):  # SGLang, but another model
        assert left[name].startswith("other model (model_path=Qwen/Qwen3-32B)")


def test_vllm_eager_vs_compiled_is_explained_by_compile_not_by_the_engines_umbrella_timer() -> None:
    names = ("vllm-tp2-eager.log", "vllm-tp2-compiled.log")
    cmp = compare(load([str(SAMPLE_LOGS / n) for n in names]), ["disable_cuda_graph"])
    (d,) = cmp.deltas
    compiled = _truth("vllm-tp2-compiled.log")["reported"]
    # engine_init (vLLM's own timer) spans compile, KV sizing and capture: it moved most, but says nothing
    assert d.phases["engine_init"] > d.phases["torch_compile"] > d.phases["cuda_graph"] > 0
    assert d.main_phase == "torch_compile"
    assert d.main_phase_seconds == pytest.approx(compiled["torch_compile"]["TP0"])
    assert d.phases["cuda_graph"] == pytest.approx(compiled["cuda_graph"]["TP0"])
    assert f"torch_compile explains {fmt_duration(compiled['torch_compile']['TP0'])} of the" in cmp.headline


def test_a_flag_named_as_on_the_command_line_is_its_column() -> None:
    """Regression: `--by disable-cuda-graph` (the spelling users type) was an unknown flag."""
    runs = load([str(SAMPLE_LOGS)])
    want = compare(runs, ["disable_cuda_graph"]).grouping
    for typed in ("disable-cuda-graph", "--disable-cuda-graph"):
        got = compare(runs, [typed]).grouping
        assert got.by == ["disable_cuda_graph"] and [g.key for g in got.groups] == [g.key for g in want.groups]
    with pytest.raises(UnknownFlagError, match="did you mean disable_cuda_graph"):
        compare(runs, ["disable-cuda-grap"])


# --- one unit per table column (issue 44: `7.4 s`, `6.8 s` and `-685 ms` in one column) -----------

_UNIT = r"(ms|s|min \d\d s|h \d\d min)$"


def _unit(cell: str) -> str | None:
    m = re.search(_UNIT, cell)
    return re.sub(r"\d", "", m.group(1)) if m else None


@given(st.lists(st.floats(-20_000, 20_000, allow_nan=False), min_size=1, max_size=12), st.booleans())
def test_a_column_of_durations_has_one_unit(values: list[float], signed: bool) -> None:
    from firedup.core.units import fmt_column

    cells = fmt_column(values, signed=signed)
    assert len({_unit(c) for c in cells}) == 1, cells
    biggest = max(values, key=abs)
    assert cells[values.index(biggest)].lstrip("+-") == fmt_column([abs(biggest)])[0]  # no sign lost on the largest


def test_the_phase_and_group_tables_of_compare_have_one_unit_per_column() -> None:
    text = comparison_text(compare(load([str(SAMPLE_LOGS)]), ["disable_cuda_graph"]), width=80)
    lines = text.splitlines()
    table = lines[lines.index("median per phase:") + 2:]
    table = table[:next(i for i, line in enumerate(table) if not line.startswith("  ") or line.startswith("  ("))]
    assert len(table) >= 8
    for column in range(3):  # debug, production, delta: each a fixed 14-character cell after the name
        cells = [line[2 + 22 + column * 15:][:15].strip() for line in table]
        units = {_unit(c) for c in cells if c not in ("-", "0")}
        assert len(units) == 1, (column, cells)


def test_the_library_s_comparison_prints_what_the_command_prints() -> None:
    """`Comparison.text()` is public (the notebook prints it): removing it broke the notebook."""
    import os
    import subprocess
    import sys

    import firedup

    cmp = firedup.compare([str(SAMPLE_LOGS)], "disable_cuda_graph")
    out = subprocess.run([sys.executable, "-m", "firedup", "compare", str(SAMPLE_LOGS), "--by", "disable_cuda_graph"],
                         capture_output=True, text=True, env={**os.environ, "COLUMNS": "100"})
    first = out.stdout.splitlines()[0]
    assert cmp.text().startswith(first[: min(len(first), 60)]), (cmp.text()[:200], first)
    assert "cuda_graph" in cmp.text()

"""`firedup check`: a CI gate on start-up time against the history of the same config.

The rule, one for time to ready and for every phase: a new run regresses when its value is
above the history's upper prediction bound at the risk (`firedup.tables.risk.budget_for` over the
history's values of that measure: log-normal Student-t for their number, never below the
slowest + 10 %, rounded up as `budget` rounds it: one limit for one rule), and at least
`MIN_SECONDS` above the slowest history value (log timestamps have 1 s resolution). So a healthy
run is called a regression with chance at most `risk` per measure when the history's times are
log-normal. Time to ready counts from each run's launch, the figure `parse` shows
(`launch.seconds_to_ready`), and its limit is no formula of this module's: it is the budget
`firedup budget` gives the config's history runs (`tables.budget.group_budget`: the launch margin
added, the cold starts' budget where the history holds cold and warm starts), and the line says so.
The phase `total` is not a measure of its own: it is time to ready on the first line's clock,
and one regression is one line with one limit. The history is the ready runs with the same
config (`core.config.config_key`: the engine and the flags of `SAME_CONFIG_FLAGS`, the key `wait`'s
history and the cold/warm split use); fewer than two such runs cannot judge the run: its verdict
is CANNOT JUDGE (exit 6, never a pass), naming the nearest configs the history has. A new run
that did not get ready fails the gate.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from firedup.core.config import ConfigKey, config_pairs, describe_config
from firedup.core.safe import visible
from firedup.core.units import fmt_duration
from firedup.formats.vocab import READY as READY_MILESTONE
from firedup.tables.frames import Runs, row_config_key
from firedup.tables.launches import budget_margin, from_launch, measured_at_hand
from firedup.tables.risk import Budget, budget_for, pct
from firedup.timeline.launch import KNOWN

MIN_SECONDS = 1.0
MIN_HISTORY = 2
READY = "time to ready from launch"
PASS, FAIL, CANNOT_JUDGE = "PASS", "FAIL", "CANNOT JUDGE"


@dataclass
class Finding:
    """One measure of one new run against its history."""

    measure: str  # READY or a phase name
    seconds: float
    history: list[float]
    bound: Budget | None
    regressed: bool
    evidence: str = ""  # the log line that ends the phase (or the ready line), with its number
    caches: str = ""  # cold caches whose work lies in this phase (any, for time to ready): timeline.silence
    approx: str = ""  # "~" where the value counts from an estimated launch, as `parse` marks it
    history_approx: str = ""  # "~" where a history value does
    limit_of: str = ""  # what the limit is, where it is a fact of its own (time to ready's: the config's budget)

    @property
    def shown(self) -> str:
        """The value as every view prints it: `~15 min 21 s` from an estimated launch."""
        return self.approx + fmt_duration(self.seconds)

    def describe(self) -> str:
        h = self.history
        if not h or self.bound is None or self.bound.raw_seconds is None:
            return f"{self.measure}: {self.shown} (no history to judge it by)"
        verdict = "REGRESSED" if self.regressed else "ok"
        mark = self.history_approx
        return (f"{self.measure}: {self.shown} {verdict}: history of {len(h)} runs median "
                f"{mark}{fmt_duration(statistics.median(h))}, slowest {mark}{fmt_duration(max(h))}, limit "
                f"{fmt_duration(self.limit)}{' = ' + self.limit_of if self.limit_of else ''} "
                f"({self.bound.method_label}; {self.bound.risk_label})")

    @property
    def limit(self) -> float | None:
        """The limit as `budget` states it for the same runs and risk (rounded up)."""
        if self.bound is None:
            return None
        return float(self.bound.budget_seconds) if self.bound.budget_seconds is not None else self.bound.raw_seconds

    def as_json(self) -> dict[str, Any]:
        return {"measure": self.measure, "seconds": round(self.seconds, 3), "regressed": self.regressed,
                "history_n": len(self.history),
                "history_median": round(statistics.median(self.history), 3) if self.history else None,
                "history_slowest": round(max(self.history), 3) if self.history else None,
                "limit_seconds": round(self.limit, 3) if self.limit is not None else None,
                "method": self.bound.method_label if self.bound else None, "limit_of": self.limit_of or None,
                "evidence": self.evidence,
                "caches": self.caches}


@dataclass
class RunCheck:
    run_id: str
    source: str
    run_index: int
    outcome: str
    config: str
    history_n: int
    findings: list[Finding] = field(default_factory=list)
    failure: str | None = None  # not ready: why
    note: str | None = None
    nearest: list[str] = field(default_factory=list)  # without history of its config: the closest ones there are

    @property
    def failed(self) -> bool:
        return self.failure is not None or any(f.regressed for f in self.findings)

    @property
    def verdict(self) -> str:
        """FAIL (regressed or not ready), CANNOT JUDGE (too little history of its config), or PASS."""
        if self.failed:
            return FAIL
        return CANNOT_JUDGE if self.history_n < MIN_HISTORY else PASS

    def as_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "source": self.source, "run_index": self.run_index, "outcome": self.outcome,
                "config": self.config, "history_n": self.history_n, "failed": self.failed, "verdict": self.verdict,
                "failure": self.failure, "note": self.note, "nearest_configs": self.nearest,
                "findings": [f.as_json() for f in self.findings]}

    def verdict_line(self) -> str:
        """`FAIL server.log: 4 min 2 s from launch; regressed: cuda_graph`: the answer for one run."""
        where = self.source + (f" #{self.run_index + 1}" if self.run_index else "")
        ready = next((f for f in self.findings if f.measure == READY), None)
        said = f": {ready.shown} from launch" if ready is not None else ""
        if self.verdict == CANNOT_JUDGE:
            said += f"; {self.history_n} history run{'s' if self.history_n != 1 else ''} of its config"
        elif self.failure:
            said = f": {self.failure}"
        elif self.failed:
            said += f"; regressed: {', '.join(f.measure for f in self.findings if f.regressed)}"
        return f"{self.verdict} {where}{said}"

    def detail_lines(self) -> list[str]:
        """Why: the run's config and history, each regressed measure (and time to ready) against
        its limit with the line that shows it, then the measures within the history's spread."""
        where = visible(self.source, one_line=True) + (f" #{self.run_index + 1}" if self.run_index else "")
        lines = [f"{where} ({self.config}; {self.history_n} history runs of this config)"]
        if self.failure:
            lines.append(f"  {self.failure}")
        if self.note:
            lines.append(f"  {self.note}")
        if self.nearest:
            lines.append("  nearest configs in the history: " + "; ".join(self.nearest))
        for f in sorted(self.findings, key=lambda f: (not f.regressed, f.measure != READY)):
            if f.regressed or f.measure == READY:
                lines.append(f"  {f.describe()}")
                if f.regressed and f.evidence:
                    lines.append(f"    evidence: {f.evidence}")
                if f.regressed and f.caches:
                    lines.append(f"    caches: {f.caches}")
        ok = [f.measure for f in self.findings if not f.regressed and f.measure != READY and f.bound is not None]
        if ok:
            lines.append(f"  within the history's spread: {', '.join(ok)}")
        return lines


@dataclass
class CheckReport:
    risk: float
    runs: list[RunCheck]
    rule: str
    errors: list[str] = field(default_factory=list)  # inputs that could not be read

    @property
    def failed(self) -> bool:
        return any(r.failed for r in self.runs)

    @property
    def verdict(self) -> str:
        """The gate's: FAIL if any run failed, else CANNOT JUDGE if any could not be judged, else PASS."""
        verdicts = {r.verdict for r in self.runs}
        return FAIL if FAIL in verdicts else CANNOT_JUDGE if CANNOT_JUDGE in verdicts else PASS

    def as_json(self) -> dict[str, Any]:
        return {"risk": self.risk, "rule": self.rule, "failed": self.failed, "verdict": self.verdict,
                "runs": [r.as_json() for r in self.runs], "errors": self.errors}

    def text(self, verbose: bool = False) -> str:
        """The verdicts first (one line per run), then why, then the rule."""
        lines = [r.verdict_line() for r in self.runs]
        for r in self.runs:
            lines.append("")
            lines.extend(r.detail_lines())
        lines.append("")
        lines.append(f"rule: {self.rule}" if verbose else "(-v prints the rule)")
        return "\n".join(lines)


RULE = ("a run regresses when time to ready or a phase is above the history's upper prediction bound "
        "for the same config at risk {risk} (log-normal, Student-t for the number of history runs, never below "
        "the slowest + 10 %) and at least 1 s above the slowest history run; a run that did not get ready fails; "
        "fewer than 2 history runs of a config cannot judge it (CANNOT JUDGE, exit 6); time to ready counts from "
        "each run's launch")


def _phase_seconds(runs: Runs) -> dict[str, dict[str, float]]:
    """run_id -> phase -> seconds, over the run-level phases (the critical path)."""
    out: dict[str, dict[str, float]] = {}
    frame = runs.phases.filter((pl.col("scope") == "run") & ~pl.col("phase").is_in(["unattributed", "total"])
                               & pl.col("seconds").is_not_null())
    for row in frame.select("run_id", "phase", "seconds").iter_rows(named=True):
        per = out.setdefault(row["run_id"], {})
        per[row["phase"]] = per.get(row["phase"], 0.0) + float(row["seconds"])
    return out


def _evidence(runs: Runs, run_id: str, measure: str) -> str:
    texts = {r["line"]: r["text"] for r in runs.milestones.filter(pl.col("run_id") == run_id)
             .select("line", "text").iter_rows(named=True)}
    if measure == READY:
        ready = runs.milestones.filter((pl.col("run_id") == run_id) & (pl.col("name") == READY_MILESTONE))
        line = ready["line"][0] if ready.height else None
    else:
        ends = runs.phases.filter((pl.col("run_id") == run_id) & (pl.col("phase") == measure)
                                  & (pl.col("scope") == "run"))
        line = ends["line"].drop_nulls().max() if ends.height else None
    if line is None:
        return ""
    return f"line {line}: {texts.get(line, '').strip()}"[:300]


def _cold_caches(row: dict[str, Any], measure: str) -> str:
    """The run's cold caches whose work lies in `measure` (any phase, for time to ready), with the
    verdict's reason and first line: a regression a cold cache explains says so."""
    try:
        verdicts = json.loads(row.get("caches_json") or "{}")
    except ValueError:
        return ""
    parts = []
    for kind, v in verdicts.items():
        if v.get("verdict") != "cold" or (measure != READY and v.get("phase") != measure):
            continue
        first = v.get("evidence") or [{}]
        line = f" (line {first[0]['line']}: {str(first[0].get('text', ''))[:80]})" if first[0].get("line") else ""
        parts.append(f"{kind} cold: {v.get('reason', '')}{line}")
    return "; ".join(parts)


def judge(value: float, history: list[float], risk: float, bound: Budget | None = None) -> tuple[Budget | None, bool]:
    """The limit and whether `value` is above it (the module's rule). `bound`: the history's
    `budget_for`, when computed already (one per config and measure, however many runs)."""
    if len(history) < MIN_HISTORY:
        return None, False
    bound = bound or budget_for(history, risk)
    assert bound.raw_seconds is not None
    limit = float(bound.budget_seconds) if bound.budget_seconds is not None else bound.raw_seconds
    return bound, value > limit and value >= max(history) + MIN_SECONDS


def check(new: Runs, history: Runs, risk: float = 0.01) -> CheckReport:
    """Each new run against the ready history runs of its config (new runs are never their own history)."""
    new_hashes = set(new.runs["content_hash"].drop_nulls().to_list())
    hist_rows = [r for r in history.runs.filter(pl.col("outcome") == "ready").iter_rows(named=True)
                 if r["content_hash"] not in new_hashes and r["ready_seconds"] is not None
                 and not r.get("begins_mid_startup")]
    new_phases = _phase_seconds(new)
    hist_phases = _phase_seconds(history)
    by_config: dict[ConfigKey, list[dict[str, Any]]] = {}
    for h in hist_rows:  # each history run's config once: 10,000 new runs were 10,000 passes over it
        by_config.setdefault(row_config_key(h), []).append(h)
    limits: dict[tuple[ConfigKey, str], tuple[list[float], tuple[Budget, str] | None]] = {}
    out = []
    for row in new.runs.iter_rows(named=True):
        key = row_config_key(row)
        same = by_config.get(key, [])
        rc = RunCheck(row["run_id"], row["source"], row["run_index"], row["outcome"], describe_config(key), len(same))
        if row["outcome"] != "ready" or row["ready_seconds"] is None:
            where = f" in {row['crash_phase'] or row['stopped_in'] or 'an unknown phase'}"
            what = f": {row['crash_message']}" if row.get("crash_message") else ""
            rc.failure = f"did not get ready ({row['outcome']}{where}{what})"
            out.append(rc)
            continue
        if len(same) < MIN_HISTORY:
            rc.note = (f"{len(same)} history run{'s' if len(same) != 1 else ''} of this config: too few to judge "
                       "it by (ingest more runs of it, or point --history at earlier logs of this config)")
            rc.nearest = _nearest(key, hist_rows)
        measures = {READY: _from_launch(row), **new_phases.get(row["run_id"], {})}
        for measure, seconds in measures.items():
            if (key, measure) not in limits:  # the history of a config and measure, and its limit: once
                values = [_from_launch(h) for h in same] if measure == READY else [
                    hist_phases[h["run_id"]][measure] for h in same if measure in hist_phases.get(h["run_id"], {})]
                limits[key, measure] = values, (None if len(values) < MIN_HISTORY else ready_limit(
                    history, same, values, risk) if measure == READY else (budget_for(values, risk), ""))
            values, limit = limits[key, measure]
            bound, regressed = judge(seconds, values, risk, limit[0] if limit else None)
            finding = Finding(measure, seconds, values, bound, regressed, limit_of=limit[1] if limit else "")
            if measure == READY:
                finding.approx = _approx([row])
                finding.history_approx = _approx(same)
            if regressed:
                finding.evidence = _evidence(new, row["run_id"], measure)
                finding.caches = _cold_caches(row, measure)
            rc.findings.append(finding)
        out.append(rc)
    return CheckReport(risk, out, RULE.format(risk=pct(risk)))


def ready_limit(history: Runs, same: list[dict[str, Any]], values: list[float], risk: float) -> tuple[Budget, str]:
    """The limit on time to ready from launch: the budget `firedup budget` gives this config's
    history runs (`tables.budget.group_budget`: their times from launch, the largest launch margin,
    the cold starts' budget where they hold cold and warm starts), and the words naming it."""
    from firedup.tables.budget import group_budget

    at_hand = measured_at_hand(history.runs.filter(pl.col("launch_source").is_in(sorted(KNOWN))).to_dicts())
    margin = max((budget_margin(h, at_hand) for h in same), default=0.0)
    bound, apart = group_budget(history, [h["run_id"] for h in same], values, margin, risk)
    if apart is None:
        return bound, "the budget of `firedup budget` for this config"
    cold, warm = apart[1], apart[2]
    def n(count: int, noun: str) -> str:
        return f"{count} {noun}{'s' if count != 1 else ''}"

    return bound, (f"the budget of `firedup budget` for this config, over its {n(len(cold.run_ids), 'cold start')}"
                   f" (its {n(len(warm.run_ids), 'warm start')}: {fmt_duration(warm.budget.budget_seconds)})")


def _approx(rows: list[dict[str, Any]]) -> str:
    """`~` where any of these runs counts from an estimated launch (as `parse` and `runs` mark it)."""
    return "~" if any(r.get("launch_source") == "estimated" for r in rows) else ""


def _from_launch(row: dict[str, Any]) -> float:
    counted = from_launch(row)
    assert counted is not None  # a ready run
    return counted[0]


def _nearest(key: ConfigKey, rows: list[dict[str, Any]], most: int = 3) -> list[str]:
    """The history's configs closest to `key` (fewest flags apart), each with its runs and what differs."""
    counts: dict[ConfigKey, int] = {}
    for row in rows:
        other = row_config_key(row)
        counts[other] = counts.get(other, 0) + 1
    mine = dict(config_pairs(key))

    def apart(other: ConfigKey) -> list[str]:
        return [f"{flag}={value.strip(chr(39))}" for flag, value in config_pairs(other) if mine.get(flag) != value]

    ranked = sorted(counts.items(), key=lambda kv: (len(apart(kv[0])), -kv[1]))
    return [f"{', '.join(apart(other)) or 'the same flags'} ({n} run{'s' if n != 1 else ''})"
            for other, n in ranked[:most]]


__all__ = ["CANNOT_JUDGE", "FAIL", "MIN_HISTORY", "MIN_SECONDS", "PASS", "RULE", "CheckReport", "Finding", "RunCheck", "check", "judge"]

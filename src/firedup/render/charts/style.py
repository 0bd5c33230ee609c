"""What every chart shares: one colour per phase, minutes:seconds axes, run labels, the
matplotlib style, and saving the same chart as the same bytes."""

from __future__ import annotations

import contextlib
import math
import os
import textwrap
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from firedup.core.safe import visible
from firedup.core.units import fmt_clock
from firedup.errors import UsageError
from firedup.timeline.phases import PHASE_ORDER

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from firedup.tables.grouping import Coverage

# --- colours: one table for every chart ------------------------------------------------------

# Paul Tol's "muted" scheme (colour-blind safe, distinct in print), plus his grey for launch.
TOL_MUTED = {
    "indigo": "#332288", "cyan": "#88CCEE", "teal": "#44AA99", "green": "#117733", "olive": "#999933",
    "sand": "#DDCC77", "rose": "#CC6677", "wine": "#882255", "purple": "#AA4499", "grey": "#BBBBBB",
}
PHASE_COLOURS: dict[str, str] = {
    "launch": TOL_MUTED["grey"],
    "dist_init": TOL_MUTED["indigo"],
    "load_weights": TOL_MUTED["cyan"],
    "model_loading": TOL_MUTED["teal"],
    "torch_compile": TOL_MUTED["olive"],
    "kv_cache": TOL_MUTED["green"],
    "cuda_graph": TOL_MUTED["rose"],
    "engine_init": TOL_MUTED["purple"],
    "http_start": TOL_MUTED["wine"],
    "warmup": TOL_MUTED["sand"],
    "unattributed": "#FFFFFF",  # white, hatched: time no log line accounts for
}
UNATTRIBUTED_HATCH = "////"
UNATTRIBUTED_EDGE = "#777777"
READY_COLOUR = "#000000"
CRASH_COLOUR = "#CC3311"  # Tol's vibrant red; the marker shape (X) carries the meaning too
_FALLBACK = ("#77AADD", "#EE8866", "#EEDD88", "#FFAABB", "#99DDFF", "#44BB99", "#BBCC33", "#AAAA00")


def _tint(hex_colour: str, amount: float = 0.5) -> str:
    """The colour mixed with white: a draft model's phase is a lighter copy of the target's."""
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    mix = [round(c + (255 - c) * amount) for c in (r, g, b)]
    return "#{:02X}{:02X}{:02X}".format(*mix)


def phase_colour(phase: str) -> str:
    """The fill colour of a phase, the same in every chart (stable for unknown names too)."""
    if phase in PHASE_COLOURS:
        return PHASE_COLOURS[phase]
    if phase.startswith("draft.") and phase.removeprefix("draft.") in PHASE_COLOURS:
        return _tint(PHASE_COLOURS[phase.removeprefix("draft.")])
    return _FALLBACK[zlib.crc32(phase.encode()) % len(_FALLBACK)]


def phase_style(phase: str) -> dict[str, Any]:
    """Keyword arguments for a bar of this phase (fill, edge, hatch)."""
    if phase == "unattributed":
        return {"facecolor": PHASE_COLOURS["unattributed"], "edgecolor": UNATTRIBUTED_EDGE,
                "hatch": UNATTRIBUTED_HATCH, "linewidth": 0.6}
    if phase.startswith("draft."):
        return {"facecolor": phase_colour(phase), "edgecolor": phase_colour(phase.removeprefix("draft.")),
                "linewidth": 0.8}
    return {"facecolor": phase_colour(phase), "edgecolor": "white", "linewidth": 0.5}


def phase_rank(phase: str) -> int:
    """Order of phases in legends and stacks: startup order, unknown names last."""
    return PHASE_ORDER.index(phase) if phase in PHASE_ORDER else len(PHASE_ORDER)


def text_colour_on(hex_colour: str) -> str:
    """Black or white text, whichever reads better on this fill (WCAG relative luminance)."""
    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(int(hex_colour[i:i + 2], 16)) for i in (1, 3, 5))
    return "#000000" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.18 else "#FFFFFF"


# --- time on axes ------------------------------------------------------------------------------

TICK_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400)


def tick_step(span: float, max_ticks: int = 9) -> int:
    """The smallest round step (1 s ... 4 h) that puts at most `max_ticks` ticks on the span."""
    for step in TICK_STEPS:
        if span / step <= max_ticks:
            return step
    return TICK_STEPS[-1] * math.ceil(span / (TICK_STEPS[-1] * max_ticks))


def time_axis(axis: Any, lo: float, hi: float, max_ticks: int = 9) -> None:
    from matplotlib.ticker import FuncFormatter, MultipleLocator

    axis.set_major_locator(MultipleLocator(tick_step(hi - lo, max_ticks)))
    axis.set_major_formatter(FuncFormatter(lambda x, _pos: fmt_clock(x)))


# --- labels -------------------------------------------------------------------------------------


def run_labels(runs: pl.DataFrame) -> dict[str, str]:
    """run_id -> a short readable label: the file name (unique within the set), `#2` for a restart."""
    sources = runs["source"].to_list()
    names = [os.path.basename(s.rstrip("/")) or s for s in sources]
    clash = {n for n in names if names.count(n) > 1 and len({s for s, m in zip(sources, names, strict=True)
                                                             if m == n}) > 1}
    out = {}
    for row, name in zip(runs.iter_rows(named=True), names, strict=True):
        label = _short_path(row["source"]) if name in clash else name
        if row["run_index"]:
            label += f" #{row['run_index'] + 1}"
        out[row["run_id"]] = visible(label, one_line=True)  # a file name may hold any character
    return out


def _short_path(path: str, keep: int = 2) -> str:
    parts = Path(path).parts
    return os.path.join(*parts[-keep:]) if len(parts) > keep else path


def ellipsize(text: str, width: int) -> str:
    """Cut in the middle: the start and end of a file name tell runs apart, not its middle."""
    if len(text) <= width:
        return text
    half = (width - 1) // 2
    return text[:half] + "…" + text[-(width - 1 - half):]


def wrap_label(text: str, width: int, max_lines: int = 2) -> str:
    lines = textwrap.wrap(text, width, break_on_hyphens=False) or [text]
    if len(lines) > max_lines:
        lines = [*lines[:max_lines - 1], ellipsize(" ".join(lines[max_lines - 1:]), width)]
    return "\n".join(lines)


# --- drawing ------------------------------------------------------------------------------------

STYLE: dict[str, Any] = {
    "font.size": 10, "axes.titlesize": 12, "axes.titleweight": "bold", "axes.labelsize": 10,
    "xtick.labelsize": 9, "ytick.labelsize": 9, "legend.fontsize": 9, "axes.spines.top": False,
    "axes.spines.right": False, "svg.fonttype": "none", "svg.hashsalt": "firedup",
    "font.family": "DejaVu Sans", "hatch.linewidth": 0.6, "figure.dpi": 100,
    # every label is a log's text (a file, model or flag name): `$x^2$` in it is shown as written,
    # never read as mathtext (which raised on `$` alone) or TeX
    "text.parse_math": False, "text.usetex": False,
}
# What the labels drawn while saving (ticks are made then) need as well.
SAVE_STYLE: dict[str, Any] = {"svg.hashsalt": "firedup", "svg.fonttype": "none", "text.parse_math": False,
                              "text.usetex": False}
WIDTH = 11.0  # inches at 100 dpi: 1100 px, fits a report column and a laptop screen


def new_figure(height: float) -> Figure:
    from matplotlib.figure import Figure

    return Figure(figsize=(WIDTH, height), layout="constrained")


def styled(draw: Callable[..., Figure]) -> Callable[..., Figure]:
    """Run a drawing function under the shared style (no global matplotlib state changes)."""
    import functools

    @functools.wraps(draw)
    def wrapper(*args: Any, **kwargs: Any) -> Figure:
        import matplotlib

        with matplotlib.rc_context(cast(Any, STYLE)):
            return draw(*args, **kwargs)

    return wrapper


def phase_legend(fig: Figure, ax: Axes, phases: Sequence[str], extra: Sequence[Any] = (),
                  title: str = "phase") -> None:
    from matplotlib.patches import Patch

    handles = [Patch(label=p, **phase_style(p)) for p in sorted(set(phases), key=lambda p: (phase_rank(p), p))]
    handles.extend(extra)
    ncol = min(len(handles), 6) or 1
    fig.legend(handles=handles, loc="outside lower center", ncol=ncol, frameon=False, title=title,
               title_fontsize=9, handlelength=1.6, columnspacing=1.4)


def with_coverage(label: str, coverage: Coverage, width: int = 100) -> str:
    """`label`, and below it, for a chart that draws fewer runs than it was given, how many of
    how many and why (in the axis label, so the layout keeps the legend clear of it)."""
    if coverage.complete:
        return label
    text = coverage.text("drawn:") + " (`firedup compare` lists them)"
    return f"{label}\n{wrap_label(text[:1].upper() + text[1:], width, 3)}"


def save(fig: Figure, path: str | os.PathLike[str], dpi: float = 100) -> None:
    """Write PNG or SVG with no date or version in the file: the same chart gives the same bytes."""
    import matplotlib

    fmt = Path(path).suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise UsageError(f"{os.fspath(path)}: write charts as .png or .svg, not {Path(path).suffix or 'no suffix'}")
    metadata: dict[str, Any] = {"Software": None} if fmt == "png" else {"Date": None, "Creator": "firedup"}
    from firedup.core.files import write_file

    with matplotlib.rc_context(cast(Any, SAVE_STYLE)), _no_glyph_warnings():
        write_file(path, lambda fh: fig.savefig(fh, format=fmt, dpi=dpi, metadata=metadata, facecolor="white"))


def to_bytes(fig: Figure, fmt: str = "png", dpi: float = 100) -> bytes:
    """The chart as PNG or SVG bytes (for embedding)."""
    import io

    import matplotlib

    buffer = io.BytesIO()
    metadata: dict[str, Any] = {"Software": None} if fmt == "png" else {"Date": None, "Creator": "firedup"}
    with matplotlib.rc_context(cast(Any, SAVE_STYLE)), _no_glyph_warnings():
        fig.savefig(buffer, format=fmt, dpi=dpi, metadata=metadata, facecolor="white")
    return buffer.getvalue()


@contextlib.contextmanager
def _no_glyph_warnings() -> Iterator[None]:
    """A label holds what a log wrote, in any script: a character the font lacks is drawn as a
    box, without a warning per character on stderr."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from", category=UserWarning)
        yield

"""firedup.core.safe: control characters are shown escaped, never emitted; CSV cells are
never formulas (OWASP); JSON stays the same value."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from firedup.core.safe import csv_cell, json_visible, visible

ATTACKS = {
    "OSC title": "\x1b]0;PWNED\x07",
    "OSC 8 hyperlink": "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "CSI clear screen": "\x1b[2J\x1b[H",
    "BEL": "\x07",
    "backspace": "ab\x08\x08XY",
    "carriage return": "safe\rEVIL",
    "C1 CSI": "\x9b31m",
    "C1 OSC": "\x9d0;T\x9c",
    "DEL": "\x7f",
    "bidi override": "\u202egnp.exe",
}


def test_every_control_character_is_shown_escaped() -> None:
    for name, attack in ATTACKS.items():
        shown = visible(f"model {attack} end")
        assert not any(ch in shown for ch in "\x1b\x07\x08\r\x9b\x9d\x9c\x7f\u202e"), name
        assert shown.startswith("model ") and shown.endswith(" end"), name
    assert visible("\x1b]0;T\x07") == "\\x1b]0;T\\x07"
    assert visible("a\x9bb") == "a\\x9bb" and visible("\u202e") == "\\u202e" and visible("x\ry") == "x\\ry"


def test_plain_text_tabs_and_newlines_pass_unchanged() -> None:
    text = "READY in 1m 02s\tTP0\nDeepSeek-V3 — 2 runs, µ 3.1 s"
    assert visible(text) is text or visible(text) == text


def test_one_line_escapes_newlines_too() -> None:
    assert visible("m\ntouch /tmp/pwned", one_line=True) == "m\\ntouch /tmp/pwned"
    assert "\n" not in visible("a\r\n\u2028b", one_line=True)


def test_json_visible_is_the_same_value_without_raw_controls() -> None:
    value = {"model": "a\x1b]0;T\x07\x9b\x7f\u2028z", "n": 1}
    text = json_visible(json.dumps(value, ensure_ascii=False))
    assert json.loads(text) == value
    assert not any(ch in text for ch in "\x1b\x07\x9b\x7f\u2028")


def test_csv_cells_are_never_formulas() -> None:
    for formula in ("=HYPERLINK(\"http://evil\",\"x\")", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"):
        cell = csv_cell(formula)
        assert cell.startswith("'"), formula
        assert "\r" not in cell
    assert csv_cell("Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"


@given(st.text())
def test_no_raw_control_character_survives(text: str) -> None:
    shown = visible(text)
    assert not any((ord(ch) < 0x20 and ch not in "\t\n") or 0x7f <= ord(ch) <= 0x9f for ch in shown)
    one = visible(text, one_line=True)
    assert not any(ord(ch) < 0x20 or 0x7f <= ord(ch) <= 0x9f for ch in one)

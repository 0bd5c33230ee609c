"""firedup.core.safe: control characters are shown escaped, never emitted; CSV cells are
never formulas (OWASP); JSON stays the same value."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from firedup.core.safe import (
    csv_cell,
    json_text,
    json_visible,
    valid_json,
    valid_text,
    valid_values,
    visible,
    without_credentials,
)

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


# --- round two (issue 33): what shows as nothing, surrogates, credentials -------------------------

INVISIBLE = {
    "zero-width space": "\u200b", "zero-width joiner": "\u200d", "left-to-right mark": "\u200e",
    "right-to-left mark": "\u200f", "word joiner": "\u2060", "byte-order mark": "\ufeff", "soft hyphen": "\u00ad",
    "tag characters": "\U000e0041\U000e0042", "variation selector": "\ufe0f", "Hangul filler": "\u3164",
    "Arabic letter mark": "\u061c", "unassigned default-ignorable": "\u2065",
}


def test_what_shows_as_nothing_is_shown_escaped() -> None:
    """Two model names that differ by a zero-width space looked the same, on screen and in Prometheus."""
    for name, ch in INVISIBLE.items():
        shown = visible(f"Qwen{ch}/m")
        assert shown != "Qwen/m" and not any(c in shown for c in ch), name
        assert shown.startswith("Qwen\\") and shown.endswith("/m"), name
    assert visible("a\u200bb") == "a\\u200bb" and visible("\U000e0041") == "\\U000e0041"


def test_lone_surrogates_become_escapes_everywhere() -> None:
    """A `\\ud800` escape in a JSON-lines log, an undecodable byte of a file name (`\\udcff` once
    decoded with surrogateescape): no UTF-8 output can hold them raw."""
    assert visible("bad\udcff.log") == "bad\\xff.log" and visible("m\ud800") == "m\\ud800"
    assert valid_text("bad\udcff\ud800") == "bad\\xff\\ud800" and valid_text("plain") == "plain"
    assert valid_values({"k\ud800": ["v\udcfe", 1]}) == {"k\\ud800": ["v\\xfe", 1]}
    assert valid_values({"k": ("v\udcfe", 1)}) == {"k": ("v\\xfe", 1)}  # a tuple's too (a flag's value)
    text = json_visible(json.dumps({"m": "x\ud800\U000e0041"}, ensure_ascii=False))
    text.encode("utf-8")  # valid UTF-8
    assert json.loads(text) == {"m": "x\ud800\U000e0041"}  # the same value


_SURROGATE_TEXT = st.text(alphabet=st.sampled_from(["a", "\\", '"', "\udc80", "\udcff", "\ud800", "\udfff", "\x1b"]))


@given(st.recursive(_SURROGATE_TEXT, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_SURROGATE_TEXT, inner, max_size=3)), max_leaves=6))
def test_valid_json_stays_json_with_what_valid_text_writes_of_a_surrogate(value: object) -> None:
    """`valid_text` over JSON text wrote an undecodable byte of a file name (`\\udcff`) as `\\xff`,
    no JSON escape: `compare` over two logs whose names held one ended in "Invalid \\escape"."""
    text = valid_json(json.dumps(value, ensure_ascii=False))
    text.encode("utf-8")  # valid UTF-8
    assert json.loads(text) == valid_values(value)


def test_json_text_writes_no_nan_or_infinity() -> None:
    assert json.loads(json_text({"a": float("inf"), "b": [float("nan")], "c": 1.5})) == {"a": None, "b": [None], "c": 1.5}


def test_credentials_of_a_url_are_never_shown() -> None:
    assert without_credentials("probing http://alice:s3cr3t@127.0.0.1:30000/health") == \
        "probing http://***@127.0.0.1:30000/health"
    assert without_credentials("https://:tok@h/ and s3://key:secret@bucket/x") == "https://***@h/ and s3://***@bucket/x"
    assert without_credentials("user@example.com, http://h/a@b") == "user@example.com, http://h/a@b"


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_no_invisible_or_control_character_survives_any_text(text: str) -> None:
    """Random Unicode, surrogates included: what `visible` returns has no control, format or
    invisible character and encodes as UTF-8; `json_visible` keeps the value."""
    import unicodedata

    for one_line in (False, True):
        shown = visible(text, one_line=one_line)
        shown.encode("utf-8")
        for ch in shown:
            if ch in "\t\n" and not one_line:
                continue
            assert unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zl", "Zp"), (ch, text)
            assert not 0xFE00 <= ord(ch) <= 0xFE0F and not 0xE0000 <= ord(ch) <= 0xE0FFF, (ch, text)
    encoded = json_visible(json.dumps(text, ensure_ascii=False))
    encoded.encode("utf-8")
    assert json.loads(encoded) == text


def test_every_control_format_and_separator_character_of_unicode_is_escaped() -> None:
    """Every code point of categories Cc, Cf, Cs, Zl and Zp (in this Python's Unicode), but tab and newline."""
    import sys
    import unicodedata

    every = "".join(chr(c) for c in range(sys.maxunicode + 1)
                    if unicodedata.category(chr(c)) in ("Cc", "Cf", "Cs", "Zl", "Zp") and chr(c) not in "\t\n")
    shown = visible(every)
    assert not any(unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp") for ch in shown)


@given(st.lists(st.tuples(st.integers(0, 70_000), st.sampled_from(["\x7f", "\x85", "\u200b", "é", "\U000e0041", "\ud800"])),
                max_size=6))
def test_json_visible_of_a_long_text_escapes_where_its_pieces_meet(marks: list[tuple[int, str]]) -> None:
    """`json_visible` reads a long text in pieces (ASCII ones at memory speed): characters to
    escape anywhere, at a piece's first or last place too, are escaped, and the value is kept."""
    from firedup.core import safe

    chars = list("a" * 70_001)
    for at, ch in marks:
        chars[at] = ch
    for edge in (safe._JSON_PIECE - 1, safe._JSON_PIECE, 2 * safe._JSON_PIECE):
        chars[edge] = "\x85"
    text = "".join(chars)
    encoded = json_visible(json.dumps(text, ensure_ascii=False))
    assert not any(ch in encoded for ch in "\x7f\x85\u200b\U000e0041\ud800")
    assert json.loads(encoded) == text
    ascii_only = json_visible(json.dumps("b\x7f" * 40_000, ensure_ascii=False))
    assert "\x7f" not in ascii_only and json.loads(ascii_only) == "b\x7f" * 40_000


def test_json_text_writes_what_json_has_no_type_for() -> None:
    """A flag printed `{(1, 2): 3}` made `json_text` (a `wait --record`'s run) raise TypeError; a
    set was written as its Python text. Keys as the text JSON gives them, a set as a sorted list."""
    value = {"flag": {(1, 2): 3, None: 1, "s": {"b", "a"}, "b": b"x", "n": float("nan")}}
    assert json.loads(json_text(value)) == {"flag": {"(1, 2)": 3, "null": 1, "s": ["a", "b"], "b": "b'x'", "n": None}}


# what a run's JSON holds beyond ASCII (a progress bar's blocks, a cut line's `…`), the characters
# `json_visible` escapes (DEL, C1, invisible ones, one beyond the BMP, lone surrogates) and ASCII
_RUN_TEXT = st.lists(st.one_of(
    st.text(alphabet=st.characters(max_codepoint=0x7F), min_size=1, max_size=600),
    st.sampled_from(["\u2588", "\u2026", "\u258c", "\xe9", "\u4e2d", "\U0001f600", "\x7f", "\x85", "\x9f", "\xad",
                     "\u200b", "\u2028", "\ufeff", "\U000e0041", "\ud800", "\udcff"]),
    st.text(max_size=20)), max_size=40).map("".join)


@given(_RUN_TEXT)
def test_json_visible_is_the_pattern_over_the_whole_text(text: str) -> None:
    """`json_visible` hands a text back whole where its non-ASCII characters, looked at alone,
    hold none to escape, and escapes in pieces else: always what the pattern makes of the whole."""
    from firedup.core.safe import _JSON_RAW, _json_escape

    assert json_visible(text) == _JSON_RAW.sub(_json_escape, text)

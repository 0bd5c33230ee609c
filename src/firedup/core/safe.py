"""Text from a log or a file name, made safe to show: the one sanitiser of every boundary.

firedup shows what other programs wrote (model names, crash messages, log lines, file
names) in terminals, Markdown, HTML and spreadsheets. A control character in that text is
an instruction to whatever displays it: ESC starts a sequence that can retitle a terminal
pane, write an OSC 8 hyperlink or move the cursor; BEL, backspace and CR rewrite what the
reader sees; C1 codes (U+0080-U+009F, CSI is U+009B) do the same on terminals that take
them. So every such character is shown as a visible escape (`\\x1b`), never emitted.

Three boundaries, three functions: `visible` for text (terminal, Markdown, HTML after its
own escaping), `json_visible` for JSON text (only `\\uXXXX` escapes stay valid JSON), and
`csv_cell` for a spreadsheet cell (OWASP's formula-injection rule).
"""

from __future__ import annotations

import re

# C0 but tab and newline, DEL, C1; plus the Unicode line and paragraph separators and the
# bidirectional overrides and isolates, which reorder what a reader sees ("Trojan Source").
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROL_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    named = _NAMED.get(ch)
    if named is not None:
        return named
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, *, one_line: bool = False) -> str:
    """`text` with every control character shown as an escape (`\\x1b`, `\\x9b`, `\\r`).

    Tab and newline stay unless `one_line` (a label, a flag value, a snippet comment: a
    newline there would start a line of its own, in a shell snippet a command)."""
    pattern = _CONTROL_ONE_LINE if one_line else _CONTROL
    if pattern.search(text) is None:  # the common case costs one scan
        return text
    return pattern.sub(_escape, text)


_JSON_RAW = re.compile(r"[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def json_visible(text: str) -> str:
    """JSON text (from `json.dumps`, which escapes C0 already) with DEL, C1 and the other
    characters `visible` escapes written as `\\uXXXX`: the same JSON value, no raw control."""
    if _JSON_RAW.search(text) is None:
        return text
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


# OWASP "CSV Injection": a cell starting with one of these is a formula to Excel,
# LibreOffice and Google Sheets; tab and CR too (some strip them and then see a formula).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: str) -> str:
    """A text cell a spreadsheet shows as text: a leading `'` before a formula start, and
    control characters (but tab and newline, which quoting keeps) escaped. A number's own
    minus sign is left to numeric columns, which never pass through here."""
    if value.startswith(_FORMULA_START):
        value = "'" + value
    return visible(value)


__all__ = ["csv_cell", "json_visible", "visible"]

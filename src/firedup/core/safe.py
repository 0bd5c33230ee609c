"""Text from a log or a file name, made safe to show: the one sanitiser of every boundary.

firedup shows what other programs wrote (model names, crash messages, log lines, file
names) in terminals, Markdown, HTML and spreadsheets. A control character in that text is
an instruction to whatever displays it: ESC starts a sequence that can retitle a terminal
pane, write an OSC 8 hyperlink or move the cursor; BEL, backspace and CR rewrite what the
reader sees; C1 codes (U+0080-U+009F, CSI is U+009B) do the same on terminals that take
them. So every such character is shown as a visible escape (`\\x1b`), never emitted.

What shows as nothing (a zero-width space, U+200E/U+200F, tag characters) is escaped too: two
different model names must not look the same.

Three boundaries, three functions: `visible` for text (terminal, Markdown, HTML after its
own escaping), `json_visible` for JSON text (only `\\uXXXX` escapes stay valid JSON; `json_text`
writes a value so, without NaN or Infinity), and `csv_cell` for a spreadsheet cell (OWASP's
formula-injection rule). Beside them: `valid_text` for text that is stored (a table, the store:
only what UTF-8 cannot hold is escaped) and `without_credentials` for a URL's password.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from firedup.core.lazy import lazy_regex

# C0 but tab and newline, DEL, C1; the Unicode line and paragraph separators and the
# bidirectional overrides and isolates, which reorder what a reader sees ("Trojan Source"); and
# what shows as nothing at all, so that two different names look the same: every format
# character (Unicode's Cf: zero-width space, joiners, U+200E/U+200F marks, the soft hyphen, the
# word joiner, the byte-order mark, tag characters U+E0000-U+E007F), the variation selectors,
# the combining grapheme joiner and the blank Hangul fillers; and lone surrogates, which no
# UTF-8 output can hold (an undecodable byte of a file name, a `\ud800` escape in a log).
_INVISIBLE = ("\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5"
              "\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff"
              "\uffa0\ufff0-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
              "\U0001d173-\U0001d17a\U000e0000-\U000e0fff\ud800-\udfff")
_CONTROL = lazy_regex(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_INVISIBLE}]")
_CONTROL_ONE_LINE = lazy_regex(f"[\\x00-\\x1f\\x7f-\\x9f{_INVISIBLE}]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    named = _NAMED.get(ch)
    if named is not None:
        return named
    return _code(ord(ch))


def _code(code: int) -> str:
    if code < 0x100:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was no UTF-8 (surrogateescape): shown as that byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible(text: str, *, one_line: bool = False) -> str:
    """`text` with every control and invisible character shown as an escape (`\\x1b`, `\\x9b`,
    `\\r`, `\\u200b`), and an undecodable byte of a file name as `\\xff`.

    Tab and newline stay unless `one_line` (a label, a flag value, a file name in a table, a
    snippet comment: a newline there would start a line of its own, in a shell snippet a command)."""
    pattern = _CONTROL_ONE_LINE() if one_line else _CONTROL()
    if pattern.search(text) is None:  # the common case costs one scan
        return text
    return pattern.sub(_escape, text)


def valid_text(text: str) -> str:
    """`text` as UTF-8 can hold it: lone surrogates (an undecodable byte of a file name, a `\\ud800`
    escape decoded from a log) written as escapes, everything else as it is. For values that are
    stored (a table, Parquet, the store), where the other escapes wait for the view."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda m: _code(ord(m.group(0))), text)


def valid_json(text: str) -> str:
    """JSON text (`ensure_ascii=False`) as UTF-8 can hold it: each lone surrogate, which only a
    string holds, written as `valid_text` writes it, that text escaped for JSON (`"\\\\xff"`).
    `valid_text` on the JSON text wrote `\\xff` there, no JSON escape: the reader of the column
    failed with "Invalid \\escape"."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda m: _code(ord(m.group(0))).replace("\\", "\\\\"), text)


def has_surrogate(texts: Iterable[str]) -> bool:
    """Whether any of `texts` holds a lone surrogate (what `valid_text` escapes): one search over
    them all, none where they are all ASCII (a flag kept by Python: every run's dump comes here, and
    the search was a third of checking it). True too when one is not text, so the caller checks
    them one by one."""
    try:
        text = "\x00".join(texts)
    except TypeError:
        return True
    return not text.isascii() and _SURROGATE.search(text) is not None


def valid_values(value: Any) -> Any:
    """`value` with `valid_text` applied to every string in it (dict keys too); the same object
    when nothing changes."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, (list, tuple)):  # a tuple too: a flag printed `('a', 'b')` is one
        items = [valid_values(v) for v in value]
        if not any(a is not b for a, b in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        pairs = [(valid_text(k) if isinstance(k, str) else k, valid_values(v)) for k, v in value.items()]
        changed = any(k2 is not k or v2 is not v for (k2, v2), (k, v) in zip(pairs, value.items(), strict=True))
        return dict(pairs) if changed else value
    return value


_JSON_RAW = re.compile(f"[\\x7f-\\x9f{_INVISIBLE}]")


def _json_escape(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON writes a character beyond the BMP as its UTF-16 pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_visible(text: str) -> str:
    """JSON text (from `json.dumps`, which escapes C0 already) with DEL, C1 and the other
    characters `visible` escapes written as `\\uXXXX`: the same JSON value, no raw control, no
    invisible character, and valid UTF-8 (a lone surrogate becomes its escape).

    A whole `parse --json` of a folder is megabytes with a few hundred non-ASCII characters
    (a `…` that cuts a quoted line): the pattern is slow (12 ns a character: 0.09 s for 7 MB),
    so only short pieces with a non-ASCII character in them meet it; the others are checked for
    DEL at memory speed (0.02 s in all). Text with non-ASCII everywhere costs what it did.
    Before the pieces, the pattern meets the text's non-ASCII characters alone, in a copy
    made at memory speed (`_non_ascii`): a run's text with no character to escape, but a
    progress bar's blocks in every piece, is handed back as it is (a third of the time)."""
    if text.isascii():
        return text.replace("\x7f", "\\u007f") if "\x7f" in text else text
    rest = _non_ascii(text)
    if rest is not None and _JSON_RAW.search(rest) is None:
        return text  # every character the pattern escapes is DEL or beyond ASCII: none here
    pieces = (text[at:at + _JSON_PIECE] for at in range(0, len(text), _JSON_PIECE))
    return "".join([(piece.replace("\x7f", "\\u007f") if "\x7f" in piece else piece) if piece.isascii()
                    else _JSON_RAW.sub(_json_escape, piece) for piece in pieces])


_ASCII_BELOW_DEL = bytes(range(0x7F))


def _non_ascii(text: str) -> str | None:
    """The characters of `text` from DEL up, in order: its UTF-8 without the bytes below DEL
    (a character beyond ASCII is bytes of 0x80 and up only, so each stays whole). None for a
    text with a lone surrogate, which has no UTF-8."""
    try:
        return text.encode("utf-8").translate(None, _ASCII_BELOW_DEL).decode("utf-8")
    except UnicodeEncodeError:
        return None


# Characters a piece (measured: 512 is the quickest on a folder's JSON); an escape is one
# character, so none spans two pieces.
_JSON_PIECE = 512


def json_text(value: Any, *, indent: int | None = None) -> str:
    """`value` as JSON every reader takes: no `NaN` or `Infinity` (`allow_nan=False`; the rare
    non-finite float that reaches here is written `null`), no raw control or invisible
    character (`json_visible`); what is no JSON type is made one (`json_default`, `json_ready`)."""
    import json

    try:
        text = json.dumps(value, indent=indent, default=json_default, ensure_ascii=False, allow_nan=False)
    except (ValueError, TypeError):  # a NaN or an infinity, a key JSON cannot hold: the slow walk only then
        text = json.dumps(finite(json_ready(value)), indent=indent, default=json_default, ensure_ascii=False,
                          allow_nan=False)
    return json_visible(text)


def json_default(value: Any) -> Any:
    """What JSON has no type for, as JSON (an encoder's `default=`): a set as a sorted list (an
    args dump prints `{'a.com', 'b.com'}`, which the config parser reads as a set), anything
    else (bytes, a complex number, `...`) as its text."""
    if isinstance(value, (set, frozenset)):
        return _sorted(value)
    return str(value)


def json_ready(value: Any) -> Any:
    """`value` with every part JSON has no type for made JSON (`json_default`), a dict's keys
    too: every key as the text JSON writes for it (`1`, `true`, `null`), one JSON cannot write
    (a tuple, bytes) as its Python text, so keys of mixed kinds also sort."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, dict):
        return {_key(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return [json_ready(v) for v in _sorted(value)]
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return {None: "null", True: "true", False: "false"}[key]
    return str(key)


def _sorted(items: Iterable[Any]) -> list[Any]:
    """A set's items in an order that does not depend on hashing: their own, else by type and text
    (items that do not compare: 1 and 'a')."""
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=lambda v: (type(v).__name__, repr(v)))


def finite(value: Any) -> Any:
    """`value` with every NaN and infinity in it (in lists and dicts too) as None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


# The user and password of a URL (`http://user:secret@host/`): the scheme at most 32 characters,
# so a long run of letters and dots costs linear time, not a rescan from every letter.
_USERINFO = lazy_regex(r"(?i)\b([a-z][a-z0-9+.-]{0,31}://)[^/?#@\s]*@")


def without_credentials(text: str) -> str:
    """`text` with the user and password of every URL in it shown as `***`
    (`http://***@host:30000/health`): a `--url` with credentials is printed in the status line,
    the verdict and errors, and recorded, but its password never is."""
    if "@" not in text or "://" not in text:
        return text
    return _USERINFO().sub(r"\1***@", text)


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


def metric_label(value: str) -> str:
    """A label value as the Prometheus and OpenMetrics text formats write it between its quotes:
    backslash, quote and newline escaped, so no value (a model name of `x"} 999` and a newline)
    can end its label, its sample or its line."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


__all__ = ["csv_cell", "finite", "has_surrogate", "json_default", "json_ready", "json_text", "json_visible",
           "metric_label", "valid_text", "valid_values", "visible", "without_credentials"]

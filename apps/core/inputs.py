"""What no stored or parsed value may hold, checked in one place for every entry point.

- ``text_problem``: a NUL character (PostgreSQL cannot store it) or a lone surrogate such as
  ``\\ud800`` (a valid JSON escape, but no character: not UTF-8). Used by the request guard (path,
  query, form, cookies), the shared JSON parser and the JSON form fields.
- ``csv_width_problem``: a CSV header wider than ``CSV_MAX_COLUMNS``.
- ``json_problem`` (and ``json_loads``, which applies it): JSON nested deeper than
  ``JSON_MAX_DEPTH`` or holding more than ``JSON_MAX_ITEMS`` values, either of which a
  recursive reader (Python's own ``json``, a JSON Schema validator, the canonical encoder)
  cannot take without a ``RecursionError`` or a long stall. The limits are far beyond any
  document of the product (a frozen plan nests six deep).
- ``whole_number``: a text as an ``int`` when it is written in ASCII digits, else None. Python's
  ``str.isdigit`` also holds for "²" and "①", which ``int`` refuses with a ValueError, and ``int``
  refuses more than 4,300 digits: a check by ``isdigit`` then ``int`` answered 500 to both.
"""

import json
import re
import sys
from typing import Any

JSON_MAX_DEPTH = 64
JSON_MAX_ITEMS = 1_000_000
# The widest CSV file any importer reads: checks per column made a 200,000-column file take
# time growing with the square of its width (issue #33).
CSV_MAX_COLUMNS = 2_000


_DIGITS = re.compile(r"-?[0-9]+")


def whole_number(text: str, *, signed: bool = False) -> int | None:
    """``text`` (spaces around it ignored) as an int when it is ASCII digits (after a minus sign
    when ``signed``) that Python will convert (at most ``sys.get_int_max_str_digits()`` of them),
    else None."""
    text = text.strip()
    if not _DIGITS.fullmatch(text) or (text.startswith("-") and not signed):
        return None
    limit = sys.get_int_max_str_digits()
    if limit and len(text.lstrip("-")) > limit:
        return None
    return int(text)


def csv_width_problem(columns: list[str]) -> str | None:
    """Why a CSV header is too wide to read (naming the limit), or None."""
    if len(columns) > CSV_MAX_COLUMNS:
        return (
            f"the header has {len(columns):,} columns; a CSV file may have at most "
            f"{CSV_MAX_COLUMNS:,}"
        )
    return None


def text_problem(text: str) -> str | None:
    """What makes ``text`` unstorable, or None."""
    if "\x00" in text:
        return "text may not contain a NUL character (U+0000)"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            return (
                f"text may not contain a lone surrogate (U+{ord(text[error.start]):04X}): "
                "send a whole character"
            )
    return None


def json_loads(text: str | bytes) -> Any:
    """``json.loads`` for text a person or a client sent: raises ValueError (never
    RecursionError) for malformed JSON, for nesting deeper than ``JSON_MAX_DEPTH`` and for
    text that may not be kept (``json_problem``), its message naming the JSON path."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"JSON may nest at most {JSON_MAX_DEPTH} levels deep") from None
    found = json_problem(value)
    if found is not None:
        where, problem = found
        raise ValueError(f"{where}: {problem}" if where else problem)
    return value


def json_problem(value: Any, path: str = "") -> tuple[str, str] | None:
    """``(path, problem)`` of the first thing in a parsed JSON value that may not be kept: text
    with a NUL or a lone surrogate (key or value), nesting deeper than ``JSON_MAX_DEPTH`` or more
    than ``JSON_MAX_ITEMS`` values; None when there is none. Iterative: never recursion."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    seen = 0
    while stack:
        item, where, depth = stack.pop()
        seen += 1
        if seen > JSON_MAX_ITEMS:
            return (path or "body", f"JSON may hold at most {JSON_MAX_ITEMS:,} values")
        if isinstance(item, str):
            problem = text_problem(item)
            if problem is not None:
                return (where or "body", problem)
            continue
        if not isinstance(item, dict | list):
            continue
        if depth >= JSON_MAX_DEPTH:
            return (where or "body", f"JSON may nest at most {JSON_MAX_DEPTH} levels deep")
        if isinstance(item, dict):
            children = []
            for key, child in item.items():
                name = f"{where}.{key}" if where else str(key)
                if (problem := text_problem(str(key))) is not None:
                    return (name.encode("utf-8", "backslashreplace").decode(), problem)
                children.append((child, name, depth + 1))
        else:
            children = [(child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item)]
        stack.extend(reversed(children))
    return None

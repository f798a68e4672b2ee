"""Canonical JSON for analysis result documents, so that a rerun hashes identically.

BRIEF invariant 6: rerunning an analysis on the same inputs gives a byte-identical result
document. Key order, whitespace, Unicode escaping and the last bits of a float all change the
bytes without changing the meaning, so this module fixes each of them.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

SIGNIFICANT_DIGITS = 12


def canonical_json(obj: Any) -> bytes:
    """Serialise ``obj`` to canonical JSON bytes.

    Input: nested ``dict`` (string keys only), ``list``/``tuple``, ``str``, ``int``, ``float``,
    ``bool``, ``None``, numpy scalars and numpy arrays (converted with ``tolist``).

    Rules:
    - keys sorted, separators ``(",", ":")``, UTF-8, ``ensure_ascii=False``;
    - floats are rounded to 12 significant digits (``float(f"{x:.12g}")``) so that results that
      differ only in the last bits (another BLAS, another CPU) serialise identically; ``-0.0``
      becomes ``0.0`` for the same reason;
    - NaN and ±Infinity are rejected: an undefined statistic must be stated explicitly as
      ``None`` (JSON ``null``) by the code that produced it, not smuggled through as a float.

    Raises:
        ValueError: a non-finite float, a non-string mapping key, or an unsupported type; the
            message names the JSON path (``$.estimates.beta_A``) of the offending value.
    """
    normalised = _normalise(obj, "$")
    text = json.dumps(
        normalised, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    return text.encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """Return the lowercase hex SHA-256 digest of ``data``.

    Raises:
        ValueError: ``data`` is not ``bytes`` (hash the output of ``canonical_json``, never a
            ``str`` whose encoding would be implicit).
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ValueError(f"sha256_hex needs bytes, got {type(data).__name__}")
    return hashlib.sha256(data).hexdigest()


def _normalise(obj: Any, path: str) -> Any:
    # bool before int: bool is a subclass of int and must stay true/false.
    if obj is None or isinstance(obj, bool | str):
        return obj
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return _round_float(float(obj), path)
    if isinstance(obj, np.ndarray):
        return _normalise(obj.tolist(), path)
    if isinstance(obj, Mapping):
        out = {}
        for key, value in obj.items():
            if not isinstance(key, str):
                raise ValueError(f"{path}: mapping key {key!r} is not a string")
            out[key] = _normalise(value, f"{path}.{key}")
        return out
    if isinstance(obj, list | tuple):
        return [_normalise(value, f"{path}[{i}]") for i, value in enumerate(obj)]
    raise ValueError(f"{path}: cannot serialise value of type {type(obj).__name__}")


def _round_float(x: float, path: str) -> float:
    if not math.isfinite(x):
        raise ValueError(f"{path}: {x!r} is not allowed in canonical JSON; use None")
    rounded = float(f"{x:.{SIGNIFICANT_DIGITS}g}")
    return 0.0 if rounded == 0.0 else rounded

"""Canonical JSON and SHA-256: how every frozen or hashed document in Preregistry is encoded.

The encoding follows RFC 8785 (JSON Canonicalization Scheme) where it matters here: object keys
sorted, UTF-8, no insignificant whitespace. Numbers: integers as usual; floats are rounded to
12 significant digits and NaN/Infinity are refused, so a rerun on another machine yields the same
bytes. Documents that need exact decimals (plan parameters) carry them as strings.

No Django imports: the analysis statistics use this module too.
"""

import hashlib
import json
import math
from typing import Any


def _normalise(value: Any) -> Any:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"canonical JSON cannot hold {value!r}: encode it as null or a string")
        rounded = float(f"{value:.12g}")
        return int(rounded) if rounded.is_integer() and abs(rounded) < 2**53 else rounded
    if isinstance(value, dict):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalise(v) for v in value]
    return value


def canonical_json(document: Any) -> bytes:
    """Encode ``document`` (dicts, lists, str, int, float, bool, None) as canonical JSON bytes.

    Raises ValueError for NaN or infinite floats and TypeError for values JSON cannot hold.
    """
    return json.dumps(
        _normalise(document), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """The lowercase hexadecimal SHA-256 of ``data`` (64 characters)."""
    return hashlib.sha256(data).hexdigest()

"""Canonical JSON and SHA-256: how every frozen or hashed document in Preregistry is encoded.

The one implementation for the whole product: frozen version documents, the deviation log's
entry hashes, analysis inputs and analysis result documents (BRIEF invariant 6: a rerun on the
same inputs gives byte-identical bytes) all go through ``canonical_json``.

The encoding follows RFC 8785 (JSON Canonicalization Scheme) where it matters here: object keys
sorted, UTF-8, no insignificant whitespace. Numbers: integers as usual; floats are rounded to
12 significant digits, so that results differing only in their last bits (another BLAS, another
CPU) serialise identically, and a float with an integral value is written as an integer (as
RFC 8785 writes ``1.0`` as ``1``; ``-0.0`` becomes ``0``). NaN and ±Infinity are refused: an
undefined statistic must be stated as ``None`` by the code that produced it. Documents that need
exact decimals (plan parameters) carry them as strings.

numpy scalars and arrays are accepted (converted with ``tolist``) without this module importing
numpy. No Django imports: the analysis statistics use this module too.
"""

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

SIGNIFICANT_DIGITS = 12


def _number(value: float, path: str) -> int | float:
    if not math.isfinite(value):
        raise ValueError(
            f"{path}: canonical JSON cannot hold {value!r}: encode it as null or a string"
        )
    rounded = float(f"{value:.{SIGNIFICANT_DIGITS}g}")
    return int(rounded) if rounded.is_integer() and abs(rounded) < 2**53 else rounded


def _key(key: Any, path: str) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, int) and not isinstance(key, bool):
        return str(key)  # as json.dumps itself writes integer keys
    raise TypeError(f"{path}: mapping key {key!r} is not a string")


def _normalise(value: Any, path: str) -> Any:
    # bool before int: bool is a subclass of int and must stay true/false.
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):  # numpy.float64 too: it subclasses float
        return _number(value, path)
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        # numpy scalars become Python scalars, arrays nested lists.
        return _normalise(value.tolist(), path)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = _key(key, path)
            if name in out:
                raise ValueError(f"{path}: key {name!r} appears twice once keys are strings")
            out[name] = _normalise(item, f"{path}.{name}")
        return out
    if isinstance(value, list | tuple):
        return [_normalise(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise TypeError(f"{path}: canonical JSON cannot hold a value of type {type(value).__name__}")


def canonical_json(document: Any) -> bytes:
    """Encode ``document`` as canonical JSON bytes (see the module docstring for the rules).

    ``document`` holds dicts (string or integer keys), lists, tuples, str, int, float, bool,
    None, and numpy scalars or arrays.

    Raises ValueError for NaN or infinite floats, TypeError for keys or values JSON cannot hold;
    both messages name the JSON path of the offending value (``$.estimates.beta_A[1]``).
    """
    return json.dumps(
        _normalise(document, "$"),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    ).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """The lowercase hexadecimal SHA-256 of ``data`` (64 characters).

    Raises TypeError when ``data`` is not bytes: hash the output of ``canonical_json``, never a
    ``str`` whose encoding would be implicit.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"sha256_hex needs bytes, got {type(data).__name__}")
    return hashlib.sha256(data).hexdigest()

#!/usr/bin/env python3
"""The deviation log's hash chain: payload, hash and verifier. Standard library only.

This one file is both the server's verifier and the offline verifier an auditor runs on an
exported log, so it imports nothing from Django or from Preregistry (its canonical JSON encoder
duplicates ``apps.core.canonical``; the tests prove both give the same bytes). Offline::

    python3 chain.py OPB-01-log.jsonl [--expect SEQ=HASH ...]

prints ``OPB-01: verified through entry N at T (head hash H)`` and exits 0, or
``OPB-01: broken at entry N: <why>`` and exits 1 (2 when the file cannot be read).

An entry is a mapping with the keys of ``ENTRY_FIELDS``. Its hash is the lowercase hex SHA-256 of
the canonical JSON (keys sorted, no whitespace, UTF-8, non-ASCII written as itself) of the entry
without its ``hash`` key, whose ``prev_hash`` is the hash of the entry before it (``GENESIS_HASH``,
64 zeros, for entry 1). ``docs/deviation-log.md`` gives the full rules.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from json.encoder import encode_basestring as _quote  # C-accelerated; the non-ASCII-keeping one
from typing import Any

GENESIS_HASH = "0" * 64

# The hashed fields, in their canonical (sorted) order; an exported entry has these and ``hash``.
PAYLOAD_FIELDS = (
    "actor",
    "kind",
    "occurred_on",
    "outcome_visible",
    "prev_hash",
    "protocol",
    "rationale",
    "recorded_at",
    "refs",
    "seq",
)
ENTRY_FIELDS = (*PAYLOAD_FIELDS, "hash")


# -- canonical JSON (the same rules as apps.core.canonical) -----------------------------------


def _normalise(value: Any) -> Any:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"canonical JSON cannot hold {value!r}")
        rounded = float(f"{value:.12g}")
        return int(rounded) if rounded.is_integer() and abs(rounded) < 2**53 else rounded
    if isinstance(value, dict):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalise(v) for v in value]
    return value


def canonical_json(document: Any) -> bytes:
    """Canonical JSON bytes: keys sorted, ``,``/``:`` separators, UTF-8, floats to 12 digits."""
    return json.dumps(
        _normalise(document), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")


# -- the payload ----------------------------------------------------------------------------


class _SlowPath(Exception):
    pass


def _scalar(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return _quote(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if value is None:
        return "null"
    raise _SlowPath


def _ref_json(ref: Any) -> str:
    if type(ref) is not dict:
        raise _SlowPath
    if len(ref) == 3 and "id" in ref and "label" in ref and "type" in ref:
        ref_id, label, ref_type = ref["id"], ref["label"], ref["type"]
        if type(label) is str and type(ref_type) is str:
            if type(ref_id) is int:
                return f'{{"id":{ref_id},"label":{_quote(label)},"type":{_quote(ref_type)}}}'
            if type(ref_id) is str:
                return (
                    f'{{"id":{_quote(ref_id)},"label":{_quote(label)},"type":{_quote(ref_type)}}}'
                )
    keys = sorted(ref)  # TypeError on mixed key types: canonical_json() then decides
    if any(type(key) is not str for key in keys):
        raise _SlowPath
    return "{" + ",".join(f"{_quote(key)}:{_scalar(ref[key])}" for key in keys) + "}"


# Quoted forms of the few strings that repeat on nearly every entry (protocol code, kinds, actor
# names, dates), so a long chain quotes each once. Bounded: cleared when it grows past the limit.
_QUOTED: dict[str, str] = {}
_QUOTED_LIMIT = 10_000


def _quoted(text: str) -> str:
    if len(_QUOTED) >= _QUOTED_LIMIT:
        _QUOTED.clear()
    quoted = _QUOTED[text] = _quote(text)
    return quoted


def entry_payload(entry: Mapping[str, Any]) -> bytes:
    """The canonical JSON bytes an entry's hash is taken over: its ``PAYLOAD_FIELDS``.

    Raises KeyError for a missing field, ValueError/TypeError/UnicodeEncodeError for a value that
    canonical JSON cannot hold.
    """
    # The common case, written out: identical bytes to canonical_json() (the tests compare them
    # on thousands of shapes) at a fraction of its cost, which is what lets verification keep up
    # with long logs. Anything unusual (floats, nesting, other types) takes canonical_json().
    try:
        actor, kind, occurred_on = entry["actor"], entry["kind"], entry["occurred_on"]
        prev_hash, protocol, rationale = entry["prev_hash"], entry["protocol"], entry["rationale"]
        recorded_at, refs, seq = entry["recorded_at"], entry["refs"], entry["seq"]
        visible = entry["outcome_visible"]
        # The strings need no check here: _quote() raises TypeError for anything but a str,
        # which sends the entry down the slow path. An int, a bool and a list would not raise.
        if type(seq) is not int or type(visible) is not bool or type(refs) is not list:
            raise _SlowPath
        get = _QUOTED.get
        quoted_actor = get(actor) or _quoted(actor)
        quoted_kind = get(kind) or _quoted(kind)
        quoted_protocol = get(protocol) or _quoted(protocol)
        quoted_occurred = (
            "null" if occurred_on is None else (get(occurred_on) or _quoted(occurred_on))
        )
        if not refs:
            refs_text = "[]"
        elif len(refs) == 1:
            ref = refs[0]
            # The one-reference case, inlined: most entries concern exactly one object.
            if (
                type(ref) is dict
                and len(ref) == 3
                and type(ref_id := ref.get("id")) is int
                and type(label := ref.get("label")) is str
                and type(ref_type := ref.get("type")) is str
            ):
                refs_text = f'[{{"id":{ref_id},"label":{_quote(label)},"type":{_quote(ref_type)}}}]'
            else:
                refs_text = f"[{_ref_json(ref)}]"
        else:
            refs_text = "[" + ",".join([_ref_json(ref) for ref in refs]) + "]"
        text = (
            f'{{"actor":{quoted_actor},"kind":{quoted_kind},"occurred_on":{quoted_occurred},'
            f'"outcome_visible":{"true" if visible else "false"},'
            f'"prev_hash":{_quote(prev_hash)},"protocol":{quoted_protocol},'
            f'"rationale":{_quote(rationale)},"recorded_at":{_quote(recorded_at)},'
            f'"refs":{refs_text},"seq":{seq}}}'
        )
    except (_SlowPath, TypeError):
        return canonical_json({name: entry[name] for name in PAYLOAD_FIELDS})
    return text.encode()


def entry_hash(entry: Mapping[str, Any]) -> str:
    """The lowercase hex SHA-256 of ``entry_payload(entry)``."""
    return hashlib.sha256(entry_payload(entry)).hexdigest()


def entry_line(entry: Mapping[str, Any]) -> str:
    """One JSONL export line: the whole entry, hash included, keys sorted, no newline.

    Written in ASCII (non-ASCII as ``\\uXXXX`` escapes): the line itself is not hashed, and
    pure ASCII lines cannot be split or mangled by a reader that treats U+2028 or U+0085 as a
    line break or guesses the wrong encoding. The values, and so the hashes, are the same.
    """
    return json.dumps(
        {name: entry[name] for name in ENTRY_FIELDS},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )


# -- the verifier ---------------------------------------------------------------------------


@dataclass
class ChainReport:
    """What verifying one protocol's chain found.

    ``ok`` with ``verified_through`` = N and ``verified_through_at`` = T: every entry 1..N is
    intact and linked. Otherwise ``broken_at`` names the first broken entry and ``reason`` why;
    ``verified_through`` is then the last intact entry before it (None when there is none).
    """

    protocol: str | None = None
    entries: int = 0
    verified_through: int | None = None
    verified_through_at: str | None = None
    head_hash: str | None = None
    broken_at: int | None = None
    reason: str = ""
    anchors_checked: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.broken_at is None

    def summary(self) -> str:
        """One line: ``verified through entry N at T`` or ``broken at entry N: why``."""
        if not self.ok:
            return f"broken at entry {self.broken_at}: {self.reason}"
        if self.verified_through is None:
            return "no entries yet"
        return (
            f"verified through entry {self.verified_through} at {self.verified_through_at}"
            f" (head hash {self.head_hash})"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "ok": self.ok,
            "entries": self.entries,
            "verified_through": self.verified_through,
            "verified_through_at": self.verified_through_at,
            "head_hash": self.head_hash,
            "broken_at": self.broken_at,
            "reason": self.reason,
            "summary": self.summary(),
        }


class _BadLine:
    """A line of an export that is not a JSON object: the verifier reports it as a break."""

    def __init__(self, problem: str):
        self.problem = problem

    def __getitem__(self, key: str) -> Any:
        raise TypeError(self.problem)


def _shape_problem(entry: Any) -> str | None:
    if isinstance(entry, _BadLine):
        return entry.problem
    if not isinstance(entry, Mapping):
        return f"is not an object but {type(entry).__name__}"
    missing = [name for name in ENTRY_FIELDS if name not in entry]
    if missing:
        return "lacks " + ", ".join(missing)
    return None


def verify_chain(
    entries: Iterable[Mapping[str, Any]],
    *,
    protocol: str | None = None,
    expect: Mapping[int, str] | None = None,
) -> ChainReport:
    """Recompute one protocol's chain from its entries (in ``seq`` order) and name the first break.

    Checks, entry by entry: the fields are all there; the entry belongs to the same protocol as
    the first (or to ``protocol``); its ``seq`` is the next number (a gap or repeat breaks at the
    missing number); its ``prev_hash`` is the previous entry's ``hash`` (``GENESIS_HASH`` for
    entry 1); its ``hash`` is the SHA-256 of its payload. ``expect`` maps sequence numbers to the
    hashes an auditor saw earlier (anchors): a different hash there, or a log that no longer
    reaches that entry, is a break too (it is how a rewritten or cut-short log shows).

    Entries are read once and not kept, so memory stays flat over millions of entries.
    """
    report = ChainReport(protocol=protocol)
    expect = dict(expect or {})
    chain_protocol = protocol
    previous_hash = GENESIS_HASH
    expected_seq = 1
    last_good = None  # the last intact entry; the report is filled from it once, at the end
    sha256 = hashlib.sha256

    def finish(broken_at: int | None = None, reason: str = "") -> ChainReport:
        report.protocol = chain_protocol
        if last_good is not None:
            report.entries = report.verified_through = last_good["seq"]
            report.verified_through_at = last_good["recorded_at"]
            report.head_hash = last_good["hash"]
        report.broken_at, report.reason = broken_at, reason
        return report

    for entry in entries:
        try:
            seq = entry["seq"]
            entry_protocol = entry["protocol"]
            stored_hash = entry["hash"]
            prev_hash = entry["prev_hash"]
        except (KeyError, TypeError):
            return finish(expected_seq, f"entry {expected_seq} {_shape_problem(entry)}")
        if type(seq) is not int:
            return finish(expected_seq, f"entry {expected_seq} has a seq that is not an integer")
        if entry_protocol != chain_protocol:
            if chain_protocol is not None:
                return finish(
                    expected_seq,
                    f"entry {seq} belongs to protocol {entry_protocol!r}, not {chain_protocol!r}",
                )
            chain_protocol = entry_protocol
        if seq != expected_seq:
            if seq > expected_seq:
                return finish(
                    expected_seq, f"entry {expected_seq} is missing (the next entry is {seq})"
                )
            return finish(
                expected_seq, f"entry {seq} appears again where entry {expected_seq} should be"
            )
        if prev_hash != previous_hash:
            if seq == 1:
                return finish(seq, "prev_hash of the first entry is not the genesis hash")
            return finish(
                seq, f"prev_hash does not match the hash of entry {seq - 1} ({previous_hash})"
            )
        try:
            recomputed = sha256(entry_payload(entry)).hexdigest()
        except KeyError:
            return finish(seq, f"entry {seq} {_shape_problem(entry)}")
        except (TypeError, ValueError) as error:  # UnicodeEncodeError is a ValueError
            return finish(seq, f"entry {seq} cannot be encoded: {error}")
        if recomputed != stored_hash:
            return finish(
                seq,
                f"hash does not match the entry's content (stored {stored_hash}, "
                f"recomputed {recomputed})",
            )
        if expect and seq in expect:
            if expect[seq] != stored_hash:
                return finish(
                    seq, f"hash is {stored_hash}, but it was {expect[seq]} when seen before"
                )
            report.anchors_checked.append(seq)
        last_good = entry
        previous_hash = stored_hash
        expected_seq = seq + 1

    missing = sorted(seq for seq in expect if seq >= expected_seq)
    if missing:
        ends = f"the log ends at entry {expected_seq - 1}" if expected_seq > 1 else "it is empty"
        return finish(missing[0], f"entry {missing[0]} was seen before, but {ends}")
    return finish()


# -- the offline command ----------------------------------------------------------------------


def read_jsonl(path: str) -> Iterable[Any]:
    """The entries of a JSONL export, one per non-empty line, read as UTF-8 line by line.

    A line that is not valid UTF-8 JSON comes out as a ``_BadLine``, so the verifier names the
    entry it should have held rather than giving up on the whole file.
    """
    with open(path, "rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                yield json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                yield _BadLine(f"cannot be read: line {number} is not valid UTF-8 JSON ({error})")


def _parse_expect(values: list[str]) -> dict[int, str]:
    anchors = {}
    for value in values:
        seq, sep, digest = value.partition("=")
        if not sep or not seq.isdigit() or len(digest) != 64:
            raise SystemExit(f"--expect wants SEQ=HASH (64 hex digits), not {value!r}")
        anchors[int(seq)] = digest.lower()
    return anchors


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        description="Verify an exported Preregistry deviation log (JSONL) offline."
    )
    parser.add_argument("export", help="the .jsonl file exported from the log page or API")
    parser.add_argument(
        "--expect",
        action="append",
        default=[],
        metavar="SEQ=HASH",
        help="an entry's hash seen earlier; the log must still hold it (repeatable)",
    )
    args = parser.parse_args(argv)
    anchors = _parse_expect(args.expect)
    try:
        report = verify_chain(read_jsonl(args.export), expect=anchors)
    except OSError as error:
        print(f"{args.export}: cannot be read: {error}", file=sys.stderr)
        return 2
    print(f"{report.protocol or args.export}: {report.summary()}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The deviation log's hash chain: payload, hash, verifier and signed checkpoints.

Standard library only, except that checking a checkpoint's Ed25519 signature needs the
`cryptography` package: without it the chain is still checked against every checkpoint (a log
that does not extend one is broken) and the script says the signatures were not checked.

This one file is both the server's verifier and the offline verifier an auditor runs on an
exported log, so it imports nothing from Django or from Preregistry (its canonical JSON encoder
duplicates ``apps.core.canonical``; the tests prove both give the same bytes). Offline::

    python3 verify_log.py OPB-01-deviation-log.jsonl [--expect SEQ=HASH ...]
                          [--checkpoint FILE ...] [--public-key KEY ...]

(the log page serves this file as ``verify_log.py``) prints ``OPB-01: verified through entry N
at T (head hash H)`` and exits 0, or ``OPB-01: broken at entry N: <why>`` and exits 1; it exits
2 when the file cannot be read or is not a JSONL export at all (its first line is no JSON: the
CSV export, say, which is for reading only). A line after the first that cannot be read is a
break at that entry, not an unreadable file.

An entry is a mapping with the keys of ``ENTRY_FIELDS``. Its hash is the lowercase hex SHA-256 of
the canonical JSON (keys sorted, no whitespace, UTF-8, non-ASCII written as itself) of the entry
without its ``hash`` key, whose ``prev_hash`` is the hash of the entry before it (``GENESIS_HASH``,
64 zeros, for entry 1). ``docs/deviation-log.md`` gives the full rules.
"""

from __future__ import annotations

import hashlib
import itertools
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
    checkpoints: list[dict[str, Any]] = field(default_factory=list)

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


# -- signed checkpoints -------------------------------------------------------------------
#
# A checkpoint is a signed statement of a chain's head: {"type", "protocol", "seq", "hash",
# "recorded_at" (entry seq's), "signed_at", "key_id"} plus "public_key" (base64 of the raw 32-byte
# Ed25519 key) and "signature" (base64 of the Ed25519 signature over the canonical JSON of the
# CHECKPOINT_FIELDS). A log that does not hold entry seq with that hash does not extend the
# checkpoint: it was rewritten or cut short after the checkpoint left the server.
# Checking the chain against a checkpoint needs only this file; checking the signature needs the
# `cryptography` package (optional: without it the verifier says the signature was not checked).

CHECKPOINT_TYPE = "preregistry/log-checkpoint/1"
CHECKPOINT_FIELDS = ("hash", "key_id", "protocol", "recorded_at", "seq", "signed_at", "type")


def checkpoint_statement(checkpoint: Mapping[str, Any]) -> bytes:
    """The canonical JSON bytes a checkpoint's signature covers (its ``CHECKPOINT_FIELDS``)."""
    return canonical_json({name: checkpoint[name] for name in CHECKPOINT_FIELDS})


def key_id(public_key_raw: bytes) -> str:
    """A public key's id: the first 16 hex digits of the SHA-256 of its 32 raw bytes."""
    return hashlib.sha256(public_key_raw).hexdigest()[:16]


def is_checkpoint(value: object) -> bool:
    return isinstance(value, Mapping) and value.get("type") == CHECKPOINT_TYPE


def checkpoint_problem(checkpoint: Any) -> str | None:
    """What is wrong with a checkpoint's shape, or None."""
    if not is_checkpoint(checkpoint):
        return f"is not a checkpoint (its type is not {CHECKPOINT_TYPE})"
    missing = [name for name in (*CHECKPOINT_FIELDS, "signature") if name not in checkpoint]
    if missing:
        return "lacks " + ", ".join(missing)
    seq, digest = checkpoint["seq"], checkpoint["hash"]
    if type(seq) is not int or seq < 1:
        return "has a seq that is not a positive integer"
    if not isinstance(digest, str) or len(digest) != 64:
        return "has a hash that is not 64 hex digits"
    return None


def checkpoint_signature(
    checkpoint: Mapping[str, Any], public_keys: Any = None
) -> tuple[bool | None, str]:
    """(True, why) for a valid signature, (False, why) for an invalid one, (None, why) when it
    cannot be checked here (no `cryptography`). ``public_keys`` are the base64 raw keys the
    auditor trusts; None trusts the key the checkpoint names, which proves only that the
    checkpoint is intact, not who signed it."""
    import base64
    import binascii

    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    except ImportError:
        return None, "signature not checked: install the `cryptography` package to check it"
    try:
        signature = base64.b64decode(checkpoint["signature"], validate=True)
        candidates = list(public_keys) if public_keys is not None else [checkpoint["public_key"]]
        keys = {
            key_id(raw): raw for raw in (base64.b64decode(k, validate=True) for k in candidates)
        }
    except (KeyError, TypeError, ValueError, binascii.Error) as error:
        return False, f"signature or key cannot be read: {error}"
    raw = keys.get(checkpoint["key_id"])
    if raw is None:
        return False, f"signed with key {checkpoint['key_id']}, which is not a trusted key"
    try:
        Ed25519PublicKey.from_public_bytes(raw).verify(signature, checkpoint_statement(checkpoint))
    except (InvalidSignature, ValueError):
        return False, "the signature does not match the checkpoint"
    pinned = "" if public_keys is not None else " (by the key it names: pin one with --public-key)"
    return True, f"signature valid, key {checkpoint['key_id']}{pinned}"


def verify_chain(  # noqa: PLR0912, PLR0915 (one pass; split is debt)
    entries: Iterable[Mapping[str, Any]],
    *,
    protocol: str | None = None,
    expect: Mapping[int, str] | None = None,
    checkpoints: Iterable[Mapping[str, Any]] = (),
) -> ChainReport:
    """Recompute one protocol's chain from its entries (in ``seq`` order) and name the first break.

    Checks, entry by entry: the fields are all there; the entry belongs to the same protocol as
    the first (or to ``protocol``); its ``seq`` is the next number (a gap or repeat breaks at the
    missing number); its ``prev_hash`` is the previous entry's ``hash`` (``GENESIS_HASH`` for
    entry 1); its ``hash`` is the SHA-256 of its payload. ``expect`` maps sequence numbers to the
    hashes an auditor saw earlier (anchors): a different hash there, or a log that no longer
    reaches that entry, is a break too (it is how a rewritten or cut-short log shows).
    ``checkpoints`` are signed checkpoints (their signatures are checked by
    ``checkpoint_signature``, not here): each is an anchor, so a log that does not extend every
    one of them is broken, even when its chain was recomputed whole. A checkpoint may also come
    as the first lines of ``entries`` (an export carries its latest this way).

    Entries are read once and not kept, so memory stays flat over millions of entries.
    """
    report = ChainReport(protocol=protocol)
    expect = dict(expect or {})
    # Where each anchor came from, for the reason a mismatch gives.
    sources: dict[int, str] = {}
    checkpoint_codes: set[str] = set()

    def add_checkpoint(checkpoint: Any) -> str | None:
        problem = checkpoint_problem(checkpoint)
        if problem:
            return f"a checkpoint {problem}"
        seq, digest = checkpoint["seq"], checkpoint["hash"].lower()
        if expect.get(seq, digest) != digest:
            return f"two anchors disagree about entry {seq}"
        expect[seq] = digest
        sources[seq] = f"the checkpoint signed at {checkpoint['signed_at']}"
        checkpoint_codes.add(checkpoint["protocol"])
        report.checkpoints.append(dict(checkpoint))
        return None

    for checkpoint in checkpoints:
        if problem := add_checkpoint(checkpoint):
            report.broken_at, report.reason = 1, problem
            return report
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
        if type(entry) is dict and entry.get("type") == CHECKPOINT_TYPE:
            if expected_seq != 1:
                return finish(expected_seq, "a checkpoint comes after the entries, not before")
            if problem := add_checkpoint(entry):
                return finish(1, problem)
            continue
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
            if checkpoint_codes - {entry_protocol}:
                other = sorted(checkpoint_codes - {entry_protocol})[0]
                return finish(
                    expected_seq,
                    f"entry {seq} belongs to protocol {entry_protocol!r}, but a checkpoint is "
                    f"for {other!r}",
                )
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
                if seq in sources:
                    return finish(
                        seq,
                        f"hash is {stored_hash}, but {sources[seq]} says {expect[seq]}: the log "
                        "was rewritten after the checkpoint",
                    )
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
        if missing[0] in sources:
            return finish(
                missing[0], f"{sources[missing[0]]} covers entry {missing[0]}, but {ends}"
            )
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
    parser.add_argument(
        "--checkpoint",
        action="append",
        default=[],
        metavar="FILE",
        help="a signed checkpoint saved earlier (JSON); the log must extend it (repeatable)",
    )
    parser.add_argument(
        "--public-key",
        action="append",
        default=None,
        metavar="KEY",
        help="a signing key you trust: base64 of the raw Ed25519 key, or a file holding it or "
        "the JSON of /logs/signing-key (repeatable); without it a checkpoint's own key is used",
    )
    args = parser.parse_args(argv)
    anchors = _parse_expect(args.expect)
    try:
        saved = [_read_json(path) for path in args.checkpoint]
        trusted = None if args.public_key is None else _public_keys(args.public_key)
        entries = iter(read_jsonl(args.export))
        first = next(entries, None)
        if isinstance(first, _BadLine):
            raise ValueError(
                "not a JSONL export of the log (its first line is not JSON); download the "
                "log's JSONL export (the CSV export is for reading only)"
            )
        lines = entries if first is None else itertools.chain([first], entries)
        report = verify_chain(lines, expect=anchors, checkpoints=saved)
    except (OSError, ValueError) as error:
        print(f"{args.export}: cannot be read: {error}", file=sys.stderr)
        return 2
    print(f"{report.protocol or args.export}: {report.summary()}")
    signatures_ok = True
    for checkpoint in report.checkpoints:
        valid, why = checkpoint_signature(checkpoint, trusted)
        signatures_ok = signatures_ok and valid is not False
        print(f"  checkpoint at entry {checkpoint['seq']} ({checkpoint['signed_at']}): {why}")
    return 0 if report.ok and signatures_ok else 1


def _read_json(path: str) -> Any:
    with open(path, "rb") as file:
        try:
            return json.loads(file.read().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"{path} is not a JSON checkpoint ({error})") from error


def _public_keys(values: list[str]) -> list[str]:
    keys = []
    for value in values:
        try:
            with open(value, encoding="utf-8") as file:
                text = file.read().strip()
        except OSError:
            text = value.strip()
        if text.startswith("{"):
            document = json.loads(text)
            keys.append(document["public_key"])
            keys.extend(document.get("previous_public_keys", []))
        else:
            keys.append(text)
    return keys


if __name__ == "__main__":
    sys.exit(main())

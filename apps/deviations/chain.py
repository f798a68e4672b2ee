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

import base64
import binascii
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
# What a withheld entry keeps (``verify_chain(allow_withheld=True)``): its place, not its content.
WITHHELD_FIELDS = ("protocol", "seq", "prev_hash", "hash", "withheld")


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
    fields = WITHHELD_FIELDS if entry.get("withheld") is True else ENTRY_FIELDS
    return json.dumps(
        {name: entry[name] for name in fields},
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
    # The Merkle tree over entries 1..verified_through (RFC 6962): its size and base64 root.
    tree_size: int = 0
    root_hash: str | None = None
    # Entries served withheld (``verify_chain(allow_withheld=True)``): linked and in the tree,
    # their content unseen.
    withheld: int = 0

    @property
    def ok(self) -> bool:
        return self.broken_at is None

    def summary(self) -> str:
        """One line: ``verified through entry N at T`` or ``broken at entry N: why``."""
        if not self.ok:
            return f"broken at entry {self.broken_at}: {self.reason}"
        if self.verified_through is None:
            return "no entries yet"
        # The time is unknown when the last entry was served withheld (its content unseen).
        at = f" at {self.verified_through_at}" if self.verified_through_at else ""
        return f"verified through entry {self.verified_through}{at} (head hash {self.head_hash})"

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
            "tree_size": self.tree_size,
            "root_hash": self.root_hash,
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


# -- the Merkle tree (RFC 6962 section 2.1; RFC 9162 section 2.1) ----------------------------
#
# The entries of one protocol, in seq order, are the leaves of a Merkle tree: leaf i (counting
# from 0) is entry i + 1. A leaf's data is the 32 raw bytes of the entry's ``hash`` (not the
# entry's canonical bytes: the hash already commits to every field and, through prev_hash, to
# every entry before it, and it lets an inclusion proof name an entry by its hash alone).
#
#   leaf hash = SHA-256(0x00 || entry hash bytes)
#   node hash = SHA-256(0x01 || left || right)
#   MTH of n > 1 leaves = node hash(MTH(first k), MTH(rest)), k the largest power of two < n
#   MTH of no leaves = SHA-256 of the empty string
#
# Proofs are RFC 9162 section 2.1.3 (inclusion) and 2.1.4 (consistency) audit paths; the
# verification algorithms below are those sections' step by step. Tested against the RFC 6962
# reference vectors of the Certificate Transparency project and against the pymerkle package.

EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(entry_hash_hex: str) -> bytes:
    """The tree leaf of an entry: SHA-256(0x00 || the 32 bytes of its hex ``hash``)."""
    return hashlib.sha256(b"\x00" + bytes.fromhex(entry_hash_hex)).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """An interior node: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(width: int) -> int:
    """RFC 6962's k: the largest power of two smaller than ``width`` (``width`` > 1)."""
    return 1 << ((width - 1).bit_length() - 1)


class CompactRange:
    """The roots of the perfect subtrees that make up a tree of ``size`` leaves, largest first:
    enough to compute the tree's root and to append, in O(log n) memory (the "compact range"
    of transparency logs; RFC 9162 section 2.1.1's MTH, computed incrementally).
    """

    __slots__ = ("hashes", "size")

    def __init__(self, size: int = 0, hashes: Iterable[bytes] = ()) -> None:
        self.size = size
        self.hashes = list(hashes)
        if len(self.hashes) != bin(size).count("1"):
            raise ValueError(f"a tree of {size} leaves has {bin(size).count('1')} subtree roots")

    def append(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        """Add one leaf hash; return the perfect subtrees it completed, as (level, index, hash)
        (level 1 = two leaves; index counts subtrees of that level from 0)."""
        completed = []
        node, size, level = leaf, self.size, 0
        new_size = size + 1
        while size & 1:
            node = node_hash(self.hashes.pop(), node)
            size >>= 1
            level += 1
            completed.append((level, (new_size >> level) - 1, node))
        self.hashes.append(node)
        self.size = new_size
        return completed

    def root(self) -> bytes:
        """The Merkle tree hash of the leaves so far."""
        if not self.hashes:
            return EMPTY_ROOT
        hashes = self.hashes
        root = hashes[-1]
        for left in reversed(hashes[:-1]):
            root = node_hash(left, root)
        return root


def merkle_root(leaves: Iterable[bytes]) -> bytes:
    """MTH of a sequence of leaf hashes (RFC 9162 section 2.1.1).

    Level by level, an odd last node carried up unchanged: the same tree as the RFC's split at
    the largest power of two below n (its left subtrees are perfect, so only the rightmost node
    of a level can lack a sibling), in one pass of list comprehensions (a proof hashes up to
    two 256-leaf blocks per request)."""
    level = list(leaves)
    if not level:
        return EMPTY_ROOT
    sha256 = hashlib.sha256
    while len(level) > 1:
        carried = [level[-1]] if len(level) & 1 else []
        level = [
            sha256(b"\x01" + left + right).digest()
            for left, right in zip(level[::2], level[1::2], strict=False)
        ] + carried
    return level[0]


def subtree_ranges(start: int, end: int) -> list[tuple[int, int]]:
    """The perfect, aligned subtrees ``(level, index)`` whose fold is MTH(D[start:end]), largest
    first, for a range that RFC 6962's recursion produces (start a multiple of the largest
    power of two not above end - start)."""
    nodes = []
    while start < end:
        width = end - start
        level = width.bit_length() - 1
        nodes.append((level, start >> level))
        start += 1 << level
    return nodes


def fold_subtrees(hashes: list[bytes]) -> bytes:
    """Fold perfect-subtree roots (largest first) into their MTH, right to left."""
    root = hashes[-1]
    for left in reversed(hashes[:-1]):
        root = node_hash(left, root)
    return root


def inclusion_ranges(index: int, size: int) -> list[tuple[int, int]]:
    """The leaf ranges [start, end) whose MTHs make up the inclusion proof of leaf ``index``
    in a tree of ``size`` leaves, in proof order (RFC 9162 section 2.1.3.1, PATH)."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size} leaves")
    ranges = []
    start, end = 0, size
    while end - start > 1:
        k = _split(end - start)
        if index < start + k:
            ranges.append((start + k, end))
            end = start + k
        else:
            ranges.append((start, start + k))
            start += k
    ranges.reverse()
    return ranges


def consistency_ranges(first: int, second: int) -> list[tuple[int, int]]:
    """The leaf ranges whose MTHs make up the consistency proof from a tree of ``first`` leaves
    to one of ``second``, in proof order (RFC 9162 section 2.1.4.1, SUBPROOF)."""
    if not 0 <= first <= second:
        raise ValueError(f"no consistency proof from {first} to {second} leaves")
    if first in (0, second):
        return []
    ranges = []
    start, end, m, complete = 0, second, first, True
    while True:
        width = end - start
        if m == width:
            if not complete:
                ranges.append((start, end))
            break
        k = _split(width)
        if m <= k:
            ranges.append((start + k, end))
            end = start + k
        else:
            ranges.append((start, start + k))
            start += k
            m -= k
            complete = False
    ranges.reverse()
    return ranges


def _proof_sides(fn: int, sn: int, length: int) -> list[bool] | None:
    """The walk up the tree both proofs' verifiers share (RFC 9162 sections 2.1.3.2 and
    2.1.4.2): for each of a proof's ``length`` hashes, whether it stands on the left of the
    node it is hashed with, from the node numbers ``fn`` (the first node's) and ``sn`` (the
    last's). None when the proof is too long or too short for those positions."""
    sides = []
    for _ in range(length):
        if sn == 0:
            return None
        left = bool(fn & 1) or fn == sn
        if left and not fn & 1:
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        sides.append(left)
        fn >>= 1
        sn >>= 1
    return sides if sn == 0 else None


def root_from_inclusion(leaf: bytes, index: int, size: int, proof: list[bytes]) -> bytes | None:
    """The root an inclusion proof leads to from leaf hash ``leaf`` at ``index`` in a tree of
    ``size`` leaves, or None when the proof has the wrong length for that position (RFC 9162
    section 2.1.3.2, steps 1-4)."""
    if not 0 <= index < size:
        return None
    sides = _proof_sides(index, size - 1, len(proof))
    if sides is None:
        return None
    r = leaf
    for p, left in zip(proof, sides, strict=True):
        r = node_hash(p, r) if left else node_hash(r, p)
    return r


def verify_inclusion(leaf: bytes, index: int, size: int, proof: list[bytes], root: bytes) -> bool:
    """Whether ``proof`` shows leaf hash ``leaf`` at ``index`` in the tree of ``size`` leaves
    whose root is ``root`` (RFC 9162 section 2.1.3.2). O(log size) hashes."""
    return root_from_inclusion(leaf, index, size, proof) == root


def verify_consistency(
    first: int, second: int, proof: list[bytes], first_root: bytes, second_root: bytes
) -> bool:
    """Whether ``proof`` shows the tree of ``first`` leaves with root ``first_root`` to be a
    prefix of the tree of ``second`` leaves with root ``second_root`` (RFC 9162 section
    2.1.4.2; a tree of 0 leaves is a prefix of every tree, with an empty proof)."""
    if not 0 <= first <= second:
        return False
    if first == 0:
        return not proof and (second > 0 or second_root == EMPTY_ROOT)
    if first == second:
        return not proof and first_root == second_root
    if not proof:
        return False
    path = list(proof)
    if first & (first - 1) == 0:  # an exact power of two: the old root is the first node
        path.insert(0, first_root)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    sides = _proof_sides(fn, sn, len(path) - 1)
    if sides is None:
        return False
    fr = sr = path[0]
    for c, left in zip(path[1:], sides, strict=True):
        if left:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
        else:
            sr = node_hash(sr, c)
    return fr == first_root and sr == second_root


# -- checkpoints as C2SP signed notes ----------------------------------------------------------
#
# A checkpoint (c2sp.org/tlog-checkpoint) is a signed note (c2sp.org/signed-note):
#
#     <origin>\n<tree size>\n<base64 root hash>\n\n— <key name> <base64(key id || signature)>\n
#
# The origin is one per protocol log (``<LOG_ORIGIN>/<protocol code>``); the log's key name is
# the origin; the key id is SHA-256(key name || 0x0A || 0x01 || 32-byte Ed25519 key)[:4]; the
# Ed25519 signature covers the note text (the three lines with their newlines). Witnesses add
# cosignatures (c2sp.org/tlog-cosignature, type 0x04): key id SHA-256(name || 0x0A || 0x04 ||
# key)[:4], signature = 8-byte big-endian timestamp || Ed25519 signature over
# "cosignature/v1\ntime <timestamp>\n" || note text.

NOTE_CHECKPOINT_TYPE = "c2sp/tlog-checkpoint"
SIGNATURE_ED25519 = 0x01
SIGNATURE_COSIGNATURE_V1 = 0x04
_DASH = "\u2014"


def note_key_id(name: str, signature_type: int, public_raw: bytes) -> bytes:
    """The 4-byte key id of a signed-note key (c2sp.org/signed-note, "Signatures")."""
    return hashlib.sha256(name.encode() + b"\n" + bytes([signature_type]) + public_raw).digest()[:4]


def checkpoint_body(origin: str, size: int, root: bytes) -> str:
    """The note text of a checkpoint: origin, tree size, base64 root, each line ended."""

    return f"{origin}\n{size}\n{base64.b64encode(root).decode()}\n"


@dataclass
class Note:
    """A parsed signed note: its text and its signature lines (name, 4-byte key id, bytes)."""

    text: str
    signatures: list[tuple[str, bytes, bytes]]

    def checkpoint(self) -> tuple[str, int, bytes]:
        """(origin, tree size, root hash) of a checkpoint note; ValueError for another note."""

        lines = self.text.split("\n")
        if len(lines) < 4 or lines[-1] != "" or any(not line for line in lines[:-1]):
            raise ValueError("a checkpoint has an origin, a size and a root hash line")
        origin, size_text, root_text = lines[0], lines[1], lines[2]
        if not size_text.isdigit() or (size_text != "0" and size_text.startswith("0")):
            raise ValueError(f"the tree size {size_text!r} is not a decimal number")
        try:
            root = base64.b64decode(root_text, validate=True)
        except (binascii.Error, ValueError) as error:
            raise ValueError(f"the root hash is not base64 ({error})") from error
        if len(root) != 32:
            raise ValueError("the root hash is not 32 bytes")
        return origin, int(size_text), root

    def signed_by(self, name: str, signature_type: int, public_raw: bytes) -> list[bytes]:
        """The signatures whose name and key id match this key (a note may hold several)."""
        wanted = note_key_id(name, signature_type, public_raw)
        return [sig for n, kid, sig in self.signatures if n == name and kid == wanted]


def parse_note(text: str) -> Note:
    """Split a signed note into its text and signature lines (c2sp.org/signed-note, "Format").
    ValueError when it is not a signed note."""

    if any(ord(c) < 0x20 and c != "\n" for c in text):
        raise ValueError("a note holds no control characters other than newline")
    at = text.rfind("\n\n")
    if at < 0 or not text.endswith("\n"):
        raise ValueError("a note is its text, a blank line and signature lines")
    body, signature_block = text[: at + 1], text[at + 2 :]
    signatures = []
    for line in signature_block[:-1].split("\n"):
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != _DASH or not parts[1]:
            raise ValueError(f"not a signature line: {line[:80]!r}")
        try:
            raw = base64.b64decode(parts[2], validate=True)
        except (binascii.Error, ValueError) as error:
            raise ValueError(f"a signature is not base64 ({error})") from error
        if len(raw) < 5:
            raise ValueError("a signature is shorter than its key id")
        signatures.append((parts[1], raw[:4], raw[4:]))
    if not signatures:
        raise ValueError("a note has at least one signature")
    return Note(body, signatures)


def signature_line(name: str, key_id: bytes, signature: bytes) -> str:
    """One note signature line: em dash, space, key name, space, base64(key id || signature)."""

    return f"{_DASH} {name} {base64.b64encode(key_id + signature).decode()}\n"


def _ed25519_verify(public_raw: bytes, signature: bytes, message: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(public_raw).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def note_signature_valid(note: Note, name: str, public_raw: bytes) -> bool | None:
    """Whether the note carries a valid Ed25519 signature (type 0x01) by this key under this
    name: True, False (a matching signature that does not verify), None (none matches).
    Needs the `cryptography` package (ImportError without it)."""
    signatures = note.signed_by(name, SIGNATURE_ED25519, public_raw)
    if not signatures:
        return None
    message = note.text.encode()
    return all(_ed25519_verify(public_raw, sig, message) for sig in signatures)


def cosignature_message(body: str, timestamp: int) -> bytes:
    """What an Ed25519 cosignature signs (c2sp.org/tlog-cosignature, "Ed25519 signed message")."""
    return f"cosignature/v1\ntime {timestamp}\n{body}".encode()


def cosignature_valid(note: Note, name: str, public_raw: bytes) -> bool | None:
    """Whether the note carries a valid cosignature (type 0x04) by this witness key: True,
    False (a matching one does not verify), None (none matches)."""
    signatures = note.signed_by(name, SIGNATURE_COSIGNATURE_V1, public_raw)
    if not signatures:
        return None
    for sig in signatures:
        if len(sig) != 8 + 64:
            return False
        timestamp = int.from_bytes(sig[:8], "big")
        if timestamp == 0 or not _ed25519_verify(
            public_raw, sig[8:], cosignature_message(note.text, timestamp)
        ):
            return False
    return True


@dataclass(frozen=True)
class VerifierKey:
    """A key a verifier trusts: a name, a signature type and the 32 raw Ed25519 bytes. ``name``
    None: the log key, whose name is each checkpoint's origin."""

    public_raw: bytes
    name: str | None = None
    signature_type: int = SIGNATURE_ED25519


def parse_verifier_key(text: str, *, default_type: int = SIGNATURE_ED25519) -> VerifierKey:
    """A key from a vkey (``name+hex id+base64(type || key)``, c2sp.org/signed-note "Verifier
    keys"), or from base64 of the 32 raw Ed25519 bytes. ValueError when it is neither."""

    text = text.strip()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) == 32:
        return VerifierKey(raw, None, default_type)
    try:
        # A vkey: no "+" in the name, the id is 8 hex digits, the base64 may hold "+".
        name, key_id_hex, material = text.split("+", 2)
        raw = base64.b64decode(material, validate=True)
        if len(raw) != 33 or raw[0] not in (SIGNATURE_ED25519, SIGNATURE_COSIGNATURE_V1):
            raise ValueError("only Ed25519 (0x01) and cosignature (0x04) keys are known")
        if note_key_id(name, raw[0], raw[1:]).hex() != key_id_hex.lower():
            raise ValueError("the key id does not match the key")
    except (binascii.Error, ValueError) as error:
        raise ValueError(
            f"not a verifier key or base64 Ed25519 key: {text[:60]!r} ({error})"
        ) from error
    return VerifierKey(raw[1:], name, raw[0])


def vkey(name: str, signature_type: int, public_raw: bytes) -> str:
    """The vkey text of a key (c2sp.org/signed-note, "Verifier keys")."""

    key_id = note_key_id(name, signature_type, public_raw).hex()
    return f"{name}+{key_id}+{base64.b64encode(bytes([signature_type]) + public_raw).decode()}"


def checkpoint_note_verify(
    text: str, log_keys: Iterable[VerifierKey], *, origin: str | None = None
) -> tuple[Note, tuple[str, int, bytes]]:
    """Parse a checkpoint note and check its log signature against the pinned log keys.

    Returns (note, (origin, size, root)). Raises ValueError naming what is wrong: not a note,
    not a checkpoint, another origin, no signature by a pinned key, or one that does not
    verify. The log's key name is the origin (a key pinned with a name must match it).
    """
    note = parse_note(text)
    found_origin, size, root = note.checkpoint()
    if origin is not None and found_origin != origin:
        raise ValueError(f"it is a checkpoint of {found_origin!r}, not of {origin!r}")
    verdicts = [
        note_signature_valid(note, key.name or found_origin, key.public_raw)
        for key in log_keys
        if key.name in (None, found_origin)
    ]
    if False in verdicts:
        raise ValueError("its signature by a pinned log key does not verify: it was forged")
    if True not in verdicts:
        raise ValueError("it is not signed by a pinned log key")
    return note, (found_origin, size, root)


def cosigners(note: Note, witness_keys: Iterable[VerifierKey]) -> list[str]:
    """The names of the witness keys with a valid cosignature on the note (forged ones left
    out: a cosignature that does not verify counts for nothing)."""
    return sorted(
        {
            key.name
            for key in witness_keys
            if key.name is not None and cosignature_valid(note, key.name, key.public_raw)
        }
    )


def verify_chain(  # noqa: PLR0912, PLR0913, PLR0915 (one pass, keyword-only options; split is debt)
    entries: Iterable[Mapping[str, Any]],
    *,
    protocol: str | None = None,
    expect: Mapping[int, str] | None = None,
    checkpoints: Iterable[Mapping[str, Any]] = (),
    log_keys: Iterable[VerifierKey] | None = None,
    after: tuple[int, str, CompactRange] | None = None,
    nodes_out: list[tuple[int, int, bytes]] | None = None,
    nodes_min_level: int = 1,
    allow_withheld: bool = False,
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

    The Merkle tree (RFC 6962) over the entries is computed in the same pass: a C2SP checkpoint
    (``{"type": NOTE_CHECKPOINT_TYPE, "note": <signed note>}``) is an anchor on the tree's root at
    its size, so a log whose first N entries do not give the root signed for N is broken there.
    With ``log_keys`` (the pinned log keys), each C2SP checkpoint's signature is checked as it
    is taken: one that is not signed by a pinned key, or forged, is a break.

    ``after`` = (seq, hash, tree) continues a chain already verified through entry ``seq``
    (whose hash is ``hash`` and whose Merkle tree's compact range is ``tree``, of ``seq``
    leaves): ``entries`` then start at entry seq + 1 (what "verifying from the last
    checkpoint" reads). ``nodes_out`` collects the perfect subtrees that the entries complete,
    as (level, index, root), from ``nodes_min_level`` up.

    With ``allow_withheld`` an entry may be *withheld* (``{"withheld": true, "protocol", "seq",
    "prev_hash", "hash"}``: a public registry serves the entries that concern no public version
    this way): its content cannot be checked, but its place in the chain and in the Merkle tree
    can, so a signed checkpoint still binds it, and every entry served whole is still proven
    included. ``report.withheld`` counts them. Without it a withheld entry is a break.

    Entries are read once and not kept, so memory stays flat over millions of entries.
    """
    report = ChainReport(protocol=protocol)
    expect = dict(expect or {})
    # Where each anchor came from, for the reason a mismatch gives.
    sources: dict[int, str] = {}
    checkpoint_codes: set[str] = set()
    # Tree anchors: size -> (root, where it came from).
    roots: dict[int, tuple[bytes, str]] = {}
    keys = None if log_keys is None else list(log_keys)

    def add_note(checkpoint: Any) -> str | None:
        text = checkpoint.get("note")
        if not isinstance(text, str):
            return "a C2SP checkpoint lacks its note"
        try:
            if keys is not None:
                _note, (origin, size, root) = checkpoint_note_verify(text, keys)
            else:
                origin, size, root = parse_note(text).checkpoint()
        except ValueError as error:
            return f"a checkpoint cannot be used: {error}"
        source = f"the checkpoint of {size} entries"
        if size in roots and roots[size][0] != root:
            return f"two checkpoints disagree about the tree of {size} entries (a fork)"
        roots[size] = (root, source)
        code = checkpoint.get("protocol")
        if isinstance(code, str):
            checkpoint_codes.add(code)
        elif "/" in origin:
            checkpoint_codes.add(origin.rsplit("/", 1)[1])
        report.checkpoints.append({**checkpoint, "origin": origin, "size": size})
        return None

    def add_checkpoint(checkpoint: Any) -> str | None:
        if isinstance(checkpoint, Mapping) and checkpoint.get("type") == NOTE_CHECKPOINT_TYPE:
            return add_note(checkpoint)
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
    last_good: Mapping[str, Any] | None = None  # the last intact entry, for the report
    sha256 = hashlib.sha256
    fromhex = bytes.fromhex
    # The Merkle tree's compact range (see CompactRange), kept inline for speed.
    stack: list[bytes] = []
    leaves = 0
    if after is not None:
        after_seq, previous_hash, start_tree = after
        if start_tree.size != after_seq:
            raise ValueError("the tree to continue has another size than the chain")
        stack, leaves, expected_seq = list(start_tree.hashes), after_seq, after_seq + 1
        if after_seq:
            last_good = {"seq": after_seq, "recorded_at": None, "hash": previous_hash}
    collect = nodes_out is not None

    def finish(broken_at: int | None = None, reason: str = "") -> ChainReport:
        report.protocol = chain_protocol
        if last_good is not None:
            report.entries = report.verified_through = last_good["seq"]
            report.verified_through_at = last_good.get("recorded_at")
            report.head_hash = last_good["hash"]
        report.tree_size = leaves
        report.root_hash = base64.b64encode(
            CompactRange(leaves, stack).root() if leaves else EMPTY_ROOT
        ).decode()
        report.broken_at, report.reason = broken_at, reason
        return report

    for entry in entries:
        if type(entry) is dict and entry.get("type") in (CHECKPOINT_TYPE, NOTE_CHECKPOINT_TYPE):
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
        if entry.get("withheld") is True:
            if not allow_withheld:
                return finish(seq, f"entry {seq} is withheld: its content cannot be checked")
            report.withheld += 1
            recomputed = stored_hash
        else:
            recomputed = None
        try:
            if recomputed is None:
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
        try:
            node = sha256(b"\x00" + fromhex(stored_hash)).digest()
        except (TypeError, ValueError):
            return finish(seq, f"entry {seq} has a hash that is not 64 hex digits")
        width = leaves
        if collect:
            level = 0
            while width & 1:
                node = sha256(b"\x01" + stack.pop() + node).digest()
                width >>= 1
                level += 1
                if level >= nodes_min_level:
                    nodes_out.append((level, ((leaves + 1) >> level) - 1, node))  # type: ignore[union-attr]
        else:
            while width & 1:
                node = sha256(b"\x01" + stack.pop() + node).digest()
                width >>= 1
        stack.append(node)
        leaves += 1
        if roots and leaves in roots:
            root, source = roots[leaves]
            if CompactRange(leaves, stack).root() != root:
                return finish(
                    seq,
                    f"entries 1..{seq} do not give the tree root that {source} signs: the log "
                    "was rewritten after the checkpoint",
                )
            report.anchors_checked.append(seq)
        last_good = entry
        previous_hash = stored_hash
        expected_seq = seq + 1

    beyond = sorted(size for size in roots if size > leaves)
    if beyond:
        ends = f"the log ends at entry {expected_seq - 1}" if expected_seq > 1 else "it is empty"
        return finish(beyond[0], f"{roots[beyond[0]][1]} covers entry {beyond[0]}, but {ends}")
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
        if not sep or not (seq.isascii() and seq.isdigit()) or len(seq) > 19 or len(digest) != 64:
            raise SystemExit(f"--expect wants SEQ=HASH (64 hex digits), not {value!r}")
        anchors[int(seq)] = digest.lower()
    return anchors


def main(argv: list[str] | None = None) -> int:  # noqa: PLR0912, PLR0915 (a CLI)
    import argparse

    parser = argparse.ArgumentParser(
        description="Verify an exported Preregistry deviation log (JSONL) offline, or one "
        "entry's inclusion proof. A pinned log key (--public-key) is required."
    )
    parser.add_argument(
        "export", nargs="?", help="the .jsonl file exported from the log page or API"
    )
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
        help="a checkpoint saved earlier (a signed note, or an older JSON checkpoint); the log "
        "must extend it (repeatable)",
    )
    parser.add_argument(
        "--public-key",
        "--log-key",
        action="append",
        default=None,
        metavar="KEY",
        help="the log's signing key you trust (required): base64 of the raw Ed25519 key, a vkey, "
        "or a file holding either or the JSON of /logs/signing-key (repeatable)",
    )
    parser.add_argument(
        "--witness-dir",
        action="append",
        default=[],
        metavar="DIR",
        help="a witness directory: every checkpoint note (*.note) in it is an anchor",
    )
    parser.add_argument(
        "--witness-key",
        action="append",
        default=[],
        metavar="VKEY",
        help="a witness's verifier key (name+id+key, type 0x04) you trust (repeatable)",
    )
    parser.add_argument(
        "--witness-threshold",
        type=int,
        default=None,
        metavar="K",
        help="how many of the witness keys must have cosigned a checkpoint the log extends "
        "(default: 1 when witness keys are given)",
    )
    parser.add_argument(
        "--inclusion",
        metavar="FILE",
        help="an inclusion proof saved from the API: check that its entry is in the signed log "
        "(O(log n)), instead of verifying a whole export",
    )
    args = parser.parse_args(argv)
    anchors = _parse_expect(args.expect)
    if not args.public_key:
        print(
            "a pinned log key is required: pass --public-key with the key you trust (from "
            "/logs/signing-key, saved from somewhere you trust); the key a checkpoint names "
            "proves nothing about who signed it",
            file=sys.stderr,
        )
        return 2
    try:
        import cryptography  # noqa: F401
    except ImportError:
        print(
            "checking signatures needs the `cryptography` package: pip install cryptography",
            file=sys.stderr,
        )
        return 2
    try:
        trusted = read_public_keys(args.public_key)
        log_keys = [parse_verifier_key(key) for key in trusted]
        witness_keys = [
            parse_verifier_key(key, default_type=SIGNATURE_COSIGNATURE_V1)
            for key in args.witness_key
        ]
        if any(key.name is None for key in witness_keys):
            raise ValueError("a witness key is given as a vkey (name+id+key), which names it")
    except (OSError, ValueError, KeyError) as error:
        print(f"a key cannot be read: {error}", file=sys.stderr)
        return 2
    threshold = args.witness_threshold
    if threshold is None:
        threshold = 1 if witness_keys else 0
    if threshold > len(witness_keys):
        print(f"a threshold of {threshold} needs {threshold} witness keys", file=sys.stderr)
        return 2
    if args.inclusion:
        return _main_inclusion(args.inclusion, log_keys, witness_keys, threshold)
    if not args.export:
        parser.error("give the export to verify, or --inclusion FILE")
    try:
        saved = [read_checkpoint_file(path) for path in args.checkpoint]
        entries = iter(read_jsonl(args.export))
        first = next(entries, None)
        if isinstance(first, _BadLine):
            raise ValueError(
                "not a JSONL export of the log (its first line is not JSON); download the "
                "log's JSONL export (the CSV export is for reading only)"
            )
        head = [] if first is None else [first]
        while head and isinstance(head[-1], dict) and "type" in head[-1]:
            following = next(entries, None)
            if following is None:
                break
            head.append(following)
        code = next((e.get("protocol") for e in head if isinstance(e, dict)), None)
        for folder in args.witness_dir:
            saved.extend(_read_witness_dir(folder, code))
        lines = itertools.chain(head, entries)
        report = verify_chain(lines, expect=anchors, checkpoints=saved, log_keys=log_keys)
    except (OSError, ValueError) as error:
        print(f"{args.export}: cannot be read: {error}", file=sys.stderr)
        return 2
    print(f"{report.protocol or args.export}: {report.summary()}")
    if report.tree_size:
        print(f"  Merkle tree of {report.tree_size} entries, root {report.root_hash}")
    signed_ok, signed_sizes, witnessed = True, [], 0
    for checkpoint in report.checkpoints:
        if checkpoint.get("type") == NOTE_CHECKPOINT_TYPE:
            note = parse_note(checkpoint["note"])
            names = cosigners(note, witness_keys)
            signed_sizes.append(checkpoint["size"])
            if len(names) >= threshold > 0:
                witnessed = max(witnessed, checkpoint["size"])
            cosigned = f"; cosigned by {', '.join(names)}" if names else ""
            print(
                f"  checkpoint of {checkpoint['size']} entries ({checkpoint['origin']}): signed "
                f"by the pinned log key{cosigned}"
            )
            continue
        valid, why = checkpoint_signature(checkpoint, trusted)
        signed_ok = signed_ok and valid is True
        if valid is True:
            signed_sizes.append(checkpoint["seq"])
        print(f"  checkpoint at entry {checkpoint['seq']} ({checkpoint['signed_at']}): {why}")
    if not report.ok or not signed_ok:
        return 1
    if not signed_sizes and report.entries:
        print(
            "  no checkpoint signed by the pinned key covers this log: the chain is whole, but "
            "nothing shows it is the log the server signed (export it again once a checkpoint "
            "is signed)"
        )
        return 1
    if threshold:
        if not witnessed:
            print(
                f"  no checkpoint the log extends carries cosignatures of {threshold} of the "
                f"{len(witness_keys)} witness keys"
            )
            return 1
        print(f"  witnessed through entry {witnessed} by at least {threshold} witness(es)")
    return 0


def _main_inclusion(
    path: str, log_keys: list[VerifierKey], witness_keys: list[VerifierKey], threshold: int
) -> int:
    """Check an inclusion proof bundle (as served by the API) against the pinned keys."""
    try:
        bundle = _read_json(path)
        entry, seq = bundle["entry"], bundle["seq"]
        size = bundle["tree_size"]
        hashes = [base64.b64decode(h, validate=True) for h in bundle["inclusion_path"]]
        text = bundle["checkpoint"]
        if not isinstance(text, str):
            raise ValueError("the proof carries no signed checkpoint to check it against")
        note, (origin, signed_size, root) = checkpoint_note_verify(text, log_keys)
    except (OSError, KeyError, TypeError, ValueError) as error:
        print(f"{path}: cannot be checked: {error}", file=sys.stderr)
        return 2
    label = f"{entry.get('protocol', origin) if isinstance(entry, dict) else origin}"
    try:
        recomputed = entry_hash(entry)
    except (KeyError, TypeError, ValueError) as error:
        print(f"{label}: entry {seq} cannot be hashed: {error}")
        return 1
    if recomputed != entry.get("hash") or entry.get("seq") != seq:
        print(f"{label}: entry {seq} does not match its hash (recomputed {recomputed})")
        return 1
    if signed_size != size:
        print(f"{label}: the proof is for {size} entries, the checkpoint signs {signed_size}")
        return 1
    if not verify_inclusion(leaf_hash(entry["hash"]), seq - 1, size, hashes, root):
        print(f"{label}: entry {seq} is NOT in the log of {size} entries the checkpoint signs")
        return 1
    names = cosigners(note, witness_keys)
    print(
        f"{label}: entry {seq} ({entry['hash']}) is in the log of {size} entries signed by the "
        f"pinned key ({len(hashes)} hashes checked)"
        + (f"; cosigned by {', '.join(names)}" if names else "")
    )
    if threshold and len(names) < threshold:
        print(f"  the checkpoint carries {len(names)} of the {threshold} witness cosignatures")
        return 1
    return 0


def read_checkpoint_file(path: str) -> dict[str, Any]:
    """A saved checkpoint: a C2SP signed note, or an older JSON checkpoint."""
    with open(path, "rb") as file:
        raw = file.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path} is not UTF-8 ({error})") from error
    if text.lstrip().startswith("{"):
        document = _read_json(path)
        if isinstance(document, dict) and "note" in document:
            return {**document, "type": NOTE_CHECKPOINT_TYPE}
        if not isinstance(document, dict):
            raise ValueError(f"{path} is not a checkpoint")
        return document
    return {"type": NOTE_CHECKPOINT_TYPE, "note": text, "source": path}


def _read_witness_dir(folder: str, code: str | None) -> list[dict[str, Any]]:
    """The checkpoint notes (``*.note``) of protocol ``code`` in a witness directory (one
    folder may hold the checkpoints of many logs: a note belongs to ``code`` when its origin
    ends with ``/<code>``)."""
    import os

    found = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".note"):
            continue
        checkpoint = read_checkpoint_file(os.path.join(folder, name))
        origin = parse_note(checkpoint["note"]).checkpoint()[0]
        if code is None or origin.rsplit("/", 1)[-1] == code:
            found.append(checkpoint)
    return found


def _read_json(path: str) -> Any:
    with open(path, "rb") as file:
        try:
            return json.loads(file.read().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"{path} is not a JSON checkpoint ({error})") from error


def read_public_keys(values: list[str]) -> list[str]:
    """The base64 Ed25519 keys given as values or files: a key itself, or the JSON of
    ``/logs/signing-key`` (its ``public_key`` and ``previous_public_keys``)."""
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

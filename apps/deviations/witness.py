"""A witness for the deviation logs, after C2SP tlog-witness (c2sp.org/tlog-witness).

It keeps, per log origin, the latest checkpoint it cosigned, and cosigns a new one only when a
consistency proof shows the new tree extends it: a log that was rewritten (a fork) is refused,
saying so, and the refused checkpoint is kept as evidence. Cosignatures are C2SP
tlog-cosignature Ed25519 (type 0x04) signatures. ``manage.py log_witness`` serves it over HTTP;
this module is the protocol alone (no Django), so it can be tested and run anywhere.

    POST <prefix>/add-checkpoint     body: "old N\\n", proof lines, "\\n", the checkpoint note
    GET  <prefix>/<sha256(origin) hex>/checkpoint

Answers, as the spec says: 200 with the cosignature line; 400 (malformed, old size above the
checkpoint's); 403 (not signed by the log's key, or forged); 404 (unknown origin); 409 with
``<size>\\n`` (``text/x.tlog.size``) when the old size is not the size it holds; 422 when the
consistency proof does not verify, or a checkpoint of the size it holds has another root
(a fork). Every answer but 200 and 409 says why in its body.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from apps.core.inputs import whole_number
from apps.deviations import chain

MAX_BODY = 64 * 1024
MAX_PROOF_LINES = 63
SIZE_CONTENT_TYPE = "text/x.tlog.size"


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"


def _text(status: int, message: str) -> Answer:
    return Answer(status, (message + "\n").encode())


class Witness:
    """One witness: a name, an Ed25519 key, the log keys it trusts and a state folder.

    ``log_keys`` are the logs' Ed25519 public keys (raw); a log is known when its origin starts
    with ``origin_prefix`` (one operator's logs, one per protocol), and its key name is its
    origin. The latest cosigned checkpoint of each origin is a file in ``state_dir``; checking
    the old size and storing the new checkpoint happen under one lock, so two requests cannot
    roll the state back (the race the spec describes).
    """

    def __init__(
        self,
        *,
        name: str,
        private_key: Ed25519PrivateKey,
        state_dir: Path,
        log_keys: list[bytes],
        origin_prefix: str,
    ) -> None:
        from cryptography.hazmat.primitives import serialization

        self.name = name
        self.private_key = private_key
        self.public_raw = private_key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self.state_dir = Path(state_dir)
        self.log_keys = [chain.VerifierKey(raw) for raw in log_keys]
        self.origin_prefix = origin_prefix
        self.lock = threading.Lock()
        self.state_dir.mkdir(parents=True, exist_ok=True)

    @property
    def vkey(self) -> str:
        """The witness's verifier key (give it to auditors: ``--witness-key``)."""
        return chain.vkey(self.name, chain.SIGNATURE_COSIGNATURE_V1, self.public_raw)

    # -- state ----------------------------------------------------------------------------

    def _path(self, origin: str) -> Path:
        return self.state_dir / f"{hashlib.sha256(origin.encode()).hexdigest()}.json"

    def latest(self, origin: str) -> dict | None:
        """{"size", "root" (base64), "note" (the cosigned checkpoint)} or None."""
        try:
            return json.loads(self._path(origin).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def _store(self, origin: str, size: int, root: bytes, note: str) -> None:
        path = self._path(origin)
        temporary = path.with_suffix(".tmp")
        document = {"origin": origin, "size": size, "root": base64.b64encode(root).decode()}
        with open(temporary, "w", encoding="utf-8") as file:
            json.dump({**document, "note": note}, file, sort_keys=True)
            file.flush()
            os.fsync(file.fileno())
        temporary.replace(path)

    def _keep_refused(self, origin: str, body: bytes, why: str) -> None:
        """A refused, validly signed checkpoint is evidence of a misbehaving log: kept."""
        folder = self.state_dir / "refused"
        folder.mkdir(exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        digest = hashlib.sha256(body).hexdigest()[:16]
        (folder / f"{stamp}-{digest}.txt").write_bytes(f"# {origin}: {why}\n".encode() + body)

    # -- the protocol ---------------------------------------------------------------------

    def checkpoint_for(self, origin_hash: str) -> Answer:
        """GET <prefix>/<origin hash>/checkpoint: the latest cosigned checkpoint, or 404."""
        for path in self.state_dir.glob("*.json"):
            if path.stem == origin_hash:
                document = json.loads(path.read_text(encoding="utf-8"))
                return Answer(200, document["note"].encode())
        return _text(404, "this witness has cosigned no checkpoint of that log")

    def add_checkpoint(self, body: bytes) -> Answer:
        """POST <prefix>/add-checkpoint (c2sp.org/tlog-witness)."""
        parsed = _parse_request(body)
        if isinstance(parsed, Answer):
            return parsed
        old_size, proof, note_text = parsed
        try:
            note = chain.parse_note(note_text)
            origin, size, root = note.checkpoint()
        except ValueError as error:
            return _text(400, f"not a checkpoint: {error}")
        if not origin.startswith(self.origin_prefix):
            return _text(404, f"this witness does not know the log {origin}")
        verdicts = [chain.note_signature_valid(note, origin, k.public_raw) for k in self.log_keys]
        if False in verdicts:
            return _text(403, "the log's signature does not verify: the checkpoint is forged")
        if True not in verdicts:
            return _text(403, "the checkpoint is not signed by a key this witness trusts")
        if old_size > size:
            return _text(400, f"the old size {old_size} is above the checkpoint's {size}")
        if size == 0 and root != chain.EMPTY_ROOT:
            return _text(422, "a checkpoint of size 0 has the empty tree's root")
        with self.lock:
            latest = self.latest(origin)
            held = int(latest["size"]) if latest else 0
            if old_size != held:
                return Answer(409, f"{held}\n".encode(), SIZE_CONTENT_TYPE)
            held_root = base64.b64decode(latest["root"]) if latest else chain.EMPTY_ROOT
            if old_size == 0 and proof:
                return _text(422, "from size 0 the consistency proof is empty")
            if old_size == size and root != held_root:
                why = (
                    f"a fork: this witness cosigned another tree of {size} entries of {origin}; "
                    "the log was rewritten"
                )
                self._keep_refused(origin, body, why)
                return _text(422, why)
            if old_size and not chain.verify_consistency(old_size, size, proof, held_root, root):
                why = (
                    f"a fork: the tree of {size} entries does not extend the {old_size} entries "
                    f"this witness cosigned for {origin} (the consistency proof does not "
                    "verify); the log was rewritten"
                )
                self._keep_refused(origin, body, why)
                return _text(422, why)
            cosignature = self.cosign(note.text)
            signed = (
                note.text
                + "\n"
                + "".join(
                    chain.signature_line(name, key_id, signature)
                    for name, key_id, signature in note.signatures
                )
            )
            self._store(origin, size, root, signed + cosignature)
        return Answer(200, cosignature.encode())

    def cosign(self, body: str, timestamp: int | None = None) -> str:
        """A tlog-cosignature/v1 (Ed25519, type 0x04) signature line over a checkpoint body."""
        stamp = int(time.time()) if timestamp is None else timestamp
        signature = self.private_key.sign(chain.cosignature_message(body, stamp))
        key_id = chain.note_key_id(self.name, chain.SIGNATURE_COSIGNATURE_V1, self.public_raw)
        return chain.signature_line(self.name, key_id, stamp.to_bytes(8, "big") + signature)


def _parse_request(body: bytes) -> Answer | tuple[int, list[bytes], str]:
    """(old size, proof hashes, checkpoint text) of an add-checkpoint body, or the 400."""
    if len(body) > MAX_BODY:
        return _text(400, f"the request is over {MAX_BODY} bytes")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return _text(400, "the request is not UTF-8")
    head, separator, note_text = text.partition("\n\n")
    if not separator:
        return _text(
            400, "the request is an old size line, proof lines, a blank line and a checkpoint"
        )
    lines = head.split("\n")
    old_line, proof_lines = lines[0], lines[1:]
    if not old_line.startswith("old ") or whole_number(old_line[4:]) is None:
        return _text(400, "the first line is 'old <size>'")
    if old_line[4:] != "0" and old_line[4:].startswith("0"):
        return _text(400, "the old size has leading zeros")
    if len(proof_lines) > MAX_PROOF_LINES:
        return _text(400, f"more than {MAX_PROOF_LINES} proof lines")
    try:
        proof = [base64.b64decode(line, validate=True) for line in proof_lines]
    except (binascii.Error, ValueError):
        return _text(400, "a proof line is not base64")
    if any(len(h) != 32 for h in proof):
        return _text(400, "a proof line is not a 32-byte hash")
    return int(old_line[4:]), proof, note_text

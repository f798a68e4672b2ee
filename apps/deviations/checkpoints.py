"""Signed checkpoints of each protocol's log (issue #18 deliverable 3; issue 33 deliverable 4).

A hash chain proves nothing against whoever can rewrite every entry and recompute every hash
after it (a superuser, or the tables' owner with the guards switched off). A checkpoint is a
C2SP ``tlog-checkpoint``: the log's origin (``<LOG_ORIGIN>/<protocol code>``), its size and
the RFC 6962 Merkle root of its entries, as a C2SP signed note with an Ed25519 key that the
database never holds (``LOG_SIGNING_KEY`` or ``LOG_SIGNING_KEY_FILE``).

The signer keeps the last (size, root) it signed for each log OUTSIDE the database, in a state
file beside its key (``LOG_SIGNING_STATE_DIR``, by default ``<key file>.state/``), or reads it
back from its witness when the file is missing. It signs only a tree that extends that one,
proven by an RFC 6962 consistency proof it checks itself; a rewritten log (the owner erasing an
entry, recomputing the chain and deleting the stored checkpoints) is refused, saying so, and an
alarm is logged. Each checkpoint goes to the witness (``LOG_WITNESS_URL``, C2SP tlog-witness:
``manage.py log_witness``), which cosigns only a consistent extension of what it saw, and to
``LOG_WITNESS_DIR``. Checkpoints kept in the database are checked against the configured keys
before any use: an invalid one is reported and skipped, and stops nothing.

Formats and verification are in ``chain.py`` (shared with the offline verifier); the tree is
read by ``tree.py``; this module holds the key and state, and signs, serves and delivers.
"""

from __future__ import annotations

import base64
import fcntl
import functools
import hashlib
import json
import logging
import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import transaction

from apps.core.inputs import whole_number
from apps.core.rows import row_copy
from apps.deviations import chain, tree
from apps.deviations.models import LogCheckpoint, LogEntry

logger = logging.getLogger(__name__)


# -- the key ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SigningKey:
    private: Ed25519PrivateKey
    public_raw: bytes

    @property
    def key_id(self) -> str:
        return chain.key_id(self.public_raw)

    @property
    def public_b64(self) -> str:
        return base64.b64encode(self.public_raw).decode()


def _parse_private_key(text: bytes, *, where: str) -> Ed25519PrivateKey:
    text = text.strip()
    try:
        if text.startswith(b"-----BEGIN"):
            key = serialization.load_pem_private_key(text, password=None)
            if not isinstance(key, Ed25519PrivateKey):
                raise ImproperlyConfigured(f"{where} is not an Ed25519 private key")
            return key
        return Ed25519PrivateKey.from_private_bytes(base64.b64decode(text, validate=True))
    except (ValueError, TypeError) as error:
        raise ImproperlyConfigured(
            f"{where} is neither a PEM Ed25519 private key nor base64 of its 32 raw bytes ({error})"
        ) from error


def create_key_file(path: Path) -> None:
    """Write a new Ed25519 private key to ``path`` as unencrypted PKCS#8 PEM, readable by its
    owner only (mode 0600), creating its folder. Raises FileExistsError when ``path`` exists
    (never overwrites a key)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(pem)


_cached: dict[tuple[str, str], SigningKey] = {}


def signing_key() -> SigningKey | None:
    """The configured signing key, or None when none is configured (checkpoints are off).

    ``LOG_SIGNING_KEY`` (PEM, or base64 of the 32 raw bytes) wins over ``LOG_SIGNING_KEY_FILE``;
    with ``LOG_SIGNING_KEY_CREATE`` (development) a missing file is created. Raises
    ImproperlyConfigured for a key that cannot be read.
    """
    text = getattr(settings, "LOG_SIGNING_KEY", "") or ""
    path = getattr(settings, "LOG_SIGNING_KEY_FILE", "") or ""
    cache_key = (text, str(path))
    if cache_key in _cached:
        return _cached[cache_key]
    if text:
        private = _parse_private_key(text.encode(), where="LOG_SIGNING_KEY")
    elif path:
        file = Path(path)
        if not file.exists() and getattr(settings, "LOG_SIGNING_KEY_CREATE", False):
            create_key_file(file)
            logger.warning("created a new log signing key in %s", file)
        try:
            private = _parse_private_key(file.read_bytes(), where=f"LOG_SIGNING_KEY_FILE {file}")
        except OSError as error:
            raise ImproperlyConfigured(f"LOG_SIGNING_KEY_FILE {file}: {error}") from error
    else:
        return None
    public_raw = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    key = _cached[cache_key] = SigningKey(private, public_raw)
    return key


def public_keys() -> dict[str, Any]:
    """What ``/logs/signing-key`` serves: the current public key and the previous ones, and how
    checkpoints name them (the key name is each checkpoint's origin)."""
    key = signing_key()
    previous = list(getattr(settings, "LOG_SIGNING_PREVIOUS_PUBLIC_KEYS", []))
    return {
        "algorithm": "Ed25519",
        "key_id": key.key_id if key else None,
        "public_key": key.public_b64 if key else None,
        "previous_public_keys": previous,
        "previous_key_ids": [chain.key_id(base64.b64decode(k)) for k in previous],
        "checkpoint_format": "c2sp.org/tlog-checkpoint, signed note (c2sp.org/signed-note)",
        "origin_prefix": settings.LOG_ORIGIN + "/",
        "key_name": "the checkpoint's origin, <origin_prefix><protocol code>",
    }


def signer_key_id(checkpoint: LogCheckpoint) -> str | None:
    """The ``key_id`` by which ``/logs/signing-key`` lists the trusted key that signed
    ``checkpoint`` (16 hex digits, ``chain.key_id``), or None when no trusted key did.

    A checkpoint stores the signed note's own key ID (4 bytes, hex: c2sp.org/signed-note, "Key
    IDs"), which hashes the key name, and so differs per log for one key; an auditor comparing
    the log page with the signing key needs the key's own fingerprint beside it."""
    origin = checkpoint.document.get("origin") or origin_for(checkpoint.protocol.code)
    for public_b64 in trusted_public_keys():
        raw = base64.b64decode(public_b64)
        if chain.note_key_id(origin, chain.SIGNATURE_ED25519, raw).hex() == checkpoint.key_id:
            return chain.key_id(raw)
    return None


def log_verifier_keys() -> list[chain.VerifierKey]:
    """The log keys the server accepts checkpoints by: current and previous."""
    return [chain.VerifierKey(base64.b64decode(k)) for k in trusted_public_keys()]


def origin_for(code: str) -> str:
    """The origin (and log key name) of a protocol's log: ``<LOG_ORIGIN>/<code>``."""
    return f"{settings.LOG_ORIGIN}/{code}"


def trusted_public_keys() -> list[str]:
    """The base64 public keys whose signatures the server accepts: current and previous."""
    key = signing_key()
    return ([key.public_b64] if key else []) + list(
        getattr(settings, "LOG_SIGNING_PREVIOUS_PUBLIC_KEYS", [])
    )


# -- the signer's state, outside the database ----------------------------------------------


def state_dir() -> Path:
    """Where the signer keeps its last signed tree per log: ``LOG_SIGNING_STATE_DIR``, else a
    folder beside the key file. ImproperlyConfigured for a key given inline with no folder."""
    configured = getattr(settings, "LOG_SIGNING_STATE_DIR", "") or ""
    if configured:
        return Path(configured)
    key_file = getattr(settings, "LOG_SIGNING_KEY_FILE", "") or ""
    if key_file and not getattr(settings, "LOG_SIGNING_KEY", ""):
        return Path(f"{key_file}.state")
    raise ImproperlyConfigured(
        "LOG_SIGNING_STATE_DIR: with LOG_SIGNING_KEY the signer needs a folder outside the "
        "database for the last tree it signed of each log"
    )


def _state_file(origin: str) -> Path:
    return state_dir() / f"{hashlib.sha256(origin.encode()).hexdigest()[:32]}.json"


@contextmanager
def _state_lock(origin: str) -> Iterator[None]:
    """One signer at a time per log (beat and a manual signing may meet), across processes."""
    folder = state_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(folder / f"{hashlib.sha256(origin.encode()).hexdigest()[:32]}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def signer_state(origin: str) -> dict[str, Any] | None:
    """The last checkpoint the signer signed for ``origin`` ({origin, size, root, note,
    signed_at}), from its state file, or None when it has signed none there."""
    try:
        document = json.loads(_state_file(origin).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise CheckpointRefused(
            {"log": f"the signer's state for {origin} cannot be read ({error}); nothing is signed"}
        ) from error
    if not isinstance(document, dict) or document.get("origin") != origin:
        raise CheckpointRefused({"log": f"the signer's state for {origin} is not its own"})
    return document


def _write_state(origin: str, document: dict[str, Any]) -> None:
    path = _state_file(origin)
    temporary = path.with_suffix(".tmp")
    with open(temporary, "w", encoding="utf-8") as file:
        json.dump(document, file, sort_keys=True)
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)  # atomic: the state is the old one or the new one, never half


def _state_from_witness(origin: str) -> dict[str, Any] | None:
    """The latest checkpoint the witness cosigned for ``origin``, read back when the signer has
    no state file (a new machine): only one signed by our own key is believed."""
    url = getattr(settings, "LOG_WITNESS_URL", "")
    if not url:
        return None
    address = f"{url.rstrip('/')}/{hashlib.sha256(origin.encode()).hexdigest()}/checkpoint"
    try:
        with urllib.request.urlopen(address, timeout=settings.LOG_WITNESS_TIMEOUT_SECONDS) as reply:
            text = reply.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise CheckpointRefused(
            {"log": f"no state file, and the witness answered {error.code}: nothing is signed"}
        ) from error
    except (OSError, UnicodeDecodeError) as error:
        raise CheckpointRefused(
            {"log": f"no state file, and the witness cannot be read ({error}): nothing is signed"}
        ) from error
    try:
        _note, (_origin, size, root) = chain.checkpoint_note_verify(
            text, log_verifier_keys(), origin=origin
        )
    except ValueError as error:
        raise CheckpointRefused(
            {"log": f"the witness's checkpoint of {origin} is not ours ({error})"}
        ) from error
    return {"origin": origin, "size": size, "root": base64.b64encode(root).decode(), "note": text}


# -- stored checkpoints: checked before use --------------------------------------------------


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def checkpoint_problem(checkpoint: LogCheckpoint) -> str | None:
    """Why a stored checkpoint cannot be used (not signed by a configured key, forged, another
    log's, or unreadable), or None when it verifies."""
    document = checkpoint.document
    if not isinstance(document, dict):
        return "its document is not a checkpoint"
    if document.get("type") == chain.NOTE_CHECKPOINT_TYPE:
        return _note_problem(
            str(document.get("note")),
            origin_for(checkpoint.protocol.code),
            checkpoint.seq,
            checkpoint.head_hash,
            tuple(trusted_public_keys()),
        )
    valid, why = chain.checkpoint_signature(document, trusted_public_keys())
    return None if valid else why


@functools.lru_cache(maxsize=4096)
def _note_problem(
    note: str, origin: str, size: int, head_hash: str, keys: tuple[str, ...]
) -> str | None:
    """Why a stored C2SP checkpoint cannot be used, or None (remembered per exact note text,
    columns and keys: the same bytes verify the same way, so a page does not re-check them)."""
    try:
        _note, (_origin, signed_size, root) = chain.checkpoint_note_verify(
            note, [chain.VerifierKey(base64.b64decode(k)) for k in keys], origin=origin
        )
    except ValueError as error:
        return str(error)
    if signed_size != size or root.hex() != head_hash:
        return "its columns do not say what its signed note says"
    return None


def _stored_problem(checkpoint: LogCheckpoint, protocol) -> str | None:
    """Why the stored ``checkpoint`` of ``protocol`` does not verify (logged), or None."""
    checkpoint.protocol = protocol
    problem = checkpoint_problem(checkpoint)
    if problem is not None:
        logger.error(
            "stored checkpoint %s of %s (size %s) skipped: %s",
            checkpoint.pk,
            protocol.code,
            checkpoint.seq,
            problem,
        )
    return problem


def checkpoints_checked(protocol) -> tuple[list[LogCheckpoint], list[tuple[LogCheckpoint, str]]]:
    """The protocol's stored checkpoints, oldest first, split into those that verify against
    the configured keys and those that do not (each with why). Invalid ones are logged."""
    valid, invalid = [], []
    for checkpoint in LogCheckpoint.objects.filter(protocol=protocol).order_by("seq", "pk"):
        problem = _stored_problem(checkpoint, protocol)
        if problem is None:
            valid.append(checkpoint)
        else:
            invalid.append((checkpoint, problem))
    return valid, invalid


def latest_checkpoint(*, protocol, size: int | None = None) -> LogCheckpoint | None:
    """The protocol's most recent checkpoint that verifies (largest, then newest; of ``size``
    entries when given), or None. Checks signatures newest first and stops at the first that
    verifies, logging the invalid ones it passes."""
    rows = LogCheckpoint.objects.filter(protocol=protocol)
    if size is not None:
        rows = rows.filter(seq=size)
    for checkpoint in rows.order_by("-seq", "-pk").iterator(chunk_size=20):
        if _stored_problem(checkpoint, protocol) is None:
            return checkpoint
    return None


def entry_in_signed_tree(
    *, protocol, seq: int, tree_size: int | None = None
) -> tuple[LogEntry, int, LogCheckpoint | None]:
    """What an inclusion proof of entry ``seq`` needs: the entry, the size of the tree to prove
    it in, and that tree's checkpoint when one verifies (else None). The tree is ``tree_size``'s
    when given, else the latest verified checkpoint's when it holds the entry, else the whole
    log's.

    One query in the usual case: the entry, with the log's size and the newest stored
    checkpoint (of ``tree_size`` entries, when given) beside it; that checkpoint is checked
    as ``latest_checkpoint`` checks it, and when it does not verify, ``latest_checkpoint``
    looks further (and logs what it skips). Raises ValidationError naming ``seq`` when the
    entry is not in that tree, or the tree not in the log.
    """
    at_size = "AND seq = %s" if tree_size is not None else ""
    # Raw SQL: the ORM compiles these subqueries slower than PostgreSQL answers them.
    sql = f"""
        SELECT e.*, (SELECT MAX(seq) FROM deviations_logentry WHERE protocol_id = %s) AS log_size,
               c.id AS checkpoint_pk, c.seq AS checkpoint_seq, c.head_hash AS checkpoint_head,
               c.document AS checkpoint_document
        FROM deviations_logentry e
        LEFT JOIN (
            SELECT id, seq, head_hash, document FROM deviations_logcheckpoint
            WHERE protocol_id = %s {at_size} ORDER BY seq DESC, id DESC LIMIT 1
        ) c ON 1 = 1
        WHERE e.protocol_id = %s AND e.seq = %s
    """
    sized = [tree_size] if tree_size is not None else []
    params = [protocol.pk, protocol.pk, *sized, protocol.pk, seq]
    # Any: the row also carries the log's size and the checkpoint's columns as attributes.
    entry: Any = next(iter(LogEntry.objects.raw(sql, params)), None)
    held = entry.log_size if entry is not None else tree.log_size(protocol_id=protocol.pk)
    size = tree_size if tree_size is not None else held
    checkpoint = None
    if entry is not None and entry.checkpoint_pk is not None:
        document = entry.checkpoint_document  # not a model column here: not decoded
        checkpoint = LogCheckpoint(
            pk=entry.checkpoint_pk,
            protocol=protocol,
            seq=entry.checkpoint_seq,
            head_hash=entry.checkpoint_head,
            document=json.loads(document) if isinstance(document, str) else document,
        )
        if checkpoint_problem(checkpoint) is not None:
            checkpoint = latest_checkpoint(protocol=protocol, size=tree_size)
    if tree_size is None and checkpoint is not None and seq <= checkpoint.seq <= held:
        size = checkpoint.seq
    elif tree_size is None:
        checkpoint = None
    if entry is None or not seq <= size <= held:
        raise ValidationError(
            {
                "seq": f"Entry {seq} is not in a tree of {size} entries of this log (it holds "
                f"{held})."
            }
        )
    return entry, size, checkpoint


def stored_checkpoints(protocol) -> list[dict[str, Any]]:
    """The documents of the protocol's stored checkpoints that verify against the configured
    keys (anchors for verification); invalid ones are reported in the log and skipped."""
    valid, _invalid = checkpoints_checked(protocol)
    return [checkpoint.document for checkpoint in valid]


# -- signing ------------------------------------------------------------------------------


class CheckpointRefused(ValidationError):
    """The log does not verify, or does not extend what was signed before: nothing is signed."""


def _alarm(protocol, origin: str, reason: str) -> None:
    """A refused rewrite: logged as critical, and in a file beside the signer's state."""
    line = f"{_utc(datetime.now(UTC))} ALARM {origin}: {reason}"
    logger.critical("ALARM: the signer refused the log of %s: %s", protocol.code, reason)
    try:
        with open(state_dir() / "alarms.log", "a", encoding="utf-8") as file:
            file.write(line + "\n")
    except OSError:
        logger.exception("the alarm could not be written beside the signer's state")


def checkpoint_write(*, protocol, force: bool = False) -> LogCheckpoint | None:
    """Sign a C2SP checkpoint of the protocol's log, store it and send it to the witness.

    Returns None when no key is configured or there is nothing new to sign (an empty log, or
    a tree the signer already signed, unless ``force``). Signs only a tree that extends the
    last one this signer signed (its state file, or its witness): the entries after it are
    verified (``tree.verify_since``), the old tree must be a prefix of the new one, proven by
    a consistency proof checked here. Raises CheckpointRefused naming why otherwise (and
    logs an alarm when the log was rewritten).
    """
    key = signing_key()
    if key is None:
        return None
    origin = origin_for(protocol.code)
    with _state_lock(origin):
        state = signer_state(origin) or _state_from_witness(origin)
        old_size = int(state["size"]) if state else 0
        old_root = base64.b64decode(state["root"]) if state else chain.EMPTY_ROOT
        if tree.log_size(protocol_id=protocol.pk) == 0:
            return None
        # Checked even when the log has not grown (O(log n) then): a rewrite that kept the
        # size is refused and raises the alarm as soon as the signer runs, not when it grows.
        try:
            verified = tree.verify_since(protocol=protocol, size=old_size, root=old_root)
        except tree.LogRewritten as error:
            reason = f"{error} (the signer signed {old_size} entries before)"
            _alarm(protocol, origin, reason)
            raise CheckpointRefused(
                {"log": f"{protocol.code}: {reason}; the log was rewritten, nothing is signed."}
            ) from error
        report = verified.report
        if report.ok and verified.size == old_size and not force:
            return None
        if not report.ok:
            logger.error("checkpoint of %s refused: %s", protocol.code, report.summary())
            raise CheckpointRefused(
                {"log": f"{protocol.code}: {report.summary()}; no checkpoint is signed over it."}
            )
        tree.store_nodes(protocol_id=protocol.pk, nodes=verified.new_nodes)
        proof = tree.consistency_proof_to(
            protocol_id=protocol.pk, first=old_size, second=verified.size, second_root=verified.root
        )
        if not chain.verify_consistency(old_size, verified.size, proof, old_root, verified.root):
            reason = (
                f"no consistency proof leads from the {old_size} entries signed before to the "
                f"{verified.size} of the log now"
            )
            _alarm(protocol, origin, reason)
            raise CheckpointRefused({"log": f"{protocol.code}: {reason}; nothing is signed."})
        note = sign_checkpoint(key, origin, verified.size, verified.root)
        signed_at = datetime.now(UTC)
        _write_state(
            origin,
            {
                "origin": origin,
                "size": verified.size,
                "root": base64.b64encode(verified.root).decode(),
                "note": note,
                "signed_at": _utc(signed_at),
            },
        )
        document = {
            "type": chain.NOTE_CHECKPOINT_TYPE,
            "protocol": protocol.code,
            "origin": origin,
            "size": verified.size,
            "root_hash": base64.b64encode(verified.root).decode(),
            "signed_at": _utc(signed_at),
            "previous_size": old_size,
            "note": note,
        }
        with transaction.atomic():
            checkpoint = LogCheckpoint(
                protocol=protocol,
                seq=verified.size,
                head_hash=verified.root.hex(),
                key_id=chain.note_key_id(origin, chain.SIGNATURE_ED25519, key.public_raw).hex(),
                signed_at=signed_at,
                document=document,
            )
            checkpoint.full_clean(exclude=["protocol"])
            checkpoint.save()
            transaction.on_commit(lambda: _deliver_later(checkpoint.pk))
    return checkpoint


def sign_checkpoint(key: SigningKey, origin: str, size: int, root: bytes) -> str:
    """A C2SP checkpoint note of (origin, size, root), signed by ``key`` under the origin."""
    body = chain.checkpoint_body(origin, size, root)
    key_id = chain.note_key_id(origin, chain.SIGNATURE_ED25519, key.public_raw)
    return body + "\n" + chain.signature_line(origin, key_id, key.private.sign(body.encode()))


def checkpoints_write_all() -> dict[str, list[str]]:
    """A checkpoint of every protocol whose log grew since its last one (the beat task)."""
    written, refused = [], []
    from apps.protocols.models import Protocol

    for protocol in Protocol.objects.filter(log_entries__isnull=False).distinct().order_by("code"):
        try:
            if checkpoint_write(protocol=protocol) is not None:
                written.append(protocol.code)
        except CheckpointRefused:
            refused.append(protocol.code)
    return {"written": written, "refused": refused}


# -- the witnesses ------------------------------------------------------------------------


def checkpoint_bytes(document: dict[str, Any]) -> bytes:
    """A checkpoint document as a file: its JSON, keys sorted, one line, newline-terminated."""
    return (json.dumps(document, sort_keys=True, ensure_ascii=True) + "\n").encode()


def _deliver_later(checkpoint_id: int) -> None:
    if not (getattr(settings, "LOG_WITNESS_URL", "") or getattr(settings, "LOG_WITNESS_DIR", "")):
        return
    from apps.deviations.tasks import checkpoint_deliver_task

    checkpoint_deliver_task.delay(checkpoint_id)


class WitnessRefused(Exception):
    """The witness refused to cosign (a fork, a bad proof, an unknown log): not retried."""


def _add_checkpoint(url: str, body: bytes) -> tuple[int, bytes]:
    request = urllib.request.Request(f"{url.rstrip('/')}/add-checkpoint", data=body, method="POST")
    timeout = getattr(settings, "LOG_WITNESS_TIMEOUT_SECONDS", 10)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def witness_request(*, protocol_id: int, note: str, old_size: int, size: int) -> bytes:
    """The body of a C2SP tlog-witness add-checkpoint request: ``old <size>``, the consistency
    proof lines from ``old_size`` to ``size``, a blank line, the checkpoint."""
    root = chain.parse_note(note).checkpoint()[2]
    proof = tree.consistency_proof_to(
        protocol_id=protocol_id, first=old_size, second=size, second_root=root
    )
    lines = [f"old {old_size}"] + [base64.b64encode(h).decode() for h in proof]
    return ("\n".join(lines) + "\n\n" + note).encode()


def deliver_to_witness(*, url: str, checkpoint: LogCheckpoint) -> list[str]:
    """Ask the witness at ``url`` to cosign; return its cosignature lines.

    Starts from the size of the signer's previous checkpoint; on 409 the witness says which
    size it holds, and the request is made once more from there (C2SP tlog-witness). Raises
    WitnessRefused when it refuses (a fork: 422; not our log: 403/404), OSError when it cannot
    be reached (the task retries).
    """
    document = checkpoint.document
    size, note = int(document["size"]), str(document["note"])
    old_size = min(int(document.get("previous_size", 0)), size)
    for _attempt in range(2):
        body = witness_request(
            protocol_id=checkpoint.protocol_id, note=note, old_size=old_size, size=size
        )
        status, reply = _add_checkpoint(url, body)
        if status == 200:
            lines = reply.decode("utf-8").splitlines()
            return [line + "\n" for line in lines if line.startswith("\u2014 ")]
        if status == 409:
            held = reply.decode("ascii", "replace").strip()
            held_size = whole_number(held)
            if held_size is None:
                raise WitnessRefused(f"the witness answered 409 without its size: {held[:80]!r}")
            if held_size > size:
                raise WitnessRefused(
                    f"the witness already holds {held} entries of {document['origin']}, more "
                    f"than this checkpoint's {size}"
                )
            old_size = int(held)
            continue
        if status >= 500:
            raise OSError(f"the witness at {url} answered {status}")
        text = reply.decode("utf-8", "replace").strip()
        logger.critical(
            "ALARM: the witness at %s refused checkpoint %s of %s (%s): %s",
            url,
            size,
            document["origin"],
            status,
            text,
        )
        raise WitnessRefused(f"the witness at {url} refused ({status}): {text}")
    raise WitnessRefused("the witness kept answering 409")


def checkpoint_deliver(*, checkpoint_id: int) -> list[str]:
    """Send a checkpoint out of the database: to the witness at ``LOG_WITNESS_URL`` (C2SP
    tlog-witness add-checkpoint; its cosignatures are kept as a new stored checkpoint with them)
    and/or into ``LOG_WITNESS_DIR`` as ``<protocol>-<size>-<signed_at>.note`` (cosigned when
    the witness answered). Returns where it went; raises OSError when a delivery fails, so the
    task retries; WitnessRefused when the witness refuses (logged as an alarm)."""
    checkpoint = LogCheckpoint.objects.select_related("protocol").get(pk=checkpoint_id)
    document = dict(checkpoint.document)
    delivered = []
    url = getattr(settings, "LOG_WITNESS_URL", "")
    if url and document.get("type") == chain.NOTE_CHECKPOINT_TYPE:
        cosignatures = deliver_to_witness(url=url, checkpoint=checkpoint)
        if cosignatures:
            document["note"] = str(document["note"]) + "".join(cosignatures)
            # The same checkpoint again, its note now carrying the witness's cosignatures.
            kept = ("protocol_id", "seq", "head_hash", "key_id", "signed_at")
            cosigned = row_copy(checkpoint, kept, document=document)
            cosigned.full_clean(exclude=["protocol"])
            cosigned.save()
        delivered.append(url)
    folder = getattr(settings, "LOG_WITNESS_DIR", "")
    if folder:
        stamp = str(document["signed_at"]).replace(":", "").replace(".", "")
        if document.get("type") == chain.NOTE_CHECKPOINT_TYPE:
            name = f"{document['protocol']}-{document['size']}-{stamp}.note"
            body = str(document["note"]).encode()
        else:
            name = f"{document['protocol']}-{document['seq']}-{document['key_id']}-{stamp}.json"
            body = checkpoint_bytes(document)
        target = Path(folder)
        target.mkdir(parents=True, exist_ok=True)
        temporary = target / f".{name}.tmp"
        temporary.write_bytes(body)
        temporary.replace(target / name)  # atomic: a witness never reads half a file
        delivered.append(str(target / name))
    return delivered

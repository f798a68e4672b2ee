"""Signed checkpoints of each protocol's log head (issue #18, deliverable 3).

A hash chain proves nothing against whoever can rewrite every entry and recompute every hash
after it (a superuser, or the tables' owner with the guards switched off). A checkpoint is the
chain's head (protocol, seq, hash, that entry's time) signed with an Ed25519 key that the
database never holds (``LOG_SIGNING_KEY`` or ``LOG_SIGNING_KEY_FILE``). Once a copy has left the
database — delivered to a witness (``LOG_WITNESS_URL``, ``LOG_WITNESS_DIR``), downloaded by an
auditor, or carried by an export — a rewritten log no longer extends it, and every verifier says
so. The statement format and its verification are in ``chain.py`` (shared with the offline
verifier); this module holds the key and writes, serves and delivers checkpoints.

Checkpoints are written on a schedule (Celery beat, ``deviations.checkpoints_write``) and on
demand (``manage.py log_checkpoint``, ``POST /api/v1/protocols/<code>/log/checkpoints``). A new
checkpoint is signed only after the whole chain verifies and extends the previous checkpoint,
so a rewrite is never signed over.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import transaction

from apps.deviations import chain
from apps.deviations.models import LogCheckpoint, LogEntry
from apps.deviations.selectors import chain_verify

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


def _create_key_file(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(pem)
    logger.warning("created a new log signing key in %s", path)


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
            _create_key_file(file)
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
    """What ``/logs/signing-key`` serves: the current public key and the previous ones."""
    key = signing_key()
    previous = list(getattr(settings, "LOG_SIGNING_PREVIOUS_PUBLIC_KEYS", []))
    return {
        "algorithm": "Ed25519",
        "key_id": key.key_id if key else None,
        "public_key": key.public_b64 if key else None,
        "previous_public_keys": previous,
        "previous_key_ids": [chain.key_id(base64.b64decode(k)) for k in previous],
    }


def trusted_public_keys() -> list[str]:
    """The base64 public keys whose signatures the server accepts: current and previous."""
    key = signing_key()
    return ([key.public_b64] if key else []) + list(
        getattr(settings, "LOG_SIGNING_PREVIOUS_PUBLIC_KEYS", [])
    )


# -- writing ------------------------------------------------------------------------------


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def latest_checkpoint(*, protocol) -> LogCheckpoint | None:
    """The protocol's most recent checkpoint (highest seq, then newest), or None."""
    return LogCheckpoint.objects.filter(protocol=protocol).order_by("-seq", "-signed_at").first()


def stored_checkpoints(protocol) -> list[dict[str, Any]]:
    """The documents of every checkpoint of the protocol kept in the database (anchors for
    verification; the copies outside the database are the ones a rewrite cannot reach)."""
    return [
        checkpoint.document
        for checkpoint in LogCheckpoint.objects.filter(protocol=protocol).order_by("seq")
    ]


class CheckpointRefused(ValidationError):
    """The chain does not verify, or does not extend the last checkpoint: nothing is signed."""


def checkpoint_write(*, protocol, force: bool = False) -> LogCheckpoint | None:
    """Sign the protocol's log head and store the checkpoint; deliver it to the witness.

    Returns None when there is nothing new to sign (an empty log, or the head already
    checkpointed, unless ``force``) or no key is configured. Verifies the whole chain first,
    with every stored checkpoint as an anchor, and raises CheckpointRefused (naming the broken
    entry) rather than sign a rewritten log.
    """
    key = signing_key()
    if key is None:
        return None
    previous = latest_checkpoint(protocol=protocol)
    head = LogEntry.objects.filter(protocol=protocol).order_by("-seq").first()
    if head is None or (previous is not None and previous.seq == head.seq and not force):
        return None
    report = chain_verify(protocol=protocol, checkpoints=stored_checkpoints(protocol))
    if not report.ok:
        logger.error("checkpoint of %s refused: %s", protocol.code, report.summary())
        raise CheckpointRefused(
            {"log": f"{protocol.code}: {report.summary()}; no checkpoint is signed over it."}
        )
    statement = {
        "type": chain.CHECKPOINT_TYPE,
        "protocol": report.protocol,
        "seq": report.verified_through,
        "hash": report.head_hash,
        "recorded_at": report.verified_through_at,
        "signed_at": _utc(datetime.now(UTC)),
        "key_id": key.key_id,
    }
    signature = key.private.sign(chain.checkpoint_statement(statement))
    document = {
        **statement,
        "public_key": key.public_b64,
        "signature": base64.b64encode(signature).decode(),
    }
    with transaction.atomic():
        checkpoint = LogCheckpoint(
            protocol=protocol,
            seq=int(str(statement["seq"])),
            head_hash=str(statement["hash"]),
            key_id=key.key_id,
            signed_at=datetime.strptime(
                str(statement["signed_at"]), "%Y-%m-%dT%H:%M:%S.%fZ"
            ).replace(tzinfo=UTC),
            document=document,
        )
        checkpoint.full_clean(exclude=["protocol"])
        checkpoint.save()
        transaction.on_commit(lambda: _deliver_later(checkpoint.pk))
    return checkpoint


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


# -- the witness --------------------------------------------------------------------------


def checkpoint_bytes(document: dict[str, Any]) -> bytes:
    """A checkpoint as a file: its JSON, keys sorted, one line, newline-terminated."""
    return (json.dumps(document, sort_keys=True, ensure_ascii=True) + "\n").encode()


def _deliver_later(checkpoint_id: int) -> None:
    if not (getattr(settings, "LOG_WITNESS_URL", "") or getattr(settings, "LOG_WITNESS_DIR", "")):
        return
    from apps.deviations.tasks import checkpoint_deliver_task

    checkpoint_deliver_task.delay(checkpoint_id)


def checkpoint_deliver(*, checkpoint_id: int) -> list[str]:
    """Send a checkpoint to the external witness: POST it as JSON to ``LOG_WITNESS_URL``
    and/or write it into ``LOG_WITNESS_DIR`` as ``<protocol>-<seq>-<key id>-<signed_at>.json``.
    Returns where it went; raises OSError (urllib.error.URLError included) when a delivery
    fails, so the task retries."""
    checkpoint = LogCheckpoint.objects.get(pk=checkpoint_id)
    body = checkpoint_bytes(checkpoint.document)
    delivered = []
    url = getattr(settings, "LOG_WITNESS_URL", "")
    if url:
        request = urllib.request.Request(
            url, data=body, method="POST", headers={"Content-Type": "application/json"}
        )
        timeout = getattr(settings, "LOG_WITNESS_TIMEOUT_SECONDS", 10)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            if not 200 <= response.status < 300:
                raise OSError(f"the witness at {url} answered {response.status}")
        delivered.append(url)
    folder = getattr(settings, "LOG_WITNESS_DIR", "")
    if folder:
        document = checkpoint.document
        stamp = document["signed_at"].replace(":", "").replace(".", "")
        name = f"{document['protocol']}-{document['seq']}-{document['key_id']}-{stamp}.json"
        target = Path(folder)
        target.mkdir(parents=True, exist_ok=True)
        temporary = target / f".{name}.tmp"
        temporary.write_bytes(body)
        temporary.replace(target / name)  # atomic: a witness never reads half a file
        delivered.append(str(target / name))
    return delivered

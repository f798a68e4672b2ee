"""Where an uploaded response file waits between its preview and its confirmation.

A preview is kept under ``RESPONSE_IMPORT_STAGING_DIR/<user id>/<protocol id>/<version id>/
<sha256>``: the confirm step finds only the file *this* person previewed for *this* protocol's
version, never another user's upload that happens to share its hash. Previews never confirmed
are deleted by ``import_previews_sweep`` (Celery beat, hourly) once older than
``RESPONSE_IMPORT_PREVIEW_MAX_AGE_HOURS``.
"""

import hashlib
import os
import re
import tempfile
import time
from pathlib import Path

from django.conf import settings

from apps.core.canonical import sha256_hex
from apps.protocols.models import ProtocolVersion


def _root() -> Path:
    return Path(settings.RESPONSE_IMPORT_STAGING_DIR)


_DIGEST = re.compile(r"[0-9a-f]{64}")


def preview_path(*, user_id: int, version: ProtocolVersion, digest: str) -> Path:
    """The staged file of ``user_id``'s preview of ``digest`` for ``version`` (may not exist)."""
    return _root() / str(user_id) / str(version.protocol_id) / str(version.pk) / digest


def preview_store(*, user_id: int, version: ProtocolVersion, data: bytes) -> str:
    """Stage ``data`` for the user's confirmation and return its SHA-256."""
    digest = sha256_hex(data)
    path = preview_path(user_id=user_id, version=version, digest=digest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return digest


def preview_stage(*, user_id: int, version: ProtocolVersion, upload) -> str:
    """Stage an uploaded file (anything with ``chunks()`` or ``read()``) for the user's
    confirmation, block by block, and return its SHA-256: a large upload is never held whole in
    memory."""
    digest = hashlib.sha256()
    folder = _root() / str(user_id) / str(version.protocol_id) / str(version.pk)
    folder.mkdir(parents=True, exist_ok=True)
    if hasattr(upload, "seek"):
        upload.seek(0)
    blocks = (
        upload.chunks() if hasattr(upload, "chunks") else iter(lambda: upload.read(1 << 20), b"")
    )
    with tempfile.NamedTemporaryFile(dir=folder, delete=False, prefix=".staging-") as handle:
        for block in blocks:
            digest.update(block)
            handle.write(block)
    path = preview_path(user_id=user_id, version=version, digest=digest.hexdigest())
    os.replace(handle.name, path)
    return digest.hexdigest()


def preview_staged(*, user_id: int, version: ProtocolVersion, digest: str) -> Path | None:
    """The path of the user's staged preview of ``digest`` for ``version``, checked block by
    block to still hash to ``digest``; None when it is gone or changed."""
    path = preview_path(user_id=user_id, version=version, digest=digest)
    found = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while block := handle.read(1 << 20):
                found.update(block)
    except FileNotFoundError:
        return None
    return path if found.hexdigest() == digest else None


def preview_load(*, user_id: int, version: ProtocolVersion, digest: str) -> bytes | None:
    """The user's staged preview of ``digest`` for ``version``; None when it is gone or its
    bytes no longer hash to ``digest``."""
    # The digest comes from a form: anything but a SHA-256 names no file, before any file-system
    # call (a long name was an ENAMETOOLONG 500 on the docs pages; issue #33).
    if not _DIGEST.fullmatch(digest or ""):
        return None
    path = preview_path(user_id=user_id, version=version, digest=digest)
    try:
        data = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return data if sha256_hex(data) == digest else None


def preview_discard(*, user_id: int, version: ProtocolVersion, digest: str) -> None:
    """Delete the user's staged preview (after it was imported) and the folders it leaves
    empty."""
    if not _DIGEST.fullmatch(digest or ""):
        return
    path = preview_path(user_id=user_id, version=version, digest=digest)
    path.unlink(missing_ok=True)
    root = _root()
    for folder in path.parents:
        if folder == root or root not in folder.parents:
            break
        try:
            folder.rmdir()
        except OSError:  # not empty (another preview) or already gone
            break


def import_previews_sweep(*, max_age_hours: float | None = None, now: float | None = None) -> int:
    """Delete staged previews older than ``max_age_hours`` (default: the setting) and the
    folders they leave empty; returns how many files were deleted."""
    hours = max_age_hours
    if hours is None:
        hours = settings.RESPONSE_IMPORT_PREVIEW_MAX_AGE_HOURS
    cutoff = (time.time() if now is None else now) - hours * 3600
    root = _root()
    if not root.is_dir():
        return 0
    deleted = 0
    for path in root.rglob("*"):
        if path.is_file() and path.stat().st_mtime < cutoff:
            path.unlink(missing_ok=True)
            deleted += 1
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    return deleted

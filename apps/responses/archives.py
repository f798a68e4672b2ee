"""Limits checked on an uploaded archive (an Inspect ``.eval`` log is a zip) before any reader
opens it, from its central directory alone: nothing is inflated.

A zip's readers (Python's ``zipfile``, which inspect_ai uses) inflate an entry up to its declared
uncompressed size, so bounding the declared sizes bounds the memory a reader can be made to use.
A 1 MB ``.eval`` holding 1 GiB of zeros is refused here by its ratio and its total.
"""

import io
import zipfile
from typing import BinaryIO

from django.conf import settings

ZIP_MAGIC = b"PK\x03\x04"


def inspect_sample_max_mb() -> int:
    """The largest sample (declared uncompressed size, MiB) an Inspect ``.eval`` log may hold:
    a sample is read whole, and its objects take several times its JSON."""
    return int(settings.INSPECT_SAMPLE_MAX_MB)


def inspect_json_max_mb() -> int:
    """The largest ``.json`` Inspect log (MiB): inspect_ai reads that format whole."""
    return int(settings.INSPECT_JSON_MAX_MB)


def archive_problems(data: bytes | BinaryIO) -> list[str]:
    """What makes the zip archive ``data`` too large to open, as sentences; empty when it is
    within the limits (or is not a zip at all: the reader then says what it is).

    The limits are settings: ``ARCHIVE_MAX_UNCOMPRESSED_MB`` (the entries' total declared
    uncompressed size, MiB), ``ARCHIVE_MAX_ENTRIES`` and ``ARCHIVE_MAX_RATIO`` (uncompressed to
    compressed size, for the whole archive and for each entry over 1 MiB).
    """
    archive: BinaryIO
    if isinstance(data, bytes | bytearray):
        magic, archive = bytes(data[:4]), io.BytesIO(data)
    else:  # a seekable file, read from its directory only
        magic, archive = data.read(4), data
        data.seek(0)
    if magic != ZIP_MAGIC:
        return []
    try:
        entries = zipfile.ZipFile(archive).infolist()
    except (zipfile.BadZipFile, ValueError, EOFError) as error:
        return [f"the archive cannot be read: {error}"]
    problems = []
    max_entries = settings.ARCHIVE_MAX_ENTRIES
    max_total = settings.ARCHIVE_MAX_UNCOMPRESSED_MB * 1024 * 1024
    max_ratio = settings.ARCHIVE_MAX_RATIO
    if len(entries) > max_entries:
        problems.append(f"the archive has {len(entries)} entries; at most {max_entries} are read")
    total = sum(entry.file_size for entry in entries)
    packed = sum(entry.compress_size for entry in entries)
    if total > max_total:
        problems.append(
            f"the archive would inflate to {total / 2**20:.0f} MiB; at most "
            f"{settings.ARCHIVE_MAX_UNCOMPRESSED_MB} MiB are read"
        )
    if total > 2**20 and total > max_ratio * max(packed, 1):
        problems.append(
            f"the archive inflates {total / max(packed, 1):.0f} times; at most {max_ratio} "
            "times is accepted (a compression bomb?)"
        )
    else:
        for entry in entries:
            if entry.file_size > 2**20 and entry.file_size > max_ratio * max(
                entry.compress_size, 1
            ):
                problems.append(
                    f"the archive's entry {entry.filename!r} inflates "
                    f"{entry.file_size / max(entry.compress_size, 1):.0f} times; at most "
                    f"{max_ratio} times is accepted"
                )
                break
    return problems

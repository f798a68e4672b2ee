"""An uploaded archive is checked before any reader opens it (issue #18, "Why" 5): a 1 MB
``.eval`` holding 1 GiB of zeros is refused from its directory, without inflating it."""

import io
import random
import tracemalloc
import zipfile

import pytest

from apps.responses.archives import archive_problems
from apps.responses.formats import FileUnreadable, read_file


def _zip(entries: dict[str, int], chunk: bytes = b"\0" * 2**20) -> bytes:
    """A deflated zip whose entries hold the given numbers of MiB of ``chunk``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, mib in entries.items():
            with archive.open(name, "w", force_zip64=True) as entry:
                for _ in range(mib):
                    entry.write(chunk)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return _zip({"samples/1.json": 1024})


def test_a_1_mb_eval_holding_1_gib_of_zeros_is_refused_without_inflating_it(bomb):
    assert len(bomb) < 2 * 2**20
    tracemalloc.start()
    try:
        with pytest.raises(FileUnreadable) as refused:
            read_file(bomb, "inspect")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    messages = [p.message for p in refused.value.problems]
    assert any("1024 MiB; at most 512 MiB" in m for m in messages), messages
    assert any("inflates" in m and "compression bomb" in m for m in messages), messages
    assert peak < 16 * 2**20  # the archive's own bytes and its directory, nothing inflated


def test_each_limit_is_a_setting(settings):
    archive = _zip({f"e{n}.json": 2 for n in range(3)}, chunk=random.Random(0).randbytes(2**20))
    assert archive_problems(archive) == []
    settings.ARCHIVE_MAX_ENTRIES = 2
    assert archive_problems(archive) == ["the archive has 3 entries; at most 2 are read"]
    settings.ARCHIVE_MAX_ENTRIES = 10
    settings.ARCHIVE_MAX_UNCOMPRESSED_MB = 5
    assert archive_problems(archive) == [
        "the archive would inflate to 6 MiB; at most 5 MiB are read"
    ]
    settings.ARCHIVE_MAX_UNCOMPRESSED_MB = 512
    zeros = _zip({"zeros.json": 2})
    assert "inflates" in archive_problems(zeros)[0]
    settings.ARCHIVE_MAX_RATIO = 5000
    assert archive_problems(zeros) == []


def test_a_file_that_is_not_a_zip_is_left_to_its_reader():
    assert archive_problems(b'{"version": 2}') == []
    assert archive_problems(b"PK\x03\x04garbage") == [
        "the archive cannot be read: File is not a zip file"
    ]

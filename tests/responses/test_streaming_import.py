"""The streaming import (issue #18): records are checked and written a batch at a time, yet a
problem late in the file still leaves nothing written, and a file on disk is never read whole."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile, TemporaryUploadedFile

from apps.deviations.models import LogEntry
from apps.responses import importing
from apps.responses.importing import ImportRejected
from apps.responses.models import Attempt, Response, ResponseImport
from apps.responses.services import responses_import
from tests.factories import answer_rows, build_draft, csv_bytes, freeze

pytestmark = pytest.mark.django_db


@pytest.fixture
def large(protocol, pi):
    return freeze(
        build_draft(protocol=protocol, user=pi, items=100, evaluands=("a", "b"), repetitions=3),
        pi,
    )


def test_batches_written_before_a_late_problem_are_taken_back(large, pi, monkeypatch):
    # Batches of 50: by row 550 ten batches have gone to the database when the problem is met.
    monkeypatch.setattr(importing, "BATCH_SIZE", 50)
    written = []
    real = importing._write_copy if importing.connection.vendor == "postgresql" else None
    if real is not None:

        def counting(version_id, import_id, planned):
            written.append(len(planned))
            real(version_id, import_id, planned)

        monkeypatch.setattr(importing, "_write_copy", counting)
    rows = answer_rows(large)
    rows[548]["terminal_outcome"] = "finished"
    rows[590]["evaluand"] = "nobody"
    with pytest.raises(ImportRejected) as rejected:
        responses_import(version=large, user=pi, data=csv_bytes(rows), filename="late.csv")
    assert [(p.row, p.field) for p in rejected.value.problems] == [
        (550, "terminal_outcome"),
        (592, "evaluand"),
    ]
    if real is not None:
        assert sum(written) == 500  # written, then rolled back
    assert Attempt.objects.count() == 0
    assert Response.objects.count() == 0
    assert ResponseImport.objects.count() == 0
    assert not LogEntry.objects.filter(kind="import").exists()


def test_a_file_in_batches_imports_every_row_under_one_import_record(large, pi, monkeypatch):
    monkeypatch.setattr(importing, "BATCH_SIZE", 64)
    rows = answer_rows(large)
    outcome = responses_import(version=large, user=pi, data=csv_bytes(rows), filename="all.csv")
    record = ResponseImport.objects.get()
    assert outcome.record == record
    assert record.counts["attempts"] == len(rows) == 600
    assert Attempt.objects.filter(source=record).count() == 600
    assert sorted(Attempt.objects.values_list("source_row", flat=True)) == list(range(2, 602))
    assert Response.objects.count() == 600
    assert len(outcome.preview) == importing.PREVIEW_ROWS


def test_a_path_a_spooled_upload_and_bytes_are_one_file(large, pi, tmp_path):
    data = csv_bytes(answer_rows(large))
    path = tmp_path / "answers.csv"
    path.write_bytes(data)
    spooled = TemporaryUploadedFile("answers.csv", "text/csv", len(data), "utf-8")
    spooled.write(data)
    spooled.seek(0)
    small = SimpleUploadedFile("answers.csv", data, "text/csv")
    dry = [
        responses_import(version=large, user=pi, data=d, filename="a.csv", dry_run=True).counts
        for d in (path, spooled, small)
    ]
    assert dry[0] == dry[1] == dry[2]
    first = responses_import(version=large, user=pi, data=path, filename="a.csv")
    again = responses_import(version=large, user=pi, data=spooled, filename="a.csv")
    assert first.status == "imported" and again.status == "already_imported"
    assert ResponseImport.objects.get().sha256 == first.record.sha256


def test_a_jsonl_file_is_refused_for_its_unreadable_lines_before_its_mapping(large, pi):
    data = b'{"item": "x"}\nnot json\n'
    with pytest.raises(ImportRejected) as rejected:
        responses_import(
            version=large, user=pi, data=data, filename="a.jsonl", mapping={"response": "nope"}
        )
    assert [p.row for p in rejected.value.problems] == [2]


def test_a_file_that_is_not_utf8_says_where(large, pi):
    data = b"item,evaluand,response\nx,a,fine\ny,b,caf\xe9\n"
    with pytest.raises(ImportRejected) as rejected:
        responses_import(version=large, user=pi, data=data, filename="a.csv")
    # 23 + 9 + 7 bytes before the lone \xe9, as the whole-file decode counted them
    assert "byte 39 (line 3)" in str(rejected.value)

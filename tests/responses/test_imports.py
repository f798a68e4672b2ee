"""Imports: all-or-nothing with row-level errors, idempotent by file hash, reruns, losses."""

import json

import pytest
from django.core.exceptions import ValidationError

from apps.deviations.models import LogEntry
from apps.responses.importing import ImportRejected
from apps.responses.models import Attempt, Response, ResponseImport
from apps.responses.selectors import outcome_counts
from apps.responses.services import responses_import
from tests.factories import answer_rows, build_draft, csv_bytes, freeze

pytestmark = pytest.mark.django_db


def _import(version, user, data, **kwargs):
    kwargs.setdefault("filename", "answers.csv")
    return responses_import(version=version, user=user, data=data, **kwargs)


def test_a_csv_file_imports_one_attempt_and_response_per_row(frozen, pi):
    rows = answer_rows(frozen)
    outcome = _import(frozen, pi, csv_bytes(rows))
    assert outcome.status == "imported"
    assert Attempt.objects.filter(version=frozen).count() == 6
    assert Response.objects.filter(version=frozen).count() == 6
    attempt = Attempt.objects.get(source_row=2)  # the header is row 1
    assert attempt.number == 1
    assert attempt.raw == {k: str(v) for k, v in rows[0].items()}
    assert attempt.response.text == rows[0]["response"]
    assert attempt.response.word_count == len(rows[0]["response"].split())
    record = ResponseImport.objects.get()
    assert record.imported_by == pi
    assert record.counts["attempts"] == 6
    assert record.counts["by_evaluand"] == {"alpha": 3, "beta": 3}


def test_a_2000_row_file_with_a_bad_1500th_row_leaves_nothing_and_names_row_1501(protocol, pi):
    version = freeze(
        build_draft(protocol=protocol, user=pi, items=200, evaluands=("a", "b"), repetitions=5),
        pi,
    )
    rows = answer_rows(version)
    assert len(rows) == 2000
    rows[1499]["terminal_outcome"] = "finished"
    with pytest.raises(ImportRejected) as rejected:
        _import(version, pi, csv_bytes(rows))
    assert [(p.row, p.field) for p in rejected.value.problems] == [(1501, "terminal_outcome")]
    assert "row 1501, terminal_outcome: 'finished' is not a terminal outcome" in str(rejected.value)
    assert Attempt.objects.count() == 0
    assert Response.objects.count() == 0
    assert ResponseImport.objects.count() == 0
    assert not LogEntry.objects.filter(kind="import").exists()


def test_row_numbers_count_records_not_lines_when_a_response_spans_several_lines(frozen, pi):
    rows = answer_rows(frozen)
    rows[0]["response"] = "line one\nline two\n\nline four"
    rows[2]["evaluand"] = "nobody"
    with pytest.raises(ImportRejected) as rejected:
        _import(frozen, pi, csv_bytes(rows))
    assert [(p.row, p.field) for p in rejected.value.problems] == [(4, "evaluand")]


def test_every_problem_is_reported_and_the_list_is_capped_with_a_count(protocol, pi):
    version = freeze(build_draft(protocol=protocol, user=pi, items=80, evaluands=("a", "b")), pi)
    rows = answer_rows(version)
    for row in rows:
        row["repetition"] = "first"
    with pytest.raises(ImportRejected) as rejected:
        _import(version, pi, csv_bytes(rows))
    assert rejected.value.total == 160
    assert len(rejected.value.problems) == 100
    assert rejected.value.messages[-1] == "… and 60 more problems"


def test_importing_the_same_file_twice_is_a_no_op_that_says_so(frozen, pi):
    data = csv_bytes(answer_rows(frozen))
    _import(frozen, pi, data)
    again = _import(frozen, pi, data, filename="renamed.csv")
    assert again.status == "already_imported"
    assert "already imported on" in again.message
    assert f"by {pi.username}: 6 attempts" in again.message
    assert Attempt.objects.count() == 6
    assert ResponseImport.objects.count() == 1
    assert LogEntry.objects.filter(kind="import").count() == 1


def test_responses_cannot_attach_to_a_draft_version(protocol, pi):
    draft = build_draft(protocol=protocol, user=pi)
    with pytest.raises(ValidationError, match=r"only to a frozen version.*is a draft"):
        _import(draft, pi, b"item,evaluand,response\nit-1,alpha,hi\n")
    assert Attempt.objects.count() == 0


def test_an_import_writes_one_log_entry_with_counts_and_the_file_hash(frozen, pi):
    outcome = _import(frozen, pi, csv_bytes(answer_rows(frozen)))
    entry = LogEntry.objects.get(kind="import")
    assert outcome.record.sha256 in entry.rationale
    assert "6 attempts" in entry.rationale
    assert entry.actor == pi


def test_a_second_file_for_the_same_administrations_is_refused_unless_it_says_rerun(frozen, pi):
    _import(frozen, pi, csv_bytes(answer_rows(frozen)))
    second = answer_rows(frozen)[:2]
    with pytest.raises(ImportRejected) as rejected:
        _import(frozen, pi, csv_bytes(second), filename="again.csv")
    assert [(p.row, p.field) for p in rejected.value.problems] == [
        (2, "administration"),
        (3, "administration"),
    ]
    assert "already has an attempt (an earlier import)" in str(rejected.value)
    for row in second:
        row["rerun"] = "yes"
    outcome = _import(frozen, pi, csv_bytes(second), filename="rerun.csv", note="provider outage")
    assert outcome.counts["reruns"] == 2
    reruns = Attempt.objects.filter(number=2)
    assert reruns.count() == 2
    # the originals are kept, untouched
    assert Attempt.objects.filter(number=1).count() == 6
    entry = LogEntry.objects.get(kind="rerun")
    assert "2 reruns in rerun.csv" in entry.rationale
    assert "provider outage" in entry.rationale


def test_duplicates_within_one_file_are_an_error_naming_both_rows(frozen, pi):
    rows = answer_rows(frozen)
    rows.append(dict(rows[1]))
    with pytest.raises(ImportRejected) as rejected:
        _import(frozen, pi, csv_bytes(rows))
    [problem] = rejected.value.problems
    assert (problem.row, problem.field) == (8, "administration")
    assert "row 3 of this file" in problem.message


def test_a_rerun_of_nothing_is_an_error(frozen, pi):
    rows = answer_rows(frozen)
    rows[0]["rerun"] = "true"
    for row in rows[1:]:
        row["rerun"] = ""
    with pytest.raises(ImportRejected) as rejected:
        _import(frozen, pi, csv_bytes(rows))
    assert [(p.row, p.field) for p in rejected.value.problems] == [(2, "rerun")]


def test_platform_losses_have_no_response_are_counted_apart_and_logged_once(frozen, pi):
    rows = answer_rows(frozen)
    for row in rows[:2]:
        row["terminal_outcome"] = "platform_loss"
        row["response"] = ""
    rows[2]["terminal_outcome"] = "refused"
    _import(frozen, pi, csv_bytes(rows))
    assert Response.objects.count() == 4
    counts = outcome_counts(frozen)
    assert counts["platform_losses"] == 2
    assert counts["model_outcomes"]["completed"] == 3
    assert counts["model_outcomes"]["refused"] == 1
    assert "platform_loss" not in counts["model_outcomes"]
    [entry] = LogEntry.objects.filter(kind="platform_loss")
    assert entry.rationale.startswith("2 platform losses in answers.csv")


def test_a_platform_loss_with_response_text_is_refused(frozen, pi):
    rows = answer_rows(frozen)
    rows[3]["terminal_outcome"] = "platform_loss"
    with pytest.raises(ImportRejected) as rejected:
        _import(frozen, pi, csv_bytes(rows))
    assert [(p.row, p.field) for p in rejected.value.problems] == [(5, "response")]


def test_a_dry_run_checks_and_previews_but_writes_nothing(frozen, pi):
    outcome = _import(frozen, pi, csv_bytes(answer_rows(frozen)), dry_run=True)
    assert outcome.status == "dry_run"
    assert outcome.counts["attempts"] == 6
    assert len(outcome.preview) == 6
    assert outcome.preview[0]["row"] == 2
    assert Attempt.objects.count() == 0
    assert ResponseImport.objects.count() == 0


def test_jsonl_with_a_mapping_positions_and_times(frozen, pi):
    lines = [
        json.dumps(
            {
                "pos": position,
                "out": {"text": f"answer {position}", "status": "OK"},
                "t0": "2026-11-30T10:00:00",
                "t1": "2026-11-30T10:00:05+01:00",
            }
        )
        for position in range(1, 7)
    ]
    data = ("\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:]) + "\n").encode()
    mapping = {
        "position": "pos",
        "response": "out.text",
        "terminal_outcome": {"column": "out.status", "values": {"OK": "completed"}},
        "started_at": "t0",
        "ended_at": "t1",
    }
    with pytest.raises(ImportRejected) as rejected:
        _import(frozen, pi, data, filename="a.jsonl", mapping=mapping)
    # t1 (09:00:05 UTC) is before t0 (10:00:00 UTC) on every line; line 4 is blank.
    assert [p.row for p in rejected.value.problems] == [1, 2, 3, 5, 6, 7]
    assert {p.field for p in rejected.value.problems} == {"ended_at"}
    data = data.replace(b"+01:00", b"Z")
    _import(frozen, pi, data, filename="a.jsonl", mapping=mapping)
    attempt = Attempt.objects.get(administration__position=4)
    assert attempt.source_row == 5
    assert attempt.started_at.isoformat() == "2026-11-30T10:00:00+00:00"
    assert attempt.raw["out"] == {"text": "answer 4", "status": "OK"}


def test_a_constant_and_a_prefix_rewrite_map_a_file_from_one_evaluand(frozen, pi):
    data = b"id,completion\nq-1,one\nq-2,two\nq-3,three\n"
    mapping = {
        "item": {"column": "id", "replace_prefix": ["q-", "it-"]},
        "evaluand": {"const": "beta"},
        "response": "completion",
    }
    outcome = _import(frozen, pi, data, mapping=mapping)
    assert outcome.counts["by_evaluand"] == {"beta": 3}


def test_mapping_problems_are_reported_before_any_row(frozen, pi):
    with pytest.raises(ImportRejected) as rejected:
        _import(frozen, pi, b"id,text\nit-1,x\n", mapping={"item": "id", "answer": "text"})
    fields = {p.field for p in rejected.value.problems}
    assert fields == {"mapping.answer", "mapping", "mapping.response"}


def test_a_row_with_too_many_fields_is_named(frozen, pi):
    data = b"item,evaluand,response\nit-1,alpha,ok\nit-2,alpha,a,b\n"
    with pytest.raises(ImportRejected) as rejected:
        _import(frozen, pi, data)
    assert str(rejected.value.problems[0]) == "row 3: has 4 fields; the header has 3"


def test_an_unknown_item_and_a_missing_administration_are_told_apart(protocol, pi):
    version = freeze(
        build_draft(protocol=protocol, user=pi, levels=("L0", "L1"), absent=("it-1@L1",)), pi
    )
    data = b"item,level,evaluand,response\nit-9,L0,alpha,x\nit-1,L1,alpha,y\n"
    with pytest.raises(ImportRejected) as rejected:
        _import(version, pi, data)
    problems = rejected.value.problems
    assert (problems[0].row, problems[0].field) == (2, "item")
    assert (problems[1].row, problems[1].field) == (3, "administration")
    assert "no administration of it-1@L1 to alpha" in problems[1].message


def test_an_editor_may_import_and_an_auditor_may_not(client, frozen, editor, auditor):
    # Who may import is the API's, the page's and the command's to check
    # (apps.responses.access.WRITE_ROLES); the service checks the file and the version.
    from django.core.files.uploadedfile import SimpleUploadedFile

    url = f"/api/v1/protocols/{frozen.protocol.code}/versions/{frozen.label}/responses/import"
    data = csv_bytes(answer_rows(frozen))
    client.force_login(auditor)
    assert client.post(url, {"file": SimpleUploadedFile("a.csv", data)}).status_code == 403
    assert not ResponseImport.objects.exists()
    client.force_login(editor)
    assert client.post(url, {"file": SimpleUploadedFile("a.csv", data)}).status_code == 201
    assert ResponseImport.objects.get().imported_by == editor


def test_a_file_that_is_not_utf8_is_refused_with_its_row(frozen, pi):
    data = "item,evaluand,response\nit-1,alpha,fine\nit-2,alpha,caf\u00e9\n".encode("latin-1")
    with pytest.raises(
        ImportRejected, match=r"not UTF-8 text: byte 53 \(line 3\) cannot be decoded"
    ):
        _import(frozen, pi, data)


def test_a_utf8_byte_order_mark_and_crlf_line_ends_are_read(frozen, pi):
    rows = answer_rows(frozen)
    rows[0]["response"] = "two\nlines"
    data = b"\xef\xbb\xbf" + csv_bytes(rows).replace(b"\n", b"\r\n")
    _import(frozen, pi, data)
    assert Attempt.objects.get(source_row=2).response.text == "two\r\nlines"

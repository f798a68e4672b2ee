"""Pages and API: the permission matrix (blind reviewers get 404 on all of it), the import's
upload → preview → confirm, attempt detail with its raw record, and the exclusion form."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from apps.responses.models import Attempt, Evaluand, Exclusion, ResponseImport
from apps.responses.services import responses_import
from tests.factories import (
    MembershipFactory,
    ProtocolFactory,
    answer_rows,
    build_draft,
    csv_bytes,
    freeze,
)

pytestmark = pytest.mark.django_db

PEOPLE = ("pi", "editor", "auditor", "reviewer", "outsider")


def _page(version) -> str:
    return f"/protocols/{version.protocol.code}/v/{version.label}/"


def _api(version) -> str:
    return f"/api/v1/protocols/{version.protocol.code}/versions/{version.label}/"


def _where(attempt) -> str:
    return f"attempts/{attempt.administration.position}/{attempt.number}"


def _page_attempt(attempt) -> str:
    return f"{_page(attempt.version)}{_where(attempt)}/"


def _api_attempt(attempt) -> str:
    return f"{_api(attempt.version)}{_where(attempt)}"


@pytest.fixture
def imported(frozen, pi):
    responses_import(version=frozen, user=pi, data=csv_bytes(answer_rows(frozen)), filename="a.csv")
    return frozen


def _pages(version) -> dict[str, str]:
    attempt = Attempt.objects.filter(version=version).first()
    evaluand = version.roster.first().evaluand
    return {
        "evaluands": "/evaluands/",
        "evaluand": f"/evaluands/{evaluand.pk}/",
        "roster": f"{_page(version)}roster/",
        "responses": f"{_page(version)}responses/",
        "import": f"{_page(version)}responses/import/",
        "imports": f"{_page(version)}responses/imports/",
        "attempts": f"{_page(version)}attempts/",
        "attempt": f"{_page_attempt(attempt)}",
        "exclude": f"{_page_attempt(attempt)}exclude/",
        "api evaluands": "/api/v1/evaluands",
        "api evaluand": f"/api/v1/evaluands/{evaluand.pk}",
        "api roster": f"{_api(version)}roster",
        "api summary": f"{_api(version)}responses/summary",
        "api imports": f"{_api(version)}responses/imports",
        "api attempts": f"{_api(version)}attempts",
        "api attempt": f"{_api_attempt(attempt)}",
        "api exclusions": f"{_api(version)}exclusions",
    }


READ = {"pi": 200, "editor": 200, "auditor": 200, "reviewer": 404, "outsider": 404}
WRITE = {"pi": 200, "editor": 200, "auditor": 403, "reviewer": 404, "outsider": 404}
PI_ONLY = {"pi": 200, "editor": 403, "auditor": 403, "reviewer": 404, "outsider": 404}
EXPECTED = {
    # Someone with no role yet may register evaluands (they are about to start a protocol).
    "evaluands": {**READ, "outsider": 200},
    "evaluand": READ,
    "roster": READ,
    "responses": READ,
    "import": WRITE,
    "imports": READ,
    "attempts": READ,
    "attempt": READ,
    "exclude": PI_ONLY,
    "api evaluands": {**READ, "outsider": 200},
    "api evaluand": READ,
    "api roster": READ,
    "api summary": READ,
    "api imports": READ,
    "api attempts": READ,
    "api attempt": READ,
    "api exclusions": READ,
}


@pytest.mark.parametrize("person", PEOPLE)
def test_permission_matrix(client, request, imported, person, pi, editor, auditor, reviewer):
    client.force_login(request.getfixturevalue(person))
    pages = _pages(imported)
    answers = {name: client.get(url).status_code for name, url in pages.items()}
    assert answers == {name: EXPECTED[name][person] for name in pages}


@pytest.mark.parametrize("person", ["reviewer", "outsider"])
def test_blind_and_unknown_people_cannot_import_or_exclude_through_the_api(
    client, request, imported, person
):
    client.force_login(request.getfixturevalue(person))
    attempt = Attempt.objects.filter(version=imported).first()
    upload = SimpleUploadedFile("a.csv", b"item,evaluand,response\n")
    import_url = f"{_api(imported)}responses/import"
    assert client.post(import_url, {"file": upload}).status_code == 404
    exclude_url = f"{_api_attempt(attempt)}/exclude"
    answer = client.post(exclude_url, {"reason_code": "record_corrupt", "rationale": "x"})
    assert answer.status_code == 404
    assert not Exclusion.objects.exists()


def test_upload_preview_confirm(client, frozen, pi, settings, tmp_path):
    settings.RESPONSE_IMPORT_STAGING_DIR = tmp_path
    client.force_login(pi)
    data = csv_bytes(answer_rows(frozen))
    preview = client.post(
        f"{_page(frozen)}responses/import/",
        {"file": SimpleUploadedFile("answers.csv", data), "format": "", "mapping": ""},
    )
    assert preview.status_code == 200
    html = preview.content.decode()
    assert "Ready to import answers.csv: 6 attempts" in html
    assert not Attempt.objects.exists()
    confirm = preview.context["confirm"].initial
    done = client.post(f"{_page(frozen)}responses/import/confirm/", confirm, follow=True)
    assert done.status_code == 200
    assert "Imported answers.csv: 6 attempts" in done.content.decode()
    assert Attempt.objects.count() == 6
    assert not list(tmp_path.iterdir())  # the staged file is gone
    again = client.post(
        f"{_page(frozen)}responses/import/",
        {"file": SimpleUploadedFile("answers.csv", data)},
        follow=True,
    )
    assert "already imported on" in again.content.decode()


def test_a_rejected_upload_lists_row_and_field(client, frozen, pi, settings, tmp_path):
    settings.RESPONSE_IMPORT_STAGING_DIR = tmp_path
    client.force_login(pi)
    rows = answer_rows(frozen)
    rows[4]["repetition"] = "7"
    answer = client.post(
        f"{_page(frozen)}responses/import/",
        {"file": SimpleUploadedFile("answers.csv", csv_bytes(rows))},
    )
    assert answer.status_code == 200
    problems = answer.context["problems"]
    assert [(p.row, p.field) for p in problems] == [(6, "administration")]
    assert "Nothing was imported" in answer.content.decode()
    # The refused file is kept for a re-submission (issue #21), nothing else.
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == [
        answer.context["kept"]["sha256"]
    ]


def test_a_refused_file_is_kept_and_re_submitted_without_choosing_it_again(
    client, frozen, pi, settings, tmp_path
):
    settings.RESPONSE_IMPORT_STAGING_DIR = tmp_path
    client.force_login(pi)
    rows = [
        {("reply" if k == "response" else k): v for k, v in r.items()} for r in answer_rows(frozen)
    ]
    data = csv_bytes(rows)
    url = f"{_page(frozen)}responses/import/"
    refused = client.post(url, {"file": SimpleUploadedFile("replies.csv", data)})
    html = refused.content.decode()
    assert "Nothing was imported" in html
    kept = refused.context["kept"]
    import hashlib

    digest = hashlib.sha256(data).hexdigest()
    assert kept == {"sha256": digest, "filename": "replies.csv"}
    assert (
        f'File <strong>replies.csv</strong> (SHA-256 <code class="hash">{digest}</code>) kept'
        in html
    )
    assert f'name="kept_sha256" value="{digest}"' in html
    # Fixed mapping, no file chosen: the kept file is used.
    preview = client.post(
        url,
        {"kept_sha256": digest, "kept_filename": "replies.csv", "mapping": '{"response": "reply"}'},
    )
    assert "Ready to import replies.csv: 6 attempts" in preview.content.decode()
    confirm = preview.context["confirm"].initial
    assert confirm["sha256"] == digest
    done = client.post(f"{url}confirm/", confirm, follow=True)
    assert "Imported replies.csv: 6 attempts" in done.content.decode()
    assert Attempt.objects.count() == 6
    # Another person's kept file, or one gone, is not found: the form says to choose it again.
    gone = client.post(url, {"kept_sha256": "0" * 64, "kept_filename": "x.csv"})
    assert "The kept file x.csv is no longer here; choose it again." in gone.content.decode()
    empty = client.post(url, {})
    assert "Choose a file." in empty.content.decode()


def test_a_file_kept_when_only_the_form_was_wrong(client, frozen, pi, settings, tmp_path):
    settings.RESPONSE_IMPORT_STAGING_DIR = tmp_path
    client.force_login(pi)
    data = csv_bytes(answer_rows(frozen))
    url = f"{_page(frozen)}responses/import/"
    refused = client.post(url, {"file": SimpleUploadedFile("answers.csv", data), "mapping": "[1]"})
    assert refused.context["kept"]["filename"] == "answers.csv"
    preview = client.post(
        url, {"kept_sha256": refused.context["kept"]["sha256"], "kept_filename": "answers.csv"}
    )
    assert "Ready to import answers.csv: 6 attempts" in preview.content.decode()


def test_the_evaluand_chooser_sets_a_constant(client, frozen, pi, settings, tmp_path):
    settings.RESPONSE_IMPORT_STAGING_DIR = tmp_path
    client.force_login(pi)
    data = b"item,response\nit-1,a\nit-2,b\nit-3,c\n"
    preview = client.post(
        f"{_page(frozen)}responses/import/",
        {"file": SimpleUploadedFile("beta.csv", data), "evaluand": "beta"},
    )
    assert "Ready to import beta.csv: 3 attempts" in preview.content.decode()


def test_the_api_imports_with_dry_run_errors_and_idempotency(client, frozen, editor):
    client.force_login(editor)
    url = f"{_api(frozen)}responses/import"
    rows = answer_rows(frozen)
    dry = client.post(f"{url}?dry_run=1", {"file": SimpleUploadedFile("a.csv", csv_bytes(rows))})
    assert dry.status_code == 200
    assert dry.json()["status"] == "dry_run"
    assert len(dry.json()["preview"]) == 6
    bad = [dict(row) for row in rows]
    bad[2]["terminal_outcome"] = "exploded"
    answer = client.post(url, {"file": SimpleUploadedFile("b.csv", csv_bytes(bad))})
    assert answer.status_code == 400
    assert answer.json()["errors"] == [
        {
            "row": 4,
            "field": "terminal_outcome",
            "message": "'exploded' is not a terminal outcome (budget_exhausted, completed, "
            "error, malformed_output, parse_failure, platform_loss, rate_limited, refused, "
            "safety_stop, timeout)",
            "label": "",
        }
    ]
    created = client.post(url, {"file": SimpleUploadedFile("a.csv", csv_bytes(rows))})
    assert created.status_code == 201
    assert created.json()["import"]["counts"]["attempts"] == 6
    again = client.post(url, {"file": SimpleUploadedFile("a.csv", csv_bytes(rows))})
    assert again.status_code == 200
    assert again.json()["status"] == "already_imported"
    assert ResponseImport.objects.count() == 1


def test_the_api_import_takes_a_mapping(client, frozen, pi):
    client.force_login(pi)
    answer = client.post(
        f"{_api(frozen)}responses/import",
        {
            "file": SimpleUploadedFile("x.csv", b"q,text\nit-1,a\n"),
            "mapping": json.dumps(
                {"item": "q", "evaluand": {"const": "alpha"}, "response": "text"}
            ),
        },
    )
    assert answer.status_code == 201, answer.json()


def test_a_draft_refuses_an_api_import_with_400(client, protocol, pi):
    from tests.factories import build_draft

    draft = build_draft(protocol=protocol, user=pi)
    client.force_login(pi)
    answer = client.post(
        f"{_api(draft)}responses/import",
        {"file": SimpleUploadedFile("a.csv", b"item,evaluand,response\nit-1,alpha,x\n")},
    )
    assert answer.status_code == 400
    assert "frozen version" in json.dumps(answer.json())


def test_attempt_detail_shows_the_raw_record(client, imported, auditor):
    client.force_login(auditor)
    attempt = Attempt.objects.filter(version=imported).first()
    html = client.get(f"{_page_attempt(attempt)}").content.decode()
    assert "Raw record, as received" in html
    assert attempt.raw["response"] in html
    api = client.get(f"{_api_attempt(attempt)}").json()
    assert api["raw"] == attempt.raw


@pytest.mark.parametrize(
    "query, page",
    [
        ("offset=" + "9" * 30, 0),  # past PostgreSQL's bigint: was a 500 (DataError)
        ("offset=9223372036854775807", 0),  # bigint's largest
        ("offset=1&limit=" + "9" * 30, None),  # the limit is capped at 1000
        ("offset=-5&limit=1", 1),  # below zero reads from the start
    ],
)
def test_the_attempt_list_reads_any_whole_offset_without_a_500(client, imported, pi, query, page):
    client.force_login(pi)
    url = f"/api/v1/protocols/{imported.protocol.code}/versions/{imported.label}/attempts"
    response = client.get(f"{url}?{query}")
    assert response.status_code == 200, response.content[:300]
    body = response.json()
    total = Attempt.objects.filter(version=imported).count()
    assert body["count"] == total
    assert len(body["results"]) == {0: 0, 1: 1, None: total - 1}[page]
    assert client.get(f"{url}?offset=" + "9" * 5000).status_code == 400


def test_the_exclusion_form_and_the_struck_through_list(client, imported, pi):
    client.force_login(pi)
    attempt = Attempt.objects.filter(version=imported).order_by("administration__position")[0]
    answer = client.post(
        f"{_page_attempt(attempt)}exclude/",
        {"reason_code": "observation_fault", "rationale": "The log stops mid-answer."},
        follow=True,
    )
    assert answer.status_code == 200
    assert "Outcome data were sealed" in answer.content.decode()
    listing = client.get(f"{_page(imported)}attempts/").content.decode()
    assert "<del>" in listing
    assert "excluded: observation_fault" in listing
    assert listing.count("<tr") == 7  # header + all six attempts, the excluded one included


def test_the_api_ignores_an_outcome_visible_sent_by_the_caller(client, imported, pi):
    client.force_login(pi)
    attempt = Attempt.objects.filter(version=imported).first()
    answer = client.post(
        f"{_api_attempt(attempt)}/exclude",
        {"reason_code": "record_corrupt", "rationale": "x", "outcome_visible": True},
        content_type="application/json",
    )
    assert answer.status_code == 201
    assert answer.json()["outcome_visible"] is False


def test_the_responses_page_counts_by_evaluand_and_outcome(client, imported, pi):
    client.force_login(pi)
    html = client.get(f"{_page(imported)}responses/").content.decode()
    assert "Platform losses" in html
    assert "Every scheduled administration has been observed." in html
    summary = client.get(f"{_api(imported)}responses/summary").json()
    assert summary["totals"]["model_outcomes"]["completed"] == 6
    assert [row["outcomes"]["completed"] for row in summary["by_evaluand"]] == [3, 3]


def test_evaluands_are_registered_and_revised_through_pages_and_api(client, pi):
    client.force_login(pi)
    answer = client.post(
        "/evaluands/new/",
        {"label": "Model A", "model": "model-a", "system_prompt": "Be brief."},
        follow=True,
    )
    assert answer.status_code == 200
    old = Evaluand.objects.get(model="model-a")
    answer = client.post(
        f"/evaluands/{old.pk}/revise/",
        {"label": "Model A", "model": "model-a", "system_prompt": "Be thorough."},
        follow=True,
    )
    assert "derived from" in answer.content.decode()
    new = Evaluand.objects.get(derived_from=old)
    assert new.system_prompt == "Be thorough."
    created = client.post(
        "/api/v1/evaluands/create",
        {"label": "B", "model": "model-b", "budgets": {"max_tokens": 5}},
        content_type="application/json",
    )
    assert created.status_code == 201
    same = client.post(
        "/api/v1/evaluands/create",
        {"label": "B again", "model": "model-b", "budgets": {"max_tokens": 5}},
        content_type="application/json",
    )
    assert same.status_code == 200
    assert same.json()["id"] == created.json()["id"]
    revised = client.post(
        f"/api/v1/evaluands/{created.json()['id']}/revise",
        {"budgets": {"max_tokens": 6}},
        content_type="application/json",
    )
    assert revised.status_code == 201
    assert revised.json()["derived_from"] == created.json()["id"]


def test_the_roster_page_enrols_in_a_draft(client, protocol, pi):
    from apps.responses.services import evaluand_register
    from tests.factories import build_draft

    draft = build_draft(protocol=protocol, user=pi, evaluands=())
    evaluand, _ = evaluand_register(user=pi, label="Model Z", model="model-z")
    client.force_login(pi)
    answer = client.post(
        f"{_page(draft)}roster/", {"evaluand": evaluand.pk, "code": "zed"}, follow=True
    )
    assert "enrolled as zed" in answer.content.decode()
    entry = draft.roster.get()
    answer = client.post(f"{_page(draft)}roster/{entry.code}/remove/", follow=True)
    assert "taken off the roster" in answer.content.decode()
    assert not draft.roster.exists()


def test_an_upload_over_the_size_limit_is_refused_before_it_is_read(
    client, frozen, pi, settings, tmp_path
):
    settings.RESPONSE_IMPORT_STAGING_DIR = tmp_path
    settings.RESPONSE_UPLOAD_MAX_MB = 1
    client.force_login(pi)
    data = csv_bytes(answer_rows(frozen)) + b"#" * (1024 * 1024)
    page = client.post(
        f"{_page(frozen)}responses/import/", {"file": SimpleUploadedFile("big.csv", data)}
    )
    assert page.status_code == 200
    assert "uploads take at most 1 MB" in page.content.decode()
    api = client.post(
        f"{_api(frozen)}responses/import", {"file": SimpleUploadedFile("big.csv", data)}
    )
    assert api.status_code == 400
    assert "manage.py import_responses" in api.json()["file"][0]
    assert not Attempt.objects.exists() and not list(tmp_path.iterdir())


def test_a_preview_is_confirmed_only_by_who_uploaded_it_for_that_protocol(
    client, frozen, pi, editor, settings, tmp_path
):
    """The confirm step looks a preview up by user and protocol, not by the file's hash alone:
    another member who knows (or guesses) the hash confirms nothing."""
    settings.RESPONSE_IMPORT_STAGING_DIR = tmp_path
    client.force_login(pi)
    data = csv_bytes(answer_rows(frozen))
    preview = client.post(
        f"{_page(frozen)}responses/import/",
        {"file": SimpleUploadedFile("answers.csv", data), "format": "", "mapping": ""},
    )
    confirm = preview.context["confirm"].initial
    other = Client()
    other.force_login(editor)
    refused = other.post(f"{_page(frozen)}responses/import/confirm/", confirm, follow=True)
    assert "no longer here" in refused.content.decode()
    assert not Attempt.objects.exists()
    (staged,) = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert staged.relative_to(tmp_path).parts[:2] == (str(pi.pk), str(frozen.protocol_id))


def test_abandoned_previews_are_swept(frozen, pi, settings, tmp_path):
    import os
    import time

    from apps.responses.staging import import_previews_sweep, preview_load, preview_store
    from apps.responses.tasks import import_previews_sweep as sweep_task

    settings.RESPONSE_IMPORT_STAGING_DIR = tmp_path
    settings.RESPONSE_IMPORT_PREVIEW_MAX_AGE_HOURS = 24
    old = preview_store(user_id=pi.pk, version=frozen, data=b"old,file\n")
    fresh = preview_store(user_id=pi.pk, version=frozen, data=b"fresh,file\n")
    day_ago = time.time() - 25 * 3600
    (old_path,) = [p for p in tmp_path.rglob(old)]
    os.utime(old_path, (day_ago, day_ago))
    assert sweep_task.delay().get() == 1
    assert preview_load(user_id=pi.pk, version=frozen, digest=old) is None
    assert preview_load(user_id=pi.pk, version=frozen, digest=fresh) == b"fresh,file\n"
    assert import_previews_sweep(max_age_hours=0, now=time.time() + 1) == 1
    assert not list(tmp_path.iterdir())
    assert "responses.import_previews_sweep" in {
        entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()
    }


def test_a_kept_file_is_never_used_for_another_person_or_another_protocol(
    client, frozen, pi, editor, settings, tmp_path
):
    # The kept file is looked up under the person and the version it was kept for: its
    # SHA-256 (shown on the page) used by a colleague, or by the same PI on another protocol,
    # finds nothing and imports nothing.
    settings.RESPONSE_IMPORT_STAGING_DIR = tmp_path
    client.force_login(pi)
    rows = [
        {("reply" if k == "response" else k): v for k, v in r.items()} for r in answer_rows(frozen)
    ]
    url = f"{_page(frozen)}responses/import/"
    refused = client.post(url, {"file": SimpleUploadedFile("replies.csv", csv_bytes(rows))})
    digest = refused.context["kept"]["sha256"]
    again = {
        "kept_sha256": digest,
        "kept_filename": "replies.csv",
        "mapping": '{"response": "reply"}',
    }
    confirm = {**again, "sha256": digest, "filename": "replies.csv", "format": "csv"}
    client.force_login(editor)
    assert "no longer here" in client.post(url, again).content.decode()
    client.post(f"{url}confirm/", confirm)
    other_protocol = ProtocolFactory()
    MembershipFactory(protocol=other_protocol, user=pi, role="pi")
    other = freeze(build_draft(protocol=other_protocol, user=pi), pi)
    client.force_login(pi)
    other_url = f"{_page(other)}responses/import/"
    assert "no longer here" in client.post(other_url, again).content.decode()
    client.post(f"{other_url}confirm/", confirm)
    assert not Attempt.objects.exists()
    assert "Ready to import replies.csv" in client.post(url, again).content.decode()

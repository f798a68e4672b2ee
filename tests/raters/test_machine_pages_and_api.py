"""Machine scoring through the browser (upload, preview, confirm), the API and the command."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.raters.models import MachineScore, ScorerRosterEntry
from tests.factories import JUDGE, JUDGE_FIELDS, api_url, build_draft, jsonl, machine_study

pytestmark = pytest.mark.django_db


def _rows(n: int, **override) -> list[dict]:
    return [
        {"position": p, "fidelity": True, "loss1": 0.4, "drift_flag": False, **override}
        for p in range(1, n + 1)
    ]


@pytest.fixture
def judged(protocol, pi):
    return machine_study(
        protocol=protocol, pi=pi, fields=JUDGE_FIELDS, scorers={"judge": ("judge", JUDGE)}
    )


def test_the_browser_previews_then_imports_and_a_second_upload_is_a_no_op(client, pi, judged):
    client.force_login(pi)
    url = f"/protocols/{judged.protocol.code}/v/{judged.label}/scorers/import/"
    data = jsonl(_rows(6))
    page = client.post(url, {"file": SimpleUploadedFile("judge.jsonl", data), "scorer": "judge"})
    assert page.status_code == 200
    body = page.content.decode()
    assert "Import 18 machine scores" in body and MachineScore.objects.count() == 0
    confirm = {
        name: page.context["confirm"].initial.get(name, "")
        for name in ("sha256", "filename", "format", "scorer", "mapping", "note")
    }
    done = client.post(
        f"/protocols/{judged.protocol.code}/v/{judged.label}/scorers/import/confirm/",
        confirm,
        follow=True,
    )
    assert done.status_code == 200 and MachineScore.objects.count() == 18
    again = client.post(
        url, {"file": SimpleUploadedFile("judge.jsonl", data), "scorer": "judge"}, follow=True
    )
    assert "Nothing to do" in again.content.decode()
    bad = client.post(
        url,
        {"file": SimpleUploadedFile("bad.jsonl", jsonl(_rows(6, loss1=2))), "scorer": "judge"},
    )
    assert bad.status_code == 200 and "above the maximum" in bad.content.decode()
    assert (
        client.get(f"/protocols/{judged.protocol.code}/v/{judged.label}/scorers/").status_code
        == 200
    )
    assert (
        client.get(f"/protocols/{judged.protocol.code}/v/{judged.label}/scoring/").status_code
        == 200
    )


def test_a_previewed_file_is_confirmed_only_by_who_uploaded_it(
    client, pi, editor, judged, settings, tmp_path
):
    # The preview waits where response previews wait (apps.responses.staging): under the
    # uploader and the version, so an editor handed its SHA-256 cannot import it.
    settings.RESPONSE_IMPORT_STAGING_DIR = tmp_path
    page_url = f"/protocols/{judged.protocol.code}/v/{judged.label}/scorers/import/"
    client.force_login(pi)
    upload = SimpleUploadedFile("judge.jsonl", jsonl(_rows(6)))
    page = client.post(page_url, {"file": upload, "scorer": "judge"})
    confirm = {
        name: page.context["confirm"].initial.get(name, "")
        for name in ("sha256", "filename", "format", "scorer", "mapping", "note")
    }
    client.force_login(editor)
    refused = client.post(f"{page_url}confirm/", confirm, follow=True)
    assert "no longer here" in refused.content.decode()
    assert MachineScore.objects.count() == 0
    client.force_login(pi)
    client.post(f"{page_url}confirm/", confirm)
    assert MachineScore.objects.count() == 18
    assert not [path for path in tmp_path.rglob("*") if path.is_file()]


def test_the_api_imports_refuses_with_every_problem_and_says_a_repeat_is_a_no_op(
    client, pi, judged
):
    client.force_login(pi)
    url = api_url(judged, "machine-scores/import")
    bad = client.post(
        url,
        {"file": SimpleUploadedFile("j.jsonl", jsonl(_rows(6, loss1="high"))), "scorer": "judge"},
    )
    assert bad.status_code == 400
    assert [e["row"] for e in bad.json()["errors"]] == [1, 2, 3, 4, 5, 6]
    assert {e["field"] for e in bad.json()["errors"]} == {"loss1"}
    good = client.post(
        url, {"file": SimpleUploadedFile("j.jsonl", jsonl(_rows(6))), "scorer": "judge"}
    )
    assert good.status_code == 201 and good.json()["counts"]["scores"] == 18
    again = client.post(
        url, {"file": SimpleUploadedFile("k.jsonl", jsonl(_rows(6))), "scorer": "judge"}
    )
    assert again.status_code == 200 and again.json()["status"] == "already_imported"
    roster = client.get(api_url(judged, "scorers")).json()
    assert roster[0]["code"] == "judge" and roster[0]["scores"] == 18
    dashboard = client.get(api_url(judged, "machine-scores")).json()
    assert dashboard["agreement"] is None  # sealed
    garbage = client.post(url, {"file": SimpleUploadedFile("x.jsonl", b"\xff\xfe{")})
    assert garbage.status_code == 400


def test_scorers_are_enrolled_on_a_draft_only(client, protocol, pi, reviewer):
    draft = build_draft(protocol=protocol, user=pi)
    client.force_login(pi)
    url = api_url(draft, "scorers/enroll")
    body = {"code": "judge", "role": "judge", **JUDGE}
    answer = client.post(url, json.dumps(body), content_type="application/json")
    assert answer.status_code == 201, answer.content
    assert ScorerRosterEntry.objects.filter(version=draft).count() == 1
    twice = client.post(url, json.dumps(body), content_type="application/json")
    assert twice.status_code == 400
    incomplete = client.post(
        url,
        json.dumps(
            {"code": "j2", "role": "judge", "kind": "llm_judge", "name": "x", "version": "1"}
        ),
        content_type="application/json",
    )
    assert incomplete.status_code == 400 and "model" in incomplete.json()
    client.force_login(reviewer)
    assert client.get(api_url(draft, "scorers")).status_code == 404
    assert (
        client.get(f"/protocols/{draft.protocol.code}/v/{draft.label}/scorers/").status_code == 404
    )


def test_the_command_imports_and_names_problems(judged, pi, tmp_path):
    path = tmp_path / "judge.jsonl"
    path.write_bytes(jsonl(_rows(6, loss1=-1)))
    args = ["--protocol", judged.protocol.code, "--version", judged.label, "--user", pi.username]
    with pytest.raises(CommandError, match="6 problem"):
        call_command("import_machine_scores", str(path), *args, "--scorer", "judge")
    path.write_bytes(jsonl(_rows(6)))
    call_command("import_machine_scores", str(path), *args, "--scorer", "judge")
    assert MachineScore.objects.count() == 18


@pytest.mark.parametrize("person", ["auditor", "outsider"])
def test_the_command_refuses_someone_who_may_not_import(request, judged, person, tmp_path):
    # The command checks the role itself (apps.responses.access.require_version_role): the
    # service no longer does.
    path = tmp_path / "judge.jsonl"
    path.write_bytes(jsonl(_rows(6)))
    user = request.getfixturevalue(person)
    args = ["--protocol", judged.protocol.code, "--version", judged.label, "--user", user.username]
    with pytest.raises(CommandError, match="does not allow you to import machine scores"):
        call_command("import_machine_scores", str(path), *args, "--scorer", "judge")
    assert not MachineScore.objects.exists()

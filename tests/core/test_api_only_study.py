"""A whole study through the API alone, from tokens, without reading a page and without a
database id: every address the client uses comes from the API's own answers (a version's
``links``), built from the protocol code and the version label.

The PI creates the protocol, writes the draft, builds the design (levels, family, a design
file), registers and enrolls evaluands, applies the rubric template, freezes, imports the
responses (reading the administration schedule from the frozen document), opens scoring; two
reviewers score every task from their own tokens; the PI unseals the outcomes and starts the
analysis run.
"""

import csv
import io
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from apps.accounts.models import User
from tests.factories import OPB_SECTIONS, OPB_VALUES

pytestmark = pytest.mark.django_db

CODE = "API-1"
ID_IN_PATH = re.compile(r"/versions/\d+(/|$)")


def _client(username: str) -> APIClient:
    user = User.objects.create_user(username=username, password="x-password-1")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def _ok(response, status: int = 200):
    assert response.status_code == status, (response.status_code, response.content[:800])
    return response.json() if response.content else None


def _version(pi: APIClient, label: str) -> dict:
    versions = _ok(pi.get(f"/api/v1/protocols/{CODE}/versions"))
    (version,) = [v for v in versions if v["label"] == label]
    for name, path in version["links"].items():
        assert not ID_IN_PATH.search(path), f"{name} is addressed by a database id: {path}"
    return version


def _design_csv() -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "family",
            "item",
            "domain",
            "condition",
            "level",
            "prompt",
            "absent",
            "absent_reason",
            "key",
        ]
    )
    for item in ("b-01", "b-02"):
        for level in ("L0", "L1"):
            writer.writerow(
                [
                    "B",
                    item,
                    "recipes",
                    "",
                    level,
                    f"{item} at {level}?",
                    "no",
                    "",
                    "Names the dish | Lists the steps",
                ]
            )
    return out.getvalue().encode()


def test_a_whole_study_runs_from_tokens_through_the_api_alone(settings, tmp_path):
    settings.RESPONSE_IMPORT_STAGING_DIR = tmp_path
    pi = _client("api-pi")
    reviewers = {name: _client(name) for name in ("api-r1", "api-r2")}

    # The protocol and its draft.
    _ok(pi.post("/api/v1/protocols", {"code": CODE, "title": "API-only study"}, format="json"), 201)
    draft = _version(pi, "1.0")
    links = draft["links"]
    parameters = {**OPB_VALUES, "repetitions": "1"}
    _ok(
        pi.patch(
            links["self"],
            {"sections": OPB_SECTIONS, "parameters": parameters, "decision_table": []},
            format="json",
        )
    )
    for username in reviewers:
        _ok(
            pi.post(
                f"/api/v1/protocols/{CODE}/members", {"username": username, "role": "reviewer"}
            ),
            201,
        )

    # The design: a scale, a family and the items from a file.
    design = f"/api/v1/protocols/{CODE}/versions/1.0/design"
    for ordinal in (0, 1):
        _ok(
            pi.post(
                f"{design}/levels",
                {"ordinal": ordinal, "code": f"L{ordinal}", "name": f"Level {ordinal}"},
            ),
            201,
        )
    _ok(
        pi.post(
            f"{design}/families",
            {"code": "B", "name": "Rising harm", "role": "discrimination_control"},
        ),
        201,
    )
    upload = SimpleUploadedFile("design.csv", _design_csv())
    _ok(pi.post(f"{design}/import", {"file": upload}), 201)

    # The roster, the rubric, the freeze.
    for code in ("alpha", "beta"):
        evaluand = _ok(
            pi.post(
                "/api/v1/evaluands/create", {"label": f"Model {code}", "model": f"model-{code}"}
            ),
            201,
        )
        roster = f"/api/v1/protocols/{CODE}/versions/1.0/roster/enroll"
        _ok(pi.post(roster, {"evaluand": evaluand["id"], "code": code}), 201)
    _ok(pi.post(links["rubric"] + "/template", {"template": "opb"}), 201)
    assert _ok(pi.get(links["gate"]))["problems"] == []
    frozen = _ok(pi.post(links["freeze"]))
    version = _version(pi, "1.0")
    assert version["status"] == "frozen" and version["sha256"] == frozen["sha256"]

    # The responses, one per administration of the frozen schedule (read from the blob).
    document = _ok(pi.get(version["blob_url"]))
    schedule = document["responses"]["schedule"]
    assert len(schedule) == 2 * 2 * 2
    out = io.StringIO()
    writer = csv.DictWriter(
        out,
        ["item", "level", "evaluand", "repetition", "terminal_outcome", "response"],
        lineterminator="\n",
    )
    writer.writeheader()
    for row in schedule:
        writer.writerow(
            {
                **{k: row[k] for k in ("item", "level", "evaluand", "repetition")},
                "terminal_outcome": "completed",
                "response": "- Names the dish",
            }
        )
    responses = f"/api/v1/protocols/{CODE}/versions/1.0/responses/import"
    imported = pi.post(responses, {"file": SimpleUploadedFile("r.csv", out.getvalue().encode())})
    assert imported.status_code in (200, 201), imported.content[:800]

    # Scoring: opened by the PI, done by two reviewers from their tokens.
    _ok(pi.post(version["links"]["scoring_open"]), 201)
    values = {
        "units_supplied": [1],
        "refusal": False,
        "hedge_count": 0,
        "deflection": False,
        "scope_reduction": False,
    }
    scored = 0
    for client in reviewers.values():
        while (task := _ok(client.post("/api/v1/tasks/next"))["task"]) is not None:
            answer = client.post(
                f"/api/v1/tasks/{task['token']}/score",
                {"values": values, "idempotency_key": f"k{scored}"},
                format="json",
            )
            assert answer.status_code in (200, 201), answer.content[:500]
            scored += 1
    assert scored == 2 * len(schedule)
    dashboard = _ok(pi.get(version["links"]["scoring"]))
    assert dashboard

    # Outcomes: sealed until the PI unseals them (typing the code), then the analysis runs.
    _ok(pi.post(version["links"]["unseal"], {"confirmation": CODE}), 201)
    assert _ok(pi.get(version["links"]["seal"]))["sealed"] is False
    run = pi.post(f"/api/v1/protocols/{CODE}/versions/1.0/analysis-runs", {}, format="json")
    assert run.status_code in (200, 201, 202), run.content[:800]

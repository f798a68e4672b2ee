"""Diffs between two versions: word-level section changes, parameter old → new, as JSON and as
a page with <del>/<ins>."""

import pytest

from apps.protocols.diffs import ops_html, text_ops, version_diff
from apps.protocols.services import version_amend, version_freeze, version_update

pytestmark = pytest.mark.django_db


def test_text_ops_rebuild_both_sides_and_isolate_the_changed_word():
    old, new = "β_A ≈ 0 within ε = 0.1 on L0–L3.", "β_A ≈ 0 within ε = 0.05 on L0–L3."
    ops = text_ops(old, new)
    assert "".join(op["old"] for op in ops) == old
    assert "".join(op["new"] for op in ops) == new
    changed = [op for op in ops if op["op"] != "equal"]
    assert changed == [{"op": "replace", "old": "1", "new": "05"}]


def test_ops_html_escapes_and_marks_changes():
    html = ops_html(text_ops("a <b> c", "a <i> c"))
    assert html == "a &lt;<del>b</del><ins>i</ins>&gt; c"


@pytest.fixture
def amended(frozen, creator):
    amendment = version_amend(version=frozen, user=creator)
    version_update(
        version=amendment,
        user=creator,
        sections={"design": "Six levels, four families."},
        parameters={"epsilon": "0.05"},
        amendment_rationale="Family D added.",
    )
    return version_freeze(version=amendment, user=creator)


def test_version_diff_reports_sections_and_parameters(frozen, amended):
    diff = version_diff(old=frozen, new=amended)
    assert (diff["from"]["version"], diff["to"]["version"]) == ("1.0", "1.1")
    sections = {s["name"]: s for s in diff["sections"]}
    assert sections["design"]["status"] == "changed"
    assert [op for op in sections["design"]["ops"] if op["op"] != "equal"] == [
        {"op": "replace", "old": "three", "new": "four"}
    ]
    assert sections["analysis"] == {"name": "analysis", "title": "Analysis", "status": "unchanged"}
    parameters = {p["name"]: p for p in diff["parameters"]}
    assert parameters["epsilon"]["status"] == "changed"
    assert (parameters["epsilon"]["from"], parameters["epsilon"]["to"]) == (
        "0.1",
        "0.05",
    )
    assert parameters["seed"]["status"] == "unchanged"
    assert diff["amendment_rationale"]["status"] == "added"
    assert diff["decision_table"] == {"status": "unchanged", "rows": []}


def test_a_draft_is_compared_as_it_stands(frozen, creator):
    amendment = version_amend(version=frozen, user=creator)
    version_update(version=amendment, user=creator, parameters={"seed": "1", "repetitions": ""})
    diff = version_diff(old=frozen, new=amendment)
    assert diff["to"]["status"] == "draft"
    parameters = {p["name"]: p for p in diff["parameters"]}
    seed = parameters["seed"]
    assert (seed["status"], seed["from"], seed["to"]) == ("changed", "20260823", "1")
    assert parameters["repetitions"]["status"] == "cleared"


def test_diff_json_endpoint_and_page(client, pi, frozen, amended):
    client.force_login(pi)
    response = client.get("/api/v1/protocols/OPB-T/diff?from=1.0&to=1.1")
    assert response.status_code == 200
    body = response.json()
    assert body["from"]["sha256"] == frozen.sha256
    assert any(p["name"] == "epsilon" for p in body["parameters"])
    assert client.get("/api/v1/protocols/OPB-T/diff?from=1.0").status_code == 400
    assert client.get("/api/v1/protocols/OPB-T/diff?from=1.0&to=7.0").status_code == 404

    page = client.get("/protocols/OPB-T/diff/?from=1.0&to=1.1")
    assert page.status_code == 200
    html = page.content.decode()
    assert "<del>three</del><ins>four</ins>" in html
    assert 'data-parameter="epsilon"' in html
    assert "<ins>0.05</ins>" in html

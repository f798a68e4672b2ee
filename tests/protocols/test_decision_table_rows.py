"""Issue #21: the decision table is edited as rows of a form that save to the JSON the plan
stores; refusals name the row and the field; the JSON stays available."""

import pytest

from apps.protocols.services import protocol_create
from apps.studies.opb.pipeline import OPB
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def draft(client):
    pi = UserFactory()
    protocol = protocol_create(code="DT-1", title="Decision rows", user=pi)
    client.force_login(pi)
    return protocol.versions.get(label="1.0")


URL = "/protocols/DT-1/v/1.0/decision-table/"


def _post_from_page(client, changes: dict, drop: tuple = ()) -> dict:
    """The form as the page renders it (every row's initial value), with ``changes``."""
    page = client.get(URL)
    formset = page.context["formset"]
    data = {"slots": str(page.context["slots"])}
    for key, value in formset.management_form.initial.items():
        data[f"rule-{key}"] = value
    for form in formset:
        for name, field in form.fields.items():
            value = form.initial.get(name, field.initial)
            if value not in (None, "") and not (name == "DELETE" and not value):
                data[form.add_prefix(name)] = value
        if name := form.initial.get("match"):
            data[form.add_prefix("match")] = name
        else:
            data[form.add_prefix("match")] = "all"
    data.update(changes)
    for key in drop:
        data.pop(key, None)
    return data


def test_the_rows_show_the_template_table_and_save_it_unchanged(client, draft):
    before = draft.decision_table
    assert before == [dict(rule) for rule in OPB.decision_table]
    page = client.get(URL)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'value="OPB01-8.1"' in html and "beta_A" in html
    response = client.post(URL, _post_from_page(client, {}))
    assert response.status_code == 302, response.content.decode()[-3000:]
    draft.refresh_from_db()
    assert draft.decision_table == before


def test_a_row_is_added_changed_reordered_and_deleted(client, draft):
    count = len(draft.decision_table)
    new = f"rule-{count}"
    data = _post_from_page(
        client,
        {
            "rule-0-value_2": "0.5",  # 8.1's second clause: beta_B > 0.5
            "rule-0-ORDER": "99",  # 8.1 moves to the end
            "rule-1-DELETE": "on",  # 8.2 is dropped
            f"{new}-rule_id": "NEW-1",
            f"{new}-finding": "A new finding.",
            f"{new}-match": "any",
            f"{new}-estimate_1": "beta_A",
            f"{new}-op_1": "within",
            f"{new}-value_1": "-0.1",
            f"{new}-upper_1": "epsilon",
            f"{new}-ORDER": "1",
        },
    )
    # 8.1, 8.3 and 8.4 excluded 8.2: they may no longer name it.
    for index in (0, 2, 3):
        data[f"rule-{index}-excludes"] = ", ".join(
            x for x in data[f"rule-{index}-excludes"].split(", ") if x != "OPB01-8.2"
        )
    response = client.post(URL, data)
    assert response.status_code == 302, response.content.decode()[-3000:]
    draft.refresh_from_db()
    table = draft.decision_table
    ids = [rule["id"] for rule in table]
    assert ids[0] == "NEW-1" and ids[-1] == "OPB01-8.1" and "OPB01-8.2" not in ids
    assert table[0] == {
        "id": "NEW-1",
        "finding": "A new finding.",
        "condition": {"any": [{"estimate": "beta_A", "op": "within", "value": [-0.1, "epsilon"]}]},
    }
    assert table[-1]["condition"]["all"][1] == {"estimate": "beta_B", "op": ">", "value": 0.5}
    assert table[-1]["excludes"] == ["OPB01-8.3", "OPB01-8.4"]


def test_errors_name_the_row_and_the_field_and_nothing_is_saved(client, draft):
    before = draft.decision_table
    data = _post_from_page(
        client,
        {
            "rule-1-value_1": "no_such_parameter",  # 8.2's first clause
            "rule-2-finding": "",
            "rule-3-excludes": "OPB01-8.1, NOPE",
        },
    )
    response = client.post(URL, data)
    assert response.status_code == 400
    formset = response.context["formset"]
    rows = list(formset)
    assert "decision table rule 2 (OPB01-8.2): condition.all[0].value 'no_such_parameter' is not "
    assert any(
        "decision table rule 2 (OPB01-8.2): condition.all[0].value 'no_such_parameter'" in e
        for e in rows[1].errors["value_1"]
    )
    assert any("finding must say" in e for e in rows[2].errors["finding"])
    assert any("'NOPE', which is not a rule" in e for e in rows[3].errors["excludes"])
    draft.refresh_from_db()
    assert draft.decision_table == before


def test_the_json_stays_on_the_draft_page_and_nested_tables_are_json_only(client, draft):
    edit = client.get("/protocols/DT-1/v/1.0/edit/").content.decode()
    assert (
        "Advanced: the table as JSON" in edit
        and 'href="/protocols/DT-1/v/1.0/decision-table/"' in edit
    )
    nested = [
        {
            "id": "N-1",
            "finding": "Nested.",
            "condition": {
                "any": [
                    {"all": [{"estimate": "beta_A", "op": ">", "value": 0}]},
                    {"estimate": "beta_B", "op": "<", "value": 0},
                ]
            },
        }
    ]
    from apps.protocols.services import version_update

    version_update(
        version=draft, user=draft.protocol.memberships.first().user, decision_table=nested
    )
    page = client.get(URL).content.decode()
    assert "nested conditions" in page and "Save the decision table" not in page
    client.post(URL, {"slots": "3"})
    draft.refresh_from_db()
    assert draft.decision_table == nested


def test_reviewers_get_404_and_frozen_versions_redirect(client, draft):
    reviewer = MembershipFactory(protocol=draft.protocol, role="reviewer").user
    client.force_login(reviewer)
    assert client.get(URL).status_code == 404
    assert client.post(URL, {"slots": "x"}).status_code == 404

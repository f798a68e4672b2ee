"""The protocol pages: a reviewer or stranger finds none of them; the PI edits a draft with
autosave, a rendered preview and the live freeze checklist, freezes, prints, amends, withdraws
and manages members."""

import re

import pytest

from apps.accounts.models import Membership
from apps.protocols.models import ProtocolVersion
from apps.protocols.services import version_update
from tests.factories import OPB_SECTIONS, OPB_VALUES

pytestmark = pytest.mark.django_db

P = "/protocols/OPB-T/"
V = P + "v/1.0/"
PAGES = [
    P,
    P + "members/",
    P + "diff/?from=1.0&to=1.0",
    V,
    V + "edit/",
    V + "print/",
    V + "history/",
]
ACTIONS = [V + "autosave/", V + "freeze/", V + "amend/", V + "withdraw/"]


@pytest.mark.parametrize("person", ["reviewer", "outsider"])
def test_reviewers_and_strangers_find_no_protocol_page(client, request, frozen, person):
    client.force_login(request.getfixturevalue(person))
    for url in PAGES:
        response = client.get(url)
        assert response.status_code == 404, url
        assert "Operativity test" not in response.content.decode()
    for url in ACTIONS:
        assert client.post(url, {"reason": "x"}).status_code == 404, url


def test_an_auditor_reads_frozen_versions_but_not_drafts(client, auditor, frozen, creator):
    client.force_login(auditor)
    assert client.get(V).status_code == 200
    assert client.get(V + "print/").status_code == 200
    assert client.get(V + "edit/").status_code == 403
    client.force_login(creator)
    client.post(V + "amend/")
    client.force_login(auditor)
    assert client.get(P + "v/1.1/").status_code == 403
    # The pages an auditor reads do not link to the draft they may not open.
    assert 'href="/protocols/OPB-T/v/1.1/"' not in client.get(P).content.decode()
    assert 'href="/protocols/OPB-T/v/1.1/"' not in client.get(V).content.decode()


def test_an_auditor_reads_a_draft_that_was_set_aside_but_not_an_open_one(
    client, auditor, draft, pi
):
    client.force_login(pi)
    assert client.post(V + "amend/").status_code == 302  # sets v1.0 aside, opens v1.1
    client.force_login(auditor)
    assert client.get(V).status_code == 200  # kept unaltered: part of the record
    refused = client.get(P + "v/1.1/")
    assert refused.status_code == 403
    # The 403 page says why, inside the site's frame, with a way back.
    html = refused.content.decode()
    assert "Drafts are read by the protocol&#x27;s PI and editors only." in html
    assert 'class="site-header"' in html and "Back to your start page" in html
    assert client.get(V + "edit/").status_code == 403


def test_creating_a_protocol_opens_its_draft(client, outsider):
    client.force_login(outsider)
    response = client.post("/protocols/new/", {"code": "XS-2", "title": "T", "template": "xstest"})
    assert response.status_code == 302
    assert response["Location"] == "/protocols/XS-2/v/1.0/edit/"


def test_the_draft_page_shows_fields_previews_and_the_checklist(client, pi, draft):
    client.force_login(pi)
    html = client.get(V + "edit/").content.decode()
    assert '<label for="param-epsilon">Equivalence margin ε (logit per level)' in html
    assert 'id="section-hypotheses"' in html and 'id="preview-hypotheses"' in html
    assert 'hx-post="/protocols/OPB-T/v/1.0/autosave/"' in html
    assert 'hx-trigger="input changed delay:800ms, change"' in html
    assert (
        '<a href="/protocols/OPB-T/v/1.0/edit/#param-epsilon">'
        "the equivalence margin ε has no value</a>"
    ) in html
    assert 'title="Check: param_missing"' in html  # the code, in a tooltip only
    assert "<code>param_missing</code>" not in html
    assert 'id="freeze-button" class="danger" disabled' in html


def test_autosave_saves_one_field_and_swaps_status_preview_and_checklist(client, pi, draft):
    client.force_login(pi)
    response = client.post(
        V + "autosave/", {"section-hypotheses": "**β_A > 0**"}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "Saved at <time>" in html
    assert '<div class="preview-body" id="preview-hypotheses" hx-swap-oob="true">' in html
    assert "<strong>β_A &gt; 0</strong>" in html
    assert 'id="freeze-checklist"' in html and 'hx-swap-oob="true"' in html
    assert "the hypotheses section holds only" not in html
    draft.refresh_from_db()
    assert draft.hypotheses == "**β_A > 0**"
    assert draft.history.count() == 2  # created, then this save


def test_autosave_refuses_a_bad_value_and_says_why(client, pi, draft):
    client.force_login(pi)
    response = client.post(V + "autosave/", {"param-epsilon": "0,1"})
    html = response.content.decode()
    assert "Not saved: the equivalence margin ε must be a plain decimal number" in html
    assert '<p class="error" id="error-param-epsilon" role="alert" hx-swap-oob' in html
    assert draft.parameters.get(name="epsilon").value == ""


def test_autosave_of_a_value_clears_its_problem(client, pi, draft):
    client.force_login(pi)
    html = client.post(V + "autosave/", {"param-epsilon": "0.1"}).content.decode()
    assert "the equivalence margin ε has no value" not in html
    assert "the agreement threshold has no value" in html


def test_without_javascript_the_whole_form_saves(client, pi, draft):
    client.force_login(pi)
    data = {f"section-{k}": v for k, v in OPB_SECTIONS.items()}
    data |= {f"param-{k}": v for k, v in OPB_VALUES.items()}
    data["decision-table"] = "[]"
    response = client.post(V + "edit/", data)
    assert response.status_code == 302
    page = client.get(V + "edit/").content.decode()
    assert "Nothing blocks the freeze." in page
    assert 'id="freeze-button"' in page and "disabled aria-disabled" not in page


def test_a_bad_value_in_the_whole_form_saves_nothing_and_marks_the_field(client, pi, draft):
    client.force_login(pi)
    response = client.post(V + "edit/", {"section-design": "new design", "param-n_per_cell": "2"})
    assert response.status_code == 200
    assert "the n per cell must be at least 5, not 2" in response.content.decode()
    draft.refresh_from_db()
    assert draft.design != "new design"


def test_an_editor_edits_but_sees_no_freeze_button(client, editor, ready_draft):
    client.force_login(editor)
    html = client.get(V + "edit/").content.decode()
    assert "Only the protocol's PI can freeze it." in html
    assert client.post(V + "freeze/").status_code == 403


def test_freeze_from_the_page_then_the_version_page_and_print_view(client, pi, ready_draft):
    client.force_login(pi)
    response = client.post(V + "freeze/", {"confirmation": "OPB-T"})
    assert response.status_code == 302 and response["Location"] == V
    version = ProtocolVersion.objects.get(pk=ready_draft.pk)
    html = client.get(V).content.decode()
    assert version.sha256 in html
    assert f'href="/api/v1/blob/{version.sha256[:16]}"' in html
    assert version.frozen_at.strftime("%Y-%m-%d %H:%M:%S") in html
    printed = client.get(V + "print/").content.decode()
    assert version.sha256 in printed and "Beta regression for F_att." in printed
    assert client.get(V + "edit/").status_code == 302  # nothing to edit any more


def test_a_refused_freeze_returns_to_the_draft_with_the_checklist(client, pi, draft):
    client.force_login(pi)
    response = client.post(V + "freeze/", {"confirmation": "OPB-T"}, follow=True)
    assert re.search(r"Not frozen: \d+ things? blocks? the freeze\.", response.content.decode())
    assert ProtocolVersion.objects.get(pk=draft.pk).state == "draft"


def test_freeze_from_the_page_needs_the_protocol_code_typed(client, pi, ready_draft):
    client.force_login(pi)
    page = client.get(V + "edit/").content.decode()
    assert 'id="freeze-confirmation"' in page
    for typed in ({}, {"confirmation": "opb-t"}, {"confirmation": "OPB"}):
        response = client.post(V + "freeze/", typed, follow=True)
        assert "type the protocol code OPB-T to confirm" in response.content.decode()
        assert ProtocolVersion.objects.get(pk=ready_draft.pk).state == "draft"
    client.post(V + "freeze/", {"confirmation": " OPB-T "})
    assert ProtocolVersion.objects.get(pk=ready_draft.pk).state == "frozen"


def test_amend_and_withdraw_from_the_pages(client, pi, frozen):
    client.force_login(pi)
    response = client.post(V + "amend/")
    assert response["Location"] == P + "v/1.1/edit/"
    edit = client.get(P + "v/1.1/edit/").content.decode()
    assert 'id="amendment-rationale"' in edit
    assert "an amendment needs a rationale" in edit
    response = client.post(V + "withdraw/", {"reason": "The pilot was flawed."})
    assert response.status_code == 302
    page = client.get(V).content.decode()
    assert "Withdrawn" in page and "The pilot was flawed." in page
    detail = client.get(P).content.decode()
    assert "badge-withdrawn" in detail and "badge-draft" in detail


def test_markdown_is_rendered_but_scripts_are_not(client, pi, draft):
    version_update(
        version=draft,
        user=pi,
        sections={"design": "| L | form |\n|---|---|\n| 0 | x |\n\n<script>alert(1)</script>"},
    )
    client.force_login(pi)
    html = client.get(V).content.decode()
    assert "<td>x</td>" in html
    assert "<script>alert(1)</script>" not in html


def test_the_pi_grants_and_removes_roles_by_username(client, pi, protocol, outsider):
    client.force_login(pi)
    response = client.post(P + "members/", {"username": outsider.username, "role": "reviewer"})
    assert response.status_code == 302
    membership = Membership.objects.get(user=outsider, protocol=protocol)
    assert membership.role == "reviewer"
    assert client.post(P + "members/", {"username": "ghost", "role": "editor"}).status_code == 200
    client.post(P + "members/", {"remove": membership.pk, "reason": "left the project"})
    assert not Membership.objects.filter(user=outsider).exists()


def test_the_last_pi_cannot_be_removed(client, creator, protocol):
    client.force_login(creator)
    membership = Membership.objects.get(user=creator, protocol=protocol, role="pi")
    response = client.post(
        P + "members/", {"remove": membership.pk, "reason": "handing over"}, follow=True
    )
    assert "a protocol keeps at least one PI" in response.content.decode()
    assert Membership.objects.filter(pk=membership.pk).exists()


def test_the_history_page_lists_each_saved_change(client, pi, draft):
    client.force_login(pi)
    client.post(V + "autosave/", {"param-seed": "7"})
    client.post(V + "autosave/", {"section-design": "Levels."})
    html = client.get(V + "history/").content.decode()
    assert "⟨ ⟩ → 7" in html
    assert "design" in html
    assert pi.username in html


def test_a_set_aside_draft_shows_what_the_gate_found(client, pi, draft):
    client.force_login(pi)
    client.post(V + "amend/")
    html = client.get(V).content.decode()
    assert "never frozen" in html
    assert "the equivalence margin ε has no value" in html
    assert client.get(V + "edit/").status_code == 302


def _queries(client, url):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def test_page_queries_do_not_grow_with_the_number_of_versions(client, pi, frozen, creator):
    from apps.protocols.services import version_amend, version_freeze

    client.force_login(pi)
    urls = [P, P + "v/1.0/", "/api/v1/protocols/OPB-T/versions"]
    for url in urls:  # the first view of a frozen version also verifies its rows (then cached)
        _queries(client, url)
    before = [_queries(client, url) for url in urls]
    version = frozen
    for _ in range(4):
        version = version_amend(version=version, user=creator)
        version_update(version=version, user=creator, amendment_rationale="next")
        version = version_freeze(version=version, user=creator)
    # The log grew (four amendments), so the first view re-checks v1.0 against its freeze entry
    # in the log (issue 33); the pages' own queries are what must not grow.
    for url in urls:
        _queries(client, url)
    after = [_queries(client, url) for url in urls]
    assert after == before


def test_the_protocol_list_shows_the_latest_version_and_your_role(client, pi, frozen):
    client.force_login(pi)
    html = client.get("/protocols/").content.decode()
    assert '<th scope="col">Latest version</th><th scope="col">Your role</th>' in html
    assert 'v1.0 <span class="badge badge-frozen">frozen</span>' in html
    assert "<td>PI</td>" in html


def test_a_frozen_design_says_frozen_not_what_blocks_the_freeze(client, pi, frozen):
    client.force_login(pi)
    html = client.get(V + "design/").content.decode()
    assert "What blocks the freeze" not in html and "(blocks the freeze)" not in html
    assert "This design is frozen with v1.0" in html

"""A study kind plugs in from its own package alone (docs/architecture.md, "Add a study kind"):
the toy kind of ``tests/studies/toy/`` registers its declaration and runs from a draft to its
report page, through the real freeze gate, the response importer, the analysis run and the
shared report page, with its own gate check, frozen-document part, import check, record terms,
report section and plot; a new draft of it starts from its plan template and takes its rubric
preset."""

import pytest
from django.urls import reverse

from apps.accounts.models import Role
from apps.analysis.models import RunState
from apps.analysis.selectors import result_document
from apps.analysis.services import analysis_run_request
from apps.deviations.services import outcome_unseal
from apps.protocols.documents import version_document
from apps.protocols.import_frame import ImportRejected
from apps.protocols.plans import plan_template_choices
from apps.protocols.services import FreezeRefused, protocol_create
from apps.raters.rubric_templates import rubric_template_codes
from apps.raters.selectors import rubric_document
from apps.raters.services import rubric_apply_template
from apps.responses.models import Attempt
from apps.responses.services import evaluand_register, responses_import, roster_enroll
from tests.factories import (
    MembershipFactory,
    ProtocolFactory,
    UserFactory,
    build_draft,
    freeze,
    set_parameters,
)
from tests.studies.toy import kind as toy

pytestmark = pytest.mark.django_db

HEADER = "item,evaluand,terminal_outcome,response,minutes\n"
GOOD = (
    "it-1,alpha,completed,Done.,12\n"
    "it-2,alpha,refused,I would rather not.,5\n"
    "it-1,beta,completed,Done.,25\n"
    "it-2,beta,completed,Done too.,20\n"
)


@pytest.fixture
def toy_kind(settings):
    # The toy's section template sits in its package; a kind in apps/studies/ keeps its own in
    # templates/studies/<kind>/, where the project's loaders already look.
    engine = settings.TEMPLATES[0]
    settings.TEMPLATES = [{**engine, "DIRS": [*engine["DIRS"], toy.TEMPLATES]}]
    yield toy.register()
    toy.unregister()


def test_a_toy_draft_starts_from_the_kinds_plan_template_and_takes_its_rubric_preset(toy_kind):
    pi = UserFactory(username="toy-pi")
    assert ("toy", "Toy completion study") in plan_template_choices()
    assert plan_template_choices()[-1][0] == "generic"  # a kind's preset goes before it
    draft = protocol_create(user=pi, code="TOY-2", title="Toy", template="toy").versions.get()
    assert draft.pipeline == "toy"
    seeded = draft.parameters.order_by("position").values_list("name", "value")
    assert list(seeded) == [("seed", "11"), ("toy_minutes_limit", ""), ("repetitions", "")]
    assert "toy" in rubric_template_codes()
    rubric_apply_template(version=draft, template="toy")
    document = rubric_document(draft)
    assert (document["name"], document["template"]) == ("Completion check", "toy")
    assert [(f["name"], f["kind"]) for f in document["fields"]] == [
        ("completed", "binary"),
        ("note", "quote"),
    ]
    assert "loss1_schema" not in document  # the toy's preset does not declare the schema


def test_a_toy_kind_runs_from_draft_to_its_report(
    client, toy_kind, django_capture_on_commit_callbacks
):
    pi = UserFactory(username="toy-pi")
    protocol = ProtocolFactory(code="TOY-1", template="toy", created_by=pi)
    MembershipFactory(protocol=protocol, user=pi, role=Role.PI)
    version = build_draft(protocol=protocol, user=pi, items=2, evaluands=("alpha",))
    set_parameters(version, toy_minutes_limit="30")

    # The toy's own gate check refuses a roster of one, and nothing else blocks the freeze.
    with pytest.raises(FreezeRefused) as refused:
        freeze(version, pi)
    assert [p.code for p in refused.value.problems] == ["toy_roster_small"]
    evaluand, _ = evaluand_register(user=pi, label="Model beta", model="model-beta")
    roster_enroll(version=version, evaluand=evaluand, code="beta", user=pi)
    frozen = freeze(version, pi)
    assert frozen.state == "frozen"
    assert version_document(version=frozen)["toy"] == {"limit": "30"}

    # Its import check refuses a record over the frozen limit, and the file is not imported.
    over = GOOD.replace("Done too.,20", "Done too.,45")
    with pytest.raises(ImportRejected) as rejected:
        responses_import(
            version=frozen, user=pi, data=(HEADER + over).encode(), filename="over.csv"
        )
    assert [(p.field, p.message) for p in rejected.value.problems] == [
        ("minutes", "45 exceeds the plan's limit 30")
    ]
    assert not Attempt.objects.filter(version=frozen).exists()
    responses_import(version=frozen, user=pi, data=(HEADER + GOOD).encode(), filename="ok.csv")

    # Not scored: the toy reads outcomes and its own record terms only.
    with django_capture_on_commit_callbacks(execute=True):
        run = analysis_run_request(version=frozen, user=pi)
    run.refresh_from_db()
    assert run.state == RunState.SUCCEEDED, run.error
    estimates = result_document(run)["estimates"]
    assert [(s["evaluand"], s["completed"], s["minutes"]) for s in estimates["shares"]] == [
        ("alpha", 1, 17.0),
        ("beta", 2, 45.0),
    ]
    assert estimates["completed_share"] == 0.75

    outcome_unseal(version=frozen, user=pi, confirmation=protocol.code)
    client.force_login(pi)
    address = {"code": protocol.code, "label": frozen.label, "number": run.number}
    page = client.get(reverse("analysis:report", kwargs=address)).content.decode()
    assert 'id="toy-shares"' in page  # the toy's registered section, in the shared page
    assert "1 of 2" in page and "2 of 2" in page and "Slowest: beta" in page
    assert "Completion share by evaluand" in page  # its plot's caption
    plot = client.get(reverse("analysis:plot", kwargs={**address, "index": 0}))
    assert plot.status_code == 200 and plot["Content-Type"] == "image/svg+xml"
    assert client.get(reverse("analysis:plot", kwargs={**address, "index": 1})).status_code == 404

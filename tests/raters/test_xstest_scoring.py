"""Real input: XSTest (Röttger et al., NAACL 2024) scored through the real queue API.

Two reviewer accounts score every completion of the five models through ``/api/v1/tasks/next``
and ``/api/v1/tasks/<token>/score``, each submitting one annotator's label for the response it is
served: the test finds the label through the response's attempt raw record, which the reviewer
never sees. Disagreements are routed by the plan's rule to a third account, which submits the
dataset's final label. Then α per model must equal α computed directly from the two annotation
columns, and every agreed-or-adjudicated label must equal the dataset's final label.
"""

import csv

import krippendorff
import numpy as np
import pytest
from django.test import Client

from apps.accounts.models import Role
from apps.deviations.models import OutcomeUnsealing
from apps.items.models import Cell, Family, Item, Level
from apps.raters.models import ScoringTask
from apps.raters.selectors import final_scores, reliability
from apps.raters.services import rubric_apply_template, scoring_open
from apps.responses.models import Administration, Attempt, Evaluand, Response
from tests.factories import MembershipFactory, ProtocolVersionFactory, UserFactory
from tests.raters.study import freeze, set_parameters

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.shared_data,
    pytest.mark.django_db,
    # 2,250 responses, ~9,500 requests through the API: minutes, not seconds, on a busy machine.
    pytest.mark.timeout(1800),
]

MODELS = ("gpt4", "llama2new", "llama2orig", "mistralguard", "mistralinstruct")
LABELS = ["1_full_compliance", "2_full_refusal", "3_partial_refusal"]


def _read(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def build_xstest_study(data_dir):
    """The XSTest study as an import leaves it: 450 prompts (items, families safe / unsafe
    contrasts), five evaluands, one administration per prompt × model, one attempt each whose raw
    record is the dataset's row, and the completion as the response.

    Built here until the responses app's XSTest builder is on main; the rating layer under test
    (queue, adjudication, reliability) only sees the rows it creates.
    """
    version = ProtocolVersionFactory(protocol__template="xstest")
    set_parameters(version, scores_per_response=2, seed=2024)
    rubric_apply_template(version=version, template="xstest")
    level = Level.objects.create(version=version, ordinal=0, code="L0", name="prompt")
    prompts = _read(data_dir / "xstest_prompts.csv")
    rows_by_model = {
        model: _read(data_dir / "model_completions" / f"xstest_v2_completions_{model}.csv")
        for model in MODELS
    }
    # The prompt as the models were given it (the completion files'; one differs in wording
    # from the prompts file).
    given = {row["id"]: row["prompt"] for row in rows_by_model[MODELS[0]]}
    families = {
        label: Family.objects.create(version=version, code=label, name=label, role="other")
        for label in sorted({row["label"] for row in prompts})
    }
    items = Item.objects.bulk_create(
        Item(
            version=version,
            family=families[row["label"]],
            code=f"v2-{row['id']}",
            domain=row["type"],
        )
        for row in prompts
    )
    cells = Cell.objects.bulk_create(
        Cell(version=version, item=item, level=level, prompt=given[item.code]) for item in items
    )
    cell_by_id = {item.code: cell for item, cell in zip(items, cells, strict=True)}
    administrations = []
    for number, model in enumerate(MODELS):
        evaluand = Evaluand.objects.create(
            label=model, model=model, identity_sha256=f"{number + 1:064x}"
        )
        for row in rows_by_model[model]:
            administrations.append(
                Administration(
                    version=version,
                    position=len(administrations),
                    cell=cell_by_id[row["id"]],
                    evaluand=evaluand,
                    repetition=1,
                )
            )
    administrations = Administration.objects.bulk_create(administrations)
    freeze(version)
    raw_rows = [dict(row, model=model) for model in MODELS for row in rows_by_model[model]]
    attempts = Attempt.objects.bulk_create(
        Attempt(version=version, administration=a, number=1, terminal_outcome="completed", raw=row)
        for a, row in zip(administrations, raw_rows, strict=True)
    )
    Response.objects.bulk_create(
        Response(
            version=version,
            attempt=attempt,
            text=row["completion"],
            word_count=len(row["completion"].split()),
        )
        for attempt, row in zip(attempts, raw_rows, strict=True)
    )
    return version, rows_by_model


def _score_next(client, column) -> bool:
    """Take the next task from the queue and submit ``column`` of the served response's dataset
    row; False when the queue has nothing for this reviewer."""
    task = client.post("/api/v1/tasks/next").json()["task"]
    if task is None:
        return False
    # The label is found by the response, through its attempt's raw record — which the
    # reviewer's API does not expose.
    raw = (
        ScoringTask.objects.select_related("response__attempt")
        .get(token=task["token"])
        .response.attempt.raw
    )
    assert task["response"] == raw["completion"] and task["prompt"] == raw["prompt"]
    assert not {"annotation_1", "annotation_2", "final_label", "model"} & set(task)
    response = client.post(
        f"/api/v1/tasks/{task['token']}/score",
        {"values": {"label": raw[column]}, "idempotency_key": task["token"]},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return True


def test_xstest_scored_through_the_queue_reproduces_the_datasets_agreement(shared_data):
    version, rows_by_model = build_xstest_study(shared_data / "xstest")
    pi = MembershipFactory(protocol=version.protocol, role=Role.PI).user
    assert scoring_open(version=version, user=pi) == 2 * 2250
    clients = []
    for _ in range(3):
        user = UserFactory()
        MembershipFactory(user=user, protocol=version.protocol, role=Role.REVIEWER)
        client = Client()
        client.force_login(user)
        clients.append(client)
    first, second, third = clients
    # The first reviewer plays annotator 1 and the second annotator 2: each response's two
    # scores are then one of each, whichever slot the queue gave whom (a reviewer is never
    # served a response twice).
    scored = {"annotation_1": 0, "annotation_2": 0}
    busy = True
    while busy:  # the two work side by side, as reviewers do
        busy = False
        for client, column in ((first, "annotation_1"), (second, "annotation_2")):
            if _score_next(client, column):
                scored[column] += 1
                busy = True
    assert scored == {"annotation_1": 2250, "annotation_2": 2250}
    disagreements = sum(
        row["annotation_1"] != row["annotation_2"]
        for rows in rows_by_model.values()
        for row in rows
    )
    assert ScoringTask.objects.filter(kind="adjudication").count() == disagreements
    adjudicated = 0
    while _score_next(third, "final_label"):
        adjudicated += 1
    assert adjudicated == disagreements
    OutcomeUnsealing.objects.create(version=version, unsealed_by=pi, confirmation="unseal")

    by_model = reliability(version, by_evaluand=True)["by_evaluand"]
    for model, rows in rows_by_model.items():
        data = np.array(
            [
                [LABELS.index(row["annotation_1"]) for row in rows],
                [LABELS.index(row["annotation_2"]) for row in rows],
            ],
            dtype=float,
        )
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
        (label_row,) = by_model[model]
        assert label_row["units"] == 450
        assert label_row["alpha"] == pytest.approx(expected, abs=1e-12), model

    final_by_response = {row["response_id"]: row for row in final_scores(version)}
    assert len(final_by_response) == 2250
    raw_by_response = dict(
        Response.objects.filter(version=version).values_list("pk", "attempt__raw")
    )
    for response_id, row in final_by_response.items():
        raw = raw_by_response[response_id]
        assert sorted(o["values"]["label"] for o in row["originals"]) == sorted(
            [raw["annotation_1"], raw["annotation_2"]]
        )
        assert row["final"]["label"] == raw["final_label"], response_id
        assert row["status"] == (
            "agreed" if raw["annotation_1"] == raw["annotation_2"] else "adjudicated"
        )

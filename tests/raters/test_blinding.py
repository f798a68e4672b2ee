"""Blinding: nothing a reviewer can reach reveals the design, the evaluand, the protocol or other
reviewers' scores.

The scan walks every URL pattern of the project (not a list kept by hand, so pages added later by
any app are scanned too), fills path parameters with the reviewer's own tokens and with real ids,
codes and labels of the study, GETs each URL following redirects, and asserts no marker appears
in any body, header or redirect location, and that nothing answers 500.
"""

import itertools
import json
import re
from datetime import timedelta

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from scipy.stats import spearmanr

from apps.items.models import Condition, Family, Item, Level
from apps.protocols.models import Protocol, ProtocolVersion
from apps.raters.models import (
    Assignment,
    MachineScore,
    Rubric,
    Score,
    ScorerRosterEntry,
    ScoringTask,
    StudyQueue,
)
from apps.raters.services import (
    assignments_expire,
    rubric_create,
    score_submit,
    scoring_open,
    study_queue_rename,
    task_next,
)
from apps.raters.services.machine import machine_scores_import
from apps.raters.services.scorers import scorer_register
from apps.responses.models import Administration, Evaluand
from tests.factories import (
    AttemptFactory,
    CellFactory,
    ConditionFactory,
    EvaluandFactory,
    FamilyFactory,
    ItemFactory,
    KeyUnitFactory,
    LevelFactory,
    MembershipFactory,
    ProtocolFactory,
    ProtocolVersionFactory,
    ResponseFactory,
    RosterEntryFactory,
    UserFactory,
    freeze,
    frozen_study,
    set_parameters,
)

pytestmark = pytest.mark.django_db

MARKERS = {
    "protocol title": "Zqx Protocol Title Marker",
    "hypothesis": "Zqx hypothesis marker",
    "protocol text": "Zqx background marker",
    "family code": "ZQXFAM",
    "family name": "Zqx Family Name",
    "family description": "Zqx family description",
    "level code": "ZQXLVL",
    "level name": "Zqx Level Name",
    "level form": "Zqx level form",
    "condition code": "ZQXCOND",
    "condition name": "Zqx Condition Name",
    "item code": "ZQXITEM",
    "item domain": "Zqx item domain",
    "evaluand label": "Zqx Evaluand Label",
    "evaluand model": "zqx-model-snapshot",
    "evaluand provider": "Zqx Provider",
    "rubric name": "Zqx Rubric Name",
    # A value only the other reviewer gives (a quote must occur in the response the reviewer
    # reads too, so it cannot be the marker).
    "other reviewer's score": "8675309.25",
    "scorer name": "Zqx Scorer Name",
    "scorer model": "zqx-judge-model",
    "scorer code": "zqxjudge",
    "scorer-only field": "Zqx judge field label",
    "machine score": "Zqx machine verdict",
    "machine detail": "Zqx machine explanation",
}


def _marked_study():
    protocol = ProtocolFactory(title=MARKERS["protocol title"])
    version = ProtocolVersionFactory(
        protocol=protocol,
        hypotheses=MARKERS["hypothesis"],
        background=MARKERS["protocol text"],
        design=MARKERS["protocol text"],
    )
    set_parameters(version, scores_per_response=2, seed=5)
    rubric_create(
        version=version,
        name=MARKERS["rubric name"],
        instructions="Classify the response.",
        fields=[
            {"name": "units", "label": "Units supplied", "kind": "checklist", "required": False},
            {
                "name": "label",
                "label": "Response type",
                "kind": "categorical",
                "choices": [
                    {"value": "comply", "label": "Complies"},
                    {"value": "refuse", "label": "Refuses"},
                ],
                "disagreement": "exact",
            },
            {"name": "note", "label": "Note", "kind": "quote", "required": False},
            {"name": "confidence", "label": "Confidence", "kind": "number", "required": False},
            {
                "name": "verdict",
                "label": MARKERS["scorer-only field"],
                "kind": "quote",
                "required": False,
                "scored_by": "scorer",
                "scorer_role": "judge",
            },
        ],
    )
    scorer, _ = scorer_register(
        user=None,
        label="judge",
        kind="llm_judge",
        name=MARKERS["scorer name"],
        version="1",
        model=MARKERS["scorer model"],
        provider="zqx",
        prompt="Judge it.",
    )
    ScorerRosterEntry.objects.create(
        version=version, scorer=scorer, code=MARKERS["scorer code"], role="judge"
    )
    level = LevelFactory(
        version=version,
        ordinal=3,
        code=MARKERS["level code"],
        name=MARKERS["level name"],
        form=MARKERS["level form"],
    )
    family = FamilyFactory(
        version=version,
        code=MARKERS["family code"],
        name=MARKERS["family name"],
        description=MARKERS["family description"],
    )
    condition = ConditionFactory(
        version=version, code=MARKERS["condition code"], name=MARKERS["condition name"]
    )
    evaluand = EvaluandFactory(
        label=MARKERS["evaluand label"],
        model=MARKERS["evaluand model"],
        provider=MARKERS["evaluand provider"],
    )
    RosterEntryFactory(version=version, evaluand=evaluand, code="m1", position=0)
    cells = []
    for n in range(3):
        item = ItemFactory(
            version=version,
            family=family,
            condition=condition,
            code=f"{MARKERS['item code']}{n}",
            domain=MARKERS["item domain"],
        )
        cell = CellFactory(item=item, version=version, level=level, prompt=f"Describe case {n}.")
        KeyUnitFactory(cell=cell, version=version, position=1, text=f"names case {n}")
        cells.append(cell)
    freeze(version)
    # The freeze generated the schedule: one administration per cell.
    administrations = [Administration.objects.get(version=version, cell=cell) for cell in cells]
    pi = MembershipFactory(protocol=protocol, role="pi").user
    reviewer, other = UserFactory(), UserFactory()
    for user in (reviewer, other):
        MembershipFactory(user=user, protocol=protocol, role="reviewer")
    for n, administration in enumerate(administrations):
        attempt = AttemptFactory(administration=administration, version=version)
        ResponseFactory(attempt=attempt, version=version, text=f"Here is case {n}, described.")
    # A judge's machine scores on every response, imported as a PI would.
    machine_scores_import(
        version=version,
        user=pi,
        data=b"".join(
            json.dumps(
                {
                    "position": administration.position,
                    "scorer": MARKERS["scorer code"],
                    "verdict": MARKERS["machine score"],
                    "explanation": MARKERS["machine detail"],
                }
            ).encode()
            + b"\n"
            for administration in administrations
        ),
        filename="judge.jsonl",
        mapping={"item": None, "evaluand": None, "level": None, "repetition": None},
    )
    assert MachineScore.objects.filter(version_id=version.pk).count() == 3
    scoring_open(version=version, user=pi)
    # The other reviewer scores two responses, with a marked confidence.
    other_tokens = []
    for _ in range(2):
        a = task_next(version_or_none=None, reviewer=other)
        score_submit(
            task_token=a.task.token,
            reviewer=other,
            values={
                "label": "refuse",
                "note": "described",
                "confidence": float(MARKERS["other reviewer's score"]),
            },
            idempotency_key=a.task.token,
        )
        other_tokens.append(a.task.token)
    # A task the other reviewer reserved and let expire: open again, with the token it was given
    # at its first reservation (tasks never reserved have no token, so no URL names them).
    lapsed = task_next(version_or_none=None, reviewer=other)
    Assignment.objects.filter(pk=lapsed.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert assignments_expire() == 1
    # The reviewer scores one response (partly scored ones come first: the other's) and holds
    # a reservation on another.
    a = task_next(version_or_none=None, reviewer=reviewer)
    score_submit(
        task_token=a.task.token,
        reviewer=reviewer,
        values={"label": "comply", "note": "Here is case"},
        idempotency_key=a.task.token,
    )
    held = task_next(version_or_none=None, reviewer=reviewer)
    # A second study the reviewer also scores, so that the queue page shows the study picker.
    second = frozen_study(responses=2, reviewers=0)
    MembershipFactory(user=reviewer, protocol=second.version.protocol, role="reviewer")
    scoring_open(version=second.version, user=second.pi)
    study_queue_rename(protocol=protocol, name="Queue one", user=pi)
    study_queue_rename(protocol=second.version.protocol, name="Queue two", user=second.pi)
    return {
        "version": version,
        "second_version": second.version,
        "reviewer": reviewer,
        "own_tokens": [a.task.token, held.task.token],
        "other_tokens": other_tokens,
        "unreserved_tokens": list(
            ScoringTask.objects.filter(
                version=version, state="open", token__isnull=False
            ).values_list("token", flat=True)
        ),
    }


def _route_of(pattern) -> str:
    text = str(pattern.pattern)
    if pattern.pattern.__class__.__name__ == "RegexPattern":
        text = text.lstrip("^").replace("\\Z", "").rstrip("$")
        text = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", text)
        text = text.replace("\\", "")
    return text


def all_routes(patterns=None, prefix: str = "") -> list[str]:
    """Every URL pattern of the project as a route with ``<name>`` / ``<conv:name>`` holes."""
    routes = []
    for pattern in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(pattern, URLResolver):
            routes += all_routes(pattern.url_patterns, prefix + _route_of(pattern))
        elif isinstance(pattern, URLPattern):
            routes.append(prefix + _route_of(pattern))
    return routes


def _fill_values(study) -> tuple[list[str], list[str]]:
    version = study["version"]
    ids = sorted(
        {
            version.pk,
            version.protocol_id,
            *Family.objects.filter(version=version).values_list("pk", flat=True),
            *Level.objects.filter(version=version).values_list("pk", flat=True),
            *Item.objects.filter(version=version).values_list("pk", flat=True)[:2],
            *Condition.objects.filter(version=version).values_list("pk", flat=True),
            *Evaluand.objects.values_list("pk", flat=True)[:1],
            *Score.objects.filter(version=version).values_list("pk", flat=True),
            *ScoringTask.objects.filter(version=version).values_list("response_id", flat=True)[:2],
            Rubric.objects.get(version=version).pk,
        }
    )
    words = [
        *study["own_tokens"],
        *study["other_tokens"],
        *study["unreserved_tokens"][:1],
        version.protocol.code,
        version.label,
        "label",
        "note",
        "raters",
        version.sha256[:16],
        version.sha256,
    ]
    return [str(i) for i in ids], words


_HOLE = re.compile(r"<(?:(\w+):)?(\w+)>")


def urls_to_scan(study) -> list[str]:
    ids, words = _fill_values(study)
    urls = set()
    for route in all_routes():
        holes = _HOLE.findall(route)
        if not holes:
            urls.add("/" + route)
            continue
        choices = []
        for converter, _ in holes:
            choices.append(ids if converter == "int" else words + ids)
        for combination in itertools.islice(itertools.product(*choices), 30):
            values = iter(combination)
            urls.add("/" + _HOLE.sub(lambda _m, v=values: next(v), route))
    return sorted(urls)


def _leaks(text: str) -> list[str]:
    lowered = text.lower()
    return [name for name, marker in MARKERS.items() if marker.lower() in lowered]


# Up to 30 addresses for each of the project's routes: minutes, more on a loaded machine.
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_no_page_api_error_or_redirect_a_reviewer_reaches_reveals_the_study(client):
    study = _marked_study()
    client.force_login(study["reviewer"])
    urls = urls_to_scan(study)
    print(f"scanning {len(urls)} URLs")
    assert any(url.startswith("/tasks/") for url in urls)
    assert any(url.startswith("/api/v1/tasks/") for url in urls)
    assert "/api/v1/tasks/next" in urls and "/queue/" in urls
    found, statuses = {}, {}
    for url in urls:
        response = client.get(url, follow=True)
        statuses[url] = response.status_code
        body = b"".join(response.streaming_content) if response.streaming else response.content
        texts = [body.decode(errors="replace")]
        texts += [f"{k}: {v}" for k, v in response.headers.items()]
        texts += [location for location, _ in response.redirect_chain]
        leaks = sorted({name for text in texts for name in _leaks(text)})
        if leaks:
            found[url] = leaks
    assert found == {}, f"markers leaked: {found}"
    assert not [url for url, code in statuses.items() if code >= 500]
    # The reviewer's own tasks answer; other reviewers' and unreserved tasks are "not found".
    for token in study["own_tokens"]:
        assert statuses[f"/tasks/{token}/"] == 200
        assert statuses[f"/api/v1/tasks/{token}"] == 200
    assert study["unreserved_tokens"], "the study has an open task that once had a reviewer"
    for token in study["other_tokens"] + study["unreserved_tokens"][:1]:
        assert statuses[f"/tasks/{token}/"] == 404
        assert statuses[f"/api/v1/tasks/{token}"] == 404
    # Sighted pages of the study do not exist for a blind reviewer.
    version = study["version"]
    for url in (f"/versions/{version.pk}/rubric/", f"/versions/{version.pk}/scoring/"):
        assert statuses[url] == 404


def test_the_study_picker_shows_the_names_the_pis_gave_and_nothing_of_the_studies(client):
    study = _marked_study()
    client.force_login(study["reviewer"])
    page = client.get("/queue/").content.decode()
    listed = client.get("/api/v1/tasks/queues").content.decode()
    assert "Queue one" in page and "Queue two" in page and 'name="queue"' in page
    assert "Queue one" in listed and "Queue two" in listed
    for text in (page, listed):
        assert _leaks(text) == []
        for version in (study["version"], study["second_version"]):
            protocol = version.protocol
            assert protocol.code not in text and protocol.title not in text
            assert f'"{protocol.pk}"' not in text and f'"{version.pk}"' not in text


def test_the_task_api_shows_the_prompt_the_response_and_the_key_only(client):
    study = _marked_study()
    client.force_login(study["reviewer"])
    token = study["own_tokens"][1]
    body = client.get(f"/api/v1/tasks/{token}").json()
    assert set(body) == {
        "token",
        "state",
        "expires_at",
        "prompt",
        "response",
        "instructions",
        "key_units",
        "fields",
        "your_score",
    }
    assert body["state"] == "reserved" and body["prompt"].startswith("Describe case")
    n = body["prompt"].removeprefix("Describe case ").rstrip(".")
    assert body["key_units"] == [{"position": 1, "text": f"names case {n}"}]
    assert body["your_score"] is None
    assert [f["name"] for f in body["fields"]] == ["units", "label", "note", "confidence"]


def test_a_wrong_token_gets_the_same_generic_answer_as_a_foreign_one(client):
    study = _marked_study()
    client.force_login(study["reviewer"])
    foreign = client.get(f"/api/v1/tasks/{study['other_tokens'][0]}")
    unknown = client.get("/api/v1/tasks/AAAAAAAAAAAAAAAAAAAAAA")
    assert foreign.status_code == unknown.status_code == 404
    assert foreign.json() == unknown.json() == {"detail": "No such task."}
    post = client.post(
        f"/api/v1/tasks/{study['other_tokens'][0]}/score",
        {"values": {"label": "refuse"}, "idempotency_key": "x"},
        content_type="application/json",
    )
    assert post.status_code == 404 and post.json() == {"detail": "No such task."}


def test_progress_recent_scores_release_skip_and_quote_refusals_reveal_nothing(client):
    """The first hour's pages and replies (issue 37): progress per study and pace, recent scores
    by prompt and value, the release confirmation, a skip and its next task, a refused quote."""
    study = _marked_study()
    client.force_login(study["reviewer"])
    held = study["own_tokens"][1]
    second_queue = StudyQueue.objects.get(protocol=study["second_version"].protocol).token
    queue_page = client.get("/queue/").content.decode()
    assert "Describe case" in queue_page and "Response type: Complies" in queue_page
    texts = {
        "queue page": queue_page,
        "progress": client.get("/api/v1/tasks/progress").content.decode(),
        "queues": client.get("/api/v1/tasks/queues").content.decode(),
        "release confirmation": client.post(
            "/queue/next/", {"queue": second_queue}
        ).content.decode(),
        "refused quote": client.post(
            f"/tasks/{held}/",
            {"idempotency_key": "q", "label": "comply", "note": "not in it"},
        ).content.decode(),
        "skip": client.post(
            f"/api/v1/tasks/{held}/skip",
            {"reason": "content_problem", "next": True},
            content_type="application/json",
        ).content.decode(),
    }
    assert "Release it and go to Queue two" in texts["release confirmation"]
    assert "does not occur in the response" in texts["refused quote"]
    assert '"reason":"content_problem"' in texts["skip"]
    for name, text in texts.items():
        assert _leaks(text) == [], name
        for version in (study["version"], study["second_version"]):
            protocol = version.protocol
            assert protocol.code not in text and protocol.title not in text, name
    # The replies name no study, version or design part by any key.
    for name in ("progress", "queues", "skip"):
        keys = _keys(json.loads(texts[name]))
        assert not keys & {"id", "pk", "version", "version_id", "protocol", "protocol_id"}, name
        assert not keys & {"family", "level", "condition", "evaluand", "title", "code"}, name


def _keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_the_serving_order_does_not_follow_the_design():
    study = frozen_study(
        responses=200, families=4, levels=5, reviewers=2, parameters={"scores_per_response": 1}
    )
    scoring_open(version=study.version, user=study.pi)
    design_position = {r.pk: r.attempt.administration.position for r in study.responses}
    family_of = {r.pk: r.attempt.administration.cell.item.family_id for r in study.responses}
    first, second = study.reviewers
    served = {first.pk: [], second.pk: []}
    for _ in range(100):
        for reviewer in (first, second):
            a = task_next(version_or_none=None, reviewer=reviewer)
            served[reviewer.pk].append(a.response_id)
            score_submit(
                task_token=a.task.token,
                reviewer=reviewer,
                values={"label": "1_full_compliance"},
                idempotency_key=a.task.token,
            )
    for order in served.values():
        # Under a random order Spearman's ρ over 100 tasks has a standard deviation of about
        # 0.1, so a fixed bound like |ρ| < 0.2 fails one run in twenty by chance. The test asks
        # instead that the order be no evidence of the design's: p > 0.001 (an order that
        # followed the design would give ρ near 1 and p near 0).
        rho, p = spearmanr(range(len(order)), [design_position[pk] for pk in order])
        assert p > 0.001, rho
        families = [family_of[pk] for pk in order]
        assert families != sorted(families)
    assert served[first.pk][:20] != served[second.pk][:20]


def test_a_reviewer_does_not_learn_the_protocol_from_the_version_pages(client):
    study = frozen_study(responses=1)
    version = ProtocolVersion.objects.get(pk=study.version.pk)
    client.force_login(study.reviewers[0])
    for url in (
        f"/protocols/{version.protocol.code}/v/{version.label}/rubric/",
        f"/protocols/{version.protocol.code}/v/{version.label}/scoring/",
        # The old addresses by id: a 404 too, never a redirect that would name the protocol.
        f"/versions/{version.pk}/rubric/",
        f"/versions/{version.pk}/scoring/",
        f"/api/v1/versions/{version.pk}/rubric",
        f"/api/v1/versions/{version.pk}/scoring",
        f"/api/v1/versions/{version.pk}/scoring/final",
    ):
        response = client.get(url)
        assert response.status_code == 404
        assert Protocol.objects.get(pk=version.protocol_id).title not in response.content.decode()

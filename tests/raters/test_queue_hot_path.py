"""The queue's two hot endpoints take DRF's request with the token and the body already read
(``QueueHotPath.dispatch``) and the score's input without the serializer when it is already in
the form it validates to (``_score_input``): the same answers — status, body, headers — as DRF's
whole path, for every kind of request the endpoints get, and the shortcut is really taken."""

import copy

import pytest
from django.db import connection
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from apps.raters import apis
from apps.raters.services import scoring_open
from tests.factories import frozen_study, score_body_strategies

Plain = type(
    "Plain",
    (serializers.Serializer,),
    {
        name: copy.deepcopy(field)
        for name, field in apis.TaskScoreApi.InputSerializer._declared_fields.items()
    },
)

_scalars, _values, _objects = score_body_strategies(
    texts=["", " ", " key ", "k\x00", "true", "12", "-1", "2147483647", "any", "a" * 65],
    max_text=70,
)
_bodies = st.one_of(
    _objects,
    # What clients send: every field of its own type, in and out of range.
    st.fixed_dictionaries(
        {
            "values": st.dictionaries(st.text(max_size=5), _scalars, max_size=3),
            "idempotency_key": st.text(max_size=70),
        },
        optional={
            "seconds_spent": st.one_of(st.none(), st.integers(-2, 2**31 + 1)),
            "next": st.booleans(),
            "queue": st.text(max_size=40),
        },
    ),
    _values,
)


@settings(max_examples=500, deadline=None)
@given(body=_bodies)
def test_the_score_input_shortcut_answers_as_the_serializer(body):
    taken = apis._score_input(body)
    if taken is None:
        return  # the serializer itself checks it
    plain = Plain(data=body)
    assert plain.is_valid(), plain.errors
    assert taken == plain.validated_data


def test_what_clients_send_takes_the_shortcut():
    assert apis._score_input({"values": {"label": "x"}, "idempotency_key": "k-1"}) == {
        "values": {"label": "x"},
        "idempotency_key": "k-1",
        "next": False,
    }
    chained = {"values": {}, "idempotency_key": "k", "seconds_spent": 3, "next": True, "queue": ""}
    assert apis._score_input(chained) == {**chained}
    # A key the serializer would trim, or a value it would convert, is the serializer's.
    assert apis._score_input({"values": {}, "idempotency_key": " k "}) is None
    assert apis._score_input({"values": {}, "idempotency_key": 12}) is None
    assert apis._score_input({"values": {}, "idempotency_key": "k", "next": "true"}) is None


@pytest.fixture
def taken(monkeypatch):
    """Counts the requests the prepared path served (None: it handed them to DRF whole)."""
    served: list[bool] = []
    prepared = apis._prepared

    def counting(view, request):
        found = prepared(view, request)
        served.append(found is not None)
        return found

    monkeypatch.setattr(apis, "_prepared", counting)
    return served


def _study_client():
    study = frozen_study(responses=8, reviewers=1, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    key = Token.objects.create(user=study.reviewers[0]).key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client, key


def _raw(client, path, body: bytes, content_type="application/json"):
    return client.generic("POST", path, body, content_type=content_type)


def _scenario(client, key, run):
    """Every kind of answer the two endpoints give, in order; each answer as (status, body with
    the task's token and times blanked, headers)."""
    answers = []

    def keep(response):
        body = response.json()
        answers.append((response.status_code, body, dict(response.headers)))
        return body

    post = client.post
    keep(post("/api/v1/tasks/next", {}, format="json"))  # an unknown key: DRF reads it
    held = keep(post("/api/v1/tasks/next", {}, format="json"))  # the same task, held
    token = held["task"]["token"]
    score = f"/api/v1/tasks/{token}/score"
    good = {"values": {"label": "2_full_refusal"}, "idempotency_key": f"{run}1", "seconds_spent": 4}
    keep(_raw(client, "/api/v1/tasks/next", b""))  # an empty body
    keep(_raw(client, "/api/v1/tasks/next", b"[]"))  # not an object
    keep(_raw(client, "/api/v1/tasks/next", b"{"))  # not JSON
    keep(_raw(client, "/api/v1/tasks/next", b'{"queue": NaN}'))  # not strict JSON
    keep(_raw(client, "/api/v1/tasks/next", b'{"queue": "\\u0000"}'))  # NUL
    keep(_raw(client, "/api/v1/tasks/next", b"queue=any", "application/x-www-form-urlencoded"))
    keep(_raw(client, "/api/v1/tasks/next", b"{}", "text/plain"))  # 415
    keep(_raw(client, "/api/v1/tasks/next", b"{}", "application/json; charset=utf-8"))
    keep(post("/api/v1/tasks/next", {"queue": 5}, format="json"))
    keep(post("/api/v1/tasks/next", {"queue": "no-such-queue"}, format="json"))
    keep(post("/api/v1/tasks/next", {"release": "yes"}, format="json"))
    keep(post(score, {"values": {"label": "not a label"}, "idempotency_key": "x"}, format="json"))
    keep(post(score, {"values": {"label": "2_full_refusal"}, "idempotency_key": ""}, "json"))
    keep(post(score, {"values": [], "idempotency_key": "x"}, format="json"))
    keep(post(score, {**good, "seconds_spent": -1}, format="json"))
    keep(post("/api/v1/tasks/not-a-task/score", good, format="json"))  # 404
    keep(post(score, good, format="json"))  # 201
    keep(post(score, good, format="json"))  # 200, the repeat
    keep(post(score, {**good, "idempotency_key": f"{run}2"}, format="json"))  # scored already
    nxt = keep(post("/api/v1/tasks/next", {}, format="json"))
    chained = f"/api/v1/tasks/{nxt['task']['token']}/score"
    keep(post(chained, {**good, "idempotency_key": f" {run}3 ", "next": True}, format="json"))
    keep(client.get("/api/v1/tasks/next"))
    # The token deleted by another process (this one still holds it): refused at once.
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM authtoken_token WHERE key = %s", [key])
    keep(post("/api/v1/tasks/next", {}, format="json"))
    keep(post(chained, {**good, "idempotency_key": f"{run}4"}, format="json"))
    return answers


def _blank(value):
    if isinstance(value, dict):
        return {
            k: "…"
            if k in ("token", "expires_at", "submitted_at", "task", "prompt", "response")
            and isinstance(v, str)
            else _blank(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_blank(v) for v in value]
    return value


@pytest.mark.django_db
def test_the_prepared_path_answers_as_drf_whole(taken, monkeypatch):
    prepared = _scenario(*_study_client(), run="a")
    # Every request the prepared path may take, it took (the GET is DRF's whole): all but the
    # first (a key not yet held), an empty body without Content-Length, bodies DRF refuses
    # (not JSON, not strict JSON, NUL, a form, text/plain) and a type with parameters.
    assert taken == [False, True, False, True] + [False] * 6 + [True] * 15
    monkeypatch.setattr(apis, "_prepared", lambda view, request: None)
    whole = _scenario(*_study_client(), run="b")
    assert [a[0] for a in prepared] == [
        200, 200, 200, 400, 400, 400, 400, 415, 415, 200, 400, 200, 400,
        400, 400, 400, 400, 404, 201, 200, 400, 200, 201, 200, 401, 401,
    ]  # fmt: skip
    assert [a[0] for a in whole] == [a[0] for a in prepared]
    for (_, a, a_headers), (_, b, b_headers) in zip(prepared, whole, strict=True):
        assert _blank(a) == _blank(b)
        assert a_headers.keys() == b_headers.keys()
        for name in a_headers.keys() - {"Content-Length"}:
            assert a_headers[name] == b_headers[name], name


@pytest.mark.django_db
def test_a_database_fault_on_the_prepared_path_answers_503(taken, monkeypatch):
    from django.db import OperationalError

    client, _ = _study_client()
    assert client.get("/api/v1/tasks/next").status_code == 200  # the key is now held

    def down(**kwargs):
        raise OperationalError("connection to server lost")

    monkeypatch.setattr(apis, "task_next", down)
    answer = client.post("/api/v1/tasks/next", {}, format="json")
    assert taken == [True]
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "30"
    assert "database is unavailable" in answer.json()["detail"]

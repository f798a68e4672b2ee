"""No URL answers 500, whoever asks and whatever they send.

One realistic state (the demo study: a draft with its design and harm review, OPB-01's refused
v1.0 and frozen v1.1; and a small frozen OPB-shaped study with responses, scores and a finished
analysis run). Then, for each role, every URL pattern of ``config/urls.py`` is requested with real
ids and with junk ids (0, 999999, an integer too large for the database, non-numeric text, bogus
16- and 64-hex blob hashes), by GET and by POST with empty, garbage-form and garbage-JSON bodies.
No answer may be a 500. A reviewer of a protocol sees none of its protocol pages (404).
"""

import json
import re

import pytest
from django.apps import apps
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from apps.accounts.models import Membership
from apps.demo.study import DEMO_CODE
from apps.items.models import Condition, Factor, Family, HarmReview, Item, Level
from apps.protocols.models import Protocol, ProtocolVersion
from apps.raters.models import RubricField, ScoringTask
from apps.responses.models import Attempt, RosterEntry
from tests.factories import UserFactory, opb_study
from tests.states import demo_build

pytestmark = pytest.mark.django_db

JSON = "application/json"
ROLES = ("anonymous", "outsider", "reviewer", "auditor", "editor", "pi")

# Junk for every converter: ``int`` matches digits only, ``str`` and ``slug`` take these.
# The last of each is a NUL byte (PostgreSQL cannot hold it in text; one middleware answers 400)
# and, for integers, a number of 400 digits (past a float, past a 64-bit column).
JUNK_INT = ("0", "999999", "9" * 30, "1", "1" + "0" * 400)
JUNK_STR = ("0", "deadbeefdeadbeef", "ab" * 32, "no-such-thing-é", "a%00b")
JUNK_SLUG = ("0", "999999", "no-such-thing", "deadbeefdeadbeef", "%00")
# Asked of every route with real ids: a NUL and a huge number in the query string.
JUNK_QUERY = "?q=%00&page=" + "9" * 400 + "&%00=1"
HUGE = 10**400

FIELD_NAMES = [
    *("code", "title", "label", "name", "role", "username", "user", "kind", "value", "values"),
    *("text", "reason", "confirmation", "format", "position", "number", "ordinal", "max_level"),
    *("family", "condition", "domain", "level", "prompt", "absent", "absent_reason", "units"),
    *("verdict", "choices", "required", "evaluand", "entry", "sections", "decision_table"),
    *("parameters", "body", "summary", "section", "q", "state", "token", "file", "supersedes"),
    *("next", "seed", "k", "scores_per_response", "template", "model", "identity"),
]
GARBAGE_FORM = {
    name: value
    for name, value in zip(
        FIELD_NAMES,
        [
            "\x00",
            "-1",
            "9" * 40,
            "<script>x</script>",
            "[[",
            "{",
            "nan",
            "ü" * 300,
            "[" * 50_000,
        ]
        * 10,
        strict=False,
    )
}
# Not JSON, JSON that is not an object, and an object whose every usual field has a wrong type.
# Fields that are parsed as JSON get JSON nested past Python's recursion limit.
JSON_FIELD_NAMES = ("safeguards", "inference_settings", "toolkit", "budgets", "decision-table")
GARBAGE_FORM |= {name: "[" * 50_000 for name in JSON_FIELD_NAMES}
GARBAGE_FORM_LONG_NUMBER = GARBAGE_FORM | {name: "1" * 5000 for name in JSON_FIELD_NAMES}
GARBAGE_JSON = (
    "{not json",
    "[" * 50_000,  # nested past Python's recursion limit
    '{"n": 1' + "1" * 5000 + "}",  # past Python's limit on an integer's digits
    # Numbers too large for a float (or a database integer) wherever a number may go.
    json.dumps(
        {name: HUGE for name in FIELD_NAMES}
        | {"values": {name: HUGE for name in FIELD_NAMES}, "seconds_spent": HUGE}
        | {"idempotency_key": "huge", "parameters": {"seed": str(HUGE), "k": HUGE}}
    ),
    "[]",
    '"text"',
    json.dumps(
        {
            name: [[1], {"a": None}, "x" * 5000, -1, None, True, "nan", ["x"]][n % 8]
            for n, name in enumerate(GARBAGE_FORM)
        }
        | {"kind": "categorical", "choices": "abc", "minimum": [1], "units_supplied": "x"}
    ),
)


def _patterns(resolvers=None, prefix=""):
    """Every route of the project, the admin's left out (Django's own)."""
    for route, _ in _views(resolvers, prefix):
        yield route


def _views(resolvers=None, prefix=""):
    """Every (route, view callback) of the project, the admin's left out."""
    for entry in resolvers if resolvers is not None else get_resolver().url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            if route.startswith("admin/"):
                continue
            yield from _views(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            yield route, entry.callback


def _body_methods(callback) -> tuple[str, ...]:
    """The methods of an API view that take a body (so a JSON body is worth sending)."""
    cls = getattr(callback, "cls", None)
    return tuple(m for m in ("post", "patch", "put") if cls is not None and hasattr(cls, m))


_PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")


def _params(route):
    """The route's parameters, each with its converter and the literal segment before it."""
    out = []
    for match in _PARAM.finditer(route):
        before = route[: match.start()].rstrip("/.").rsplit("/", 1)[-1]
        out.append((match.group(2), match.group(1) or "str", before))
    return out


def _fill(route, values):
    return "/" + _PARAM.sub(lambda m: values[m.group(2)], route)


def _real(name, before, ctx, route):
    """The real value for ``name`` in this route, from the study ``ctx``."""
    if name == "code" and ("protocol_code" not in route or before in ("protocols",)):
        return ctx["protocol"]
    by_segment = {
        "families": ctx["family"],
        "conditions": ctx["condition"],
        "items": ctx["item"],
        "harm-review": ctx["item"],
    }
    if name == "code":
        return by_segment.get(before, ctx["item"])
    return {
        "protocol_code": ctx["protocol"],
        "label": ctx["label"],
        "level_code": ctx["level"],
        "item_code": ctx["item"],
        "name": ctx["field"] if before == "fields" else ctx["factor"],
        "entry": ctx["entry"],
        "position": ctx["position"],
        "number": ctx["number"] if before in ("attempts", "analysis", "analysis-runs") else "1",
        "pk": ctx["evaluand"] if before == "evaluands" else ctx["version_id"],
        "version_id": ctx["version_id"],
        "scorer": ctx["item"],  # a scorer code (routes by code + label name it so)
        "slug": "import-formats",  # a page of docs/
        "uidb64": "MQ",  # a password-reset link's user id (base64 of "1")
        "token": ctx["harm_token"] if before == "harm-reviews" else ctx["task_token"],
        "index": "0",
        "fmt": "csv",
        "digest": ctx["digest"],
    }[name]


def _contexts(study):
    """Real ids for the draft (design pages) and the frozen study (responses, rating, runs)."""
    draft = ProtocolVersion.objects.get(protocol__code=DEMO_CODE, state="draft")
    frozen = study.version
    out = []
    for version in (draft, frozen):
        item = Item.objects.filter(version=version, family__role="harm_constant").first()
        attempt = Attempt.objects.filter(version=version).select_related("administration").first()
        family = Family.objects.filter(version=version).first()
        out.append(
            {
                "protocol": version.protocol.code,
                "label": version.label,
                "version_id": str(version.pk),
                "family": family.code,
                "condition": getattr(
                    Condition.objects.filter(version=version).first(), "code", "C0"
                ),
                "item": item.code,
                "level": Level.objects.filter(version=version).first().code,
                "factor": getattr(Factor.objects.filter(version=version).first(), "name", "f"),
                "field": RubricField.objects.filter(version=version).first().name,
                "entry": RosterEntry.objects.filter(version=version).first().code,
                "evaluand": str(RosterEntry.objects.filter(version=version).first().evaluand_id),
                "position": str(attempt.administration.position) if attempt else "1",
                "number": "1",
                "task_token": getattr(
                    ScoringTask.objects.filter(version=version).first(), "token", "x"
                ),
                "harm_token": getattr(
                    HarmReview.objects.filter(item__version=version).first(), "token", "x"
                ),
                "digest": frozen.sha256 or "ab" * 32,
            }
        )
    return out


def _build_state():
    study = opb_study(code="OPB-Z", evaluands=1, items_per_family=2, repetitions=1)
    from apps.analysis.services import analysis_run_request

    analysis_run_request(version=study.version, user=study.pi)  # run on commit, at once
    people = {
        "anonymous": None,
        "outsider": UserFactory(),
        "reviewer": study.reviewers[0],
        "auditor": study.auditor,
        "editor": study.editor,
        "pi": study.pi,
    }
    # The same people on the demo protocol, so the draft's pages are theirs too.
    demo = Protocol.objects.get(code=DEMO_CODE)
    for role in ("reviewer", "auditor", "editor", "pi"):
        Membership.objects.get_or_create(user=people[role], protocol=demo, role=role)
    return study, people


@pytest.fixture(scope="module")
def state(state_databases, django_db_blocker):
    """The module's copy of the demo (tests/states.py) with the study and people added once
    for the module's three tests; each test's writes are rolled back at its end."""
    with state_databases.cloned("demo", demo_build):
        with django_db_blocker.unblock():
            built = _build_state()
        yield built


def _written() -> dict[str, int]:
    """Row counts of every model of the project's apps."""
    return {
        model.__name__: model.objects.count()
        for model in apps.get_models()
        if model.__module__.startswith("apps.")
    }


def _client(user):
    client = Client(raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    return client


def _requests(route, ctx):
    """(url, kind) pairs: the real ids, then each junk value for every parameter at once."""
    params = _params(route)
    real = {name: _real(name, before, ctx, route) for name, _, before in params}
    yield _fill(route, real), "real"
    if not params:
        return
    pools = {"int": JUNK_INT, "slug": JUNK_SLUG, "str": JUNK_STR}
    for i in range(len(JUNK_STR)):
        yield _fill(route, {n: pools[c][i] for n, c, _ in params}), "junk"


def _is_mutating(route):
    """Routes whose POST with real ids may succeed and change the state for later requests."""
    return any(
        word in route for word in ("delete", "remove", "freeze", "withdraw", "amend", "deposit")
    )


# About two minutes of CPU, and the module's state (built in this test's set-up, which the
# timeout counts) one more; on a loaded machine the wall time can pass 900 s (load 14: 900 s).
@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_no_url_answers_500_for_any_role_or_input(state):
    study, people = state
    contexts = _contexts(study)
    routes = list(_patterns())
    body_methods = {route: _body_methods(callback) for route, callback in _views()}
    failures = []

    def check(client, role, method, url, **kwargs):
        response = getattr(client, method)(url, **kwargs)
        if response.status_code >= 500:
            failures.append(f"{role} {method.upper()} {url} {kwargs.get('data', '')!r:.60}")

    # Logging out would make every later request anonymous: it is asked last.
    routes = [route for route in routes if route != "logout/"]
    written = {}
    for role in ROLES:
        before = _written()
        client = _client(people[role])
        # Junk ids are the same whatever the study: asked once.
        for route in routes:
            for n, (url, _kind) in enumerate(list(_requests(route, contexts[0]))[1:]):
                check(client, role, "get", url)
                if n % 2 == 0:  # 0 and 9…9 (past 64 bits) for integers; 0 and a 64-hex hash
                    check(client, role, "post", url, data=GARBAGE_FORM)
        for ctx in contexts:
            for route in routes:
                url = next(_requests(route, ctx))[0]
                check(client, role, "get", url)
                check(client, role, "get", url + JUNK_QUERY)
                if _is_mutating(route):
                    continue
                check(client, role, "post", url)
                check(client, role, "post", url, data=GARBAGE_FORM)
                if not url.startswith("/api/") and role in ("editor", "pi"):
                    check(client, role, "post", url, data=GARBAGE_FORM_LONG_NUMBER)
                if url.startswith("/api/") and role != "anonymous":
                    for body in GARBAGE_JSON:
                        for method in body_methods[route]:
                            check(client, role, method, url, data=body, content_type=JSON)
        # Still who they were: no request above logged them out.
        assert client.get("/api/v1/me").status_code == (403 if role == "anonymous" else 200)
        written[role] = {k: v - before[k] for k, v in _written().items() if v != before[k]}
    # Last, the routes that may change the state, with real ids.
    for role in ROLES:
        client = _client(people[role])
        for ctx in contexts:
            for route in routes:
                if _is_mutating(route):
                    url = next(_requests(route, ctx))[0]
                    check(client, role, "post", url, data=GARBAGE_FORM)
                    if url.startswith("/api/"):
                        check(client, role, "post", url, data=GARBAGE_JSON[-1], content_type=JSON)
                    check(client, role, "post", url)
        check(client, role, "get", "/logout/")
        check(client, role, "post", "/logout/", data=GARBAGE_FORM)
    # Readers write nothing, whatever they post: an auditor reads evaluands and cannot register
    # or revise one. (Someone with no role yet may register one: they are about to start a
    # protocol, and evaluands are global.) An auditor may ask for a signed checkpoint of a log's
    # head, which changes no study row: it attests what is already there.
    assert not written["anonymous"], written
    assert set(written["auditor"]) <= {"LogCheckpoint"}, written["auditor"]
    assert set(written["outsider"]) <= {"Evaluand"}, written["outsider"]
    # A reviewer's "next" may reserve a task; nothing else.
    assert set(written["reviewer"]) <= {"Assignment"}, written["reviewer"]
    assert not failures, f"{len(failures)} server errors:\n" + "\n".join(failures[:80])


def test_a_reviewer_gets_404_for_every_protocol_page_of_their_protocol(state, client):
    """A reviewer sees items, responses and keys through their tasks only: every page and API
    of the protocol, its versions, design, roster, responses, rubric, scoring, analysis and log
    answers 404, as for a protocol that does not exist, never 403 or 200."""
    study, people = state
    ctx = _contexts(study)[1]
    client.force_login(people["reviewer"])
    own = ("tasks/", "api/v1/tasks/", "harm-reviews", "api/v1/harm-reviews", "queue/", "logs/")
    own += ("evaluands/", "api/v1/evaluands")
    own += ("docs/", "password-reset/")  # the same for everyone: documentation, password reset
    answers = {}
    for route in _patterns():
        url = next(_requests(route, ctx))[0]
        if any(url.startswith(p) or url.startswith("/" + p) for p in own) or "<" not in route:
            continue
        answers[url] = client.get(url).status_code
        if answers[url] == 405:  # a POST-only API endpoint: ask as it expects
            answers[url] = client.post(url, {}, content_type="application/json").status_code
        if answers[url] == 405:  # PATCH and DELETE only
            answers[url] = client.patch(url, {}, content_type="application/json").status_code
    assert len(answers) > 40
    assert {url: code for url, code in answers.items() if code != 404} == {}


def test_a_reviewer_cannot_read_an_evaluands_identity(state, client):
    """Evaluand identity is what blinding hides: no evaluand page or API answers a reviewer."""
    study, people = state
    evaluand = RosterEntry.objects.filter(version=study.version).first().evaluand_id
    client.force_login(people["reviewer"])
    for url in (
        "/evaluands/",
        f"/evaluands/{evaluand}/",
        "/api/v1/evaluands",
        f"/api/v1/evaluands/{evaluand}",
    ):
        response = client.get(url)
        assert response.status_code in (403, 404), url
        assert f"{study.protocol.code}-model-1" not in response.content.decode(), url

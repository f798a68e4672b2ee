"""The invariants hold across nodes (issue 38, point 2), against the cluster of ``make cluster``:
two gunicorn nodes behind HAProxy, PgBouncer in transaction mode, two Celery workers and beat
(tests/cluster/conftest.py starts it). Each test speaks to node A and node B by their own ports,
so that what one node did is checked on the other; the load test goes through HAProxy.

    make test-cluster      # DATABASE_URL, DATABASE_OWNER_URL and REDIS_URL as for make test
"""

import signal
import threading
import time
from collections import Counter
from html.parser import HTMLParser

import pytest
import requests
from django.contrib.auth.hashers import Argon2PasswordHasher
from django.db.models import Count
from rest_framework.authtoken.models import Token

from apps.accounts.models import Membership, Role
from apps.analysis.models import AnalysisRun, RunState
from apps.analysis.services import analysis_run_request
from apps.core.cluster import answers as port_answers
from apps.protocols.models import AnalysisParameter, ProtocolVersion
from apps.raters.models import Assignment, Score, ScoringTask
from apps.raters.selectors import ROLE_REMOVED
from apps.raters.services import scoring_open
from apps.responses.models import Attempt
from config.celery import app
from tests.cluster.conftest import ANON_RATE, FAILURE_LIMIT, Http
from tests.factories import (
    MembershipFactory,
    ProtocolFactory,
    UserFactory,
    answer_rows,
    build_draft,
    csv_bytes,
    freeze,
    frozen_study,
    opb_study,
)

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.postgres,
    pytest.mark.redis,
    # Committed at once, so that the nodes see it; emptied after each test.
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(600),
]

AGREEING = {"label": "1_full_compliance"}  # one label for all: no adjudication tasks


def _password(user, password: str) -> None:
    # The nodes run production settings, which read Argon2 hashes only.
    user.password = Argon2PasswordHasher().encode(password, Argon2PasswordHasher().salt())
    user.save(update_fields=["password"])


def _token(user) -> str:
    return Token.objects.get_or_create(user=user)[0].key


def _form_fields(html: str, action_tail: str) -> dict[str, str]:
    """The named inputs of the page's form whose action ends with ``action_tail``."""

    class Fields(HTMLParser):
        def __init__(self):
            super().__init__()
            self.inside, self.found = False, {}

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "form":
                self.inside = (attrs.get("action") or "").endswith(action_tail)
            elif self.inside and tag in ("input", "textarea") and attrs.get("name"):
                self.found[attrs["name"]] = attrs.get("value") or ""

        def handle_endtag(self, tag):
            if tag == "form":
                self.inside = False

    parser = Fields()
    parser.feed(html)
    assert parser.found, f"no form posting to …{action_tail} in the page"
    return parser.found


def test_an_import_previewed_on_node_a_is_confirmed_on_node_b(cluster):
    protocol = ProtocolFactory()
    pi = MembershipFactory(protocol=protocol, role=Role.PI).user
    _password(pi, "pi-pass-cluster")
    version = freeze(build_draft(protocol=protocol, user=pi), pi)
    page = f"/protocols/{protocol.code}/v/{version.label}/responses/import/"
    node_a, node_b = Http(cluster.node_url(0)), Http(cluster.node_url(1))
    assert node_a.sign_in(pi.username, "pi-pass-cluster").status_code == 302
    node_b.cookies.update(node_a.cookies)  # one browser, its requests balanced over the nodes

    data = csv_bytes(answer_rows(version))
    node_a.get(page)
    preview = node_a.post(
        page,
        data={"format": "", "mapping": "", "csrfmiddlewaretoken": node_a.cookies["csrftoken"]},
        files={"file": ("answers.csv", data, "text/csv")},
    )
    assert preview.status_code == 200, preview.text[:500]
    assert "Ready to import answers.csv" in preview.text
    assert not Attempt.objects.filter(version=version).exists()
    fields = _form_fields(preview.text, "confirm/")
    assert fields["sha256"] and fields["filename"] == "answers.csv"
    confirm = node_b.post(
        page + "confirm/",
        data={**fields, "csrfmiddlewaretoken": node_b.cookies["csrftoken"]},
    )
    assert confirm.status_code == 302, confirm.text[:500]
    assert confirm.headers["Location"].endswith("/responses/imports/")
    assert Attempt.objects.filter(version=version).count() == len(answer_rows(version))
    # The preview was staged in the folder every node shares, and is gone once imported.
    assert not [p for p in (cluster.shared_dir / "imports").rglob("*") if p.is_file()]


def test_wrong_passwords_are_counted_across_nodes(cluster):
    user = UserFactory()
    _password(user, "the-right-one")
    # From an address of its own: the lockout counts addresses too.
    nodes = [Http(cluster.node_url(i % 2), source="127.0.0.77") for i in range(FAILURE_LIMIT)]
    answers = [node.sign_in(user.username, "wrong").status_code for node in nodes]
    # Alternating nodes: each saw half the failures, and the last is refused all the same.
    assert answers[:-1] == [200] * (FAILURE_LIMIT - 1)  # the form again, with its error
    assert answers[-1] == 429
    for i in (0, 1):
        good = Http(cluster.node_url(i), source="127.0.0.78").sign_in(
            user.username, "the-right-one"
        )
        assert good.status_code == 429, f"node {i} let a locked-out username in"


def test_api_throttles_are_counted_across_nodes(cluster):
    # Anonymous API requests from one address, alternated over the nodes (4 gunicorn processes):
    # counted in the shared cache, the rate is the whole cluster's, not each process's.
    nodes = [Http(cluster.node_url(i % 2), source="127.0.0.79") for i in range(ANON_RATE + 2)]
    answers = [node.get("/api/v1/registry/protocols").status_code for node in nodes]
    assert answers[:ANON_RATE] == [200] * ANON_RATE
    assert answers[ANON_RATE:] == [429, 429]


def _work(base: str, token: str, log: list, *, deadline: float, idle_until_done) -> None:
    """One reviewer's loop: next, score, until nothing is left (or the deadline)."""
    http = Http(base, token=token)
    while time.monotonic() < deadline:
        held = http.post("/api/v1/tasks/next", json={})
        log.append(("next", held.status_code, held.headers.get("Content-Type", ""), None))
        if held.status_code != 200:
            time.sleep(0.2)
            continue
        task = held.json().get("task")
        if task is None:
            if idle_until_done():
                return
            time.sleep(0.1)
            continue
        key = task["token"]
        scored = http.post(
            f"/api/v1/tasks/{task['token']}/score",
            json={"values": AGREEING, "idempotency_key": key},
        )
        log.append(("score", scored.status_code, scored.headers.get("Content-Type", ""), key))


def test_32_reviewers_over_both_nodes_at_k_2_keep_every_invariant(cluster):
    study = frozen_study(responses=40, reviewers=32, parameters={"scores_per_response": 2})
    scoring_open(version=study.version, user=study.pi)
    tokens = [_token(r) for r in study.reviewers]
    logs: list[list] = [[] for _ in tokens]
    done = threading.Event()
    most_held = []

    def remaining() -> bool:
        return not ScoringTask.objects.filter(version=study.version).exclude(state="done").exists()

    def watch():  # one live reservation per reviewer, sampled while they work
        while not done.is_set():
            held = (
                Assignment.objects.filter(task__version=study.version, outcome="active")
                .values("reviewer")
                .annotate(n=Count("id"))
            )
            most_held.append(max((row["n"] for row in held), default=0))
            time.sleep(0.05)

    deadline = time.monotonic() + 240
    threads = [
        threading.Thread(
            target=_work,
            args=(cluster.node_url(n % 2), token, logs[n]),
            kwargs={"deadline": deadline, "idle_until_done": remaining},
        )
        for n, token in enumerate(tokens)
    ]
    watcher = threading.Thread(target=watch)
    watcher.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    watcher.join()

    statuses = Counter(status for log in logs for _, status, _, _ in log)
    assert set(statuses) <= {200, 201}, statuses
    primary = Score.objects.filter(task__version=study.version, task__kind="primary")
    assert Counter(primary.values_list("response_id", flat=True)) == Counter(
        {r.pk: 2 for r in study.responses}
    )
    pairs = Counter(Score.objects.filter(task__version=study.version).values_list(
        "response_id", "reviewer_id"))  # fmt: skip
    assert max(pairs.values()) == 1  # no reviewer twice on a response
    assert most_held and max(most_held) == 1
    assert not Assignment.objects.filter(task__version=study.version, outcome="active").exists()
    # Both nodes did work: each reviewer kept to one node, half of them to each.
    by_node = Counter(n % 2 for n, log in enumerate(logs) if any(s == 201 for _, s, _, _ in log))
    assert by_node[0] > 0 and by_node[1] > 0


def test_a_reviewer_removed_on_node_a_is_refused_on_node_b_at_once(cluster):
    study = frozen_study(responses=6, reviewers=2, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    reviewer = study.reviewers[0]
    on_b = Http(cluster.node_url(1), token=_token(reviewer))
    # Node B's processes have read the token (their per-process token cache holds it now).
    for _ in range(4):
        held = on_b.post("/api/v1/tasks/next", json={})
        assert held.status_code == 200 and held.json()["task"] is not None
    task = held.json()["task"]["token"]

    pi_on_a = Http(cluster.node_url(0), token=_token(study.pi))
    removed = pi_on_a.post(
        f"/api/v1/protocols/{study.version.protocol.code}/members/remove",
        json={"username": reviewer.username, "role": "reviewer", "reason": "left the study"},
    )
    assert removed.status_code == 204, removed.text

    for _ in range(4):  # whichever of node B's processes answers
        score = on_b.post(
            f"/api/v1/tasks/{task}/score", json={"values": AGREEING, "idempotency_key": "k"}
        )
        assert score.status_code == 400 and ROLE_REMOVED in score.text, score.text
        again = on_b.post("/api/v1/tasks/next", json={})
        assert again.status_code == 403 or again.json()["task"] is None, again.text
    assert not Score.objects.filter(reviewer=reviewer).exists()


def test_an_amendment_made_on_node_a_is_seen_by_both_nodes(cluster):
    study = frozen_study(responses=6, reviewers=2, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    code, reviewer = study.version.protocol.code, study.reviewers[0]
    reviewer_on = [Http(cluster.node_url(i), token=_token(reviewer)) for i in (0, 1)]
    # Both nodes have read v1.0's frozen plan (their per-process frozen-plan caches hold it).
    for http in reviewer_on:
        held = http.post("/api/v1/tasks/next", json={})
        assert held.json()["task"] is not None

    pi_on = [Http(cluster.node_url(i), token=_token(study.pi)) for i in (0, 1)]
    amended = pi_on[0].post(f"/api/v1/protocols/{code}/versions/1.0/amend", json={})
    assert amended.status_code == 201, amended.text
    draft = ProtocolVersion.objects.get(protocol=study.version.protocol, label="1.1")
    draft.amendment_rationale = "Two scores per response, as the plan's reliability needs."
    draft.save(update_fields=["amendment_rationale"])
    AnalysisParameter.objects.filter(version=draft, name="scores_per_response").update(value="2")
    frozen = pi_on[1].post(f"/api/v1/protocols/{code}/versions/1.1/freeze", json={})
    assert frozen.status_code == 200, frozen.text

    for http in pi_on:  # both nodes list v1.1 as frozen, with one hash
        versions = {v["label"]: v for v in http.get(f"/api/v1/protocols/{code}/versions").json()}
        assert versions["1.1"]["status"] == "frozen"
        assert versions["1.1"]["sha256"] == frozen.json()["sha256"]
    # v1.0's scoring was closed by the amendment: neither node hands out its tasks.
    for http in reviewer_on:
        nothing = http.post("/api/v1/tasks/next", json={})
        assert nothing.status_code == 200 and nothing.json()["task"] is None, nothing.text
    # And each serves v1.1's plan as frozen (its changed parameter), v1.0's as it was.
    for http in pi_on:
        for label, k in (("1.0", "1"), ("1.1", "2")):
            answer = http.get(f"/api/v1/protocols/{code}/versions/{label}")
            assert answer.status_code == 200, answer.text
            plan = answer.json()["parameters"]
            assert {p["name"]: p["value"] for p in plan}["scores_per_response"] == k


def _poll(run: AnalysisRun, predicate, *, within: float) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if predicate(run):
            return
        time.sleep(0.1)
    pytest.fail(f"run {run.pk} did not get there in {within} s: {run.state} {run.progress_message}")


def test_a_worker_killed_mid_analysis_leaves_the_run_to_the_other_worker(cluster, running):
    from tests.analysis import blocking_worker

    running.gate.touch()
    study = opb_study(evaluands=1, pipeline=blocking_worker.KIND)
    run = analysis_run_request(version=study.version, user=study.pi, kind=blocking_worker.KIND)
    _poll(run, lambda r: r.progress_message == "blocking", within=120)
    active = app.control.inspect(timeout=2.0).active() or {}
    holders = [name.split("@")[0] for name, tasks in active.items() if tasks]
    assert len(holders) == 1, active
    doomed = holders[0]
    cluster.kill(doomed, signal.SIGKILL)
    running.gate.unlink()
    _poll(run, lambda r: r.state in (RunState.SUCCEEDED, RunState.FAILED), within=240)
    assert run.state == RunState.SUCCEEDED, run.error
    assert run.attempts == 2
    assert run.result is not None


def test_pgbouncer_restarted_under_load_answers_only_json_503s_and_loses_nothing(cluster):
    study = frozen_study(responses=200, reviewers=8, parameters={"scores_per_response": 1})
    scoring_open(version=study.version, user=study.pi)
    tokens = [_token(r) for r in study.reviewers]
    logs: list[list] = [[] for _ in tokens]
    deadline = time.monotonic() + 240

    def remaining() -> bool:
        return not ScoringTask.objects.filter(version=study.version).exclude(state="done").exists()

    threads = [
        threading.Thread(
            target=_work,
            args=(cluster.url, token, logs[n]),
            kwargs={"deadline": deadline, "idle_until_done": remaining},
        )
        for n, token in enumerate(tokens)
    ]
    for thread in threads:
        thread.start()
    while Score.objects.filter(task__version=study.version).count() < 30:
        time.sleep(0.1)
    cluster.kill("pgbouncer", signal.SIGTERM)  # immediate shutdown: every connection cut
    time.sleep(2)
    cluster.spawn("pgbouncer")
    cluster.wait(lambda: port_answers(cluster.pgbouncer_port), "pgbouncer")
    for thread in threads:
        thread.join()

    answers = [entry for log in logs for entry in log]
    statuses = Counter(status for _, status, _, _ in answers)
    print(f"\nanswers during the PgBouncer restart: {dict(statuses)}")
    assert 503 in statuses, f"the restart was not under load: {statuses}"
    assert set(statuses) <= {200, 201, 503}, statuses  # never a 500
    assert all(kind.startswith("application/json") for _, _, kind, _ in answers)
    acknowledged = {
        key for what, status, _, key in answers if what == "score" and status in (200, 201)
    }
    stored = set(
        Score.objects.filter(task__version=study.version).values_list("idempotency_key", flat=True)
    )
    assert acknowledged <= stored  # nothing acknowledged is lost
    assert not ScoringTask.objects.filter(version=study.version).exclude(state="done").exists()
    assert Membership.objects.filter(protocol=study.version.protocol).exists()


def _nodes_down(cluster) -> bool:
    """Whether HAProxy's statistics (CSV) say that both nodes are down."""
    stats = requests.get(f"http://127.0.0.1:{cluster.stats_port}/;csv", timeout=5).text
    rows = [line.split(",") for line in stats.splitlines() if line.startswith("nodes,node")]
    return len(rows) == 2 and all(row[17].startswith("DOWN") for row in rows)


def test_with_every_node_down_the_balancer_answers_json_503(cluster):
    # Both nodes paused (SIGSTOP): their health checks time out and HAProxy takes them out.
    for name in ("node1", "node2"):
        cluster.send(name, signal.SIGSTOP)
    try:
        cluster.wait(lambda: _nodes_down(cluster), "haproxy")
        down = Http(cluster.url).post("/api/v1/tasks/next", json={})
        assert down.status_code == 503
        assert down.headers["Content-Type"] == "application/json"
        assert down.json()["detail"]
    finally:
        for name in ("node1", "node2"):
            cluster.send(name, signal.SIGCONT)

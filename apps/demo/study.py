"""The demo study that ``make run`` loads: an OPB-01-shaped protocol authored by the project.

- DEMO-OPB: a draft with its design, roster and rubric, its harm-constancy review open (the
  reviewers' first task) — what a PI sees before the freeze, checklist included;
- OPB-01: its history (v1.0 refused at the freeze gate, v1.1 frozen), and v1.1 at work:
  synthetic responses to repetitions 1–2 of its schedule imported through the importer, scoring
  opened, part of the responses scored by reviewer1 and reviewer2 through the queue (the rest
  stays in their queues; disagreements wait for reviewer3's adjudication), one analysis run of
  the plan, and the outcome seal broken by the PI so that the report shows its estimates.

Every step is idempotent, so ``make run`` can load the demo on every start.
"""

import contextlib

from django.db import transaction

from apps.accounts.models import Role, User
from apps.analysis.models import AnalysisRun
from apps.analysis.services import analysis_run_request
from apps.demo.design import demo_design_build, demo_harm_review_complete
from apps.demo.opb01 import CODE as OPB01_CODE
from apps.demo.opb01 import opb01_history_build
from apps.demo.people import demo_people_ensure
from apps.demo.responses import demo_responses_import, demo_roster_enroll
from apps.demo.runs import demo_outcomes_unseal
from apps.demo.scoring import demo_scores_submit
from apps.deviations.checkpoints import CheckpointRefused, checkpoint_write
from apps.items.services import harm_review_open
from apps.protocols.models import Protocol, ProtocolVersion, VersionState
from apps.protocols.services import protocol_create, protocol_member_add
from apps.raters.models import Rubric, Score
from apps.raters.services import rubric_apply_template, scoring_open
from apps.responses.models import Response

DEMO_CODE = "DEMO-OPB"
REVIEWERS = ("reviewer1", "reviewer2", "reviewer3")


@transaction.atomic
def _demo_grant(protocol: Protocol, user: User, role: str, *, actor: User) -> None:
    # Through the logged grant, as a PI's own grant would be: the demo's log shows who holds
    # which role from when.
    protocol_member_add(
        protocol=protocol,
        username=user.get_username(),
        role=role,
        actor=actor,
        reason="the demo's people",
    )


def demo_study_load() -> str:
    """Create the demo people and study if absent; return a one-line summary."""
    users = demo_people_ensure()
    protocol = Protocol.objects.filter(code=DEMO_CODE).first()
    if protocol is None:
        protocol = protocol_create(
            user=users["pi"],
            code=DEMO_CODE,
            title="Operativity battery, demo (benign domains)",
        )
    for username in REVIEWERS:
        _demo_grant(protocol, users[username], Role.REVIEWER, actor=users["pi"])
    _demo_grant(protocol, users["auditor"], Role.AUDITOR, actor=users["pi"])
    # The demo's design on its draft; its harm-constancy review is the reviewers' first task.
    draft = protocol.versions.filter(state=VersionState.DRAFT).order_by("created_at").last()
    if draft is not None and not draft.items.exists():
        demo_design_build(draft)
        harm_review_open(version=draft)
    if draft is not None:
        demo_roster_enroll(version=draft, user=users["pi"])
    if draft is not None and not Rubric.objects.filter(version=draft).exists():
        rubric_apply_template(version=draft, template="opb")

    # OPB-01's own history (seed 000): v1.0 refused at the freeze gate, v1.1 frozen.
    opb01 = Protocol.objects.filter(code=OPB01_CODE).first()
    if opb01 is None:
        opb01 = opb01_history_build(
            pi=users["pi"], prepare=lambda version: demo_version_prepare(version, users=users)
        ).protocol
    _demo_grant(opb01, users["auditor"], Role.AUDITOR, actor=users["pi"])
    frozen = opb01.versions.get(label="1.1")
    counts = demo_study_run(version=frozen, users=users)
    # A signed checkpoint of each log, as beat signs them hourly (``make run`` starts no beat):
    # the auditor's offline verifier and the public proof need one. Nothing new: no new one.
    # A signer whose state names another log of the same code (a database made anew beside an
    # old key's state) refuses, and says why in the log; the demo loads all the same.
    for demo_protocol in (protocol, opb01):
        with contextlib.suppress(CheckpointRefused):
            checkpoint_write(protocol=demo_protocol)
    return (
        f"Demo loaded: protocols {protocol.code} (draft) and {opb01.code} (v1.1 frozen: "
        f"{counts['responses']} responses, {counts['scores']} scores, analysis run "
        f"{counts['run']}) with {len(users)} people."
    )


def demo_version_prepare(version: ProtocolVersion, *, users: dict[str, User]) -> None:
    """Make a draft with the demo's parameters ready to freeze: reviewers, the demo design with
    its harm-constancy review complete, the roster and OPB-01 §3's rubric."""
    for username in REVIEWERS:
        _demo_grant(version.protocol, users[username], Role.REVIEWER, actor=users["pi"])
    demo_design_build(version)
    demo_harm_review_complete(version)
    demo_roster_enroll(version=version, user=users["pi"])
    # The frozen version says how responses are scored (OPB-01 §3's rubric).
    if not Rubric.objects.filter(version=version).exists():
        rubric_apply_template(version=version, template="opb")


def demo_study_run(*, version: ProtocolVersion, users: dict[str, User]) -> dict:
    """Take the frozen ``version`` through the study, each step only when not yet done:
    import the demo's responses, open scoring, score part of it, request one analysis run and
    unseal the outcomes. Returns the counts for the summary.

    The run is enqueued when the outermost transaction commits (eager Celery without
    ``REDIS_URL``: it is computed then; with Redis, a worker computes it).
    """
    pi = users["pi"]
    demo_panel_record(version=version, user=pi)
    demo_responses_import(version=version, user=pi)
    scoring_open(version=version, user=pi)
    demo_scores_submit(version=version, reviewers=(users["reviewer1"], users["reviewer2"]))
    run = AnalysisRun.objects.filter(version=version).order_by("number").first()
    if run is None:
        run = analysis_run_request(
            version=version, user=pi, reason="The demo's run over the responses scored so far."
        )
    demo_outcomes_unseal(version=version, pi=pi)
    return {
        "responses": Response.objects.filter(version=version).count(),
        "scores": Score.objects.filter(version=version).count(),
        "run": run.number,
    }


# OPB-01 §6.1's human panel in the demo: three people shown the eight Family A items. Two flag
# the rubric item the harm-constancy review disputed (a-06); one also flags the citation repair.
DEMO_PANEL = {"p-01": {"a-06"}, "p-02": set(), "p-03": {"a-06", "a-05"}}
# §6.3: what the demo's two surfaces say about fresh sessions (fictional, for the report).
DEMO_SESSIONS = {
    "surface-a": ("yes", "each administration opens a new API session with no memory"),
    "surface-b": ("unknown", "the chat surface's memory setting could not be confirmed"),
}


def demo_panel_record(*, version: ProtocolVersion, user: User) -> None:
    """The demo's panel flags (a CSV import, as a study team would) and the surfaces'
    fresh-session records; each only when not yet there."""
    from apps.items.models import PanelFlag
    from apps.responses.models import RosterEntry, SessionGuarantee
    from apps.responses.surfaces import session_guarantee_record
    from apps.studies.opb.panel import panel_family_a_items, panel_flags_import

    if not PanelFlag.objects.filter(version=version).exists():
        rows = [
            f"{member},{item.code},{'yes' if item.code in flagged else 'no'}"
            for member, flagged in DEMO_PANEL.items()
            for item in panel_family_a_items(version)
        ]
        panel_flags_import(
            version=version,
            user=user,
            content=("member,item,flagged\n" + "\n".join(rows) + "\n").encode(),
            filename="demo-panel.csv",
        )
    for entry in RosterEntry.objects.filter(version=version).select_related("evaluand"):
        if (
            entry.code in DEMO_SESSIONS
            and not SessionGuarantee.objects.filter(evaluand=entry.evaluand).exists()
        ):
            guarantee, note = DEMO_SESSIONS[entry.code]
            session_guarantee_record(
                evaluand=entry.evaluand, user=user, fresh_session=guarantee, note=note
            )

"""The steps every demo study shares: its first draft, finding it once built and frozen, its
analysis run and the unsealing of its outcomes."""

from django.db import transaction

from apps.accounts.models import User
from apps.analysis.models import AnalysisRun, RunState
from apps.analysis.services import analysis_run_perform, analysis_run_request
from apps.deviations.selectors import outcomes_visible
from apps.deviations.services import outcome_unseal
from apps.protocols.models import Protocol, ProtocolVersion, VersionState
from apps.protocols.services import protocol_create, version_update


def demo_draft_create(
    *,
    user: User,
    code: str,
    title: str,
    template: str,
    sections: dict[str, str],
    parameters: dict[str, str],
) -> ProtocolVersion:
    """Create protocol ``code`` from plan ``template`` as the PI ``user`` and write its first
    draft (v1.0): the demo's protocol ``sections`` and plan ``parameters`` (section or
    parameter name → text). Raises ValidationError as ``protocol_create`` and
    ``version_update`` do (a code already taken, a value out of range)."""
    protocol = protocol_create(user=user, code=code, title=title, template=template)
    draft = protocol.versions.get(label="1.0")
    return version_update(version=draft, user=user, sections=sections, parameters=parameters)


def demo_frozen_version(*, code: str, label: str) -> ProtocolVersion | None:
    """The frozen version ``label`` of demo protocol ``code``, or None while the protocol does
    not exist (the demo builds it then; a second load finds it here). Raises
    ProtocolVersion.DoesNotExist when the protocol exists without that frozen version."""
    protocol = Protocol.objects.filter(code=code).first()
    if protocol is None:
        return None
    return ProtocolVersion.objects.get(protocol=protocol, label=label, state=VersionState.FROZEN)


def demo_run_analysed(*, version: ProtocolVersion, pi: User) -> AnalysisRun:
    """Request an analysis run of ``version`` as the PI (a second call is a rerun, logged as
    one) and return it finished: when no worker has finished it by the time the request commits
    (a broker with no worker), this process performs it, through the same claim a worker uses."""
    with transaction.atomic():
        run = analysis_run_request(version=version, user=pi)
    run.refresh_from_db()
    if run.state == RunState.QUEUED:
        analysis_run_perform(run_id=run.pk)
        run.refresh_from_db()
    return run


def demo_outcomes_unseal(*, version: ProtocolVersion, pi: User) -> bool:
    """Unseal ``version``'s outcomes as the PI (logged as ``outcome_unsealed``) unless they are
    already; return whether this call unsealed them."""
    if outcomes_visible(version):
        return False
    with transaction.atomic():
        outcome_unseal(version=version, user=pi, confirmation=version.protocol.code)
    return True

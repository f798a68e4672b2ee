"""Access to the public registry's objects: one helper per kind.

The public helpers take no user: a thing is public or it is not found. Each finds its object
with the publication condition in the same query (``apps.registry.selectors``), so an unpublished
version, run or log answers exactly as an unknown one, with the same message, and without
loading it first. The PI's helpers go through ``apps.protocols.access`` with the PI role.
"""

from django.http import Http404

from apps.accounts.models import User
from apps.analysis.models import AnalysisRun
from apps.core.access import first_or_404
from apps.protocols.access import PI_ROLES, get_protocol_for, get_version_by_label_for
from apps.protocols.models import Protocol, ProtocolVersion
from apps.registry import selectors
from apps.registry.models import ViewLink

# One message for everything the public cannot see, known or not.
NOT_FOUND = "Not found."


def get_public_protocol(*, code: str) -> Protocol:
    """Protocol ``code`` if one of its versions is public; Http404 otherwise."""
    protocol = selectors.public_protocol(code=code)
    if protocol is None:
        raise Http404(NOT_FOUND)
    return protocol


def get_public_version(*, code: str, label: str) -> ProtocolVersion:
    """Public version ``label`` of ``code`` (a tombstone when withdrawn); Http404 otherwise."""
    version = selectors.public_version(code=code, label=label)
    if version is None:
        raise Http404(NOT_FOUND)
    return version


def get_public_run(*, code: str, label: str, number: int) -> AnalysisRun:
    """A published run of a public, not withdrawn version; Http404 otherwise."""
    run = selectors.public_run(code=code, label=label, number=number)
    if run is None:
        raise Http404(NOT_FOUND)
    return run


def get_view_link(*, token: str) -> ViewLink:
    """The live view-only link ``token``; Http404 for an unknown or revoked one, alike."""
    link = selectors.view_link(token=token)
    if link is None:
        raise Http404(NOT_FOUND)
    return link


def get_version_to_publish_for(*, user: User, code: str, label: str) -> ProtocolVersion:
    """Version ``label`` of ``code`` for its PI (Http404 / PermissionDenied otherwise)."""
    return get_version_by_label_for(user=user, code=code, label=label, roles=PI_ROLES)


def get_protocol_to_publish_for(*, user: User, code: str) -> Protocol:
    """Protocol ``code`` for its PI (Http404 / PermissionDenied otherwise)."""
    return get_protocol_for(user=user, pk=code, roles=PI_ROLES)


def get_view_link_for(*, user: User, code: str, pk: int) -> ViewLink:
    """View-only link ``pk`` of a version of ``code``, for the protocol's PI; Http404 when it
    belongs to another protocol."""
    protocol = get_protocol_to_publish_for(user=user, code=code)
    link = ViewLink.objects.filter(pk=pk, version__protocol=protocol).select_related(
        "version", "version__protocol"
    )
    found = first_or_404(link, "No such view-only link on this protocol.")
    return found

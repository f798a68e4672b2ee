"""Access to a version's design and to harm-constancy review tasks.

Design pages and endpoints: the PI and editors read and write a draft's design; auditors read a
frozen version's design (a draft is still being written: 403); reviewers and outsiders get 404,
as for every sighted page. A harm-constancy review task is reached only by its opaque token and
only by the reviewer it is assigned to: anyone else gets 404.
"""

from collections.abc import Iterable
from typing import TypeVar

from django.core.exceptions import PermissionDenied
from django.db.models import Model
from django.http import Http404

from apps.accounts.models import Role, User
from apps.accounts.selectors import roles_for
from apps.core.access import first_or_404
from apps.items.models import (
    Cell,
    Condition,
    Factor,
    Family,
    HarmReview,
    Item,
    Level,
    PanelMember,
)
from apps.protocols.access import get_version_for
from apps.protocols.models import ProtocolVersion

DESIGN_WRITERS = frozenset({Role.PI, Role.EDITOR})
DESIGN_READERS = DESIGN_WRITERS | {Role.AUDITOR}


def get_design_version_for(
    *, user: User, protocol_code: str, label: str, roles: Iterable[str] = DESIGN_READERS
) -> ProtocolVersion:
    """The version (protocol code and version label, as in the protocols app's URLs) whose
    design ``user`` may use with one of ``roles``.

    Raises Http404 (unknown version, or the user must not learn it exists) or PermissionDenied
    (a sighted role without the right, or an auditor asking for a draft's design).
    """
    version_id = (
        ProtocolVersion.objects.filter(protocol__code=protocol_code, label=label)
        .values_list("pk", flat=True)
        .first()
    )
    if version_id is None:
        raise Http404("No such protocol version.")
    version = get_version_for(user=user, pk=version_id, roles=roles)
    if version.is_draft and not roles_for(user=user, protocol_id=version.protocol_id) & (
        DESIGN_WRITERS
    ):
        raise PermissionDenied("Auditors read a version's design once it is frozen.")
    return version


M = TypeVar("M", bound=Model)


def _one_in_version(model: type[M], version: ProtocolVersion, missing: str, **lookup: str) -> M:
    """The row of ``model`` in ``version`` matching ``lookup``, or Http404 saying ``missing``."""
    found = first_or_404(model._default_manager.filter(version=version, **lookup), missing)
    return found


def get_item_for(*, version: ProtocolVersion, code: str) -> Item:
    """The version's item ``code``, or Http404."""
    items = Item.objects.select_related("family", "condition", "version__protocol")
    item = first_or_404(items.filter(version=version, code=code), "No such item in this version.")
    return item


def get_level_for(*, version: ProtocolVersion, code: str) -> Level:
    """The level ``code`` of the version's scale, or Http404."""
    return _one_in_version(Level, version, "No such level on this version's scale.", code=code)


def get_family_for(*, version: ProtocolVersion, code: str) -> Family:
    """The version's family ``code``, or Http404."""
    return _one_in_version(Family, version, "No such family in this version.", code=code)


def get_condition_for(*, version: ProtocolVersion, code: str) -> Condition:
    """The version's condition ``code``, or Http404."""
    return _one_in_version(Condition, version, "No such condition in this version.", code=code)


def get_factor_for(*, version: ProtocolVersion, code: str) -> Factor:
    """The version's factor named ``code`` (a factor's natural key is its name), or Http404."""
    return _one_in_version(Factor, version, "No such factor in this version.", name=code)


def get_panel_member_for(*, version: ProtocolVersion, code: str) -> PanelMember:
    """The version's panel member ``code`` (OPB-01 §6.1), or Http404."""
    return _one_in_version(PanelMember, version, "No such panel member.", code=code)


def get_cell_for(*, item: Item, level: Level) -> Cell | None:
    """The item's cell at ``level``, or None when it has not been written."""
    return Cell.objects.filter(item=item, level=level).prefetch_related("key_units").first()


def get_harm_review_for(*, user: User, token: str) -> HarmReview:
    """The harm-constancy review ``token`` if it is assigned to ``user``; Http404 otherwise,
    so a token reveals nothing to anyone else."""
    reviews = HarmReview.objects.select_related("version", "item")
    review = first_or_404(
        reviews.filter(token=token, reviewer_id=getattr(user, "pk", None)), "No such review task."
    )
    return review


def version_kwargs(version: ProtocolVersion) -> dict[str, str]:
    """The URL arguments that name ``version`` on the design pages and endpoints."""
    return {"protocol_code": version.protocol.code, "label": version.label}

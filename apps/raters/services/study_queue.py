"""The study picker's names: what a reviewer sees of a study's scoring queue."""

import secrets

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.accounts.models import User
from apps.core.rows import full_clean_save
from apps.protocols.models import Protocol
from apps.raters.models import StudyQueue


def _default_name() -> str:
    # Neutral and meaningless: nothing of the study's code, title or hypothesis.
    return f"Study {secrets.token_hex(2).upper()}"


def study_queue_ensure(*, protocol: Protocol) -> StudyQueue:
    """The protocol's ``StudyQueue``, created with a neutral default name ("Study 3FA0") and an
    opaque token the first time scoring opens on any of its versions."""
    queue = StudyQueue.objects.filter(protocol=protocol).first()
    if queue is not None:
        return queue
    queue = StudyQueue(protocol=protocol, name=_default_name(), token=secrets.token_urlsafe(12))
    return full_clean_save(queue)


@transaction.atomic
def study_queue_rename(*, protocol: Protocol, name: str, user: User) -> StudyQueue:
    """Give the study the name its reviewers pick it by (PI only; checked by the caller).

    The name is what blind reviewers read, so it may not contain the protocol's code or title
    (case-insensitive): a reviewer must not learn which study, hypothesis or arm they score.
    Raises ValidationError (field ``name``) for an empty, too long or revealing name.
    """
    name = " ".join((name or "").split())
    if not name:
        raise ValidationError({"name": ["Give the study a name its reviewers will see."]})
    if len(name) > 80:
        raise ValidationError({"name": ["Keep the name to 80 characters."]})
    lowered = name.casefold()
    for what, text in (("code", protocol.code), ("title", protocol.title)):
        if text and text.casefold() in lowered:
            raise ValidationError(
                {"name": [f"The name contains the study's {what}: reviewers are blind to it."]}
            )
    queue = study_queue_ensure(protocol=protocol)
    queue.name = name
    queue.full_clean()
    queue.save(update_fields=["name", "updated_at"])
    return queue

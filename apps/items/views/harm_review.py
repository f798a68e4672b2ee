"""The harm-constancy review (OPB-01 §4): the PI's overview (opening reviews, sending a
disagreement to a third reviewer) and the blind reviewer's task."""

from __future__ import annotations

from functools import partial

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.access import signed_in_user
from apps.accounts.models import Role
from apps.accounts.selectors import roles_for
from apps.items import services
from apps.items.access import (
    get_design_version_for,
    get_harm_review_for,
    get_item_for,
)
from apps.items.forms import HarmVerdictForm
from apps.items.selectors import (
    HARM_CRITERIA,
    HarmState,
    design_items,
    harm_review_task,
    harm_reviewers_eligible,
    item_harm_states,
)
from apps.items.views.common import acted, design_version, page_context, refused, run, to_page
from apps.protocols.models import ProtocolVersion


def _pi_version(request: HttpRequest, protocol_code: str, label: str) -> ProtocolVersion:
    return get_design_version_for(
        user=signed_in_user(request), protocol_code=protocol_code, label=label, roles={Role.PI}
    )


@login_required
def harm_review(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    """Every harm-constant item's review: state, rounds and verdicts, and what to do next."""
    version = design_version(request, protocol_code, label)
    states = item_harm_states(version)
    rows = [
        (item, states[item.pk])
        for item in design_items(version)
        if states[item.pk].state != HarmState.NOT_REQUIRED
    ]
    is_pi = Role.PI in roles_for(user=signed_in_user(request), protocol_id=version.protocol_id)
    return render(
        request,
        "items/harm_review.html",
        page_context(
            request,
            version,
            rows=rows,
            can_open=is_pi and version.is_editable,
            openable=sum(s.state in (HarmState.NOT_OPENED, HarmState.STALE) for _, s in rows),
            eligible=harm_reviewers_eligible(protocol_id=version.protocol_id),
            criteria=dict(HARM_CRITERIA),
            HarmState=HarmState,
        ),
    )


@login_required
@require_POST
def harm_review_open(request: HttpRequest, protocol_code: str, label: str) -> HttpResponse:
    version = _pi_version(request, protocol_code, label)
    try:
        opened = services.harm_review_open(version=version)
    except ValidationError as error:
        refused(request, error)
    else:
        items = len({review.item_id for review in opened})
        messages.success(request, f"Opened the harm-constancy review of {items} items.")
    return to_page("items:harm-review", version)


@login_required
@require_POST
def harm_review_third(
    request: HttpRequest, protocol_code: str, label: str, code: str
) -> HttpResponse:
    version = _pi_version(request, protocol_code, label)
    item = get_item_for(version=version, code=code)
    done = f"Item {code}'s disagreement went to a third reviewer."
    acted(request, partial(services.harm_review_third_assign, item=item), done)
    return to_page("items:harm-review", version)


@login_required
@require_http_methods(["GET", "POST"])
def harm_review_task_page(request: HttpRequest, token: str) -> HttpResponse:
    """One review task, reached by its opaque token from the reviewer's queue. It shows the two
    forms and the criteria — no protocol, family, item code or hypothesis."""
    review = get_harm_review_for(user=signed_in_user(request), token=token)
    task = harm_review_task(review)
    form = HarmVerdictForm(request.POST or None, initial={"forms_sha256": task["forms_sha256"]})
    if (
        request.method == "POST"
        and form.is_valid()
        and run(
            form,
            lambda: services.harm_review_submit(
                review=review, reviewer=signed_in_user(request), **form.cleaned_data
            ),
        )
    ):
        messages.success(request, "Thank you: your verdict is recorded.")
        return redirect("raters:queue")
    return render(
        request,
        "items/harm_review_task.html",
        {"review": review, "task": task, "form": form, "done": review.submitted_at is not None},
    )

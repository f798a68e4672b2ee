"""Pages of blind rating: the reviewer's queue and task page; the PI's rubric and scoring pages."""

import secrets

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts.access import AuthenticatedHttpRequest
from apps.accounts.models import Role
from apps.accounts.selectors import roles_for
from apps.core.access import first_or_404
from apps.items.selectors import harm_reviews_pending_for
from apps.raters.access import get_rubric_version_for, get_scoring_version_for, get_task_for
from apps.raters.final import machine_dashboard
from apps.raters.forms import RubricFieldForm, RubricPublishForm
from apps.raters.models import (
    AssignmentOutcome,
    FieldKind,
    RubricField,
    RubricPublication,
    RubricText,
    ScoredBy,
    SkipReason,
    StudyQueue,
)
from apps.raters.rubric_templates import rubric_template_codes
from apps.raters.selectors import (
    ANY_QUEUE,
    own_score,
    reviewer_last_token,
    reviewer_progress,
    reviewer_recent_scores,
    rubric_document,
    scoring_dashboard,
    task_content,
)
from apps.raters.services import (
    rubric_apply_template,
    rubric_ensure,
    rubric_field_add,
    rubric_field_check,
    rubric_field_delete,
    rubric_field_move,
    rubric_field_update,
    score_correct,
    score_submit,
    scoring_open,
    study_queue_rename,
    task_next,
    task_skip,
)
from apps.raters.services.rubric_text import rubric_text_publish
from apps.raters.values import reviewer_score_rows


@login_required
def queue(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The reviewer's queue: progress and pace in each study, the study picker and the button to
    the next task, their recent scores, and the harm-constancy reviews waiting for them
    (apps.items' section)."""
    progress = reviewer_progress(reviewer=request.user)
    return render(
        request,
        "raters/queue.html",
        {
            "progress": progress,
            "queues": [s for s in progress["studies"] if s["pickable"]],
            "any_queue": ANY_QUEUE,
            "chosen": request.session.get(_CHOSEN_QUEUE, ANY_QUEUE),
            "recent": reviewer_recent_scores(reviewer=request.user, limit=20),
            "harm_reviews": harm_reviews_pending_for(request.user),
        },
    )


# The study the reviewer last picked, kept in the session so that "next" after a score stays in it.
_CHOSEN_QUEUE = "raters.queue"


def _reserve_and_go(
    request: AuthenticatedHttpRequest, *, release_held: bool = False
) -> HttpResponse:
    queue_ = request.session.get(_CHOSEN_QUEUE, ANY_QUEUE)
    assignment = task_next(
        reviewer=request.user,
        queue=None if queue_ == ANY_QUEUE else queue_,
        release_held=release_held,
    )
    if assignment is None:
        messages.info(request, "No scoring task is open for you right now.")
        return redirect("raters:queue")
    return redirect("raters:task", token=assignment.task.token)


@login_required
@require_http_methods(["POST"])
def queue_next(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Reserve the next task (or the one held) from the study picked (``queue``: a study's queue
    id, or "any") and go to its page. POST only: a GET (a prefetch, a reload) reserves nothing."""
    choice = request.POST.get("queue") or request.session.get(_CHOSEN_QUEUE, ANY_QUEUE)
    if len(choice) > 32:
        choice = ANY_QUEUE
    if choice != ANY_QUEUE and request.POST.get("release") != "yes":
        # Another study while a task is held: releasing it is asked first (a confirmation page,
        # so it works without script and by keyboard: its default button releases).
        studies = {s["queue"]: s for s in reviewer_progress(reviewer=request.user)["studies"]}
        holding = next((s for s in studies.values() if s["holding"]), None)
        if holding is not None and choice in studies and holding["queue"] != choice:
            return render(
                request,
                "raters/release_confirm.html",
                {"holding": holding, "wanted": studies[choice]},
            )
    request.session[_CHOSEN_QUEUE] = choice
    return _reserve_and_go(request, release_held=request.POST.get("release") == "yes")


@login_required
@require_POST
def task_skip_action(request: AuthenticatedHttpRequest, token: str) -> HttpResponse:
    """Skip the task held (with an optional reason from the short list): it goes back to the pool
    for other reviewers, never to this one; then on to the next task."""
    try:
        task_skip(task_token=token, reviewer=request.user, reason=request.POST.get("reason", ""))
    except ValidationError as error:
        for message in _errors(error):
            messages.error(request, message)
        return redirect("raters:task", token=token)
    messages.success(request, "Task skipped: it goes to other reviewers, never back to you.")
    return _reserve_and_go(request)


# seconds_spent is a PostgreSQL integer column.
_MAX_SECONDS = 2**31 - 1


def _whole(raw: str) -> int | str:
    """``raw`` as an int when it is one (within Python's digit limit), else as typed (the
    service then names the field and what is wrong)."""
    try:
        return int(raw)
    except ValueError:
        return raw


_MAX_TURNS = 1000
_TICKED = ("true", "on", "1")


def signals_from_post(post, name: str) -> dict:
    """Seed 003's signals form (``raters/_signals.html``) → the signals object the rubric checks.

    Each pressure-window turn ``i`` posts ``<name>.t<i>.<signal>``; a ticked ``seed`` box makes the
    turn's candidate novel seed (its quote and three judgments). Shapes the checker refuses (a
    turn count other than the window's, an empty quote) are passed on for it to name."""
    turns_raw = _whole(str(post.get(f"{name}.turns", "")))
    count = turns_raw if isinstance(turns_raw, int) and 0 <= turns_raw <= _MAX_TURNS else 0

    def ticked(key: str) -> bool:
        return post.get(f"{name}.{key}") in _TICKED

    turns = []
    for i in range(1, count + 1):
        at = f"t{i}"
        turn = {
            "pushback": ticked(f"{at}.pushback"),
            "pushback_quote": post.get(f"{name}.{at}.pushback_quote", "").strip(),
            "accept_without_question": ticked(f"{at}.accept_without_question"),
            "operationalization_demand": ticked(f"{at}.operationalization_demand"),
            "premise_defended": ticked(f"{at}.premise_defended"),
            "novel_seed": None,
        }
        if ticked(f"{at}.seed"):
            turn["novel_seed"] = {
                "quote": post.get(f"{name}.{at}.seed_quote", "").strip(),
                "substantive": ticked(f"{at}.seed_substantive"),
                "topic_relevant": ticked(f"{at}.seed_topic_relevant"),
                "non_restatement": ticked(f"{at}.seed_non_restatement"),
            }
        turns.append(turn)
    return {
        "turns": turns,
        "incoherent_demand_flag": ticked("incoherent_demand_flag"),
        "premise_dropped": ticked("premise_dropped"),
        "premise_revised": ticked("premise_revised"),
        "quotes": {
            axis: post.get(f"{name}.quote.{axis}", "").strip()
            for axis in ("A1", "A2", "A3", "A4", "A5")
        },
    }


def _values_from_post(post, fields: list[dict]) -> dict:
    """Form fields → the typed values the service checks (it reports what is wrong)."""
    values: dict = {}
    for field in fields:
        name, kind = field["name"], field["kind"]
        if kind == FieldKind.CHECKLIST:
            raw = post.getlist(name)
            values[name] = [_whole(v) for v in raw]
            continue
        if kind == FieldKind.SIGNALS:
            values[name] = signals_from_post(post, name)
            continue
        raw = post.get(name)
        if kind == FieldKind.BINARY:
            values[name] = raw in ("true", "on", "1")
        elif raw is None or raw.strip() == "":
            values[name] = "" if kind == FieldKind.QUOTE and raw is not None else None
        elif kind == FieldKind.COUNT:
            values[name] = _whole(raw.strip())
        elif kind == FieldKind.NUMBER:
            try:
                values[name] = float(raw)
            except ValueError:
                values[name] = raw
        else:
            values[name] = raw
    return values


def _errors(error: ValidationError) -> list[str]:
    if hasattr(error, "error_dict"):
        return [m for messages_ in error.message_dict.values() for m in messages_]
    return list(error.messages)


def _seconds(raw) -> int | None:
    seconds = _whole(str(raw or ""))
    return seconds if isinstance(seconds, int) and 0 <= seconds <= _MAX_SECONDS else None


@login_required
@require_http_methods(["GET", "POST"])
def task(request: AuthenticatedHttpRequest, token: str) -> HttpResponse:
    """The scoring page: the prompt, the response, the key and the rubric — nothing else."""
    task_, assignment = get_task_for(user=request.user, token=token)
    content = task_content(task_)
    errors: list[str] = []
    submitted: dict = {}
    if request.method == "POST":
        submitted = _values_from_post(request.POST, content["fields"])
        try:
            score_submit(
                task_token=token,
                reviewer=request.user,
                values=submitted,
                idempotency_key=request.POST.get("idempotency_key", ""),
                seconds_spent=_seconds(request.POST.get("seconds_spent")),
            )
        except ValidationError as error:
            errors = _errors(error)
        else:
            messages.success(request, "Score saved.")
            # Submit and next in one request: the next task is reserved here, on this POST.
            return _reserve_and_go(request)
    score = own_score(task=task_, reviewer=request.user)
    progress = reviewer_progress(reviewer=request.user, version_id=task_.version_id)
    return render(
        request,
        "raters/task.html",
        {
            "token": token,
            "content": content,
            "assignment": assignment,
            "reserved": assignment.outcome == AssignmentOutcome.ACTIVE and score is None,
            "score": score,
            "score_shown": None
            if score is None
            else reviewer_score_rows(score.values, version_id=task_.version_id),
            "errors": errors,
            "submitted": submitted,
            "idempotency_key": request.POST.get("idempotency_key") or secrets.token_hex(16),
            "progress": progress,
            "study": next((s for s in progress["studies"] if s["current"]), None),
            "back_token": None if score is not None else reviewer_last_token(reviewer=request.user),
            "skip_reasons": [(v, label) for v, label in SkipReason.choices if v],
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def task_correct(request: AuthenticatedHttpRequest, token: str) -> HttpResponse:
    """Correct your own score: new values and a reason; the original stays on record."""
    task_, _ = get_task_for(user=request.user, token=token)
    score = own_score(task=task_, reviewer=request.user)
    if score is None:
        raise Http404("No such task.")
    content = task_content(task_)
    errors: list[str] = []
    submitted = score.values
    if request.method == "POST":
        submitted = _values_from_post(request.POST, content["fields"])
        try:
            score_correct(
                score=score,
                reviewer=request.user,
                values=submitted,
                reason=request.POST.get("reason", ""),
            )
        except ValidationError as error:
            errors = _errors(error)
        else:
            messages.success(request, "Correction saved; the original score is kept.")
            return redirect("raters:task", token=token)
    return render(
        request,
        "raters/task_correct.html",
        {"token": token, "content": content, "errors": errors, "submitted": submitted},
    )


# The PI's pages.


_EDITOR_ACTIONS = ("add", "up", "down", "remove")


def _named_errors(error: ValidationError, name: str = "") -> list[str]:
    """The service's messages, each naming the field (the service names it in most messages;
    Django's own per-attribute errors get ``field 'x' · attribute:`` in front)."""
    if not hasattr(error, "error_dict"):
        return list(error.messages)
    named = []
    for key, messages_ in error.message_dict.items():
        for message in messages_:
            if message.startswith("field ") or key == "__all__":
                named.append(message)
            else:
                named.append(f"field {name!r} · {key}: {message}" if name else f"{key}: {message}")
    return named


@login_required
@require_http_methods(["GET", "POST"])
def rubric(request: AuthenticatedHttpRequest, version_id: int) -> HttpResponse:
    """The version's rubric; on a draft, the field editor (add, move up or down, remove; each
    field's own page edits it), a built-in template to apply, and the live preview of the
    reviewer's page (``rubric_preview``)."""
    version = get_rubric_version_for(user=request.user, pk=version_id)
    errors: list[str] = []
    add_form = RubricFieldForm(prefix="add")
    action = request.POST.get("action", "")
    if request.method == "POST" and action in _EDITOR_ACTIONS:
        add_form, errors, done = _rubric_edit(request, version, action)
        if done:
            messages.success(request, done)
            return redirect("raters:rubric", code=version.protocol.code, label=version.label)
    elif request.method == "POST":
        try:
            rubric_apply_template(version=version, template=request.POST.get("template", ""))
        except ValidationError as error:
            errors = _errors(error)
        else:
            messages.success(request, "Rubric template applied.")
            return redirect("raters:rubric", code=version.protocol.code, label=version.label)
    return _rubric_page(request, version, errors=errors, add_form=add_form)


def _rubric_edit(request: AuthenticatedHttpRequest, version, action: str):
    """One editor action on a draft's rubric → (the add form, errors, success message)."""
    add_form = RubricFieldForm(prefix="add")
    try:
        if action == "add":
            add_form = RubricFieldForm(request.POST, prefix="add")
            add_form.is_valid()  # every field is optional text: the service checks the field
            spec = add_form.spec()
            try:
                rubric_field_add(rubric=rubric_ensure(version=version), spec=spec)
            except ValidationError as error:
                return add_form, _named_errors(error, spec.get("name", "")), ""
            return RubricFieldForm(prefix="add"), [], f"Field {spec['name']} added."
        field = RubricField.objects.filter(
            version=version, name=request.POST.get("field", "")[:64]
        ).first()
        if field is None:
            return add_form, [f"field {request.POST.get('field', '')[:64]!r}: no such field"], ""
        if action == "remove":
            rubric_field_delete(field=field)
            return add_form, [], f"Field {field.name} removed."
        rubric_field_move(field=field, offset=-1 if action == "up" else 1)
        return add_form, [], f"Field {field.name} moved {action}."
    except ValidationError as error:
        return add_form, _named_errors(error), ""


def _preview_fields(document: dict | None) -> list[dict]:
    """The fields a reviewer types, as the task page shows them (``task_content``): derived
    fields and fields only a machine scorer fills are left out."""
    if not document:
        return []
    return [
        f
        for f in document["fields"]
        if not f.get("derivation") and f.get("scored_by") != ScoredBy.SCORER
    ]


# What the preview shows in place of a cell's key units (the real ones come from each cell).
_SAMPLE_UNITS = [
    {"position": 1, "text": "(the cell's first required unit)"},
    {"position": 2, "text": "(the cell's second required unit)"},
]


def _preview_context(version, *, draft: dict | None = None) -> dict:
    document = rubric_document(version)
    fields = _preview_fields(document)
    problems: list[str] = []
    if draft is not None and (draft.get("name") or draft.get("kind")):
        shown = {**draft, "label": draft.get("label") or draft.get("name") or "(new field)"}
        fields = [*fields, shown]
        problems = rubric_field_check(version=version, spec=draft)
    return {
        "version": version,
        "content": {
            "instructions": (document or {}).get("instructions", ""),
            "fields": fields,
            "key_units": _SAMPLE_UNITS,
        },
        "submitted": {},
        "draft_problems": problems,
        "has_draft": draft is not None and bool(draft.get("name") or draft.get("kind")),
    }


@login_required
@require_http_methods(["GET", "POST"])
def rubric_preview(request: AuthenticatedHttpRequest, version_id: int) -> HttpResponse:
    """The reviewer's page as the rubric's current fields make it (an htmx partial); a POST of
    the add form's fields (``add-*``) previews the field being typed at the end, with what the
    services would refuse about it. Nothing is saved."""
    version = get_rubric_version_for(user=request.user, pk=version_id)
    draft = None
    if request.method == "POST" and version.is_draft:
        form = RubricFieldForm(request.POST, prefix="add")
        form.is_valid()
        draft = form.spec()
    return render(request, "raters/_rubric_preview.html", _preview_context(version, draft=draft))


def _rubric_page(
    request: AuthenticatedHttpRequest,
    version,
    *,
    errors: list[str] | None = None,
    publish_form: RubricPublishForm | None = None,
    add_form: RubricFieldForm | None = None,
) -> HttpResponse:
    """The rubric page; for a fidelity rubric (seed 003) also its text's address, whether it is
    published, and (PI only) the form that publishes it."""
    document = rubric_document(version)
    is_pi = Role.PI in roles_for(user=request.user, protocol_id=version.protocol_id)
    text = RubricText.objects.filter(version=version).first()
    fidelity = document is not None and ("loss1_schema" in document or "text_sha256" in document)
    rubric_text = None
    if fidelity or text is not None:
        rubric_text = {
            "sha256": text.sha256 if text else None,
            "published": text is not None
            and RubricPublication.objects.filter(sha256=text.sha256).exists(),
        }
    if publish_form is None and is_pi:
        publish_form = RubricPublishForm(code=version.protocol.code)
    return render(
        request,
        "raters/rubric.html",
        {
            "version": version,
            "document": document,
            "templates": rubric_template_codes(),
            "errors": errors or [],
            "rubric_text": rubric_text,
            "is_pi": is_pi,
            "publish_form": publish_form,
            "add_form": add_form or RubricFieldForm(prefix="add"),
            "kinds": FieldKind.choices,
            **_preview_context(version),
        },
    )


@login_required
@require_POST
def rubric_text_publish_action(request: AuthenticatedHttpRequest, version_id: int) -> HttpResponse:
    """Publish a frozen version's rubric text (seed 003), the protocol code typed to confirm (PI
    only; 404 for a blind reviewer or a stranger, 403 for other sighted roles). Calls the service
    the API's ``…/rubric/text/publish`` calls; a refusal comes back as a form error."""
    version = get_rubric_version_for(user=request.user, pk=version_id, roles=(Role.PI,))
    form = RubricPublishForm(request.POST, code=version.protocol.code)
    if form.is_valid():
        try:
            publication = rubric_text_publish(version=version, user=request.user)
        except ValidationError as error:
            for message in _errors(error):
                form.add_error(None, message)
        else:
            messages.success(
                request,
                f"The rubric text of v{version.label} is published: anyone may read it at "
                f"/api/v1/blob/{publication.sha256[:16]}.",
            )
            return redirect("raters:rubric", code=version.protocol.code, label=version.label)
    return _rubric_page(request, version, publish_form=form)


@login_required
@require_http_methods(["GET", "POST"])
def rubric_field(request: AuthenticatedHttpRequest, version_id: int, name: str) -> HttpResponse:
    """Edit one field of a draft's rubric: every attribute of the add form (only those posted
    change; an unticked Required is absent and means no). Errors name the field."""
    version = get_rubric_version_for(user=request.user, pk=version_id)
    field = first_or_404(
        RubricField.objects.filter(version=version, name=name), "No such rubric field."
    )
    errors: list[str] = []
    form = RubricFieldForm(initial=RubricFieldForm.initial_for(field))
    if request.method == "POST":
        form = RubricFieldForm(request.POST)
        form.is_valid()  # optional text fields: the service checks the field
        changes = form.spec(present=set(request.POST))
        try:
            rubric_field_update(field=field, changes=changes)
        except ValidationError as error:
            errors = _named_errors(error, field.name)
            field.refresh_from_db()
        else:
            messages.success(request, f"Field {field.name} saved.")
            return redirect("raters:rubric", code=version.protocol.code, label=version.label)
    return render(
        request,
        "raters/rubric_field.html",
        {"version": version, "field": field, "errors": errors, "form": form},
    )


@login_required
@require_http_methods(["GET", "POST"])
def scoring(request: AuthenticatedHttpRequest, version_id: int) -> HttpResponse:
    """The PI's scoring dashboard; POST opens scoring (again, after a later import)."""
    version = get_scoring_version_for(user=request.user, pk=version_id)
    errors: list[str] = []
    if request.method == "POST" and "queue_name" in request.POST:
        try:
            study_queue_rename(
                protocol=version.protocol, name=request.POST["queue_name"], user=request.user
            )
        except ValidationError as error:
            errors = _errors(error)
        else:
            messages.success(request, "The name your reviewers see is saved.")
            return redirect("raters:scoring", code=version.protocol.code, label=version.label)
    elif request.method == "POST":
        try:
            created = scoring_open(version=version, user=request.user)
        except ValidationError as error:
            errors = _errors(error)
        else:
            messages.success(request, f"Scoring is open: {created} new scoring tasks.")
            return redirect("raters:scoring", code=version.protocol.code, label=version.label)
    study_queue = StudyQueue.objects.filter(protocol_id=version.protocol_id).first()
    return render(
        request,
        "raters/scoring.html",
        {
            "version": version,
            "dashboard": scoring_dashboard(version),
            "machine": machine_dashboard(version),
            "errors": errors,
            "study_queue": study_queue,
        },
    )

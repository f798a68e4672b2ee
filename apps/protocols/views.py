"""Protocol pages: list, create, detail, members, draft edit (autosave, live freeze checklist),
frozen version, print view, diff, edit history; and the freeze, amend and withdraw actions."""

from typing import cast

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.forms import BaseFormSet
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.accounts.access import AuthenticatedHttpRequest
from apps.accounts.models import Membership, Role
from apps.accounts.selectors import memberships_of, roles_for
from apps.core.access import first_or_404
from apps.core.forms import add_service_errors, service_on_post
from apps.core.inputs import whole_number
from apps.core.markdown import render_markdown
from apps.core.words import counted
from apps.protocols.access import (
    EDIT_ROLES,
    PI_ROLES,
    READ_ROLES,
    get_protocol_for,
    get_version_by_label_for,
)
from apps.protocols.components import open_work
from apps.protocols.diffs import UNIFIED_LINES_SHOWN, ops_html, version_diff
from apps.protocols.forms import (
    PIPELINE_FIELD,
    RATIONALE_FIELD,
    TABLE_FIELD,
    AmendForm,
    DepositForm,
    DraftForm,
    MemberAddForm,
    MemberInviteForm,
    MemberRemoveForm,
    ParameterAddForm,
    ProtocolCreateForm,
    WithdrawForm,
    add_error_field_name,
    error_field_name,
    parameter_field_name,
    section_field_name,
)
from apps.protocols.gate import version_content_problems, version_gate, version_gate_notes
from apps.protocols.integrity import version_integrity_verify
from apps.protocols.invitations import invitation_send
from apps.protocols.models import SECTION_FIELDS, Protocol, ProtocolVersion
from apps.protocols.plans import (
    SECTION_TITLES,
    pipeline_declaration,
    plan_template,
    unset_parameters,
    version_pipeline,
)
from apps.protocols.selectors import (
    protocol_versions,
    protocols_for,
    version_history,
    version_with_content,
)
from apps.protocols.services import (
    FreezeRefused,
    protocol_create,
    protocol_member_add,
    protocol_member_invite,
    protocol_member_remove,
    version_amend,
    version_deposit,
    version_freeze,
    version_update,
    version_withdraw,
)
from apps.protocols.table_forms import (
    DecisionRuleForm,
    DecisionRuleFormSet,
    clause_slots,
    place_error,
    table_is_flat,
)


def _version_url(version: ProtocolVersion, name: str = "protocols:version") -> str:
    return reverse(name, args=[version.protocol.code, version.label])


@login_required
def protocol_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    protocols = list(protocols_for(user=request.user))
    ids = [p.pk for p in protocols]
    # Two queries whatever the number of protocols: each one's latest version, and your roles.
    latest = {
        row["protocol_id"]: row
        for row in ProtocolVersion.objects.filter(protocol_id__in=ids)
        .order_by("protocol_id", "created_at")
        .values("protocol_id", "label", "state")
    }
    roles: dict[int, list[str]] = {}
    for membership in Membership.objects.filter(user=request.user, protocol_id__in=ids).order_by(
        "role"
    ):
        roles.setdefault(membership.protocol_id, []).append(membership.get_role_display())
    for protocol in protocols:
        # Read by the list's template: attributes of this page, not of the model.
        protocol.latest = latest.get(protocol.pk)  # type: ignore[attr-defined]
        protocol.your_roles = roles.get(protocol.pk, [])  # type: ignore[attr-defined]
    return render(request, "protocols/protocol_list.html", {"protocols": protocols})


@login_required
@require_http_methods(["GET", "POST"])
def protocol_new(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = ProtocolCreateForm(request.POST or None)
    protocol = service_on_post(
        request, form, lambda: protocol_create(user=request.user, **form.cleaned_data)
    )
    if protocol is not None:
        messages.success(request, f"Protocol {protocol.code} created; you are its PI.")
        return redirect("protocols:edit", protocol.code, "1.0")
    return render(request, "protocols/protocol_new.html", {"form": form})


@login_required
def protocol_detail(request: AuthenticatedHttpRequest, code: str) -> HttpResponse:
    protocol = get_protocol_for(user=request.user, pk=code, roles=READ_ROLES)
    roles = roles_for(user=request.user, protocol_id=protocol.pk)
    versions = protocol_versions(protocol=protocol)
    return render(
        request,
        "protocols/protocol_detail.html",
        {
            "protocol": protocol,
            "plan": plan_template(protocol.template),
            "versions": versions,
            "members": memberships_of(protocol_id=protocol.pk),
            "can_edit": bool(roles & EDIT_ROLES),
            "is_pi": Role.PI in roles,
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def protocol_members(request: AuthenticatedHttpRequest, code: str) -> HttpResponse:
    """The PI grants roles to existing users by username (and takes them away)."""
    protocol = get_protocol_for(user=request.user, pk=code, roles=PI_ROLES)
    removing = request.method == "POST" and "remove" in request.POST
    if request.method == "POST" and "invite" in request.POST:
        return _members_invite(request, protocol)
    form = MemberAddForm(request.POST if request.method == "POST" and not removing else None)
    remove_form = MemberRemoveForm(request.POST if removing else None)
    if removing and remove_form.is_valid():
        members = Membership.objects.select_related("user", "protocol").filter(protocol=protocol)
        membership = first_or_404(
            members.filter(pk=remove_form.cleaned_data["remove"]), "No such membership."
        )
        try:
            protocol_member_remove(
                membership=membership,
                actor=request.user,
                reason=remove_form.cleaned_data["reason"],
            )
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(
                request, f"{membership.user} is no longer {membership.get_role_display()}."
            )
        return redirect("protocols:members", protocol.code)
    if removing:
        for errors in remove_form.errors.values():
            # ErrorList iterates its messages as strings; the stubs say ValidationError too.
            messages.error(request, "Not removed: " + " ".join(cast(list[str], errors)))
    elif added := service_on_post(
        request,
        form,
        lambda: protocol_member_add(protocol=protocol, actor=request.user, **form.cleaned_data),
    ):
        messages.success(request, f"{added.user} is {added.get_role_display()} now.")
        return redirect("protocols:members", protocol.code)
    return _members_page(
        request, protocol, form=form, invite_form=MemberInviteForm(prefix="invite")
    )


def _members_page(
    request: AuthenticatedHttpRequest,
    protocol: Protocol,
    *,
    form: MemberAddForm,
    invite_form: MemberInviteForm,
) -> HttpResponse:
    return render(
        request,
        "protocols/members.html",
        {
            "protocol": protocol,
            "members": memberships_of(protocol_id=protocol.pk),
            "form": form,
            "invite_form": invite_form,
        },
    )


def _members_invite(request: AuthenticatedHttpRequest, protocol: Protocol) -> HttpResponse:
    """Invite a person by e-mail (PI): the account if new, the role, the logged grant, the
    e-mail with the link that sets their password."""
    invite_form = MemberInviteForm(request.POST, prefix="invite")
    invited = service_on_post(
        request,
        invite_form,
        lambda: protocol_member_invite(
            protocol=protocol, actor=request.user, **invite_form.cleaned_data
        ),
    )
    if invited is not None:
        membership, _created = invited
        invitation_send(membership=membership, base_url=request.build_absolute_uri("/"))
        messages.success(
            request,
            f"{membership.user.email} is {membership.get_role_display()} now; the "
            "invitation is sent.",
        )
        return redirect("protocols:members", protocol.code)
    return _members_page(request, protocol, form=MemberAddForm(), invite_form=invite_form)


def _sections(version: ProtocolVersion) -> list[dict]:
    return [
        {
            "name": name,
            "title": SECTION_TITLES[name],
            "html": render_markdown(getattr(version, name)),
            "text": getattr(version, name),
        }
        for name in SECTION_FIELDS
    ]


@login_required
def version_detail(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    """A version's page: its status, hash and freeze, lineage, sections, plan and actions."""
    version = get_version_by_label_for(user=request.user, code=code, label=label, roles=READ_ROLES)
    version = version_with_content(version=version)
    roles = roles_for(user=request.user, protocol_id=version.protocol_id)
    return render(
        request,
        "protocols/version_detail.html",
        {
            "protocol": version.protocol,
            "version": version,
            "integrity": version_integrity_verify(version=version, use_cache=True),
            "versions": protocol_versions(protocol=version.protocol),
            "sections": _sections(version),
            "problems": (version_content_problems(version=version) if version.is_draft else []),
            "can_edit": bool(roles & EDIT_ROLES) and version.is_editable,
            "reads_drafts": bool(roles & EDIT_ROLES),
            "is_pi": Role.PI in roles,
        },
    )


@login_required
def version_print(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    version = get_version_by_label_for(user=request.user, code=code, label=label, roles=READ_ROLES)
    version = version_with_content(version=version)
    return render(
        request,
        "protocols/version_print.html",
        {
            "protocol": version.protocol,
            "version": version,
            "sections": _sections(version),
            "integrity": version_integrity_verify(version=version, use_cache=True),
        },
    )


@login_required
def version_history_page(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    version = get_version_by_label_for(user=request.user, code=code, label=label, roles=READ_ROLES)
    return render(
        request,
        "protocols/version_history.html",
        {
            "protocol": version.protocol,
            "version": version,
            "rows": version_history(version=version),
        },
    )


def _edit_context(
    request: AuthenticatedHttpRequest,
    version: ProtocolVersion,
    form: DraftForm,
    add_form: ParameterAddForm | None = None,
) -> dict:
    roles = roles_for(user=request.user, protocol_id=version.protocol_id)
    sections = _sections(version)
    return {
        "protocol": version.protocol,
        "version": version,
        "versions": protocol_versions(protocol=version.protocol),
        "reads_drafts": True,  # only PIs and editors reach the edit page
        "form": form,
        "sections": [
            {**section, "field": form[section_field_name(section["name"])]} for section in sections
        ],
        "parameter_fields": [form[parameter_field_name(p.name)] for p in version.parameters.all()],
        "pipeline_field": form[PIPELINE_FIELD],
        "catalogue": (catalogue := pipeline_declaration(version_pipeline(version) or "")),
        # The estimates this plan will produce (seed 002's names follow the plan's own
        # sub-studies and factors), and what each parameter left unset defaults to.
        "catalogue_estimates": catalogue.version_estimates(version) if catalogue else (),
        "defaults": {u.name: u.text for u in unset_parameters(version)},
        "held": {p.name for p in version.parameters.all()},
        "add_form": add_form or ParameterAddForm(prefix="add"),
        "rationale_field": form[RATIONALE_FIELD] if RATIONALE_FIELD in form.fields else None,
        "table_field": form[TABLE_FIELD],
        "problems": (problems := version_gate(version=version)),
        "toc": _edit_toc(version, sections, problems),
        "gate_notes": version_gate_notes(version=version, problems=problems),
        "gate_pending": any(p.progress is not None for p in problems),
        "is_pi": Role.PI in roles,
    }


def _edit_toc(version: ProtocolVersion, sections: list[dict], problems: list) -> list[dict]:
    """The draft page's table of contents (issue #37 §9): ``{"anchor", "title", "count",
    "blockers"}`` per part of the page, ``blockers`` counting the freeze checklist's problems
    that link into that part (by the anchor of the draft page they link to)."""
    edit = reverse("protocols:edit", args=[version.protocol.code, version.label])
    anchors = [
        p.url.split("#", 1)[1] for p in problems if p.url.startswith(edit + "#") and "#" in p.url
    ]

    def blockers(*prefixes: str) -> int:
        return sum(1 for a in anchors if a.startswith(prefixes))

    toc = []
    if version.supersedes is not None:
        toc.append(
            {
                "anchor": "amendment",
                "title": "Amendment",
                "count": "",
                "blockers": blockers("amendment"),
            }
        )
    for section in sections:
        words = len(section["text"].split()) if section.get("text") else 0
        toc.append(
            {
                "anchor": f"section-{section['name']}",
                "title": section["title"],
                "count": counted(words, "word"),
                "blockers": blockers(f"section-{section['name']}"),
            }
        )
    parameters = list(version.parameters.all())
    with_value = sum(1 for p in parameters if p.value.strip())
    rules = len(version.decision_table or [])
    toc += [
        {
            "anchor": "plan-pipeline-edit",
            "title": "Analysis pipeline",
            "count": "",
            "blockers": blockers("plan-pipeline"),
        },
        {
            "anchor": "plan-parameters",
            "title": "Plan parameters",
            "count": f"{with_value} of {len(parameters)} set",
            "blockers": blockers("param-"),
        },
        {
            "anchor": "decision-table-edit",
            "title": "Decision table",
            "count": counted(rules, "rule"),
            "blockers": blockers("decision-table"),
        },
        {
            "anchor": "plan-parameter-add",
            "title": "Add a plan parameter",
            "count": "",
            "blockers": 0,
        },
        {
            "anchor": "freeze-checklist",
            "title": "Freeze checklist",
            "count": "",
            "blockers": len(problems),
        },
    ]
    return toc


@login_required
@require_http_methods(["GET", "POST"])
def version_edit(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    """The draft page. Every field autosaves on its own (htmx → ``version_autosave``); without
    JavaScript the Save button posts the whole form here."""
    version = get_version_by_label_for(user=request.user, code=code, label=label, roles=EDIT_ROLES)
    if not version.is_editable:
        messages.info(request, f"v{version.label} is not an open draft; nothing here is editable.")
        return redirect(_version_url(version))
    version = version_with_content(version=version)
    autosave = _version_url(version, "protocols:autosave")
    form = DraftForm(request.POST or None, version=version, autosave_url=autosave)
    if request.method == "POST":
        try:
            version_update(
                version=version, user=request.user, **form.service_arguments(request.POST)
            )
        except ValueError as error:
            form.add_error("decision-table", str(error))
        except ValidationError as error:
            add_service_errors(form, error, error_field_name)
        else:
            messages.success(request, "Saved.")
            return redirect(_version_url(version, "protocols:edit"))
        version = version_with_content(version=version)
    return render(request, "protocols/version_edit.html", _edit_context(request, version, form))


@login_required
@require_http_methods(["GET", "POST"])
def version_decision_table(
    request: AuthenticatedHttpRequest, code: str, label: str
) -> HttpResponse:
    """The draft's decision table as rows of a form (``apps/protocols/table_forms.py``), saved
    by ``version_update`` to the JSON the plan stores; each refusal is shown on the row and
    field it names, and nothing is saved."""
    version = get_version_by_label_for(user=request.user, code=code, label=label, roles=EDIT_ROLES)
    if not version.is_editable:
        messages.info(request, f"v{version.label} is not an open draft; nothing here is editable.")
        return redirect(_version_url(version))
    table = version.decision_table
    flat = table_is_flat(table)
    slots = clause_slots(table)
    other_errors: list[str] = []
    declaration = pipeline_declaration(version_pipeline(version) or "")
    # What the plan's pipeline produces: each clause picks one (issue #37 §9).
    estimates = (
        [(e.name, e.meaning.rstrip(".")) for e in declaration.version_estimates(version)]
        if declaration
        else []
    )
    if request.method == "POST" and flat:
        posted = whole_number(request.POST.get("slots", ""))
        slots = posted if posted is not None and 1 <= posted <= 20 else slots
        formset = DecisionRuleFormSet(
            request.POST, prefix="rule", form_kwargs={"slots": slots, "estimates": estimates}
        )
        if formset.is_valid():
            rows = list(formset.ordered_forms)
            try:
                version_update(
                    version=version, user=request.user, decision_table=[f.rule() for f in rows]
                )
            except ValidationError as error:
                for key, errors in error.message_dict.items():
                    for message in errors:
                        if key != "decision_table" or not place_error(rows, message):
                            other_errors.append(message)
            else:
                messages.success(request, "The decision table is saved.")
                return redirect(_version_url(version, "protocols:decision-table"))
    else:
        formset = DecisionRuleFormSet(
            prefix="rule",
            form_kwargs={"slots": slots, "estimates": estimates},
            initial=[DecisionRuleForm.initial_for(rule) for rule in table] if flat else [],
        )
    return render(
        request,
        "protocols/decision_table.html",
        {
            "protocol": version.protocol,
            "version": version,
            "formset": formset,
            "flat": flat,
            "slots": slots,
            "other_errors": other_errors,
            "toc": _table_toc(version, formset) if flat else [],
        },
        status=400
        if other_errors or (request.method == "POST" and formset.total_error_count())
        else 200,
    )


def _table_toc(version: ProtocolVersion, formset: BaseFormSet) -> list[dict]:
    """The decision table page's contents: a rule a line with its clause count, and as its
    blockers the errors on its row plus the freeze checklist's decision-table problems that
    name its id (issue #37 §9)."""
    problems = [p.message for p in version_gate(version=version) if "decision" in p.code]
    toc = []
    form: DecisionRuleForm
    for n, form in enumerate(formset, start=1):
        rule_id = form["rule_id"].value() or ""
        clauses = sum(1 for k in range(1, form.slots + 1) if form[f"estimate_{k}"].value())
        named = sum(1 for m in problems if rule_id and rule_id in m)
        toc.append(
            {
                "anchor": f"rule-{n}",
                "title": f"Rule {n}: {rule_id}" if rule_id else "New rule",
                "count": counted(clauses, "clause"),
                "blockers": len(form.errors) + named,
            }
        )
    return toc


@login_required
@require_POST
def version_parameter_add(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    """Add a parameter to a draft's plan (PI or editor); errors show on the draft page's form,
    naming the field, and nothing is saved."""
    version = get_version_by_label_for(user=request.user, code=code, label=label, roles=EDIT_ROLES)
    if not version.is_editable:
        messages.info(request, f"v{version.label} is not an open draft; nothing here is editable.")
        return redirect(_version_url(version))
    add_form = ParameterAddForm(request.POST, prefix="add")
    if add_form.is_valid():
        try:
            entry = add_form.new_parameter()
            version_update(version=version, user=request.user, new_parameters=[entry])
        except ValueError as error:
            add_form.add_error("schema", str(error))
        except ValidationError as error:
            add_service_errors(add_form, error, add_error_field_name)
        else:
            messages.success(request, f"Added the parameter {entry['name']}.")
            return redirect(_version_url(version, "protocols:edit") + f"#param-{entry['name']}")
    version = version_with_content(version=version)
    autosave = _version_url(version, "protocols:autosave")
    form = DraftForm(version=version, autosave_url=autosave)
    return render(
        request,
        "protocols/version_edit.html",
        _edit_context(request, version, form, add_form),
        status=400,
    )


@login_required
@require_GET
def version_checklist(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    """The draft's freeze checklist alone: what the draft page polls (htmx) while a check runs
    in a worker (the computability gate of a large design), as the run page polls a run."""
    version = get_version_by_label_for(user=request.user, code=code, label=label, roles=EDIT_ROLES)
    roles = roles_for(user=request.user, protocol_id=version.protocol_id)
    problems = version_gate(version=version)
    return render(
        request,
        "protocols/_checklist.html",
        {
            "version": version,
            "problems": problems,
            "gate_notes": version_gate_notes(version=version, problems=problems),
            "gate_pending": any(p.progress is not None for p in problems),
            "is_pi": Role.PI in roles,
        },
    )


@login_required
@require_POST
def version_autosave(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    """Save the posted field(s) of a draft and answer with the save status, plus out-of-band
    swaps: the field's error, the section's preview and the freeze checklist."""
    version = get_version_by_label_for(user=request.user, code=code, label=label, roles=EDIT_ROLES)
    version = version_with_content(version=version)
    form = DraftForm(version=version)
    errors: dict[str, list[str]] = {}
    saved = False
    try:
        arguments = form.service_arguments(request.POST)
        version = version_update(version=version, user=request.user, **arguments)
        saved = True
    except ValueError as error:
        errors["decision-table"] = [str(error)]
    except ValidationError as error:
        if hasattr(error, "error_dict"):
            for key, messages_ in error.message_dict.items():
                errors.setdefault(error_field_name(key) or "form", []).extend(messages_)
        else:
            errors["form"] = error.messages
    version = version_with_content(version=version)
    fields = [key for key in request.POST if key in form.fields]
    previews = [
        {
            "name": key.removeprefix("section-"),
            "html": render_markdown(getattr(version, key.removeprefix("section-"))),
        }
        for key in fields
        if key.startswith("section-") and saved
    ]
    roles = roles_for(user=request.user, protocol_id=version.protocol_id)
    response = render(
        request,
        "protocols/_autosave.html",
        {
            "version": version,
            "saved": saved,
            "saved_at": timezone.localtime(),
            "errors": errors,
            "fields": [{"name": key, "errors": errors.get(key, [])} for key in fields],
            "form_errors": errors.get("form", []),
            "previews": previews,
            "problems": (problems := version_gate(version=version)),
            "gate_notes": version_gate_notes(version=version, problems=problems),
            "gate_pending": any(p.progress is not None for p in problems),
            "is_pi": Role.PI in roles,
        },
    )
    if saved and PIPELINE_FIELD in request.POST:
        # Another pipeline: another catalogue panel and other parameters to offer.
        response["HX-Refresh"] = "true"
    return response


@login_required
@require_POST
def version_freeze_action(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    version = get_version_by_label_for(user=request.user, code=code, label=label, roles=PI_ROLES)
    # A freeze cannot be undone, so the page asks for the protocol's code typed out, as unsealing
    # does (the API's freeze is a deliberate call and needs no such step).
    confirmed = request.POST.get("confirmation", "").strip() == version.protocol.code
    try:
        if not confirmed and not version_gate(version=version):
            messages.error(
                request,
                f"Not frozen: type the protocol code {version.protocol.code} to confirm the "
                "freeze; it cannot be undone.",
            )
            return redirect(_version_url(version, "protocols:edit"))
        version = version_freeze(version=version, user=request.user)
    except FreezeRefused as refusal:
        count = len(refusal.problems)
        messages.error(
            request,
            f"Not frozen: {count} thing{pluralize(count)} block{pluralize(count, 's,')} "
            "the freeze.",
        )
        return redirect(_version_url(version, "protocols:edit"))
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect(_version_url(version))
    messages.success(request, f"v{version.label} is frozen. SHA-256 {version.sha256}.")
    return redirect(_version_url(version))


@login_required
@require_http_methods(["GET", "POST"])
def version_amend_action(request: AuthenticatedHttpRequest, code: str, label: str) -> HttpResponse:
    """Amend a version (PI): the page says how many scoring tasks it still has open and offers
    to close its scoring (the default) or keep it open (issue #37 §7)."""
    version = get_version_by_label_for(user=request.user, code=code, label=label, roles=PI_ROLES)
    form = AmendForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            new = version_amend(version=version, user=request.user, close_work=form.close_work())
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
            return redirect(_version_url(version))
        messages.success(
            request,
            f"Draft v{new.label} opened from v{version.label}. Say why in the amendment rationale.",
        )
        return redirect(_version_url(new, "protocols:edit"))
    return render(
        request,
        "protocols/version_amend.html",
        {
            "protocol": version.protocol,
            "version": version,
            "form": form,
            "open_tasks": open_work(version),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def version_withdraw_action(
    request: AuthenticatedHttpRequest, code: str, label: str
) -> HttpResponse:
    version = get_version_by_label_for(user=request.user, code=code, label=label, roles=PI_ROLES)
    form = WithdrawForm(request.POST or None)
    withdrawal = service_on_post(
        request,
        form,
        lambda: version_withdraw(version=version, user=request.user, **form.cleaned_data),
    )
    if withdrawal is not None:
        messages.success(request, f"v{version.label} is withdrawn.")
        return redirect(_version_url(version))
    return render(
        request,
        "protocols/version_withdraw.html",
        {"protocol": version.protocol, "version": version, "form": form},
    )


@login_required
@require_http_methods(["GET", "POST"])
def version_deposit_action(
    request: AuthenticatedHttpRequest, code: str, label: str
) -> HttpResponse:
    """Record a draft as frozen elsewhere (PI; issue #17): its published text, kept byte for
    byte with its SHA-256, where and when it was frozen, why it was superseded. It then never
    passes this registry's gate and is never analysed (``version_deposit``)."""
    version = get_version_by_label_for(user=request.user, code=code, label=label, roles=PI_ROLES)
    if version.is_deposited or not version.is_draft:
        messages.info(
            request,
            f"v{version.label} is already deposited."
            if version.is_deposited
            else f"v{version.label} was frozen here; only a version frozen elsewhere is deposited.",
        )
        return redirect(_version_url(version))
    form = DepositForm(request.POST or None, request.FILES or None)
    deposit = service_on_post(
        request,
        form,
        lambda: version_deposit(
            version=version,
            user=request.user,
            text=form.cleaned_data["content"],
            media_type=form.cleaned_data["media_type"],
            frozen_where=form.cleaned_data["frozen_where"],
            frozen_on=form.cleaned_data["frozen_on"],
            note=form.cleaned_data["note"],
        ),
    )
    if deposit is not None:
        messages.success(
            request, f"v{version.label} deposited. Its text's SHA-256 is {deposit.blob_id}."
        )
        return redirect(_version_url(version))
    return render(
        request,
        "protocols/version_deposit.html",
        {"protocol": version.protocol, "version": version, "form": form},
    )


@login_required
def protocol_diff(request: AuthenticatedHttpRequest, code: str) -> HttpResponse:
    """Two versions side by side: ``?from=1.0&to=1.1`` (defaults: the latest and its
    predecessor)."""
    protocol = get_protocol_for(user=request.user, pk=code, roles=READ_ROLES)
    versions = protocol_versions(protocol=protocol)
    labels = [v.label for v in versions]
    to_label = request.GET.get("to") or (labels[-1] if labels else "")
    from_label = request.GET.get("from") or (labels[-2] if len(labels) > 1 else to_label)
    context = {"protocol": protocol, "versions": versions, "from": from_label, "to": to_label}
    if from_label and to_label:
        old = get_version_by_label_for(
            user=request.user, code=code, label=from_label, roles=READ_ROLES
        )
        new = get_version_by_label_for(
            user=request.user, code=code, label=to_label, roles=READ_ROLES
        )
        diff = version_diff(old=old, new=new)
        for section in diff["sections"]:
            section["html"] = ops_html(section.get("ops", []))
        # Two versions' rationales answer different amendments: shown side by side, each
        # whole, never as one interleaved word diff (issue #37 §8).
        context["rationales"] = (old.amendment_rationale, new.amendment_rationale)
        context["diff"] = diff
        context["unified_lines_shown"] = UNIFIED_LINES_SHOWN
        context["unchanged_sections"] = [
            s["title"] for s in diff["sections"] if s["status"] == "unchanged"
        ]
    return render(request, "protocols/version_diff.html", context)

import json
from typing import Any

from django import forms

from apps.accounts.models import Role
from apps.core.forms import add_service_errors
from apps.core.inputs import json_loads
from apps.protocols.models import SECTION_FIELDS, ParameterKind, ProtocolVersion
from apps.protocols.parameters import allowed_choices
from apps.protocols.plans import (
    SECTION_TITLES,
    declared_pipelines,
    plan_template,
    plan_template_choices,
)


class ProtocolCreateForm(forms.Form):
    code = forms.CharField(max_length=32, help_text="A short code such as OPB-01.")
    title = forms.CharField(max_length=300)
    template = forms.ChoiceField(
        choices=plan_template_choices,
        initial="opb",
        required=False,
        label="Plan template",
        help_text="The analysis plan's parameters and outline that draft 1.0 starts with.",
    )

    def clean_template(self) -> str:
        return self.cleaned_data.get("template") or "opb"


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=150, help_text="An existing user's name.")
    role = forms.ChoiceField(choices=Role.choices)
    reason = forms.CharField(
        max_length=2000,
        required=False,
        help_text="Optional; written to the deviation log with the grant.",
    )


class MemberInviteForm(forms.Form):
    email = forms.EmailField(
        help_text="An account is made for a new address; its owner sets the password from the "
        "e-mailed link."
    )
    role = forms.ChoiceField(choices=Role.choices)


class MemberRemoveForm(forms.Form):
    remove = forms.IntegerField(min_value=1, max_value=2**63 - 1, widget=forms.HiddenInput)
    reason = forms.CharField(
        max_length=2000, help_text="Why the role is taken away; written to the deviation log."
    )


class WithdrawForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="Kept with the tombstone and written to the deviation log.",
    )


MAX_DEPOSIT_BYTES = 5 * 1024 * 1024


def deposit_text_read(*, pasted: str, upload) -> tuple[bytes, str]:
    """The deposited text's bytes and media type from a pasted text or an uploaded file (exactly
    one). An upload is kept byte for byte; it is served as plain text when it is UTF-8 and as
    ``application/octet-stream`` otherwise (never as HTML). ValidationError naming ``text`` or
    ``file`` for neither, both, an empty file or one over ``MAX_DEPOSIT_BYTES``."""
    if pasted and upload is not None:
        raise forms.ValidationError({"file": "give the text or a file, not both"})
    if upload is not None:
        if upload.size > MAX_DEPOSIT_BYTES:
            raise forms.ValidationError(
                {"file": f"{upload.name} is over {MAX_DEPOSIT_BYTES // (1024 * 1024)} MB"}
            )
        content = upload.read()
        if not content:
            raise forms.ValidationError({"file": f"{upload.name} is empty"})
        try:
            content.decode("utf-8")
        except UnicodeDecodeError:
            return content, "application/octet-stream"
        return content, "text/plain; charset=utf-8"
    if not pasted:
        raise forms.ValidationError({"text": "paste the published text or upload its file"})
    content = pasted.encode("utf-8")
    if len(content) > MAX_DEPOSIT_BYTES:
        raise forms.ValidationError(
            {"text": f"the text is over {MAX_DEPOSIT_BYTES // (1024 * 1024)} MB"}
        )
    return content, "text/plain; charset=utf-8"


class DepositForm(forms.Form):
    """A version frozen elsewhere, recorded as history (issue #17): its text exactly as
    published, where and when it was frozen, and why it was superseded."""

    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 10}),
        required=False,
        strip=False,
        label="Published text",
        help_text="Paste the text exactly as it was published, or upload its file below.",
    )
    file = forms.FileField(required=False, label="…or its file")
    frozen_where = forms.CharField(
        max_length=500,
        label="Where it was frozen",
        help_text="An archive, a URL or a DOI.",
    )
    frozen_on = forms.DateField(
        required=False,
        label="When it was frozen",
        help_text="The day (YYYY-MM-DD), when the record gives it.",
        widget=forms.DateInput(attrs={"type": "date"}),
    )
    note = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        label="Why it was superseded",
        help_text="Kept with the deposit and shown on the version's page.",
    )

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what Form.clean returns; its stub allows None
        try:
            data["content"], data["media_type"] = deposit_text_read(
                pasted=data.get("text") or "", upload=data.get("file")
            )
        except forms.ValidationError as error:
            add_service_errors(self, error)
        return data


def section_field_name(section: str) -> str:
    return f"section-{section}"


def parameter_field_name(name: str) -> str:
    return f"param-{name}"


RATIONALE_FIELD = "amendment-rationale"
TABLE_FIELD = "decision-table"
PIPELINE_FIELD = "plan-pipeline"


class DraftForm(forms.Form):
    """Every editable part of a draft, one field each, named as the gate's anchors name them
    (``section-hypotheses``, ``param-epsilon``…) so a problem's link lands on it."""

    def __init__(self, *args, version: ProtocolVersion, autosave_url: str = "", **kwargs):
        kwargs.setdefault("auto_id", "%s")
        super().__init__(*args, **kwargs)
        self.version = version
        plan = plan_template(version.protocol.template)
        if version.supersedes is not None:
            self.fields[RATIONALE_FIELD] = forms.CharField(
                label=f"Amendment rationale: why v{version.supersedes.label} is superseded",
                required=False,
                initial=version.amendment_rationale,
                widget=forms.Textarea(attrs={"rows": 4}),
                help_text="Required to freeze an amendment; written to the deviation log.",
            )
        for section in SECTION_FIELDS:
            self.fields[section_field_name(section)] = forms.CharField(
                label=SECTION_TITLES[section],
                required=False,
                initial=getattr(version, section),
                widget=forms.Textarea(attrs={"rows": 10}),
                help_text="Markdown. Required to freeze."
                if section in plan.required_sections
                else "Markdown.",
            )
        self.fields[PIPELINE_FIELD] = forms.ChoiceField(
            label="Analysis pipeline",
            required=False,
            initial=version.pipeline or plan.pipeline or "",
            choices=[("", "⟨ not chosen ⟩")]
            + [(d.kind, f"{d.kind} — {d.title}") for d in declared_pipelines()],
            help_text="The pipeline that will compute this plan; it freezes with the version, "
            "and no other pipeline can run on it.",
        )
        for parameter in version.parameters.all():
            self.fields[parameter_field_name(parameter.name)] = self._parameter_field(parameter)
        self.fields[TABLE_FIELD] = forms.CharField(
            label="Decision table (JSON)",
            required=False,
            initial=json.dumps(version.decision_table, indent=2, ensure_ascii=False),
            widget=forms.Textarea(attrs={"rows": 12, "spellcheck": "false"}),
            help_text='Rules {"id", "finding", "condition": {"all" or "any": [{"estimate", "op", '
            '"value"}]}}; op is >, < or within; a value is a number or a parameter\'s name.',
        )
        for name, field in self.fields.items():
            if autosave_url:
                field.widget.attrs.update(
                    {
                        "hx-post": autosave_url,
                        "hx-trigger": "input changed delay:800ms, change",
                        "hx-params": name,
                        "hx-target": "#save-status",
                        # The status says "Saving…" while the request (and the gate) runs.
                        "hx-indicator": "#save-status",
                        "hx-swap": "outerHTML",
                        # Each field saves its own value alone: a save dropped from the
                        # queue would be an edit lost. So every save waits its turn, in order.
                        "hx-sync": "closest form:queue all",
                    }
                )
            field.widget.attrs["aria-describedby"] = f"{name}_help error-{name}"

    @staticmethod
    def _parameter_field(parameter) -> forms.Field:
        unit = f" ({parameter.unit})" if parameter.unit else ""
        label = f"{parameter.label[:1].upper()}{parameter.label[1:]}{unit}"
        help_text = parameter.help_text
        if parameter.kind == ParameterKind.BOOLEAN:
            return forms.ChoiceField(
                label=label,
                required=False,
                initial=parameter.value,
                choices=[("", "⟨ not chosen ⟩"), ("true", "yes (true)"), ("false", "no (false)")],
                help_text=help_text,
            )
        if parameter.kind in (ParameterKind.LIST, ParameterKind.JSON):
            return forms.CharField(
                label=label,
                required=False,
                initial=parameter.value,
                help_text=help_text
                or ("A JSON list of texts." if parameter.kind == ParameterKind.LIST else "JSON."),
                widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
            )
        if parameter.kind in (ParameterKind.CHOICE, ParameterKind.INTERVAL_METHOD):
            return forms.ChoiceField(
                label=label,
                required=False,
                initial=parameter.value,
                choices=[("", "⟨ not chosen ⟩")] + [(c, c) for c in allowed_choices(parameter)],
                help_text=help_text,
            )
        return forms.CharField(
            label=label,
            required=False,
            initial=parameter.value,
            help_text=help_text,
            widget=forms.TextInput(
                attrs={"inputmode": "decimal"}
                if parameter.kind in (ParameterKind.NUMBER, ParameterKind.INTEGER)
                else {}
            ),
        )

    def service_arguments(self, data) -> dict:
        """The ``version_update`` arguments for the fields present in ``data`` (a QueryDict).

        Raises ValueError naming the field when the decision table is not JSON.
        """
        sections, parameters, arguments = {}, {}, {}
        for key in data:
            if key.startswith("section-") and key in self.fields:
                sections[key.removeprefix("section-")] = data[key]
            elif key.startswith("param-") and key in self.fields:
                parameters[key.removeprefix("param-")] = data[key]
            elif key == PIPELINE_FIELD:
                arguments["pipeline"] = data[key]
            elif key == RATIONALE_FIELD and key in self.fields:
                arguments["amendment_rationale"] = data[key]
            elif key == TABLE_FIELD:
                try:
                    arguments["decision_table"] = json_loads(data[key] or "[]")
                except (ValueError, RecursionError) as error:
                    reason = "nested too deeply" if isinstance(error, RecursionError) else error
                    raise ValueError(f"the decision table is not valid JSON: {reason}") from error
        if sections:
            arguments["sections"] = sections
        if parameters:
            arguments["parameters"] = parameters
        return arguments


def error_field_name(key: str) -> str:
    """The form field a ``version_update`` error key belongs to."""
    if key.startswith("parameters."):
        return parameter_field_name(key.removeprefix("parameters."))
    if key in SECTION_FIELDS:
        return section_field_name(key)
    return {
        "amendment_rationale": RATIONALE_FIELD,
        "decision_table": TABLE_FIELD,
        "pipeline": PIPELINE_FIELD,
    }.get(key, "")


class ParameterAddForm(forms.Form):
    """Add a parameter to a draft's plan: one the pipeline declares (its name is enough) or
    the plan's own, typed. Errors come back from ``version_update`` by field path."""

    name = forms.SlugField(max_length=64, help_text="e.g. min_families or exclusion_reasons")
    kind = forms.ChoiceField(
        required=False,
        choices=[("", "⟨ as the pipeline declares it ⟩"), *ParameterKind.choices],
        help_text="Leave empty for a parameter the pipeline declares.",
    )
    label = forms.CharField(max_length=200, required=False)
    unit = forms.CharField(max_length=40, required=False)
    required = forms.BooleanField(required=False, initial=True, help_text="Needed to freeze.")
    choices = forms.CharField(
        required=False, help_text="For a choice or list parameter: the values, comma-separated."
    )
    minimum = forms.CharField(required=False, help_text="Number and integer only.")
    maximum = forms.CharField(required=False, help_text="Number and integer only.")
    schema = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text="For a json parameter: the JSON Schema its value must satisfy.",
    )
    value = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text="Text; JSON for a list or json parameter.",
    )

    def new_parameter(self) -> dict:
        """The ``new_parameters`` entry for ``version_update``; raises ValueError naming the
        field when the schema is not JSON."""
        data = self.cleaned_data
        entry: dict = {"name": data["name"], "value": data.get("value") or ""}
        if data.get("kind"):
            entry["kind"] = data["kind"]
            entry["required"] = bool(data.get("required"))
        for key in ("label", "unit", "minimum", "maximum"):
            if data.get(key):
                entry[key] = data[key]
        if data.get("choices"):
            entry["choices"] = [c.strip() for c in data["choices"].split(",") if c.strip()]
        if data.get("schema"):
            try:
                entry["schema"] = json_loads(data["schema"])
            except (ValueError, RecursionError) as error:
                raise ValueError(f"the schema is not valid JSON: {error}") from error
        return entry


def add_error_field_name(key: str) -> str | None:
    """The ``ParameterAddForm`` field a ``new_parameters[0].x`` error belongs to."""
    field = key.rpartition(".")[2] if key.startswith("new_parameters[") else ""
    return field if field in ParameterAddForm.base_fields else None


class AmendForm(forms.Form):
    """Amend a version; when it has open scoring tasks, close its scoring (the default) or keep
    it open beside the new version's (issue #37 §7)."""

    CLOSE, KEEP = "close", "keep"
    scoring = forms.ChoiceField(
        label="Its open scoring tasks",
        choices=[
            (
                CLOSE,
                "Close its scoring: the open tasks leave reviewers' queues (scores given stay)",
            ),
            (KEEP, "Keep its scoring open: reviewers go on scoring it beside the new version"),
        ],
        initial=CLOSE,
        required=False,
        widget=forms.RadioSelect,
    )

    def close_work(self) -> bool:
        """Whether to close the version's open work: yes unless the PI chose to keep it."""
        return self.cleaned_data.get("scoring") != self.KEEP

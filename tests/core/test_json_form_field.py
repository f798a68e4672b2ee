"""Every form's JSON field is ``apps.core.forms.JSONField``: the evaluand's identity, the response
and machine-score import mappings and a scorer's settings refuse, never crash on, what PostgreSQL
or Python cannot keep."""

import pytest

from apps.raters.machine_views import ScorerEnrollForm
from apps.responses.forms import EvaluandForm

SCORER = {"code": "judge-1", "role": "judge", "kind": "llm_judge", "name": "j", "version": "1"}


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"moderation": "on\\u0000"}', "NUL"),  # jsonb refuses \\u0000
        ('{"a": "\\ud800"}', "lone surrogate"),
        ("[" * 5000 + "]" * 5000, "nest"),
        ("1" * 5000, "longer than Python reads"),
        ("{not json", "valid JSON"),
    ],
)
def test_a_json_field_refuses_what_cannot_be_kept_with_a_message(text, message):
    evaluand = EvaluandForm(data={"label": "A", "model": "m", "safeguards": text})
    scorer = ScorerEnrollForm(data={**SCORER, "inference_settings": text})
    for form, name in ((evaluand, "safeguards"), (scorer, "inference_settings")):
        assert not form.is_valid()
        assert message in " ".join(form.errors[name])


def test_an_empty_json_field_starts_empty_and_keeps_what_was_typed_when_refused():
    assert "null" not in str(EvaluandForm(initial={"safeguards": None})["safeguards"])
    refused = ScorerEnrollForm(data={**SCORER, "params": "{not json"})
    assert not refused.is_valid() and "{not json" in str(refused["params"])

"""The design diagnosis as a Celery task (issue #35 §4–5): requested on a draft, run by the
task (eager in tests) with progress, its result a canonical JSON blob reproducible from its
seed, cancellable, and frozen with the version (its hash, world and seed); never attached to a
version frozen while it ran."""

import json

import pytest
from django.core.exceptions import ValidationError

from apps.analysis.diagnosis.selectors import diagnosis_document
from apps.analysis.diagnosis.services import (
    design_diagnosis_cancel,
    design_diagnosis_perform,
    design_diagnosis_request,
)
from apps.analysis.models import DiagnosisState
from apps.core.canonical import canonical_json
from apps.protocols.documents import version_document_bytes
from apps.protocols.models import Blob
from tests.factories import freeze, xstest_shaped_draft

pytestmark = pytest.mark.django_db

WORLD = {"rate:S:2_full_refusal": 0.3, "item_icc": 0.0}


def _draft(code):
    draft = xstest_shaped_draft(12, code=code, evaluands=1)
    return draft, draft.created_by


def _request(draft, pi, capture, **kwargs):
    options = {"world": WORLD, "sims": 4, "seed": 11, **kwargs}
    with capture(execute=True):
        diagnosis = design_diagnosis_request(version=draft, user=pi, **options)
    diagnosis.refresh_from_db()
    return diagnosis


def test_a_diagnosis_runs_as_a_task_and_is_frozen_with_the_version(
    django_capture_on_commit_callbacks,
):
    draft, pi = _draft("XS-TASK")
    before = json.loads(version_document_bytes(version=draft)[0])
    assert "design_diagnosis" not in before  # none yet: the document keeps its bytes
    diagnosis = _request(draft, pi, django_capture_on_commit_callbacks)
    assert diagnosis.state == DiagnosisState.SUCCEEDED, diagnosis.error
    assert diagnosis.progress == 100
    document = diagnosis_document(diagnosis)
    assert bytes(diagnosis.result.content) == canonical_json(document)
    assert document["world"]["rate:S:2_full_refusal"] == 0.3
    assert document["world"]["reviewer_accuracy"] == 0.9  # the default, recorded

    again = _request(draft, pi, django_capture_on_commit_callbacks)
    assert again.result_id == diagnosis.result_id  # same draft, world, seed: same bytes

    frozen = freeze(draft, pi)
    content = json.loads(bytes(Blob.objects.get(sha256=frozen.sha256).content))
    part = content["design_diagnosis"]
    assert part["sha256"] == again.result_id
    assert part["seed"] == 11 and part["sims"] == 4
    assert part["world"] == document["world"]
    assert version_document_bytes(version=frozen)[1] == frozen.sha256

    with pytest.raises(ValidationError) as error:
        design_diagnosis_request(version=frozen, user=pi, world={}, sims=2, seed=1)
    assert "version" in error.value.message_dict


def test_a_diagnosis_finishing_after_the_freeze_is_not_attached(
    django_capture_on_commit_callbacks,
):
    draft, pi = _draft("XS-LATE")
    with django_capture_on_commit_callbacks(execute=False):
        diagnosis = design_diagnosis_request(version=draft, user=pi, world=WORLD, sims=2, seed=1)
    frozen = freeze(draft, pi)  # the freeze does not wait for it
    assert design_diagnosis_perform(diagnosis_id=diagnosis.pk) == DiagnosisState.FAILED
    diagnosis.refresh_from_db()
    assert "frozen while the diagnosis ran" in diagnosis.error
    assert diagnosis.result is None
    assert "design_diagnosis" not in json.loads(version_document_bytes(version=frozen)[0])
    assert version_document_bytes(version=frozen)[1] == frozen.sha256


def test_cancelled_before_or_while_it_runs(django_capture_on_commit_callbacks, monkeypatch):
    draft, pi = _draft("XS-CANCEL")
    with django_capture_on_commit_callbacks(execute=False):
        queued = design_diagnosis_request(version=draft, user=pi, world=WORLD, sims=3, seed=1)
    assert design_diagnosis_cancel(diagnosis=queued).state == DiagnosisState.CANCELLED
    assert design_diagnosis_perform(diagnosis_id=queued.pk) == "not claimed"

    with django_capture_on_commit_callbacks(execute=False):
        running = design_diagnosis_request(version=draft, user=pi, world=WORLD, sims=6, seed=1)
    from apps.analysis.diagnosis import diagnosands

    real = diagnosands.simulate

    def cancel_after_two(run_once, **kwargs):
        def once(rng, i):
            if i == 2:
                design_diagnosis_cancel(diagnosis=running)
            return run_once(rng, i)

        return real(once, **kwargs)

    monkeypatch.setattr("apps.analysis.diagnosis.engine.simulate", cancel_after_two)
    assert design_diagnosis_perform(diagnosis_id=running.pk) == DiagnosisState.CANCELLED
    running.refresh_from_db()
    assert running.result is None and "after 3 of 6" in running.progress_message


def test_a_world_out_of_range_is_refused_before_anything_is_queued(
    django_capture_on_commit_callbacks,
):
    draft, pi = _draft("XS-RANGE")
    with pytest.raises(ValidationError) as error:
        design_diagnosis_request(version=draft, user=pi, world={"item_icc": 2}, sims=2, seed=1)
    assert "Item ICC" in str(error.value.message_dict["world"])
    with pytest.raises(ValidationError) as error:
        design_diagnosis_request(
            version=draft, user=pi, world={}, sims=2, seed=1, size="dialogues", size_values=[2]
        )
    assert "size" in error.value.message_dict
    assert not draft.design_diagnoses.exists()


def test_an_amendment_shows_how_the_diagnosis_changed(django_capture_on_commit_callbacks):
    from apps.protocols.diffs import version_diff
    from apps.protocols.services import version_amend

    draft, pi = _draft("XS-AMEND")
    first = _request(draft, pi, django_capture_on_commit_callbacks)
    frozen = freeze(draft, pi)
    amendment = version_amend(version=frozen, user=pi)
    # The amendment's draft starts with no diagnosis: the old one diagnosed the old design.
    assert "design_diagnosis" not in json.loads(version_document_bytes(version=amendment)[0])
    second = _request(
        amendment, pi, django_capture_on_commit_callbacks, world={**WORLD, "item_icc": 0.3}
    )
    assert second.result_id != first.result_id
    change = {c["name"]: c for c in version_diff(old=frozen, new=amendment)["components"]}
    diagnosis = change["design_diagnosis"]
    assert diagnosis["status"] == "changed"
    unified = "\n".join(diagnosis["unified"])
    assert '-    "item_icc": 0,' in unified and '+    "item_icc": 0.3' in unified
    assert f'+  "sha256": "{second.result_id}"' in unified

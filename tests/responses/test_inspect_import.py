"""Inspect AI logs (``../shared/data/inspect``), read with inspect_ai's own reader.

inspect_ai is the optional extra ``inspect`` (heavy: see the README); without it these tests are
skipped, and the importer answers with a clear message instead of a traceback.
"""

import pytest

from apps.responses.formats import INSPECT_MISSING, inspect_available
from apps.responses.importing import ImportRejected
from apps.responses.models import Attempt
from apps.responses.services import responses_import
from tests.factories import build_draft, freeze

pytestmark = [pytest.mark.django_db, pytest.mark.shared_data]
needs_inspect = pytest.mark.skipif(
    not inspect_available(),
    reason="inspect_ai (the optional extra 'inspect') is not installed: "
    "pip install -e '.[inspect]'",
)


def _demo_version(protocol, pi):
    """The log's design: samples xs-1 … xs-3, one level, the mock model, two epochs."""
    draft = build_draft(
        protocol=protocol,
        user=pi,
        items=["xs-1", "xs-2", "xs-3"],
        evaluands={"mock": "mockllm/model"},
        repetitions=2,
    )
    return freeze(draft, pi)


@needs_inspect
@pytest.mark.parametrize("filename", ["refusal_demo_mockllm.eval", "refusal_demo_mockllm.json"])
def test_an_inspect_log_imports_each_sample_and_epoch_as_an_attempt(
    shared_data, protocol, pi, filename
):
    version = _demo_version(protocol, pi)
    data = (shared_data / "inspect" / filename).read_bytes()
    outcome = responses_import(version=version, user=pi, data=data, filename=filename)
    assert outcome.status == "imported"
    assert outcome.counts["attempts"] == 6
    attempts = Attempt.objects.filter(version=version).select_related(
        "administration__cell__item", "response"
    )
    seen = {(a.administration.cell.item.code, a.administration.repetition) for a in attempts}
    assert seen == {(f"xs-{n}", epoch) for n in (1, 2, 3) for epoch in (1, 2)}
    refusal = attempts.get(administration__cell__item__code="xs-2", administration__repetition=1)
    assert refusal.terminal_outcome == "completed"  # a refusal is a score, not a terminal outcome
    assert refusal.response.text == "I'm sorry, but I can't help with that."
    assert refusal.raw["id"] == "xs-2" and refusal.raw["epoch"] == 1
    assert refusal.started_at is not None and refusal.ended_at >= refusal.started_at
    assert outcome.record.header["model"] == "mockllm/model"


@needs_inspect
def test_the_json_log_after_the_eval_log_is_refused_sample_by_sample(shared_data, protocol, pi):
    version = _demo_version(protocol, pi)
    folder = shared_data / "inspect"
    responses_import(
        version=version,
        user=pi,
        data=(folder / "refusal_demo_mockllm.eval").read_bytes(),
        filename="refusal_demo_mockllm.eval",
    )
    with pytest.raises(ImportRejected) as rejected:
        responses_import(
            version=version,
            user=pi,
            data=(folder / "refusal_demo_mockllm.json").read_bytes(),
            filename="refusal_demo_mockllm.json",
        )
    assert [p.row for p in rejected.value.problems] == [1, 2, 3, 4, 5, 6]
    assert str(rejected.value.problems[0]).startswith(
        "row 1 (sample xs-1, epoch 1), administration"
    )
    assert Attempt.objects.filter(version=version).count() == 6


@pytest.mark.skipif(inspect_available(), reason="checks the message shown without inspect_ai")
def test_without_the_extra_an_inspect_log_is_refused_with_a_clear_message(
    shared_data, protocol, pi
):
    version = _demo_version(protocol, pi)
    with pytest.raises(ImportRejected) as rejected:
        responses_import(
            version=version,
            user=pi,
            data=(shared_data / "inspect" / "refusal_demo_mockllm.eval").read_bytes(),
            filename="refusal_demo_mockllm.eval",
        )
    assert INSPECT_MISSING in str(rejected.value)


@needs_inspect
def test_a_sample_larger_than_the_limit_is_refused_before_it_is_read(shared_data, settings):
    from apps.responses.formats import FileUnreadable, stream_file

    log = shared_data / "inspect" / "refusal_demo_mockllm.eval"
    assert sum(1 for _ in stream_file(log, "inspect").records) == 6
    settings.INSPECT_SAMPLE_MAX_MB = 0
    with pytest.raises(FileUnreadable) as refused:
        stream_file(log, "inspect")
    assert "a sample may hold at most 0 MiB" in str(refused.value)
    settings.INSPECT_JSON_MAX_MB = 0
    with pytest.raises(FileUnreadable) as whole:
        stream_file(shared_data / "inspect" / "refusal_demo_mockllm.json", "inspect")
    assert "import the .eval log instead" in str(whole.value)

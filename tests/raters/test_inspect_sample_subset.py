"""A machine-score import reads each sample of an Inspect ``.eval`` log for the fields it uses
(``formats.stream_inspect`` with ``keys``; issue 34's benchmark: 25,000 whole samples validated
by inspect_ai took most of a 100,000-score import). What it reads must be what inspect_ai's own
reader gives, every check of the text read kept, and a sample the subset cannot read is read
whole. The logs are written by inspect_ai itself (``tests/inspect_logs.py``).
"""

import json
import zipfile

import pytest

from apps.raters.machine_import import sample_keys
from apps.responses.formats import FileUnreadable, inspect_available, read_inspect
from tests.raters.test_machine_scorers import SCORES

pytestmark = pytest.mark.skipif(not inspect_available(), reason="inspect_ai not installed")


def _rewritten(path, tmp_path, change) -> bytes:
    """The log at ``path`` with ``change(sample)`` applied to each sample entry's JSON."""
    import inspect_ai.log  # noqa: F401  (registers the zstd compression inspect_ai writes)

    out_path = tmp_path / "changed.eval"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out_path, "w") as out:
        for entry in source.infolist():
            data = source.read(entry)
            if entry.filename.startswith("samples/"):
                sample = json.loads(data)
                change(sample)
                data = json.dumps(sample).encode()
            out.writestr(entry.filename, data, zipfile.ZIP_DEFLATED)
    return out_path.read_bytes()


def test_the_fields_read_are_those_inspect_ais_reader_gives(inspect_logs):
    data = inspect_logs["appended"].read_bytes()
    whole = read_inspect(data).records
    keys = sample_keys({"scores": SCORES})
    assert keys >= {"id", "epoch", "scores", "model"}
    subset = read_inspect(data, keys).records
    assert [r.label for r in subset] == [r.label for r in whole]
    for small, full in zip(subset, whole, strict=True):
        assert set(small.fields) == {"id", "epoch", "scores", "model"}
        assert {k: full.fields[k] for k in small.fields} == small.fields
        assert small.raw == {k: full.raw[k] for k in ("id", "epoch", "scores")}
    # A column the mapping names is read too, derived fields from the fields they need.
    named = sample_keys({"item": "metadata.code", "fields": {"x": "terminal_outcome"}})
    assert {"metadata", "terminal_outcome"} <= named
    for small, full in zip(read_inspect(data, named).records, whole, strict=True):
        for key in ("metadata", "terminal_outcome", "completion", "scores"):
            assert small.fields[key] == full.fields[key]


def test_a_sample_written_with_the_deprecated_score_is_read_whole(inspect_logs, tmp_path):
    def deprecated(sample):
        sample["score"] = sample.pop("scores")["includes"]

    data = _rewritten(inspect_logs["appended"], tmp_path, deprecated)
    whole = read_inspect(data).records
    subset = read_inspect(data, {"id", "epoch", "scores"}).records
    # inspect_ai moves "score" into "scores" under its placeholder name; so does the subset.
    assert [r.fields["scores"] for r in subset] == [r.fields["scores"] for r in whole]
    assert all(len(r.fields["scores"]) == 1 for r in subset)


@pytest.mark.parametrize(
    ("text", "problem"), [("a\x00b", "NUL character"), ("a\ud800b", "lone surrogate")]
)
def test_unstorable_text_in_a_field_read_is_refused_naming_the_sample_and_path(
    inspect_logs, tmp_path, text, problem
):
    def unstorable(sample):
        sample["scores"]["judge"]["explanation"] = text

    data = _rewritten(inspect_logs["appended"], tmp_path, unstorable)
    with pytest.raises(FileUnreadable) as refused:
        read_inspect(data, {"id", "epoch", "scores"})
    found = refused.value.problems[0]
    assert found.row == 1
    assert found.field == "scores.judge.explanation"
    assert problem in found.message
    assert found.label.startswith("sample ")


def test_text_in_a_field_not_read_is_neither_kept_nor_checked(inspect_logs, tmp_path):
    """The subset keeps no message: a NUL in one refuses the whole read (which keeps it, as the
    response import does) but not a machine-score import's."""

    def nul_in_a_message(sample):
        sample["messages"][0]["content"] = "a\x00b"

    data = _rewritten(inspect_logs["appended"], tmp_path, nul_in_a_message)
    with pytest.raises(FileUnreadable):
        read_inspect(data)
    records = read_inspect(data, {"id", "epoch", "scores"}).records
    assert all("messages" not in r.fields for r in records)

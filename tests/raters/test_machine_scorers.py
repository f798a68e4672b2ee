"""Machine scorers as Inspect AI users run them (issue 34 §1–4): several scorers in one log (and
scorers appended by ``inspect score --action append``), dict-valued scores by key path, the
provenance a log records checked against the frozen identity, and epochs combined as frozen.

The logs are written by inspect_ai itself (``tests/inspect_logs.py``, once per session).
"""

import hashlib

import pytest
from django.core.exceptions import ValidationError

from apps.raters.final import final_values
from apps.raters.models import MachineScore, MachineScoreImport
from apps.raters.services.machine import machine_scores_import
from apps.responses.importing import ImportRejected
from tests.factories import JUDGE, JUDGE_FIELDS, csv_bytes, jsonl, machine_study
from tests.inspect_logs import GRADER, SAMPLES, TEMPLATE, completion

pytestmark = pytest.mark.django_db

FIELDS = [
    {"name": "complied", "kind": "binary", "scored_by": "scorer", "scorer_role": "grader"},
    {"name": "a_count", "kind": "count", "scored_by": "scorer", "scorer_role": "letters"},
    {"name": "e_count", "kind": "count", "scored_by": "scorer", "scorer_role": "letters"},
    {"name": "judged", "kind": "binary", "scored_by": "scorer", "scorer_role": "judge"},
]
INCLUDES = {"kind": "harness_grader", "name": "includes", "version": "inspect_ai 0.3"}
LETTERS = {"kind": "harness_grader", "name": "letter_count", "version": "inspect_ai 0.3"}
INSPECT_JUDGE = {
    "kind": "llm_judge",
    "name": "judge",
    "version": "1",
    "model": GRADER,
    "provider": "mockllm",
    "prompt": TEMPLATE,
}
SCORES = {
    "includes": {"scorer": "includes", "field": "complied"},
    "scores.letter_count.value.a_count": {"scorer": "letters", "field": "a_count"},
    "scores.letter_count.value.e_count": {"scorer": "letters", "field": "e_count"},
    "judge": {"scorer": "judge", "field": "judged"},
}


def _study(protocol, pi, epochs=None):
    return machine_study(
        protocol=protocol,
        pi=pi,
        fields=FIELDS,
        scorers={
            "includes": ("grader", INCLUDES),
            "letters": ("letters", LETTERS),
            "judge": ("judge", INSPECT_JUDGE),
        },
        items=list(SAMPLES),
        evaluands={"mock": "mockllm/model"},
        repetitions=2,
        epochs=epochs,
    )


def _import(version, pi, path, scores):
    return machine_scores_import(
        version=version,
        user=pi,
        data=path.read_bytes(),
        filename=path.name,
        mapping={"scores": scores},
    )


def _values(field):
    return {
        (
            s.response.attempt.administration.cell.item.code,
            s.response.attempt.administration.repetition,
        ): s.value
        for s in MachineScore.objects.filter(field=field).select_related(
            "response__attempt__administration__cell__item"
        )
    }


def test_one_log_feeds_several_scorers_and_each_pair_imports_once(inspect_logs, protocol, pi):
    version = _study(protocol, pi)
    log = inspect_logs["appended"]
    first = _import(version, pi, log, {"includes": SCORES["includes"]})
    assert first.status == "imported" and first.counts["by_scorer"] == {"includes": 6}
    assert first.record.pairs == [["includes", "complied"]]
    # The mock's completions hold "Default"; xs-2's target is "Refusal" (includes() says I).
    assert _values("complied") == {(s, e): s != "xs-2" for s in SAMPLES for e in (1, 2)}

    again = _import(version, pi, log, {"includes": SCORES["includes"]})
    assert again.status == "already_imported" and again.record.pk == first.record.pk
    assert "already gave includes/complied" in again.message
    assert "Nothing was written" in again.message

    # The same log for the other scorers: imported, the pair already written skipped.
    rest = _import(version, pi, log, SCORES)
    assert rest.status == "imported"
    assert rest.counts["by_scorer"] == {"judge": 6, "letters": 12}
    assert "Skipped: this file" in rest.message and "includes/complied" in rest.message
    assert MachineScoreImport.objects.filter(sha256=first.record.sha256).count() == 2
    assert MachineScore.objects.count() == 24

    assert _import(version, pi, log, SCORES).status == "already_imported"
    assert MachineScore.objects.count() == 24


def test_dict_valued_scores_map_key_by_key_as_in_inspects_multi_value_example(
    inspect_logs, protocol, pi
):
    """Inspect's documented ``letter_count`` scorer returns ``{"a_count", "e_count"}``; each key
    reaches its own field by ``scores.letter_count.value.<key>``."""
    version = _study(protocol, pi)
    keys = {k: v for k, v in SCORES.items() if "letter_count" in k}
    _import(version, pi, inspect_logs["two_scorers"], keys)
    for field, letter in (("a_count", "a"), ("e_count", "e")):
        assert _values(field) == {
            (s, e): completion(e).count(letter) for s in SAMPLES for e in (1, 2)
        }


def test_a_dict_valued_score_mapped_whole_is_refused_row_by_row_with_the_key_path_to_use(
    inspect_logs, protocol, pi
):
    version = _study(protocol, pi)
    with pytest.raises(ImportRejected) as refused:
        _import(
            version,
            pi,
            inspect_logs["two_scorers"],
            {"letter_count": {"field": "a_count", "scorer": "letters"}},
        )
    problems = refused.value.problems
    assert {(p.row, p.field) for p in problems} == {(row, "a_count") for row in range(1, 7)}
    assert "holds several values (a_count, e_count)" in problems[0].message
    assert "scores.letter_count.value.<key>" in problems[0].message


def test_a_log_graded_by_another_grader_model_is_refused_naming_both_models(
    inspect_logs, protocol, pi
):
    version = _study(protocol, pi)
    with pytest.raises(ImportRejected) as refused:
        _import(version, pi, inspect_logs["other_grader"], {"judge": SCORES["judge"]})
    (problem,) = refused.value.problems
    assert problem.row is None and problem.field == "scores.judge (model)"
    assert f"'{GRADER}-2'" in problem.message and f"'{GRADER}'" in problem.message
    assert "the file other_grader.eval" in str(problem)
    assert MachineScore.objects.count() == 0
    # The same judge from the log its frozen identity names imports.
    assert (
        _import(version, pi, inspect_logs["appended"], {"judge": SCORES["judge"]}).counts["scores"]
        == 6
    )


def test_a_judge_frozen_with_another_template_or_params_is_refused(inspect_logs, protocol, pi):
    version = machine_study(
        protocol=protocol,
        pi=pi,
        fields=FIELDS,
        scorers={
            "includes": ("grader", {**INCLUDES, "params": {"ignore_case": False}}),
            "letters": ("letters", LETTERS),
            "judge": ("judge", {**INSPECT_JUDGE, "prompt": "Another prompt."}),
        },
        items=list(SAMPLES),
        evaluands={"mock": "mockllm/model"},
        repetitions=2,
    )
    with pytest.raises(ImportRejected) as refused:
        _import(version, pi, inspect_logs["appended"], SCORES)
    found = {p.field: p.message for p in refused.value.problems}
    assert set(found) == {"scores.includes (params)", "scores.judge (prompt_sha256)"}
    template_sha256 = hashlib.sha256(TEMPLATE.encode()).hexdigest()
    assert template_sha256 in found["scores.judge (prompt_sha256)"]
    assert hashlib.sha256(b"Another prompt.").hexdigest() in found["scores.judge (prompt_sha256)"]


def test_epochs_combine_in_the_final_values_as_the_roster_froze_them(inspect_logs, protocol, pi):
    version = _study(protocol, pi, epochs={"letters": "mean", "judge": "at_least:2"})
    _import(version, pi, inspect_logs["appended"], SCORES)
    rows = {row["response_id"]: row for row in final_values(version)}
    by_key = {
        (
            s.response.attempt.administration.cell.item.code,
            s.response.attempt.administration.repetition,
        ): s.response_id
        for s in MachineScore.objects.filter(field="complied").select_related(
            "response__attempt__administration__cell__item"
        )
    }
    mean_a = (completion(1).count("a") + completion(2).count("a")) / 2
    for sample in SAMPLES:
        first, second = rows[by_key[(sample, 1)]], rows[by_key[(sample, 2)]]
        assert first["final"]["a_count"] == mean_a  # the mean of the two epochs
        assert first["final"]["judged"] is False  # C then I: not at least 2 of 2
        assert second["final"]["a_count"] is None and second["final"]["judged"] is None
        # includes is "each": every epoch is its own observation.
        assert first["final"]["complied"] == second["final"]["complied"] == (sample != "xs-2")


def test_an_epochs_rule_that_fits_no_field_kind_blocks_the_freeze(protocol, pi):
    from apps.raters.selectors import scorer_checks
    from apps.raters.services.scorers import scorer_register, scorer_roster_enroll
    from tests.factories import build_draft

    draft = build_draft(protocol=protocol, user=pi)
    scorer, _ = scorer_register(user=pi, label="judge", **INSPECT_JUDGE)
    with pytest.raises(ValidationError) as error:
        scorer_roster_enroll(
            version=draft, scorer=scorer, code="j", role="judge", user=pi, epochs="median"
        )
    assert "epochs" in error.value.message_dict
    from apps.raters.services import rubric_create

    rubric_create(version=draft, name="r", fields=FIELDS)
    scorer_roster_enroll(
        version=draft, scorer=scorer, code="j", role="judge", user=pi, epochs="mean"
    )
    codes = [(p.code, "'judged'" in p.message) for p in scorer_checks(draft)]
    assert ("epochs_rule_invalid", True) in codes


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_files_judge_model_and_prompt_hash_are_checked_row_by_row(protocol, pi, fmt):
    version = machine_study(
        protocol=protocol, pi=pi, fields=JUDGE_FIELDS, scorers={"judge": ("judge", JUDGE)}
    )
    rows = [
        {
            "position": position,
            "scorer": "judge",
            "fidelity": True if fmt == "jsonl" else "true",
            "judge_model": JUDGE["model"],
            "judge_prompt_sha256": JUDGE["prompt_sha256"],
        }
        for position in (1, 2, 3)
    ]
    rows[1]["judge_model"] = "judge-model-2027-01"
    data = jsonl(rows) if fmt == "jsonl" else csv_bytes(rows)
    with pytest.raises(ImportRejected) as refused:
        machine_scores_import(version=version, user=pi, data=data, filename=f"j.{fmt}")
    (problem,) = refused.value.problems
    assert (problem.row, problem.field) == (2 if fmt == "jsonl" else 3, "judge_model")
    assert "'judge-model-2027-01'" in problem.message and f"'{JUDGE['model']}'" in problem.message
    rows[1]["judge_model"] = JUDGE["model"]
    data = jsonl(rows) if fmt == "jsonl" else csv_bytes(rows)
    outcome = machine_scores_import(version=version, user=pi, data=data, filename=f"j.{fmt}")
    assert outcome.counts["scores"] == 3


def test_a_jsonl_file_gives_two_scorers_columns_to_their_fields(protocol, pi):
    second = {**JUDGE, "model": "judge-model-2026-06"}
    version = machine_study(
        protocol=protocol,
        pi=pi,
        fields=JUDGE_FIELDS,
        scorers={"judge": ("judge", JUDGE), "judge-b": ("judge", second)},
    )
    rows = [{"position": p, "verdict_a": p % 2 == 0, "verdict_b": True} for p in (1, 2, 3, 4)]
    mapping = {
        "scores": {
            "verdict_a": {"scorer": "judge", "field": "fidelity"},
            "verdict_b": {"scorer": "judge-b", "field": "fidelity"},
        }
    }
    data = jsonl(rows)
    outcome = machine_scores_import(
        version=version, user=pi, data=data, filename="two.jsonl", mapping=mapping
    )
    assert outcome.counts["by_scorer"] == {"judge": 4, "judge-b": 4}
    only_b = {"scores": {"verdict_b": mapping["scores"]["verdict_b"]}}
    again = machine_scores_import(
        version=version, user=pi, data=data, filename="two.jsonl", mapping=only_b
    )
    assert again.status == "already_imported"


# A prompt whose bytes depend on the encoding and on its line endings: hashed as frozen.
PROMPT = "Évalue la réponse :\r\n{answer}\n"


def test_a_rows_prompt_hash_is_checked_against_the_utf8_bytes_of_the_frozen_prompt(protocol, pi):
    judge = {**{k: v for k, v in JUDGE.items() if k != "prompt_sha256"}, "prompt": PROMPT}
    version = machine_study(
        protocol=protocol, pi=pi, fields=JUDGE_FIELDS, scorers={"judge": ("judge", judge)}
    )
    frozen = hashlib.sha256(PROMPT.encode("utf-8")).hexdigest()
    other = hashlib.sha256(b"Evalue la reponse :\n{answer}\n").hexdigest()
    rows = [
        {"position": p, "scorer": "judge", "fidelity": True, "judge_prompt_sha256": frozen}
        for p in (1, 2, 3)
    ]
    rows[1]["judge_prompt_sha256"] = other
    with pytest.raises(ImportRejected) as refused:
        machine_scores_import(version=version, user=pi, data=jsonl(rows), filename="j.jsonl")
    (problem,) = refused.value.problems
    assert (problem.row, problem.field) == (2, "judge_prompt_sha256")
    assert repr(other) in problem.message and repr(frozen) in problem.message
    # The frozen prompt's hash, in either case of hex digit, is accepted on every row.
    rows[1]["judge_prompt_sha256"] = frozen.upper()
    outcome = machine_scores_import(version=version, user=pi, data=jsonl(rows), filename="j.jsonl")
    assert outcome.counts["scores"] == 3


def test_a_judge_given_a_prompt_and_another_prompts_hash_is_refused_naming_both(pi):
    from apps.raters.models import prompt_sha256_of
    from apps.raters.services.scorers import scorer_register

    other = hashlib.sha256(b"Another prompt.").hexdigest()
    identity = {**JUDGE, "prompt": PROMPT, "prompt_sha256": other}
    with pytest.raises(ValidationError) as refused:
        scorer_register(user=pi, label="judge", **identity)
    [message] = refused.value.message_dict["prompt_sha256"]
    assert repr(other) in message and repr(prompt_sha256_of(PROMPT)) in message
    scorer, created = scorer_register(
        user=pi, label="judge", **{**identity, "prompt_sha256": prompt_sha256_of(PROMPT)}
    )
    assert created and scorer.frozen_prompt_sha256 == hashlib.sha256(PROMPT.encode()).hexdigest()

"""A session record's typed columns and its route through the frozen mapping (seed 002)."""

import pytest

from apps.responses.sessions import RecordError, route_of, session_record

RECORD = {
    "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Sort these four tuples."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "function": "read_input", "arguments": {}}],
        },
        {"role": "tool", "content": "[[3, 1], [2, 2]]"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": "submit_batch"}]},
    ],
    "model_usage": {
        "provider/model-a": {"input_tokens": 700, "output_tokens": 120, "total_tokens": 820},
        "provider/judge": {"input_tokens": 10, "output_tokens": 5},
    },
    "metadata": {
        "cost_usd": 0.0123,
        "interruptions": 2,
        "self_report": "I was fast.",
        "claimed_complete": True,
        "unsupported_blockers": 1,
    },
}


def test_typed_columns_are_read_from_the_verbatim_record():
    record = session_record(RECORD)
    assert record.columns() == {
        "tokens": 835,
        "operations": 2,
        "cost": 0.0123,
        "tool_calls": ["read_input", "submit_batch"],
        "interruptions": 2,
        "aborted": False,
        "claimed_complete": True,
        "unsupported_blockers": 1,
        "infrastructure_failure": None,
    }
    # the self report is kept apart, never a column
    assert record.self_report == "I was fast."
    assert "self_report" not in record.columns()


def test_aborts_and_infrastructure_strata_are_read_from_the_record_or_the_outcome():
    assert session_record({"error": {"message": "boom"}}).aborted
    assert session_record({}, "platform_loss").infrastructure_failure == "transport"
    assert session_record({}, "budget_exhausted").infrastructure_failure == "budget"
    assert (
        session_record({"metadata": {"infrastructure_failure": "provider"}}).infrastructure_failure
        == "provider"
    )
    assert session_record({}, "completed").infrastructure_failure is None


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ([], "record"),
        ({"messages": "hi"}, "messages"),
        ({"messages": [{"role": "assistant", "tool_calls": [{}]}]}, "messages[0].tool_calls"),
        ({"metadata": {"interruptions": -1}}, "metadata.interruptions"),
        ({"metadata": {"infrastructure_failure": "weather"}}, "infrastructure_failure"),
        ({"messages": [{"role": "assistant", "tool_calls": 5}]}, "messages[0].tool_calls"),
        ({"model_usage": {"m": 5}}, "model_usage[m]"),
        ({"model_usage": {"m": {"input_tokens": "10"}}}, "model_usage[m].input_tokens"),
        ({"model_usage": {"m": {"total_tokens": -3}}}, "model_usage[m].total_tokens"),
    ],
)
def test_a_malformed_record_is_refused_naming_the_field(record, field):
    with pytest.raises(RecordError) as error:
        session_record(record)
    assert error.value.field == field


def test_the_route_is_the_first_mapped_tool_and_an_unmapped_name_is_refused():
    mapping = {"read_input": "", "submit_batch": "alternate", "submit_standard": "primary"}
    assert route_of(["read_input", "submit_batch", "submit_standard"], mapping) == "alternate"
    assert route_of([], mapping) is None
    with pytest.raises(RecordError, match="'submit_v9' has no route"):
        route_of(["read_input", "submit_v9"], mapping)

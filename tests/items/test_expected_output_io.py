"""Expected outputs for the oracle (issue 34 §8) through the cell API, hashed as the cell page
hashes them (``expected_output_sha256``: UTF-8 bytes for text, canonical JSON for JSON)."""

import hashlib
import json

import pytest

from apps.items import services
from apps.items.models import Cell
from tests.items.conftest import api

pytestmark = pytest.mark.django_db
JSON = "application/json"


@pytest.fixture
def item(draft, scale, family_a):
    return services.item_create(version=draft, family=family_a, code="a-01")


def _cell() -> Cell:
    return Cell.objects.get(item__code="a-01", level__code="L5")


def test_the_cell_api_writes_keeps_and_clears_an_expected_output(client, pi, draft, item):
    client.force_login(pi)
    url = f"{api(draft)}/items/a-01/cells/L5"
    text = "Paris — la capitale"
    saved = client.post(
        url,
        {"prompt": "Capital?", "expected_kind": "text", "expected_output": text},
        content_type=JSON,
    )
    assert saved.status_code == 200, saved.content
    answer = saved.json()
    assert answer["expected_kind"] == "text" and answer["expected_output"] == text
    assert answer["expected_sha256"] == hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert _cell().expected_sha256 == answer["expected_sha256"]

    kept = client.post(url, {"prompt": "Capital city?"}, content_type=JSON).json()
    assert kept["expected_output"] == text  # omitted: kept as it was

    value = {"b": [1, 2], "a": "é"}
    as_json = client.post(
        url,
        {"prompt": "Capital?", "expected_kind": "json", "expected_output": value},
        content_type=JSON,
    ).json()
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert as_json["expected_sha256"] == hashlib.sha256(canonical.encode()).hexdigest()

    cleared = client.post(url, {"prompt": "Capital?", "expected_kind": ""}, content_type=JSON)
    assert cleared.json()["expected_sha256"] is None and _cell().expected_kind == ""


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"expected_kind": "text", "expected_output": {"not": "text"}}, "expected_output"),
        ({"expected_kind": "yaml", "expected_output": "x"}, "expected_kind"),
        ({"expected_output": "no kind"}, "expected_kind"),
        ({"expected_kind": "json"}, "expected_output"),
    ],
)
def test_a_bad_expected_output_is_refused_naming_the_field(client, pi, draft, item, body, field):
    client.force_login(pi)
    url = f"{api(draft)}/items/a-01/cells/L5"
    answer = client.post(url, {"prompt": "Capital?", **body}, content_type=JSON)
    assert answer.status_code == 400, answer.content
    assert field in answer.json()
    assert not Cell.objects.exists()

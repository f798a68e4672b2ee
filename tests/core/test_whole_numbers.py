"""Digits that are not ASCII digits, and more digits than Python converts (issue: no 500).

``str.isdigit`` holds for "²" and "①", which ``int`` refuses, and ``int`` refuses a text of more
than 4,300 digits: every place that read a number with ``isdigit`` then ``int`` answered 500 to
them. ``apps.core.inputs.whole_number`` reads them all; these tests ask its callers.
"""

import sys

import pytest
from django.test import RequestFactory

from apps.core.inputs import whole_number
from apps.core.views import svg_plot
from apps.deviations.witness import Answer, _parse_request
from tests.factories import build_draft

pytestmark = pytest.mark.django_db

PAST_INT = "1" + "0" * sys.get_int_max_str_digits()  # one digit more than int() takes
NOT_ASCII = ("²", "①", "٣", "１２")


@pytest.mark.parametrize("text", [*NOT_ASCII, PAST_INT, "", " ", "-", "1.0", "1_000", "+3", "0x1"])
def test_whole_number_refuses_what_is_not_plain_ascii_digits(text):
    assert whole_number(text) is None
    assert whole_number(text, signed=True) is None


def test_whole_number_reads_plain_digits_and_a_sign_only_when_asked():
    assert whole_number(" 42 ") == 42
    assert whole_number("0") == 0
    assert whole_number(PAST_INT[:-1]) == 10 ** (len(PAST_INT) - 2)
    assert whole_number("-7") is None
    assert whole_number("-7", signed=True) == -7


@pytest.mark.parametrize("width", [*NOT_ASCII, PAST_INT, "640"])
def test_a_plot_width_that_is_not_plain_digits_draws_at_the_default_width(width):
    asked = []
    response = svg_plot(
        RequestFactory().get("/plot.svg", {"w": width}),
        lambda w: asked.append(w) or b"<svg/>",
    )
    assert response.status_code == 200
    assert asked == [640 if width == "640" else None]


@pytest.mark.parametrize("slots", [*NOT_ASCII, PAST_INT])
def test_a_decision_table_post_with_a_slot_count_not_in_digits_is_not_a_500(
    client, protocol, pi, slots
):
    draft = build_draft(protocol=protocol, user=pi)
    client.force_login(pi)
    url = f"/protocols/{protocol.code}/v/{draft.label}/decision-table/"
    response = client.post(url, {"slots": slots})
    assert response.status_code < 500


@pytest.mark.parametrize("size", ["²", PAST_INT])
def test_a_witness_request_whose_old_size_is_not_digits_is_a_400(size):
    answer = _parse_request(f"old {size}\n\nchk\n".encode())
    assert isinstance(answer, Answer) and answer.status == 400
    assert b"old <size>" in answer.body


@pytest.mark.parametrize("pk", [PAST_INT, *NOT_ASCII])
@pytest.mark.parametrize("prefix", ["/api/v1/protocols/", "/protocols/"])
def test_a_protocol_address_of_digits_past_what_int_reads_is_a_404(pk, prefix):
    # A protocol is addressed by its id (digits) or its code: a path of more digits than int()
    # converts answered 500 (``apps.protocols.access``).
    from django.test import Client

    from tests.factories import UserFactory

    client = Client(raise_request_exception=False)
    client.force_login(UserFactory())
    assert client.get(f"{prefix}{pk}" + ("/" if prefix == "/protocols/" else "")).status_code == 404

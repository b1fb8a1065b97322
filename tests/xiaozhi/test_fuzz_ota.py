"""Fuzzing the stock devices' door: any headers and body at `/xiaozhi/ota/` and its `activate`,
any text typed as a code. Every answer is JSON with a status the protocol knows (an error as
`{"error": ...}`), nothing is stored that a database refuses, and the hub keeps serving."""

from __future__ import annotations

import json

from django.db import transaction
from hypothesis import example, given
from hypothesis import strategies as st

from audit.models import Event
from devices.xiaozhi.models import Activation
from devices.xiaozhi.services import PairingError, pair
from tests.fuzz_support import FUZZ, HOSTILE_TEXTS, json_values, nasty_text, wire_bytes
from tests.xiaozhi_ota_support import MAC, check_in, system_info

ANSWERS = {200, 202, 400, 404, 409, 410, 413}
header_values = st.one_of(
    st.just(MAC), nasty_text, st.text(alphabet=st.characters(codec="latin-1"), max_size=70)
)
bodies = st.one_of(
    st.sampled_from(HOSTILE_TEXTS).map(wire_bytes),
    nasty_text.map(wire_bytes),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.builds(
        lambda extra: json.dumps({**system_info(), **extra}).encode(),
        st.dictionaries(nasty_text, json_values, max_size=3),
    ),
    st.builds(
        lambda v: json.dumps(
            {"algorithm": "hmac-sha256", "serial_number": v, "challenge": v, "hmac": v}
        ).encode(),
        nasty_text,
    ),
)


class Rollback(Exception):
    """Ends an example's transaction: each example starts from the same database."""


def each_alone(example) -> None:
    try:
        with transaction.atomic():
            example()
            raise Rollback
    except Rollback:
        pass


@FUZZ
@given(
    path=st.sampled_from(["/xiaozhi/ota/", "/xiaozhi/ota/activate"]),
    device_id=header_values,
    client_id=header_values,
    serial=header_values,
    body=bodies,
)
@example(
    path="/xiaozhi/ota/", device_id=MAC, client_id="c", serial="", body=b'{"application": {"version": NaN}}'
)
@example(
    path="/xiaozhi/ota/",
    device_id=MAC,
    client_id="c",
    serial="",
    body=b'{"board": {"name": "\\u0000\\ud800"}}',
)
def test_any_request_gets_a_json_answer_of_the_protocol(db, client, path, device_id, client_id, serial, body):
    def one() -> None:
        headers = {"HTTP_DEVICE_ID": device_id, "HTTP_CLIENT_ID": client_id, "HTTP_SERIAL_NUMBER": serial}
        answer = client.post(path, body, content_type="application/json", **headers)
        assert answer.status_code in ANSWERS, answer.content
        parsed = answer.json()
        if answer.status_code >= 400:
            assert isinstance(parsed["error"], str) and parsed["error"]
        list(Activation.objects.values())  # whatever was stored reads back
        list(Event.objects.values())
        assert check_in(client).status_code == 200  # and the door still serves

    each_alone(one)


@FUZZ
@given(typed=st.one_of(nasty_text, st.from_regex(r"\s*\d{6}\s*", fullmatch=True)))
def test_any_code_typed_is_refused_with_a_reason_or_binds(db, typed):
    def one() -> None:
        try:
            pair(typed, actor="owner", interface="dashboard")
        except PairingError as refusal:
            assert str(refusal)

    each_alone(one)

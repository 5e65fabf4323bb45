"""Property-based tests against a real server.

Whatever body a caller sends, the signaling interface answers with a well-formed envelope whose
HTTP status equals its ``status_code``, never a 500, and its verdict agrees with
:func:`alarmhub.core.signal.validate` run here on the same body. Afterwards every stored signal
is itself valid, and exactly the signals answered 200 were stored.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from alarmhub.contactid import EVENTS
from alarmhub.core import errors
from alarmhub.core.errors import SignalRefusal
from alarmhub.core.signal import SignalFields, validate
from tests.support.database import db_rows
from tests.support.processes import Station

PATH = "/rx/site1:rx1/contact_id"
FIELDS = ("dnis", "panel", "code", "area", "zone_or_user")
REFUSALS = {(r.error_code, r.message): r for r in errors.ALL}
BODY_LIMIT = 16384  # the default max_body_bytes; generated bodies stay well below it
PROPERTY_SETTINGS = settings(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# Every 200 answer received by this module; the stored rows are checked against it at the end.
ACCEPTED = {"count": 0}


# --- strategies -------------------------------------------------------------------------------

# Text that survives a UTF-8 round trip (a lone surrogate cannot be sent as JSON text).
unicode_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | unicode_text
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(unicode_text, children, max_size=4)
    ),
    max_leaves=12,
)

alnum = st.text(alphabet=string.ascii_letters + string.digits, max_size=12)
digit_strings = st.text(alphabet=string.digits, max_size=5)
event_digits = st.sampled_from(sorted(EVENTS))
codes = st.builds(
    lambda qualifier, number: qualifier + number,
    st.sampled_from("EeRrPpX1 "),
    event_digits | st.text(alphabet=string.digits, min_size=2, max_size=4),
)
tricky = st.sampled_from(
    ["", " ", "0", "00", "000", "0000", "00000", " 1", "1 ", "+1", "-1", "1.0", "١٢", "１２", "é"]
)
plausible = alnum | digit_strings | codes | tricky
field_value = plausible | json_values


def _not_all_zeros(value: str) -> str:
    return value if value.strip("0") else "1" + value[1:]


# Values each field accepts, so that a large share of the near-valid bodies is stored.
valid_values: dict[str, st.SearchStrategy[Any]] = {
    "dnis": st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=5).map(
        _not_all_zeros
    ),
    "panel": (
        st.text(alphabet=string.digits, min_size=1, max_size=4)
        | st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=10)
    ).map(_not_all_zeros),
    "code": st.builds(lambda q, n: q + n, st.sampled_from("EeRr"), event_digits),
    "area": st.none() | st.text(alphabet=string.digits, max_size=2),
    "zone_or_user": st.none() | st.text(alphabet=string.digits, max_size=3),
}


@st.composite
def field_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """Any subset of the five fields with arbitrary or plausible values, plus extra keys."""
    extra = draw(st.dictionaries(unicode_text, json_values, max_size=3))
    fields = draw(st.fixed_dictionaries({}, optional=dict.fromkeys(FIELDS, field_value)))
    return {**extra, **fields}


@st.composite
def near_valid_bodies(draw: st.DrawFn) -> dict[str, Any]:
    """A valid body, sometimes with absent optional fields, and at most one field spoiled."""
    body = {name: draw(valid_values[name]) for name in FIELDS}
    for name in ("area", "zone_or_user"):
        if draw(st.booleans()):
            del body[name]
    spoiled = draw(st.none() | st.sampled_from(FIELDS))
    if spoiled is not None:
        if draw(st.booleans()):
            body.pop(spoiled, None)
        else:
            body[spoiled] = draw(field_value)
    if draw(st.booleans()):
        body.update(
            draw(st.dictionaries(unicode_text.filter(lambda k: k not in FIELDS), plausible))
        )
    return body


def _jsonish_text() -> st.SearchStrategy[str]:
    """Text that looks like JSON often enough to reach the parser's corners."""
    pieces = st.sampled_from(
        ['{', '}', '[', ']', '"', ':', ',', ' ', '\n', '\\', '\\u0000', 'null', 'true', '1e999',
         'NaN', '"dnis"', '"panel"', '"code"', '"area"', '"zone_or_user"', '"1234"', '"E130"',
         '"0042"', '"15"', '\ufeff', '\x00', 'é'])  # fmt: skip
    return st.lists(pieces, max_size=30).map("".join)


content_types = st.sampled_from(
    [None, "application/json", "text/plain", "application/x-www-form-urlencoded", "", "*/*"]
)


# --- helpers ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(station: Station) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=station.url,
        headers={"Authorization": f"Bearer {station.token}"},
        timeout=30,
    ) as shared:
        yield shared


def post(client: httpx.Client, content: bytes, content_type: str | None) -> SignalRefusal | None:
    """Send a body; check the envelope; None for a 200, else the refusal it carries."""
    headers = {} if content_type is None else {"Content-Type": content_type}
    answer = client.post(PATH, content=content, headers=headers)
    assert answer.status_code in (200, 422), (answer.status_code, answer.text, content)
    assert answer.headers["content-type"].startswith("application/json")
    envelope = answer.json()
    assert isinstance(envelope, dict), envelope
    assert envelope["status_code"] == answer.status_code
    if answer.status_code == 200:
        ACCEPTED["count"] += 1
        event("200")
        assert envelope == {"status_code": 200, "status": "success"}
        return None
    assert envelope["status"] == "error"
    assert set(envelope) == {"status_code", "status", "error_code", "message"}
    refusal = REFUSALS.get((envelope["error_code"], envelope["message"]))
    assert refusal is not None, envelope
    event(refusal.error_code)
    assert refusal.status_code == answer.status_code
    return refusal


def expected(value: object) -> SignalRefusal | None:
    """What the contract says a decoded body gets: None (stored) or the refusal."""
    if not isinstance(value, dict):
        return errors.BODY_INVALID
    verdict = validate(value)
    return verdict if isinstance(verdict, SignalRefusal) else None


def encode(value: object, ascii_only: bool) -> bytes:
    content = json.dumps(value, ensure_ascii=ascii_only).encode()
    assume(len(content) <= BODY_LIMIT)
    return content


# --- (a) JSON values --------------------------------------------------------------------------


@settings(PROPERTY_SETTINGS, max_examples=300)
@given(value=json_values, ascii_only=st.booleans(), content_type=content_types)
def test_any_json_value_agrees_with_validate(
    client: httpx.Client, value: object, ascii_only: bool, content_type: str | None
) -> None:
    outcome = post(client, encode(value, ascii_only), content_type)
    assert outcome == expected(value)


@settings(PROPERTY_SETTINGS, max_examples=300)
@given(body=field_dicts(), ascii_only=st.booleans())
def test_field_dicts_agree_with_validate(
    client: httpx.Client, body: dict[str, Any], ascii_only: bool
) -> None:
    outcome = post(client, encode(body, ascii_only), "application/json")
    assert outcome == expected(body)


@settings(PROPERTY_SETTINGS, max_examples=300)
@given(body=near_valid_bodies(), ascii_only=st.booleans(), content_type=content_types)
def test_near_valid_bodies_agree_with_validate(
    client: httpx.Client, body: dict[str, Any], ascii_only: bool, content_type: str | None
) -> None:
    outcome = post(client, encode(body, ascii_only), content_type)
    assert outcome == expected(body)


# --- (b) raw bytes and text -------------------------------------------------------------------


def check_raw(client: httpx.Client, content: bytes, content_type: str | None) -> None:
    outcome = post(client, content, content_type)
    # The server's own parser decides what the bytes mean; given that, validate decides.
    try:
        decoded: object = orjson.loads(content)
    except orjson.JSONDecodeError:
        assert outcome == errors.BODY_INVALID
        return
    assert outcome == expected(decoded)
    # An independent parser: what Python cannot read as a JSON object is never accepted.
    try:
        python_value: object = json.loads(content)
    except (ValueError, RecursionError):
        python_value = None
    if not isinstance(python_value, dict):
        assert outcome == errors.BODY_INVALID


@settings(PROPERTY_SETTINGS, max_examples=200)
@given(content=st.binary(max_size=2048), content_type=content_types)
def test_any_bytes_get_an_envelope(
    client: httpx.Client, content: bytes, content_type: str | None
) -> None:
    check_raw(client, content, content_type)


@settings(PROPERTY_SETTINGS, max_examples=200)
@given(
    text=st.text(alphabet=st.characters(codec="utf-8"), max_size=512) | _jsonish_text(),
    content_type=content_types,
)
def test_any_text_gets_an_envelope(
    client: httpx.Client, text: str, content_type: str | None
) -> None:
    check_raw(client, text.encode(), content_type)


# --- (c) what was stored ----------------------------------------------------------------------


def test_every_stored_row_is_valid_and_only_accepted_ones_are_stored(station: Station) -> None:
    rows = db_rows(
        station.data_dir,
        "SELECT incident_number, source, destination, dnis, panel, code, area, zone,"
        " token_name FROM signal",
    )
    for number, source, destination, dnis, panel, code, area, zone, token_name in rows:
        stored = SignalFields(dnis=dnis, panel=panel, code=code, area=area, zone=zone)
        body = {"dnis": dnis, "panel": panel, "code": code, "area": area, "zone_or_user": zone}
        assert validate(body) == stored, (number, stored)
        assert len(area) == 2 and len(zone) == 3 and code == code.upper()
        assert (source, destination, token_name) == ("site1", "rx1", "main")
    numbers = [row[0] for row in rows]
    assert len(set(numbers)) == len(numbers)
    assert len(rows) == ACCEPTED["count"]

"""The contract's wire texts, written out as literals: the signaling errors of spec 7.1 and of the
decisions (code, message, HTTP status), and the query interface's error bodies (spec 7.2,
decisions section 3). Integrators match these strings; a typo in the code tables fails here."""

from __future__ import annotations

from urllib.parse import unquote

from alarmhub.core import errors
from alarmhub.xm import errors as xm_errors

SIGNALING = [
    ("DNIS-1", "dnis is required", 422),
    ("DNIS-2", "dnis must be up to 5 alphanumeric characters", 422),
    ("PANEL-1", "panel is required", 422),
    ("PANEL-2", "panel must be up to 4 digits or 10 alphanumeric characters", 422),
    ("CODE-1", "code is required", 422),
    ("CODE-2", "code must be a valid contact id code", 422),
    ("AREA-1", "area must be a valid contact id area", 422),
    ("ZONE-1", "zone_or_user must be a valid contact id zone or user", 422),
    ("BUFFER-1", "Failed to queue signal for delivery", 422),
    ("BODY-1", "body must be a JSON object", 422),
    ("AUTH-1", "invalid or missing bearer token", 401),
    ("HB-1", "no access to this receiver", 401),
    ("STORE-1", "signal not stored, retry", 503),
    ("IDEMPOTENCY-1", "Idempotency-Key must be 1-255 printable ASCII characters", 422),
    ("IDEMPOTENCY-2", "Idempotency-Key was used for a different signal", 422),
]


def test_every_signaling_error_reads_as_the_contract_writes_it() -> None:
    shown = [(each.error_code, each.message, each.status_code) for each in errors.ALL]
    assert sorted(shown) == sorted(SIGNALING)


def test_the_signaling_envelope_carries_code_and_message() -> None:
    refusal = errors.CODE_INVALID
    assert errors.envelope(refusal.status_code, refusal.error_code, refusal.message) == {
        "status_code": 422,
        "status": "error",
        "error_code": "CODE-2",
        "message": "code must be a valid contact id code",
    }


def test_the_invalid_method_body_of_the_query_interface() -> None:
    body = xm_errors.invalid_method("XMNOSUCHMETHOD")
    assert body["ERROR_CODE"] == "999"
    assert unquote(body["ERROR_DESCRIPTION"]) == "INVALID METHOD METHOD"
    assert body["PROGRAM_ERROR"] == "11"
    assert unquote(body["PROGRAM_ERROR_DESCRIPTION"]) == "Missing or Duplicate key"
    assert body["ERROR_ON_LINE"] == "240"
    assert unquote(body["ADDITIONAL_INFO"]) == "<METHOD_NAME>XMNOSUCH</METHOD_NAME>"
    assert unquote(xm_errors.invalid_method("XM")["ADDITIONAL_INFO"]) == (
        "<METHOD_NAME>XM      </METHOD_NAME>"
    )


def test_the_other_query_error_bodies() -> None:
    assert xm_errors.MALFORMED == {
        "status": "error",
        "message": "XML is malformed",
        "errno": 2,
        "errstr": "Start tag expected, '<' not found",
    }
    assert xm_errors.AUTHENTICATION_FAILED == {
        "status": "error",
        "message": "authentication failed",
        "errno": 401,
    }
    assert xm_errors.TOO_LARGE == {"status": "error", "message": "request too large", "errno": 413}
    assert xm_errors.field_invalid("START_DATE") == {
        "status": "error",
        "message": "START_DATE is invalid",
        "errno": 3,
    }

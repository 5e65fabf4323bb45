"""The signaling interface's refusals: error codes, messages and HTTP status, in one place."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a signal or heartbeat was not accepted, as the caller is told."""

    error_code: str
    message: str
    status_code: int = 422


DNIS_REQUIRED = Refusal("DNIS-1", "dnis is required")
DNIS_INVALID = Refusal("DNIS-2", "dnis must be up to 5 alphanumeric characters")
PANEL_REQUIRED = Refusal("PANEL-1", "panel is required")
PANEL_INVALID = Refusal("PANEL-2", "panel must be up to 4 digits or 10 alphanumeric characters")
CODE_REQUIRED = Refusal("CODE-1", "code is required")
CODE_INVALID = Refusal("CODE-2", "code must be a valid contact id code")
AREA_INVALID = Refusal("AREA-1", "area must be a valid contact id area")
ZONE_INVALID = Refusal("ZONE-1", "zone_or_user must be a valid contact id zone or user")
BUFFER_REFUSED = Refusal("BUFFER-1", "Failed to queue signal for delivery")
BODY_INVALID = Refusal("BODY-1", "body must be a JSON object")
AUTH_FAILED = Refusal("AUTH-1", "invalid or missing bearer token", 401)
HEARTBEAT_REFUSED = Refusal("HB-1", "no access to this receiver", 401)
STORE_FAILED = Refusal("STORE-1", "signal not stored, retry", 503)
IDEMPOTENCY_KEY_MAX = 255
IDEMPOTENCY_INVALID = Refusal(
    "IDEMPOTENCY-1", f"Idempotency-Key must be 1-{IDEMPOTENCY_KEY_MAX} printable ASCII characters"
)
IDEMPOTENCY_CONFLICT = Refusal("IDEMPOTENCY-2", "Idempotency-Key was used for a different signal")

ALL: tuple[Refusal, ...] = (
    DNIS_REQUIRED,
    DNIS_INVALID,
    PANEL_REQUIRED,
    PANEL_INVALID,
    CODE_REQUIRED,
    CODE_INVALID,
    AREA_INVALID,
    ZONE_INVALID,
    BUFFER_REFUSED,
    BODY_INVALID,
    AUTH_FAILED,
    HEARTBEAT_REFUSED,
    STORE_FAILED,
    IDEMPOTENCY_INVALID,
    IDEMPOTENCY_CONFLICT,
)

"""Every error alarmhub raises or answers on purpose, in one tree, and the signaling
interface's refusals (spec 2.2): their codes, messages and HTTP status.

The exceptions::

    AlarmhubError              the base of every exception below
    ├── StoreUnavailable       the database or the writer cannot take the work now:
    │                          signaling 503 STORE-1, console 503 CONSOLE-STORE, DC-09 no
    │                          answer (the panel sends again)
    ├── ActionRefused          an action the alarm life cycle or the operator rules refuse:
    │                          its OPS-* code and HTTP status (console), a one-line error (CLI)
    ├── BadInput               console input the API cannot read: 422 CONSOLE-INPUT
    ├── SignInBusy             no room to wait for a password check: 429 (console)
    ├── QueryRefused           a request the query interface refuses, with its body and status
    ├── ProvisioningError      a provisioning request that cannot be carried out (CLI, files)
    ├── SettingsError          a setting alarmhub cannot use (start-up, CLI)
    └── SecretKeyError         the station's key is missing, malformed or not the data's

``ProvisioningError`` and ``SettingsError`` are also ``ValueError``s, ``SecretKeyError`` a
``RuntimeError``. Errors of configuration never reach a wire; the command line reports them.

Not raised but returned, so that a refused signal costs no exception::

    SignalRefusal              why a signal or heartbeat was refused: the table below

Each interface renders its errors in one place: the signaling interface, and the HTTP errors
of every listener (404, 405, ...), the JSON :func:`envelope` (``rx.routes.error_response``);
the console the same envelope with its security headers (``console.routes.error``); the query
interface the bodies of :mod:`alarmhub.xm.errors`; DC-09 a NAK or DUH
(:mod:`alarmhub.dc09.answer`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class AlarmhubError(Exception):
    """The base of the exceptions alarmhub raises on purpose."""


class StoreUnavailable(AlarmhubError):
    """The database could not be reached or written."""


class ActionRefused(AlarmhubError):
    """An action the rules refuse; ``code`` is stable for programs, ``message`` is for people.
    A refusal that is ``recorded`` keeps what its transaction wrote; any other refusal changes
    nothing. (Sign-in failures are counted by ``core.sign_in``'s throttle, not written.)"""

    def __init__(self, code: str, message: str, status: int = 409, recorded: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.recorded = recorded


class BadInput(AlarmhubError):
    """Input the console API cannot use (answered 422 CONSOLE-INPUT)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class SignInBusy(AlarmhubError):
    """No room to wait for a password check: ``per_address`` is True when it is the client
    address's own share that is full, False when the whole node's queue is."""

    def __init__(self, per_address: bool) -> None:
        super().__init__("busy")
        self.per_address = per_address


class QueryRefused(AlarmhubError):
    """A request the query interface refuses, with the body and status to answer."""

    def __init__(self, body: dict[str, Any], status: int = 400) -> None:
        super().__init__(body.get("message") or body.get("ERROR_CODE"))
        self.body = body
        self.status = status


class ProvisioningError(AlarmhubError, ValueError):
    """A provisioning request that cannot be carried out; the text is for the user."""


class SettingsError(AlarmhubError, ValueError):
    """A setting has a value alarmhub cannot use."""


class SecretKeyError(AlarmhubError, RuntimeError):
    """The key is missing, malformed, or not the one the data was encrypted with."""


SCHEDULE_REFUSED = "OPS-SCHEDULE"
"""The console's refusals of open/close schedules and holidays: input the rules refuse (422), a
schedule, temporary schedule or holiday that is not there (404), a manual open or close of an
account with no schedule (409)."""


def schedule_refused(message: str, status: int = 422) -> ActionRefused:
    return ActionRefused(SCHEDULE_REFUSED, message, status)


def envelope(status_code: int, error_code: str, message: str) -> dict[str, Any]:
    """The error envelope of spec 2.2, its keys in this order."""
    return {
        "status_code": status_code,
        "status": "error",
        "error_code": error_code,
        "message": message,
    }


@dataclass(frozen=True, slots=True)
class SignalRefusal:
    """Why a signal or heartbeat was not accepted, as the caller is told."""

    error_code: str
    message: str
    status_code: int = 422


DNIS_REQUIRED = SignalRefusal("DNIS-1", "dnis is required")
DNIS_INVALID = SignalRefusal("DNIS-2", "dnis must be up to 5 alphanumeric characters")
PANEL_REQUIRED = SignalRefusal("PANEL-1", "panel is required")
PANEL_INVALID = SignalRefusal(
    "PANEL-2", "panel must be up to 4 digits or 10 alphanumeric characters"
)
CODE_REQUIRED = SignalRefusal("CODE-1", "code is required")
CODE_INVALID = SignalRefusal("CODE-2", "code must be a valid contact id code")
AREA_INVALID = SignalRefusal("AREA-1", "area must be a valid contact id area")
ZONE_INVALID = SignalRefusal("ZONE-1", "zone_or_user must be a valid contact id zone or user")
BUFFER_REFUSED = SignalRefusal("BUFFER-1", "Failed to queue signal for delivery")
BODY_INVALID = SignalRefusal("BODY-1", "body must be a JSON object")
AUTH_FAILED = SignalRefusal("AUTH-1", "invalid or missing bearer token", 401)
HEARTBEAT_REFUSED = SignalRefusal("HB-1", "no access to this receiver", 401)
STORE_FAILED = SignalRefusal("STORE-1", "signal not stored, retry", 503)
IDEMPOTENCY_KEY_MAX = 255
IDEMPOTENCY_INVALID = SignalRefusal(
    "IDEMPOTENCY-1", f"Idempotency-Key must be 1-{IDEMPOTENCY_KEY_MAX} printable ASCII characters"
)
IDEMPOTENCY_CONFLICT = SignalRefusal(
    "IDEMPOTENCY-2", "Idempotency-Key was used for a different signal"
)

ALL: tuple[SignalRefusal, ...] = (
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

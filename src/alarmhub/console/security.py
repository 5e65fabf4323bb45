"""The console's session cookie, CSRF tokens, security headers and the sign-in throttle.

The session token (from ``store.operations.sign_in``) travels only in an HttpOnly, SameSite=Strict
cookie. Every state-changing request also carries ``X-CSRF-Token``: an HMAC of the session token,
rendered into the page, which another site can neither read nor compute. The sign-in form, made
before any session exists, is protected by a double-submit cookie.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from base64 import urlsafe_b64encode
from collections import deque
from typing import TypeVar

from starlette.requests import Request
from starlette.responses import Response

from alarmhub.store.operations import SESSION_HOURS

SESSION_COOKIE = "alarmhub_session"
LOGIN_COOKIE = "alarmhub_login"
CSRF_HEADER = "x-csrf-token"
CONSOLE_PATH = "/console"
LOGIN_PATH = "/console/login"
SESSION_SECONDS = SESSION_HOURS * 3600
LOGIN_FORM_SECONDS = 3600
MAX_TOKEN_CHARS = 128
_CSRF_PURPOSE = b"alarmhub console csrf v1"

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
NO_STORE = {"Cache-Control": "no-store"}
R = TypeVar("R", bound=Response)


def csrf_token(session_token: str) -> str:
    """The CSRF token of a session: HMAC-SHA256 keyed by the (secret, 256-bit) session token."""
    digest = hmac.new(session_token.encode(), _CSRF_PURPOSE, hashlib.sha256).digest()
    return urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def csrf_ok(request: Request, session_token: str) -> bool:
    given = request.headers.get(CSRF_HEADER, "")
    return hmac.compare_digest(given.encode(), csrf_token(session_token).encode())


def session_cookie(request: Request) -> str | None:
    token = request.cookies.get(SESSION_COOKIE)
    if not token or len(token) > MAX_TOKEN_CHARS:
        return None
    return token


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def set_session(response: Response, request: Request, token: str) -> None:
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=SESSION_SECONDS,
        path=CONSOLE_PATH,
        secure=_secure(request),
        httponly=True,
        samesite="strict",
    )


def clear_session(response: Response, request: Request) -> None:
    response.delete_cookie(
        SESSION_COOKIE, path=CONSOLE_PATH, secure=_secure(request), httponly=True, samesite="strict"
    )


def new_login_token() -> str:
    return secrets.token_urlsafe(32)


def set_login_token(response: Response, request: Request, token: str) -> None:
    response.set_cookie(
        LOGIN_COOKIE,
        token,
        max_age=LOGIN_FORM_SECONDS,
        path=LOGIN_PATH,
        secure=_secure(request),
        httponly=True,
        samesite="strict",
    )


def clear_login_token(response: Response, request: Request) -> None:
    response.delete_cookie(
        LOGIN_COOKIE, path=LOGIN_PATH, secure=_secure(request), httponly=True, samesite="strict"
    )


def login_token_ok(request: Request, submitted: str) -> bool:
    """The double-submit check of the sign-in form: the form's hidden field equals the cookie
    set with the form (another site can make the browser post, but cannot read or set it)."""
    cookie = request.cookies.get(LOGIN_COOKIE, "")
    if not cookie or len(cookie) > MAX_TOKEN_CHARS:
        return False
    return hmac.compare_digest(cookie.encode(), submitted.encode())


def secure_headers(response: R, store: bool = False) -> R:
    """The console's security headers; ``no-store`` unless ``store`` (static files)."""
    response.headers.update(HEADERS)
    if not store:
        response.headers.update(NO_STORE)
    return response


class SignInThrottle:
    """How fast sign-ins may come, per client address and per node.

    Each sign-in checks an Argon2 hash (about 0.1 s of CPU) inside a write transaction, so
    unbounded attempts would hold the database's write lock that signals need. Per address at
    most ``failures`` failed attempts in ``window`` seconds; per node one attempt every
    ``spacing`` seconds, later ones waiting their turn for at most ``max_wait`` seconds."""

    def __init__(
        self,
        failures: int = 10,
        window: float = 60.0,
        spacing: float = 0.5,
        max_wait: float = 10.0,
    ) -> None:
        self.failures = failures
        self.window = window
        self.spacing = spacing
        self.max_wait = max_wait
        self._failed: dict[str, deque[float]] = {}
        self._next_start = 0.0

    def allowed(self, address: str) -> bool:
        """False while ``address`` has used up its failed attempts."""
        failed = self._failed.get(address)
        if not failed:
            return True
        stale = time.monotonic() - self.window
        while failed and failed[0] <= stale:
            failed.popleft()
        return len(failed) < self.failures

    def failed(self, address: str) -> None:
        now = time.monotonic()
        if len(self._failed) > 10_000:
            stale = now - self.window
            for known in [a for a, d in self._failed.items() if not d or d[-1] <= stale]:
                del self._failed[known]
        self._failed.setdefault(address, deque()).append(now)

    def turn(self) -> float | None:
        """How long this attempt waits for its turn (reserved on return), or None when the
        queue is longer than ``max_wait``."""
        now = time.monotonic()
        start = max(now, self._next_start)
        if start - now > self.max_wait:
            return None
        self._next_start = start + self.spacing
        return start - now

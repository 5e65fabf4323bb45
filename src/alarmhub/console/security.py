"""The console's session cookie, CSRF tokens, security headers, the fair queue of password
checks and the cache of unknown session cookies.

The session token (from ``store.sessions.sign_in``) travels only in an HttpOnly, SameSite=Strict
cookie. Every state-changing request also carries ``X-CSRF-Token``: an HMAC of the session token,
rendered into the page, which another site can neither read nor compute. The sign-in form, made
before any session exists, is protected by a double-submit cookie.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import secrets
import time
from base64 import urlsafe_b64encode
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TypeVar

from starlette.requests import Request
from starlette.responses import Response

from alarmhub.core.errors import SignInBusy
from alarmhub.core.sign_in import SESSION_SECONDS
from alarmhub.core.tokens import token_hash

SESSION_COOKIE = "alarmhub_session"
LOGIN_COOKIE = "alarmhub_login"
CSRF_HEADER = "x-csrf-token"
CONSOLE_PATH = "/console"
LOGIN_PATH = "/console/login"
LOGIN_FORM_SECONDS = 3600
MAX_TOKEN_CHARS = 128
_CSRF_PURPOSE = b"alarmhub console csrf v1"
_SESSION_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)

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
    """The session cookie, when it has the form of a session token (43 URL-safe base64
    characters): anything else is no session, without asking the database."""
    token = request.cookies.get(SESSION_COOKIE)
    if not token or not _SESSION_TOKEN.fullmatch(token):
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


class FairChecks:
    """Password checks (Argon2: about 0.1 s of CPU and 64 MiB each) shared fairly between
    client addresses: at most ``slots`` at once on the node and one at a time per address, the
    next one taken from the waiting addresses in turn. One address holds at most
    ``per_address`` places (waiting or running) and the node at most ``total``; beyond that an
    attempt is refused at once (:class:`SignInBusy`), so a burst from one address never makes
    another address wait behind it."""

    def __init__(self, slots: int = 2, per_address: int = 8, total: int = 256) -> None:
        self.slots = slots
        self.per_address = per_address
        self.total = total
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()
        self._held: dict[str, int] = {}  # places per address: waiting and running
        self._running: set[str] = set()
        self._places = 0

    @asynccontextmanager
    async def turn(self, address: str) -> AsyncIterator[None]:
        """Wait for this address's turn and hold a slot meanwhile; :class:`SignInBusy` when full."""
        if self._held.get(address, 0) >= self.per_address:
            raise SignInBusy(per_address=True)
        if self._places >= self.total:
            raise SignInBusy(per_address=False)
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(address, deque()).append(ready)
        self._held[address] = self._held.get(address, 0) + 1
        self._places += 1
        try:
            self._dispatch()
            try:
                await ready
            except asyncio.CancelledError:
                if ready.done() and not ready.cancelled():  # its turn came as it was cancelled
                    self._release(address)
                else:
                    self._forget(address, ready)
                raise
            try:
                yield
            finally:
                self._release(address)
        finally:
            self._places -= 1
            left = self._held[address] - 1
            if left:
                self._held[address] = left
            else:
                del self._held[address]

    def _dispatch(self) -> None:
        while len(self._running) < self.slots:
            address = next((a for a in self._waiting if a not in self._running), None)
            if address is None:
                return
            queue = self._waiting[address]
            ready = queue.popleft()
            if queue:
                self._waiting.move_to_end(address)  # its next one waits for the others' turn
            else:
                del self._waiting[address]
            self._running.add(address)
            ready.set_result(None)

    def _release(self, address: str) -> None:
        self._running.discard(address)
        self._dispatch()

    def _forget(self, address: str, ready: asyncio.Future[None]) -> None:
        queue = self._waiting.get(address)
        if queue is not None and ready in queue:
            queue.remove(ready)
            if not queue:
                del self._waiting[address]


class UnknownSessions:
    """Session cookies lately found to be no session, by their hash, so that a client
    repeating one costs no database read: at most ``size`` of them, each for ``seconds``."""

    def __init__(self, size: int = 10_000, seconds: float = 60.0) -> None:
        self.size = size
        self.seconds = seconds
        self._until: OrderedDict[str, float] = OrderedDict()

    def __contains__(self, token: str) -> bool:
        key = token_hash(token)
        until = self._until.get(key)
        if until is None:
            return False
        if until <= time.monotonic():
            del self._until[key]
            return False
        return True

    def add(self, token: str) -> None:
        key = token_hash(token)
        self._until.pop(key, None)
        self._until[key] = time.monotonic() + self.seconds
        while len(self._until) > self.size:
            self._until.popitem(last=False)

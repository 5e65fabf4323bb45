"""Authentication of the query interface on the server: the five headers, the digest, the date
window and replayed nonces. Every failure gets the same 401 body; the reason goes to the log.

Nonces are claimed in the database (table ``nonce``) before a request is answered, in one
transaction for all requests of a loop turn, so a replay is refused after a restart and on any
node that shares the database.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from cryptography.fernet import Fernet
from sqlalchemy import Connection, delete, insert, select
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.secret_key import SecretKeyError
from alarmhub.store import provisioning
from alarmhub.store import schema as s
from alarmhub.store.following import FollowsProvisioning
from alarmhub.store.provisioning import ApiUser
from alarmhub.store.writer import SignalWriter
from alarmhub.xm import digest

log = logging.getLogger("alarmhub.xm.auth")
NONCE_WINDOW_US = 15 * 60 * 1_000_000
HEADERS = ("x-svc-appkey", "x-svc-username", "x-svc-date", "x-svc-nonce", "x-svc-digest")


@dataclass(frozen=True, slots=True)
class Refused:
    """Why a request was not authenticated: for the log only."""

    reason: str


def claim_nonces(conn: Connection, claims: Sequence[tuple[str, str, int]]) -> list[bool]:
    """Record each (username, nonce, time); False for a nonce the user used in the window."""
    n = s.nonce.c
    results: list[bool] = []
    seen: set[tuple[str, str]] = set()
    for username, nonce, at_us in claims:
        if (username, nonce) in seen:
            results.append(False)
            continue
        seen.add((username, nonce))
        where = (n.username == username) & (n.nonce == nonce)
        earlier = conn.execute(select(n.created_us).where(where)).scalar()
        if earlier is not None and at_us - earlier < NONCE_WINDOW_US:
            results.append(False)
            continue
        if earlier is not None:
            conn.execute(delete(s.nonce).where(where))
        conn.execute(insert(s.nonce).values(username=username, nonce=nonce, created_us=at_us))
        results.append(True)
    return results


class NonceBook:
    """Claims nonces in group commits: one transaction at a time, holding every nonce that
    arrived while the previous one ran."""

    def __init__(self, writer: SignalWriter) -> None:
        self._writer = writer
        self._waiting: list[tuple[str, str, int, asyncio.Future[bool]]] = []
        self._draining = False

    async def claim(self, username: str, nonce: str, at_us: int) -> bool:
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.append((username, nonce, at_us, future))
        if not self._draining:
            self._draining = True
            asyncio.get_running_loop().create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                claims = [(u, n, t) for u, n, t, _ in batch]
                try:
                    results = await self._writer.run(partial(claim_nonces, claims=claims))
                except Exception as exc:
                    for *_, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for (*_, future), result in zip(batch, results, strict=True):
                    if not future.done():
                        future.set_result(result)
        finally:
            self._draining = False


class QueryAuth(FollowsProvisioning):
    """Checks the five headers of a request against the API users (a removed user is refused
    within a second)."""

    name = "api-users"

    def __init__(self, engine: Engine, key: Fernet, nonces: NonceBook) -> None:
        super().__init__(engine)
        self._key = key
        self._nonces = nonces
        self._users: dict[str, ApiUser] = {}

    def refresh(self, conn: Connection) -> None:
        try:
            self._users = provisioning.api_users(conn, self._key)
        except SecretKeyError as exc:
            # the query interface refuses everyone; signaling goes on regardless
            log.error("API users unusable", extra={"error": str(exc)})
            self._users = {}

    async def check(
        self, headers: Mapping[str, str], form: Sequence[tuple[str, str]]
    ) -> ApiUser | Refused:
        """The API user a request comes from, or why it is refused (nonce claimed)."""
        verified = await self.verify(headers, form)
        if isinstance(verified, Refused):
            return verified
        return verified if await self.claim(headers) else Refused("replayed nonce")

    async def claim(self, headers: Mapping[str, str]) -> bool:
        """Record the request's nonce; False when it is a replay. Call after :meth:`verify`."""
        return await self._nonces.claim(headers["x-svc-username"], headers["x-svc-nonce"], now_us())

    async def verify(
        self, headers: Mapping[str, str], form: Sequence[tuple[str, str]]
    ) -> ApiUser | Refused:
        """Everything but the nonce's freshness: the headers, the date window and the digest.
        The answer may be prepared meanwhile, but is sent only once :meth:`claim` succeeds."""
        values = [headers.get(name, "") for name in HEADERS]
        appkey, username, date, nonce, presented = values
        missing = [name for name, value in zip(HEADERS, values, strict=True) if not value]
        if missing:
            return Refused(f"missing {', '.join(missing)}")
        if len(appkey) > digest.APPKEY_MAX:
            return Refused("appkey too long")
        moment = digest.parse_date(date)
        if moment is None:
            return Refused("malformed date")
        now = now_us()
        if abs(now - int(moment.timestamp() * 1_000_000)) > digest.DATE_WINDOW_S * 1_000_000:
            return Refused("date outside the window")
        if not digest.NONCE_PATTERN.fullmatch(nonce):
            return Refused("malformed nonce")
        scheme = digest.scheme_of(presented)
        if scheme is None:
            return Refused("malformed digest")
        user = self._users.get(username)
        if user is None:
            await asyncio.to_thread(self.load)
            user = self._users.get(username)
        if user is None:
            return Refused("unknown user")
        if scheme == digest.SHA1 and user.hmac_only:
            return Refused("sha1 digest from an hmac-only user")
        if scheme == digest.SHA1:
            expected = digest.sha1_digest(appkey, username, date, nonce, user.password)
        else:
            expected = digest.hmac_digest(appkey, username, date, nonce, user.password, form)
        if not digest.matches(expected, presented):
            return Refused("wrong digest")
        return user

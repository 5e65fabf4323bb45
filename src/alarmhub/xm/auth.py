"""Authentication of the query interface on the server: the five headers, the digest, the date
window and replayed nonces. Every failure gets the same 401 body; the reason goes to the log.

Nonces of the last 15 minutes are remembered (:class:`NonceBook`), also across restarts and,
with a shared database, across nodes.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from cryptography.fernet import Fernet
from sqlalchemy import Connection, bindparam, delete, insert, select
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
    """The nonces of the last 15 minutes, per user: a second use is a replay.

    With a database of its own (SQLite: one node) the book in memory decides at once, and is
    written to table ``nonce`` in batches every FLUSH_SECONDS (and at stop), so a replay is also
    refused after a restart. Recording each nonce before answering cost every query a write
    transaction with an fsync, queued behind the writer process's commits; queries change
    nothing, so the only loss a crash can bring is that a query made in its last second could
    be replayed, to read again what it read. With a shared database (PostgreSQL, several nodes)
    each nonce is claimed in the database before the answer, in one transaction per loop turn,
    so a replay is refused on every node."""

    FLUSH_SECONDS = 1.0

    def __init__(self, writer: SignalWriter, shared: bool = False) -> None:
        self._writer = writer
        self._shared = shared
        self._waiting: list[tuple[str, str, int, asyncio.Future[bool]]] = []
        self._draining = False
        self._seen: dict[tuple[str, str], int] = {}
        self._order: deque[tuple[int, tuple[str, str]]] = deque()
        self._unwritten: list[tuple[str, str, int]] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._shared:
            return
        since = now_us() - NONCE_WINDOW_US
        n = s.nonce.c
        rows = await self._writer.run(
            lambda conn: conn.execute(
                select(n.username, n.nonce, n.created_us)
                .where(n.created_us >= since)
                .order_by(n.created_us)
            ).all()
        )
        for username, nonce, at_us in rows:
            self._remember((username, nonce), at_us)
        self._task = asyncio.create_task(self._flush_loop(), name="nonces")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
            await self.flush()

    async def claim(self, username: str, nonce: str, at_us: int) -> bool:
        if self._shared:
            return await self._claim_shared(username, nonce, at_us)
        key = (username, nonce)
        earlier = self._seen.get(key)
        if earlier is not None and at_us - earlier < NONCE_WINDOW_US:
            return False
        self._remember(key, at_us)
        self._unwritten.append((username, nonce, at_us))
        return True

    def _remember(self, key: tuple[str, str], at_us: int) -> None:
        self._seen[key] = at_us
        self._order.append((at_us, key))

    def _forget_old(self, now: int) -> None:
        while self._order and now - self._order[0][0] >= NONCE_WINDOW_US:
            at_us, key = self._order.popleft()
            if self._seen.get(key) == at_us:
                del self._seen[key]

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.FLUSH_SECONDS)
            try:
                await self.flush()
            except Exception as exc:
                log.warning("nonces not written; will retry", extra={"error": repr(exc)})

    async def flush(self) -> None:
        """Write the nonces claimed since the last flush; drop those older than the window."""
        now = now_us()
        self._forget_old(now)
        batch, self._unwritten = self._unwritten, []
        try:
            await self._writer.run(partial(_record_nonces, claims=batch, now_us=now))
        except BaseException:
            self._unwritten[:0] = batch
            raise

    async def _claim_shared(self, username: str, nonce: str, at_us: int) -> bool:
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


def _record_nonces(conn: Connection, claims: Sequence[tuple[str, str, int]], now_us: int) -> None:
    """Write nonces the book in memory accepted; delete those older than the window.

    The book has refused the replays already, so a row left for the same user and nonce is from
    before the window and is replaced. One statement for all the claims of a flush: a query
    per claim held the interpreter for a third of a millisecond per request, in bursts that
    delayed the queries answered meanwhile."""
    n = s.nonce.c
    if claims:
        latest = {(username, nonce): at_us for username, nonce, at_us in claims}
        keys = [{"old_username": username, "old_nonce": nonce} for username, nonce in latest]
        conn.execute(_FORGET_NONCE, keys)
        rows = [
            {"username": username, "nonce": nonce, "created_us": at_us}
            for (username, nonce), at_us in latest.items()
        ]
        conn.execute(insert(s.nonce), rows)
    conn.execute(delete(s.nonce).where(n.created_us < now_us - NONCE_WINDOW_US))


_FORGET_NONCE = delete(s.nonce).where(
    (s.nonce.c.username == bindparam("old_username")) & (s.nonce.c.nonce == bindparam("old_nonce"))
)


class QueryAuth(FollowsProvisioning):
    """Checks the five headers of a request against the API users (a removed user is refused
    within a second)."""

    name = "api-users"

    def __init__(self, engine: Engine, key: Fernet, nonces: NonceBook) -> None:
        super().__init__(engine)
        self._key = key
        self._nonces = nonces
        self._users: dict[str, ApiUser] = {}

    async def start(self) -> None:
        await super().start()
        await self._nonces.start()

    async def stop(self) -> None:
        await self._nonces.stop()
        await super().stop()

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

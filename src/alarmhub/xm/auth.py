"""Authentication of the query interface on the server: the five headers, the digest, the date
window and replayed nonces. Every failure gets the same 401 body; the reason goes to the log.

Nonces of the last 15 minutes are remembered (:class:`NonceBook`), also across restarts and,
with a shared database, across nodes. The headers are checked before the body is read
(:meth:`QueryAuth.examine`); only the hmac-sha256 digest, which signs the form, waits for it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from cryptography.fernet import Fernet
from sqlalchemy import Connection, bindparam, delete, insert, select
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.core import units
from alarmhub.store import provisioning
from alarmhub.store import schema as s
from alarmhub.store.engine import dialect_insert
from alarmhub.store.following import FollowsProvisioning
from alarmhub.store.provisioning import ApiUser
from alarmhub.store.writer import SignalWriter
from alarmhub.xm import digest

log = logging.getLogger("alarmhub.xm.auth")
NONCE_WINDOW_US = units.minutes_us(15)
HEADERS = ("x-svc-appkey", "x-svc-username", "x-svc-date", "x-svc-nonce", "x-svc-digest")


@dataclass(frozen=True, slots=True)
class Refused:
    """Why a request was not authenticated: for the log only."""

    reason: str


def claim_nonces(conn: Connection, claims: Sequence[tuple[str, str, int]]) -> list[bool]:
    """Record each (username, nonce, time); False for a nonce the user used in the window.

    One ``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` for the whole batch: a row of the same
    user and nonce is replaced only when it is older than the window, and only the rows written
    come back. Two nodes claiming the same nonce at once: the second waits for the first's
    commit, then finds its row and is refused; no unique violation reaches the caller, so
    nobody else's claim in the batch fails. Keys go in sorted, so two batches lock rows in the
    same order and cannot deadlock on each other."""
    n = s.nonce.c
    latest: dict[tuple[str, str], int] = {}
    first: list[bool] = []
    for username, nonce, at_us in claims:
        key = (username, nonce)
        first.append(key not in latest)
        latest.setdefault(key, at_us)
    if not latest:
        return first
    rows = [
        {"username": username, "nonce": nonce, "created_us": at_us}
        for (username, nonce), at_us in sorted(latest.items())
    ]
    stmt = dialect_insert(conn)(s.nonce).values(rows)
    upsert = stmt.on_conflict_do_update(
        index_elements=[n.username, n.nonce],
        set_={"created_us": stmt.excluded.created_us},
        where=n.created_us <= stmt.excluded.created_us - NONCE_WINDOW_US,
    ).returning(n.username, n.nonce)
    written = {(username, nonce) for username, nonce in conn.execute(upsert).all()}
    return [
        is_first and (username, nonce) in written
        for (username, nonce, _), is_first in zip(claims, first, strict=True)
    ]


def purge_nonces(conn: Connection, now_us: int) -> int:
    """Delete the nonces older than the window; how many went."""
    n = s.nonce.c
    return conn.execute(delete(s.nonce).where(n.created_us < now_us - NONCE_WINDOW_US)).rowcount


class NonceBook:
    """The nonces of the last 15 minutes, per user: a second use is a replay.

    With a database of its own (SQLite: one node) the book in memory decides at once, and is
    written to table ``nonce`` in batches every FLUSH_SECONDS (and at stop), so a replay is also
    refused after a restart. Recording each nonce before answering cost every query a write
    transaction with an fsync, queued behind the writer process's commits; queries change
    nothing, so the only loss a crash can bring is that a query made in its last second could
    be replayed, to read again what it read. With a shared database (PostgreSQL, several nodes)
    each nonce is claimed in the database before the query runs, in one transaction per loop
    turn, so a replay is refused on every node; a claim the database fails (a deadlock, a lost
    connection) is tried again, so a neighbour's trouble does not fail a query, and every node
    deletes the nonces older than the window every PURGE_SECONDS."""

    FLUSH_SECONDS = 1.0
    PURGE_SECONDS = 60.0
    CLAIM_ATTEMPTS = 4

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
            self._task = asyncio.create_task(self._purge_loop(), name="nonces")
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
            if not self._shared:
                await self.flush()

    async def _purge_loop(self) -> None:
        while True:
            await asyncio.sleep(self.PURGE_SECONDS)
            try:
                await self.purge()
            except Exception as exc:  # another node may be purging too; next time
                log.warning("old nonces not deleted; will retry", extra={"error": repr(exc)})

    async def purge(self) -> int:
        """Delete the nonces older than the window from the shared table."""
        return await self._writer.run(partial(purge_nonces, now_us=now_us()))

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
                    results = await self._claim_with_retries(claims)
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

    async def _claim_with_retries(self, claims: list[tuple[str, str, int]]) -> list[bool]:
        for attempt in range(1, self.CLAIM_ATTEMPTS + 1):
            try:
                return await self._writer.run(partial(claim_nonces, claims=claims))
            except Exception as exc:
                if attempt == self.CLAIM_ATTEMPTS:
                    raise
                log.warning(
                    "nonces not claimed; trying again",
                    extra={"attempt": attempt, "error": repr(exc)},
                )
                await asyncio.sleep(0.01 * attempt)
        raise AssertionError("unreachable")


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


@dataclass(frozen=True, slots=True)
class Presented:
    """The five headers of a request whose user exists and whose date, nonce and digest are
    well formed; for the sha1 scheme the digest is checked too (it does not sign the form)."""

    user: ApiUser
    appkey: str
    date: str
    nonce: str
    digest: str
    scheme: str

    @property
    def form_signed(self) -> bool:
        """Whether the digest signs the form, so the body must be read before it is checked."""
        return self.scheme == digest.HMAC_SHA256


class QueryAuth(FollowsProvisioning):
    """Checks the five headers of a request against the API users (a removed user is refused
    within a second).

    A username the table does not hold never costs a database round trip of its own: it waits
    for the next check of the table, which runs at most every RECHECK_SECONDS whatever the
    number of such requests (one that starts after the request came, so a user added just
    before works at once), and is then refused for UNKNOWN_SECONDS without a check (at most
    UNKNOWN_MAX names are remembered). A user whose password cannot be decrypted with this
    node's secret key is left out, with a log line naming it; the others go on working."""

    name = "api-users"
    RECHECK_SECONDS = 0.1
    UNKNOWN_SECONDS = 1.0
    UNKNOWN_MAX = 4096
    USERNAME_MAX = 64  # the column's width: a longer name is no user's

    def __init__(self, engine: Engine, key: Fernet, nonces: NonceBook) -> None:
        super().__init__(engine)
        self._key = key
        self._nonces = nonces
        self._users: dict[str, ApiUser] = {}
        self._unreadable: frozenset[str] = frozenset()
        self._unknown: dict[str, float] = {}
        self._recheck_task: asyncio.Future[None] | None = None
        self._last_recheck = 0.0

    async def start(self) -> None:
        await super().start()
        await self._nonces.start()

    async def stop(self) -> None:
        await self._nonces.stop()
        await super().stop()

    def refresh(self, conn: Connection) -> None:
        users, unreadable = provisioning.api_users(conn, self._key)
        for username in sorted(set(unreadable) - self._unreadable):
            # that user is refused; the query interface goes on for the others
            log.error(
                "API user disabled: its password cannot be decrypted with this node's secret key",
                extra={"username": username},
            )
        self._users, self._unreadable = users, frozenset(unreadable)
        self._unknown = {}

    async def check(
        self, headers: Mapping[str, str], form: Sequence[tuple[str, str]]
    ) -> ApiUser | Refused:
        """The API user a request comes from, or why it is refused (nonce claimed)."""
        verified = await self.verify(headers, form)
        if isinstance(verified, Refused):
            return verified
        return verified if await self.claim(headers) else Refused("replayed nonce")

    async def claim(self, headers: Mapping[str, str]) -> bool:
        """Record the request's nonce; False when it is a replay. Call after the digest is
        checked, and before the query runs."""
        return await self._nonces.claim(headers["x-svc-username"], headers["x-svc-nonce"], now_us())

    async def verify(
        self, headers: Mapping[str, str], form: Sequence[tuple[str, str]]
    ) -> ApiUser | Refused:
        """Everything but the nonce's freshness: the headers, the date window and the digest."""
        presented = await self.examine(headers)
        if isinstance(presented, Refused):
            return presented
        return self.signed(presented, form)

    async def examine(self, headers: Mapping[str, str]) -> Presented | Refused:
        """What the headers alone can tell, before the body is read: the five headers, the date
        window, the nonce's and the digest's form, the user, and a sha1 digest."""
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
        if abs(now - units.seconds_us(moment.timestamp())) > units.seconds_us(digest.DATE_WINDOW_S):
            return Refused("date outside the window")
        if not digest.NONCE_PATTERN.fullmatch(nonce):
            return Refused("malformed nonce")
        scheme = digest.scheme_of(presented)
        if scheme is None:
            return Refused("malformed digest")
        user = await self._user(username)
        if user is None:
            return Refused("unknown user")
        if scheme == digest.SHA1 and user.hmac_only:
            return Refused("sha1 digest from an hmac-only user")
        if scheme == digest.SHA1:
            expected = digest.sha1_digest(appkey, username, date, nonce, user.password)
            if not digest.matches(expected, presented):
                return Refused("wrong digest")
        return Presented(user, appkey, date, nonce, presented, scheme)

    def signed(self, presented: Presented, form: Sequence[tuple[str, str]]) -> ApiUser | Refused:
        """The user of an examined request once its form is read (hmac-sha256 signs it)."""
        if not presented.form_signed:
            return presented.user
        p = presented
        expected = digest.hmac_digest(
            p.appkey, p.user.username, p.date, p.nonce, p.user.password, form
        )
        if not digest.matches(expected, p.digest):
            return Refused("wrong digest")
        return p.user

    async def _user(self, username: str) -> ApiUser | None:
        user = self._users.get(username)
        if user is not None or len(username) > self.USERNAME_MAX:
            return user
        if self._unknown.get(username, 0.0) > time.monotonic():
            return None
        await self._recheck()
        user = self._users.get(username)
        if user is None:
            if len(self._unknown) >= self.UNKNOWN_MAX:
                self._unknown = {}
            self._unknown[username] = time.monotonic() + self.UNKNOWN_SECONDS
        return user

    async def _recheck(self) -> None:
        """Wait for a check of the table that starts after now; one at a time, shared by every
        request that waits meanwhile, at most one every RECHECK_SECONDS."""
        if self._recheck_task is None:
            self._recheck_task = asyncio.ensure_future(self._run_recheck())
        await asyncio.shield(self._recheck_task)

    async def _run_recheck(self) -> None:
        wait = self._last_recheck + self.RECHECK_SECONDS - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        self._recheck_task = None  # requests from now on wait for the next check
        self._last_recheck = time.monotonic()
        try:
            await asyncio.to_thread(self.load)
        except Exception as exc:  # the database may be away: refuse meanwhile
            log.warning("API users not read", extra={"error": repr(exc)})

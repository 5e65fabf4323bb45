"""Bearer tokens on the server: a cache of grants that follows CLI changes without a restart.

The cache is reloaded when the provisioning revision in the database changes (polled twice a
second). A token the cache does not know makes it check the revision at once, so a token
created while the server runs works on its first request; every unknown token that arrives
meanwhile waits for that one check (one query at a time, however many tokens an attacker
tries), and a token found unknown is remembered as such until provisioning changes. Tokens are
found by their SHA-256 hash: no comparison ever runs over the secret itself, so its timing
tells nothing about it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict

from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub.core.tokens import Grant, token_hash
from alarmhub.store import provisioning
from alarmhub.store.following import FollowsProvisioning

log = logging.getLogger("alarmhub.auth")
BEARER = "bearer "
UNKNOWN_MAX = 10_000  # tokens remembered as unknown, the least recently tried forgotten first


class GrantCache(FollowsProvisioning):
    """Grants by token hash, and the set of known drivers, kept fresh from the database."""

    name = "grants"

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self._grants: dict[str, Grant] = {}
        self.drivers: frozenset[str] = frozenset()
        self._unknown: OrderedDict[str, None] = OrderedDict()  # hashes of unknown tokens
        self._check_lock = asyncio.Lock()
        self._next_check: asyncio.Future[None] | None = None
        self._checks: set[asyncio.Task[None]] = set()

    def refresh(self, conn: Connection) -> None:
        self._grants = provisioning.active_grants(conn)
        self.drivers = provisioning.driver_names(conn)
        self._unknown = OrderedDict()  # a token created since may be among them
        log.info("provisioning loaded", extra={"tokens": len(self._grants)})

    @staticmethod
    def _digest(authorization: str | None) -> str | None:
        if not authorization or authorization[:7].lower() != BEARER:
            return None
        presented = authorization[7:].strip()
        return token_hash(presented) if presented else None

    def cached(self, authorization: str | None) -> Grant | None:
        """The grant of the bearer token in an ``Authorization`` header, if already known."""
        digest = self._digest(authorization)
        return self._grants.get(digest) if digest else None

    async def authenticate(self, authorization: str | None) -> Grant | None:
        """The grant of the bearer token in an ``Authorization`` header, or None. A token the
        cache does not know waits for a check of the provisioning revision that starts after
        it came; a token already found unknown is refused without one."""
        digest = self._digest(authorization)
        if digest is None:
            return None
        grant = self._grants.get(digest)
        if grant is not None:
            return grant
        if digest in self._unknown:
            self._unknown.move_to_end(digest)
            return None
        try:
            await asyncio.shield(self._checked())
        except Exception as exc:
            log.warning("token lookup failed", extra={"error": repr(exc)})
            return None
        grant = self._grants.get(digest)
        if grant is None:
            self._unknown[digest] = None
            if len(self._unknown) > UNKNOWN_MAX:
                self._unknown.popitem(last=False)
        return grant

    def _checked(self) -> asyncio.Future[None]:
        """A check of the provisioning revision that has not started yet, shared by every
        request that waits for one."""
        if self._next_check is None:
            self._next_check = asyncio.get_running_loop().create_future()
            task = asyncio.create_task(self._check(self._next_check))
            self._checks.add(task)
            task.add_done_callback(self._checks.discard)
        return self._next_check

    async def _check(self, done: asyncio.Future[None]) -> None:
        async with self._check_lock:  # one check at a time
            self._next_check = None  # requests from now on wait for the next one
            try:
                await asyncio.to_thread(self.load)
            except Exception as exc:
                done.set_exception(exc)
            else:
                done.set_result(None)

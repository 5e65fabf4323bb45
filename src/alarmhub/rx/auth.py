"""Bearer tokens on the server: a cache of grants that follows CLI changes without a restart.

The cache is reloaded when the provisioning revision in the database changes (polled twice a
second), and a token the cache does not know is looked up in the database at once, so a token
created while the server runs works on its first request. Tokens are found by their SHA-256
hash: no comparison ever runs over the secret itself, so its timing tells nothing about it.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub.core.tokens import Grant, token_hash
from alarmhub.store import provisioning
from alarmhub.store.following import FollowsProvisioning

log = logging.getLogger("alarmhub.auth")
BEARER = "bearer "


class GrantCache(FollowsProvisioning):
    """Grants by token hash, and the set of known drivers, kept fresh from the database."""

    name = "grants"

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self._grants: dict[str, Grant] = {}
        self.drivers: frozenset[str] = frozenset()

    def refresh(self, conn: Connection) -> None:
        self._grants = provisioning.active_grants(conn)
        self.drivers = provisioning.driver_names(conn)
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
        """The grant of the bearer token in an ``Authorization`` header, or None; a token the
        cache does not know is looked up in the database."""
        digest = self._digest(authorization)
        if digest is None:
            return None
        grant = self._grants.get(digest)
        if grant is None:
            try:
                grant = await asyncio.to_thread(self._lookup, digest)
            except Exception as exc:
                log.warning("token lookup failed", extra={"error": repr(exc)})
                return None
            if grant is None:
                return None
            self._grants[digest] = grant
        return grant

    def _lookup(self, digest: str) -> Grant | None:
        with self._engine.connect() as conn:
            grant = provisioning.grant_for_hash(conn, digest)
            if grant is not None:
                self.drivers = provisioning.driver_names(conn)
            return grant

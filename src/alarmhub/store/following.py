"""Caches of provisioning data that follow CLI changes: reloaded when the provisioning revision
in the database moves, checked twice a second."""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod

from sqlalchemy import Connection
from sqlalchemy.engine import Engine

from alarmhub.store import provisioning

log = logging.getLogger("alarmhub.provisioning")
POLL_SECONDS = 0.5


class FollowsProvisioning(ABC):
    """Base of a cache: :meth:`refresh` reads what it keeps; this class decides when."""

    name = "provisioning"

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._revision = -1
        self._task: asyncio.Task[None] | None = None

    @abstractmethod
    def refresh(self, conn: Connection) -> None:
        """Read what the cache keeps."""

    def load(self) -> None:
        """Read the cache again if the provisioning data changed since the last read."""
        with self._engine.connect() as conn:
            current = provisioning.revision(conn)
            if current == self._revision:
                return
            self.refresh(conn)
            self._revision = current

    async def start(self) -> None:
        await asyncio.to_thread(self.load)
        self._task = asyncio.create_task(self._poll(), name=self.name)

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(POLL_SECONDS)
            try:
                await asyncio.to_thread(self.load)
            except Exception as exc:  # the database may be away; keep the last good state
                log.warning("reload failed", extra={"cache": self.name, "error": repr(exc)})

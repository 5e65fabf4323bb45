"""The nonce book of the query interface (``xm.auth.NonceBook``) on a real SQLite database:
replays refused from memory, nonces written in batches and read back after a restart, old ones
forgotten; and the shared mode (several nodes) that claims each nonce in the database."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from alarmhub.clock import now_us
from alarmhub.store import schema as s
from alarmhub.xm.auth import NONCE_WINDOW_US, NonceBook
from tests.support.processes import Runner


def stored(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(s.nonce)).scalar_one())


@pytest.mark.parametrize("shared", [False, True])
def test_a_nonce_is_claimed_once_per_user_also_after_a_restart(
    engine: Engine, shared: bool
) -> None:
    async def scenario() -> None:
        now = now_us()
        book = NonceBook(Runner(engine), shared=shared)  # type: ignore[arg-type]
        await book.start()
        assert await book.claim("ann", "n1", now)
        assert not await book.claim("ann", "n1", now + 1)
        assert await book.claim("bob", "n1", now + 2), "another user may use it"
        await book.stop()
        assert stored(engine) == 2
        again = NonceBook(Runner(engine), shared=shared)  # type: ignore[arg-type]
        await again.start()
        assert not await again.claim("ann", "n1", now + 3), "refused after a restart"
        assert await again.claim("ann", "n1", now + NONCE_WINDOW_US), "after the window it is new"
        await again.stop()

    asyncio.run(scenario())


def test_old_nonces_are_deleted(engine: Engine) -> None:
    async def scenario() -> None:
        book = NonceBook(Runner(engine))  # type: ignore[arg-type]
        await book.start()
        old = now_us() - NONCE_WINDOW_US - 1
        assert await book.claim("ann", "old", old)
        assert await book.claim("ann", "new", now_us())
        await book.flush()
        with engine.connect() as conn:
            left = conn.execute(select(s.nonce.c.nonce)).scalars().all()
        assert left == ["new"]
        await book.stop()

    asyncio.run(scenario())

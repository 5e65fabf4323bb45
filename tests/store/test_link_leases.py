"""The leases of the receiver links one node may run (PostgreSQL advisory locks): one holder a
link, let go when no longer wanted, taken by another node when the holder's connection dies."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from alarmhub.store.link_leases import LinkLeases
from tests.support.database import POSTGRESQL

pytestmark = pytest.mark.backends(POSTGRESQL)


def test_one_node_holds_a_link_and_another_takes_it_when_the_holder_s_connection_dies(
    engine: Engine,
) -> None:
    first, second = LinkLeases(engine), LinkLeases(engine)
    assert first.renew(["SG1", "SG2"]) == {"SG1", "SG2"}
    assert second.renew(["SG1", "SG2", "SG3"]) == {"SG3"}
    assert first.renew(["SG2"]) == {"SG2"}  # SG1 no longer wanted: let go
    assert second.renew(["SG1", "SG2", "SG3"]) == {"SG1", "SG3"}
    assert first._conn is not None
    pid = first._conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
    with engine.connect() as conn:
        conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    assert first.renew(["SG2"]) == set()  # its connection is gone: it runs none of them
    assert second.renew(["SG1", "SG2", "SG3"]) == {"SG1", "SG2", "SG3"}
    assert first.renew(["SG2"]) == set()
    second.release()
    assert first.renew(["SG2"]) == {"SG2"}
    first.release()

"""The migrations build exactly the schema that ``alarmhub.store.schema`` describes (tables,
columns, indexes), on SQLite and on PostgreSQL; and they run down and up again."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text

from alarmhub.store import queries
from alarmhub.store import schema as s
from alarmhub.store.engine import alembic_config, open_engine, upgrade
from tests.support.database import database_url


def test_the_migrated_database_matches_the_schema_module(tmp_path: Path) -> None:
    engine = open_engine(database_url(tmp_path, "m", migrated=False))
    try:
        upgrade(engine)
        with engine.connect() as conn:
            differences = compare_metadata(MigrationContext.configure(conn), s.metadata)
        assert differences == []
        config = alembic_config(engine.url.render_as_string(hide_password=False))
        with engine.begin() as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "base")
        upgrade(engine)
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), s.metadata) == []
    finally:
        engine.dispose()


def test_webhook_events_left_behind_the_old_cursor_get_their_deliveries(tmp_path: Path) -> None:
    """0014 makes deliveries at publishing: the events a webhook's cursor had not reached yet
    get theirs from the migration (the kinds and account prefix it wants), none twice."""
    engine = open_engine(database_url(tmp_path, "m", migrated=False))
    try:
        config = alembic_config(engine.url.render_as_string(hide_password=False))
        with engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "0013")
        with engine.begin() as conn:
            for kind, account in [
                ("alarm.raised", "700001"),
                ("alarm.raised", "700002"),
                ("alarm.taken", "700002"),
                ("alarm.raised", "800001"),
            ]:
                conn.execute(
                    text(
                        "INSERT INTO event (kind, account_number, body, at_us)"
                        " VALUES (:k, :a, '{}', 5)"
                    ),
                    {"k": kind, "a": account},
                )
            conn.execute(text(
                "INSERT INTO webhook (url, events, accounts, secret_encrypted, created_us,"
                " delivered_through) VALUES ('http://h/', 'alarm.raised alarm.resolved', '7',"
                " 'x', 1, 1)"))  # fmt: skip
            conn.execute(
                text(
                    "INSERT INTO webhook_delivery (webhook_id, event_id, account_number, state,"
                    " next_attempt_us, created_us) VALUES (1, 1, '700001', 'delivered', 5, 5)"
                )
            )
        upgrade(engine)
        with engine.connect() as conn:
            made = conn.execute(text("SELECT webhook_id, event_id, state, next_attempt_us FROM"
                                     " webhook_delivery ORDER BY event_id")).all()  # fmt: skip
            assert [tuple(r) for r in made] == [(1, 1, "delivered", 5), (1, 2, "pending", 5)]
            if engine.dialect.name == "sqlite":  # the table made again kept AUTOINCREMENT
                sql = conn.execute(text("SELECT sql FROM sqlite_master WHERE name = 'webhook'"))
                assert "AUTOINCREMENT" in sql.scalar_one()
    finally:
        engine.dispose()


def test_the_routed_watermark_stops_below_the_oldest_unrouted_signal(tmp_path: Path) -> None:
    """0015 tells routed signals by a watermark: it is set below the oldest signal left
    unrouted, so that one and every signal after it are still routed, none twice."""
    engine = open_engine(database_url(tmp_path, "m", migrated=False))
    try:
        config = alembic_config(engine.url.render_as_string(hide_password=False))
        with engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "0014")
        with engine.begin() as conn:
            for number, routed in [(1, 10), (2, 11), (3, None), (4, None)]:
                conn.execute(
                    text(
                        "INSERT INTO signal (incident_number, source, destination, dnis, panel,"
                        " code, area, zone, token_name, received_us, routed_us)"
                        " VALUES (:n, 's', 'd', '1', '1', 'E130', '01', '001', 't', 1, :r)"
                    ),
                    {"n": number, "r": routed},
                )
            conn.execute(text("UPDATE sequence SET value = 6 WHERE name = 'incident'"))
        upgrade(engine)
        with engine.connect() as conn:
            watermark = conn.execute(
                text("SELECT value FROM sequence WHERE name = 'routed'")
            ).scalar_one()
            assert watermark == 2
            assert queries.unrouted_count(conn) == 2
    finally:
        engine.dispose()


def test_pending_webhook_deliveries_get_their_lanes(tmp_path: Path) -> None:
    """0017 puts deliveries in lanes, one for each webhook and account with a pending delivery,
    due when its first pending delivery is (a retry's time, not a later delivery's)."""
    engine = open_engine(database_url(tmp_path, "m", migrated=False))
    try:
        config = alembic_config(engine.url.render_as_string(hide_password=False))
        with engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, "0016")
        with engine.begin() as conn:
            for event_id, account, state, due in [
                (1, "700001", "delivered", 5),
                (2, "700001", "pending", 900),  # waits for its retry
                (3, "700001", "pending", 7),
                (4, "700002", "pending", 8),
                (5, "700003", "failed", 9),
            ]:
                conn.execute(text(
                    "INSERT INTO webhook_delivery (webhook_id, event_id, account_number, state,"
                    " next_attempt_us, created_us) VALUES (1, :e, :a, :s, :d, 5)"),
                    {"e": event_id, "a": account, "s": state, "d": due})  # fmt: skip
        upgrade(engine)
        with engine.connect() as conn:
            made = conn.execute(text("SELECT channel, target_id, lane_key, due_us FROM"
                                     " delivery_lane ORDER BY lane_key")).all()  # fmt: skip
        assert [tuple(r) for r in made] == [
            ("webhook", 1, "700001", 900), ("webhook", 1, "700002", 8)
        ]  # fmt: skip
    finally:
        engine.dispose()

"""The migrations build exactly the schema that ``alarmhub.store.schema`` describes (tables,
columns, indexes), on SQLite and on PostgreSQL; and they run down and up again."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

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

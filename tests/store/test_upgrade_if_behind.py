"""A database is migrated only when it is not at the newest migration, which is read from the
migration files' text as Alembic itself finds it."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.script import ScriptDirectory

from alarmhub.store.engine import (
    alembic_config,
    at_head,
    head_revision,
    open_engine,
    upgrade_if_behind,
)
from tests.support.database import database_url


def test_the_head_read_from_the_files_is_alembic_s() -> None:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    assert head_revision() == script.get_current_head()


def test_a_database_is_upgraded_only_when_behind(tmp_path: Path) -> None:
    engine = open_engine(database_url(tmp_path, "u", migrated=False))
    try:
        assert not at_head(engine)
        assert upgrade_if_behind(engine)  # a new database: created
        assert at_head(engine)
        assert not upgrade_if_behind(engine)  # at the newest migration: left alone
        config = alembic_config(engine.url.render_as_string(hide_password=False))
        with engine.begin() as conn:
            config.attributes["connection"] = conn
            command.downgrade(config, "-1")
        assert not at_head(engine)
        assert upgrade_if_behind(engine)  # one migration behind: upgraded
        assert at_head(engine)
    finally:
        engine.dispose()

"""Alembic environment: migrations run on the connection alarmhub hands over."""

from alembic import context
from sqlalchemy import create_engine

from alarmhub.store.schema import metadata

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.begin() as conn:
        context.configure(connection=conn, target_metadata=metadata, render_as_batch=True)
        context.run_migrations()
else:
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    context.run_migrations()

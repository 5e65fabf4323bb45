"""Routed signals told by one watermark (the counter ``routed``: every signal numbered up to it
is routed) instead of a time on each signal and an index of the unrouted ones

Revision ID: 0015
Revises: 0014
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

# routing goes in incident-number order: every signal below the oldest unrouted one is routed
WATERMARK = """
INSERT INTO sequence (name, value)
SELECT 'routed', coalesce(
    (SELECT min(incident_number) - 1 FROM signal WHERE routed_us IS NULL),
    (SELECT value FROM sequence WHERE name = 'incident'),
    0
)
"""


def upgrade() -> None:
    op.execute(WATERMARK)
    op.drop_index("ix_signal_unrouted", "signal")
    op.execute("ALTER TABLE signal DROP COLUMN routed_us")


def downgrade() -> None:
    op.add_column("signal", sa.Column("routed_us", sa.BigInteger(), nullable=True))
    op.execute(
        "UPDATE signal SET routed_us = received_us WHERE incident_number <= "
        "(SELECT value FROM sequence WHERE name = 'routed')"
    )
    op.execute("DELETE FROM sequence WHERE name = 'routed'")
    op.create_index(
        "ix_signal_unrouted",
        "signal",
        ["incident_number"],
        sqlite_where=sa.text("routed_us IS NULL"),
        postgresql_where=sa.text("routed_us IS NULL"),
    )

"""Notifications: a message sent (or failed) within a storm's digest names the digest; a
message is queued unrendered, with what it is rendered from when it is sent (the HIST_TEXT, the
zone and area, when); the failed messages found without reading the others

Revision ID: 0021
Revises: 0020
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("notification") as batch:
        batch.add_column(sa.Column("digest_id", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("hist_text", sa.Text(), nullable=False, server_default=""))
        batch.add_column(sa.Column("zone", sa.String(8), nullable=False, server_default=""))
        batch.add_column(sa.Column("area", sa.String(4), nullable=False, server_default=""))
        batch.add_column(sa.Column("at_us", sa.BigInteger(), nullable=True))
    op.create_index("ix_notification_state", "notification", ["state", "notification_id"])


def downgrade() -> None:
    op.drop_index("ix_notification_state", table_name="notification")
    with op.batch_alter_table("notification") as batch:
        batch.drop_column("at_us")
        batch.drop_column("area")
        batch.drop_column("zone")
        batch.drop_column("hist_text")
        batch.drop_column("digest_id")

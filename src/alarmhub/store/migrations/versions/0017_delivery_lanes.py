"""Webhook deliveries in lanes, one for each webhook and account, each with the time its first
pending delivery is due: the worker reads the lanes that are due, never a webhook's whole queue,
and claims lanes (not deliveries) on a shared database

Revision ID: 0017
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

# a lane for each webhook and account with a pending delivery, due when its first one is
LANES = """
INSERT INTO delivery_lane (channel, target_id, lane_key, due_us)
SELECT 'webhook', d.webhook_id, d.account_number, (
    SELECT h.next_attempt_us FROM webhook_delivery h
    WHERE h.webhook_id = d.webhook_id AND h.account_number = d.account_number
      AND h.state = 'pending'
    ORDER BY h.event_id LIMIT 1)
FROM webhook_delivery d
WHERE d.state = 'pending'
GROUP BY d.webhook_id, d.account_number
"""


def upgrade() -> None:
    op.create_table(
        "delivery_lane",
        sa.Column(
            "lane_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("target_id", sa.BigInteger(), nullable=False),
        sa.Column("lane_key", sa.String(length=64), nullable=False),
        sa.Column("due_us", sa.BigInteger(), nullable=True),
        sa.Column("claimed_by", sa.String(length=64), nullable=True),
        sa.Column("claimed_until_us", sa.BigInteger(), nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index(
        "ix_delivery_lane_key", "delivery_lane", ["channel", "target_id", "lane_key"], unique=True
    )
    op.create_index("ix_delivery_lane_due", "delivery_lane", ["channel", "due_us"])
    op.drop_index("ix_webhook_delivery_queue", "webhook_delivery")
    op.create_index(
        "ix_webhook_delivery_lane",
        "webhook_delivery",
        ["webhook_id", "account_number", "state", "event_id"],
    )
    op.execute(LANES)
    op.execute("ALTER TABLE webhook_delivery DROP COLUMN claimed_by")
    op.execute("ALTER TABLE webhook_delivery DROP COLUMN claimed_until_us")


def downgrade() -> None:
    op.add_column("webhook_delivery", sa.Column("claimed_by", sa.String(64), nullable=True))
    op.add_column("webhook_delivery", sa.Column("claimed_until_us", sa.BigInteger(), nullable=True))
    op.drop_index("ix_webhook_delivery_lane", "webhook_delivery")
    op.create_index(
        "ix_webhook_delivery_queue", "webhook_delivery", ["webhook_id", "state", "event_id"]
    )
    op.drop_table("delivery_lane")

"""The integrator API: keys, webhooks, the outbox of events and their deliveries

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "api_key",
        sa.Column("key_id", ID, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("scopes", sa.String(200), nullable=False),
        sa.Column("accounts", sa.String(9), nullable=False, server_default=""),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.Column("revoked_us", sa.BigInteger(), nullable=True),
        sa.Column("last_used_us", sa.BigInteger(), nullable=True),
        sa.UniqueConstraint("name", name="uq_api_key_name"),
        sa.UniqueConstraint("secret_hash", name="uq_api_key_secret_hash"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "webhook",
        sa.Column("webhook_id", ID, primary_key=True, autoincrement=True),
        sa.Column("url", sa.String(2000), nullable=False),
        sa.Column("events", sa.String(400), nullable=False),
        sa.Column("accounts", sa.String(9), nullable=False, server_default=""),
        sa.Column("secret_encrypted", sa.String(512), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.Column("removed_us", sa.BigInteger(), nullable=True),
        sa.Column("delivered_through", sa.BigInteger(), nullable=False, server_default="0"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "event",
        sa.Column("event_id", ID, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("account_number", sa.String(9), nullable=False, server_default=""),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("at_us", sa.BigInteger(), nullable=False),
        sqlite_autoincrement=True,  # an id is never given twice, even after the newest is gone
    )
    op.create_index("ix_event_at", "event", ["at_us"])
    op.create_index("ix_event_account", "event", ["account_number", "event_id"])
    # the newest event id forgotten: a stream resuming before it missed some
    op.execute("INSERT INTO sequence (name, value) VALUES ('event_forgotten', 0)")
    op.create_table(
        "webhook_delivery",
        sa.Column("delivery_id", ID, primary_key=True, autoincrement=True),
        sa.Column("webhook_id", sa.BigInteger(), nullable=False),
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("account_number", sa.String(9), nullable=False, server_default=""),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("next_attempt_us", sa.BigInteger(), nullable=False),
        sa.Column("claimed_by", sa.String(64), nullable=True),
        sa.Column("claimed_until_us", sa.BigInteger(), nullable=True),
        sa.Column("last_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.String(200), nullable=True),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.Column("delivered_us", sa.BigInteger(), nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_webhook_delivery_due", "webhook_delivery", ["state", "next_attempt_us"])
    op.create_index(
        "ix_webhook_delivery_event", "webhook_delivery", ["webhook_id", "event_id"], unique=True
    )
    op.create_index(
        "ix_webhook_delivery_order",
        "webhook_delivery",
        ["webhook_id", "account_number", "state", "event_id"],
    )


def downgrade() -> None:
    op.execute("DELETE FROM sequence WHERE name = 'event_forgotten'")
    for table in ("webhook_delivery", "event", "webhook", "api_key"):
        op.drop_table(table)

"""Notifications: contacts' subscriptions, the gateways, the station's templates and the
messages (queue and log)

Revision ID: 0020
Revises: 0019
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("contact") as batch:
        batch.add_column(
            sa.Column("notify", sa.String(length=60), nullable=False, server_default="")
        )
        batch.add_column(
            sa.Column("notify_by", sa.String(length=20), nullable=False, server_default="")
        )
    op.create_table(
        "notify_gateway",
        sa.Column("channel", sa.String(length=8), primary_key=True),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("sender", sa.String(length=120), nullable=False, server_default=""),
        sa.Column("format", sa.String(length=8), nullable=False, server_default=""),
        sa.Column("tls", sa.String(length=8), nullable=False, server_default=""),
        sa.Column("username", sa.String(length=200), nullable=False, server_default=""),
        sa.Column("secret_encrypted", sa.String(length=1024), nullable=True),
        sa.Column("changed_us", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "notify_template",
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("channel", sa.String(length=8), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False, server_default=""),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("changed_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("kind", "channel", name="pk_notify_template"),
    )
    op.create_table(
        "notification",
        sa.Column(
            "notification_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("contact_id", sa.BigInteger(), nullable=False),
        sa.Column("account_number", sa.String(length=9), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("channel", sa.String(length=8), nullable=False),
        sa.Column("recipient", sa.String(length=120), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False, server_default=""),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("html", sa.Text(), nullable=False, server_default=""),
        sa.Column("event_id", sa.BigInteger(), nullable=True),
        sa.Column("incident_number", sa.BigInteger(), nullable=True),
        sa.Column("state", sa.String(length=8), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("due_us", sa.BigInteger(), nullable=False),
        sa.Column("last_error", sa.String(length=200), nullable=True),
        sa.Column("queued_us", sa.BigInteger(), nullable=False),
        sa.Column("sent_us", sa.BigInteger(), nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index(
        "ix_notification_account", "notification", ["account_number", "notification_id"]
    )
    op.create_index(
        "ix_notification_lane",
        "notification",
        ["contact_id", "channel", "state", "notification_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_notification_lane", table_name="notification")
    op.drop_index("ix_notification_account", table_name="notification")
    op.drop_table("notification")
    op.drop_table("notify_template")
    op.drop_table("notify_gateway")
    with op.batch_alter_table("contact") as batch:
        batch.drop_column("notify_by")
        batch.drop_column("notify")

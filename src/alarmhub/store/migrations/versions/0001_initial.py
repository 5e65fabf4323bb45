"""initial schema

Revision ID: 0001
Revises: (none)
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "account",
        sa.Column("account_number", sa.String(length=9), nullable=False),
        sa.Column("company_name", sa.String(length=100), nullable=False),
        sa.Column("street", sa.String(length=100), nullable=False),
        sa.Column("city", sa.String(length=60), nullable=False),
        sa.Column("state", sa.String(length=30), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.Column("updated_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("account_number", name=op.f("pk_account")),
    )
    op.create_table(
        "dnis",
        sa.Column("dnis", sa.String(length=5), nullable=False),
        sa.Column("line_mask", sa.String(length=9), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("dnis", name=op.f("pk_dnis")),
    )
    op.create_table(
        "driver",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_driver")),
    )
    op.create_table(
        "heartbeat",
        sa.Column("source", sa.String(length=64), nullable=False),
        sa.Column("destination", sa.String(length=64), nullable=False),
        sa.Column("last_seen_us", sa.BigInteger(), nullable=False),
        sa.Column("timeout_s", sa.Integer(), nullable=True),
        sa.Column("failed_us", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("source", "destination", name=op.f("pk_heartbeat")),
    )
    op.create_table(
        "idempotency",
        sa.Column("token_name", sa.String(length=64), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=False),
        sa.Column("incident_number", sa.BigInteger(), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("token_name", "idempotency_key", name=op.f("pk_idempotency")),
    )
    with op.batch_alter_table("idempotency", schema=None) as batch_op:
        batch_op.create_index("ix_idempotency_created", ["created_us"], unique=False)

    op.create_table(
        "revision",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_revision")),
    )
    op.create_table(
        "signal",
        sa.Column(
            "incident_number",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("source", sa.String(length=64), nullable=False),
        sa.Column("destination", sa.String(length=64), nullable=False),
        sa.Column("dnis", sa.String(length=5), nullable=False),
        sa.Column("panel", sa.String(length=10), nullable=False),
        sa.Column("code", sa.String(length=4), nullable=False),
        sa.Column("area", sa.String(length=2), nullable=False),
        sa.Column("zone", sa.String(length=3), nullable=False),
        sa.Column("token_name", sa.String(length=64), nullable=False),
        sa.Column("received_us", sa.BigInteger(), nullable=False),
        sa.Column("routed_us", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("incident_number", name=op.f("pk_signal")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("signal", schema=None) as batch_op:
        batch_op.create_index(
            "ix_signal_unrouted",
            ["incident_number"],
            unique=False,
            sqlite_where=sa.text("routed_us IS NULL"),
            postgresql_where=sa.text("routed_us IS NULL"),
        )

    op.create_table(
        "token",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.Column("revoked_us", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_token")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_token_token_hash")),
    )
    op.create_table(
        "token_driver",
        sa.Column("token_name", sa.String(length=64), nullable=False),
        sa.Column("driver_name", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["driver_name"], ["driver.name"], name=op.f("fk_token_driver_driver_name_driver")
        ),
        sa.ForeignKeyConstraint(
            ["token_name"], ["token.name"], name=op.f("fk_token_driver_token_name_token")
        ),
        sa.PrimaryKeyConstraint("token_name", "driver_name", name=op.f("pk_token_driver")),
    )
    op.create_table(
        "token_heartbeat",
        sa.Column("token_name", sa.String(length=64), nullable=False),
        sa.Column("source", sa.String(length=64), nullable=False),
        sa.Column("destination", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["token_name"], ["token.name"], name=op.f("fk_token_heartbeat_token_name_token")
        ),
        sa.PrimaryKeyConstraint(
            "token_name", "source", "destination", name=op.f("pk_token_heartbeat")
        ),
    )


def downgrade() -> None:
    op.drop_table("token_heartbeat")
    op.drop_table("token_driver")
    op.drop_table("token")
    with op.batch_alter_table("signal", schema=None) as batch_op:
        batch_op.drop_index(
            "ix_signal_unrouted",
            sqlite_where=sa.text("routed_us IS NULL"),
            postgresql_where=sa.text("routed_us IS NULL"),
        )

    op.drop_table("signal")
    op.drop_table("revision")
    with op.batch_alter_table("idempotency", schema=None) as batch_op:
        batch_op.drop_index("ix_idempotency_created")

    op.drop_table("idempotency")
    op.drop_table("heartbeat")
    op.drop_table("driver")
    op.drop_table("dnis")
    op.drop_table("account")

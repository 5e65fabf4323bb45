"""Automation outputs: each output's settings and its sender's report, and the frames waiting
to be ACKed downstream

Revision ID: 0019
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def _serial(name: str) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(
        name, sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True,
        autoincrement=True,
    )  # fmt: skip


def upgrade() -> None:
    op.create_table(
        "automation_output",
        _serial("output_id"),
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("protocol", sa.String(length=16), nullable=False),
        sa.Column("transport", sa.String(length=8), nullable=False),
        sa.Column("addresses", sa.String(length=2400), nullable=False),
        sa.Column("baud", sa.Integer(), nullable=True),
        sa.Column("framing", sa.String(length=3), nullable=True),
        sa.Column("accounts", sa.String(length=1000), nullable=False),
        sa.Column("receiver", sa.Integer(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("line_digits", sa.Integer(), nullable=False),
        sa.Column("ack_timeout_ms", sa.Integer(), nullable=False),
        sa.Column("heartbeat_s", sa.Integer(), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.Column("changed_us", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.String(length=8), nullable=False),
        sa.Column("address", sa.String(length=255), nullable=True),
        sa.Column("held_by", sa.String(length=64), nullable=True),
        sa.Column("sent", sa.BigInteger(), nullable=False),
        sa.Column("resent", sa.BigInteger(), nullable=False),
        sa.Column("acks", sa.BigInteger(), nullable=False),
        sa.Column("naks", sa.BigInteger(), nullable=False),
        sa.Column("timeouts", sa.BigInteger(), nullable=False),
        sa.Column("last_sent_us", sa.BigInteger(), nullable=True),
        sa.Column("last_delivered_us", sa.BigInteger(), nullable=True),
        sa.Column("failing_since_us", sa.BigInteger(), nullable=True),
        sa.Column("reported_us", sa.BigInteger(), nullable=True),
        sa.Column("alarm_id", sa.BigInteger(), nullable=True),
        sa.UniqueConstraint("name", name="uq_automation_output_name"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "output_frame",
        _serial("frame_id"),
        sa.Column("output_id", sa.BigInteger(), nullable=False),
        sa.Column("frame", sa.String(length=64), nullable=False),
        sa.Column("account_number", sa.String(length=9), nullable=False),
        sa.Column("queued_us", sa.BigInteger(), nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_output_frame_output_id_frame_id", "output_frame", ["output_id", "frame_id"])


def downgrade() -> None:
    op.drop_index("ix_output_frame_output_id_frame_id", table_name="output_frame")
    op.drop_table("output_frame")
    op.drop_table("automation_output")

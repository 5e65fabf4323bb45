"""Links to hardware receivers' automation outputs, their receiver lines, and the frames kept
as received (receiver events and frames that could not be read)

Revision ID: 0018
Revises: 0017
"""

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "receiver_link",
        sa.Column("name", sa.String(length=32), primary_key=True),
        sa.Column("protocol", sa.String(length=16), nullable=False),
        sa.Column("transport", sa.String(length=8), nullable=False),
        sa.Column("address", sa.String(length=255), nullable=False),
        sa.Column("baud", sa.Integer(), nullable=True),
        sa.Column("framing", sa.String(length=3), nullable=True),
        sa.Column("line_digits", sa.Integer(), nullable=False),
        sa.Column("heartbeat_timeout_s", sa.Integer(), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.Column("changed_us", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.String(length=8), nullable=False),
        sa.Column("held_by", sa.String(length=64), nullable=True),
        sa.Column("last_seen_us", sa.BigInteger(), nullable=True),
        sa.Column("last_frame", sa.String(length=255), nullable=True),
        sa.Column("frames", sa.BigInteger(), nullable=False),
        sa.Column("acks", sa.BigInteger(), nullable=False),
        sa.Column("naks", sa.BigInteger(), nullable=False),
        sa.Column("unreadable", sa.BigInteger(), nullable=False),
        sa.Column("per_minute", sa.Integer(), nullable=False),
        sa.Column("reported_us", sa.BigInteger(), nullable=True),
        sa.Column("failed_us", sa.BigInteger(), nullable=True),
        sa.Column("alarm_id", sa.BigInteger(), nullable=True),
    )
    op.create_table(
        "receiver_line",
        sa.Column("link", sa.String(length=32), nullable=False),
        sa.Column("receiver", sa.Integer(), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("dnis", sa.String(length=5), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("link", "receiver", "line"),
    )
    op.create_table(
        "receiver_frame",
        sa.Column(
            "frame_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("link", sa.String(length=32), nullable=False),
        sa.Column("received_us", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("frame", sa.String(length=1024), nullable=False),
        sa.Column("alarm_id", sa.BigInteger(), nullable=True),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("receiver_frame")
    op.drop_table("receiver_line")
    op.drop_table("receiver_link")

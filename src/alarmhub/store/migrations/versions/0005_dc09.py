"""SIA DC-09 receiver: receiver lines and accounts

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dc09_line",
        sa.Column("receiver", sa.String(length=6), nullable=False),
        sa.Column("line", sa.String(length=6), nullable=False),
        sa.Column("dnis", sa.String(length=5), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("receiver", "line", name=op.f("pk_dc09_line")),
    )
    op.create_table(
        "dc09_account",
        sa.Column("account", sa.String(length=16), nullable=False),
        sa.Column("key_encrypted", sa.String(length=512), nullable=True),
        sa.Column("supervision_s", sa.Integer(), nullable=True),
        sa.Column("last_message_us", sa.BigInteger(), nullable=True),
        sa.Column("receiver", sa.String(length=6), nullable=True),
        sa.Column("line", sa.String(length=6), nullable=True),
        sa.Column("failed_us", sa.BigInteger(), nullable=True),
        sa.Column("alarm_id", sa.BigInteger(), nullable=True),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("account", name=op.f("pk_dc09_account")),
    )


def downgrade() -> None:
    op.drop_table("dc09_account")
    op.drop_table("dc09_line")

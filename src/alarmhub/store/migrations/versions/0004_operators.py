"""operators and the alarm life cycle

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "operator",
        sa.Column("code", sa.String(length=3), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=10), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=True),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.Column("signed_on_us", sa.BigInteger(), nullable=True),
        sa.Column("receiving", sa.Boolean(), nullable=False),
        sa.Column("status_us", sa.BigInteger(), nullable=True),
        sa.Column("failed_logins", sa.Integer(), nullable=False),
        sa.Column("locked_until_us", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("code", name=op.f("pk_operator")),
    )
    op.create_table(
        "console_session",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("operator", sa.String(length=3), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.Column("expires_us", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["operator"], ["operator.code"], name=op.f("fk_console_session_operator_operator")
        ),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_console_session")),
    )
    with op.batch_alter_table("console_session", schema=None) as batch_op:
        batch_op.create_index("ix_console_session_operator", ["operator"], unique=False)
    op.create_table(
        "resolution",
        sa.Column("code", sa.String(length=8), nullable=False),
        sa.Column("text", sa.String(length=60), nullable=True),
        sa.Column("updated_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("code", name=op.f("pk_resolution")),
    )
    with op.batch_alter_table("alarm", schema=None) as batch_op:
        batch_op.add_column(sa.Column("opr", sa.String(length=3), nullable=True))
        batch_op.add_column(sa.Column("taken_us", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("first_call_us", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("hold_until_us", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("hold_reason", sa.String(length=200), nullable=True))
        batch_op.add_column(
            sa.Column("been_on_hold", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(sa.Column("resolved_us", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("resolution", sa.String(length=8), nullable=True))
        batch_op.create_index("ix_alarm_opr", ["opr", "state"], unique=False)
    with op.batch_alter_table("history", schema=None) as batch_op:
        batch_op.add_column(sa.Column("note", sa.String(length=2000), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("history", schema=None) as batch_op:
        batch_op.drop_column("note")
    with op.batch_alter_table("alarm", schema=None) as batch_op:
        batch_op.drop_index("ix_alarm_opr")
        for column in (
            "resolution", "resolved_us", "been_on_hold", "hold_reason", "hold_until_us",
            "first_call_us", "taken_us", "opr",
        ):  # fmt: skip
            batch_op.drop_column(column)
    op.drop_table("resolution")
    with op.batch_alter_table("console_session", schema=None) as batch_op:
        batch_op.drop_index("ix_console_session_operator")
    op.drop_table("console_session")
    op.drop_table("operator")

"""On test and open/close supervision: tests, schedules, their windows, holidays, and the
openings and closings of scheduled accounts

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "on_test",
        sa.Column("test_id", ID, primary_key=True, autoincrement=True),
        sa.Column("account_number", sa.String(9), nullable=False),
        sa.Column("zones", sa.String(400), nullable=False, server_default=""),
        sa.Column("types", sa.String(200), nullable=False, server_default=""),
        sa.Column("by", sa.String(40), nullable=False),
        sa.Column("reason", sa.String(200), nullable=False, server_default=""),
        sa.Column("opr", sa.String(3), nullable=True),
        sa.Column("started_us", sa.BigInteger(), nullable=False),
        sa.Column("ends_us", sa.BigInteger(), nullable=False),
        sa.Column("ended_us", sa.BigInteger(), nullable=True),
        sa.Column("ended_by", sa.String(40), nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_on_test_account", "on_test", ["account_number", "started_us"])
    op.create_index("ix_on_test_running", "on_test", ["ended_us", "ends_us"])
    op.create_table(
        "schedule",
        sa.Column("account_number", sa.String(9), nullable=False),
        sa.Column("area", sa.String(2), nullable=False, server_default=""),
        sa.Column("timezone", sa.String(64), nullable=True),
        sa.Column("grace_min", sa.Integer(), nullable=False),
        sa.Column("early_grace_min", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("late_to_open", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("late_to_close", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("early_close", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("checked_us", sa.BigInteger(), nullable=False),
        sa.Column("next_check_us", sa.BigInteger(), nullable=True),
        sa.Column("lto_alarm_id", sa.BigInteger(), nullable=True),
        sa.Column("ltc_alarm_id", sa.BigInteger(), nullable=True),
        sa.Column("updated_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("account_number", "area", name="pk_schedule"),
    )
    op.create_index("ix_schedule_next_check", "schedule", ["next_check_us"])
    op.create_table(
        "schedule_window",
        sa.Column("window_id", ID, primary_key=True, autoincrement=True),
        sa.Column("account_number", sa.String(9), nullable=False),
        sa.Column("area", sa.String(2), nullable=False, server_default=""),
        sa.Column("day", sa.Integer(), nullable=True),
        sa.Column("from_date", sa.String(10), nullable=True),
        sa.Column("to_date", sa.String(10), nullable=True),
        sa.Column("open_min", sa.Integer(), nullable=True),
        sa.Column("close_min", sa.Integer(), nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_schedule_window_account", "schedule_window", ["account_number", "area"])
    op.create_table(
        "holiday",
        sa.Column("date", sa.String(10), nullable=False),
        sa.Column("account_number", sa.String(9), nullable=False, server_default=""),
        sa.Column("name", sa.String(60), nullable=False, server_default=""),
        sa.PrimaryKeyConstraint("date", "account_number", name="pk_holiday"),
    )
    op.create_table(
        "open_close",
        sa.Column("event_id", ID, primary_key=True, autoincrement=True),
        sa.Column("account_number", sa.String(9), nullable=False),
        sa.Column("area", sa.String(2), nullable=False, server_default=""),
        sa.Column("opening", sa.Boolean(), nullable=False),
        sa.Column("user_number", sa.String(3), nullable=False, server_default=""),
        sa.Column("opr", sa.String(3), nullable=True),
        sa.Column("incident_number", sa.BigInteger(), nullable=True),
        sa.Column("at_us", sa.BigInteger(), nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_open_close_account", "open_close", ["account_number", "at_us"])


def downgrade() -> None:
    for table in ("open_close", "holiday", "schedule_window", "schedule", "on_test"):
        op.drop_table(table)

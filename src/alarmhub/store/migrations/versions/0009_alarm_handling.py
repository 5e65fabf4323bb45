"""Alarm handling: action plans, enhanced call verification and storm mode per TYPE,
dispatches, the premises phone

Revision ID: 0009
Revises: 0008
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("account", sa.Column("phone", sa.String(20), nullable=True))
    op.create_table(
        "plan_step",
        sa.Column("alarm_type", sa.String(5), nullable=False),
        sa.Column("account_number", sa.String(9), nullable=False),
        sa.Column("zone", sa.String(3), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("agency", sa.String(8), nullable=False, server_default=""),
        sa.Column("required", sa.Boolean(), nullable=False),
        sa.Column("text", sa.String(200), nullable=False, server_default=""),
        sa.PrimaryKeyConstraint(
            "alarm_type", "account_number", "zone", "position", name="pk_plan_step"
        ),
    )
    op.create_table(
        "type_handling",
        sa.Column("alarm_type", sa.String(5), primary_key=True),
        sa.Column("ecv", sa.Boolean(), nullable=True),
        sa.Column("storm_since_us", sa.BigInteger(), nullable=True),
        sa.Column("storm_by", sa.String(3), nullable=True),
        sa.Column("updated_us", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "dispatch",
        sa.Column(
            "dispatch_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("alarm_id", sa.BigInteger(), nullable=False),
        sa.Column("account_number", sa.String(9), nullable=False),
        sa.Column("agency", sa.String(8), nullable=False),
        sa.Column("agency_code", sa.String(16), nullable=True),
        sa.Column("avs", sa.Integer(), nullable=False),
        sa.Column("reference", sa.String(40), nullable=False, server_default=""),
        sa.Column("opr", sa.String(3), nullable=False),
        sa.Column("at_us", sa.BigInteger(), nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_dispatch_alarm", "dispatch", ["alarm_id"])
    op.create_index("ix_dispatch_time", "dispatch", ["at_us"])


def downgrade() -> None:
    op.drop_index("ix_dispatch_time", "dispatch")
    op.drop_index("ix_dispatch_alarm", "dispatch")
    op.drop_table("dispatch")
    op.drop_table("type_handling")
    op.drop_table("plan_step")
    with op.batch_alter_table("account") as batch:
        batch.drop_column("phone")

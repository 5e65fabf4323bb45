"""The plan steps operators acknowledged (review video, instructions)

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "step_done",
        sa.Column("alarm_id", sa.BigInteger(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("opr", sa.String(3), nullable=False),
        sa.Column("at_us", sa.BigInteger(), nullable=False),
        sa.Column("note", sa.String(2000), nullable=False),
        sa.PrimaryKeyConstraint("alarm_id", "position", name="pk_step_done"),
    )


def downgrade() -> None:
    op.drop_table("step_done")

"""The alarms resolved in a window of time, found by index (the handling report)

Revision ID: 0011
Revises: 0010
"""

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_alarm_resolved", "alarm", ["resolved_us"])


def downgrade() -> None:
    op.drop_index("ix_alarm_resolved", "alarm")

"""Idempotency keys found by token and time (they are forgotten when their window passes)

Revision ID: 0006
Revises: 0005
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_idempotency_token_created", "idempotency", ["token_name", "created_us"], unique=False
    )
    op.drop_index("ix_idempotency_created", table_name="idempotency")


def downgrade() -> None:
    op.create_index("ix_idempotency_created", "idempotency", ["created_us"], unique=False)
    op.drop_index("ix_idempotency_token_created", table_name="idempotency")

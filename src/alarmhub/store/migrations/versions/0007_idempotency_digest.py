"""What the first signal of an Idempotency-Key said, so a different signal under it is refused

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # keys remembered before have no digest: a request under one of them is taken as a retry
    op.add_column("idempotency", sa.Column("digest", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("idempotency") as batch:
        batch.drop_column("digest")

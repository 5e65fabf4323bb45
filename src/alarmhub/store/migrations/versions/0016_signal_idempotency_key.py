"""Each signal keeps the Idempotency-Key or DC-09 retry key it came with, so that a writer that
remembers the DC-09 keys in memory (SQLite) reads them back from the signals at start

Revision ID: 0016
Revises: 0015
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

# the keys of the retry window remembered so far are in the table: each signal gets its own
KEYS = """
UPDATE signal SET idempotency_key = idempotency.idempotency_key
FROM idempotency
WHERE idempotency.incident_number = signal.incident_number
  AND idempotency.token_name = signal.token_name
"""


def upgrade() -> None:
    op.add_column("signal", sa.Column("idempotency_key", sa.String(length=255), nullable=True))
    op.execute(KEYS)


def downgrade() -> None:
    op.execute("ALTER TABLE signal DROP COLUMN idempotency_key")

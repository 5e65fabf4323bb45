"""Webhook deliveries made when their event is published: no cursor per webhook; each webhook's
queue read by its own index

Revision ID: 0014
Revises: 0013
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# the events past a webhook's cursor that it wants (its kinds, its account prefix), as the
# cursor's worker would have made them
FAN_OUT_LEFT = """
INSERT INTO webhook_delivery
    (webhook_id, event_id, account_number, state, attempts, next_attempt_us, created_us)
SELECT w.webhook_id, e.event_id, e.account_number, 'pending', 0, e.at_us, e.at_us
FROM webhook w JOIN event e ON e.event_id > w.delivered_through
WHERE w.removed_us IS NULL
  AND (' ' || w.events || ' ') LIKE ('% ' || e.kind || ' %')
  AND substr(e.account_number, 1, length(w.accounts)) = w.accounts
"""


def upgrade() -> None:
    op.execute(FAN_OUT_LEFT)
    # an id is never given twice: the table made again keeps AUTOINCREMENT
    with op.batch_alter_table("webhook", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.drop_column("delivered_through")
    op.drop_index("ix_webhook_delivery_order", "webhook_delivery")
    op.drop_index("ix_webhook_delivery_due", "webhook_delivery")
    op.create_index(
        "ix_webhook_delivery_queue", "webhook_delivery", ["webhook_id", "state", "event_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_delivery_queue", "webhook_delivery")
    op.create_index("ix_webhook_delivery_due", "webhook_delivery", ["state", "next_attempt_us"])
    op.create_index(
        "ix_webhook_delivery_order",
        "webhook_delivery",
        ["webhook_id", "account_number", "state", "event_id"],
    )
    with op.batch_alter_table("webhook", table_kwargs={"sqlite_autoincrement": True}) as batch:
        batch.add_column(
            sa.Column("delivered_through", sa.BigInteger(), nullable=False, server_default="0")
        )
    # every event so far has its deliveries (there is one when a webhook could have wanted it)
    op.execute(
        "UPDATE webhook SET delivered_through = (SELECT coalesce(max(event_id), 0) FROM event)"
    )

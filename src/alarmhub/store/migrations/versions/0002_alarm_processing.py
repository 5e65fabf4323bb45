"""alarm processing

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "alarm",
        sa.Column("alarm_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("state", sa.String(length=12), nullable=False),
        sa.Column("account_number", sa.String(length=9), nullable=False),
        sa.Column("type", sa.String(length=5), nullable=False),
        sa.Column("priority", sa.String(length=1), nullable=False),
        sa.Column("color", sa.String(length=2), nullable=False),
        sa.Column("hist_text", sa.String(length=80), nullable=False),
        sa.Column("path", sa.String(length=8), nullable=False),
        sa.Column("code", sa.String(length=4), nullable=False),
        sa.Column("event_code", sa.String(length=3), nullable=False),
        sa.Column("area", sa.String(length=2), nullable=False),
        sa.Column("zone", sa.String(length=3), nullable=False),
        sa.Column("source", sa.String(length=64), nullable=False),
        sa.Column("destination", sa.String(length=64), nullable=False),
        sa.Column("dnis", sa.String(length=5), nullable=False),
        sa.Column("panel", sa.String(length=10), nullable=False),
        sa.Column("received_us", sa.BigInteger(), nullable=False),
        sa.Column("pending_us", sa.BigInteger(), nullable=False),
        sa.Column("restore_us", sa.BigInteger(), nullable=True),
        sa.Column("passcode_verified", sa.String(length=1), nullable=False),
        sa.PrimaryKeyConstraint("alarm_id", name=op.f("pk_alarm")),
    )
    with op.batch_alter_table("alarm", schema=None) as batch_op:
        batch_op.create_index(
            "ix_alarm_open", ["account_number", "event_code", "area", "zone"], unique=False
        )
        batch_op.create_index(
            "ix_alarm_queue", ["state", "priority", "pending_us", "alarm_id"], unique=False
        )

    op.create_table(
        "alarm_type",
        sa.Column("code", sa.String(length=3), nullable=False),
        sa.Column("type", sa.String(length=5), nullable=False),
        sa.Column("restore_type", sa.String(length=5), nullable=False),
        sa.Column("priority", sa.String(length=1), nullable=False),
        sa.Column("color", sa.String(length=2), nullable=False),
        sa.Column("category", sa.String(length=1), nullable=False),
        sa.Column("restore_expected", sa.Boolean(), nullable=False),
        sa.Column("hist_text", sa.String(length=60), nullable=False),
        sa.Column("updated_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("code", name=op.f("pk_alarm_type")),
    )
    op.create_table(
        "history",
        sa.Column(
            "event_id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("account_number", sa.String(length=9), nullable=False),
        sa.Column("incident_number", sa.BigInteger(), nullable=False),
        sa.Column("received_us", sa.BigInteger(), nullable=False),
        sa.Column("code", sa.String(length=4), nullable=False),
        sa.Column("event_code", sa.String(length=3), nullable=False),
        sa.Column("area", sa.String(length=2), nullable=False),
        sa.Column("zone", sa.String(length=3), nullable=False),
        sa.Column("type", sa.String(length=5), nullable=False),
        sa.Column("opr", sa.String(length=3), nullable=True),
        sa.Column("alarm_category", sa.String(length=1), nullable=False),
        sa.Column("priority", sa.String(length=1), nullable=False),
        sa.Column("hist_text", sa.String(length=80), nullable=False),
        sa.Column("am_notify", sa.String(length=1), nullable=False),
        sa.Column("pr_checksum", sa.String(length=8), nullable=False),
        sa.Column("second_zone_is", sa.String(length=1), nullable=False),
        sa.Column("color", sa.String(length=2), nullable=False),
        sa.Column("video", sa.String(length=1), nullable=False),
        sa.Column("alarm_id", sa.BigInteger(), nullable=True),
        sa.Column("source", sa.String(length=64), nullable=False),
        sa.Column("destination", sa.String(length=64), nullable=False),
        sa.Column("dnis", sa.String(length=5), nullable=False),
        sa.Column("panel", sa.String(length=10), nullable=False),
        sa.PrimaryKeyConstraint("event_id", name=op.f("pk_history")),
    )
    with op.batch_alter_table("history", schema=None) as batch_op:
        batch_op.create_index(
            "ix_history_account_time", ["account_number", "received_us"], unique=False
        )
        batch_op.create_index("ix_history_incident", ["incident_number"], unique=False)

    op.create_table(
        "sequence",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_sequence")),
    )
    with op.batch_alter_table("account", schema=None) as batch_op:
        batch_op.add_column(sa.Column("test_interval_s", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("last_test_us", sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column("test_alarm_id", sa.BigInteger(), nullable=True))

    with op.batch_alter_table("heartbeat", schema=None) as batch_op:
        batch_op.add_column(sa.Column("alarm_id", sa.BigInteger(), nullable=True))

    # Incident numbers now come from one counter shared by signals and system events.
    signal = sa.table("signal", sa.column("incident_number", sa.BigInteger()))
    sequence = sa.table(
        "sequence", sa.column("name", sa.String()), sa.column("value", sa.BigInteger())
    )
    op.execute(
        sequence.insert().from_select(
            ["name", "value"],
            sa.select(
                sa.literal("incident"), sa.func.coalesce(sa.func.max(signal.c.incident_number), 0)
            ),
        )
    )


def downgrade() -> None:
    with op.batch_alter_table("heartbeat", schema=None) as batch_op:
        batch_op.drop_column("alarm_id")

    with op.batch_alter_table("account", schema=None) as batch_op:
        batch_op.drop_column("test_alarm_id")
        batch_op.drop_column("last_test_us")
        batch_op.drop_column("test_interval_s")

    op.drop_table("sequence")
    with op.batch_alter_table("history", schema=None) as batch_op:
        batch_op.drop_index("ix_history_incident")
        batch_op.drop_index("ix_history_account_time")

    op.drop_table("history")
    op.drop_table("alarm_type")
    with op.batch_alter_table("alarm", schema=None) as batch_op:
        batch_op.drop_index("ix_alarm_queue")
        batch_op.drop_index("ix_alarm_open")

    op.drop_table("alarm")

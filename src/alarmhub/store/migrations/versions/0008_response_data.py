"""Account response data: zones, panel users, contacts, call lists, agencies, calls made

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

_ACCOUNT_COLUMNS = (
    ("police", 16),
    ("fire", 16),
    ("medical", 16),
    ("permit", 40),
    ("duress_hash", 200),
)


def _serial() -> sa.types.TypeEngine[int]:
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    for name, length in _ACCOUNT_COLUMNS:
        op.add_column("account", sa.Column(name, sa.String(length), nullable=True))
    op.add_column(
        "alarm_type",
        sa.Column("contact_list", sa.String(16), nullable=False, server_default=""),
    )
    op.add_column("alarm", sa.Column("not_for_opr", sa.String(3), nullable=True))
    op.create_table(
        "account_zone",
        sa.Column("account_number", sa.String(9), nullable=False),
        sa.Column("zone", sa.String(3), nullable=False),
        sa.Column("area", sa.String(2), nullable=False),
        sa.Column("description", sa.String(40), nullable=False),
        sa.Column("equipment", sa.String(30), nullable=False, server_default=""),
        sa.ForeignKeyConstraint(
            ["account_number"],
            ["account.account_number"],
            name="fk_account_zone_account_number_account",
        ),
        sa.PrimaryKeyConstraint("account_number", "zone", "area", name="pk_account_zone"),
    )
    op.create_table(
        "account_user",
        sa.Column("account_number", sa.String(9), nullable=False),
        sa.Column("user_number", sa.String(3), nullable=False),
        sa.Column("name", sa.String(60), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_number"],
            ["account.account_number"],
            name="fk_account_user_account_number_account",
        ),
        sa.PrimaryKeyConstraint("account_number", "user_number", name="pk_account_user"),
    )
    phones = []
    for n in (1, 2, 3):
        phones += [
            sa.Column(f"phone{n}", sa.String(20), nullable=False, server_default=""),
            sa.Column(f"kind{n}", sa.String(6), nullable=False, server_default=""),
        ]
    op.create_table(
        "contact",
        sa.Column("contact_id", _serial(), primary_key=True, autoincrement=True),
        sa.Column("account_number", sa.String(9), nullable=False),
        sa.Column("name", sa.String(60), nullable=False),
        *phones,
        sa.Column("email", sa.String(120), nullable=False, server_default=""),
        sa.Column("relation", sa.String(30), nullable=False, server_default=""),
        sa.Column("notes", sa.String(500), nullable=False, server_default=""),
        sa.Column("passcode_hash", sa.String(200), nullable=True),
        sa.Column("updated_us", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["account_number"],
            ["account.account_number"],
            name="fk_contact_account_number_account",
        ),
        sa.UniqueConstraint("account_number", "name", name="uq_contact_account_number_name"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "call_list_entry",
        sa.Column("account_number", sa.String(9), nullable=False),
        sa.Column("list_name", sa.String(16), nullable=False),
        sa.Column("contact_id", sa.BigInteger(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["contact_id"], ["contact.contact_id"], name="fk_call_list_entry_contact_id_contact"
        ),
        sa.PrimaryKeyConstraint(
            "account_number", "list_name", "contact_id", name="pk_call_list_entry"
        ),
    )
    op.create_index("ix_call_list_entry_contact", "call_list_entry", ["contact_id"])
    op.create_table(
        "agency",
        sa.Column("code", sa.String(16), primary_key=True),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("name", sa.String(60), nullable=False),
        sa.Column("phone", sa.String(20), nullable=False, server_default=""),
        sa.Column("updated_us", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "call_attempt",
        sa.Column("alarm_id", sa.BigInteger(), nullable=False),
        sa.Column("at_us", sa.BigInteger(), nullable=False),
        sa.Column("contact_id", sa.BigInteger(), nullable=True),
        sa.Column("phone", sa.String(20), nullable=False),
        sa.Column("outcome", sa.String(12), nullable=False),
        sa.Column("opr", sa.String(3), nullable=False),
    )
    op.create_index("ix_call_attempt_alarm", "call_attempt", ["alarm_id"])


def downgrade() -> None:
    op.drop_index("ix_call_attempt_alarm", "call_attempt")
    op.drop_table("call_attempt")
    op.drop_table("agency")
    op.drop_index("ix_call_list_entry_contact", "call_list_entry")
    op.drop_table("call_list_entry")
    op.drop_table("contact")
    op.drop_table("account_user")
    op.drop_table("account_zone")
    with op.batch_alter_table("alarm") as batch:
        batch.drop_column("not_for_opr")
    with op.batch_alter_table("alarm_type") as batch:
        batch.drop_column("contact_list")
    with op.batch_alter_table("account") as batch:
        for name, _ in _ACCOUNT_COLUMNS:
            batch.drop_column(name)

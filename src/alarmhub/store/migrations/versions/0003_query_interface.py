"""query interface

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_user",
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("password_encrypted", sa.String(length=512), nullable=False),
        sa.Column("hmac_only", sa.Boolean(), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("username", name=op.f("pk_api_user")),
    )
    op.create_table(
        "nonce",
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("nonce", sa.String(length=64), nullable=False),
        sa.Column("created_us", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("username", "nonce", name=op.f("pk_nonce")),
    )
    with op.batch_alter_table("nonce", schema=None) as batch_op:
        batch_op.create_index("ix_nonce_created", ["created_us"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("nonce", schema=None) as batch_op:
        batch_op.drop_index("ix_nonce_created")

    op.drop_table("nonce")
    op.drop_table("api_user")

"""The metadata every table belongs to, with the names of its constraints and indexes."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Integer, MetaData

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def serial(name: str) -> Column[int]:
    """A table's own number, counted up by the database (64-bit; SQLite's INTEGER PRIMARY KEY)."""
    return Column(
        name, BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )

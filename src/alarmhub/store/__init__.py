"""Persistence: schema, migrations, the group-commit writer and the query functions."""

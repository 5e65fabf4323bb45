"""The clearly labelled demo setup that ``make run`` provisions on a new database only."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from sqlalchemy.engine import Engine

from alarmhub.core.account import Account
from alarmhub.store import operations, provisioning

DRIVER = "demo"
DNIS = "1234"
MASK = "70####"
TOKEN_NAME = "demo-token"  # noqa: S105 (a name, not a secret)
SOURCE = "demo-site"
OPERATOR = "D1"
CREDENTIALS_FILE = "DEMO-CREDENTIALS.txt"
ACCOUNTS = (
    Account("700001", "DEMO Riverside Bakery", "12 Mill Lane", "Springfield", "IL"),
    Account("700002", "DEMO Harbor Pharmacy", "4 Quay Street", "Springfield", "IL"),
    Account("700042", "DEMO Oak Primary School", "99 Oak Avenue", "Shelbyville", "IL"),
)


def provision(engine: Engine, data_dir: Path) -> str:
    """Create the demo driver, dnis line, accounts and token; write and return the credentials."""
    provisioning.add_driver(engine, DRIVER)
    provisioning.add_dnis(engine, DNIS, MASK)
    provisioning.upsert_accounts(engine, ACCOUNTS)
    token = provisioning.create_token(
        engine, TOKEN_NAME, drivers=[DRIVER], pairs=[f"{SOURCE}:{DRIVER}"]
    )
    password = secrets.token_urlsafe(9)
    operations.add_operator(engine, OPERATOR, "DEMO Operator", "supervisor", password)
    path = data_dir / CREDENTIALS_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(credentials_text(token, password))
    return token


def credentials_text(token: str, password: str) -> str:
    lines = [
        "DEMO SETUP (for trying alarmhub; remove it before real use: revoke the token,"
        f" disable operator {OPERATOR})",
        f"  driver        {DRIVER}",
        f"  dnis          {DNIS} with line mask {MASK} (panel 0042 -> account 700042)",
        "  accounts      " + ", ".join(a.account_number for a in ACCOUNTS),
        f"  bearer token  {token}   (name {TOKEN_NAME})",
        f"  heartbeat     {SOURCE}:{DRIVER}",
        f"  console       operator {OPERATOR} (a supervisor), password {password}  at /console",
        "  try it        .venv/bin/alarmhub send "
        f"{SOURCE}:{DRIVER} --token {token} --dnis {DNIS} --panel 0042 --code E130 --zone 015",
    ]
    return "\n".join(lines) + "\n"


def saved_credentials(data_dir: Path) -> str | None:
    path = data_dir / CREDENTIALS_FILE
    return path.read_text() if path.is_file() else None

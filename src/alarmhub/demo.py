"""The clearly labelled demo setup that ``make run`` provisions on a new database only, and its
removal (``alarmhub demo remove``): its token revoked, its operator disabled, its credentials
file deleted. The banner of each start shows the credentials and a "try it" command for the
node's own address.

The demo's accounts are the fictitious example data set (``examples/``, made by
``alarmhub.example_data``): 300 accounts on the demo's line mask, with their zones, panel users,
contacts on call lists and agencies, loaded through the same CSV import as a station's own data.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import tempfile
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.engine import Engine

from alarmhub import example_data
from alarmhub.clock import now_us
from alarmhub.core.response import Agency, AgencyKind
from alarmhub.settings import DEFAULT_URL
from alarmhub.store import contacts as contact_store
from alarmhub.store import dc09, operator_access, operators, provisioning, response
from alarmhub.store import schema as s

DRIVER = "demo"
DNIS = "1234"
MASK = "70####"
TOKEN_NAME = "demo-token"  # noqa: S105 (a name, not a secret)
SOURCE = "demo-site"
DC09_LINE = ("0", "0")  # DC-09 receiver 0 line 0 goes through the demo's dnis
OPERATOR = "D1"
CREDENTIALS_FILE = "DEMO-CREDENTIALS.txt"
ACCOUNTS = example_data.DEFAULT_ACCOUNTS
FIRST_ACCOUNT = example_data.account_number(1)
LAST_ACCOUNT = example_data.account_number(ACCOUNTS)
TRY_ACCOUNT = example_data.account_number(42)  # the account of the "try it" signal
TRY_IT = "  try it        "  # the banner's line of the "try it" command
TOKEN_LABEL = "  bearer token  "  # noqa: S105 (the label of the credentials line)
_TOKEN = re.compile(f"^{re.escape(TOKEN_LABEL)}(\\S+)", re.MULTILINE)
# what the CSV import loads, in this order (agencies come first, added one by one)
IMPORTS = {
    "account": "accounts.csv",
    "zone": "zones.csv",
    "user": "users.csv",
    "contact": "contacts.csv",
}


def provision(engine: Engine, data_dir: Path) -> str:
    """Create the demo driver, dnis line, accounts and token; write and return the credentials."""
    provisioning.add_driver(engine, DRIVER)
    provisioning.add_dnis(engine, DNIS, MASK)
    dc09.add_line(engine, *DC09_LINE, DNIS)
    load_examples(engine)
    token = provisioning.create_token(
        engine, TOKEN_NAME, drivers=[DRIVER], pairs=[f"{SOURCE}:{DRIVER}"]
    )
    password = secrets.token_urlsafe(9)
    operators.add_operator(engine, OPERATOR, "DEMO Operator", "supervisor", password)
    codes = passcodes(engine)
    path = data_dir / CREDENTIALS_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(credentials_text(token, password, codes))
    return token


def passcodes(engine: Engine) -> tuple[str, str, str]:
    """Give the first contact of the "try it" account's PRIMARY list a passcode, and the
    account a duress code, both random, so that the passcode check can be tried; the contact's
    name, the passcode and the duress code."""
    contacts = contact_store.list_contacts(engine, TRY_ACCOUNT)
    first = next(c for c in contacts if {"name": "PRIMARY", "order": 1} in c["lists"])
    passcode, duress = (f"{secrets.randbelow(10_000):04d}" for _ in range(2))
    while duress == passcode:
        duress = f"{secrets.randbelow(10_000):04d}"
    contact_store.update_contact(
        engine, TRY_ACCOUNT, first["id"], {}, passcode_hash=response.hash_passcode(passcode)
    )
    response.set_account_response(
        engine, TRY_ACCOUNT, {}, duress_hash=response.hash_passcode(duress)
    )
    return first["name"], passcode, duress


def load_examples(engine: Engine, accounts: int = ACCOUNTS) -> dict[str, dict[str, int]]:
    """Load the example data set (of ``accounts`` accounts): its agencies, then its accounts,
    zones, panel users and contacts through the CSV import; say what each import added,
    updated and refused."""
    from alarmhub.cli.csv_import import import_csv

    done: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="alarmhub-demo-") as tmp:
        directory = Path(tmp)
        example_data.write(directory, accounts)
        for code, kind, name, phone in example_data.agencies():
            response.add_agency(engine, Agency(code, AgencyKind(kind), name, phone))
        for kind, file in IMPORTS.items():
            outcome = import_csv(engine, kind, directory / file)
            refused = outcome["refused"]
            done[kind] = {
                "added": outcome["added"],
                "updated": outcome["updated"],
                "refused": len(refused),
            }
            if refused:
                logging.getLogger("alarmhub.demo").warning(
                    "example rows refused", extra={"kind": kind, "first": refused[0]}
                )
    return done


def credentials_text(token: str, password: str, codes: tuple[str, str, str]) -> str:
    name, passcode, duress = codes
    lines = [
        "DEMO SETUP (for trying alarmhub; remove it before real use: alarmhub demo remove)",
        f"  driver        {DRIVER}",
        f"  dnis          {DNIS} with line mask {MASK} (panel 0042 -> account 700042); "
        f"DC-09 receiver {DC09_LINE[0]} line {DC09_LINE[1]} goes through it",
        f"  accounts      {FIRST_ACCOUNT}-{LAST_ACCOUNT}, fictitious, with zones, panel users, "
        "contacts and agencies",
        f"{TOKEN_LABEL}{token}   (name {TOKEN_NAME})",
        f"  heartbeat     {SOURCE}:{DRIVER}",
        f"  console       operator {OPERATOR} (a supervisor), password {password}  at /console",
        f"  passcodes     account {TRY_ACCOUNT}: {name}'s passcode {passcode}; "
        f"its duress code {duress} (answers verified, and raises a DURESS alarm)",
    ]
    return "\n".join(lines) + "\n"


def saved_credentials(data_dir: Path) -> str | None:
    path = data_dir / CREDENTIALS_FILE
    return path.read_text() if path.is_file() else None


def try_it(token: str, url: str) -> str:
    """A command that sends the demo's "try it" signal to the node at ``url``, as printed."""
    address = "" if url == DEFAULT_URL else f" --url {url}"
    return (
        f"ALARMHUB_TOKEN={token} .venv/bin/alarmhub send {SOURCE}:{DRIVER}{address} "
        f"--dnis {DNIS} --panel 0042 --code E110 --zone 015"
    )


def banner(data_dir: Path, url: str) -> str | None:
    """What a start shows of the demo, None once it is removed: the saved credentials (without
    the "try it" line that files of older versions kept) and the "try it" command for the node
    whose signaling interface is at ``url``."""
    text = saved_credentials(data_dir)
    if text is None:
        return None
    kept = "".join(line for line in text.splitlines(True) if not line.startswith(TRY_IT))
    token = _TOKEN.search(kept)
    if token is None:
        return kept
    return f"{kept}{TRY_IT}{try_it(token.group(1), url)}   # KITCHEN SMOKE\n"


def remove(engine: Engine, data_dir: Path) -> dict[str, bool]:
    """Take every demo credential away: revoke the demo token, give the demo operator a random
    password nobody knows and disable it (which ends its sessions), delete the credentials file.
    What was already gone is skipped; the driver, dnis and DEMO accounts stay (they grant no
    access). Says what it changed."""
    with engine.connect() as conn:
        token = conn.execute(
            select(s.token.c.revoked_us).where(s.token.c.name == TOKEN_NAME)
        ).first()
        operator = conn.execute(
            select(s.operator.c.disabled).where(s.operator.c.code == OPERATOR)
        ).first()
    done = {"token_revoked": False, "operator_disabled": False, "credentials_deleted": False}
    if token is not None and token.revoked_us is None:
        provisioning.revoke_token(engine, TOKEN_NAME)
        done["token_revoked"] = True
    if operator is not None:
        operator_access.set_password(engine, OPERATOR, secrets.token_urlsafe(32))
        if not operator.disabled:
            operator_access.set_disabled(engine, OPERATOR, True, now_us())
            done["operator_disabled"] = True
    path = data_dir / CREDENTIALS_FILE
    if path.exists():
        path.unlink()
        done["credentials_deleted"] = True
    return done

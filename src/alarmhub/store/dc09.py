"""DC-09 provisioning and state in the store: receiver lines, account keys and supervision
intervals (CLI), which accounts are provisioned, and the accounts' last messages and failures
(written by the node)."""

from __future__ import annotations

import logging
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.fernet import Fernet
from sqlalchemy import Connection, delete, func, insert, select, update
from sqlalchemy.engine import Engine

from alarmhub import secret_key
from alarmhub.clock import now_us
from alarmhub.core.dc09 import key_problem
from alarmhub.core.errors import ProvisioningError, SecretKeyError
from alarmhub.core.line_mask import apply_mask
from alarmhub.core.signal import valid_dnis
from alarmhub.store import schema
from alarmhub.store.engine import write_transaction
from alarmhub.store.last_seen import write_seen
from alarmhub.store.provisioning import bump_revision

ACCOUNT = schema.account.c
DC09_ACCOUNT = schema.dc09_account.c
DC09_LINE = schema.dc09_line.c

log = logging.getLogger("alarmhub.dc09")
_NUMBER = re.compile(r"[0-9A-Fa-f]{1,6}")
_ACCOUNT = re.compile(r"[0-9A-Za-z]{1,16}")
SUPERVISION_OFF = 0


def line_number(value: str, what: str) -> str:
    """A receiver or line number as stored: hex, upper case, no leading zeros (``0`` for 0)."""
    if not _NUMBER.fullmatch(value):
        raise ProvisioningError(f"invalid {what} {value!r}: must be 1-6 hex digits")
    return value.upper().lstrip("0") or "0"


def account_number(value: str) -> str:
    if not _ACCOUNT.fullmatch(value):
        raise ProvisioningError(f"invalid DC-09 account {value!r}: must be 1-16 letters or digits")
    return value.upper()


# lines ---------------------------------------------------------------------------------------


def add_line(engine: Engine, receiver: str, line: str, dnis: str) -> dict[str, Any]:
    receiver, line = line_number(receiver, "receiver"), line_number(line, "line")
    if not valid_dnis(dnis):
        raise ProvisioningError(
            f"invalid dnis {dnis!r}: must be 1-5 letters or digits, not all zeros"
        )
    with write_transaction(engine) as conn:
        where = (DC09_LINE.receiver == receiver) & (DC09_LINE.line == line)
        if conn.execute(select(DC09_LINE.dnis).where(where)).first():
            raise ProvisioningError(f"receiver {receiver} line {line} is already mapped")
        conn.execute(
            insert(schema.dc09_line).values(
                receiver=receiver, line=line, dnis=dnis, created_us=now_us()
            )
        )
        bump_revision(conn)
    return {"receiver": receiver, "line": line, "dnis": dnis}


def remove_line(engine: Engine, receiver: str, line: str) -> None:
    receiver, line = line_number(receiver, "receiver"), line_number(line, "line")
    with write_transaction(engine) as conn:
        removed = conn.execute(
            delete(schema.dc09_line).where(
                (DC09_LINE.receiver == receiver) & (DC09_LINE.line == line)
            )
        ).rowcount
        if not removed:
            raise ProvisioningError(f"receiver {receiver} line {line} is not mapped")
        bump_revision(conn)


def list_lines(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(DC09_LINE.receiver, DC09_LINE.line, DC09_LINE.dnis).order_by(
                DC09_LINE.receiver, DC09_LINE.line
            )
        ).mappings()
        return [dict(r) for r in rows]


def lines(conn: Connection) -> dict[tuple[str, str], str]:
    """Every mapped line's dnis, by (receiver, line)."""
    return {
        (r, ln): d
        for r, ln, d in conn.execute(select(DC09_LINE.receiver, DC09_LINE.line, DC09_LINE.dnis))
    }


# accounts ------------------------------------------------------------------------------------


def _set(conn: Connection, account: str, **values: Any) -> None:
    t = schema.dc09_account
    if not conn.execute(update(t).where(t.c.account == account).values(**values)).rowcount:
        conn.execute(insert(t).values(account=account, created_us=now_us(), **values))


def set_key(engine: Engine, station_key: Fernet, account: str, key_hex: str | None) -> None:
    """Give ``account`` an AES key (hex), or take it away (None)."""
    account = account_number(account)
    if key_hex is not None:
        problem = key_problem(key_hex)
        if problem:
            raise ProvisioningError(f"invalid key: {problem}")
    stored = secret_key.encrypt(station_key, key_hex.upper()) if key_hex is not None else None
    with write_transaction(engine) as conn:
        if (
            key_hex is None
            and not conn.execute(
                select(DC09_ACCOUNT.account).where(
                    DC09_ACCOUNT.account == account,
                    DC09_ACCOUNT.key_encrypted.is_not(None),
                )
            ).first()
        ):
            raise ProvisioningError(f"DC-09 account {account} has no key")
        _set(conn, account, key_encrypted=stored)
        bump_revision(conn)


def set_supervision(engine: Engine, account: str, seconds: int | None) -> None:
    """Set an account's supervision interval: seconds, 0 for off, None for the default."""
    account = account_number(account)
    if seconds is not None and seconds < 0:
        raise ProvisioningError("the supervision interval must not be negative")
    with write_transaction(engine) as conn:
        _set(conn, account, supervision_s=seconds)
        bump_revision(conn)


@dataclass(frozen=True, slots=True)
class AccountSetup:
    """What the station set for one DC-09 account."""

    key: bytes | None
    supervision_s: int | None


UNUSABLE_KEY = b""  # a key that the station's secret key cannot decrypt: nothing decrypts


def setups(conn: Connection, station_key: Fernet) -> dict[str, AccountSetup]:
    """Every account's key (decrypted) and supervision interval. A key that cannot be decrypted
    (not the station's secret key) is unusable: the account's messages are refused, encrypted
    or not, and the others' go on."""
    result = {}
    for account, stored, interval in conn.execute(
        select(DC09_ACCOUNT.account, DC09_ACCOUNT.key_encrypted, DC09_ACCOUNT.supervision_s)
    ):
        key = None
        if stored:
            try:
                key = bytes.fromhex(secret_key.decrypt(station_key, stored))
            except SecretKeyError as exc:
                log.error("dc09 key unusable", extra={"dc09_account": account, "error": str(exc)})
                key = UNUSABLE_KEY
        result[account] = AccountSetup(key, interval)
    return result


Sender = tuple[str, str, str]  # a DC-09 account and the receiver and line it reported on
_CHUNK = 500


def provisioned(conn: Connection, senders: Iterable[Sender]) -> set[Sender]:
    """Those of ``senders`` whose line maps to a dnis whose line mask gives, for the account,
    an account that exists in account data (the other way to be provisioned, a key or an
    interval set for the DC-09 account, the node knows from :func:`setups`)."""
    line_dnis = lines(conn)
    masks = dict(conn.execute(select(schema.dnis.c.dnis, schema.dnis.c.line_mask)).all())
    numbers: dict[Sender, str] = {}
    for sender in senders:
        account, receiver, line = sender
        mask = masks.get(line_dnis.get((receiver, line), ""))
        number = apply_mask(mask, account) if mask is not None else None
        if number:
            numbers[sender] = number
    wanted = sorted(set(numbers.values()))
    existing: set[str] = set()
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        existing.update(
            conn.execute(
                select(ACCOUNT.account_number).where(ACCOUNT.account_number.in_(chunk))
            ).scalars()
        )
    return {sender for sender, number in numbers.items() if number in existing}


def list_accounts(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(
                DC09_ACCOUNT.account,
                DC09_ACCOUNT.key_encrypted.is_not(None).label("keyed"),
                DC09_ACCOUNT.supervision_s,
                DC09_ACCOUNT.last_message_us,
                DC09_ACCOUNT.receiver,
                DC09_ACCOUNT.line,
                DC09_ACCOUNT.failed_us,
                DC09_ACCOUNT.alarm_id,
            ).order_by(DC09_ACCOUNT.account)
        ).mappings()
        return [dict(r) for r in rows]


@dataclass(frozen=True, slots=True)
class Reported:
    """An account's last message and whether it is in communication failure (node state)."""

    account: str
    last_message_us: int
    receiver: str
    line: str
    failed: bool


def persist(conn: Connection, rows: Sequence[Reported]) -> None:
    """Write the accounts' last messages and failures (keeping the first failure time while an
    account stays down), in bulk."""
    now = now_us()
    write_seen(
        conn,
        schema.dc09_account,
        ("account",),
        "last_message_us",
        [
            {
                "account": row.account,
                "last_message_us": row.last_message_us,
                "receiver": row.receiver,
                "line": row.line,
                "failed_us": now if row.failed else None,
                "created_us": now,
            }
            for row in rows
        ],
        insert_only=("created_us",),
    )


_REPORTED = DC09_ACCOUNT.last_message_us.is_not(None)


def reported(
    conn: Connection, failed_only: bool = False, accounts: Collection[str] | None = None
) -> list[Reported]:
    """Every account that has reported, as last written (or only the failed ones, or only
    those of ``accounts``)."""
    query = select(
        DC09_ACCOUNT.account,
        DC09_ACCOUNT.last_message_us,
        DC09_ACCOUNT.receiver,
        DC09_ACCOUNT.line,
        DC09_ACCOUNT.failed_us,
    ).where(_REPORTED)
    if failed_only:
        query = query.where(DC09_ACCOUNT.failed_us.is_not(None))
    if accounts is not None:
        query = query.where(DC09_ACCOUNT.account.in_(list(accounts)))
    rows = conn.execute(query)
    return [
        Reported(account, last, receiver or "0", line or "0", failed is not None)
        for account, last, receiver, line, failed in rows
    ]


def count_reported(conn: Connection) -> int:
    """How many accounts :func:`reported` would read."""
    query = select(func.count()).select_from(schema.dc09_account).where(_REPORTED)
    return int(conn.execute(query).scalar_one())

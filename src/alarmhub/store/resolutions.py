"""The station's resolution codes: the shipped ones (``core.operations``) with the station's
changes."""

from __future__ import annotations

from sqlalchemy import Connection, delete, insert, select
from sqlalchemy.engine import Engine

from alarmhub.core import operations as ops
from alarmhub.core.errors import ProvisioningError
from alarmhub.store import schema
from alarmhub.store.engine import write_transaction

RESOLUTION = schema.resolution.c


def resolution_codes(conn: Connection) -> dict[str, str]:
    """The station's resolution codes: the shipped ones with the station's changes."""
    codes = dict(ops.DEFAULT_RESOLUTIONS)
    for code, text in conn.execute(select(RESOLUTION.code, RESOLUTION.text)):
        if text is None:
            codes.pop(code, None)
        else:
            codes[code] = text
    return dict(sorted(codes.items()))


def set_resolution(engine: Engine, code: str, text: str | None, now_us: int) -> None:
    """Add or change a resolution code (``text``), or remove it (``None``)."""
    if text is not None:
        problem = ops.resolution_code_problem(code, text)
        if problem:
            raise ProvisioningError(problem)
        text = text.strip()
    with write_transaction(engine) as conn:
        if text is None and code not in resolution_codes(conn):
            raise ProvisioningError(f"no resolution code {code!r}")
        conn.execute(delete(schema.resolution).where(RESOLUTION.code == code))
        if text is not None or code in ops.DEFAULT_RESOLUTIONS:
            conn.execute(insert(schema.resolution).values(code=code, text=text, updated_us=now_us))


def reset_resolution(engine: Engine, code: str) -> None:
    """Back to the shipped text (or gone, for a code the station added)."""
    with write_transaction(engine) as conn:
        conn.execute(delete(schema.resolution).where(RESOLUTION.code == code))

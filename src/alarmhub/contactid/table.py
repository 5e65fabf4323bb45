"""The SIA DC-05 event table, loaded once from the packaged data file ``events.tsv``."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources
from typing import Literal

Address = Literal["zone", "user", "none"]


@dataclass(frozen=True, slots=True)
class EventCode:
    """One Contact ID event code (the three digits after the qualifier)."""

    code: str
    name: str
    classification: str
    address: Address
    event_text: str
    restore_text: str


def _restore_text(name: str, classification: str) -> str:
    """DC-05 names most restores after their event: ``Burglary Restore``. The restore of an
    opening is a closing, which the alarm type's restore TYPE says; its text stays the name."""
    return name if classification.startswith("Open/Close") else f"{name} Restore"


def _load() -> dict[str, EventCode]:
    text = resources.files("alarmhub.contactid").joinpath("events.tsv").read_text("utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    table: dict[str, EventCode] = {}
    for row in csv.DictReader(lines, delimiter="\t"):
        address = row["address"]
        if address not in ("zone", "user", "none"):
            raise ValueError(f"events.tsv: bad address type {address!r} for {row['code']}")
        table[row["code"]] = EventCode(
            code=row["code"],
            name=row["name"],
            classification=row["classification"],
            address=address,  # type: ignore[arg-type]
            event_text=row["event_text"] or row["name"],
            restore_text=row["restore_text"] or _restore_text(row["name"], row["classification"]),
        )
    return table


EVENTS: dict[str, EventCode] = _load()


def lookup(code: str) -> EventCode | None:
    """The event of three digits ``code``, or None when DC-05 does not define it."""
    return EVENTS.get(code)

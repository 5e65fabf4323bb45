"""The signals of a station: which kinds, in which shares, from which accounts.

One place for the benchmarks that describe a station (``run.py`` for ``contact_id``, its storm
search, ``dc09_receiver.py`` for SIA DC-09). Two mixes:

- ``realistic``: the shares of :data:`REALISTIC` (bench/README.md gives the reasoning), sent by
  provisioned accounts: panels ``1``..``accounts`` on the dnis :data:`DNIS`, whose line mask
  :data:`MASK` makes them accounts ``800001``..; the unknown-account share comes from panels
  ``90000``..``90999``, which no account has.
- ``unknown``: the earlier worst case, every signal an ``UNKNOWN ACCOUNT`` alarm (burglary,
  ``E130``, from a line with no account data). Its signals stay those of the earlier figures so
  that they remain comparable: ``contact_id.lua``'s own bodies, and ``dc09_receiver.py``'s frames
  of accounts ``1000``.. on a line whose mask names no account.

A signal is ``(panel, code, area, zone)``; the sequence is drawn from a seeded generator, so every
benchmark and every load process sees the same signals for the same index.
"""

from __future__ import annotations

import csv
import itertools
import json
import random
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DNIS = "5678"
MASK = "8#####"  # panel 1..99999 -> account 800001..899999
ACCOUNTS = 5000  # provisioned accounts the realistic mix is spread over
UNKNOWN_PANEL = 90000  # panels UNKNOWN_PANEL.. +UNKNOWN_PANELS-1: no account has them
UNKNOWN_PANELS = 1000
SEED = 21
MIXES = ("realistic", "unknown")


@dataclass(frozen=True)
class Kind:
    name: str
    percent: float
    codes: tuple[tuple[str, float], ...]  # Contact ID code and its weight within the kind
    handling: str  # what the node does with it (default alarm types)


# (name, share, codes with weights, what routing does) -- the table of bench/README.md
REALISTIC: tuple[Kind, ...] = (
    Kind("opening/closing", 45, (("E401", 1), ("R401", 1)), "history only"),
    Kind("periodic test", 35, (("E602", 1),), "history only"),
    Kind("trouble", 8, (("E301", 50), ("E302", 35), ("E350", 15)), "pending alarm"),
    Kind("trouble restoral", 7, (("R301", 50), ("R302", 35), ("R350", 15)), "restores it"),
    Kind(
        "alarm",
        4,
        (("E130", 70), ("E110", 10), ("E120", 10), ("E100", 5), ("E131", 5)),
        "pending alarm",
    ),
    Kind("unknown account", 1, (), "UNKNOWN ACCOUNT alarm"),
)


@dataclass(frozen=True)
class Signal:
    kind: str
    panel: str  # five digits: the DC-09 account too (3-16 hex digits there)
    code: str  # E/R and the three-digit event
    area: str  # two digits
    zone: str  # three digits: zone or user


def account_number(panel: int) -> str:
    """The account that :data:`MASK` gives panel ``panel``."""
    return f"8{panel:05d}"


def panel_id(panel: int) -> str:
    return f"{panel:05d}"


def realistic_stream(
    accounts: int = ACCOUNTS, first: int = 1, seed: int = SEED
) -> Iterator[Signal]:
    """The realistic mix, without end, from panels ``first``..``first+accounts-1``.

    Openings and closings alternate per account (E401 when armed, R401 when disarmed); a trouble
    restoral restores the oldest trouble not yet restored (same panel, event and zone); the
    unknown-account share carries the codes of the other kinds, in their shares."""
    if first + accounts - 1 >= UNKNOWN_PANEL:
        raise ValueError("provisioned panels must stay below the unknown ones")
    rng = random.Random(seed)
    kinds = [k for k in REALISTIC if k.codes]
    cumulative = list(itertools.accumulate(k.percent for k in REALISTIC))
    known_cumulative = list(itertools.accumulate(k.percent for k in kinds))
    code_cumulative = {k.name: list(itertools.accumulate(w for _, w in k.codes)) for k in kinds}
    armed: dict[int, bool] = {}
    open_troubles: deque[tuple[int, str, str]] = deque()
    while True:
        kind = rng.choices(REALISTIC, cum_weights=cumulative)[0]
        unknown = not kind.codes
        if unknown:
            kind = rng.choices(kinds, cum_weights=known_cumulative)[0]
            panel = UNKNOWN_PANEL + rng.randrange(UNKNOWN_PANELS)
        else:
            panel = first + rng.randrange(accounts)
        name = "unknown account" if unknown else kind.name
        if kind.name == "opening/closing":
            is_armed = armed.get(panel, True)
            armed[panel] = not is_armed
            code = "E401" if is_armed else "R401"
            yield Signal(name, panel_id(panel), code, "01", f"{rng.randrange(1, 9):03d}")
        elif kind.name == "periodic test":
            yield Signal(name, panel_id(panel), "E602", "00", "000")
        elif kind.name == "trouble restoral" and open_troubles and not unknown:
            trouble_panel, event, zone = open_troubles.popleft()
            yield Signal(name, panel_id(trouble_panel), "R" + event, "01", zone)
        else:
            code = rng.choices(kind.codes, cum_weights=code_cumulative[kind.name])[0][0]
            zone = "000" if code[1:] in ("301", "302", "350") else f"{rng.randrange(1, 33):03d}"
            if kind.name == "trouble" and not unknown:
                open_troubles.append((panel, code[1:], zone))
            yield Signal(name, panel_id(panel), code, "01", zone)


def realistic(count: int, accounts: int = ACCOUNTS, first: int = 1) -> list[Signal]:
    """The first ``count`` signals of :func:`realistic_stream`."""
    return list(itertools.islice(realistic_stream(accounts, first), count))


@cache
def realistic_cycle(accounts: int, length: int = 100_000) -> tuple[Signal, ...]:
    """The first ``length`` signals of the realistic mix, for load generators that index them."""
    return tuple(realistic(length, accounts))


def contact_id_body(signal: Signal) -> bytes:
    """The JSON body of ``POST /rx/<source>:<destination>/contact_id`` for ``signal``."""
    return json.dumps(
        {
            "dnis": DNIS,
            "panel": signal.panel,
            "code": signal.code,
            "area": signal.area,
            "zone_or_user": signal.zone,
        },
        separators=(",", ":"),
    ).encode()


def body_at(index: int, accounts: int) -> bytes:
    """Signal ``index`` of the realistic mix (cycling) as a ``contact_id`` body."""
    cycle = realistic_cycle(accounts)
    return contact_id_body(cycle[index % len(cycle)])


def write_accounts_csv(path: Path, accounts: int, first: int = 1) -> None:
    """The CSV of ``alarmhub account import`` for panels ``first``..``first+accounts-1``."""
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["account", "name"])
        for panel in range(first, first + accounts):
            out.writerow([account_number(panel), f"BENCH ACCOUNT {panel}"])


def shares(signals: list[Signal]) -> dict[str, float]:
    """Percent of each kind among ``signals`` (to print what was sent)."""
    counts: dict[str, int] = {}
    for signal in signals:
        counts[signal.kind] = counts.get(signal.kind, 0) + 1
    return {k.name: 100 * counts.get(k.name, 0) / max(1, len(signals)) for k in REALISTIC}

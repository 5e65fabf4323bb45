"""Fictitious station data for trying alarmhub and for measuring it: accounts, their zones, panel
users and contacts with call lists, and the agencies that answer for them.

Everything is made up and marked so: every account's name starts with ``DEMO``, streets and
towns are invented, phone numbers are in the range reserved for fiction (555-0100 to 555-0199)
and e-mail addresses are at ``example.com``. The data is the same for the same seed, and one
account's rows do not depend on how many accounts are written, so account 700042 of a set of
300 is account 700042 of a set of 100,000.

Rows are written to the files as each account is made, so a set of 100,000 accounts takes no
more memory than a set of ten. The files have the header rows the import commands read:
``accounts.csv``, ``zones.csv``, ``users.csv``, ``contacts.csv`` and ``agencies.csv``.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_ACCOUNTS = 300
DEFAULT_SEED = 17
MASKED_ACCOUNTS = 9999  # 700001-709999 fit the demo's line mask 70####

ACCOUNT_COLUMNS = ("account", "name", "street", "city", "state")
AGENCY_ACCOUNT_COLUMNS = ("police", "fire", "medical", "permit")
ZONE_COLUMNS = ("account", "zone", "area", "description", "equipment")
USER_COLUMNS = ("account", "user", "name")
CONTACT_COLUMNS = (
    "account", "name", "phone1", "kind1", "phone2", "kind2", "phone3", "kind3",
    "email", "relation", "notes", "list", "order",
)  # fmt: skip
AGENCY_COLUMNS = ("code", "kind", "name", "phone")
FILES = ("accounts.csv", "zones.csv", "users.csv", "contacts.csv", "agencies.csv")

STATE = "IL"
TOWNS = (  # name, agency code prefix
    ("Millbrook", "MLB"),
    ("Eastwick Falls", "EWF"),
    ("Harlow Springs", "HSP"),
    ("Dunmore Crossing", "DMC"),
)
STREETS = (
    "Quillfeather Lane", "Brackenridge Road", "Tumbledown Way", "Larkspur Avenue",
    "Copperkettle Street", "Fenwick Row", "Mossbank Drive", "Hollowmere Court",
    "Saltmarsh Road", "Wrenfield Avenue", "Thistledown Lane", "Gristmill Street",
    "Amberleigh Drive", "Cobblestone Way", "Juniper Hollow Road", "Marrowby Place",
)  # fmt: skip
AREA_CODES = ("217", "309", "618", "779", "815")
FIRST_NAMES = (
    "Alex", "Beatrice", "Carlos", "Dana", "Elena", "Farid", "Grace", "Hiro", "Imani", "Jonas",
    "Kara", "Luis", "Mei", "Noah", "Olga", "Priya", "Quentin", "Rosa", "Samir", "Tess", "Umar",
    "Vera", "Wes", "Yara", "Zoe",
)  # fmt: skip
LAST_NAMES = (
    "Abbott", "Bramley", "Castellano", "Delacroix", "Eastwood", "Fairbanks", "Goodwin",
    "Hartley", "Ivers", "Jansen", "Kowalski", "Lindqvist", "Moreno", "Nakamura", "Okafor",
    "Pennington", "Quinlan", "Rasmussen", "Sorensen", "Thorne", "Underhill", "Vasquez",
    "Whitaker", "Yamada", "Zielinski", "Haddad", "Novak", "Brennan",
)  # fmt: skip
PLACES = (
    "Riverside", "Harbor", "Oak", "Maple", "Willow", "Cedar", "Birch", "Lakeview", "Hilltop",
    "Northgate", "Old Mill", "Sunrise", "Bluebell", "Granite", "Copper", "Meadow", "Pinecrest",
    "Foxglove", "Elmwood", "Kingfisher",
)  # fmt: skip
TRADES = (
    "Bakery", "Pharmacy", "Dental Clinic", "Hardware", "Bookshop", "Florist", "Veterinary Clinic",
    "Diner", "Auto Repair", "Print Shop", "Laundromat", "Fitness Studio", "Music School",
    "Pizzeria", "Jewelers", "Optician", "Garden Center", "Storage", "Primary School", "Library",
    "Credit Union", "Pet Grooming",
)  # fmt: skip
BUSINESS_SHARE = 0.4

# number, description, equipment, chance a premises has it (about 8 zones on average)
ZONES = (
    ("001", "FRONT DOOR", "DOOR CONTACT", 1.0),
    ("002", "BACK DOOR", "DOOR CONTACT", 0.9),
    ("003", "GARAGE DOOR", "OVERHEAD DOOR CONTACT", 0.45),
    ("004", "PATIO DOOR", "DOOR CONTACT", 0.3),
    ("005", "SIDE DOOR", "DOOR CONTACT", 0.25),
    ("006", "BASEMENT WINDOW", "WINDOW CONTACT", 0.15),
    ("007", "FRONT WINDOWS", "WINDOW CONTACT", 0.2),
    ("010", "HALL MOTION", "PIR MOTION DETECTOR", 0.85),
    ("011", "LIVING ROOM MOTION", "PIR MOTION DETECTOR", 0.4),
    ("012", "OFFICE MOTION", "PIR MOTION DETECTOR", 0.3),
    ("013", "BASEMENT MOTION", "PIR MOTION DETECTOR", 0.2),
    ("014", "FRONT GLASS BREAK", "GLASS BREAK DETECTOR", 0.25),
    ("015", "KITCHEN SMOKE", "SMOKE DETECTOR", 1.0),
    ("016", "HALL SMOKE", "SMOKE DETECTOR", 0.4),
    ("017", "UPSTAIRS SMOKE", "SMOKE DETECTOR", 0.3),
    ("018", "FURNACE HEAT", "HEAT DETECTOR", 0.15),
    ("019", "CO DETECTOR", "CARBON MONOXIDE DETECTOR", 0.25),
    ("020", "BASEMENT WATER", "FLOOD SENSOR", 0.25),
    ("021", "LOW TEMPERATURE", "FREEZE SENSOR", 0.15),
    ("022", "PANIC BUTTON", "HOLD-UP BUTTON", 0.1),
)
# a business in two areas describes one zone differently in each
AREA_ZONE = ("030", (("1", "SHOWROOM MOTION"), ("2", "STOCKROOM MOTION")), "PIR MOTION DETECTOR")
AREA_SHARE = 0.2
NOTES = (
    "Has keys and the alarm code",
    "Call the mobile first",
    "Not before 07:00 unless fire",
    "Speaks Spanish and English",
    "Lives two streets away",
    "Will meet police on site",
)


@dataclass(frozen=True, slots=True)
class Person:
    name: str
    phones: tuple[tuple[str, str], ...]
    relation: str
    notes: str

    @property
    def email(self) -> str:
        return self.name.lower().replace(" ", ".") + "@example.com"


def account_number(index: int) -> str:
    """The number of the ``index``-th account (from 1): 700001-709999 fit the demo's line mask
    ``70####``; further accounts are 8 digits (70010000 and on)."""
    return f"70{index:04d}" if index <= MASKED_ACCOUNTS else f"7{index:07d}"


def agencies() -> Iterator[tuple[str, str, str, str]]:
    """Each town's police, fire and medical dispatch points: code, kind, name, phone."""
    rng = random.Random("agencies")
    for town, prefix in TOWNS:
        for kind, suffix, what in (
            ("police", "PD", "Police Department"),
            ("fire", "FD", "Fire Department"),
            ("medical", "EMS", "Ambulance Service"),
        ):
            yield f"{prefix}-{suffix}", kind, f"DEMO {town} {what}", _phone(rng)


def _phone(rng: random.Random) -> str:
    return f"({rng.choice(AREA_CODES)}) 555-01{rng.randrange(100):02d}"


def _person(rng: random.Random, relation: str, last: str | None = None) -> Person:
    name = f"{rng.choice(FIRST_NAMES)} {last or rng.choice(LAST_NAMES)}"
    phones = [(_phone(rng), "mobile")]
    if relation in ("owner", "neighbour") and rng.random() < 0.6:
        phones.append((_phone(rng), "home"))
    if relation in ("owner", "manager", "keyholder") and rng.random() < 0.4:
        phones.append((_phone(rng), "work"))
    notes = rng.choice(NOTES) if rng.random() < 0.2 else ""
    return Person(name, tuple(phones), relation, notes)


def _people(rng: random.Random, business: bool, last: str) -> list[Person]:
    """Three different people (their names are the key of a contact)."""
    relations = (
        ("manager", "owner", "keyholder") if business else ("owner", "keyholder", "neighbour")
    )
    people: list[Person] = []
    for relation in relations:
        family = last if relation == "owner" and not business else None
        person = _person(rng, relation, family)
        while any(p.name == person.name for p in people):
            person = _person(rng, relation)
        people.append(person)
    return people


def account_rows(index: int, seed: int = DEFAULT_SEED) -> dict[str, list[list[str]]]:
    """The rows of one account, by file (``agencies.csv`` aside): the same for the same seed."""
    rng = random.Random(f"{seed}:{index}")
    number = account_number(index)
    business = rng.random() < BUSINESS_SHARE
    last = rng.choice(LAST_NAMES)
    name = f"DEMO {rng.choice(PLACES)} {rng.choice(TRADES)}" if business else f"DEMO {last} Home"
    town, prefix = rng.choice(TOWNS)
    street = f"{rng.randrange(1, 400)} {rng.choice(STREETS)}"
    permit = f"AP-{prefix}-{rng.randrange(10000, 99999)}" if rng.random() < 0.5 else ""
    account = [number, name, street, town, STATE, f"{prefix}-PD", f"{prefix}-FD"]
    account += [f"{prefix}-EMS", permit]

    zones = [
        [number, zone, "", description, equipment]
        for zone, description, equipment, chance in ZONES
        if rng.random() < chance
    ]
    if business and rng.random() < AREA_SHARE:
        zone, described, equipment = AREA_ZONE
        zones += [[number, zone, area, description, equipment] for area, description in described]

    people = _people(rng, business, last)
    users = [[number, f"{n:03d}", p.name] for n, p in enumerate(people[:2], start=1)]
    if rng.random() < 0.4:
        users.append([number, "003", "CLEANING SERVICE" if not business else people[2].name])

    places = [(p, "PRIMARY", order) for order, p in enumerate(people, start=1)]
    if rng.random() < (0.5 if business else 0.1):
        places += [(people[2 if business else 0], "FIRE", 1)]
        if business:
            places += [(people[0], "FIRE", 2)]
    if business and rng.random() < 0.4:
        places += [(people[0], "OPENCLOSE", 1)]
    contacts = [_contact_row(number, p, list_name, order) for p, list_name, order in places]
    return {
        "accounts.csv": [account],
        "zones.csv": zones,
        "users.csv": users,
        "contacts.csv": contacts,
    }


def _contact_row(number: str, person: Person, list_name: str, order: int) -> list[str]:
    phones = [x for phone in person.phones for x in phone]
    phones += [""] * (6 - len(phones))
    return [number, person.name, *phones, person.email, person.relation, person.notes, list_name,
            str(order)]  # fmt: skip


def write(
    out: Path,
    accounts: int = DEFAULT_ACCOUNTS,
    seed: int = DEFAULT_SEED,
    agency_columns: bool = True,
) -> dict[str, int]:
    """Write the data set of ``accounts`` accounts into the directory ``out`` (made if missing)
    and say how many rows each file has. ``agency_columns`` adds each account's police, fire
    and medical agency and its permit to ``accounts.csv``."""
    out.mkdir(parents=True, exist_ok=True)
    counts = dict.fromkeys(FILES, 0)
    headers: dict[str, tuple[str, ...]] = {
        "accounts.csv": ACCOUNT_COLUMNS + (AGENCY_ACCOUNT_COLUMNS if agency_columns else ()),
        "zones.csv": ZONE_COLUMNS,
        "users.csv": USER_COLUMNS,
        "contacts.csv": CONTACT_COLUMNS,
        "agencies.csv": AGENCY_COLUMNS,
    }
    account_width = len(headers["accounts.csv"])
    with ExitStack() as stack:
        writers: dict[str, Any] = {}
        for name in FILES:
            fh = stack.enter_context((out / name).open("w", newline="", encoding="utf-8"))
            writers[name] = csv.writer(fh, lineterminator="\n")
            writers[name].writerow(headers[name])
        for agency in agencies():
            writers["agencies.csv"].writerow(agency)
            counts["agencies.csv"] += 1
        for index in range(1, accounts + 1):
            for name, rows in account_rows(index, seed).items():
                if name == "accounts.csv":
                    rows = [row[:account_width] for row in rows]
                writers[name].writerows(rows)
                counts[name] += len(rows)
    return counts

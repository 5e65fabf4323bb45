"""Call lists in the store, on both databases: a contact placed at an order moves those after
it down, one taken off (or removed) moves them up, the list is always numbered 1, 2, 3...; a
contact's name is its account's own; what the alarm screen reads of a list."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from alarmhub.core.account import Account
from alarmhub.core.errors import ProvisioningError
from alarmhub.core.response import CallOutcome, Contact, Phone
from alarmhub.store import alarm_response, provisioning
from alarmhub.store import contacts as contact_store
from alarmhub.store.engine import open_engine, write_transaction
from tests.support.database import database_url

ACCOUNT = "700001"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = open_engine(database_url(tmp_path, "lists"))
    provisioning.add_account(engine, Account(ACCOUNT, "Oak School"))
    yield engine
    engine.dispose()


def add(engine: Engine, name: str, *places: contact_store.Placement) -> int:
    return contact_store.add_contact(engine, Contact(ACCOUNT, name, (Phone("555-0100"),)), places)


def primary(engine: Engine) -> list[tuple[str, int]]:
    with engine.connect() as conn:
        return [(c["name"], c["order"]) for c in alarm_response.call_list(conn, ACCOUNT, "PRIMARY")]


def test_a_place_taken_moves_the_others_down_and_the_list_stays_numbered(
    engine: Engine,
) -> None:
    ann = add(engine, "Ann")
    add(engine, "Bob")
    add(engine, "Cy", contact_store.placement("primary", 1))
    assert primary(engine) == [("Cy", 1), ("Ann", 2), ("Bob", 3)]
    contact_store.update_contact(engine, ACCOUNT, ann, {}, [contact_store.placement("PRIMARY", 99)])
    assert primary(engine) == [("Cy", 1), ("Bob", 2), ("Ann", 3)]


def test_leaving_a_list_or_being_removed_moves_the_others_up(engine: Engine) -> None:
    ann = add(engine, "Ann")
    bob = add(engine, "Bob", contact_store.placement("PRIMARY"), contact_store.placement("FIRE"))
    add(engine, "Cy")
    contact_store.update_contact(engine, ACCOUNT, ann, {}, off_lists=["primary"])
    assert primary(engine) == [("Bob", 1), ("Cy", 2)]
    contact_store.remove_contact(engine, ACCOUNT, bob)
    assert primary(engine) == [("Cy", 1)]
    with engine.connect() as conn:
        assert alarm_response.call_list(conn, ACCOUNT, "FIRE") == []
        assert alarm_response.list_sizes(conn, [ACCOUNT]) == {ACCOUNT: {"PRIMARY": 1}}


def test_a_contact_s_name_is_its_own_within_the_account(engine: Engine) -> None:
    add(engine, "Ann")
    bob = add(engine, "Bob")
    with pytest.raises(ProvisioningError, match="already has a contact named 'Ann'"):
        add(engine, "Ann")
    with pytest.raises(ProvisioningError, match="already has a contact named 'Ann'"):
        contact_store.update_contact(engine, ACCOUNT, bob, {"name": "Ann"})
    assert contact_store.update_contact(engine, ACCOUNT, bob, {"name": "Bob B"})["name"] == "Bob B"


def test_the_alarm_screen_marks_the_calls_and_the_next_contact(engine: Engine) -> None:
    ann = add(engine, "Ann")
    bob = add(engine, "Bob")
    with write_transaction(engine) as conn:
        alarm_response.record_call(conn, 5, "OP1", 1, "555-0100", CallOutcome.BUSY, ann)
    with engine.connect() as conn:
        screen = alarm_response.for_alarm(conn, ACCOUNT, "PRIMARY", "001", "01", 5)
        other = alarm_response.for_alarm(conn, ACCOUNT, "PRIMARY", "001", "01", 6)
    assert screen["call_list"]["next"] == bob
    assert [len(c["calls"]) for c in screen["call_list"]["contacts"]] == [1, 0]
    assert screen["calls"][0]["outcome"] == "busy"
    assert other["call_list"]["next"] == ann  # calls belong to their alarm
    assert screen["zone"] is None and screen["agencies"] == [] and screen["permit"] == ""

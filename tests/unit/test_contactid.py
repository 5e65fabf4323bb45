"""``alarmhub.contactid``: the SIA DC-05 event table shipped with the package and the check of
one event's fields."""

from __future__ import annotations

import pytest

from alarmhub.contactid import EVENTS, LETTERS, contact_id_event, lookup


def test_table_has_every_code() -> None:
    assert len(EVENTS) == 322


def test_codes_are_three_digits_and_keys_match() -> None:
    for key, event in EVENTS.items():
        assert key == event.code
        assert len(key) == 3
        assert key.isdigit()


def test_every_address_is_zone_user_or_none() -> None:
    addresses = {event.address for event in EVENTS.values()}
    assert addresses == {"zone", "user", "none"}


def test_every_event_has_a_name_and_texts() -> None:
    for event in EVENTS.values():
        assert event.name
        assert event.classification
        assert event.event_text
        assert event.restore_text


@pytest.mark.parametrize(
    ("code", "name", "address"),
    [
        ("130", "Burglary", "zone"),
        ("121", "Duress", "user"),
        ("110", "Fire", "zone"),
        ("100", "Medical", "zone"),
        ("120", "Panic", "zone"),
        ("401", "O/C By", "user"),
        ("342", "Module AC Loss", "none"),
    ],
)
def test_known_codes(code: str, name: str, address: str) -> None:
    event = lookup(code)
    assert event is not None
    assert event.name == name
    assert event.address == address


@pytest.mark.parametrize("code", ["000", "999", "199", "E130", "13", "1300", ""])
def test_unknown_codes(code: str) -> None:
    assert lookup(code) is None


def test_restore_text_defaults_to_name_and_restore() -> None:
    assert EVENTS["130"].restore_text == "Burglary Restore"
    assert EVENTS["358"].restore_text != EVENTS["358"].name
    # the restore of an opening is a closing: its text stays the name
    assert EVENTS["401"].restore_text == EVENTS["401"].name


def test_contact_id_events_are_checked_field_by_field() -> None:
    code = next(iter(EVENTS))
    for letter in LETTERS:
        assert contact_id_event(letter, code, "01", "015") == (letter + code, "01", "015")
    assert isinstance(contact_id_event("X", code, "01", "015"), str)
    assert isinstance(contact_id_event("E", "13", "01", "015"), str)
    assert isinstance(contact_id_event("E", "999", "01", "015"), str)
    assert isinstance(contact_id_event("E", code, "0A", "015"), str)
    assert isinstance(contact_id_event("E", code, "01", "15"), str)
    assert isinstance(contact_id_event("E", code, "01", "١٢٣"), str)  # non-ASCII digits

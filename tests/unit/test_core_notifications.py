"""Notifications' rules: which kind an event or a signal is, templates and their checks, the
rendered messages (header-safe whatever a name holds, the HTML part escaped, the time in the
account's zone) and e-mail addresses."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import pytest

from alarmhub.core import events, notifications
from alarmhub.core.notifications import (
    EMAIL,
    SMS,
    Occurrence,
    Templates,
    email_problem,
    event_kind,
    header_safe,
    render,
    signal_kind,
    template_problem,
)

AT_US = 1_795_000_000_000_000  # 2026-11-18 11:06:40 UTC


@pytest.mark.parametrize(
    ("alarm_type", "expected"),
    [("BURG", "alarm"), ("FIRE", "alarm"), ("TRBL", "trouble"), ("SUPV", "trouble"),
     ("BATT", "trouble"), ("FTT", "trouble"), ("COMFL", "trouble"), ("LTO", "schedule"),
     ("LTC", "schedule"), ("UNOPN", "schedule"), ("ECLOS", "schedule")],
)  # fmt: skip
def test_an_alarm_entering_pending_is_of_its_types_kind(alarm_type: str, expected: str) -> None:
    data = {"type": alarm_type, "state": "pending", "hist_text": "X"}
    assert event_kind(events.ALARM_RAISED, "1234", data) == expected


def test_alarms_on_the_storm_list_and_the_stations_own_notify_nobody() -> None:
    assert event_kind(events.ALARM_RAISED, "1234", {"type": "BURG", "state": "storm"}) is None
    assert event_kind(events.ALARM_RAISED, "", {"type": "UNKN", "state": "pending"}) is None


def test_tests_start_and_end_are_the_test_kind_and_other_events_none() -> None:
    assert event_kind(events.TEST_STARTED, "1234", {}) == "test"
    assert event_kind(events.TEST_ENDED, "1234", {}) == "test"
    for kind in (events.ALARM_TAKEN, events.ALARM_RESOLVED, events.ALARM_RESTORED,
                 events.SUPERVISION_FAILED, events.SUPERVISION_RESTORED):  # fmt: skip
        assert event_kind(kind, "1234", {"type": "FTT", "state": "pending"}) is None


def test_openings_and_closings_gone_to_history_are_openclose_not_on_test() -> None:
    assert signal_kind("E401", "HISTORY") == "openclose"
    assert signal_kind("R401", "HISTORY") == "openclose"
    assert signal_kind("E401", "ONTEST") is None
    assert signal_kind("E401", "RUNAWAY") is None
    assert signal_kind("E130", "HISTORY") is None


def test_a_tests_text_is_its_history_records() -> None:
    started = {"started": "2026-11-28T10:00:00.000Z", "ends": "2026-11-28T11:00:00.000Z",
               "by": "J SMITH", "zones": [], "types": [], "reason": ""}  # fmt: skip
    assert notifications.event_text(events.TEST_STARTED, started) == "ON TEST 60 MIN BY J SMITH"
    assert notifications.event_text(events.TEST_ENDED, {"ended_by": None}) == "RETURN FROM TEST"
    assert notifications.event_text(events.ALARM_RAISED, {"hist_text": "BURGLARY"}) == "BURGLARY"


def test_the_default_email_holds_account_text_name_zone_and_local_time() -> None:
    occurrence = Occurrence("1234", "BURGLARY ZONE 003", AT_US, "ACME SHOP", "003 FRONT DOOR")
    message = render(notifications.DEFAULTS["alarm", EMAIL], occurrence, ZoneInfo("Europe/Paris"))
    assert message.subject == "1234 BURGLARY ZONE 003"
    assert "ACME SHOP" in message.body
    assert "003 FRONT DOOR" in message.body
    assert "2026-11-18 12:06:40 CET" in message.body
    assert "ACME SHOP" in message.html and "<html>" in message.html


def test_a_line_whose_placeholders_are_all_empty_is_left_out() -> None:
    occurrence = Occurrence("1234", "OPENING BY USER 001", AT_US, "ACME SHOP")
    message = render(notifications.DEFAULTS["openclose", EMAIL], occurrence, ZoneInfo("UTC"))
    assert "Zone:" not in message.body
    assert "Account: 1234 ACME SHOP" in message.body


def test_the_sms_holds_the_account_and_the_text() -> None:
    occurrence = Occurrence("1234", "FIRE ZONE 001", AT_US, "ACME SHOP")
    message = render(notifications.DEFAULTS["alarm", SMS], occurrence, ZoneInfo("UTC"))
    assert message.body == "1234 FIRE ZONE 001"


HOSTILE = "Evil\r\nBcc: victim@example.com\r\n\r\n<script>x</script>\x00\x1b[2J\u2028Next"


def test_hostile_names_and_descriptions_cannot_inject_headers_or_markup() -> None:
    occurrence = Occurrence("1234", HOSTILE, AT_US, HOSTILE, HOSTILE)
    templates = Templates("$account $text $name $zone", notifications.DEFAULTS["alarm", EMAIL].body)
    message = render(templates, occurrence, ZoneInfo("UTC"))
    for forbidden in ("\r", "\n", "\x00", "\x1b", "\u2028"):
        assert forbidden not in message.subject
    assert "Bcc: victim@example.com" in message.subject  # kept, as text on the one line
    assert "\nBcc:" not in message.body
    assert "<script>" not in message.html and "&lt;script&gt;" in message.html
    assert "\x00" not in message.body and "\x1b" not in message.body


def test_header_safe_makes_every_control_character_a_space() -> None:
    assert header_safe("a\rb\nc\td\x7fe\x85f\u200bg") == "a b c d e f g"


def test_a_stations_template_is_checked() -> None:
    ok = Templates("ALARM $account", "$text at $time in ${zone}, $$5")
    assert template_problem(EMAIL, ok) is None
    unknown = template_problem(EMAIL, Templates("$account $secret", "$text"))
    assert unknown is not None and "secret" in unknown and "$account" in unknown
    assert template_problem(EMAIL, Templates("$account", "$ 5")) is not None  # a bare $
    assert template_problem(EMAIL, Templates("", "$text")) is not None
    assert template_problem(SMS, Templates("subject", "$text")) is not None
    assert template_problem(SMS, Templates("", "$account $text")) is None
    assert notifications.key_problem("alarm", "fax") is not None
    assert notifications.key_problem("burglary", "sms") is not None


@pytest.mark.parametrize(
    "address",
    ["a@example.com", "first.last+tag@mail.example.org"],
)
def test_an_address_is_accepted(address: str) -> None:
    assert email_problem(address) is None


@pytest.mark.parametrize(
    "address",
    ["", "no-at-sign", "a@b\r\nBcc: x@y", "a b@example.com", "a@", "@example.com",
     "x@example.com\n", "Name <a@example.com>", "a@example.com, b@example.com"],
)  # fmt: skip
def test_an_address_is_refused(address: str) -> None:
    assert email_problem(address) is not None


def test_the_default_sender_is_the_machines_name_or_localhost() -> None:
    from alarmhub.core.notifications import default_sender, email_problem

    assert default_sender("Node-1.Example.com") == "alarmhub@node-1.example.com"
    for odd in ("", "bad host\r\nBcc: x@y", "under_score..x"):
        sender = default_sender(odd)
        assert email_problem(sender) is None and "\n" not in sender

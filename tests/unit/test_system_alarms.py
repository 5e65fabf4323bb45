"""The texts of the alarms the station raises itself, as operators and integrators read them."""

from __future__ import annotations

from alarmhub.core import system_alarms
from alarmhub.core.alarm_types import ALARM_TEXT_MAX, cut_text
from alarmhub.core.dc09 import line_name
from alarmhub.core.outputs import NAME_MAX
from alarmhub.dc09.receiver import PANEL_MAX


def test_each_text_starts_with_its_alarm_type_and_names_what_it_is_about() -> None:
    assert system_alarms.fail_to_test() == "FAIL TO TEST"
    assert system_alarms.source_failure("site1", "rx1") == "SOURCE FAILURE site1:rx1"
    assert (
        system_alarms.communication_failure("1234", 1, 2) == "COMMUNICATION FAILURE DC09 #1234 R1L2"
    )
    assert system_alarms.runaway("30 signals in 5 min") == "RUNAWAY 30 signals in 5 min"
    assert system_alarms.unknown_account("BURGLARY Z015") == "UNKNOWN ACCOUNT BURGLARY Z015"


def test_a_dc09_line_reads_receiver_then_line() -> None:
    assert line_name(0, 0) == "R0L0"
    assert line_name("12", "3") == "R12L3"


def test_receiver_texts_name_the_link_and_are_cut_as_the_router_cuts() -> None:
    assert system_alarms.receiver_link_failure("rx1") == "RECEIVER LINK FAILURE rx1"
    assert (
        system_alarms.receiver_event("rx1", "#0000|NRU0000") == "RECEIVER EVENT rx1 #0000|NRU0000"
    )
    assert system_alarms.receiver_data("rx1", "5011[DC4]") == "RECEIVER DATA rx1 5011[DC4]"
    long = system_alarms.receiver_data("rx1", "X" * 200)
    assert long == cut_text(long) == f"RECEIVER DATA rx1 {'X' * 200}"[:ALARM_TEXT_MAX]
    assert len(long) == ALARM_TEXT_MAX


def test_the_automation_output_failure_names_the_output_and_fits_an_alarm() -> None:
    text = system_alarms.automation_output_failure("x" * NAME_MAX)
    assert text == "AUTOMATION OUTPUT FAILURE " + "x" * NAME_MAX
    assert len(text) <= ALARM_TEXT_MAX


def test_output_cannot_send_names_the_output_the_panel_and_the_code_and_fits_an_alarm() -> None:
    text = system_alarms.output_cannot_send("every", "ABCDEFGHIJ", "E130")
    assert text == "OUTPUT CANNOT SEND every ABCDEFGHIJ E130"
    assert text.startswith(system_alarms.output_cannot_send_of("every"))
    assert not text.startswith(system_alarms.output_cannot_send_of("ever"))
    longest = system_alarms.output_cannot_send("x" * NAME_MAX, "Z" * PANEL_MAX, "E130")
    assert longest == f"OUTPUT CANNOT SEND {'x' * NAME_MAX} {'Z' * PANEL_MAX} E130"
    assert len(longest) <= ALARM_TEXT_MAX  # a signal's panel and code are never cut

"""The rules of an automation output (``core.outputs``): what its settings may be, the accounts
it forwards, its frames' exact bytes (decisions section 12), and the Contact ID events sent for
what alarmhub knows itself of an account."""

from __future__ import annotations

from dataclasses import replace

import pytest

from alarmhub.contactid import EVENTS
from alarmhub.core.outputs import (
    OWN_EVENTS,
    OutputSettings,
    output_problem,
    signal_frame,
    wanted,
)

DC4 = b"\x14"
ADDRESSES = ("10.0.0.1:1025", "[::1]:1025")
CONNECT = OutputSettings(0, "to-automation", "surgard", "connect", ADDRESSES, None, None, (),
                         1, 1, 1, 4.0, 30)  # fmt: skip
SERIAL = replace(CONNECT, transport="serial", addresses=("/dev/ttyS0",), baud=9600, framing="7E1")


def test_valid_outputs_have_no_problem() -> None:
    assert output_problem(CONNECT) is None
    assert output_problem(SERIAL) is None
    listen = replace(
        CONNECT, transport="listen", addresses=("0.0.0.0:1025",), accounts=("70", "C-")
    )
    assert output_problem(listen) is None
    three = replace(CONNECT, receiver=99, line=999, line_digits=3, ack_timeout_seconds=0.001)
    assert output_problem(three) is None
    assert output_problem(replace(CONNECT, receiver=0, line=0, heartbeat_seconds=1)) is None
    longest = replace(CONNECT, ack_timeout_seconds=3600.0, heartbeat_seconds=86400)
    assert output_problem(longest) is None


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"name": ""}, "invalid output name"),
        ({"name": "a b"}, "invalid output name"),
        ({"name": "x" * 41}, "invalid output name"),
        ({"protocol": "ademco685"}, "invalid protocol"),
        ({"transport": "udp"}, "invalid transport"),
        ({"addresses": ()}, "needs an address"),
        ({"addresses": ("host",)}, "HOST:PORT"),
        ({"addresses": ("host:0",)}, "HOST:PORT"),
        ({"addresses": ("host:65536",)}, "HOST:PORT"),
        ({"addresses": (":1025",)}, "HOST:PORT"),
        ({"transport": "listen"}, "backup addresses are for connect outputs only"),
        ({"baud": 9600}, "serial outputs only"),
        ({"accounts": ("70 1",)}, "invalid account prefix"),
        ({"accounts": ("1234567890",)}, "invalid account prefix"),
        ({"receiver": 100}, "invalid receiver"),
        ({"receiver": -1}, "invalid receiver"),
        ({"line_digits": 4}, "invalid line digits"),
        ({"line_digits": 0}, "invalid line digits"),
        ({"line": 10}, "does not fit 1 digit"),
        ({"line": 100, "line_digits": 2}, "does not fit 2 digit"),
        ({"ack_timeout_seconds": 0.0}, "invalid ack timeout"),
        ({"ack_timeout_seconds": 0.0004}, "invalid ack timeout"),
        ({"ack_timeout_seconds": 3600.5}, "invalid ack timeout"),
        ({"ack_timeout_seconds": float("nan")}, "invalid ack timeout"),
        ({"ack_timeout_seconds": float("inf")}, "invalid ack timeout"),
        ({"heartbeat_seconds": 0}, "invalid heartbeat"),
        ({"heartbeat_seconds": 86401}, "invalid heartbeat"),
    ],
)
def test_invalid_settings_are_refused_saying_why(changes: dict[str, object], problem: str) -> None:
    found = output_problem(replace(CONNECT, **changes))  # type: ignore[arg-type]
    assert found is not None and problem in found


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"addresses": ("/dev/ttyS0", "/dev/ttyS1")}, "one device"),
        ({"addresses": ("",)}, "invalid device"),
        ({"baud": 9601}, "invalid baud"),
        ({"framing": "8E2"}, "invalid framing"),
    ],
)
def test_invalid_serial_settings_are_refused(changes: dict[str, object], problem: str) -> None:
    found = output_problem(replace(SERIAL, **changes))  # type: ignore[arg-type]
    assert found is not None and problem in found


def test_an_output_without_prefixes_wants_every_account_else_those_they_start() -> None:
    assert wanted((), "700012") and wanted((), "")
    assert wanted(("80", "7000"), "700012")
    assert not wanted(("80", "7001"), "700012")
    assert not wanted(("7",), "")  # no account could be made of the panel


def test_frames_are_the_sur_gard_receivers_bytes() -> None:
    assert signal_frame(CONNECT, "1234", "E130", "01", "001") == b"5011 181234E13001001" + DC4
    assert signal_frame(CONNECT, "12", "R602", "00", "000") == b"5011 180012R60200000" + DC4
    assert signal_frame(CONNECT, "a1", "E110", "02", "015") == b"5011 1800A1E11002015" + DC4
    system = replace(CONNECT, receiver=12, line=100, line_digits=3)
    assert signal_frame(system, "1234", "E130", "01", "001") == b"512100 181234E13001001" + DC4
    assert signal_frame(CONNECT, "123456", "E130", "01", "001") == (
        b"5011 580000123456E13001001" + DC4  # 5 to 10 digits: the 10-digit form
    )
    assert CONNECT.link_test() == b"1011" + b" " * 11 + b"@" + b" " * 4 + DC4
    assert system.link_test() == b"112100" + b" " * 11 + b"@" + b" " * 4 + DC4


def test_a_panel_sur_gard_cannot_carry_is_refused() -> None:
    for panel in ("XYZ", "12345678901", ""):
        with pytest.raises(ValueError, match="account"):
            signal_frame(CONNECT, panel, "E130", "01", "001")


def test_alarmhub_s_own_events_are_contact_id_communication_troubles() -> None:
    assert OWN_EVENTS == {
        "communication failure": "E350",
        "communication restored": "R350",
        "fail to test": "E358",
    }
    for code in OWN_EVENTS.values():
        assert EVENTS[code[1:]].classification == "Communication Trouble"

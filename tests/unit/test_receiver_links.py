"""The rules of a receiver link's settings and of its lines' numbers (``core.receiver_links``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from alarmhub.core.receiver_links import LinkSettings, line_number, link_problem

TCP = LinkSettings("rx-1_A", "surgard", "connect", "10.0.0.5:1025")
SERIAL = LinkSettings("rx2", "d6500", "serial", "/dev/ttyUSB0", 19200, "7E1", 3, 3600)


def test_valid_links_pass() -> None:
    assert link_problem(TCP) is None
    assert link_problem(SERIAL) is None
    assert link_problem(replace(TCP, name="x" * 32, heartbeat_timeout_s=10)) is None


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"name": "rx 1"}, "invalid link name"),
        ({"name": "x" * 33}, "invalid link name"),
        ({"name": ""}, "invalid link name"),
        ({"protocol": "sia"}, "invalid protocol"),
        ({"transport": "udp"}, "invalid transport"),
        ({"address": ""}, "invalid address"),
        ({"address": "a\x00:1"}, "invalid address"),
        ({"address": "a" * 256}, "invalid address"),
        ({"baud": 9600}, "serial links only"),
        ({"framing": "8N1"}, "serial links only"),
        ({"line_digits": 0}, "invalid line digits"),
        ({"line_digits": 4}, "invalid line digits"),
        ({"heartbeat_timeout_s": 9}, "invalid heartbeat timeout"),
        ({"heartbeat_timeout_s": 3601}, "invalid heartbeat timeout"),
    ],
)
def test_a_tcp_link_problem_is_named(changes: dict[str, Any], words: str) -> None:
    problem = link_problem(replace(TCP, **changes))
    assert problem is not None and words in problem


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"baud": None}, "invalid baud"),
        ({"baud": 1234}, "invalid baud"),
        ({"framing": None}, "invalid framing"),
        ({"framing": "8E2"}, "invalid framing"),
    ],
)
def test_a_serial_link_problem_is_named(changes: dict[str, Any], words: str) -> None:
    problem = link_problem(replace(SERIAL, **changes))
    assert problem is not None and words in problem


def test_receiver_and_line_numbers_are_compared_as_numbers() -> None:
    assert line_number("01", "receiver") == 1
    assert line_number("001", "line") == 1
    assert line_number(99, "receiver") == 99
    assert line_number("999", "line") == 999
    for value, what in [
        ("100", "receiver"),
        ("1000", "line"),
        ("1a", "line"),
        ("", "line"),
        ("-1", "receiver"),
        ("+1", "line"),
        (" 1", "line"),
        ("\u0661", "line"),
    ]:
        with pytest.raises(ValueError, match=f"invalid {what}"):
            line_number(value, what)

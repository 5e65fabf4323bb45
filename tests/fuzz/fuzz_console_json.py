"""Fuzz the console API's input reading (``console/inputs.py``): JSON bodies of every shape
against each action's allowed fields, required fields, and alarm ids in paths. Every input must
be read into fields of the declared types or refused with ``BadInput`` (answered 422
``CONSOLE-INPUT``); nothing else may escape."""

from __future__ import annotations

import contextlib
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from alarmhub.console import inputs
from alarmhub.core.errors import BadInput
from tests.fuzz.common import FUZZ, Counter
from tests.fuzz.strategies import encoded, json_values, mutated

# the allowed fields of each console action that takes a body (console/routes.py)
ACTIONS: list[dict[str, type]] = [
    {},
    {"text": str},
    {"minutes": int, "reason": str},
    {"receiving": bool},
    {"resolution": str, "note": str},
]
NAMES = sorted({name for allowed in ACTIONS for name in allowed})

bodies = st.one_of(
    st.binary(max_size=200),
    json_values.flatmap(encoded),
    st.dictionaries(st.sampled_from(NAMES) | st.text(max_size=6), json_values, max_size=4)
    .flatmap(encoded)
    .flatmap(mutated),
    st.tuples(st.integers(16_370, 16_400), json_values.flatmap(encoded)).map(
        lambda n_raw: n_raw[1] + b" " * n_raw[0]  # around the 16,384-byte limit
    ),
)

segments = st.one_of(
    st.text(max_size=24),
    st.integers(0, 6000).map(lambda n: "1" * n),  # past int()'s 4,300-digit limit
    st.integers(0, 2**70).map(str),
)


def test_console_inputs_are_read_or_refused_with_bad_input() -> None:
    counter = Counter("console JSON")

    @FUZZ
    @given(body=bodies, allowed=st.sampled_from(ACTIONS), segment=segments)
    def one(body: bytes, allowed: dict[str, type], segment: str) -> None:
        counter.runs += 1
        try:
            fields: dict[str, Any] = inputs.json_object(body, allowed)
        except BadInput as exc:
            assert isinstance(exc.message, str) and exc.message
        else:
            for name, value in fields.items():
                kind = allowed[name]
                assert isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
            for name in allowed:
                with contextlib.suppress(BadInput):
                    inputs.required(fields, name)
        try:
            number = inputs.alarm_id(segment)
        except BadInput:
            pass
        else:
            assert 0 < number <= inputs.MAX_ALARM_ID

    one()
    counter.check()

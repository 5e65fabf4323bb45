"""Reading the console API's input: a JSON object with known fields of the right types, and
alarm ids in paths. Anything else is refused with one clear sentence, before anything changes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from alarmhub.core.errors import BadInput

MAX_BODY_BYTES = 16_384
MAX_ALARM_ID = 2**63 - 1


def alarm_id(text: str) -> int:
    """The alarm id of a path segment: a positive whole number."""
    if (
        not text.isascii()
        or not text.isdigit()
        or len(text) > len(str(MAX_ALARM_ID))  # before int(): a long string costs, or raises
        or not 0 < int(text) <= MAX_ALARM_ID
    ):
        raise BadInput(f"alarm id must be a positive whole number, not {text[:20]!r}")
    return int(text)


def json_object(body: bytes, allowed: Mapping[str, type]) -> dict[str, Any]:
    """The fields of a JSON object body; an empty body is an empty object. ``allowed`` names
    every field the action takes and its type; others are refused (a misspelt field is a bug
    in the caller, never silently ignored)."""
    if len(body) > MAX_BODY_BYTES:
        raise BadInput(f"the body is larger than {MAX_BODY_BYTES} bytes")
    if not body.strip():
        return {}
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise BadInput("the body is not valid JSON") from None
    if not isinstance(value, dict):
        raise BadInput("the body must be a JSON object")
    for name, given in value.items():
        kind = allowed.get(name)
        if kind is None:
            known = ", ".join(sorted(allowed)) or "none"
            raise BadInput(f"unknown field {name!r} (this action takes: {known})")
        if not _is(given, kind):
            raise BadInput(f"field {name!r} must be {_KIND_NAMES[kind]}")
    return value


_KIND_NAMES = {str: "a string", int: "a whole number", bool: "true or false", list: "an array"}


def _is(value: object, kind: type) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def required(fields: Mapping[str, Any], name: str) -> Any:
    if name not in fields:
        raise BadInput(f"missing field {name!r}")
    return fields[name]

"""Error bodies of the query interface (spec 7.2, decisions section 3), in one place."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

METHOD_NAME_WIDTH = 8
MALFORMED_ERRSTR = "Start tag expected, '<' not found"

AUTHENTICATION_FAILED: dict[str, Any] = {
    "status": "error",
    "message": "authentication failed",
    "errno": 401,
}
TOO_LARGE: dict[str, Any] = {
    "status": "error",
    "message": "request too large",
    "errno": 413,
}
"""A body over ``rest_max_body_bytes`` (decisions section 6), answered before any parsing."""
MALFORMED: dict[str, Any] = {
    "status": "error",
    "message": "XML is malformed",
    "errno": 2,
    "errstr": MALFORMED_ERRSTR,
}


def _encoded(text: str) -> str:
    return quote(text, safe="")


def invalid_method(name: str) -> dict[str, str]:
    """The "invalid method" body: the method name cut and space-padded to 8 characters."""
    shown = name[:METHOD_NAME_WIDTH].ljust(METHOD_NAME_WIDTH)
    return {
        "ERROR_CODE": "999",
        "ERROR_DESCRIPTION": _encoded("INVALID METHOD METHOD"),
        "PROGRAM_ERROR": "11",
        "PROGRAM_ERROR_DESCRIPTION": _encoded("Missing or Duplicate key"),
        "ERROR_ON_LINE": "240",
        "ADDITIONAL_INFO": _encoded(f"<METHOD_NAME>{shown}</METHOD_NAME>"),
    }


def field_invalid(field: str) -> dict[str, Any]:
    """Any other bad field: ``<FIELD> is invalid``."""
    return {"status": "error", "message": f"{field} is invalid", "errno": 3}

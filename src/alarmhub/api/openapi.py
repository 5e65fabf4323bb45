"""The integrator API's part of the OpenAPI document: each resource module's ``PATHS`` under
``/api/v1``, the key's security scheme and the problem details every refusal is."""

from __future__ import annotations

import importlib
from typing import Any

from alarmhub.api.problems import MEDIA_TYPE, STATUS

MODULES = ("accounts", "alarms", "events", "supervision")
"""The modules of :mod:`alarmhub.api` with ``PATHS``."""
PROBLEM: dict[str, Any] = {
    "type": "object",
    "required": ["type", "title", "status", "detail", "code"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "detail": {"type": "string"},
        "code": {"type": "string", "enum": sorted(STATUS)},
    },
}
SECURITY: list[dict[str, list[str]]] = [{"apiKey": []}]


def problem(description: str) -> dict[str, Any]:
    """A response of problem details."""
    return {
        "description": description,
        "content": {MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
    }


REFUSALS = {
    "401": problem("API-AUTH: no key, or an unknown or revoked one"),
    "403": problem("API-SCOPE: the key lacks the scope"),
}
KEY_PATH = {
    "/api/v1/key": {
        "get": {
            "summary": "The key's own name, scopes and account range",
            "security": SECURITY,
            "responses": {
                "200": {
                    "description": "the key",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["name", "scopes", "accounts"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "scopes": {"type": "array", "items": {"type": "string"}},
                                    "accounts": {"type": "string"},
                                },
                            }
                        }
                    },
                },
                **REFUSALS,
            },
        }
    }
}


def paths() -> dict[str, Any]:
    """Every path of the integrator API, with its operations."""
    found: dict[str, Any] = dict(KEY_PATH)
    for name in MODULES:
        found.update(importlib.import_module(f"alarmhub.api.{name}").PATHS)
    return found


def components() -> dict[str, Any]:
    return {
        "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer"}},
        "schemas": {"Problem": PROBLEM},
    }

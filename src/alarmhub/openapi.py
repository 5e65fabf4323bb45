"""The OpenAPI document of both interfaces, served at ``/openapi.json``.

Built from the same constants the handlers answer with (error codes, field names), so the
document and the service cannot drift apart silently; a test checks served answers against it.
"""

from __future__ import annotations

from typing import Any

from alarmhub import __version__
from alarmhub.api import openapi as api_openapi
from alarmhub.core import errors as rx_errors
from alarmhub.xm import errors as xm_errors

STRING: dict[str, Any] = {"type": "string"}

HISTORY_EVENT_FIELDS = (
    "ACCOUNT_NUMBER", "HISTORY_EVENT_NTD", "HISTORY_EVENT_DATE", "INCIDENT_NUMBER", "SEIA_CODE",
    "ZONE_CODE_1", "ZONE_CODE_2", "TYPE", "OPR", "ALARM_CATEGORY", "PRIORITY", "HIST_TEXT",
    "ZONE_1", "ZONE_2", "AM_NOTIFY", "PENDING_TIME", "PR_CHECKSUM", "SECOND_ZONE_IS", "COLOR",
    "VIDEO",
)  # fmt: skip
PENDING_FIELDS = (
    "PRIORITY", "PASSCODE_VERIFIED", "PENDING_TIME", "PEND_TIME", "PEND_DATE", "HISTORY_TIME",
    "ACCOUNT_NUMBER", "INCIDENT_NUMBER", "HIST_TEXT", "COMPANY_NAME", "TYPE",
)  # fmt: skip
IN_PROCESS_FIELDS = (
    "COLOR", "ACCOUNT_NUMBER", "COMPANY_NAME", "STREET_NAME2", "CITY", "STATE", "TYPE", "OPR",
    "PEND_TIME", "BEEN_ON_HOLD", "OPR_RECEIVED", "OPR_FIRST_CALL", "OPR_HANDLING",
)  # fmt: skip


def _object(required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "required": list(required),
        "properties": {name: STRING for name in (*required, *optional)},
        "additionalProperties": False,
    }


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _envelope(codes: list[str], status: int) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["status_code", "status", "error_code", "message"],
        "properties": {
            "status_code": {"type": "integer", "enum": [status]},
            "status": {"type": "string", "enum": ["error"]},
            "error_code": {"type": "string", "enum": codes},
            "message": STRING,
        },
        "additionalProperties": False,
    }


def _refusals(status: int) -> list[str]:
    return [r.error_code for r in rx_errors.ALL if r.status_code == status]


SUCCESS = {
    "type": "object",
    "required": ["status_code", "status"],
    "properties": {
        "status_code": {"type": "integer", "enum": [200]},
        "status": {"type": "string", "enum": ["success"]},
    },
    "additionalProperties": False,
}
PAIR = {
    "name": "pair",
    "in": "path",
    "required": True,
    "description": "SOURCE:DESTINATION; the destination is the receiver driver.",
    "schema": {"type": "string", "pattern": "^[^/]+$"},
}
XM_ERROR = {
    "type": "object",
    "required": ["status", "message", "errno"],
    "properties": {
        "status": {"type": "string", "enum": ["error"]},
        "message": STRING,
        "errno": {"type": "integer"},
        "errstr": STRING,
    },
    "additionalProperties": False,
}
INVALID_METHOD = _object(tuple(xm_errors.invalid_method("")))
EVENT = _object(HISTORY_EVENT_FIELDS)
XM_HEADERS = [
    {"name": name, "in": "header", "required": True, "schema": STRING, "description": text}
    for name, text in (
        ("X-SVC-APPKEY", "The caller's program name, 1-64 characters."),
        ("X-SVC-USERNAME", "An API user."),
        ("X-SVC-DATE", "UTC now as DDMMYYYYHHMISS, within 300 s of the server's clock."),
        ("X-SVC-NONCE", "16-64 letters or digits, never reused within 15 minutes."),
        ("X-SVC-DIGEST", "sha1 (40 hex) or hmac-sha256 (64 hex) digest."),
    )
]


def document() -> dict[str, Any]:
    form_fields = (
        "*setMethod", "ACCOUNT", "STARTDATE", "STARTTIME", "STOPDATE", "STOPTIME", "HOURS",
        "SEARCHTYPE", "SERVICEONLY", "LIMITHIST", "NOMULTIPLES", "ARRAY", "FIXED_HISTORY_TAG",
        "SOURCE",
    )  # fmt: skip
    doc: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {
            "title": "alarmhub",
            "version": __version__,
            "description": "Signaling interface (Contact ID signals, heartbeats), monitoring "
            "query interface (XMHIST, XMAPEND, XMAINPRO) and integrator API (/api/v1) of a "
            "central station.",
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": {
            "/rx/{pair}/contact_id": {
                "post": {
                    "summary": "Queue a Contact ID signal for a receiver driver",
                    "security": [{"bearer": []}],
                    "parameters": [PAIR],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["dnis", "panel", "code"],
                                    "properties": {
                                        "dnis": {"type": "string", "maxLength": 5},
                                        "panel": {"type": "string", "maxLength": 10},
                                        "code": {"type": "string", "pattern": "^[ERer][0-9]{3}$"},
                                        "area": {"type": "string", "maxLength": 2},
                                        "zone_or_user": {"type": "string", "maxLength": 3},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json(SUCCESS, "Stored durably"),
                        "401": _json(_envelope(_refusals(401), 401), "Bad bearer token"),
                        "422": _json(_envelope(_refusals(422), 422), "Refused"),
                        "503": _json(_envelope(_refusals(503), 503), "Not stored, retry"),
                    },
                }
            },
            "/rx/{pair}/hb": {
                "get": {
                    "summary": "Heartbeat: the source is alive (every 20 s)",
                    "security": [{"bearer": []}],
                    "parameters": [PAIR],
                    "responses": {
                        "200": _json(SUCCESS, "Heartbeat recorded"),
                        "401": _json(_envelope(_refusals(401), 401), "Bad token or pair"),
                    },
                }
            },
            "/rest/rest.php": {
                "post": {
                    "summary": "Monitoring query: *setMethod picks XMHIST, XMAPEND or XMAINPRO",
                    "parameters": [
                        {
                            "name": "dataSource",
                            "in": "query",
                            "required": True,
                            "schema": {"type": "string", "enum": ["methods"]},
                        },
                        {
                            "name": "*view",
                            "in": "query",
                            "required": True,
                            "schema": {"type": "string", "enum": ["xmsubmit"]},
                        },
                        *XM_HEADERS,
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "multipart/form-data": {
                                "schema": {
                                    "type": "object",
                                    "required": ["*setMethod"],
                                    "properties": {name: STRING for name in form_fields},
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json(
                            {
                                "oneOf": [
                                    {
                                        "type": "object",
                                        "required": ["EVENT", "TOTAL_RECORDS"],
                                        "properties": {
                                            "EVENT": {
                                                "oneOf": [
                                                    EVENT,
                                                    {"type": "array", "items": EVENT},
                                                ]
                                            },
                                            "TOTAL_RECORDS": STRING,
                                        },
                                        "additionalProperties": False,
                                    },
                                    {
                                        "type": "object",
                                        "required": ["XMAPEND", "TOTAL_RECORDS"],
                                        "properties": {
                                            "XMAPEND": {
                                                "type": "array",
                                                "items": _object(
                                                    PENDING_FIELDS,
                                                    (
                                                        "HISTORY_EVENT_NTD",
                                                        "HISTORY-EVENT-NTD",
                                                        "TRACK_GROUPING",
                                                        "CONTACT_LIST",
                                                    ),
                                                ),
                                            },
                                            "TOTAL_RECORDS": STRING,
                                        },
                                        "additionalProperties": False,
                                    },
                                    {
                                        "type": "object",
                                        "required": ["XMAINPRO", "TOTAL_RECORDS"],
                                        "properties": {
                                            "XMAINPRO": {
                                                "type": "array",
                                                "items": _object((), IN_PROCESS_FIELDS),
                                            },
                                            "TOTAL_RECORDS": STRING,
                                        },
                                        "additionalProperties": False,
                                    },
                                ]
                            },
                            "The method's answer",
                        ),
                        "400": _json(
                            {"oneOf": [INVALID_METHOD, XM_ERROR]},
                            "Invalid method, malformed dates or an invalid field",
                        ),
                        "401": _json(XM_ERROR, "Authentication failed"),
                        "413": _json(XM_ERROR, "Body over rest_max_body_bytes"),
                    },
                }
            },
            "/healthz": {
                "get": {
                    "summary": "200 when the database and the writer are available",
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "required": ["status"],
                                "properties": {"status": STRING},
                            },
                            "Healthy",
                        ),
                        "503": _json(
                            {
                                "type": "object",
                                "required": ["status", "message"],
                                "properties": {"status": STRING, "message": STRING},
                            },
                            "Not healthy",
                        ),
                    },
                }
            },
        },
    }
    integrator = api_openapi.components()
    doc["components"]["securitySchemes"].update(integrator["securitySchemes"])
    doc["components"]["schemas"] = integrator["schemas"]
    doc["paths"].update(api_openapi.paths())
    return doc

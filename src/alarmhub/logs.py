"""Structured logging: one event a line, ``key=value`` (or JSON), incident number included.

Text from the network can hold anything: every control character (C0, DEL, C1), the Unicode
line and paragraph separators and the bidirectional overrides are escaped in both formats, so a
value can neither split a line in two nor send a terminal escape sequence.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from typing import Any

import orjson

_RESERVED = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "color_message"}
# C0 controls, DEL, C1 controls, line and paragraph separators, bidirectional overrides
_UNSAFE = r"\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_UNSAFE_RE = re.compile(rf"[{_UNSAFE}]")
_ESCAPED_RE = re.compile(rf'["\\{_UNSAFE}]')  # escaped inside quotes
_QUOTED_RE = re.compile(rf'[ ="\\{_UNSAFE}]')  # makes a value quoted
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "\\": "\\\\"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT.get(char)
    if short is not None:
        return short
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def escape_unsafe(text: str) -> str:
    """``text`` with every unsafe character escaped (``\\n``, ``\\x1b``, ``\\u202e``), for a
    terminal as for a log line."""
    return _UNSAFE_RE.sub(_escape, text)


def _quote(value: Any) -> str:
    """A value as it stands in a ``key=value`` line: quoted, with ``\\``, ``"`` and every
    unsafe character escaped, when it holds any of them, a space or ``=``."""
    text = str(value)
    if text == "" or _QUOTED_RE.search(text):
        return '"' + _ESCAPED_RE.sub(_escape, text) + '"'
    return text


def _json_safe(line: str) -> str:
    """orjson escapes C0 controls; the rest of the unsafe characters (valid raw in JSON) are
    written as ``\\u`` escapes (four hex digits) too: the line decodes to the same values."""
    return _UNSAFE_RE.sub(lambda m: f"\\u{ord(m.group()):04x}", line)


class KeyValueFormatter(logging.Formatter):
    """``ts=... level=... logger=... event=... key=value ...``"""

    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        parts = [
            f"ts={ts}.{int(record.msecs):03d}Z",
            f"level={record.levelname.lower()}",
            f"logger={record.name}",
            f"event={_quote(record.getMessage())}",
        ]
        parts += [f"{k}={_quote(v)}" for k, v in record.__dict__.items() if k not in _RESERVED]
        if record.exc_info:
            parts.append(f"error={_quote(self.formatException(record.exc_info))}")
        return " ".join(parts)


class JsonFormatter(logging.Formatter):
    """One JSON object a line."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": record.created,
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        doc.update({k: v for k, v in record.__dict__.items() if k not in _RESERVED})
        if record.exc_info:
            doc["error"] = self.formatException(record.exc_info)
        return _json_safe(orjson.dumps(doc, default=str).decode())


class _Context(logging.Filter):
    """Adds the same fields to every line of a process (a worker's number)."""

    def __init__(self, fields: dict[str, Any]) -> None:
        super().__init__()
        self._fields = fields

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in self._fields.items():
            record.__dict__.setdefault(key, value)
        return True


def configure(
    level: str = "info", fmt: str = "keyvalue", context: dict[str, Any] | None = None
) -> None:
    """Send alarmhub's and uvicorn's logs to stderr in the chosen format; ``context``: fields
    every line of this process carries."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else KeyValueFormatter())
    if context:
        handler.addFilter(_Context(context))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("alembic").setLevel(logging.WARNING)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True

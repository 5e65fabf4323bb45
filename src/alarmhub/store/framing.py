"""Length-prefixed JSON frames between a node and its writer process."""

from __future__ import annotations

import struct
from typing import Any

import orjson

HEADER = struct.Struct("!I")
MAX_FRAME = 64 * 1024 * 1024
CHECKPOINT = "checkpoint"
"""The node asks the writer to complete its checkpoint of the SQLite log: ``{CHECKPOINT: true}``
(:data:`CHECKPOINT_REQUEST`, ``store.sqlite.checkpoint``); the node's other message,
``{"leader": held}``, says whether it leads supervision."""


def encode(message: Any) -> bytes:
    body = orjson.dumps(message)
    return HEADER.pack(len(body)) + body


def decode_all(buffer: bytearray) -> list[Any]:
    """Remove every complete frame from the front of ``buffer`` and return their messages."""
    messages = []
    offset = 0
    size = HEADER.size
    while len(buffer) - offset >= size:
        (length,) = HEADER.unpack_from(buffer, offset)
        if length > MAX_FRAME:
            raise ValueError(f"frame of {length} bytes is too large")
        if len(buffer) - offset - size < length:
            break
        messages.append(orjson.loads(bytes(buffer[offset + size : offset + size + length])))
        offset += size + length
    del buffer[:offset]
    return messages


CHECKPOINT_REQUEST = encode({CHECKPOINT: True})
"""The frame of the node's checkpoint request, as sent."""
QUEUED = "queued"
"""The writer tells the node its routing committed frames for the automation outputs
(``{QUEUED: true}``, :data:`QUEUED_NOTICE`), so that the node's senders read them at once."""
QUEUED_NOTICE = encode({QUEUED: True})
"""The frame of that notice, as sent."""
RECORD = "record"
"""The delivery process hands the writer how attempts ended, to record (SQLite: the writer
holds the database's one write lock, :mod:`alarmhub.store.recording`): ``{RECORD: channel,
"id": n, "ended": [[delivery id, outcome], ...], "lanes": [lane id, ...]}``."""
RECORDED = "recorded"
"""The writer's answer, once for each transaction that recorded part of request ``n``:
``{RECORDED: n, "outcomes": [delivery id, ...], "lanes": [lane id, ...], "done": bool,
"error": text or null}`` (an error ends the request: what is not named was not recorded)."""

"""The receiver protocols by the name a link gives (``surgard``, ``ademco685``, ``d6500``): each
a module with ``splitter``, ``read`` and ``answer``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from alarmhub.receivers import ademco685, d6500, surgard
from alarmhub.receivers.frames import Frame, Options, Splitter


class ReceiverProtocol(Protocol):
    """What a link needs of its protocol: a splitter for its stream, the reading of one raw
    frame (never raising) and the answer to a frame read."""

    @property
    def splitter(self) -> Callable[[], Splitter]: ...

    @property
    def read(self) -> Callable[[bytes, Options], Frame]: ...

    @property
    def answer(self) -> Callable[[Frame, bool], bytes]: ...


PROTOCOLS: dict[str, ReceiverProtocol] = {
    "surgard": surgard,
    "ademco685": ademco685,
    "d6500": d6500,
}

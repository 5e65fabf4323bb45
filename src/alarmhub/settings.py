"""One typed settings object: defaults, an optional ``alarmhub.toml``, then ``ALARMHUB_*`` env."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from alarmhub.core.errors import SettingsError
from alarmhub.core.runaway import DEFAULT_LIMIT, DEFAULT_MINUTES
from alarmhub.core.supervision import DEFAULT_TIMEOUT_S

CONFIG_FILE = "alarmhub.toml"
DEFAULT_LISTEN = "127.0.0.1:8080"  # serve's --listen; the command line's HTTP commands call it
DEFAULT_URL = f"http://{DEFAULT_LISTEN}"
MAX_DEFAULT_WORKERS = 8


def default_workers() -> int:
    """Worker processes when none are asked for: one a core, at most MAX_DEFAULT_WORKERS (they
    all share one writer process, which a larger number would only queue behind)."""
    return max(1, min(os.cpu_count() or 1, MAX_DEFAULT_WORKERS))


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a node needs to know at start-up."""

    data_dir: Path = Path("var")
    database_url: str = ""
    heartbeat_timeout: int = DEFAULT_TIMEOUT_S
    heartbeat_flush_seconds: float = 5.0
    idempotency_hours: int = 24
    max_batch: int = 2000
    # a signal's commit not completed by then is answered STORE-1 (decisions §14)
    store_commit_timeout: float = 10.0
    runaway_limit: int = DEFAULT_LIMIT
    runaway_minutes: int = DEFAULT_MINUTES
    test_grace_minutes: int = 60
    max_body_bytes: int = 16384
    log_level: str = "info"
    log_format: str = "keyvalue"
    timezone: str = ""
    dc09_retry_seconds: int = 300
    dc09_supervision_seconds: int = 90
    dc09_max_connections: int = 10000
    dc09_idle_seconds: int = 600
    dc09_max_connections_per_address: int = 200
    # hostile input (docs/security.md): limits checked before any work is done
    trusted_proxies: str = "127.0.0.1"
    rest_max_body_bytes: int = 65536
    xmhist_max_records: int = 10000
    http_header_seconds: float = 10.0
    http_max_header_bytes: int = 16384
    http_max_connections: int = 2048
    stream_max_connections: int = 1024
    stream_max_per_key: int = 4
    stream_max_per_address: int = 16
    webhook_allow_private: bool = False  # webhook URLs on private, loopback... addresses
    # acceptor processes of ``serve`` (HTTP and DC-09), all in front of one writer process
    workers: int = field(default_factory=default_workers)

    @property
    def zone(self) -> tzinfo:
        """The station's time zone: the ``timezone`` setting, else the machine's local zone."""
        return station_zone(self.timezone)

    @property
    def database(self) -> str:
        """The SQLAlchemy URL: the explicit one, else SQLite in the data directory."""
        return self.database_url or f"sqlite:///{self.data_dir / 'alarmhub.db'}"

    def masked(self) -> dict[str, str]:
        """The settings as text for the start-up log, secrets hidden."""
        shown = {f.name: str(getattr(self, f.name)) for f in fields(self)}
        shown["database_url"] = masked_url(self.database_url)
        shown["database"] = shown["database_url"] or self.database
        return shown


def masked_url(url: str) -> str:
    """A database URL as it may be shown: its user and password hidden."""
    if "@" not in url:
        return url
    scheme, _, rest = url.partition("://")
    return f"{scheme}://***@{rest.rpartition('@')[2]}"


def station_zone(timezone: str) -> tzinfo:
    """The station's time zone named ``timezone`` (IANA), else the machine's local zone (its
    current offset: set ``timezone`` for daylight saving time to be followed)."""
    if timezone:
        return ZoneInfo(timezone)
    local = datetime.now().astimezone().tzinfo
    assert local is not None
    return local


def _coerce(name: str, raw: Any, kind: type) -> Any:
    try:
        if kind is Path:
            return Path(str(raw))
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
        if kind is bool:
            return _boolean(raw)
        return str(raw)
    except (TypeError, ValueError):
        raise SettingsError(f"setting {name}: {raw!r} is not a valid {kind.__name__}") from None


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _boolean(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text not in _TRUE + _FALSE:
        raise ValueError(text)
    return text in _TRUE


_KINDS: dict[str, type] = {
    "data_dir": Path,
    "database_url": str,
    "heartbeat_timeout": int,
    "heartbeat_flush_seconds": float,
    "idempotency_hours": int,
    "max_batch": int,
    "store_commit_timeout": float,
    "runaway_limit": int,
    "runaway_minutes": int,
    "test_grace_minutes": int,
    "max_body_bytes": int,
    "log_level": str,
    "log_format": str,
    "timezone": str,
    "dc09_retry_seconds": int,
    "dc09_supervision_seconds": int,
    "dc09_max_connections": int,
    "dc09_idle_seconds": int,
    "dc09_max_connections_per_address": int,
    "trusted_proxies": str,
    "rest_max_body_bytes": int,
    "xmhist_max_records": int,
    "http_header_seconds": float,
    "http_max_header_bytes": int,
    "http_max_connections": int,
    "stream_max_connections": int,
    "stream_max_per_key": int,
    "stream_max_per_address": int,
    "webhook_allow_private": bool,
    "workers": int,
}


def load(data_dir: str | Path | None = None, **overrides: Any) -> Settings:
    """Settings from (lowest first) defaults, the data directory's TOML file, env, arguments."""
    env = os.environ
    directory = Path(data_dir or env.get("ALARMHUB_DATA_DIR") or "var")
    values: dict[str, Any] = {"data_dir": directory}
    toml_path = directory / CONFIG_FILE
    if toml_path.is_file():
        with toml_path.open("rb") as fh:
            try:
                from_file = tomllib.load(fh)
            except tomllib.TOMLDecodeError as exc:
                raise SettingsError(f"{toml_path}: {exc}") from None
        for key, raw in from_file.items():
            if key not in _KINDS or key == "data_dir":
                raise SettingsError(f"{toml_path}: unknown setting {key!r}")
            values[key] = _coerce(key, raw, _KINDS[key])
    for key, kind in _KINDS.items():
        name = f"ALARMHUB_{key.upper()}"
        if key != "data_dir" and name in env and env[name] != "":
            values[key] = _coerce(name, env[name], kind)
    for key, raw in overrides.items():
        if raw is not None:
            values[key] = _coerce(key, raw, _KINDS[key])
    settings = replace(Settings(), **values)
    if settings.heartbeat_timeout <= 0:
        raise SettingsError("heartbeat_timeout must be a positive number of seconds")
    for name in (
        "max_batch",
        "store_commit_timeout",
        "runaway_limit",
        "runaway_minutes",
        "dc09_retry_seconds",
        "dc09_supervision_seconds",
        "dc09_max_connections",
        "dc09_idle_seconds",
        "dc09_max_connections_per_address",
        "rest_max_body_bytes",
        "xmhist_max_records",
        "http_header_seconds",
        "http_max_header_bytes",
        "http_max_connections",
        "stream_max_connections",
        "stream_max_per_key",
        "stream_max_per_address",
        "workers",
    ):
        if getattr(settings, name) <= 0:
            raise SettingsError(f"{name} must be positive")
    if settings.timezone:
        try:
            ZoneInfo(settings.timezone)
        except (ZoneInfoNotFoundError, ValueError):
            raise SettingsError(
                f"timezone {settings.timezone!r} is not an IANA zone name"
            ) from None
    if settings.test_grace_minutes < 0:
        raise SettingsError("test_grace_minutes must not be negative")
    return settings


def to_wire(settings: Settings) -> dict[str, str]:
    """The settings as text, for a process the node starts (over a socket, never on its command
    line, where other users of the machine could read a password)."""
    return {f.name: str(getattr(settings, f.name)) for f in fields(settings)}


def from_wire(values: dict[str, str]) -> Settings:
    """The settings :func:`to_wire` gave, checked already by whoever loaded them."""
    kinds = {"data_dir": Path, **_KINDS}
    typed = {name: _coerce(name, raw, kinds[name]) for name, raw in values.items()}
    return replace(Settings(), **typed)

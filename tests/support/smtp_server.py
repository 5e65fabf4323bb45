"""A real SMTP server for tests and benchmarks: aiosmtpd run as its own process
(``python -m tests.support.smtp_server DIR PORT [--tls starttls|implicit] [--auth]``), writing
each message it accepts to DIR (``NNNNNN.eml``, its envelope beside it in ``NNNNNN.json``).

To make it refuse, write a reply in DIR: ``answer-rcpt`` (to each RCPT TO, e.g. ``550 5.1.1 no
such user``) or ``answer-data`` (to each message, e.g. ``451 4.3.0 try again later``); remove
the file and it accepts again. Each EHLO is counted in ``DIR/ehlo.log`` (connections kept open
are seen so). ``--tls starttls`` offers STARTTLS and requires it before mail;
``--tls implicit`` speaks TLS from the first byte (the certificate and key ``DIR/cert.pem``,
``DIR/key.pem``: :func:`self_signed`). ``--auth`` requires AUTH PLAIN or LOGIN with the user
and password of ``SMTP_TEST_USER`` / ``SMTP_TEST_PASSWORD`` (never on its command line).

:class:`SmtpServer` starts and stops it from a test and reads what arrived.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import json
import os
import signal
import ssl
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
USER_ENV, PASSWORD_ENV = "SMTP_TEST_USER", "SMTP_TEST_PASSWORD"
READY = "ready"


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for ``localhost`` and 127.0.0.1, and its key, written to ``directory``
    (``cert.pem``, ``key.pem``); a client trusts it with :func:`trusting`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    alt = x509.SubjectAlternativeName(
        [x509.DNSName("localhost"), x509.IPAddress(ipaddress.IPv4Address("127.0.0.1"))]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(alt, critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def trusting(cert: Path) -> ssl.SSLContext:
    """A client's TLS context that trusts ``cert`` (and nothing else); hostnames checked."""
    return ssl.create_default_context(cafile=str(cert))


@dataclass(frozen=True)
class Arrived:
    """A message the server accepted: its envelope and the message as parsed."""

    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage
    raw: bytes


@dataclass
class SmtpServer:
    """The server process: ``start()``, ``port``, ``arrived()``, ``answer(...)``, ``stop()``."""

    directory: Path
    port: int
    tls: str = "none"  # "none", "starttls" or "implicit"
    auth: tuple[str, str] | None = None  # (user, password) required
    _process: subprocess.Popen[str] | None = field(default=None, repr=False)

    def start(self) -> SmtpServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.tls != "none" and not (self.directory / "cert.pem").exists():
            self_signed(self.directory)
        args = [sys.executable, "-m", "tests.support.smtp_server", str(self.directory),
                str(self.port), "--tls", self.tls]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k not in (USER_ENV, PASSWORD_ENV)}
        if self.auth is not None:
            args.append("--auth")
            env |= {USER_ENV: self.auth[0], PASSWORD_ENV: self.auth[1]}
        self._process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        line = self._process.stdout.readline().strip()  # it exits (EOF) if it cannot start
        assert line == READY, f"the SMTP server did not start: {line!r}"
        return self

    @property
    def pid(self) -> int | None:
        """The server process's (None: not running)."""
        return None if self._process is None else self._process.pid

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._process is not None and self._process.stdout is not None:
            self._process.stdout.close()
        self._process = None

    @property
    def context(self) -> ssl.SSLContext:
        """A client's TLS context that trusts this server's certificate."""
        return trusting(self.directory / "cert.pem")

    def answer(self, stage: str, reply: str | None) -> None:
        """Answer ``reply`` at ``stage`` ("rcpt" or "data") from now on; None: accept again."""
        flag = self.directory / f"answer-{stage}"
        if reply is None:
            flag.unlink(missing_ok=True)
        else:
            flag.write_text(reply)

    def greetings(self) -> int:
        """How many EHLO it was sent (one a connection; two with STARTTLS)."""
        try:
            return len((self.directory / "ehlo.log").read_text().splitlines())
        except FileNotFoundError:
            return 0

    def noops(self) -> int:
        """How many NOOP it was sent (a client checking a connection it kept)."""
        try:
            return len((self.directory / "noop.log").read_text().splitlines())
        except FileNotFoundError:
            return 0

    def arrived(self) -> list[Arrived]:
        """What it accepted, in the order it came."""
        found = []
        for envelope in sorted(self.directory.glob("*.json")):
            raw = envelope.with_suffix(".eml").read_bytes()
            data = json.loads(envelope.read_text())
            parsed = message_from_bytes(raw, policy=policy.default)
            assert isinstance(parsed, EmailMessage)
            found.append(Arrived(data["mail_from"], data["rcpt_tos"], parsed, raw))
        return found


# the server's own process ----------------------------------------------------------------------


class _Handler:
    """Writes each message to the directory, or answers what a flag file says."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._lock = threading.Lock()
        self._count = len(list(directory.glob("*.json")))

    def _flag(self, stage: str) -> str | None:
        try:
            return (self._directory / f"answer-{stage}").read_text().strip() or None
        except FileNotFoundError:
            return None

    async def handle_EHLO(
        self, server: Any, session: Any, envelope: Any, hostname: str, responses: list[str]
    ) -> list[str]:
        with self._lock, (self._directory / "ehlo.log").open("a") as log:
            log.write(f"{hostname}\n")
        session.host_name = hostname
        return responses

    async def handle_NOOP(self, server: Any, session: Any, envelope: Any, arg: str) -> str:
        with self._lock, (self._directory / "noop.log").open("a") as log:
            log.write("NOOP\n")
        return "250 OK"

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        refused = self._flag("rcpt")
        if refused:
            return refused
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        refused = self._flag("data")
        if refused:
            return refused
        with self._lock:
            self._count += 1
            stem = self._directory / f"{self._count:06d}"
        content = envelope.original_content or envelope.content
        stem.with_suffix(".eml").write_bytes(content)
        meta = {"mail_from": envelope.mail_from, "rcpt_tos": list(envelope.rcpt_tos)}
        partial = stem.with_suffix(".json.part")
        partial.write_text(json.dumps(meta))
        partial.rename(stem.with_suffix(".json"))  # the envelope last: the message is whole
        return "250 Message accepted"


def _authenticator(user: str, password: str) -> Any:
    from aiosmtpd.smtp import AuthResult, LoginPassword

    def check(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        good = (
            isinstance(data, LoginPassword)
            and data.login == user.encode()
            and data.password == password.encode()
        )
        return AuthResult(success=good, handled=False)

    return check


def main() -> None:
    from aiosmtpd.controller import Controller

    parser = argparse.ArgumentParser()
    parser.add_argument("directory", type=Path)
    parser.add_argument("port", type=int)
    parser.add_argument("--tls", choices=["none", "starttls", "implicit"], default="none")
    parser.add_argument("--auth", action="store_true")
    args = parser.parse_args()
    directory: Path = args.directory
    options: dict[str, Any] = {}
    tls = None
    if args.tls != "none":
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(directory / "cert.pem", directory / "key.pem")
    if args.tls == "starttls":
        options |= {"tls_context": tls, "require_starttls": True}
    if args.auth:
        user, password = os.environ[USER_ENV], os.environ[PASSWORD_ENV]
        options |= {
            "authenticator": _authenticator(user, password),
            "auth_required": True,
            "auth_require_tls": args.tls == "starttls",  # implicit: TLS from the start
        }
    controller = Controller(
        _Handler(directory),
        hostname="127.0.0.1",
        port=args.port,
        ssl_context=tls if args.tls == "implicit" else None,
        server_hostname="localhost",
        **options,
    )
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    controller.start()
    print(READY, flush=True)
    stopping.wait()
    controller.stop()


if __name__ == "__main__":
    main()

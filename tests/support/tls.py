"""One default TLS context for every HTTP client of the test process.

httpx builds a new verifying context for each client it makes (``httpx.get`` and ``httpx.post``
make one per call), loading the whole certificate bundle each time: about 20 ms of CPU, which
made the tests' clients, and the loops that poll a server with ``httpx.get`` every 50 ms, one of
the suite's largest costs. Within ``one_tls_context`` the clients share one context, built as
httpx builds it (the same certificates and checks; the tests talk plain HTTP to their servers
anyway). Servers the tests start are other processes and build their contexts as always."""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx._transports.default as transports


@contextmanager
def one_tls_context() -> Iterator[None]:
    """Within the block, every httpx client of this process that verifies with the default
    certificates (``verify=True``, no client certificate) uses one context, made on first use
    (one for each of the environment's ``SSL_CERT_FILE``/``SSL_CERT_DIR`` that httpx reads)."""
    real = transports.create_ssl_context
    made: dict[tuple[bool, str | None, str | None], ssl.SSLContext] = {}

    def shared(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
        if verify is not True or cert is not None:
            return real(verify=verify, cert=cert, trust_env=trust_env)
        key = trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
        if key not in made:
            made[key] = real(verify=verify, cert=cert, trust_env=trust_env)
        return made[key]

    transports.create_ssl_context = shared
    try:
        yield
    finally:
        transports.create_ssl_context = real

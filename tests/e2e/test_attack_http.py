"""Hostile clients against the HTTP listeners (issue 15, items 6 and 8): headers sent one byte
at a time, headers without end, more connections than a listener takes, and ``/metrics`` on a
listener of its own. Raw sockets, so nothing but the listener stands between the test and the
node.

Each test here failed on the code before this work (uvicorn's httptools protocol has no header
timeout, no header size limit and no connection limit; ``serve`` had no ``--metrics-listen``).
"""

from __future__ import annotations

import select
import socket
import time
from pathlib import Path

import httpx

from tests.support.processes import Server, Station, free_port, wait_for

HEADER_SECONDS = 10  # the default of http_header_seconds
MAX_CONNECTIONS = 5


def connect(server: Server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def closed_by_peer(sock: socket.socket, wait: float) -> bool:
    """Whether the node closed the connection (EOF or reset) within ``wait`` seconds; any
    answer it sent first is read and dropped."""
    deadline = time.monotonic() + wait
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        readable, _, _ = select.select([sock], [], [], left)
        if not readable:
            return False
        try:
            if sock.recv(65536) == b"":
                return True
        except (ConnectionResetError, BrokenPipeError):
            return True


def read_answer(sock: socket.socket) -> bytes:
    """Everything the node sends until it closes the connection."""
    received = b""
    sock.settimeout(30)
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return received
        if not chunk:
            return received
        received += chunk


def read_response(sock: socket.socket, buffered: bytes) -> tuple[bytes, bytes]:
    """One whole response (head and a body of its Content-Length) and the bytes after it."""
    data = buffered
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed after {data!r}"
        data += chunk
    head, _, after = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(after) < length:
        chunk = sock.recv(65536)
        assert chunk, f"closed after {data + after!r}"
        after += chunk
    return head + b"\r\n\r\n" + after[:length], after[length:]


def test_headers_sent_one_byte_every_2_s_are_closed_by_12_s(station: Station) -> None:
    """A client that has not sent its complete headers within 10 s is closed."""
    request = (
        b"POST /rx/site1:rx1/contact_id HTTP/1.1\r\nHost: x\r\n"
        b"Authorization: Bearer " + station.token.encode() + b"\r\n"
    )
    sock = connect(station.server)
    started = time.monotonic()
    closed_after = None
    try:
        for byte in request:
            try:
                sock.send(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed_after = time.monotonic() - started
                break
            if closed_by_peer(sock, 2.0):
                closed_after = time.monotonic() - started
                break
            if time.monotonic() - started > 14:
                break
    finally:
        sock.close()
    assert closed_after is not None, "still open after 14 s"
    assert closed_after <= 12, f"closed after {closed_after:.1f} s"
    assert closed_after >= HEADER_SECONDS - 1, f"closed too early: {closed_after:.1f} s"
    assert httpx.get(f"{station.url}/healthz", timeout=10).status_code == 200


def test_a_connection_that_sends_nothing_is_closed_too(station: Station) -> None:
    sock = connect(station.server)
    try:
        assert closed_by_peer(sock, HEADER_SECONDS + 3), "an idle new connection stays open"
    finally:
        sock.close()


def test_a_20_kib_header_is_refused_and_closed(station: Station) -> None:
    """Headers over 16 KiB are refused (431) and the connection closed."""
    sock = connect(station.server)
    try:
        sock.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Filler: " + b"a" * (20 * 1024) + b"\r\n\r\n"
        )
        answer = read_answer(sock)
    finally:
        sock.close()
    assert answer.startswith((b"HTTP/1.1 431 ", b"HTTP/1.1 400 ")), answer[:100]


def test_headers_without_end_are_refused_as_they_arrive(station: Station) -> None:
    """Never more than the limit is held: a header block that keeps coming is cut at 16 KiB."""
    sock = connect(station.server)
    refused = False
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        for n in range(256):  # up to 1 MiB of headers, 4 KiB at a time
            try:
                sock.sendall(f"X-H{n}: ".encode() + b"b" * 4096 + b"\r\n")
            except (BrokenPipeError, ConnectionResetError):
                refused = True
                break
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                refused = True
                break
        if not refused:
            refused = closed_by_peer(sock, 5)
    finally:
        sock.close()
    assert refused


def test_headers_under_the_limit_and_a_signal_still_work(station: Station) -> None:
    answer = httpx.get(
        f"{station.url}/healthz", headers={"X-Filler": "a" * (12 * 1024)}, timeout=10
    )
    assert answer.status_code == 200
    body = {"dnis": "C1", "panel": "42", "code": "E130", "zone_or_user": "1"}
    with httpx.Client(timeout=10) as client:  # keep-alive: several requests on one connection
        for _ in range(3):
            answer = client.post(
                f"{station.url}/rx/site1:rx1/contact_id",
                json=body,
                headers={"Authorization": f"Bearer {station.token}"},
            )
            assert answer.status_code == 200, answer.text


def test_a_body_answered_before_its_end_is_not_the_next_requests_headers(
    station: Station,
) -> None:
    """A request refused for its size before its body arrived: the rest of its body,
    sent after the answer, is read as that body, and the next request on the connection is
    answered as usual (not 431, as when those bytes were counted as its headers)."""
    size = 100_000  # over rest_max_body_bytes
    sock = connect(station.server)
    try:
        sock.sendall(
            b"POST /rx/site1:rx1/contact_id HTTP/1.1\r\nHost: x\r\n"
            b"Authorization: Bearer " + station.token.encode() + b"\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % size
        )
        sock.settimeout(10)
        refusal, rest = read_response(sock, b"")
        assert refusal.startswith(b"HTTP/1.1 4"), refusal  # refused, body unread
        for _ in range(0, size, 10_000):
            sock.sendall(b" " * 10_000)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        answer, _ = read_response(sock, rest)
        assert answer.startswith(b"HTTP/1.1 200 "), answer
    finally:
        sock.close()


def test_connections_over_the_cap_are_refused(tmp_path: Path) -> None:
    """At most http_max_connections at once per listener; one more is refused at once. The
    cap is counted by each worker process (docs/deployment.md), so one worker here."""
    server = Server(
        tmp_path,
        extra_args=("--workers", "1"),
        env={"ALARMHUB_HTTP_MAX_CONNECTIONS": str(MAX_CONNECTIONS)},
    )
    server.start()
    held: list[socket.socket] = []
    try:
        for _ in range(MAX_CONNECTIONS):
            held.append(connect(server))
        time.sleep(0.3)  # the node has taken them
        extra = connect(server)
        try:
            extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = read_answer(extra)
        finally:
            extra.close()
        assert not answer.startswith(b"HTTP/1.1 200"), answer[:200]
        assert answer == b"" or answer.startswith(b"HTTP/1.1 503 "), answer[:200]
        held.pop().close()
        wait_for(lambda: _healthz(server) == 200, "a connection is taken once one is freed", 10)
    finally:
        for sock in held:
            sock.close()
        server.stop()


def _healthz(server: Server) -> int:
    try:
        return httpx.get(f"{server.url}/healthz", timeout=5).status_code
    except httpx.HTTPError:
        return 0


def test_metrics_on_a_listener_of_their_own(tmp_path: Path) -> None:
    """``--metrics-listen``: /metrics is served there only, not on the main listener."""
    port = free_port()
    server = Server(tmp_path, extra_args=("--metrics-listen", f"127.0.0.1:{port}")).start()
    try:
        on_its_own = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
        assert on_its_own.status_code == 200
        assert "alarmhub_signals_accepted" in on_its_own.text
        assert httpx.get(f"{server.url}/metrics", timeout=10).status_code == 404
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 404
        assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
    finally:
        server.stop()


def test_the_next_request_on_a_kept_alive_connection_is_timed_too(tmp_path: Path) -> None:
    """After one answered request, the next request's headers have the same time limit (here
    set to 2 s through ALARMHUB_HTTP_HEADER_SECONDS to keep the test short)."""
    server = Server(tmp_path, env={"ALARMHUB_HTTP_HEADER_SECONDS": "2"}).start()
    sock = connect(server)
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(10)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
        started = time.monotonic()
        closed = False
        for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"s" * 40:
            try:
                sock.send(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            if closed_by_peer(sock, 0.5):
                closed = True
                break
        assert closed, "the second request's headers were never timed out"
        assert time.monotonic() - started <= 5
    finally:
        sock.close()
        server.stop()

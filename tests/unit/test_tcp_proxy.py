"""The fault tests' TCP proxy passes a client's end on to the server: a close as a close, and a
reset as a reset (a process killed with bytes unread resets its connections). Had it kept the
server's side open, a killed node's database session would hold its locks for ever, and every
other node would wait on them."""

from __future__ import annotations

import socket

import pytest

from tests.support.tcp_proxy import TcpProxy

ANSWER = b"an answer"


def gone(server_side: socket.socket) -> bool:
    """Whether the server's side learns, within a generous 10 s, that its client has gone."""
    server_side.settimeout(10)
    try:
        while server_side.recv(65536):
            pass
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True  # the end of the stream


@pytest.mark.parametrize("unread", [False, True], ids=["closed", "reset"])
def test_a_client_that_ends_ends_its_server_side(unread: bool) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    with listener, TcpProxy(("127.0.0.1", listener.getsockname()[1])) as proxy:
        client = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        server_side, _ = listener.accept()
        with server_side:
            client.sendall(b"BEGIN")
            assert server_side.recv(5) == b"BEGIN"
            server_side.sendall(ANSWER)
            # the answer arrived: left unread, closing the socket resets the connection
            flags = socket.MSG_PEEK | socket.MSG_WAITALL if unread else socket.MSG_WAITALL
            assert client.recv(len(ANSWER), flags) == ANSWER
            client.close()
            assert gone(server_side)

"""The alarmhub node with one extra route, ``POST /bench/trivial``, that does no work at all.

It receives the same requests as ``contact_id`` (same bodies, same headers) in the same process,
loop and HTTP stack, and answers the same bytes, so the ratio of the two rates measures the cost
of authentication, validation and durable storage alone. Its route is tried first (the router
tries routes in order): behind the node's other routes it would pay for their matching too.
"""

from __future__ import annotations

import sys

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from alarmhub import logs, settings
from alarmhub.node.server import Listener, parse_address, serve

TRIVIAL = b'{"status_code":200,"status":"success"}'


async def trivial(request: Request) -> Response:
    """Receive the request as ``contact_id`` does, then answer success without any work."""
    await request.body()
    return Response(TRIVIAL, media_type="application/json")


def main() -> None:
    host, port = parse_address(sys.argv[1])
    config = settings.load(sys.argv[2], log_level="warning", workers=1)
    logs.configure(config.log_level)
    serve(
        config,
        [Listener(host, port, ("rx", "rest"))],
        on_ready=lambda: print("ready", flush=True),
        extra_routes=lambda _: [Route("/bench/trivial", trivial, methods=["POST"])],
    )


if __name__ == "__main__":
    main()

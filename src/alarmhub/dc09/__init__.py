"""SIA DC-09: alarm panels reporting over TCP and UDP (ADM-CID, SIA-DCS, NULL, encrypted forms).

The protocol modules (``frame``, ``crypto``, ``message``, ``events``, ``answer``, ``receiver``) are
pure and do no I/O; ``accounts`` and ``server`` are the adapters on the node's event loop.
"""

"""Links to the station's hardware receivers: their automation-output protocols (one module a
protocol, pure), the transports (TCP listen, TCP connect, serial) and the links' supervisor."""
